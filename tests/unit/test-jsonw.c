/*
 * test-jsonw.c — lib/util/jsonw.c: the streaming writer produces what jansson's
 * JSON_INDENT(2) dump produces, escapes strings through jansson, survives
 * invalid UTF-8, and refuses unbalanced use.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "util/jsonw.h"

static char *sample(bool pretty)
{
	struct jw w;
	jsonw_init(&w, pretty);
	jsonw_object(&w, NULL);
	jsonw_plain(&w, "a", "x");
	jsonw_object(&w, "empty");
	jsonw_end(&w, '}');
	jsonw_array(&w, "list");
	jsonw_uint(&w, NULL, 9223372036854775807ULL);
	jsonw_int(&w, NULL, -5);
	jsonw_null(&w, NULL);
	jsonw_bool(&w, NULL, true);
	jsonw_end(&w, ']');
	jsonw_array(&w, "none");
	jsonw_end(&w, ']');
	jsonw_string(&w, "s", "quote\" back\\ nl\n tab\t bell\a é");
	jsonw_end(&w, '}');
	return jsonw_finish(&w);
}

static void test_matches_jansson_indent(void **state)
{
	(void)state;
	char *mine = sample(true);
	assert_non_null(mine);
	json_error_t err;
	json_t *parsed = json_loads(mine, 0, &err);
	assert_non_null(parsed);
	char *theirs = json_dumps(parsed, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	assert_string_equal(mine, theirs);
	assert_string_equal(json_string_value(json_object_get(parsed, "s")),
			    "quote\" back\\ nl\n tab\t bell\a é");
	free(theirs);
	json_decref(parsed);
	free(mine);
}

static void test_compact(void **state)
{
	(void)state;
	char *mine = sample(false);
	assert_non_null(mine);
	assert_null(strchr(mine, '\n'));
	json_t *parsed = json_loads(mine, 0, NULL);
	char *theirs = json_dumps(parsed, JSON_COMPACT | JSON_PRESERVE_ORDER);
	assert_string_equal(mine, theirs);
	free(theirs);
	json_decref(parsed);
	free(mine);
}

static void test_invalid_utf8(void **state)
{
	(void)state;
	struct jw w;
	jsonw_init(&w, false);
	jsonw_array(&w, NULL);
	jsonw_string(&w, NULL, "caf\xe9 \xff!");
	jsonw_end(&w, ']');
	char *out = jsonw_finish(&w);
	assert_string_equal(out, "[\"caf? ?!\"]");
	free(out);
}

static void test_inline_array(void **state)
{
	(void)state;
	struct jw w;
	jsonw_init(&w, true);
	jsonw_object(&w, NULL);
	jsonw_array(&w, "m");
	jsonw_array_inline(&w, NULL);
	jsonw_plain(&w, NULL, "X");
	jsonw_plain(&w, NULL, "PIX");
	jsonw_end(&w, ']');
	jsonw_end(&w, ']');
	jsonw_end(&w, '}');
	char *out = jsonw_finish(&w);
	assert_string_equal(out, "{\n  \"m\": [\n    [\"X\", \"PIX\"]\n  ]\n}");
	free(out);
}

static void test_unbalanced_is_refused(void **state)
{
	(void)state;
	struct jw w;
	jsonw_init(&w, true);
	jsonw_object(&w, NULL);
	assert_null(jsonw_finish(&w)); /* still open */
	jsonw_init(&w, true);
	jsonw_end(&w, '}');            /* nothing open */
	assert_null(jsonw_finish(&w));
	jsonw_init(&w, false);
	for (int i = 0; i < JSONW_MAX_DEPTH + 2; i++)
		jsonw_array(&w, NULL);
	for (int i = 0; i < JSONW_MAX_DEPTH + 2; i++)
		jsonw_end(&w, ']');
	assert_null(jsonw_finish(&w)); /* deeper than any schema */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matches_jansson_indent),
		cmocka_unit_test(test_compact),
		cmocka_unit_test(test_invalid_utf8),
		cmocka_unit_test(test_inline_array),
		cmocka_unit_test(test_unbalanced_is_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
