/*
 * test-env.c — lib/util/env.c: a child's environment from a base, less
 * some names, plus new entries; a name matches whole (FOO does not drop
 * FOOBAR), a set name replaces the base's, nothing else moves.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "util/env.h"

static void test_env_with(void **state)
{
	(void)state;
	char *base[] = {"PATH=/bin", "FOO=1", "FOOBAR=2", "GPUCTL_RESUME_FROM=/old", "LD_BIND_NOW=", "EMPTY=", NULL};
	const char *drop[] = {"GPUCTL_RESUME_FROM=", "EMPTY", NULL};
	char *set[] = {"FOO=3", "LD_BIND_NOW=1", NULL};
	char **v = env_with(base, drop, set);
	assert_non_null(v);
	const char *want[] = {"PATH=/bin", "FOOBAR=2", "FOO=3", "LD_BIND_NOW=1", NULL};
	for (size_t i = 0; want[i] || v[i]; i++) {
		assert_non_null(v[i]);
		assert_non_null(want[i]);
		assert_string_equal(v[i], want[i]);
	}
	free(v);
	char **none = env_with(NULL, NULL, NULL);
	assert_non_null(none);
	assert_null(none[0]);
	free(none);
	char **same = env_with(base, NULL, NULL);
	for (size_t i = 0; base[i]; i++)
		assert_ptr_equal(same[i], base[i]); /* borrowed, in order */
	free(same);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_env_with),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
