/*
 * test-nvml.c — lib/device/nvml.c and lib/device/gpu.c through the public API, against
 * the simulated node in each driver generation: symbol fallbacks, memory
 * v1/v2 semantics, the R535 32-byte process records, grow-and-retry, the
 * "not supported is not zero" rule, faults and driver-level failures.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "device/gpu.h"
#include "tmpdir.h"

static char node_path[PATH_MAX];

static const char *node(const char *dir, const char *name)
{
	const char *src = getenv("GPUCTL_SRCDIR");
	snprintf(node_path, sizeof node_path, "%s/%s/%s", src ? src : ".", dir, name);
	return node_path;
}

static gc_ctx *open_node(const char *dir, const char *name)
{
	gc_ctx *ctx = NULL;
	gc_open_opts o = {.sim_node = node(dir, name)};
	int rc = gc_ctx_open(&ctx, &o);
	if (rc != GC_OK)
		fail_msg("open %s: %d %s", name, rc, gc_ctx_errmsg(ctx));
	return ctx;
}

static void sample_all(gc_ctx *ctx, gc_snapshot *s)
{
	assert_int_equal(gc_ctx_sample(ctx, s, GC_ALL_VALUES, NULL, true), GC_OK);
}

static void test_modern_full(void **state)
{
	(void)state;
	gc_ctx *ctx = open_node("tests/cli/nodes", "full-2x.json");
	gc_snapshot s = {0};
	sample_all(ctx, &s);
	assert_int_equal(s.ngpus, 2);
	assert_string_equal(s.driver_version, "550.54.14");
	assert_int_equal(s.cuda_version, 12040);
	assert_string_equal(gc_ctx_proc_api(ctx), "nvmlDeviceGetComputeRunningProcesses_v3");
	const gc_gpu *g = &s.gpus[0];
	assert_string_equal(g->bus_id, "00000000:18:00.0");
	/* v2 memory: used excludes reserved */
	assert_int_equal(g->st[GC_V_MEM_RESERVED], GC_ST_OK);
	assert_int_equal(g->mem_reserved, 501481472);
	assert_int_equal(g->mem_used, 2690646016ULL + 10485761ULL);
	assert_int_equal(g->mem_total, 85520809984ULL);
	assert_int_equal(g->mem_free, g->mem_total - g->mem_reserved - g->mem_used);
	/* H100 SXM has no fan: not supported, not 0 */
	assert_int_equal(g->st[GC_V_FAN], GC_ST_NOT_SUPPORTED);
	assert_int_equal(g->reasons, 0x44);
	assert_int_equal(g->energy_mj, 123456789012ULL);
	/* compute, compute+graphics, then graphics-only, merged by pid */
	assert_int_equal(g->nprocs, 3);
	assert_int_equal(g->procs[0].pid, 4000001);
	assert_int_equal(g->procs[0].type, GC_PROC_COMPUTE);
	assert_int_equal(g->procs[1].pid, 4000003);
	assert_int_equal(g->procs[1].type, GC_PROC_COMPUTE | GC_PROC_GRAPHICS);
	assert_false(g->procs[1].mem_known); /* ULLONG_MAX = unknown */
	assert_int_equal(g->procs[2].type, GC_PROC_GRAPHICS);
	/* pids that do not exist here: another PID namespace */
	assert_false(g->procs[0].visible);
	/* GPU 1 reports almost nothing: statuses, not zeros */
	const gc_gpu *h = &s.gpus[1];
	assert_int_equal(h->st[GC_V_TEMP], GC_ST_NOT_SUPPORTED);
	assert_int_equal(h->st[GC_V_POWER_DRAW], GC_ST_NOT_SUPPORTED);
	assert_int_equal(h->st[GC_V_PROCS], GC_ST_NOT_SUPPORTED);
	assert_int_equal(h->st[GC_V_SERIAL], GC_ST_NOT_SUPPORTED);
	assert_int_equal(h->st[GC_V_UUID], GC_ST_OK);
	/* topology: GPU 1 is on another NUMA node */
	assert_int_equal(s.topo[0 * 2 + 0], GC_TOPO_SELF);
	assert_int_equal(s.topo[0 * 2 + 1], GC_TOPO_SYS);
	assert_int_equal(s.topo[1 * 2 + 0], GC_TOPO_SYS);
	gpu_snapshot_release(&s);
	gc_ctx_free(ctx);
}

static void test_h100_topology(void **state)
{
	(void)state;
	gc_ctx *ctx = open_node("examples/nodes", "h100-8x-sxm.json");
	gc_snapshot s = {0};
	sample_all(ctx, &s);
	assert_int_equal(s.ngpus, 8);
	/* pairs share a PCIe switch; NUMA nodes hold four GPUs each */
	assert_int_equal(s.topo[0 * 8 + 1], GC_TOPO_PIX);
	assert_int_equal(s.topo[0 * 8 + 2], GC_TOPO_NODE);
	assert_int_equal(s.topo[0 * 8 + 4], GC_TOPO_SYS);
	gpu_snapshot_release(&s);
	gc_ctx_free(ctx);
}

static void check_l4_procs(const gc_gpu *g)
{
	assert_int_equal(g->nprocs, 3);
	assert_int_equal(g->procs[0].pid, 1111);
	assert_int_equal(g->procs[0].used_memory, 1073741824ULL);
	assert_int_equal(g->procs[1].pid, 2222);
	assert_int_equal(g->procs[1].used_memory, 2147483648ULL);
	assert_int_equal(g->procs[2].pid, 3333);
	assert_false(g->procs[2].mem_known);
}

static void test_r535_no_garbage_pids(void **state)
{
	(void)state;
	gc_ctx *ctx = open_node("tests/cli/nodes", "r535.json");
	gc_snapshot s = {0};
	sample_all(ctx, &s);
	/* _v3 writes 32-byte records on this driver: gpuctl must not read them as 24 */
	assert_string_equal(gc_ctx_proc_api(ctx), "nvmlDeviceGetComputeRunningProcesses_v2");
	check_l4_procs(&s.gpus[0]);
	assert_string_equal(s.driver_version, "535.54.03");
	gpu_snapshot_release(&s);
	gc_ctx_free(ctx);
}

static void test_legacy_memory_v1(void **state)
{
	(void)state;
	gc_ctx *ctx = open_node("tests/cli/nodes", "legacy.json");
	gc_snapshot s = {0};
	sample_all(ctx, &s);
	const gc_gpu *g = &s.gpus[0];
	assert_string_equal(gc_ctx_proc_api(ctx), "nvmlDeviceGetComputeRunningProcesses_v2");
	/* no MemoryInfo_v2: reserved unknown, used includes it */
	assert_int_equal(g->st[GC_V_MEM_RESERVED], GC_ST_NOT_SUPPORTED);
	assert_int_equal(g->st[GC_V_MEM_USED], GC_ST_OK);
	assert_int_equal(g->mem_used, 314572800ULL + 1073741824ULL + 1073741824ULL + 2147483648ULL);
	/* no ClocksEventReasons: the throttle-reasons entry point still answers */
	assert_int_equal(g->st[GC_V_REASONS], GC_ST_OK);
	check_l4_procs(g);
	gpu_snapshot_release(&s);
	gc_ctx_free(ctx);
}

/*
 * gc_ctx_open hands the node file to the simulator and touches no
 * environment variable; a second context with another node sees that one
 */
static void test_open_sets_no_environment(void **state)
{
	(void)state;
	unsetenv("GPUCTL_SIM_NODE");
	gc_ctx *ctx = open_node("tests/cli/nodes", "full-2x.json");
	assert_null(getenv("GPUCTL_SIM_NODE"));
	assert_int_equal(gc_ctx_count(ctx), 2);
	gc_ctx_free(ctx);
	ctx = open_node("examples/nodes", "h100-8x-sxm.json");
	assert_null(getenv("GPUCTL_SIM_NODE"));
	assert_int_equal(gc_ctx_count(ctx), 8);
	gc_ctx_free(ctx);
}

static void test_r410(void **state)
{
	(void)state;
	gc_ctx *ctx = open_node("tests/cli/nodes", "r410.json");
	gc_snapshot s = {0};
	sample_all(ctx, &s);
	const gc_gpu *g = &s.gpus[0];
	assert_string_equal(gc_ctx_proc_api(ctx), "nvmlDeviceGetComputeRunningProcesses");
	/* PciInfo v1/_v2 layout: the bus id is rebuilt in the 8-digit-domain form */
	assert_string_equal(g->bus_id, "00000001:3B:00.0");
	assert_int_equal(g->st[GC_V_MIG_CURRENT], GC_ST_NOT_SUPPORTED);
	assert_int_equal(s.cuda_version, 10000);
	check_l4_procs(g);
	gpu_snapshot_release(&s);
	gc_ctx_free(ctx);
}

static void test_many_processes(void **state)
{
	(void)state;
	gc_ctx *ctx = open_node("tests/cli/nodes", "many-procs.json");
	gc_snapshot s = {0};
	/* twice: the grown buffer is reused */
	for (int round = 0; round < 2; round++) {
		assert_int_equal(gc_ctx_sample(ctx, &s, GC_BIT(GC_V_PROCS), NULL, false), GC_OK);
		const gc_gpu *g = &s.gpus[0];
		assert_int_equal(g->st[GC_V_PROCS], GC_ST_OK);
		assert_int_equal(g->nprocs, 150);
		for (size_t i = 0; i < 150; i++) {
			assert_int_equal(g->procs[i].pid, 5000000 + i);
			assert_int_equal(g->procs[i].used_memory, (i + 1) * 1048576ULL);
		}
	}
	gpu_snapshot_release(&s);
	gc_ctx_free(ctx);
}

/* the build's gpuctl-sim-hold with args (NULL-terminated), started: its pid */
static pid_t spawn_hold(const char *const *args)
{
	const char *libdir = getenv("GPUCTL_SIM_LIBDIR");
	char hold[PATH_MAX];
	snprintf(hold, sizeof hold, "%s/gpuctl-sim-hold", libdir ? libdir : ".");
	const char *argv[16] = {hold};
	for (size_t i = 0; args[i] && i + 2 < sizeof argv / sizeof argv[0]; i++)
		argv[i + 1] = args[i];
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		execv(hold, (char *const *)argv);
		_exit(127);
	}
	return child;
}

static void test_registered_process(void **state)
{
	(void)state;
	char dir[64];
	assert_int_equal(tmpdir_make(dir, sizeof dir, "rundir"), 0);
	setenv("GPUCTL_SIM_RUNDIR", dir, 1);
	pid_t child = spawn_hold((const char *[]){"--gpu", "1", "--mem", "3GiB", "--", "sleep", "30", NULL});
	gc_ctx *ctx = open_node("examples/nodes", "l4-2x.json");
	gc_snapshot s = {0};
	bool seen = false;
	for (int i = 0; i < 400 && !seen; i++) {
		assert_int_equal(gc_ctx_sample(ctx, &s, GC_BIT(GC_V_PROCS), NULL, false), GC_OK);
		for (size_t p = 0; p < s.gpus[1].nprocs; p++) {
			const gc_proc *pr = &s.gpus[1].procs[p];
			if (pr->pid == (uint32_t)child && strcmp(pr->command, "sleep 30") == 0) {
				seen = true;
				assert_true(pr->visible);
				assert_int_equal(pr->uid, geteuid());
				assert_int_equal(pr->used_memory, 3ULL << 30);
			}
		}
		if (!seen)
			usleep(10000);
	}
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	assert_true(seen);
	/* the holder is dead: its registration vanishes */
	assert_int_equal(gc_ctx_sample(ctx, &s, GC_BIT(GC_V_PROCS), NULL, false), GC_OK);
	for (size_t p = 0; p < s.gpus[1].nprocs; p++)
		assert_int_not_equal(s.gpus[1].procs[p].pid, (uint32_t)child);
	gpu_snapshot_release(&s);
	gc_ctx_free(ctx);
	unsetenv("GPUCTL_SIM_RUNDIR");
	assert_int_equal(tmpdir_remove(dir), 0);
}

/* nvmlDeviceGetProcessUtilization: the node file's sm_util/mem_util per process, 0 for one with
 * no sample (NVML keeps none for a process that ran no kernels), the processes listed with it;
 * again at once (since the newest sample); NOT_SUPPORTED leaves every process unknown (-1) */
static void test_process_utilization(void **state)
{
	(void)state;
	gc_ctx *ctx = open_node("examples/nodes", "l4-2x.json");
	gc_snapshot s = {0};
	for (int round = 0; round < 2; round++) {
		assert_int_equal(gc_ctx_sample(ctx, &s, GC_BIT(GC_V_PROC_UTIL), NULL, false), GC_OK);
		assert_int_equal(s.gpus[0].st[GC_V_PROC_UTIL], GC_ST_OK);
		assert_int_equal(s.gpus[1].st[GC_V_PROC_UTIL], GC_ST_OK);
		assert_int_equal(s.gpus[1].nprocs, 2);
		for (size_t p = 0; p < 2; p++) {
			const gc_proc *pr = &s.gpus[1].procs[p];
			assert_int_equal(pr->sm_util, pr->pid == 4100001 ? 95 : 0);
			assert_int_equal(pr->mem_util, pr->pid == 4100001 ? 68 : 0);
		}
		uint64_t most = 0;
		assert_int_equal(gc_value_u64(&s, 1, GC_V_PROC_UTIL, &most), GC_ST_OK);
		assert_int_equal(most, 95);
	}
	gpu_snapshot_release(&s);
	gc_ctx_free(ctx);

	char dir[64], path[128];
	assert_int_equal(tmpdir_make(dir, sizeof dir, "putil"), 0);
	snprintf(path, sizeof path, "%s/node.json", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"name\": \"no-pmon\", \"gpus\": [{\"name\": \"NVIDIA T4\", \"processes\": [{\"pid\": 4000001, "
	      "\"sm_util\": 50}], \"faults\": {\"nvmlDeviceGetProcessUtilization\": \"NOT_SUPPORTED\"}}]}", f);
	fclose(f);
	gc_open_opts o = {.sim_node = path};
	assert_int_equal(gc_ctx_open(&ctx, &o), GC_OK);
	gc_snapshot e = {0};
	assert_int_equal(gc_ctx_sample(ctx, &e, GC_BIT(GC_V_PROC_UTIL), NULL, false), GC_OK);
	assert_int_equal(e.gpus[0].st[GC_V_PROC_UTIL], GC_ST_NOT_SUPPORTED);
	assert_int_equal(e.gpus[0].nprocs, 1);
	assert_int_equal(e.gpus[0].procs[0].sm_util, -1);
	gpu_snapshot_release(&e);
	gc_ctx_free(ctx);
	assert_int_equal(tmpdir_remove(dir), 0);
}

/* "vary": a busy GPU's load moves within its amplitude around the file's value; an idle one stays */
static void test_vary(void **state)
{
	(void)state;
	gc_ctx *ctx = open_node("examples/nodes", "h100-8x-live.json");
	gc_snapshot s = {0};
	for (int i = 0; i < 5; i++) {
		assert_int_equal(gc_ctx_sample(ctx, &s, GC_BIT(GC_V_UTIL_GPU) | GC_BIT(GC_V_POWER_DRAW), NULL, false), GC_OK);
		assert_true(s.gpus[2].util_gpu >= 98 - 25 && s.gpus[2].util_gpu <= 100);
		assert_int_equal(s.gpus[0].util_gpu, 0);
		assert_true(s.gpus[2].power_draw > 0);
		usleep(20000);
	}
	gpu_snapshot_release(&s);
	gc_ctx_free(ctx);
}

/* gpuctl-sim-hold --xid: an Xid error reaches a watcher once, on its GPU; none before; r410 (no _v2) too */
static void run_hold_xid(const char *dir, const char *gpu, const char *xid)
{
	pid_t child = spawn_hold((const char *[]){"--rundir", dir, "--gpu", gpu, "--xid", xid, NULL});
	int st;
	assert_int_equal(waitpid(child, &st, 0), child);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void test_xid_events(void **state)
{
	(void)state;
	static const char *const nodes[] = {"l4-2x.json", "r410.json"};
	for (size_t k = 0; k < 2; k++) {
		char dir[64];
		assert_int_equal(tmpdir_make(dir, sizeof dir, "xid"), 0);
		setenv("GPUCTL_SIM_RUNDIR", dir, 1);
		gc_ctx *ctx = open_node(k ? "tests/cli/nodes" : "examples/nodes", nodes[k]);
		unsigned gpu = 0;
		uint64_t xid = 0;
		assert_int_equal(gc_xid_next(ctx, 0, &gpu, &xid), GC_EINVAL); /* not watching yet */
		assert_int_equal(gc_xid_watch(ctx), GC_OK);
		assert_int_equal(gc_xid_next(ctx, 50, &gpu, &xid), 0);
		run_hold_xid(dir, k ? "0" : "1", "79");
		assert_int_equal(gc_xid_next(ctx, 2000, &gpu, &xid), 1);
		assert_int_equal(gpu, k ? 0 : 1);
		assert_int_equal(xid, 79);
		assert_int_equal(gc_xid_next(ctx, 50, &gpu, &xid), 0); /* once */
		gc_ctx_free(ctx);
		unsetenv("GPUCTL_SIM_RUNDIR");
		assert_int_equal(tmpdir_remove(dir), 0);
	}
}

static void test_gpu_lost_mid_run(void **state)
{
	(void)state;
	gc_ctx *ctx = open_node("tests/cli/nodes", "lost.json");
	gc_snapshot s = {0};
	uint64_t mask = GC_BIT(GC_V_TEMP) | GC_BIT(GC_V_UTIL_GPU) | GC_BIT(GC_V_NAME);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(gc_ctx_sample(ctx, &s, mask, NULL, false), GC_OK);
		assert_false(s.gpus[1].lost);
		assert_int_equal(s.gpus[1].temp, 41);
	}
	assert_int_equal(gc_ctx_sample(ctx, &s, mask, NULL, false), GC_OK);
	assert_true(s.gpus[1].lost);
	assert_int_equal(s.gpus[1].st[GC_V_TEMP], GC_ST_GPU_LOST);
	/* lost is sticky, and only that GPU is affected */
	assert_int_equal(gc_ctx_sample(ctx, &s, mask, NULL, false), GC_OK);
	assert_int_equal(s.gpus[1].st[GC_V_UTIL_GPU], GC_ST_GPU_LOST);
	assert_false(s.gpus[0].lost);
	assert_int_equal(s.gpus[0].st[GC_V_TEMP], GC_ST_OK);
	gpu_snapshot_release(&s);
	gc_ctx_free(ctx);
}

static void test_error_statuses(void **state)
{
	(void)state;
	gc_ctx *ctx = open_node("tests/cli/nodes", "errors.json");
	gc_snapshot s = {0};
	sample_all(ctx, &s);
	assert_int_equal(s.gpus[0].st[GC_V_PROCS], GC_ST_NO_PERMISSION);
	assert_int_equal(s.gpus[0].st[GC_V_POWER_DRAW], GC_ST_UNKNOWN_ERROR);
	assert_int_equal(s.gpus[0].st[GC_V_TEMP], GC_ST_OK);
	gpu_snapshot_release(&s);
	gc_ctx_free(ctx);
}

static void test_selection_skips_gpus(void **state)
{
	(void)state;
	gc_ctx *ctx = open_node("examples/nodes", "h100-8x-sxm.json");
	gc_snapshot s = {0};
	bool which[8] = {false, false, true};
	assert_int_equal(gc_ctx_sample(ctx, &s, GC_ALL_VALUES, which, false), GC_OK);
	assert_int_equal(s.gpus[2].st[GC_V_TEMP], GC_ST_OK);
	assert_int_equal(s.gpus[0].st[GC_V_TEMP], GC_ST_UNSET);
	assert_null(s.topo);
	gpu_snapshot_release(&s);
	gc_ctx_free(ctx);
}

static int open_err(const char *dir, const char *name, const char *lib, gc_ctx **ctx)
{
	gc_open_opts o = {.sim_node = name ? node(dir, name) : NULL, .library = lib};
	return gc_ctx_open(ctx, &o);
}

static void test_open_failures(void **state)
{
	(void)state;
	gc_ctx *ctx;
	assert_int_equal(open_err(NULL, NULL, "/nonexistent/libnvidia-ml.so.1", &ctx), GC_ENOLIB);
	assert_non_null(strstr(gc_ctx_errmsg(ctx), "/nonexistent/libnvidia-ml.so.1"));
	gc_ctx_free(ctx);
	assert_int_equal(open_err("tests/cli/nodes", "nodriver.json", NULL, &ctx), GC_ENODRIVER);
	assert_non_null(strstr(gc_ctx_errmsg(ctx), "driver not loaded"));
	gc_ctx_free(ctx);
	assert_int_equal(open_err("tests/cli/nodes", "mismatch.json", NULL, &ctx), GC_EMISMATCH);
	assert_non_null(strstr(gc_ctx_errmsg(ctx), "without a reboot"));
	gc_ctx_free(ctx);
	assert_int_equal(open_err("tests/cli/nodes", "bad-syntax.json", NULL, &ctx), GC_ESIM);
	assert_non_null(strstr(gc_ctx_errmsg(ctx), "line 1"));
	gc_ctx_free(ctx);
	assert_int_equal(open_err("tests/cli/nodes", "missing.json", NULL, &ctx), GC_ESIM);
	assert_non_null(strstr(gc_ctx_errmsg(ctx), "missing.json"));
	gc_ctx_free(ctx);
	/* a library that is not NVML at all */
	assert_int_equal(open_err(NULL, NULL, "libm.so.6", &ctx), GC_ENOLIB);
	assert_non_null(strstr(gc_ctx_errmsg(ctx), "not an NVML library"));
	gc_ctx_free(ctx);
}

static void test_sim_library_lookup(void **state)
{
	(void)state;
	char path[PATH_MAX];
	assert_int_equal(gc_sim_library("r535", path, sizeof path), GC_OK);
	assert_non_null(strstr(path, "libnvidia-ml-sim-r535.so"));
	assert_int_equal(gc_sim_library("r999", path, sizeof path), GC_EINVAL);
}

/* a node file written for one test, opened as the simulated node */
static gc_ctx *open_text(const char *dir, const char *json)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/node.json", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(json, f);
	assert_int_equal(fclose(f), 0);
	gc_ctx *ctx = NULL;
	gc_open_opts o = {.sim_node = path};
	if (gc_ctx_open(&ctx, &o) != GC_OK)
		fail_msg("open %s: %s", path, gc_ctx_errmsg(ctx));
	return ctx;
}

static void test_mig_devices(void **state)
{
	(void)state;
	gc_ctx *ctx = open_node("tests/cli/nodes", "mig.json");
	gc_snapshot s = {0};
	sample_all(ctx, &s);
	const gc_gpu *g = &s.gpus[0];
	assert_int_equal(g->st[GC_V_MIG_CURRENT], GC_ST_OK);
	assert_true(g->mig_current);
	assert_int_equal(g->st[GC_V_MIG_DEVICES], GC_ST_OK);
	assert_int_equal(g->nmig, 3);
	const gc_mig *m = &g->mig[0];
	assert_int_equal(m->st_uuid, GC_ST_OK);
	assert_string_equal(m->uuid, "MIG-e138a708-679d-5075-ab88-ba8e298ec5d3");
	assert_int_equal(m->st_profile, GC_ST_OK);
	assert_string_equal(m->profile, "3g.40gb");
	assert_int_equal(m->st_mem, GC_ST_OK);
	assert_true(m->mem_total == 42144366592ULL);
	assert_true(m->mem_used == 14680064ULL + 8589934592ULL); /* the process in GPU instance 2 */
	assert_true(m->mem_free == m->mem_total - m->mem_used);
	assert_int_equal(m->st_gi, GC_ST_OK);
	assert_int_equal(m->gpu_instance_id, 2);
	assert_int_equal(m->st_ci, GC_ST_OK);
	assert_int_equal(m->compute_instance_id, 0);
	assert_string_equal(g->mig[2].profile, "1g.10gb");
	assert_int_equal(g->mig[2].index, 2);
	assert_int_equal(g->mig[2].gpu_instance_id, 10);
	/* MIG off: known to have none */
	assert_int_equal(s.gpus[1].st[GC_V_MIG_DEVICES], GC_ST_OK);
	assert_false(s.gpus[1].mig_current);
	assert_int_equal(s.gpus[1].nmig, 0);
	/* asking for the devices alone samples the mode they depend on */
	assert_int_equal(gc_ctx_sample(ctx, &s, GC_BIT(GC_V_MIG_DEVICES), NULL, false), GC_OK);
	assert_int_equal(s.gpus[0].st[GC_V_MIG_CURRENT], GC_ST_OK);
	assert_int_equal(s.gpus[0].nmig, 3);
	/* not asked for: not reported */
	assert_int_equal(gc_ctx_sample(ctx, &s, GC_BIT(GC_V_NAME), NULL, false), GC_OK);
	assert_int_equal(s.gpus[0].st[GC_V_MIG_DEVICES], GC_ST_UNSET);
	assert_int_equal(s.gpus[0].nmig, 0);
	gpu_snapshot_release(&s);
	gc_ctx_free(ctx);

	/* R410 has no MIG calls; a GPU without MIG ("mig": null): not supported, never "none" */
	ctx = open_node("tests/cli/nodes", "r410.json");
	sample_all(ctx, &s);
	assert_int_equal(s.gpus[0].st[GC_V_MIG_DEVICES], GC_ST_NOT_SUPPORTED);
	gpu_snapshot_release(&s);
	gc_ctx_free(ctx);

	char dir[PATH_MAX];
	assert_int_equal(tmpdir_make(dir, sizeof dir, "mig"), 0);
	ctx = open_text(dir, "{\"gpus\": [{\"mig\": null}]}");
	sample_all(ctx, &s);
	assert_int_equal(s.gpus[0].st[GC_V_MIG_DEVICES], GC_ST_NOT_SUPPORTED);
	gpu_snapshot_release(&s);
	gc_ctx_free(ctx);

	/* one failing value of a MIG device is that value's status; a failing enumeration the list's */
	static const char two[] =
		"{\"driver\": {\"generation\": \"legacy\"}, \"gpus\": [{\"mig\": {\"current\": true, \"devices\": ["
		"{\"profile\": \"1g.10gb\", \"memory\": {\"total\": 10200547328, \"used\": 1048576}}]}, "
		"\"faults\": {\"nvmlDeviceGetUUID\": \"NO_PERMISSION\"}}, "
		"{\"mig\": {\"current\": true}, \"faults\": {\"nvmlDeviceGetMigDeviceHandleByIndex\": \"UNKNOWN\"}}]}";
	ctx = open_text(dir, two);
	sample_all(ctx, &s);
	g = &s.gpus[0];
	assert_int_equal(g->st[GC_V_MIG_DEVICES], GC_ST_OK);
	assert_int_equal(g->nmig, 1);
	assert_int_equal(g->mig[0].st_uuid, GC_ST_NO_PERMISSION);
	assert_int_equal(g->mig[0].st_profile, GC_ST_OK);
	/* the legacy driver has no MemoryInfo_v2: v1 on the MIG device */
	assert_int_equal(g->mig[0].st_mem, GC_ST_OK);
	assert_true(g->mig[0].mem_used == 1048576ULL);
	assert_int_equal(s.gpus[1].st[GC_V_MIG_DEVICES], GC_ST_UNKNOWN_ERROR);
	gpu_snapshot_release(&s);
	gc_ctx_free(ctx);
	assert_int_equal(tmpdir_remove(dir), 0);
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(gc_reason_name(GC_REASON_HW_THERMAL), "hw_thermal_slowdown");
	assert_null(gc_reason_name(0x200));
	assert_string_equal(gc_topo_name(GC_TOPO_PXB), "PXB");
	assert_string_equal(gc_topo_name(GC_TOPO_UNKNOWN), "N/A");
	assert_string_equal(gc_status_token(GC_ST_NOT_SUPPORTED), "N/A");
	assert_string_equal(gc_status_token(GC_ST_GPU_LOST), "GPU is lost");
	assert_string_equal(gc_strerror(GC_EMISMATCH), "NVIDIA driver/library version mismatch");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_modern_full),
		cmocka_unit_test(test_h100_topology),
		cmocka_unit_test(test_r535_no_garbage_pids),
		cmocka_unit_test(test_legacy_memory_v1),
		cmocka_unit_test(test_r410),
		cmocka_unit_test(test_open_sets_no_environment),
		cmocka_unit_test(test_many_processes),
		cmocka_unit_test(test_registered_process),
		cmocka_unit_test(test_process_utilization),
		cmocka_unit_test(test_vary),
		cmocka_unit_test(test_xid_events),
		cmocka_unit_test(test_gpu_lost_mid_run),
		cmocka_unit_test(test_error_statuses),
		cmocka_unit_test(test_selection_skips_gpus),
		cmocka_unit_test(test_open_failures),
		cmocka_unit_test(test_sim_library_lookup),
		cmocka_unit_test(test_mig_devices),
		cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
