/*
 * test-top.c — src/top-data.c, what `gpuctl top` shows apart from curses:
 * the process table's rows (filter, sort, tree), the abbreviated GPU names,
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
	size_t rows[4];
	/* the child (most memory) goes under its parent, one level deeper */
	assert_int_equal(top_rows(&d, &v, rows), 4);
	assert_int_equal(procs[rows[0]].pid, 200);
	assert_int_equal(procs[rows[1]].pid, 100);
	assert_int_equal(procs[rows[2]].pid, 101);
	assert_int_equal(procs[rows[2]].depth, 1);
	assert_int_equal(procs[rows[1]].depth, 0);
	assert_int_equal(procs[rows[3]].pid, 300);
	/* its parent filtered out: the child is a root */
	snprintf(v.filter, sizeof v.filter, "python");
	assert_int_equal(top_rows(&d, &v, rows), 2);
	assert_int_equal(procs[rows[0]].pid, 101);
	assert_int_equal(procs[rows[0]].depth, 0);
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
		cmocka_unit_test(test_rows_tree),   cmocka_unit_test(test_short_name),
		cmocka_unit_test(test_spark),       cmocka_unit_test(test_conf),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
