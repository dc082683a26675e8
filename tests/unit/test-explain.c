/*
 * test-explain.c — lib/explain.c: cleaning lines, loading signature files
 * (and refusing bad ones), values and line numbers across block boundaries.
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
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "gpuctl/gpuctl.h"
#include "explain.h"

static struct ex_db *db;

static int load(void **state)
{
	(void)state;
	char err[512];
	return ex_db_load(&db, GPUCTL_SRC_DATADIR "/signatures", err, sizeof err);
}

static int unload(void **state)
{
	(void)state;
	ex_db_free(db);
	return 0;
}

static void test_clean_line(void **state)
{
	(void)state;
	char out[128];
	const char in[] = "\033[1;31mRuntime\033[0mError\r: x\033]0;title\007y\033(Bz";
	ex_clean_line(in, sizeof in - 1, out);
	assert_string_equal(out, "RuntimeError: xyz");
}

static const struct ex_finding *find(const struct ex_result *r, const char *id)
{
	for (size_t i = 0; i < r->n; i++)
		if (strcmp(r->findings[i].id, id) == 0)
			return &r->findings[i];
	return NULL;
}

static double num(const struct ex_finding *f, const char *name)
{
	for (size_t i = 0; i < f->nvalues; i++)
		if (strcmp(f->values[i].name, name) == 0 && f->values[i].is_num)
			return f->values[i].num;
	fail_msg("no value %s", name);
	return -1;
}

static void test_old_oom_format(void **state)
{
	(void)state;
	const char *log = "x\nRuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total "
			  "capacity; 14.29 GiB already allocated; 5.19 MiB free; 14.65 GiB reserved in total by "
			  "PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb\n";
	struct ex_result r;
	ex_scan_buf(db, log, strlen(log), &r);
	const struct ex_finding *f = find(&r, "pytorch-oom");
	assert_non_null(f);
	assert_int_equal(f->first_line, 2);
	assert_true(num(f, "requested_mib") == 20.0);
	assert_true(num(f, "reserved_unallocated_mib") > 368 && num(f, "reserved_unallocated_mib") < 369);
	ex_result_free(&r);
}

static void test_block_boundaries_and_line_numbers(void **state)
{
	(void)state;
	/* failures at the first line, across a 1 MiB read boundary, at the end without a newline */
	char path[] = "/tmp/gpuctl-explain-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	const char *xid = "NVRM: Xid (PCI:0000:18:00): 79, pid=1, GPU has fallen off the bus.\n";
	const char *filler = "INFO step 12345 loss 0.1234 lr 3e-4 nothing to see here at all\n"; /* 64 bytes */
	assert_int_equal(write(fd, xid, strlen(xid)), (ssize_t)strlen(xid));
	size_t written = strlen(xid);
	unsigned long lines = 1;
	while (written + 64 < (1u << 20) - 20) {
		assert_int_equal(write(fd, filler, 64), 64);
		written += 64;
		lines++;
	}
	assert_int_equal(write(fd, xid, strlen(xid)), (ssize_t)strlen(xid)); /* straddles 1 MiB */
	lines++;
	unsigned long second = lines;
	const char *last = "RuntimeError: CUDA error: an illegal memory access was encountered";
	assert_int_equal(write(fd, last, strlen(last)), (ssize_t)strlen(last));
	lines++;
	lseek(fd, 0, SEEK_SET);
	struct ex_result r;
	char err[256];
	assert_int_equal(ex_scan_fd(db, fd, &r, err, sizeof err), GC_OK);
	close(fd);
	unlink(path);
	assert_int_equal(r.lines, lines);
	const struct ex_finding *f = find(&r, "xid");
	assert_non_null(f);
	assert_int_equal(f->count, 2);
	assert_int_equal(f->first_line, 1);
	const struct ex_finding *g = find(&r, "illegal-memory-access");
	assert_non_null(g);
	assert_int_equal(g->first_line, lines);
	assert_true(second > 1);
	ex_result_free(&r);
}

static void test_bad_signature_files(void **state)
{
	(void)state;
	char dir[] = "/tmp/gpuctl-sigs-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char p[128], err[512];
	struct ex_db *bad;
	snprintf(p, sizeof p, "%s/a.json", dir);
	FILE *f = fopen(p, "w");
	fputs("{\"signatures\": [{\"id\": \"x\", \"title\": \"t\", \"trigger\": \"T\", \"regex\": \"(\"}]}", f);
	fclose(f);
	assert_int_equal(ex_db_load(&bad, dir, err, sizeof err), GC_EINVAL);
	assert_non_null(strstr(err, "bad regex"));
	f = fopen(p, "w");
	fputs("{\"signatures\": [{\"id\": \"x\", \"title\": \"t\", \"trigger\": \"T\", \"regex\": \"(a)\", "
	      "\"values\": {\"v\": [2, \"int\"]}}]}", f);
	fclose(f);
	assert_int_equal(ex_db_load(&bad, dir, err, sizeof err), GC_EINVAL);
	assert_non_null(strstr(err, "group"));
	f = fopen(p, "w");
	fputs("{\"signatures\": [ not json", f);
	fclose(f);
	assert_int_equal(ex_db_load(&bad, dir, err, sizeof err), GC_EINVAL);
	assert_non_null(strstr(err, "line 1"));
	unlink(p);
	assert_int_equal(ex_db_load(&bad, dir, err, sizeof err), GC_ENOTFOUND);
	rmdir(dir);
	assert_int_equal(ex_db_load(&bad, "/nonexistent-sigs", err, sizeof err), GC_EIO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clean_line),
		cmocka_unit_test(test_old_oom_format),
		cmocka_unit_test(test_block_boundaries_and_line_numbers),
		cmocka_unit_test(test_bad_signature_files),
	};
	return cmocka_run_group_tests(tests, load, unload);
}
