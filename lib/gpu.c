/*
 * gpu.c — the snapshot model: a gc_ctx holds the open backend, and each
 * gc_ctx_sample() fills one gc_gpu per GPU (values with statuses, processes
 * with user and command resolved from /proc) plus, when asked, the pairwise
 * topology. Snapshots are reused between samples so a --loop allocates
 * nothing in steady state.
 */
#include "config.h"
#include "nvml.h"
#include "proc.h"

#include <jansson.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct gc_ctx {
	struct nvml *nvml;
	char err[1024];
	char library[PATH_MAX];
	struct uid_cache uids;
	gc_snapshot sys;   /* driver/NVML/CUDA versions, read once */
	bool have_sys;
	struct sim_proc_text *simp; /* a simulated node's processes' "user" and "command" */
	size_t nsimp;
};

struct sim_proc_text {
	uint32_t pid;
	char user[33];
	char command[256];
};

/*
 * The "user" and "command" a simulated node's file gives its processes, which
 * NVML cannot tell: read here, once, for display. The simulator library has
 * already checked the file; anything odd is just left out.
 */
static void load_sim_texts(gc_ctx *ctx, const char *node)
{
	json_t *root = json_load_file(node, 0, NULL);
	size_t i, k;
	json_t *g, *p;
	json_array_foreach(json_object_get(root, "gpus"), i, g) {
		json_array_foreach(json_object_get(g, "processes"), k, p) {
			const char *user = json_string_value(json_object_get(p, "user"));
			const char *cmd = json_string_value(json_object_get(p, "command"));
			json_int_t pid = json_integer_value(json_object_get(p, "pid"));
			if ((!user && !cmd) || pid <= 0 || pid > INT32_MAX || ctx->nsimp >= 4096)
				continue;
			struct sim_proc_text *v = realloc(ctx->simp, (ctx->nsimp + 1) * sizeof *v);
			if (!v)
				break;
			ctx->simp = v;
			v = &ctx->simp[ctx->nsimp++];
			v->pid = (uint32_t)pid;
			proc_sanitize(v->user, sizeof v->user, user ? user : "?", user ? strlen(user) : 1);
			proc_sanitize(v->command, sizeof v->command, cmd ? cmd : "", cmd ? strlen(cmd) : 0);
		}
	}
	json_decref(root);
}

/* a process the node file describes, when /proc cannot */
static void describe_simulated(const gc_ctx *ctx, gc_proc *p)
{
	for (size_t i = 0; !p->visible && i < ctx->nsimp; i++) {
		if (ctx->simp[i].pid != p->pid)
			continue;
		p->simulated = true;
		snprintf(p->user, sizeof p->user, "%s", ctx->simp[i].user);
		snprintf(p->command, sizeof p->command, "%s", ctx->simp[i].command);
		snprintf(p->argv0, sizeof p->argv0, "%.*s", (int)strcspn(p->command, " "), p->command);
		return;
	}
}

static const char *const sim_generations[] = {"modern", "r535", "legacy", "r410", NULL};

static int exe_dir(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	char *slash = strrchr(buf, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	return 0;
}

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

	char dirs[3][PATH_MAX];
	int nd = 0;
	const char *env = getenv("GPUCTL_SIM_LIBDIR");
	if (env && *env)
		snprintf(dirs[nd++], PATH_MAX, "%s", env);
	char exe[PATH_MAX];
	if (exe_dir(exe, sizeof exe) == 0) {
		/* build tree: build/src/gpuctl next to build/sim/ */
		int w = snprintf(dirs[nd], PATH_MAX, "%s/../sim", exe);
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
	return nvml_open(&ctx->nvml, path, sim_node, ctx->err, sizeof ctx->err);
}

int gc_ctx_open(gc_ctx **out, const gc_open_opts *opts)
{
	gc_ctx *ctx = calloc(1, sizeof *ctx);
	*out = ctx;
	if (!ctx)
		return GC_ENOMEM;
	const char *lib = opts ? opts->library : NULL;
	if (opts && opts->sim_node) {
		char path[PATH_MAX];
		if (access(opts->sim_node, R_OK) != 0) {
			snprintf(ctx->err, sizeof ctx->err, "cannot read simulated node '%.900s': %m",
				 opts->sim_node);
			return GC_ESIM;
		}
		load_sim_texts(ctx, opts->sim_node);
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

void gc_ctx_free(gc_ctx *ctx)
{
	if (!ctx)
		return;
	nvml_close(ctx->nvml);
	free(ctx->simp);
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
	return ctx && ctx->nvml ? nvml_count(ctx->nvml) : 0;
}

const char *gc_ctx_proc_api(const gc_ctx *ctx)
{
	return ctx && ctx->nvml ? nvml_proc_api(ctx->nvml) : "none";
}

static int snapshot_size(gc_snapshot *s, size_t n)
{
	if (s->ngpus == n && (s->gpus || n == 0))
		return GC_OK;
	for (size_t i = n; i < s->ngpus; i++) {
		free(s->gpus[i].procs);
		free(s->gpus[i].mig);
	}
	gc_gpu *g = realloc(s->gpus, (n ? n : 1) * sizeof *g);
	if (!g)
		return GC_ENOMEM;
	for (size_t i = s->ngpus; i < n; i++)
		memset(&g[i], 0, sizeof g[i]);
	s->gpus = g;
	s->ngpus = n;
	free(s->topo);
	s->topo = NULL;
	return GC_OK;
}

int gc_ctx_sample(gc_ctx *ctx, gc_snapshot *snap, uint64_t mask, const bool *which, bool topo)
{
	if (!ctx || !ctx->nvml || !snap)
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
				snap->topo[a * n + b] = snap->topo[b * n + a] = lv;
			}
		}
	}
	return GC_OK;
}

void gc_snapshot_release(gc_snapshot *snap)
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
