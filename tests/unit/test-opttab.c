/*
 * test-opttab.c — common/opttab.c: each kind of entry stores what it
 * parsed and refuses what it does not take, with the error on stderr;
 * --help lines stay in their width with the help under itself; argv is
 * walked over a table and a caller's own getopt entries. The refusals'
 * error lines on stderr are expected.
 */
#include "opttab.h"
#include "progerr.h"

#include <getopt.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

struct s {
	bool flag, on;
	const char *str;
	int dur_ms;
	unsigned secs;
	long long keep_ms;
	unsigned count;
	uint64_t size;
	size_t small;
	int cb_calls;
	const char *cb_arg;
};

static int cb(const struct opt *o, const char *arg, void *settings)
{
	struct s *s = settings;
	s->cb_calls++;
	s->cb_arg = arg;
	return strcmp(arg, "bad") == 0 ? EXIT_USAGE : EXIT_OK;
}

#define AT(f) OPT_AT(struct s, f)
static const struct opt tab[] = {
	{OPT_SECTION, .help = "A heading"},
	{OPT_FLAG, "flag", .help = "a flag", AT(flag), .shortopt = 'f'},
	{OPT_FLAG, "no-on", .help = "turns on off", AT(on), .flags = OPT_NEG},
	{OPT_STRING, "str", "S", "a string", AT(str)},
	{OPT_DURATION, "dur", "DUR", "a duration", AT(dur_ms), .min = 100, .max = 3600000, .accepted = "between 0.1s and 1h"},
	{OPT_DURATION, "secs", "DUR", "seconds", AT(secs), .flags = OPT_SECONDS},
	{OPT_DURATION, "keep", "DUR", "zero or off is off", AT(keep_ms), .flags = OPT_ZERO | OPT_OFF},
	{OPT_COUNT, "count", "N",
	 "a count with a help text long enough to be wrapped onto a second line, and then a third one, so that the "
	 "wrapping is seen working on more than a single break of the line",
	 AT(count), .min = 0, .max = 100},
	{OPT_SIZE, "size", "SIZE", "a size", AT(size), .min = 65536, .accepted = "at least 64KiB", .flags = OPT_ZERO},
	{OPT_SIZE, "small", "SIZE", "a bounded size", AT(small), .min = 4096, .max = 1 << 20, .accepted = "4KiB to 1MiB"},
	{OPT_CALLBACK, "cb", "X", "a callback", .cb = cb, .flags = OPT_VALUE},
	{OPT_CALLER, "an-option-with-a-long-name", "VALUE", "the caller's", .val = 'L', .flags = OPT_VALUE},
	{OPT_CALLER, "help", .help = "help", .val = 'h', .shortopt = 'h'},
	{OPT_END},
};

static int apply(struct s *s, const char *name, const char *arg)
{
	const struct opt *o = opt_find(tab, name);
	assert_non_null(o);
	return opt_apply(o, arg, s);
}

static void test_kinds(void **state)
{
	struct s s = {.on = true, .keep_ms = 5};
	assert_int_equal(apply(&s, "flag", NULL), EXIT_OK);
	assert_true(s.flag);
	assert_int_equal(apply(&s, "no-on", NULL), EXIT_OK);
	assert_false(s.on);
	assert_int_equal(apply(&s, "str", "x"), EXIT_OK);
	assert_string_equal(s.str, "x");
	assert_int_equal(apply(&s, "dur", "2m"), EXIT_OK);
	assert_int_equal(s.dur_ms, 120000);
	assert_int_equal(apply(&s, "secs", "2m"), EXIT_OK);
	assert_int_equal(s.secs, 120);
	assert_int_equal(apply(&s, "keep", "1d"), EXIT_OK);
	assert_int_equal(s.keep_ms, 86400000LL);
	assert_int_equal(apply(&s, "keep", "off"), EXIT_OK);
	assert_int_equal(s.keep_ms, 0);
	s.keep_ms = 5;
	assert_int_equal(apply(&s, "keep", "0"), EXIT_OK);
	assert_int_equal(s.keep_ms, 0);
	assert_int_equal(apply(&s, "count", "0"), EXIT_OK);
	assert_int_equal(s.count, 0);
	assert_int_equal(apply(&s, "count", "100"), EXIT_OK);
	assert_int_equal(s.count, 100);
	assert_int_equal(apply(&s, "size", "1G"), EXIT_OK);
	assert_true(s.size == 1ULL << 30);
	assert_int_equal(apply(&s, "size", "0"), EXIT_OK);
	assert_true(s.size == 0);
	assert_int_equal(apply(&s, "small", "256KiB"), EXIT_OK);
	assert_true(s.small == 256 * 1024);
	assert_int_equal(apply(&s, "cb", "v"), EXIT_OK);
	assert_int_equal(s.cb_calls, 1);
	assert_string_equal(s.cb_arg, "v");
	/* the neighbours of a stored field are untouched: a 4-byte field written as 4 bytes */
	assert_true(s.flag && !s.on);
}

static void test_refused(void **state)
{
	struct s s = {.dur_ms = 7, .count = 7, .small = 7, .size = 7};
	/* out of range, or not a value: refused, nothing stored */
	assert_int_equal(apply(&s, "dur", "10ms"), EXIT_USAGE);
	assert_int_equal(apply(&s, "dur", "2h"), EXIT_USAGE);
	assert_int_equal(apply(&s, "dur", "soon"), EXIT_USAGE);
	assert_int_equal(s.dur_ms, 7);
	assert_int_equal(apply(&s, "count", "101"), EXIT_USAGE);
	assert_int_equal(apply(&s, "count", "-1"), EXIT_USAGE);
	assert_int_equal(apply(&s, "count", "3x"), EXIT_USAGE);
	assert_int_equal(apply(&s, "count", ""), EXIT_USAGE);
	assert_int_equal(s.count, 7);
	assert_int_equal(apply(&s, "size", "10K"), EXIT_USAGE);
	assert_int_equal(apply(&s, "size", "off"), EXIT_USAGE); /* OPT_ZERO alone: "0", not "off" */
	assert_int_equal(apply(&s, "small", "2M"), EXIT_USAGE);
	assert_int_equal(apply(&s, "small", "0"), EXIT_USAGE); /* no OPT_ZERO */
	assert_true(s.small == 7 && s.size == 7);
	assert_int_equal(apply(&s, "cb", "bad"), EXIT_USAGE);
	assert_null(opt_find(tab, "A heading"));
	assert_null(opt_find(tab, "nosuch"));
	assert_false(opt_takes_value(opt_find(tab, "flag")));
	assert_false(opt_takes_value(opt_find(tab, "help")));
	assert_true(opt_takes_value(opt_find(tab, "cb")));
	assert_true(opt_takes_value(opt_find(tab, "an-option-with-a-long-name")));
}

static char *help_text(bool synopsis)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	if (synopsis)
		opt_synopsis(f, "prog", tab);
	else
		opt_help(f, tab);
	fclose(f);
	return buf;
}

static void test_help(void **state)
{
	char *h = help_text(false);
	/* every option once, at the start of its line, in the table's order */
	const char *want[] = {"A heading\n", "  -f, --flag ", "      --no-on ", "      --str S ", "      --dur DUR ",
			      "      --count N ", "      --cb X ", "      --an-option-with-a-long-name VALUE  the caller's\n",
			      "  -h, --help "};
	const char *at = h;
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		const char *p = strstr(at, want[i]);
		assert_non_null(p);
		assert_true(p == h || p[-1] == '\n');
		at = p;
	}
	/* no line over 100 columns; --count's help wrapped onto three lines, under itself */
	int lines = 0;
	for (char *line = h, *nl; *line; line = nl + 1) {
		nl = strchr(line, '\n');
		assert_non_null(nl);
		assert_true(nl - line <= 100);
		if (strstr(line, "--count N"))
			lines = 1;
		else if (lines && !strncmp(line, "                        ", 24) && line[24] != ' ')
			lines++;
		else if (lines)
			break;
	}
	assert_int_equal(lines, 3);
	free(h);
	char *u = help_text(true);
	assert_non_null(strstr(u, "usage: prog [-"));
	assert_non_null(strstr(u, "[--flag]"));
	assert_non_null(strstr(u, "[--dur DUR]"));
	assert_non_null(strstr(u, "\n            [--")); /* wrapped under the first item, after "usage: prog " */
	free(u);
}

static void test_walk(void **state)
{
	static const struct option extra[] = {{"extra", required_argument, NULL, 'e'}, {NULL, 0, NULL, 0}};
	char *argv[] = {"prog", "-f", "--extra", "1", "-n", "2", "--an-option-with-a-long-name=v", "--cb", "c",
			"--nosuch", "--str", NULL};
	int argc = (int)(sizeof argv / sizeof argv[0]) - 1;
	struct optparse p;
	assert_int_equal(optparse_init(&p, tab, extra, "n:", true), 0);
	const struct opt *o;
	const char *arg;
	optind = 1;
	int c = optparse_next(&p, argc, argv, &o, &arg);
	assert_int_equal(c, 0);
	assert_string_equal(o->name, "flag");
	c = optparse_next(&p, argc, argv, &o, &arg);
	assert_int_equal(c, 'e');
	assert_null(o);
	assert_string_equal(arg, "1");
	c = optparse_next(&p, argc, argv, &o, &arg);
	assert_int_equal(c, 'n');
	assert_null(o);
	assert_string_equal(arg, "2");
	c = optparse_next(&p, argc, argv, &o, &arg);
	assert_int_equal(c, 'L');
	assert_string_equal(o->name, "an-option-with-a-long-name");
	assert_string_equal(arg, "v");
	c = optparse_next(&p, argc, argv, &o, &arg);
	assert_int_equal(c, 0);
	assert_string_equal(o->name, "cb");
	assert_string_equal(arg, "c");
	assert_int_equal(optparse_next(&p, argc, argv, &o, &arg), '?');
	assert_int_equal(optparse_next(&p, argc, argv, &o, &arg), ':');
	assert_int_equal(optparse_next(&p, argc, argv, &o, &arg), -1);
	optparse_free(&p);
	/* "+": the first operand ends the options */
	char *argv2[] = {"prog", "-h", "cmd", "--flag", NULL};
	assert_int_equal(optparse_init(&p, tab, NULL, NULL, true), 0);
	optind = 1;
	assert_int_equal(optparse_next(&p, 4, argv2, &o, &arg), 'h');
	assert_int_equal(optparse_next(&p, 4, argv2, &o, &arg), -1);
	assert_int_equal(optind, 2);
	optparse_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kinds),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_help),
		cmocka_unit_test(test_walk),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
