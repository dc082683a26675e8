/*
 * test-port.c — lib/port.c: a held port is never handed out again while
 * held, not even when the kernel offers the same number; its file goes away
 * on release; without a state directory a port is named and nothing held.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpuctl/gpuctl.h"
#include "port.h"
#include "tmpdir.h"

static void test_distinct_and_released(void **state)
{
	(void)state;
	char dir[64], path[160], err[256];
	assert_int_equal(tmpdir_make(dir, sizeof dir, "port"), 0);
	struct port_hold *h[32];
	int ports[32];
	for (int i = 0; i < 32; i++) {
		assert_int_equal(port_reserve(dir, &ports[i], &h[i], err, sizeof err), GC_OK);
		for (int k = 0; k < i; k++)
			assert_int_not_equal(ports[i], ports[k]);
		snprintf(path, sizeof path, "%s/ports/%d", dir, ports[i]);
		/* held: another taker cannot lock it */
		int fd = open(path, O_RDONLY);
		assert_true(fd >= 0);
		assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), -1);
		close(fd);
	}
	for (int i = 0; i < 32; i++) {
		port_release(h[i]);
		snprintf(path, sizeof path, "%s/ports/%d", dir, ports[i]);
		struct stat st;
		assert_int_equal(stat(path, &st), -1);
	}
	port_release(NULL);
	assert_int_equal(tmpdir_remove(dir), 0);
}

static void test_no_state_dir(void **state)
{
	(void)state;
	char err[256];
	int port = 0;
	struct port_hold *h = (struct port_hold *)1;
	assert_int_equal(port_reserve(NULL, &port, &h, err, sizeof err), GC_OK);
	assert_null(h);
	assert_true(port > 0 && port < 65536);
}

static void test_unusable_dir(void **state)
{
	(void)state;
	char err[256] = "";
	int port;
	struct port_hold *h;
	assert_int_equal(port_reserve("/nonexistent/gpuctl", &port, &h, err, sizeof err), GC_EIO);
	assert_non_null(strstr(err, "/nonexistent/gpuctl/ports"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_distinct_and_released),
		cmocka_unit_test(test_no_state_dir),
		cmocka_unit_test(test_unusable_dir),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
