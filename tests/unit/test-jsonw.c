/*
 * test-jsonw.c — lib/jsonw.c: the streaming writer produces what jansson's
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

#include "jsonw.h"

static char *sample(bool pretty)
{
	struct jw w;
	jw_init(&w, pretty);
	jw_object(&w, NULL);
	jw_plain(&w, "a", "x");
	jw_object(&w, "empty");
	jw_end(&w, '}');
	jw_array(&w, "list");
	jw_uint(&w, NULL, 9223372036854775807ULL);
	jw_int(&w, NULL, -5);
	jw_null(&w, NULL);
	jw_bool(&w, NULL, true);
	jw_end(&w, ']');
	jw_array(&w, "none");
	jw_end(&w, ']');
	jw_string(&w, "s", "quote\" back\\ nl\n tab\t bell\a é");
	jw_end(&w, '}');
	return jw_finish(&w);
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
	jw_init(&w, false);
	jw_array(&w, NULL);
	jw_string(&w, NULL, "caf\xe9 \xff!");
	jw_end(&w, ']');
	char *out = jw_finish(&w);
	assert_string_equal(out, "[\"caf? ?!\"]");
	free(out);
}

static void test_inline_array(void **state)
{
	(void)state;
	struct jw w;
	jw_init(&w, true);
	jw_object(&w, NULL);
	jw_array(&w, "m");
	jw_array_inline(&w, NULL);
	jw_plain(&w, NULL, "X");
	jw_plain(&w, NULL, "PIX");
	jw_end(&w, ']');
	jw_end(&w, ']');
	jw_end(&w, '}');
	char *out = jw_finish(&w);
	assert_string_equal(out, "{\n  \"m\": [\n    [\"X\", \"PIX\"]\n  ]\n}");
	free(out);
}

static void test_unbalanced_is_refused(void **state)
{
	(void)state;
	struct jw w;
	jw_init(&w, true);
	jw_object(&w, NULL);
	assert_null(jw_finish(&w)); /* still open */
	jw_init(&w, true);
	jw_end(&w, '}');            /* nothing open */
	assert_null(jw_finish(&w));
	jw_init(&w, false);
	for (int i = 0; i < JW_MAX_DEPTH + 2; i++)
		jw_array(&w, NULL);
	for (int i = 0; i < JW_MAX_DEPTH + 2; i++)
		jw_end(&w, ']');
	assert_null(jw_finish(&w)); /* deeper than any schema */
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
