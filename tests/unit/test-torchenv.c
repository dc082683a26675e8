/*
 * test-torchenv.c — the launcher's Python from a script's first line, the
 * probe's output, and the version rules (lib/jobs/torchenv.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "jobs/torchenv.h"

struct shebang_row {
	const char *head;
	int rc;
	const char *py, *opt;
};

static const struct shebang_row shebangs[] = {
	{"#!/usr/bin/python3.11\n# EASY-INSTALL-ENTRY-SCRIPT", 0, "/usr/bin/python3.11", ""},
	{"#!/home/a/.venv/bin/python\r\nimport re\n", 0, "/home/a/.venv/bin/python", ""},
	{"#! /opt/conda/bin/python3.10 -s\nimport sys", 0, "/opt/conda/bin/python3.10", "-s"},
	{"#!/usr/bin/python3 -E -s\n", 0, "/usr/bin/python3", "-E -s"}, /* one argument, as the kernel passes it */
	{"#!/usr/bin/env python3\n", 0, "python3", ""},
	{"#!/usr/bin/env -S python3 -u\n", 0, "python3", "-u"},
	{"#!/usr/bin/env PYTHONPATH=/x python3\n", 0, "python3", ""},
	{"#!/bin/sh\n'''exec' /very/long/path/venv/bin/python \"$0\" \"$@\"\n' '''\n", 0,
	 "/very/long/path/venv/bin/python", ""},
	{"#!/bin/sh\n'''exec' \"/path with space/bin/python3\" \"$0\" \"$@\"\n", 0, "/path with space/bin/python3", ""},
	{"#!/bin/sh\nexec python3 -m torch.distributed.run \"$@\"\n", -1, "", ""},
	{"#!/bin/bash\n", -1, "", ""},
	{"#!/usr/bin/env bash\n", -1, "", ""},
	{"\x7f" "ELF\x02\x01\x01", -1, "", ""},
	{"#!", -1, "", ""},
	{"", -1, "", ""},
};

static void test_script_python(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof shebangs / sizeof shebangs[0]; i++) {
		const struct shebang_row *r = &shebangs[i];
		char py[256], opt[32];
		int rc = torchenv_script_python(r->head, strlen(r->head), py, sizeof py, opt, sizeof opt);
		if (rc != r->rc || strcmp(py, r->py) != 0 || strcmp(opt, r->opt) != 0)
			fail_msg("%s: rc %d py '%s' opt '%s', expected %d '%s' '%s'", r->head, rc, py, opt, r->rc, r->py,
				 r->opt);
	}
	/* the first line only counts up to len, and a name that does not fit is refused */
	char py[8], opt[8];
	assert_int_equal(torchenv_script_python("#!/usr/bin/python3\n", 10, py, sizeof py, opt, sizeof opt), -1);
	char big[64];
	assert_int_equal(torchenv_script_python("#!/usr/bin/python3\n", 19, big, sizeof big, opt, sizeof opt), 0);
	assert_string_equal(big, "/usr/bin/python3");
}

static void test_parse(void **state)
{
	(void)state;
	struct torchenv t;
	assert_int_equal(torchenv_parse("gpuctl-torch 3 11 1.13.0a0\n", &t), 0);
	assert_int_equal(t.py_major, 3);
	assert_int_equal(t.py_minor, 11);
	assert_string_equal(t.version, "1.13.0a0");
	assert_int_equal(t.major, 1);
	assert_int_equal(t.minor, 13);
	/* a sitecustomize's chatter first; the probe's line counts */
	assert_int_equal(torchenv_parse("hello gpuctl-torch 9 9 9.9\ngpuctl-torch 3 12 2.4.1+cu121\n", &t), 0);
	assert_int_equal(t.py_minor, 12);
	assert_int_equal(t.major, 2);
	assert_int_equal(t.minor, 4);
	assert_int_equal(torchenv_parse("gpuctl-torch 3 10 -\n", &t), 0);
	assert_string_equal(t.version, "");
	assert_int_equal(t.major, -1);
	assert_int_equal(torchenv_parse("gpuctl-torch 3 10 nightly\n", &t), 0);
	assert_string_equal(t.version, "nightly");
	assert_int_equal(t.major, -1);
	assert_int_equal(torchenv_parse("torch -\ntensorflow -\n", &t), -1);
	assert_int_equal(t.py_major, 0);
	assert_int_equal(torchenv_parse(NULL, &t), -1);
	assert_int_equal(torchenv_parse("gpuctl-torch x y z\n", &t), -1);
}

static struct torchenv te(int pymin, const char *v)
{
	struct torchenv t;
	char line[128];
	snprintf(line, sizeof line, "gpuctl-torch 3 %d %s\n", pymin, v);
	assert_int_equal(torchenv_parse(line, &t), 0);
	return t;
}

static void test_rules(void **state)
{
	(void)state;
	struct torchenv t = te(11, "1.13.0a0");
	assert_true(torchenv_std_bug(&t));
	assert_false(torchenv_has_expandable(&t));
	assert_true(torchenv_before_expandable(&t));
	t = te(10, "1.13.1+cu117"); /* Python 3.10 still lists the zero member */
	assert_false(torchenv_std_bug(&t));
	t = te(11, "2.0.1");
	assert_false(torchenv_std_bug(&t));
	assert_false(torchenv_has_expandable(&t));
	assert_true(torchenv_before_expandable(&t));
	t = te(12, "2.1.0+cu121");
	assert_true(torchenv_has_expandable(&t));
	assert_false(torchenv_before_expandable(&t));
	t = te(12, "2.10.0");
	assert_true(torchenv_has_expandable(&t));
	t = te(13, "3.0.0");
	assert_true(torchenv_has_expandable(&t));
	/* unknown: no workaround, no default, no verdict */
	t = te(11, "-");
	assert_false(torchenv_std_bug(&t));
	assert_false(torchenv_has_expandable(&t));
	assert_false(torchenv_before_expandable(&t));

	assert_true(torchenv_conf_expandable("expandable_segments:True"));
	assert_true(torchenv_conf_expandable("max_split_size_mb:128, expandable_segments : False"));
	assert_false(torchenv_conf_expandable("max_split_size_mb:128"));
	assert_false(torchenv_conf_expandable("not_expandable_segments:True"));
	assert_false(torchenv_conf_expandable(""));
	assert_false(torchenv_conf_expandable(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_script_python),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_rules),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
