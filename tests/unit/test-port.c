/*
 * test-port.c — lib/jobs/port.c: a held port is never handed out again while
 * held, not even when the kernel offers the same number; its claim goes away
 * on release; without a state directory a port is named and nothing held; a
 * closed ports/ directory (what older versions shared) is not in the way.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "device/gpu.h"
#include "jobs/lease.h"
#include "jobs/port.h"
#include "tmpdir.h"

static struct lease_dir *open_dir(const char *dir)
{
	struct lease_dir *d = NULL;
	char err[256] = "";
	if (lease_dir_open(&d, dir, true, err, sizeof err) != GC_OK)
		fail_msg("lease_dir_open: %s", err);
	return d;
}

/* how many port claims are left in dir */
static int claims(const char *dir)
{
	DIR *dd = opendir(dir);
	int n = 0;
	for (struct dirent *e; dd && (e = readdir(dd));)
		n += strncmp(e->d_name, "port-", 5) == 0;
	if (dd)
		closedir(dd);
	return n;
}

static void test_distinct_and_released(void **state)
{
	(void)state;
	char dir[64], err[256];
	assert_int_equal(tmpdir_make(dir, sizeof dir, "port"), 0);
	struct lease_dir *d = open_dir(dir);
	struct port_hold *h[32];
	int ports[32];
	struct lease_info me = {.pid = getpid(), .supervisor = getpid(), .uid = getuid()};
	for (int i = 0; i < 32; i++) {
		assert_int_equal(port_reserve(d, &ports[i], &h[i], err, sizeof err), GC_OK);
		for (int k = 0; k < i; k++)
			assert_int_not_equal(ports[i], ports[k]);
		/* held: another taker cannot have it */
		struct lease *l = NULL;
		assert_int_equal(lease_port_try(d, ports[i], &me, &l, err, sizeof err), GC_EBUSY);
	}
	assert_int_equal(claims(dir), 32);
	for (int i = 0; i < 32; i++)
		port_release(h[i]);
	assert_int_equal(claims(dir), 0);
	/* released: it can be had again */
	struct lease *l = NULL;
	assert_int_equal(lease_port_try(d, ports[0], &me, &l, err, sizeof err), GC_OK);
	lease_release(l);
	port_release(NULL);
	lease_dir_close(d);
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

/* a ports/ directory someone made first and closed (as older versions used) is not needed */
static void test_closed_ports_dir(void **state)
{
	(void)state;
	char dir[64], sub[96], err[256] = "";
	assert_int_equal(tmpdir_make(dir, sizeof dir, "port"), 0);
	snprintf(sub, sizeof sub, "%s/ports", dir);
	assert_int_equal(mkdir(sub, 0), 0);
	struct lease_dir *d = open_dir(dir);
	int port;
	struct port_hold *h;
	assert_int_equal(port_reserve(d, &port, &h, err, sizeof err), GC_OK);
	/* the hold outlives the directory handle it was taken through (gpuctl launch does that) */
	lease_dir_close(d);
	assert_int_equal(claims(dir), 1);
	port_release(h);
	assert_int_equal(claims(dir), 0);
	assert_int_equal(rmdir(sub), 0);
	assert_int_equal(tmpdir_remove(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_distinct_and_released),
		cmocka_unit_test(test_no_state_dir),
		cmocka_unit_test(test_closed_ports_dir),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
