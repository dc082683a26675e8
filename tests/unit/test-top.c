/*
 * test-top.c — src/top-data.c, what `gpuctl top` shows apart from curses:
 * the process table's rows (filter, sort, the tree of jobs and processes), the abbreviated GPU names,
 * the sparkline's cells and the remembered view (top.conf).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "top.h"

static struct top_proc procs[] = {
	{.gpu = 0, .pid = 100, .ppid = 1, .visible = true, .user = "alice", .command = "sh -c train", .mem_known = true,
	 .gpu_mem = 1 << 20, .sm_util = 5, .cpu = 1, .rss = 10},
	{.gpu = 0, .pid = 101, .ppid = 100, .visible = true, .user = "alice", .command = "python train.py",
	 .mem_known = true, .gpu_mem = 8 << 20, .sm_util = 90, .cpu = 50, .rss = 30},
	{.gpu = 1, .pid = 200, .ppid = 1, .visible = true, .user = "Bob", .command = "python eval.py", .mem_known = true,
	 .gpu_mem = 4 << 20, .sm_util = 40, .cpu = 20, .rss = 20},
	{.gpu = 1, .pid = 300, .visible = false, .user = "", .command = "", .mem_known = false, .sm_util = -1,
	 .cpu = -1},
};

static struct top_data data(void)
{
	struct top_data d;
	memset(&d, 0, sizeof d);
	d.procs = procs;
	d.nprocs = sizeof procs / sizeof procs[0];
	return d;
}

static void test_rows_sorted(void **state)
{
	(void)state;
	struct top_data d = data();
	struct top_view v = {.sort = TOP_GMEM};
	size_t rows[4];
	/* numbers largest first; memory not known last */
	assert_int_equal(top_rows(&d, &v, rows), 4);
	assert_int_equal(procs[rows[0]].pid, 101);
	assert_int_equal(procs[rows[1]].pid, 200);
	assert_int_equal(procs[rows[2]].pid, 100);
	assert_int_equal(procs[rows[3]].pid, 300);
	v.reverse = true;
	top_rows(&d, &v, rows);
	assert_int_equal(procs[rows[0]].pid, 300);
	assert_int_equal(procs[rows[3]].pid, 101);
	/* names in order: "" < "Bob" < "alice" (bytes), ties by GPU then pid */
	v = (struct top_view){.sort = TOP_USER};
	top_rows(&d, &v, rows);
	assert_int_equal(procs[rows[0]].pid, 300);
	assert_int_equal(procs[rows[1]].pid, 200);
	assert_int_equal(procs[rows[2]].pid, 100);
	assert_int_equal(procs[rows[3]].pid, 101);
}

static void test_rows_filtered(void **state)
{
	(void)state;
	struct top_data d = data();
	struct top_view v = {.sort = TOP_PID};
	size_t rows[4];
	/* the user or the command, without regard to case */
	snprintf(v.filter, sizeof v.filter, "bob");
	assert_int_equal(top_rows(&d, &v, rows), 1);
	assert_int_equal(procs[rows[0]].pid, 200);
	snprintf(v.filter, sizeof v.filter, "TRAIN");
	assert_int_equal(top_rows(&d, &v, rows), 2);
	assert_int_equal(procs[rows[0]].pid, 100);
	assert_int_equal(procs[rows[1]].pid, 101);
	snprintf(v.filter, sizeof v.filter, "nobody");
	assert_int_equal(top_rows(&d, &v, rows), 0);
}

static void test_rows_tree(void **state)
{
	(void)state;
	struct top_data d = data();
	struct top_view v = {.sort = TOP_GMEM, .tree = true};
	size_t rows[5];
	/* no lease: all under "(no lease)"; the child (most memory) under its parent, one level deeper */
	assert_int_equal(top_rows_max(&d), 5);
	assert_int_equal(top_rows(&d, &v, rows), 5);
	assert_int_equal(top_row_kind(&d, rows[0]), TOP_ROW_NOLEASE);
	assert_int_equal(procs[rows[1]].pid, 200);
	assert_int_equal(procs[rows[2]].pid, 100);
	assert_int_equal(procs[rows[3]].pid, 101);
	assert_int_equal(procs[rows[3]].depth, 2);
	assert_int_equal(procs[rows[2]].depth, 1);
	assert_int_equal(procs[rows[4]].pid, 300);
	/* its parent filtered out: the child is a root */
	snprintf(v.filter, sizeof v.filter, "python");
	assert_int_equal(top_rows(&d, &v, rows), 3);
	assert_int_equal(top_row_kind(&d, rows[0]), TOP_ROW_NOLEASE);
	assert_int_equal(procs[rows[1]].pid, 101);
	assert_int_equal(procs[rows[1]].depth, 1);
	/* without the tree, no job rows */
	v = (struct top_view){.sort = TOP_GMEM};
	assert_int_equal(top_rows(&d, &v, rows), 4);
	assert_int_equal(procs[rows[0]].depth, 0);
}

/*
 * Leases as jobs: "ddp" (a gpuctl run --name ddp -- torchrun ...) holds GPUs 2
 * and 3, its two workers (children of torchrun, which is on no GPU) one on
 * each, and a child of the first; "train" holds GPU 0; "idle" holds GPU 5 and
 * runs nothing there; on GPU 6 (nobody's) and GPU 2 (carol is not ddp's
 * holder) processes of no lease.
 */
static struct top_proc jprocs[] = {
	{.gpu = 2, .pid = 500, .ppid = 400, .visible = true, .user = "root", .command = "python worker.py",
	 .mem_known = true, .gpu_mem = 6 << 20, .job = 1},
	{.gpu = 3, .pid = 501, .ppid = 400, .visible = true, .user = "root", .command = "python worker.py",
	 .mem_known = true, .gpu_mem = 8 << 20, .job = 1},
	{.gpu = 2, .pid = 502, .ppid = 500, .visible = true, .user = "root", .command = "compile helper",
	 .mem_known = true, .gpu_mem = 1 << 20, .job = 1},
	{.gpu = 0, .pid = 600, .ppid = 1, .visible = true, .user = "bob", .command = "python train.py",
	 .mem_known = true, .gpu_mem = 4 << 20, .job = 2},
	{.gpu = 6, .pid = 700, .ppid = 1, .visible = true, .user = "root", .command = "sleep 120",
	 .mem_known = true, .gpu_mem = 2 << 20},
	{.gpu = 2, .pid = 800, .ppid = 1, .visible = true, .user = "carol", .command = "python eval.py",
	 .mem_known = true, .gpu_mem = 16 << 20, .unleased = true},
};

static struct top_lease jleases[] = {
	{.info = {.pid = 400, .user = "root", .since = 2000, .name = "ddp", .command = "torchrun --nproc-per-node 2 w.py"},
	 .gpus = "2,3", .ngpus = 2},
	{.info = {.pid = 410, .user = "bob", .since = 1000, .name = "train", .command = "python train.py"},
	 .gpus = "0", .ngpus = 1},
	{.info = {.pid = 420, .user = "dave", .since = 3000, .name = "idle", .command = "sleep 1000"},
	 .gpus = "5", .ngpus = 1},
};

#define NJP (sizeof jprocs / sizeof jprocs[0])

static void test_rows_jobs(void **state)
{
	(void)state;
	struct top_data d;
	memset(&d, 0, sizeof d);
	d.procs = jprocs;
	d.nprocs = NJP;
	d.leases = jleases;
	d.nleases = sizeof jleases / sizeof jleases[0];
	struct top_view v = {.sort = TOP_GMEM, .tree = true};
	size_t rows[NJP + 4], n;
	assert_int_equal(top_rows_max(&d), NJP + 4);
	/*
	 * most GPU memory first: ddp (its first process, 501, comes before train's), train,
	 * idle (nothing listed), then "(no lease)" last although carol's eval has the most
	 */
	n = top_rows(&d, &v, rows);
	assert_int_equal(n, NJP + 4);
	size_t want[] = {NJP + 0, 1, 0, 2, NJP + 1, 3, NJP + 2, NJP + 3, 5, 4};
	int depth[] = {-1, 1, 1, 2, -1, 1, -1, -1, 1, 1};
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(rows[i], want[i]);
		if (depth[i] >= 0)
			assert_int_equal(jprocs[rows[i]].depth, depth[i]);
	}
	assert_int_equal(top_row_kind(&d, rows[0]), TOP_ROW_JOB);
	assert_int_equal(top_row_kind(&d, rows[1]), TOP_ROW_PROC);
	assert_int_equal(top_row_kind(&d, rows[7]), TOP_ROW_NOLEASE);
	/* by user: bob's train first, then ddp (root); sorted within a job (by user, then GPU, then pid) */
	v.sort = TOP_USER;
	n = top_rows(&d, &v, rows);
	assert_int_equal(n, NJP + 4);
	size_t want_user[] = {NJP + 1, 3, NJP + 0, 0, 2, 1, NJP + 2, NJP + 3, 5, 4};
	for (size_t i = 0; i < n; i++)
		assert_int_equal(rows[i], want_user[i]);
	/* a filter matching a process keeps its job's row, not the others' */
	v.sort = TOP_GMEM;
	snprintf(v.filter, sizeof v.filter, "WORKER");
	n = top_rows(&d, &v, rows);
	assert_int_equal(n, 3);
	assert_int_equal(rows[0], NJP + 0);
	assert_int_equal(rows[1], 1);
	assert_int_equal(rows[2], 0);
	/* one matching the job's name keeps the job with all its processes */
	snprintf(v.filter, sizeof v.filter, "ddp");
	n = top_rows(&d, &v, rows);
	assert_int_equal(n, 4);
	assert_int_equal(rows[0], NJP + 0);
	assert_int_equal(rows[3], 2);
	assert_int_equal(jprocs[2].depth, 2);
	/* and "(no lease)" only with a process under it */
	snprintf(v.filter, sizeof v.filter, "eval");
	n = top_rows(&d, &v, rows);
	assert_int_equal(n, 2);
	assert_int_equal(top_row_kind(&d, rows[0]), TOP_ROW_NOLEASE);
	assert_int_equal(rows[1], 5);
	/* without the tree: the processes alone, as before */
	v = (struct top_view){.sort = TOP_GMEM};
	n = top_rows(&d, &v, rows);
	assert_int_equal(n, NJP);
	assert_int_equal(rows[0], 5);
	assert_true(top_lease_same(&jleases[0].info, &jleases[0].info));
	assert_false(top_lease_same(&jleases[0].info, &jleases[1].info));
}

static void test_short_name(void **state)
{
	(void)state;
	char b[32];
	top_short_name("NVIDIA H100 80GB HBM3", b, sizeof b, 16);
	assert_string_equal(b, "H100 80GB HBM3");
	top_short_name("NVIDIA H100 80GB HBM3", b, sizeof b, 9);
	assert_string_equal(b, "H100 80GB");
	top_short_name("NVIDIA H100 80GB HBM3", b, sizeof b, 8);
	assert_string_equal(b, "H100");
	top_short_name("Tesla V100-SXM2-16GB", b, sizeof b, 9);
	assert_string_equal(b, "V100-SXM2"); /* no space to cut at: cut at the width */
	top_short_name("NVIDIA GeForce RTX 4090", b, sizeof b, 16);
	assert_string_equal(b, "RTX 4090");
	top_short_name(NULL, b, sizeof b, 16);
	assert_string_equal(b, "");
	char small[6];
	top_short_name("NVIDIA A100-SXM4-80GB", small, sizeof small, 16);
	assert_string_equal(small, "A100-"); /* never past the buffer */
}

static void test_spark(void **state)
{
	(void)state;
	float v[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, out[64];
	/* fewer samples than cells: as they are */
	assert_int_equal(top_spark(v, 3, 40, out), 3);
	assert_true(out[0] == 1 && out[2] == 3);
	/* 10 in 4 cells: runs of 3 from the newest, the oldest one alone */
	assert_int_equal(top_spark(v, 10, 4, out), 4);
	assert_true(out[0] == 1 && out[1] == 4 && out[2] == 7 && out[3] == 10);
	/* a peak is kept, and a run of no samples stays unknown */
	float w[6] = {-1, -1, 0, 90, 0, 0};
	assert_int_equal(top_spark(w, 6, 3, out), 3);
	assert_true(out[0] < 0 && out[1] == 90 && out[2] == 0);
	/* the history kept fills a 40-cell sparkline */
	static float h[TOP_HIST];
	for (size_t i = 0; i < TOP_HIST; i++)
		h[i] = i == 0 ? 100.0f : 0.0f;
	assert_int_equal(top_spark(h, TOP_HIST, 40, out), 40);
	assert_true(out[0] == 100);
	assert_int_equal(top_spark(h, 0, 40, out), 0);
}

static void test_conf(void **state)
{
	(void)state;
	struct top_view v = {.sort = TOP_GMEM};
	char text[] = "# a comment\nsort=sm%\r\nreverse=1\ntree=1\ncolour=red\nnoequals\n";
	FILE *f = fmemopen(text, strlen(text), "r");
	assert_non_null(f);
	top_conf_read(&v, f);
	fclose(f);
	assert_int_equal(v.sort, TOP_SM);
	assert_true(v.reverse && v.tree);
	/* an unknown column leaves the sort as it was */
	char bad[] = "sort=WATTS\nreverse=0\n";
	f = fmemopen(bad, strlen(bad), "r");
	top_conf_read(&v, f);
	fclose(f);
	assert_int_equal(v.sort, TOP_SM);
	assert_false(v.reverse);
	/* what is written reads back */
	char buf[256] = "";
	struct top_view w = {.sort = TOP_GMEM, .reverse = true}, r = {.sort = TOP_PID, .tree = true};
	f = fmemopen(buf, sizeof buf, "w");
	top_conf_write(&w, f);
	fclose(f);
	assert_non_null(strstr(buf, "sort=GPU-MEM\n"));
	f = fmemopen(buf, strlen(buf), "r");
	top_conf_read(&r, f);
	fclose(f);
	assert_int_equal(r.sort, TOP_GMEM);
	assert_true(r.reverse);
	assert_false(r.tree);
	assert_int_equal(top_col_parse("gpu-mem"), TOP_GMEM);
	assert_int_equal(top_col_parse("x"), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows_sorted), cmocka_unit_test(test_rows_filtered),
		cmocka_unit_test(test_rows_tree),   cmocka_unit_test(test_rows_jobs),
		cmocka_unit_test(test_short_name),
		cmocka_unit_test(test_spark),       cmocka_unit_test(test_conf),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
