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
#include <stdio.h>
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

/* every byte alone and in company, and every indent depth: the fast paths
 * (bytes written as they are, the indent in one piece, the buffer grown
 * across many writes) give what jansson gives */
static void test_fast_paths_match_jansson(void **state)
{
	(void)state;
	struct jw w;
	jsonw_init(&w, true);
	jsonw_array(&w, NULL);
	for (int c = 1; c < 0x80; c++) {
		char one[2] = {(char)c, '\0'}, three[8];
		snprintf(three, sizeof three, "a%cz/", c);
		jsonw_string(&w, NULL, one);
		jsonw_string(&w, NULL, three);
	}
	jsonw_string(&w, NULL, "");
	jsonw_string(&w, NULL, "\xc3\xa9t\xc3\xa9 \xe2\x82\xac");
	for (int d = 1; d < JSONW_MAX_DEPTH - 1; d++)
		jsonw_array(&w, NULL);
	jsonw_plain(&w, NULL, "deep");
	for (int d = 1; d < JSONW_MAX_DEPTH - 1; d++)
		jsonw_end(&w, ']');
	for (int i = 0; i < 3000; i++)
		jsonw_uint(&w, NULL, (uint64_t)i * 7919);
	jsonw_end(&w, ']');
	char *mine = jsonw_finish(&w);
	assert_non_null(mine);
	assert_true(strlen(mine) > 3 * 4096);
	json_error_t err;
	json_t *parsed = json_loads(mine, 0, &err);
	assert_non_null(parsed);
	char *theirs = json_dumps(parsed, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	assert_string_equal(mine, theirs);
	assert_string_equal(json_string_value(json_array_get(parsed, 0)), "\x01");
	assert_string_equal(json_string_value(json_array_get(parsed, 2 * ('"' - 1))), "\"");
	free(theirs);
	json_decref(parsed);
	free(mine);
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
		cmocka_unit_test(test_fast_paths_match_jansson),
		cmocka_unit_test(test_unbalanced_is_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
