/*
 * test-proc.c — lib/device/proc.c: user and command of a pid from /proc, control
 * characters neutralised, pids of other namespaces reported as not visible.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "device/proc.h"
#include "tmpdir.h"

static void test_sanitize_replaces_control_bytes(void **state)
{
	(void)state;
	char out[16];
	proc_sanitize(out, sizeof out, "a\033[2Jb\n\x7f", 8);
	assert_string_equal(out, "a?[2Jb??");
}

static void test_sanitize_utf8(void **state)
{
	(void)state;
	char out[32];
	/* kept: é, 日; replaced: CSI as U+009B, a lone 0x9b byte, a cut sequence, an overlong '/' */
	proc_sanitize(out, sizeof out, "\xc3\xa9\xe6\x97\xa5\xc2\x9b" "1m\x9b" "2J\xe6\x97\xc0\xaf", 18);
	assert_string_equal(out, "\xc3\xa9\xe6\x97\xa5?1m?2J????");
	/* a character that does not fit whole is left out, not cut */
	char small[4];
	proc_sanitize(small, sizeof small, "ab\xc3\xa9", 4);
	assert_string_equal(small, "ab");
}

static void test_sanitize_truncates(void **state)
{
	(void)state;
	char out[4];
	proc_sanitize(out, sizeof out, "abcdef", 6);
	assert_string_equal(out, "abc");
}

static void test_describe_self(void **state)
{
	(void)state;
	struct uid_cache cache = {0};
	gc_proc p = {.pid = (uint32_t)getpid()};
	proc_describe(&p, "/proc", &cache);
	assert_true(p.visible);
	assert_int_equal(p.uid, geteuid());
	struct passwd *pw = getpwuid(geteuid());
	if (pw)
		assert_string_equal(p.user, pw->pw_name);
	/* this test binary's own argv[0] ends with test-proc */
	assert_non_null(strstr(p.argv0, "test-proc"));
	assert_non_null(strstr(p.command, "test-proc"));
	/* a second lookup comes from the cache and agrees */
	gc_proc q = {.pid = (uint32_t)getpid()};
	proc_describe(&q, "/proc", &cache);
	assert_string_equal(p.user, q.user);
	assert_int_equal(cache.n, 1);
}

static void test_describe_arguments_joined(void **state)
{
	(void)state;
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		execlp("sleep", "sleep", "30", (char *)NULL);
		_exit(127);
	}
	/* wait until the exec has happened */
	gc_proc p = {.pid = (uint32_t)child};
	for (int i = 0; i < 200; i++) {
		proc_describe(&p, "/proc", NULL);
		if (strcmp(p.command, "sleep 30") == 0)
			break;
		usleep(5000);
	}
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	assert_string_equal(p.command, "sleep 30");
	assert_string_equal(p.argv0, "sleep");
}

static void test_describe_missing_pid_not_visible(void **state)
{
	(void)state;
	/* a fork()ed child that has been reaped is certainly gone */
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0)
		_exit(0);
	waitpid(child, NULL, 0);
	gc_proc p = {.pid = (uint32_t)child};
	strcpy(p.user, "stale");
	proc_describe(&p, "/proc", NULL);
	assert_false(p.visible);
	assert_string_equal(p.user, "");
	assert_string_equal(p.command, "");
}

static void test_describe_fake_procfs(void **state)
{
	(void)state;
	char dir[64];
	assert_int_equal(tmpdir_make(dir, sizeof dir, "procfs"), 0);
	char path[256];
	snprintf(path, sizeof path, "%s/4242", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	/* an empty cmdline (kernel thread, zombie): the comm is shown in brackets */
	snprintf(path, sizeof path, "%s/4242/cmdline", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
	snprintf(path, sizeof path, "%s/4242/comm", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("kworker\n", f);
	fclose(f);
	gc_proc p = {.pid = 4242};
	proc_describe(&p, dir, NULL);
	assert_true(p.visible);
	assert_string_equal(p.command, "[kworker]");
	/* a hostile cmdline cannot carry escape sequences to the terminal */
	snprintf(path, sizeof path, "%s/4242/cmdline", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fwrite("evil\0\033]0;owned\a\0", 1, 16, f);
	fclose(f);
	proc_describe(&p, dir, NULL);
	assert_string_equal(p.command, "evil ?]0;owned?");
	assert_string_equal(p.argv0, "evil");
	assert_int_equal(tmpdir_remove(dir), 0);
}

/* proc_stat_read: a command holding ") (" and spaces, every field gpuctl reads, a
 * negative one, and lines that are not a stat line; and this process itself */
static void test_stat_read(void **state)
{
	(void)state;
	char dir[64], path[256];
	assert_int_equal(tmpdir_make(dir, sizeof dir, "statread"), 0);
	snprintf(path, sizeof path, "%s/77", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	/* pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt
	 * utime stime cutime cstime priority nice threads itrealvalue starttime vsize rss ... */
	assert_int_equal(tmpdir_write(dir, "77/stat",
				      "77 (a) (b c) S 5 77 70 34817 77 4194560 100 0 0 0 123 45 -1 6 20 0 3 0 987654 "
				      "1048576 321 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 17 1 0 0\n"),
			 0);
	struct proc_statf st;
	assert_int_equal(proc_stat_read(dir, 77, &st), 0);
	assert_int_equal(st.state, 'S');
	assert_int_equal(st.ppid, 5);
	assert_int_equal(st.pgrp, 77);
	assert_int_equal(st.session, 70);
	assert_int_equal(st.tty_nr, 34817);
	assert_int_equal(st.utime, 123);
	assert_int_equal(st.stime, 45);
	assert_int_equal(st.cutime, -1);
	assert_int_equal(st.cstime, 6);
	assert_int_equal(st.starttime, 987654);
	assert_int_equal(st.rss, 321);
	const char *bad[] = {"77 (x S 5 77", "77 (x) S 5 77 70", "77 (x) S five 77 70 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0",
			     ""};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		assert_int_equal(tmpdir_write(dir, "77/stat", bad[i]), 0);
		assert_int_equal(proc_stat_read(dir, 77, &st), -1);
	}
	assert_int_equal(proc_stat_read(dir, 78, &st), -1); /* no such process */
	assert_int_equal(tmpdir_remove(dir), 0);
	/* this process: running, its parent, and proc_stat agrees */
	assert_int_equal(proc_stat_read(NULL, getpid(), &st), 0);
	assert_int_equal(st.state, 'R');
	assert_int_equal(st.ppid, getppid());
	char s;
	pid_t pp;
	unsigned long long start;
	assert_int_equal(proc_stat(getpid(), &s, &pp, &start), 0);
	assert_int_equal(pp, getppid());
	assert_int_equal(start, st.starttime);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sanitize_replaces_control_bytes),
		cmocka_unit_test(test_sanitize_truncates),
		cmocka_unit_test(test_sanitize_utf8),
		cmocka_unit_test(test_describe_self),
		cmocka_unit_test(test_describe_arguments_joined),
		cmocka_unit_test(test_describe_missing_pid_not_visible),
		cmocka_unit_test(test_describe_fake_procfs),
		cmocka_unit_test(test_stat_read),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
