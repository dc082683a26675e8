/*
 * test-spawnreq.c — lib/jobs/spawnreq.c and lib/jobs/jobstatus.c, the two formats
 * between gpuctld and the gpuctl runs it starts: a request survives
 * encoding whole (groups, the job's GPUs, name, status file and slot, its
 * options, argv, environment, empty strings); a payload that
 * is cut short, claims more strings than it holds, lacks a NUL or has bytes
 * after its last string is refused; a status record is found only for its
 * own job, and a cleared or foreign slot says nothing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device/gpu.h"
#include "jobs/jobstatus.h"
#include "jobs/spawnreq.h"
#include "tmpdir.h"

static char *argv_[] = {"sh", "-c", "", NULL};
static char *opts_[] = {"--spot", "--hang-timeout=10m", NULL};
static char *env_[] = {"HOME=/home/a", "EMPTY=", NULL};
static gid_t groups_[] = {27, 1001, 4294967294u};

static struct spawnreq sample(void)
{
	return (struct spawnreq){.uid = 1001, .gid = 1001, .ngroups = 3, .groups = groups_, .cwd = "/home/a/w",
				 .log = "/var/lib/gpuctl/logs/12.log", .placed = "0=GPU-a,3=GPU-b", .name = "job-12",
				 .status = "/var/lib/gpuctl/logs/user-1001.status", .slot = 0x100000012ull,
				 .log_max = 0x240000000ull, .retries = 3, .nopts = 2, .opts = opts_, .argc = 3, .argv = argv_, .envc = 2, .env = env_};
}

/* the payload of an encoded request (after its header), in a buffer of its own */
static char *payload(const struct spawnreq *r, size_t *len)
{
	char *buf;
	size_t n;
	assert_int_equal(spawnreq_encode(r, &buf, &n), 0);
	struct spawnreq_hdr h;
	memcpy(&h, buf, sizeof h);
	assert_int_equal(h.magic, SPAWNREQ_MAGIC);
	assert_int_equal(h.len, n - sizeof h);
	*len = h.len;
	char *p = malloc(h.len);
	memcpy(p, buf + sizeof h, h.len);
	free(buf);
	return p;
}

static void test_round_trip(void **state)
{
	(void)state;
	struct spawnreq in = sample(), out;
	size_t len;
	char *p = payload(&in, &len);
	assert_int_equal(spawnreq_decode(p, len, &out), 0);
	assert_int_equal(out.uid, 1001);
	assert_int_equal(out.gid, 1001);
	assert_int_equal(out.ngroups, 3);
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(out.groups[i], groups_[i]);
	assert_string_equal(out.cwd, "/home/a/w");
	assert_string_equal(out.log, "/var/lib/gpuctl/logs/12.log");
	assert_string_equal(out.placed, "0=GPU-a,3=GPU-b");
	assert_string_equal(out.name, "job-12");
	assert_string_equal(out.status, "/var/lib/gpuctl/logs/user-1001.status");
	assert_true(out.slot == 0x100000012ull);
	assert_true(out.log_max == 0x240000000ull); /* 9 GiB: both halves */
	assert_int_equal(out.retries, 3);
	assert_int_equal(out.nopts, 2);
	assert_string_equal(out.opts[0], "--spot");
	assert_string_equal(out.opts[1], "--hang-timeout=10m");
	assert_null(out.opts[2]);
	assert_int_equal(out.argc, 3);
	for (size_t i = 0; i < 3; i++)
		assert_string_equal(out.argv[i], argv_[i]);
	assert_null(out.argv[3]);
	assert_int_equal(out.envc, 2);
	assert_string_equal(out.env[1], "EMPTY=");
	assert_null(out.env[2]);
	spawnreq_release(&out);
	free(p);
}

static void test_refused(void **state)
{
	(void)state;
	struct spawnreq in = sample(), out;
	size_t len;
	char *p = payload(&in, &len);
	/* cut anywhere short of its end */
	for (size_t cut = 0; cut < len; cut++)
		assert_int_equal(spawnreq_decode(p, cut, &out), GC_EINVAL);
	/* a byte past the last string */
	char *q = malloc(len + 1);
	memcpy(q, p, len);
	q[len] = 'x';
	assert_int_equal(spawnreq_decode(q, len + 1, &out), GC_EINVAL);
	/* the last NUL gone */
	memcpy(q, p, len);
	q[len - 1] = 'x';
	assert_int_equal(spawnreq_decode(q, len, &out), GC_EINVAL);
	/* counts larger than the payload could hold */
	uint32_t big = 0x7fffffff;
	memcpy(q, p, len);
	memcpy(q + 4 * sizeof big, &big, sizeof big); /* argc */
	assert_int_equal(spawnreq_decode(q, len, &out), GC_EINVAL);
	memcpy(q, p, len);
	memcpy(q + 3 * sizeof big, &big, sizeof big); /* nopts */
	assert_int_equal(spawnreq_decode(q, len, &out), GC_EINVAL);
	memcpy(q, p, len);
	memcpy(q + 2 * sizeof big, &big, sizeof big); /* ngroups */
	assert_int_equal(spawnreq_decode(q, len, &out), GC_EINVAL);
	/* no command */
	uint32_t zero = 0;
	memcpy(q, p, len);
	memcpy(q + 4 * sizeof zero, &zero, sizeof zero);
	assert_int_equal(spawnreq_decode(q, len, &out), GC_EINVAL);
	free(q);
	free(p);
	/* nothing to run, or too big, is not even encoded */
	char *buf;
	size_t n;
	in.argc = 0;
	assert_int_equal(spawnreq_encode(&in, &buf, &n), GC_EINVAL);
	in = sample();
	in.placed = NULL;
	assert_int_equal(spawnreq_encode(&in, &buf, &n), GC_EINVAL);
	in = sample();
	char *huge = malloc(SPAWNREQ_MAX + 2);
	memset(huge, 'a', SPAWNREQ_MAX + 1);
	huge[SPAWNREQ_MAX + 1] = '\0';
	char *env[] = {huge, NULL};
	in.env = env;
	in.envc = 1;
	assert_int_equal(spawnreq_encode(&in, &buf, &n), GC_EINVAL);
	free(huge);
}

static void test_status_slots(void **state)
{
	(void)state;
	char dir[64], path[128];
	assert_int_equal(tmpdir_make(dir, sizeof dir, "jobstatus"), 0);
	snprintf(path, sizeof path, "%s/user-1001.status", dir);
	int fd = open(path, O_RDWR | O_CREAT, 0600);
	assert_true(fd >= 0);
	bool ran;
	int st;
	assert_int_equal(jobstatus_read(fd, 5, &ran, &st, NULL, NULL), 0); /* empty file */
	assert_int_equal(jobstatus_write(fd, 5, true, 3, -1, 0), 0);
	assert_int_equal(jobstatus_write(fd, 6, false, 0, -1, 0), 0);
	assert_int_equal(jobstatus_read(fd, 5, &ran, &st, NULL, NULL), 1);
	assert_true(ran);
	assert_int_equal(st, 3);
	assert_int_equal(jobstatus_read(fd, 6, &ran, &st, NULL, NULL), 1);
	assert_false(ran);
	assert_int_equal(st, 0);
	/* job 5 + JOBSTATUS_SLOTS shares job 5's slot: each sees only its own record */
	int64_t other = 5 + JOBSTATUS_SLOTS;
	assert_int_equal(jobstatus_read(fd, other, &ran, &st, NULL, NULL), 0);
	assert_int_equal(jobstatus_write(fd, other, true, 255, -1, 0), 0);
	assert_int_equal(jobstatus_read(fd, 5, &ran, &st, NULL, NULL), 0);
	assert_int_equal(jobstatus_read(fd, other, &ran, &st, NULL, NULL), 1);
	assert_int_equal(st, 255);
	/* cleared before a start: nothing until written again */
	assert_int_equal(jobstatus_clear(fd, 6), 0);
	assert_int_equal(jobstatus_read(fd, 6, &ran, &st, NULL, NULL), 0);
	/* a record a user scribbled over: a status out of range says nothing */
	char bad[JOBSTATUS_REC] = "7 1 300\n";
	assert_int_equal(pwrite(fd, bad, sizeof bad, 7 * JOBSTATUS_REC), (ssize_t)sizeof bad);
	assert_int_equal(jobstatus_read(fd, 7, &ran, &st, NULL, NULL), 0);
	/* how it ended, even at the largest id; a record without it (an older gpuctl run's): unknown */
	int end = 0;
	assert_int_equal(jobstatus_write(fd, INT64_MAX, true, 143, 2, 0), 0);
	assert_int_equal(jobstatus_read(fd, INT64_MAX, &ran, &st, &end, NULL), 1);
	assert_int_equal(st, 143);
	assert_int_equal(end, 2);
	char old[JOBSTATUS_REC] = "9 1 0\n";
	assert_int_equal(pwrite(fd, old, sizeof old, 9 * JOBSTATUS_REC), (ssize_t)sizeof old);
	unsigned retries = 7;
	assert_int_equal(jobstatus_read(fd, 9, &ran, &st, &end, &retries), 1);
	assert_int_equal(end, -1);
	assert_int_equal(retries, 0);
	/* the retries a job spent; beside the largest id with the longest end there is no room: 0 */
	assert_int_equal(jobstatus_write(fd, 10, false, 1, 3, 42), 0);
	assert_int_equal(jobstatus_read(fd, 10, &ran, &st, &end, &retries), 1);
	assert_int_equal(retries, 42);
	assert_int_equal(end, 3);
	assert_int_equal(jobstatus_write(fd, INT64_MAX, true, 255, 99, 100000), 0);
	assert_int_equal(jobstatus_read(fd, INT64_MAX, &ran, &st, &end, &retries), 1);
	assert_int_equal(st, 255);
	assert_int_equal(end, 99);
	assert_int_equal(retries, 0);
	close(fd);
	/* a file open only for reading cannot take a record */
	fd = open(path, O_RDONLY);
	assert_int_equal(jobstatus_write(fd, 8, true, 0, -1, 0), -1);
	close(fd);
	assert_int_equal(tmpdir_remove(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_status_slots),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
