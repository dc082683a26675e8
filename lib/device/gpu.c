/*
 * gpu.c — the snapshot model: a gc_ctx holds the open backend, and each
 * gc_ctx_sample() fills one gc_gpu per GPU (values with statuses, processes
 * with user and command resolved from /proc) plus, when asked, the pairwise
 * topology. Snapshots are reused between samples so a --loop allocates
 * nothing in steady state.
 */
#include "config.h"
#include "device/gputable.h"
#include "device/nvml.h"
#include "device/proc.h"
#include "util/clock.h"
#include "util/datadir.h"

#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

typedef int (*sim_text_fn)(unsigned int pid, char *user, unsigned int ulen, char *command, unsigned int clen);

struct gc_ctx {
	struct nvml *nvml;
	char err[1024];
	char library[PATH_MAX];
	struct uid_cache uids;
	gc_snapshot sys;   /* driver/NVML/CUDA versions, read once */
	bool have_sys;
	sim_text_fn sim_text;       /* the simulator's gpuctlSimProcessText, or NULL */
	/* gpu_ctx_open_table's: samples from gpuctld's table until table_until_ms (monotonic),
	 * and the library opened, as with lazy_*, when one asks for more */
	gc_snapshot table;
	bool have_table;
	int64_t table_until_ms;
	char *lazy_library, *lazy_sim;
};

/*
 * A process the node file describes, when /proc cannot: the simulator library
 * has its "user" and "command" (NVML has no such call; a real driver's library
 * has no gpuctlSimProcessText, so nothing happens there).
 */
static void describe_simulated(const gc_ctx *ctx, gc_proc *p)
{
	if (p->visible || !ctx->sim_text)
		return;
	char user[64], cmd[512];
	if (!ctx->sim_text(p->pid, user, sizeof user, cmd, sizeof cmd))
		return;
	p->simulated = true;
	proc_sanitize(p->user, sizeof p->user, user[0] ? user : "?", user[0] ? strlen(user) : 1);
	proc_sanitize(p->command, sizeof p->command, cmd, strlen(cmd));
	snprintf(p->argv0, sizeof p->argv0, "%.*s", (int)strcspn(p->command, " "), p->command);
}

static const char *const sim_generations[] = {"modern", "r535", "legacy", "r410", NULL};

int gc_sim_library(const char *generation, char *buf, size_t len)
{
	const char *const *g = sim_generations;
	for (; *g; g++)
		if (strcmp(*g, generation) == 0)
			break;
	if (!*g)
		return GC_EINVAL;
	char file[64];
	if (strcmp(generation, "modern") == 0)
		snprintf(file, sizeof file, "libnvidia-ml-sim.so");
	else
		snprintf(file, sizeof file, "libnvidia-ml-sim-%s.so", generation);

	char dirs[4][PATH_MAX];
	int nd = 0;
	const char *env = getenv("GPUCTL_SIM_LIBDIR");
	if (env && *env)
		snprintf(dirs[nd++], PATH_MAX, "%s", env);
	char exe[PATH_MAX];
	if (datadir_exe_dir(exe, sizeof exe) == 0) {
		/* build tree: build/src/gpuctl next to build/sim/ */
		int w = snprintf(dirs[nd], PATH_MAX, "%s/../sim", exe);
		if (w > 0 && w < PATH_MAX)
			nd++;
	}
	/* build tree, a program that is not ours (python with the Python package): the shared
	 * build/lib/libgpuctl.so.0 next to build/sim/ */
	Dl_info dl;
	char self[PATH_MAX];
	if (dladdr((void *)gc_sim_library, &dl) && dl.dli_fname && strchr(dl.dli_fname, '/') &&
	    strlen(dl.dli_fname) < sizeof self) {
		snprintf(self, sizeof self, "%s", dl.dli_fname);
		int w = snprintf(dirs[nd], PATH_MAX, "%s/../sim", dirname(self));
		if (w > 0 && w < PATH_MAX)
			nd++;
	}
	snprintf(dirs[nd++], PATH_MAX, "%s", GPUCTL_PKGLIBDIR);
	for (int i = 0; i < nd; i++) {
		char cand[PATH_MAX], real[PATH_MAX];
		int w = snprintf(cand, sizeof cand, "%s/%s", dirs[i], file);
		if (w < 0 || (size_t)w >= sizeof cand || access(cand, R_OK) != 0 || !realpath(cand, real))
			continue;
		if (strlen(real) >= len)
			return GC_EINVAL;
		memcpy(buf, real, strlen(real) + 1);
		return GC_OK;
	}
	/* not found anywhere: name the installed location in the error */
	snprintf(buf, len, "%s/%s", GPUCTL_PKGLIBDIR, file);
	return GC_ENOTFOUND;
}

static int open_library(gc_ctx *ctx, const char *path, const char *sim_node)
{
	snprintf(ctx->library, sizeof ctx->library, "%s", path ? path : "libnvidia-ml.so.1");
	int rc = nvml_open(&ctx->nvml, path, sim_node, ctx->err, sizeof ctx->err);
	ctx->sim_text = rc == GC_OK ? (sim_text_fn)nvml_symbol(ctx->nvml, "gpuctlSimProcessText") : NULL;
	return rc;
}

static int ctx_open(gc_ctx *ctx, const gc_open_opts *opts)
{
	const char *lib = opts ? opts->library : NULL;
	if (opts && opts->sim_node) {
		char path[PATH_MAX];
		if (access(opts->sim_node, R_OK) != 0) {
			snprintf(ctx->err, sizeof ctx->err, "cannot read simulated node '%.900s': %m",
				 opts->sim_node);
			return GC_ESIM;
		}
		if (gc_sim_library("modern", path, sizeof path) != GC_OK) {
			snprintf(ctx->err, sizeof ctx->err,
				 "simulator library not found (looked for %.900s; set GPUCTL_SIM_LIBDIR)", path);
			snprintf(ctx->library, sizeof ctx->library, "%s", path);
			return GC_ENOLIB;
		}
		int rc = open_library(ctx, path, opts->sim_node);
		if (rc != GC_OK)
			return rc;
		/*
		 * A node may describe an older driver generation, whose library
		 * exports fewer symbols: reopen that variant of the simulator.
		 */
		typedef const char *(*gen_fn)(void);
		gen_fn gen = (gen_fn)nvml_symbol(ctx->nvml, "gpuctlSimGeneration");
		const char *g = gen ? gen() : NULL;
		if (g && strcmp(g, "modern") != 0) {
			char want[64];
			snprintf(want, sizeof want, "%s", g);
			nvml_close(ctx->nvml);
			ctx->nvml = NULL;
			if (gc_sim_library(want, path, sizeof path) != GC_OK) {
				snprintf(ctx->err, sizeof ctx->err,
					 "simulator library for driver generation '%s' not found (%.900s)",
					 want, path);
				return GC_ENOLIB;
			}
			return open_library(ctx, path, opts->sim_node);
		}
		return GC_OK;
	}
	if (!lib) {
		const char *env = getenv("GPUCTL_NVML_LIBRARY");
		if (env && *env)
			lib = env;
	}
	return open_library(ctx, lib, NULL);
}

int gc_ctx_open(gc_ctx **out, const gc_open_opts *opts)
{
	gc_ctx *ctx = calloc(1, sizeof *ctx);
	*out = ctx;
	return ctx ? ctx_open(ctx, opts) : GC_ENOMEM;
}

int gpu_ctx_open_table(gc_ctx **out, const gc_snapshot *table, const gc_open_opts *opts)
{
	gc_ctx *ctx = calloc(1, sizeof *ctx);
	*out = ctx;
	if (!ctx)
		return GC_ENOMEM;
	const char *lib = opts ? opts->library : NULL, *sim = opts ? opts->sim_node : NULL;
	if (gpu_snapshot_copy(&ctx->table, table) != GC_OK || (lib && !(ctx->lazy_library = strdup(lib))) ||
	    (sim && !(ctx->lazy_sim = strdup(sim)))) {
		snprintf(ctx->err, sizeof ctx->err, "out of memory");
		return GC_ENOMEM;
	}
	free(ctx->table.topo);
	ctx->table.topo = NULL;
	ctx->have_table = true;
	ctx->table_until_ms = clock_mono_ms() + 1000;
	snprintf(ctx->library, sizeof ctx->library, "gpuctld");
	return GC_OK;
}

/* a table's context asked for what the table lacks: the library, as gc_ctx_open would have opened it */
static int ctx_open_late(gc_ctx *ctx)
{
	gc_open_opts o = {.size = sizeof o, .library = ctx->lazy_library, .sim_node = ctx->lazy_sim};
	return ctx_open(ctx, &o);
}

void gc_ctx_free(gc_ctx *ctx)
{
	if (!ctx)
		return;
	nvml_close(ctx->nvml);
	gpu_snapshot_release(&ctx->table);
	free(ctx->lazy_library);
	free(ctx->lazy_sim);
	free(ctx);
}

const char *gc_ctx_errmsg(const gc_ctx *ctx)
{
	return ctx ? ctx->err : "out of memory";
}

const char *gc_ctx_library(const gc_ctx *ctx)
{
	return ctx ? ctx->library : "";
}

size_t gc_ctx_count(const gc_ctx *ctx)
{
	return !ctx ? 0 : ctx->nvml ? nvml_count(ctx->nvml) : ctx->have_table ? ctx->table.ngpus : 0;
}

const char *gc_ctx_proc_api(const gc_ctx *ctx)
{
	return ctx && ctx->nvml ? nvml_proc_api(ctx->nvml) : "none";
}

/*
 * Fault in a large new block of the snapshot in one system call, before it is
 * written: at 256 GPUs the snapshot is 166 KB, 40 pages each first written by
 * a page fault of its own otherwise. Only an optimisation: any failure (an
 * older kernel: EINVAL) changes nothing.
 */
static void prefault(void *p, size_t len)
{
#ifdef MADV_POPULATE_WRITE
	if (len < 64 * 1024)
		return;
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)p, b = a + len;
	a = (a + (uintptr_t)pg - 1) & ~((uintptr_t)pg - 1); /* whole pages inside the block */
	b &= ~((uintptr_t)pg - 1);
	if (b > a)
		madvise((void *)a, b - a, MADV_POPULATE_WRITE);
#else
	(void)p;
	(void)len;
#endif
}

static int snapshot_size(gc_snapshot *s, size_t n)
{
	if (s->ngpus == n && (s->gpus || n == 0))
		return GC_OK;
	for (size_t i = n; i < s->ngpus; i++) {
		free(s->gpus[i].procs);
		free(s->gpus[i].mig);
	}
	gc_gpu *g;
	if (!s->gpus) {
		/* calloc: a large block comes zeroed from the kernel, without a memset of our own */
		g = calloc(n ? n : 1, sizeof *g);
		if (!g)
			return GC_ENOMEM;
		prefault(g, n * sizeof *g);
	} else {
		g = realloc(s->gpus, (n ? n : 1) * sizeof *g);
		if (!g)
			return GC_ENOMEM;
		prefault(g + s->ngpus, n > s->ngpus ? (n - s->ngpus) * sizeof *g : 0);
		for (size_t i = s->ngpus; i < n; i++)
			memset(&g[i], 0, sizeof g[i]);
	}
	s->gpus = g;
	s->ngpus = n;
	free(s->topo);
	s->topo = NULL;
	return GC_OK;
}

/* a sample from gpuctld's table: its values that mask asks for */
static int table_sample(gc_ctx *ctx, gc_snapshot *snap, uint64_t mask, const bool *which)
{
	const gc_snapshot *t = &ctx->table;
	if (snapshot_size(snap, t->ngpus) != GC_OK) {
		snprintf(ctx->err, sizeof ctx->err, "out of memory");
		return GC_ENOMEM;
	}
	memcpy(snap->driver_version, t->driver_version, sizeof snap->driver_version);
	memcpy(snap->nvml_version, t->nvml_version, sizeof snap->nvml_version);
	snap->cuda_version = t->cuda_version;
	snap->time_ms = t->time_ms;
	for (size_t i = 0; i < t->ngpus; i++) {
		gc_gpu *g = &snap->gpus[i];
		gc_proc *procs = g->procs;
		gc_mig *mig = g->mig;
		size_t pcap = g->procs_cap, mcap = g->mig_cap;
		*g = t->gpus[i];
		g->procs = procs;
		g->procs_cap = pcap;
		g->mig = mig;
		g->mig_cap = mcap;
		g->nprocs = g->nmig = 0;
		for (int v = 0; v < GC_V__COUNT; v++)
			if (!(mask & GC_BIT(v)) || (which && !which[i]))
				g->st[v] = GC_ST_UNSET;
	}
	return GC_OK;
}

int gc_ctx_sample(gc_ctx *ctx, gc_snapshot *snap, uint64_t mask, const bool *which, bool topo)
{
	if (!ctx || !snap)
		return GC_EINVAL;
	if (mask & GC_BIT(GC_V_PROC_UTIL)) /* of the processes: list them too */
		mask |= GC_BIT(GC_V_PROCS) | GC_BIT(GC_V_GPROCS);
	if (!ctx->nvml && ctx->have_table) {
		if (!(mask & ~(uint64_t)GPU_TABLE_MASK) && !topo && clock_mono_ms() < ctx->table_until_ms)
			return table_sample(ctx, snap, mask, which);
		int rc = ctx_open_late(ctx);
		if (rc != GC_OK)
			return rc;
		if (nvml_count(ctx->nvml) != ctx->table.ngpus) {
			snprintf(ctx->err, sizeof ctx->err, "gpuctld sees %zu GPUs and this process %zu: the GPU numbers "
				 "would not agree", ctx->table.ngpus, (size_t)nvml_count(ctx->nvml));
			return GC_EIO;
		}
	}
	if (!ctx->nvml)
		return GC_EINVAL;
	size_t n = nvml_count(ctx->nvml);
	if (snapshot_size(snap, n) != GC_OK) {
		snprintf(ctx->err, sizeof ctx->err, "out of memory");
		return GC_ENOMEM;
	}
	if (!ctx->have_sys) {
		nvml_system_info(ctx->nvml, &ctx->sys);
		ctx->have_sys = true;
	}
	memcpy(snap->driver_version, ctx->sys.driver_version, sizeof snap->driver_version);
	memcpy(snap->nvml_version, ctx->sys.nvml_version, sizeof snap->nvml_version);
	snap->cuda_version = ctx->sys.cuda_version;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	snap->time_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;

	for (size_t i = 0; i < n; i++) {
		gc_gpu *g = &snap->gpus[i];
		if (which && !which[i]) {
			g->index = (unsigned)i;
			g->nprocs = 0;
			g->nmig = 0;
			g->lost = false;
			memset(g->st, GC_ST_UNSET, sizeof g->st);
			continue;
		}
		int rc = nvml_sample_gpu(ctx->nvml, (unsigned)i, mask, g, &g->procs_cap);
		if (rc != GC_OK)
			return rc;
		for (size_t p = 0; p < g->nprocs; p++) {
			g->procs[p].simulated = false;
			proc_describe(&g->procs[p], "/proc", &ctx->uids);
			describe_simulated(ctx, &g->procs[p]);
		}
	}
	if (topo) {
		if (!snap->topo) {
			snap->topo = malloc((n ? n * n : 1) * sizeof *snap->topo);
			if (!snap->topo)
				return GC_ENOMEM;
		}
		for (size_t a = 0; a < n; a++) {
			for (size_t b = a; b < n; b++) {
				int lv = GC_TOPO_UNKNOWN;
				if (!which || (which[a] && which[b]))
					lv = nvml_topology(ctx->nvml, (unsigned)a, (unsigned)b);
				snap->topo[a * n + b] = snap->topo[b * n + a] = (int8_t)lv;
			}
		}
	}
	return GC_OK;
}

void gpu_snapshot_release(gc_snapshot *snap)
{
	if (!snap)
		return;
	for (size_t i = 0; i < snap->ngpus; i++) {
		free(snap->gpus[i].procs);
		free(snap->gpus[i].mig);
	}
	free(snap->gpus);
	free(snap->topo);
	memset(snap, 0, sizeof *snap);
}

gc_snapshot *gc_snapshot_new(void)
{
	return calloc(1, sizeof(gc_snapshot));
}

void gc_snapshot_free(gc_snapshot *snap)
{
	gpu_snapshot_release(snap);
	free(snap);
}

size_t gc_snapshot_count(const gc_snapshot *snap)
{
	return snap ? snap->ngpus : 0;
}

const char *gc_snapshot_driver(const gc_snapshot *snap)
{
	return snap ? snap->driver_version : "";
}

int gc_snapshot_cuda(const gc_snapshot *snap)
{
	return snap ? snap->cuda_version : 0;
}

int64_t gc_snapshot_time_ms(const gc_snapshot *snap)
{
	return snap ? snap->time_ms : 0;
}

int gc_value_status(const gc_snapshot *snap, size_t gpu, unsigned value)
{
	if (!snap || gpu >= snap->ngpus || value >= GC_V__COUNT)
		return GC_EINVAL;
	return snap->gpus[gpu].st[value];
}

static size_t count_procs(const gc_gpu *g, unsigned type)
{
	size_t n = 0;
	for (size_t i = 0; i < g->nprocs; i++)
		n += (g->procs[i].type & type) != 0;
	return n;
}

/* the number a value stands for (gc_value_u64's table); false for a string value */
static bool value_number(const gc_gpu *g, unsigned v, uint64_t *x)
{
	switch (v) {
	case GC_V_PCI: *x = g->pci_bus; break;
	case GC_V_MEM_TOTAL: *x = g->mem_total; break;
	case GC_V_MEM_RESERVED: *x = g->mem_reserved; break;
	case GC_V_MEM_USED: *x = g->mem_used; break;
	case GC_V_MEM_FREE: *x = g->mem_free; break;
	case GC_V_UTIL_GPU: *x = g->util_gpu; break;
	case GC_V_UTIL_MEM: *x = g->util_mem; break;
	case GC_V_TEMP: *x = g->temp; break;
	case GC_V_FAN: *x = g->fan; break;
	case GC_V_POWER_DRAW: *x = g->power_draw; break;
	case GC_V_POWER_LIMIT: *x = g->power_limit; break;
	case GC_V_POWER_ENFORCED: *x = g->power_enforced; break;
	case GC_V_POWER_DEFAULT: *x = g->power_default; break;
	case GC_V_POWER_MIN: *x = g->power_min; break;
	case GC_V_POWER_MAX: *x = g->power_max; break;
	case GC_V_CLK_GR: *x = g->clk_gr; break;
	case GC_V_CLK_SM: *x = g->clk_sm; break;
	case GC_V_CLK_MEM: *x = g->clk_mem; break;
	case GC_V_CLK_VIDEO: *x = g->clk_video; break;
	case GC_V_CLK_MAX_GR: *x = g->clk_max_gr; break;
	case GC_V_CLK_MAX_SM: *x = g->clk_max_sm; break;
	case GC_V_CLK_MAX_MEM: *x = g->clk_max_mem; break;
	case GC_V_REASONS: *x = g->reasons; break;
	case GC_V_REASONS_SUPPORTED: *x = g->reasons_supported; break;
	case GC_V_ECC_MODE: *x = g->ecc_mode; break;
	case GC_V_ECC_PENDING: *x = g->ecc_pending; break;
	case GC_V_ECC_CORR_VOL: *x = g->ecc_corr_vol; break;
	case GC_V_ECC_UNCORR_VOL: *x = g->ecc_uncorr_vol; break;
	case GC_V_ECC_CORR_AGG: *x = g->ecc_corr_agg; break;
	case GC_V_ECC_UNCORR_AGG: *x = g->ecc_uncorr_agg; break;
	case GC_V_PERSISTENCE: *x = g->persistence; break;
	case GC_V_COMPUTE_MODE: *x = g->compute_mode; break;
	case GC_V_PSTATE: *x = g->pstate; break;
	case GC_V_MIG_CURRENT: *x = g->mig_current; break;
	case GC_V_MIG_PENDING: *x = g->mig_pending; break;
	case GC_V_MIG_DEVICES: *x = g->nmig; break;
	case GC_V_PCIE_GEN: *x = g->pcie_gen; break;
	case GC_V_PCIE_GEN_MAX: *x = g->pcie_gen_max; break;
	case GC_V_PCIE_WIDTH: *x = g->pcie_width; break;
	case GC_V_PCIE_WIDTH_MAX: *x = g->pcie_width_max; break;
	case GC_V_ENERGY: *x = g->energy_mj; break;
	case GC_V_COMPUTE_CAP: *x = (uint64_t)(g->cc_major * 10 + g->cc_minor); break;
	case GC_V_RETIRED_PENDING: *x = g->retired_pending; break;
	case GC_V_REMAPPED_ROWS: *x = g->remap_uncorr; break;
	case GC_V_PROCS: *x = count_procs(g, GC_PROC_COMPUTE); break;
	case GC_V_GPROCS: *x = count_procs(g, GC_PROC_GRAPHICS); break;
	case GC_V_PROC_UTIL: {
		int most = 0;
		for (size_t i = 0; i < g->nprocs; i++)
			if (g->procs[i].sm_util > most)
				most = g->procs[i].sm_util;
		*x = (uint64_t)most;
		break;
	}
	default: return false; /* name, UUID, serial, VBIOS */
	}
	return true;
}

int gc_value_u64(const gc_snapshot *snap, size_t gpu, unsigned value, uint64_t *out)
{
	int st = gc_value_status(snap, gpu, value);
	uint64_t x;
	if (st < 0 || !out || !value_number(&snap->gpus[gpu], value, &x))
		return GC_EINVAL;
	if (st == GC_ST_OK)
		*out = x;
	return st;
}

int gc_value_str(const gc_snapshot *snap, size_t gpu, unsigned value, const char **out)
{
	int st = gc_value_status(snap, gpu, value);
	if (st < 0 || !out)
		return GC_EINVAL;
	const gc_gpu *g = &snap->gpus[gpu];
	const char *v;
	switch (value) {
	case GC_V_NAME: v = g->name; break;
	case GC_V_UUID: v = g->uuid; break;
	case GC_V_SERIAL: v = g->serial; break;
	case GC_V_VBIOS: v = g->vbios; break;
	case GC_V_PCI: v = g->bus_id; break;
	default: return GC_EINVAL;
	}
	if (st == GC_ST_OK)
		*out = v;
	return st;
}

size_t gc_proc_count(const gc_snapshot *snap, size_t gpu)
{
	return snap && gpu < snap->ngpus ? snap->gpus[gpu].nprocs : 0;
}

int gc_proc_get(const gc_snapshot *snap, size_t gpu, size_t i, gc_proc *out, size_t size)
{
	if (!out || gpu >= gc_snapshot_count(snap) || i >= snap->gpus[gpu].nprocs)
		return GC_EINVAL;
	memcpy(out, &snap->gpus[gpu].procs[i], size < sizeof *out ? size : sizeof *out);
	return GC_OK;
}

/* a copy of n elements of size sz, or NULL (also for none) */
static void *dup_array(const void *src, size_t n, size_t sz, bool *oom)
{
	if (!src || !n)
		return NULL;
	void *p = malloc(n * sz);
	if (!p)
		*oom = true;
	else
		memcpy(p, src, n * sz);
	return p;
}

int gpu_snapshot_copy(gc_snapshot *dst, const gc_snapshot *src)
{
	gpu_snapshot_release(dst);
	bool oom = false;
	*dst = *src;
	dst->gpus = dup_array(src->gpus, src->ngpus, sizeof *src->gpus, &oom);
	dst->topo = dup_array(src->topo, src->ngpus * src->ngpus, sizeof *src->topo, &oom);
	for (size_t i = 0; dst->gpus && i < dst->ngpus; i++) {
		gc_gpu *g = &dst->gpus[i];
		g->procs = dup_array(g->procs, g->nprocs, sizeof *g->procs, &oom);
		g->procs_cap = g->procs ? g->nprocs : 0;
		g->mig = dup_array(g->mig, g->nmig, sizeof *g->mig, &oom);
		g->mig_cap = g->mig ? g->nmig : 0;
	}
	if (!dst->gpus)
		dst->ngpus = 0;
	if (oom) {
		gpu_snapshot_release(dst);
		return GC_ENOMEM;
	}
	return GC_OK;
}

int gc_xid_watch(gc_ctx *ctx)
{
	if (!ctx || !ctx->nvml)
		return GC_EINVAL;
	return nvml_xid_watch(ctx->nvml, ctx->err, sizeof ctx->err);
}

int gc_xid_next(gc_ctx *ctx, int timeout_ms, unsigned *gpu, uint64_t *xid)
{
	if (!ctx || !ctx->nvml || !gpu || !xid)
		return GC_EINVAL;
	return nvml_xid_next(ctx->nvml, timeout_ms, gpu, xid, ctx->err, sizeof ctx->err);
}
