/*
 * test-select.c — lib/jobs/select.c on machines built by hand (no NVML): every
 * reason a GPU is not eligible, the ranking (free memory, utilization, GPU 0
 * last), topology preference for multi-GPU sets, other users' and invisible
 * processes, CUDA_VISIBLE_DEVICES, the messages for requests that can never
 * be met, and a 256-GPU machine.
 *
 * The default machine: n GPUs, NVIDIA A100 80GB, idle (80 GiB - 500 MiB
 * free, 0% busy, no process), wired as nodes of `per_numa` GPUs, each node
 * two GPUs per PCIe switch (PIX), switches paired under a bridge (PXB),
 * further apart in one node NODE, across nodes SYS.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs/select.h"

#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)
#define ME 1000   /* the requesting user's uid */
#define OTHER 2000

static int topo_level(size_t a, size_t b, size_t per_numa)
{
	if (a == b)
		return GC_TOPO_SELF;
	if (a / 2 == b / 2)
		return GC_TOPO_PIX;
	if (a / 4 == b / 4)
		return GC_TOPO_PXB;
	if (a / per_numa == b / per_numa)
		return GC_TOPO_NODE;
	return GC_TOPO_SYS;
}

static gc_snapshot *node_new(size_t n, size_t per_numa)
{
	gc_snapshot *s = calloc(1, sizeof *s);
	assert_non_null(s);
	s->ngpus = n;
	s->gpus = calloc(n ? n : 1, sizeof *s->gpus);
	s->topo = malloc((n ? n * n : 1) * sizeof *s->topo);
	assert_non_null(s->gpus);
	assert_non_null(s->topo);
	for (size_t i = 0; i < n; i++) {
		gc_gpu *g = &s->gpus[i];
		g->index = (unsigned)i;
		memset(g->st, GC_ST_OK, sizeof g->st);
		snprintf(g->name, sizeof g->name, "NVIDIA A100-SXM4-80GB");
		g->mem_total = 80 * GiB;
		g->mem_free = 80 * GiB - 500 * MiB;
		g->mem_used = 500 * MiB;
		g->util_gpu = 0;
		g->procs_cap = 4;
		g->procs = calloc(g->procs_cap, sizeof *g->procs);
		assert_non_null(g->procs);
		for (size_t j = 0; j < n; j++)
			s->topo[i * n + j] = topo_level(i, j, per_numa);
	}
	return s;
}

static void node_free(gc_snapshot *s)
{
	for (size_t i = 0; i < s->ngpus; i++)
		free(s->gpus[i].procs);
	free(s->gpus);
	free(s->topo);
	free(s);
}

static void add_proc(gc_gpu *g, uint32_t pid, uid_t uid, bool visible, unsigned type)
{
	assert_true(g->nprocs < g->procs_cap);
	gc_proc *p = &g->procs[g->nprocs++];
	p->pid = pid;
	p->type = type;
	p->visible = visible;
	p->uid = uid; /* left as given when invisible: select must not trust it */
	p->mem_known = true;
	p->used_memory = 1 * GiB;
}

static struct select_request req(unsigned n)
{
	return (struct select_request){.n = n, .max_util = -1, .uid = ME};
}

/* pick and compare with the expected NVML indices (ascending) */
#define PICK(s, r, leased, ...)                                                          \
	do {                                                                             \
		const unsigned want_[] = {__VA_ARGS__};                                  \
		unsigned got_[256];                                                      \
		assert_int_equal((r)->n, sizeof want_ / sizeof want_[0]);                \
		assert_int_equal(select_pick((s), (r), (leased), got_), 0);              \
		for (size_t k_ = 0; k_ < sizeof want_ / sizeof want_[0]; k_++)            \
			if (got_[k_] != want_[k_])                                       \
				fail_msg("line %d: pick[%zu] = %u, want %u", __LINE__, k_, \
					 got_[k_], want_[k_]);                           \
	} while (0)

static void test_every_reason(void **state)
{
	(void)state;
	gc_snapshot *s = node_new(10, 4);
	bool allowed[10], exclude[10] = {false}, leased[10] = {false};
	for (int i = 0; i < 10; i++)
		allowed[i] = i != 7;
	exclude[6] = true;
	leased[4] = true;
	snprintf(s->gpus[5].name, sizeof s->gpus[5].name, "NVIDIA H100 80GB HBM3");
	s->gpus[3].lost = true;
	s->gpus[2].mem_free = 10 * GiB;
	s->gpus[1].util_gpu = 90;
	add_proc(&s->gpus[8], 4121, OTHER, true, GC_PROC_COMPUTE);
	add_proc(&s->gpus[9], 77, ME, false, GC_PROC_COMPUTE); /* another PID namespace */
	add_proc(&s->gpus[0], 999, ME, true, GC_PROC_COMPUTE); /* mine: not busy */

	struct select_request r = req(1);
	r.allowed = allowed;
	r.exclude = exclude;
	r.model = "A100";
	r.min_free_mem = 20 * GiB;
	r.max_util = 50;
	enum select_why why[10];
	const enum select_why want[10] = {
		SELECT_OK, SELECT_UTIL, SELECT_MEMORY, SELECT_LOST, SELECT_LEASED,
		SELECT_MODEL, SELECT_EXCLUDED, SELECT_NOT_VISIBLE, SELECT_OTHER_USER, SELECT_OTHER_USER,
	};
	assert_int_equal(select_eligible(s, &r, leased, why), 1);
	for (int i = 0; i < 10; i++)
		if (why[i] != want[i])
			fail_msg("GPU %d: %s, want %s", i, select_why_text(why[i]), select_why_text(want[i]));
	PICK(s, &r, leased, 0);

	/* shared: other users' and unknown processes no longer count */
	r.shared = true;
	assert_int_equal(select_eligible(s, &r, leased, why), 3);
	assert_int_equal(why[8], SELECT_OK);
	assert_int_equal(why[9], SELECT_OK);
	/* ...and nothing is written when why is NULL */
	assert_int_equal(select_eligible(s, &r, leased, NULL), 3);

	/* someone else asking: my process makes GPU 0 busy for them */
	r.shared = false;
	r.uid = OTHER;
	assert_int_equal(select_eligible(s, &r, leased, why), 1);
	assert_int_equal(why[0], SELECT_OTHER_USER);
	assert_int_equal(why[8], SELECT_OK);

	/* words for every reason, and the request's numbers where it has them */
	for (int w = SELECT_OK; w <= SELECT_MIG; w++)
		assert_string_not_equal(select_why_text((enum select_why)w), "unknown");
	assert_string_equal(select_why_text(SELECT_LEASED), "leased");
	char buf[64];
	assert_string_equal(select_why_format(SELECT_MEMORY, &r, buf, sizeof buf), "less than 20 GiB free");
	r.min_free_mem = 1536 * MiB;
	assert_string_equal(select_why_format(SELECT_MEMORY, &r, buf, sizeof buf), "less than 1.5 GiB free");
	assert_string_equal(select_why_format(SELECT_UTIL, &r, buf, sizeof buf), "utilization above 50%");
	assert_string_equal(select_why_format(SELECT_LEASED, &r, buf, sizeof buf), "leased");
	node_free(s);
}

static void expect_impossible(const gc_snapshot *s, const struct select_request *r, const char *want);

/* a GPU in MIG mode is never handed out by index; an unknown mode is not MIG mode */
static void test_mig(void **state)
{
	(void)state;
	gc_snapshot *s = node_new(4, 4);
	s->gpus[1].mig_current = true;
	s->gpus[2].mig_current = true; /* garbage under an unknown status: not trusted */
	s->gpus[2].st[GC_V_MIG_CURRENT] = GC_ST_NOT_SUPPORTED;
	s->gpus[3].mig_current = true;
	s->gpus[3].lost = true; /* lost says so first */
	assert_true(select_gpu_mig(&s->gpus[1]));
	assert_false(select_gpu_mig(&s->gpus[2]));
	assert_false(select_gpu_mig(&s->gpus[0]));
	assert_false(select_gpu_mig(NULL));

	struct select_request r = req(2);
	enum select_why why[4];
	assert_int_equal(select_eligible(s, &r, NULL, why), 2);
	assert_int_equal(why[0], SELECT_OK);
	assert_int_equal(why[1], SELECT_MIG);
	assert_int_equal(why[2], SELECT_OK);
	assert_int_equal(why[3], SELECT_LOST);
	assert_string_equal(select_why_text(SELECT_MIG), "in MIG mode (CUDA sees only its MIG devices, by MIG UUID)");
	PICK(s, &r, NULL, 0, 2);
	/* another model says so before MIG mode */
	r.model = "H100";
	select_eligible(s, &r, NULL, why);
	assert_int_equal(why[1], SELECT_MODEL);
	r.model = NULL;

	/* MIG mode outlasts any wait: the request can never be met, and the message says why */
	s->gpus[3].mig_current = false;
	r.n = 4;
	expect_impossible(s, &r, "4 GPUs requested but only 3 match the filters (indices 0,2-3); "
				 "GPU 1 is in MIG mode (CUDA sees only its MIG devices, by MIG UUID)");
	s->gpus[0].mig_current = true;
	r.n = 3;
	expect_impossible(s, &r, "3 GPUs requested but only 2 match the filters (indices 2-3); "
				 "GPUs 0-1 are in MIG mode (CUDA sees only their MIG devices, by MIG UUID)");
	for (size_t i = 0; i < 4; i++) {
		s->gpus[i].mig_current = true;
		s->gpus[i].st[GC_V_MIG_CURRENT] = GC_ST_OK;
	}
	r.n = 1;
	expect_impossible(s, &r, "1 GPU requested but no GPU matches the filters; "
				 "GPUs 0-3 are in MIG mode (CUDA sees only their MIG devices, by MIG UUID)");
	/* an excluded GPU in MIG mode is not named: it was not going to be used */
	bool exclude[4] = {true, false, false, false};
	s->gpus[1].mig_current = s->gpus[2].mig_current = s->gpus[3].mig_current = false;
	r.exclude = exclude;
	r.n = 1;
	char err[200];
	assert_int_equal(select_possible(s, &r, err, sizeof err), 0);
	r.n = 4;
	expect_impossible(s, &r, "4 GPUs requested but only 3 match the filters (indices 1-3)");
	node_free(s);
}

static void test_unknown_values(void **state)
{
	(void)state;
	gc_snapshot *s = node_new(4, 4);
	enum select_why why[4];
	struct select_request r = req(1);

	/* unknown free memory passes only when no minimum is asked */
	s->gpus[1].st[GC_V_MEM_FREE] = GC_ST_NOT_SUPPORTED;
	/* unknown utilization passes only when no maximum is asked */
	s->gpus[2].st[GC_V_UTIL_GPU] = GC_ST_NO_PERMISSION;
	/* an unknown process list makes the GPU busy unless shared */
	s->gpus[3].st[GC_V_PROCS] = GC_ST_NOT_SUPPORTED;
	assert_int_equal(select_eligible(s, &r, NULL, why), 3);
	assert_int_equal(why[3], SELECT_OTHER_USER);
	r.min_free_mem = 1 * MiB;
	r.max_util = 100;
	r.shared = true;
	assert_int_equal(select_eligible(s, &r, NULL, why), 2);
	assert_int_equal(why[1], SELECT_MEMORY);
	assert_int_equal(why[2], SELECT_UTIL);
	assert_int_equal(why[3], SELECT_OK);

	/* lost: the flag, GC_ST_GPU_LOST or GC_ST_RESET_REQUIRED in any value;
	   said even when the name is gone and a model is asked */
	node_free(s);
	s = node_new(4, 4);
	r = req(1);
	r.model = "A100";
	s->gpus[0].lost = true;
	memset(s->gpus[1].st, GC_ST_GPU_LOST, sizeof s->gpus[1].st);
	s->gpus[2].st[GC_V_TEMP] = GC_ST_RESET_REQUIRED;
	assert_int_equal(select_eligible(s, &r, NULL, why), 1);
	assert_int_equal(why[0], SELECT_LOST);
	assert_int_equal(why[1], SELECT_LOST);
	assert_int_equal(why[2], SELECT_LOST);
	/* a name we do not know matches no model, but any model when none is asked */
	s->gpus[3].st[GC_V_NAME] = GC_ST_UNKNOWN_ERROR;
	assert_int_equal(select_eligible(s, &r, NULL, why), 0);
	assert_int_equal(why[3], SELECT_MODEL);
	r.model = NULL;
	assert_int_equal(select_eligible(s, &r, NULL, NULL), 1);
	node_free(s);
}

static void test_processes(void **state)
{
	(void)state;
	gc_snapshot *s = node_new(6, 6);
	enum select_why why[6];
	add_proc(&s->gpus[0], 10, ME, true, GC_PROC_COMPUTE);
	add_proc(&s->gpus[0], 11, ME, true, GC_PROC_COMPUTE | GC_PROC_GRAPHICS);
	add_proc(&s->gpus[1], 20, OTHER, true, GC_PROC_COMPUTE);
	add_proc(&s->gpus[2], 30, 0, false, GC_PROC_COMPUTE);             /* owner unknown */
	add_proc(&s->gpus[3], 40, 0, true, GC_PROC_GRAPHICS);             /* root's Xorg */
	add_proc(&s->gpus[4], 50, ME, true, GC_PROC_COMPUTE);
	add_proc(&s->gpus[4], 51, OTHER, true, GC_PROC_COMPUTE | GC_PROC_GRAPHICS);
	add_proc(&s->gpus[5], 60, ME, false, GC_PROC_COMPUTE);            /* mine, in a container */
	struct select_request r = req(1);
	assert_int_equal(select_eligible(s, &r, NULL, why), 2);
	const enum select_why want[6] = {SELECT_OK, SELECT_OTHER_USER, SELECT_OTHER_USER,
					 SELECT_OK, SELECT_OTHER_USER, SELECT_OTHER_USER};
	for (int i = 0; i < 6; i++)
		if (why[i] != want[i])
			fail_msg("GPU %d: %s, want %s", i, select_why_text(why[i]), select_why_text(want[i]));
	r.shared = true;
	assert_int_equal(select_eligible(s, &r, NULL, NULL), 6);
	node_free(s);
}

static void test_model_globs(void **state)
{
	(void)state;
	gc_snapshot *s = node_new(2, 2);
	snprintf(s->gpus[0].name, sizeof s->gpus[0].name, "NVIDIA A100 80GB PCIe");
	snprintf(s->gpus[1].name, sizeof s->gpus[1].name, "NVIDIA H100 80GB HBM3");
	static const struct {
		const char *glob;
		size_t want;      /* bit 0: GPU 0 matches, bit 1: GPU 1 */
	} rows[] = {
		{"A100", 1}, {"a100", 1}, {"80GB", 3}, {"nvidia", 3}, {"", 3},
		{"H100 80GB HBM3", 2}, {"L4", 0}, {"A100 PCIe", 0},
		{"*a100*", 1}, {"NVIDIA ?100*", 3}, {"*[AH]100*", 3}, {"*HBM3", 2},
		{"A1?0", 0},          /* a glob matches the whole name */
		{"NVIDIA A100 80GB PCIe", 1},
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct select_request r = req(1);
		r.model = rows[i].glob;
		enum select_why why[2];
		select_eligible(s, &r, NULL, why);
		size_t got = (why[0] == SELECT_OK) | (size_t)(why[1] == SELECT_OK) << 1;
		if (got != rows[i].want)
			fail_msg("--model '%s': matched %zu, want %zu", rows[i].glob, got, rows[i].want);
	}
	node_free(s);
}

static void test_ranking(void **state)
{
	(void)state;
	gc_snapshot *s = node_new(8, 4);
	free(s->topo);
	s->topo = NULL; /* rank only */
	struct select_request r = req(1);

	/* all equal: GPU 0 goes last, then lower index first */
	PICK(s, &r, NULL, 1);
	r.n = 3;
	PICK(s, &r, NULL, 1, 2, 3);
	r.n = 8;
	PICK(s, &r, NULL, 0, 1, 2, 3, 4, 5, 6, 7);
	/* ...but GPU 0 is taken when it is the best or the only one */
	bool exclude[8] = {false, true, true, true, true, true, true, true};
	r.n = 1;
	r.exclude = exclude;
	PICK(s, &r, NULL, 0);
	r.exclude = NULL;

	/* least utilized next */
	for (int i = 0; i < 8; i++)
		s->gpus[i].util_gpu = 10;
	s->gpus[5].util_gpu = 3;
	PICK(s, &r, NULL, 5);
	s->gpus[0].util_gpu = 0;
	PICK(s, &r, NULL, 0);

	/* most free memory first, before utilization */
	s->gpus[6].mem_free += 1 * MiB;
	s->gpus[6].util_gpu = 90;
	PICK(s, &r, NULL, 6);
	r.n = 3;
	PICK(s, &r, NULL, 0, 5, 6); /* 6 (memory), 0 (0%), 5 (3%) */

	/* unknown free memory or utilization ranks after every known one */
	s->gpus[6].st[GC_V_MEM_FREE] = GC_ST_NOT_SUPPORTED;
	s->gpus[0].st[GC_V_UTIL_GPU] = GC_ST_NOT_SUPPORTED;
	r.n = 7;
	PICK(s, &r, NULL, 0, 1, 2, 3, 4, 5, 7);
	r.n = 1;
	PICK(s, &r, NULL, 5);

	/* fewer eligible than wanted */
	bool leased[8] = {true, true, true, true, true, true, true, false};
	r.n = 2;
	unsigned out[2];
	assert_int_equal(select_pick(s, &r, leased, out), GC_ENOTNOW);
	r.n = 1;
	PICK(s, &r, leased, 7);
	r.n = 0;
	assert_int_equal(select_pick(s, &r, NULL, out), GC_EINVAL);
	node_free(s);
}

/* one GPU: not half of the closest free pair when another will do (issue 16) */
static void test_single_keeps_pair(void **state)
{
	(void)state;
	gc_snapshot *s = node_new(8, 4);
	struct select_request r = req(1);
	/* free: 2-3 (a PIX pair) and 5 (its partner 4 leased): rank alone takes 2 */
	bool leased[8] = {true, true, false, false, true, false, true, true};
	PICK(s, &r, leased, 5);
	/* only the pair free: one of it, by rank */
	leased[5] = true;
	PICK(s, &r, leased, 2);
	/* no topology: rank */
	leased[5] = false;
	int8_t *topo = s->topo;
	s->topo = NULL;
	PICK(s, &r, leased, 2);
	s->topo = topo;
	/* two pairs and nothing else: rank, within the pairs */
	bool pairs[8] = {true, true, false, false, false, false, true, true};
	PICK(s, &r, pairs, 2);
	node_free(s);
}

static void test_topology(void **state)
{
	(void)state;
	/* 8 GPUs: nodes 0-3 and 4-7; switches 0-1, 2-3, 4-5, 6-7 */
	gc_snapshot *s = node_new(8, 4);
	struct select_request r = req(2);

	/* idle and equal: the PIX pair with the best ranks (1..7, then 0) */
	PICK(s, &r, NULL, 2, 3);
	r.n = 3;
	PICK(s, &r, NULL, 1, 2, 3);   /* PXB inside node 0 */
	r.n = 4;
	PICK(s, &r, NULL, 0, 1, 2, 3); /* node 0 (ranks 7+0+1+2) beats node 1 (3+4+5+6) */
	r.n = 5;
	PICK(s, &r, NULL, 1, 2, 3, 4, 5); /* SYS either way: the best five ranks */

	/* a PIX pair beats a SYS pair with more free memory */
	bool leased[8] = {true, false, true, true, false, true, false, false};
	for (int i = 0; i < 8; i++)
		s->gpus[i].mem_free = 70 * GiB;
	s->gpus[1].mem_free = s->gpus[4].mem_free = 75 * GiB;
	r.n = 2;
	PICK(s, &r, leased, 6, 7);
	/* ...which rank alone would have chosen */
	int8_t *topo = s->topo;
	s->topo = NULL;
	PICK(s, &r, leased, 1, 4);
	s->topo = topo;
	/* with 1 and 5 free as well, 4-5 (PIX, 75+70 GiB) beats 6-7 (PIX, 70+70) */
	leased[5] = false;
	PICK(s, &r, leased, 4, 5);
	/* n = 1 ignores topology */
	r.n = 1;
	PICK(s, &r, leased, 1);

	/* an unknown link counts as worse than SYS */
	node_free(s);
	s = node_new(8, 4);
	for (int i = 0; i < 8; i++)
		for (int j = 0; j < 8; j++)
			if (i != j && (i == 2 || j == 2))
				s->topo[i * 8 + j] = GC_TOPO_UNKNOWN;
	r.n = 2;
	/* 2-3 is unknown now; 0-1 and 4-5 tie on PIX and on rank sums (7):
	   the set grown from the better-ranked seed (GPU 1) wins */
	PICK(s, &r, NULL, 0, 1);
	r.n = 7;
	PICK(s, &r, NULL, 0, 1, 3, 4, 5, 6, 7); /* SYS without 2 beats unknown with it */
	r.n = 8;
	PICK(s, &r, NULL, 0, 1, 2, 3, 4, 5, 6, 7);
	node_free(s);
}

static void test_visible_devices(void **state)
{
	(void)state;
	/* gpuctl running under CUDA_VISIBLE_DEVICES=3,0 */
	gc_snapshot *s = node_new(4, 4);
	bool allowed[4] = {true, false, false, true};
	struct select_request r = req(2);
	r.allowed = allowed;
	enum select_why why[4];
	assert_int_equal(select_eligible(s, &r, NULL, why), 2);
	assert_int_equal(why[1], SELECT_NOT_VISIBLE);
	PICK(s, &r, NULL, 0, 3);
	r.n = 1;
	PICK(s, &r, NULL, 3);
	r.n = 3;
	unsigned out[3];
	assert_int_equal(select_pick(s, &r, NULL, out), GC_ENOTNOW);
	char err[200];
	assert_int_equal(select_possible(s, &r, err, sizeof err), GC_EINVAL);
	assert_string_equal(err, "3 GPUs requested but only 2 are visible through CUDA_VISIBLE_DEVICES (0,3)");
	node_free(s);
}

static void expect_impossible(const gc_snapshot *s, const struct select_request *r, const char *want)
{
	char err[300];
	int rc = select_possible(s, r, err, sizeof err);
	if (rc != GC_EINVAL || strcmp(err, want) != 0)
		fail_msg("rc %d '%s', want GC_EINVAL '%s'", rc, err, want);
}

static void test_possible(void **state)
{
	(void)state;
	char err[300];
	gc_snapshot *s = node_new(2, 2);
	struct select_request r = req(3);
	expect_impossible(s, &r, "3 GPUs requested but only 2 exist on this machine (0-1)");
	r.n = 2;
	/* possible ignores leases, load and processes */
	s->gpus[0].util_gpu = 100;
	s->gpus[0].mem_free = 0;
	add_proc(&s->gpus[1], 1, OTHER, true, GC_PROC_COMPUTE);
	r.max_util = 10;
	r.min_free_mem = 40 * GiB;
	strcpy(err, "untouched");
	assert_int_equal(select_possible(s, &r, err, sizeof err), 0);
	node_free(s);

	s = node_new(0, 1);
	r = req(1);
	expect_impossible(s, &r, "1 GPU requested but this machine has no GPU");
	node_free(s);
	s = node_new(1, 1);
	r = req(2);
	expect_impossible(s, &r, "2 GPUs requested but only 1 exists on this machine (0)");
	node_free(s);

	s = node_new(8, 4);
	bool allowed[8] = {false};
	r = req(1);
	r.allowed = allowed;
	expect_impossible(s, &r, "1 GPU requested but none is visible through CUDA_VISIBLE_DEVICES");
	allowed[0] = allowed[1] = allowed[2] = allowed[3] = allowed[6] = true;
	r.n = 6;
	expect_impossible(s, &r, "6 GPUs requested but only 5 are visible through CUDA_VISIBLE_DEVICES (0-3,6)");
	/* CUDA_VISIBLE_DEVICES naming every GPU restricts nothing */
	for (int i = 0; i < 8; i++)
		allowed[i] = true;
	r.n = 9;
	expect_impossible(s, &r, "9 GPUs requested but only 8 exist on this machine (0-7)");

	/* model */
	for (int i = 0; i < 8; i++)
		snprintf(s->gpus[i].name, sizeof s->gpus[i].name, "NVIDIA H100 80GB HBM3");
	r = req(1);
	r.model = "A100";
	expect_impossible(s, &r, "no GPU on this machine matches --model 'A100' (it has: NVIDIA H100 80GB HBM3)");
	snprintf(s->gpus[5].name, sizeof s->gpus[5].name, "NVIDIA L4");
	s->gpus[6].st[GC_V_NAME] = GC_ST_UNKNOWN_ERROR;
	expect_impossible(s, &r, "no GPU on this machine matches --model 'A100' "
				 "(it has: NVIDIA H100 80GB HBM3, NVIDIA L4)");
	r.model = "l4";
	assert_int_equal(select_possible(s, &r, err, sizeof err), 0);
	r.n = 2;
	expect_impossible(s, &r, "2 GPUs requested but only 1 matches the filters (index 5)");

	/* memory: the request's total against the largest GPU */
	r = req(2);
	r.min_free_mem = 100 * GiB;
	expect_impossible(s, &r, "2 GPUs with at least 100 GiB requested but the largest GPU here has 80 GiB");
	for (int i = 0; i < 8; i++)
		s->gpus[i].mem_total = 81559 * MiB; /* what an H100 80GB reports */
	r.n = 1;
	r.min_free_mem = 81560 * MiB;
	expect_impossible(s, &r, "1 GPU with at least 79.7 GiB requested but the largest GPU here has 79.6 GiB");
	/* a GPU whose total is unknown might be big enough */
	s->gpus[3].st[GC_V_MEM_TOTAL] = GC_ST_NOT_SUPPORTED;
	assert_int_equal(select_possible(s, &r, err, sizeof err), 0);
	s->gpus[3].st[GC_V_MEM_TOTAL] = GC_ST_OK;
	s->gpus[3].mem_total = 96 * GiB;
	r.n = 2;
	expect_impossible(s, &r, "2 GPUs requested but only 1 matches the filters (index 3)");

	/* combinations of filters */
	bool exclude[8] = {true, true, false, true, true, true, true, true};
	r = req(3);
	r.exclude = exclude;
	expect_impossible(s, &r, "3 GPUs requested but only 1 matches the filters (index 2)");
	exclude[5] = false;
	expect_impossible(s, &r, "3 GPUs requested but only 2 match the filters (indices 2,5)");
	r.model = "H100";
	expect_impossible(s, &r, "3 GPUs requested but only 1 matches the filters (index 2)");
	exclude[2] = true;
	expect_impossible(s, &r, "3 GPUs requested but no GPU matches the filters");
	exclude[2] = exclude[3] = exclude[4] = false;
	assert_int_equal(select_possible(s, &r, err, sizeof err), 0);

	/* tiny and absent error buffers */
	r = req(99);
	char small[10];
	assert_int_equal(select_possible(s, &r, small, sizeof small), GC_EINVAL);
	assert_string_equal(small, "99 GPUs r");
	assert_int_equal(select_possible(s, &r, NULL, 0), GC_EINVAL);
	r.n = 0;
	assert_int_equal(select_possible(s, &r, err, sizeof err), GC_EINVAL);
	node_free(s);
}

static void test_256_gpus(void **state)
{
	(void)state;
	/* 256 GPUs in two nodes of 128: picking must stay quick */
	gc_snapshot *s = node_new(256, 128);
	struct select_request r = req(8);
	unsigned out[256];
	assert_int_equal(select_pick(s, &r, NULL, out), 0);
	for (unsigned k = 0; k < 8; k++)
		assert_int_equal(out[k], k + 1); /* NODE either way: the best ranks, GPU 0 last */
	/* leave only scattered GPUs: every second one, plus a busy neighbour */
	bool leased[256];
	for (int i = 0; i < 256; i++)
		leased[i] = i % 2 == 1;
	leased[201] = false;
	r.n = 2;
	PICK(s, &r, leased, 200, 201);  /* the only PIX pair left */
	r.n = 4;
	assert_int_equal(select_pick(s, &r, leased, out), 0);
	for (unsigned k = 1; k < 4; k++)
		assert_true(out[k] > out[k - 1]);
	r.n = 128;
	assert_int_equal(select_pick(s, &r, leased, out), 0);
	r.n = 129;
	assert_int_equal(select_pick(s, &r, leased, out), 0);
	r.n = 130;
	assert_int_equal(select_pick(s, &r, leased, out), GC_ENOTNOW);
	r.n = 256;
	assert_int_equal(select_pick(s, &r, NULL, out), 0);
	for (unsigned k = 0; k < 256; k++)
		assert_int_equal(out[k], k);
	node_free(s);
}

/* "0,3" lists: none, some, and a buffer too short for the last number whole */
static void test_index_list(void **state)
{
	(void)state;
	bool set[12] = {false};
	char buf[64];
	select_index_list(set, 12, buf, sizeof buf);
	assert_string_equal(buf, "");
	set[0] = set[3] = set[11] = true;
	select_index_list(set, 12, buf, sizeof buf);
	assert_string_equal(buf, "0,3,11");
	select_index_list(set, 12, buf, 6); /* "0,3,1" would cut 11 */
	assert_string_equal(buf, "0,3");
	select_index_list(set, 12, buf, 1);
	assert_string_equal(buf, "");
}

/* GPU id lists: indices, full UUIDs, UUID prefixes of 8 hex digits and more, PCI bus ids, mixed */
static void test_parse_ids(void **state)
{
	(void)state;
	gc_snapshot *s = node_new(4, 2);
	static const char *const uuids[] = {"GPU-12345678-aaaa-bbbb-cccc-000000000000",
					    "GPU-12345678-aaaa-bbbb-cccc-000000000001",
					    "GPU-abcdef01-aaaa-bbbb-cccc-000000000002",
					    "GPU-abcdef02-aaaa-bbbb-cccc-000000000003"};
	for (size_t i = 0; i < 4; i++) {
		snprintf(s->gpus[i].uuid, sizeof s->gpus[i].uuid, "%s", uuids[i]);
		snprintf(s->gpus[i].bus_id, sizeof s->gpus[i].bus_id, "00000000:%02zX:00.0", 0x18 + i);
	}
	bool w[4];
	char err[300];
	assert_int_equal(select_parse_ids("--gpus", "0, gpu-abcdef02-aaaa-bbbb-cccc-000000000003,19:00.0", s, w, err,
					  sizeof err), GC_OK); /* UUIDs in any case */
	assert_true(w[0] && w[1] && !w[2] && w[3]);
	assert_int_equal(select_parse_ids("--gpus", "GPU-abcdef01", s, w, err, sizeof err), GC_OK); /* a prefix */
	assert_true(!w[0] && !w[1] && w[2] && !w[3]);
	assert_int_equal(select_parse_ids("-i", "1a:00.0", s, w, err, sizeof err), GC_OK); /* a short bus id */
	assert_true(!w[0] && !w[1] && w[2] && !w[3]);
	static const struct {
		const char *spec, *why;
	} bad[] = {
		{"", "empty GPU id for -i (expected an index 0-3"},
		{"4", "invalid GPU id '4' for -i: no GPU on this machine has that index (0-3)"},
		{"GPU-abcd", "too short a UUID prefix"},
		{"GPU-12345678", "matches more than one GPU"},
		{"2f:00.0", "invalid GPU id '2f:00.0'"},
		{"0,x", "invalid GPU id 'x'"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		err[0] = '\0';
		if (select_parse_ids("-i", bad[i].spec, s, w, err, sizeof err) != GC_EINVAL || !strstr(err, bad[i].why))
			fail_msg("'%s': err '%s', want GC_EINVAL and '%s'", bad[i].spec, err, bad[i].why);
	}
	node_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_index_list),
		cmocka_unit_test(test_every_reason),
		cmocka_unit_test(test_unknown_values),
		cmocka_unit_test(test_processes),
		cmocka_unit_test(test_model_globs),
		cmocka_unit_test(test_ranking),
		cmocka_unit_test(test_topology),
		cmocka_unit_test(test_single_keeps_pair),
		cmocka_unit_test(test_visible_devices),
		cmocka_unit_test(test_possible),
		cmocka_unit_test(test_mig),
		cmocka_unit_test(test_256_gpus),
		cmocka_unit_test(test_parse_ids),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
