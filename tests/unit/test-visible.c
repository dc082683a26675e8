/*
 * test-visible.c — lib/jobs/visible.c against CUDA's documented rules for
 * CUDA_VISIBLE_DEVICES, as a table: value → the GPUs CUDA shows, in order,
 * and where and why parsing stopped.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "gpuctl/gpuctl.h"

#include <stdio.h>
#include <string.h>

#include "jobs/visible.h"

/* four GPUs; 0 and 1 share the prefix "GPU-8932f93" */
static const char *const uuids[] = {
	"GPU-8932f937-d72c-4106-c12f-20bd9faed9f6",
	"GPU-8932f938-aaaa-bbbb-cccc-000000000001",
	"GPU-1b2c3d4e-0000-1111-2222-333333333333",
	"GPU-ffffffff-0000-1111-2222-444444444444",
};
#define NGPUS 4

struct row {
	const char *value;          /* NULL = unset */
	enum visible_form form;
	int gpus[6];                /* expected NVML indices, -2 terminates (-1 = MIG, parent unknown) */
	enum visible_stop stop;
	size_t stop_at;
};

#define END -2
static const struct row rows[] = {
	/* unset: all; empty: none */
	{NULL, VISIBLE_ALL, {END}, VISIBLE_STOP_NONE, 0},
	{"", VISIBLE_NONE, {END}, VISIBLE_STOP_NONE, 0},
	/* indices, enumerated in the order given */
	{"0", VISIBLE_INDEX, {0, END}, VISIBLE_STOP_NONE, 0},
	{"2,1", VISIBLE_INDEX, {2, 1, END}, VISIBLE_STOP_NONE, 0},
	{"0,1,2,3", VISIBLE_INDEX, {0, 1, 2, 3, END}, VISIBLE_STOP_NONE, 0},
	{"01", VISIBLE_INDEX, {1, END}, VISIBLE_STOP_NONE, 0},
	/* the Programming Guide's example: only 0 and 2 are visible */
	{"0,2,-1,1", VISIBLE_INDEX, {0, 2, END}, VISIBLE_STOP_RANGE, 2},
	{"0,4", VISIBLE_INDEX, {0, END}, VISIBLE_STOP_RANGE, 1},
	{"4,0", VISIBLE_NONE, {END}, VISIBLE_STOP_RANGE, 0},
	{"99999999999999999999999", VISIBLE_NONE, {END}, VISIBLE_STOP_RANGE, 0},
	{"0,,1", VISIBLE_INDEX, {0, END}, VISIBLE_STOP_SYNTAX, 1},
	{"1,2,", VISIBLE_INDEX, {1, 2, END}, VISIBLE_STOP_SYNTAX, 2},
	{"1x", VISIBLE_NONE, {END}, VISIBLE_STOP_SYNTAX, 0},
	{" 1", VISIBLE_NONE, {END}, VISIBLE_STOP_SYNTAX, 0},
	{"1, 2", VISIBLE_INDEX, {1, END}, VISIBLE_STOP_SYNTAX, 1},
	{"abc", VISIBLE_NONE, {END}, VISIBLE_STOP_SYNTAX, 0},
	/* a duplicate makes the whole list invalid */
	{"1,1", VISIBLE_NONE, {END}, VISIBLE_STOP_DUPLICATE, 1},
	{"0,1,0", VISIBLE_NONE, {END}, VISIBLE_STOP_DUPLICATE, 2},
	/* ...but only among the entries before the first invalid one */
	{"0,-1,0", VISIBLE_INDEX, {0, END}, VISIBLE_STOP_RANGE, 1},
	/* UUIDs: full, abbreviated (unique prefix, "GPU-" included), any case */
	{"GPU-8932f937-d72c-4106-c12f-20bd9faed9f6", VISIBLE_UUID, {0, END}, VISIBLE_STOP_NONE, 0},
	{"GPU-8932f937", VISIBLE_UUID, {0, END}, VISIBLE_STOP_NONE, 0},
	{"GPU-1b2c,GPU-ffff", VISIBLE_UUID, {2, 3, END}, VISIBLE_STOP_NONE, 0},
	{"GPU-FFFFFFFF", VISIBLE_UUID, {3, END}, VISIBLE_STOP_NONE, 0},
	{"GPU-8932f93", VISIBLE_NONE, {END}, VISIBLE_STOP_AMBIGUOUS, 0},
	{"GPU-1b2c,GPU-8932f93", VISIBLE_UUID, {2, END}, VISIBLE_STOP_AMBIGUOUS, 1},
	{"GPU-deadbeef", VISIBLE_NONE, {END}, VISIBLE_STOP_NOMATCH, 0},
	{"GPU-", VISIBLE_NONE, {END}, VISIBLE_STOP_NOMATCH, 0},
	{"GPU-1b2c,GPU-1b2c3d4e-0000-1111-2222-333333333333", VISIBLE_NONE, {END}, VISIBLE_STOP_DUPLICATE, 1},
	/* one form per list */
	{"0,GPU-1b2c", VISIBLE_INDEX, {0, END}, VISIBLE_STOP_MIXED, 1},
	{"GPU-1b2c,0", VISIBLE_UUID, {2, END}, VISIBLE_STOP_MIXED, 1},
	{"0,MIG-GPU-1b2c/1/0", VISIBLE_INDEX, {0, END}, VISIBLE_STOP_MIXED, 1},
	/* MIG devices: MIG-GPU-<uuid>/<gi>/<ci> (parent known) and MIG-<uuid> */
	{"MIG-GPU-8932f937-d72c-4106-c12f-20bd9faed9f6/1/2", VISIBLE_MIG, {0, END}, VISIBLE_STOP_NONE, 0},
	{"MIG-GPU-1b2c/1/0,MIG-GPU-1b2c/2/0", VISIBLE_MIG, {2, 2, END}, VISIBLE_STOP_NONE, 0},
	{"MIG-c6b8e5d2-46d1-5a47-b4f9-b8e8b5c1d2e3", VISIBLE_MIG, {-1, END}, VISIBLE_STOP_NONE, 0},
	{"MIG-GPU-1b2c/1/0,MIG-GPU-1b2c/1/0", VISIBLE_NONE, {END}, VISIBLE_STOP_DUPLICATE, 1},
	{"MIG-GPU-1b2c/1", VISIBLE_NONE, {END}, VISIBLE_STOP_SYNTAX, 0},
	{"MIG-GPU-1b2c/a/0", VISIBLE_NONE, {END}, VISIBLE_STOP_SYNTAX, 0},
	{"MIG-GPU-deadbeef/1/0", VISIBLE_NONE, {END}, VISIBLE_STOP_NOMATCH, 0},
	{"MIG-xyz", VISIBLE_NONE, {END}, VISIBLE_STOP_SYNTAX, 0},
};

static void test_table(void **state)
{
	(void)state;
	for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
		const struct row *w = &rows[r];
		struct visible v;
		visible_parse(w->value, uuids, NGPUS, &v);
		size_t n = 0;
		while (w->gpus[n] != END)
			n++;
		char where[160];
		snprintf(where, sizeof where, "row %zu: CUDA_VISIBLE_DEVICES=%s", r,
			 w->value ? w->value : "(unset)");
		if (v.form != w->form || v.n != n || v.stop != w->stop ||
		    (w->stop != VISIBLE_STOP_NONE && v.stop_at != w->stop_at))
			fail_msg("%s: got form %d n %zu stop %d at %zu; want form %d n %zu stop %d at %zu",
				 where, v.form, v.n, v.stop, v.stop_at, w->form, n, w->stop, w->stop_at);
		for (size_t i = 0; i < n; i++)
			if (v.e[i].gpu != w->gpus[i])
				fail_msg("%s: entry %zu is GPU %d, want %d", where, i, v.e[i].gpu, w->gpus[i]);
	}
}

static void test_too_many_entries(void **state)
{
	(void)state;
	static char value[VISIBLE_MAX * 48];
	size_t off = 0;
	for (int i = 0; i < VISIBLE_MAX + 1; i++)
		off += (size_t)snprintf(value + off, sizeof value - off, "%sMIG-%08x-0000-0000-0000-000000000000",
					i ? "," : "", i);
	struct visible v;
	visible_parse(value, uuids, NGPUS, &v);
	assert_int_equal(v.n, VISIBLE_MAX);
	assert_int_equal(v.stop, VISIBLE_STOP_TOO_MANY);
	assert_int_equal(v.stop_at, VISIBLE_MAX);
}

static void test_has_and_nested_render(void **state)
{
	(void)state;
	struct visible all, parent;
	visible_parse(NULL, uuids, NGPUS, &all);
	assert_true(visible_has(&all, 3));
	assert_false(visible_has(&all, -1));
	/* gpuctl running under CUDA_VISIBLE_DEVICES=3,1 may only pick 3 and 1 */
	visible_parse("3,1", uuids, NGPUS, &parent);
	assert_true(visible_has(&parent, 3));
	assert_true(visible_has(&parent, 1));
	assert_false(visible_has(&parent, 0));
	/* ...and hands its child the physical index, in the parent's form */
	char buf[256];
	unsigned pick[] = {1};
	assert_int_equal(visible_child_form(&parent, false), VISIBLE_INDEX);
	assert_int_equal(visible_render(VISIBLE_INDEX, uuids, NGPUS, pick, 1, buf, sizeof buf), 0);
	assert_string_equal(buf, "1");
	/* a parent that used UUIDs (even abbreviated) gets full UUIDs back */
	visible_parse("GPU-ffff,GPU-1b2c", uuids, NGPUS, &parent);
	assert_int_equal(visible_child_form(&parent, false), VISIBLE_UUID);
	unsigned two[] = {3, 2};
	assert_int_equal(visible_render(VISIBLE_UUID, uuids, NGPUS, two, 2, buf, sizeof buf), 0);
	assert_string_equal(buf, "GPU-ffffffff-0000-1111-2222-444444444444,"
				 "GPU-1b2c3d4e-0000-1111-2222-333333333333");
	/* --ids uuid asks for UUIDs whatever the parent used */
	assert_int_equal(visible_child_form(&all, true), VISIBLE_UUID);
	assert_int_equal(visible_child_form(&all, false), VISIBLE_INDEX);
}

static void test_render_edges(void **state)
{
	(void)state;
	char buf[16];
	unsigned sel[] = {2, 0};
	assert_int_equal(visible_render(VISIBLE_INDEX, uuids, NGPUS, sel, 2, buf, sizeof buf), 0);
	assert_string_equal(buf, "2,0");
	/* no GPU is "", which CUDA reads as none (unset would mean all) */
	assert_int_equal(visible_render(VISIBLE_INDEX, uuids, NGPUS, sel, 0, buf, sizeof buf), 0);
	assert_string_equal(buf, "");
	/* too small, out of range, unrenderable form */
	assert_int_equal(visible_render(VISIBLE_UUID, uuids, NGPUS, sel, 1, buf, sizeof buf), GC_EINVAL);
	unsigned bad[] = {4};
	assert_int_equal(visible_render(VISIBLE_INDEX, uuids, NGPUS, bad, 1, buf, sizeof buf), GC_EINVAL);
	assert_int_equal(visible_render(VISIBLE_MIG, uuids, NGPUS, sel, 1, buf, sizeof buf), GC_EINVAL);
	/* every stop code has words */
	for (int s = VISIBLE_STOP_NONE; s <= VISIBLE_STOP_TOO_MANY; s++)
		assert_string_not_equal(visible_stop_reason((enum visible_stop)s), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_too_many_entries),
		cmocka_unit_test(test_has_and_nested_render),
		cmocka_unit_test(test_render_edges),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
