/*
 * snapjson.c — a snapshot as JSON (schema "gpuctl.snapshot/1", documented in
 * docs/json.md). Every value the backend collects appears; a value the GPU
 * does not give is null, never 0, and any failure other than "not
 * supported" is also named in the GPU's "errors" object. Written with the
 * streaming writer (jsonw.c): a 256-GPU snapshot is 1.4 MB of JSON.
 */
#include "device/gpu.h"

#include "util/clock.h"
#include "util/jsonw.h"
#include "device/snapjson.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static const char *const value_names[GC_V__COUNT] = {
	[GC_V_NAME] = "name", [GC_V_UUID] = "uuid", [GC_V_SERIAL] = "serial",
	[GC_V_VBIOS] = "vbios_version", [GC_V_PCI] = "pci",
	[GC_V_MEM_TOTAL] = "memory.total", [GC_V_MEM_RESERVED] = "memory.reserved",
	[GC_V_MEM_USED] = "memory.used", [GC_V_MEM_FREE] = "memory.free",
	[GC_V_UTIL_GPU] = "utilization.gpu", [GC_V_UTIL_MEM] = "utilization.memory",
	[GC_V_TEMP] = "temperature.gpu", [GC_V_FAN] = "fan_speed",
	[GC_V_POWER_DRAW] = "power.draw_mw", [GC_V_POWER_LIMIT] = "power.limit_mw",
	[GC_V_POWER_ENFORCED] = "power.enforced_limit_mw",
	[GC_V_POWER_DEFAULT] = "power.default_limit_mw", [GC_V_POWER_MIN] = "power.min_limit_mw",
	[GC_V_POWER_MAX] = "power.max_limit_mw",
	[GC_V_CLK_GR] = "clocks.graphics_mhz", [GC_V_CLK_SM] = "clocks.sm_mhz",
	[GC_V_CLK_MEM] = "clocks.memory_mhz", [GC_V_CLK_VIDEO] = "clocks.video_mhz",
	[GC_V_CLK_MAX_GR] = "clocks.max_graphics_mhz", [GC_V_CLK_MAX_SM] = "clocks.max_sm_mhz",
	[GC_V_CLK_MAX_MEM] = "clocks.max_memory_mhz",
	[GC_V_REASONS] = "clock_event_reasons.active",
	[GC_V_REASONS_SUPPORTED] = "clock_event_reasons.supported",
	[GC_V_ECC_MODE] = "ecc.mode_current", [GC_V_ECC_PENDING] = "ecc.mode_pending",
	[GC_V_ECC_CORR_VOL] = "ecc.corrected_volatile",
	[GC_V_ECC_UNCORR_VOL] = "ecc.uncorrected_volatile",
	[GC_V_ECC_CORR_AGG] = "ecc.corrected_aggregate",
	[GC_V_ECC_UNCORR_AGG] = "ecc.uncorrected_aggregate",
	[GC_V_PERSISTENCE] = "persistence_mode", [GC_V_COMPUTE_MODE] = "compute_mode",
	[GC_V_PSTATE] = "pstate", [GC_V_MIG_CURRENT] = "mig.current",
	[GC_V_MIG_PENDING] = "mig.pending", [GC_V_MIG_DEVICES] = "mig_devices",
	[GC_V_PCIE_GEN] = "pcie.gen", [GC_V_PCIE_GEN_MAX] = "pcie.max_gen",
	[GC_V_PCIE_WIDTH] = "pcie.width", [GC_V_PCIE_WIDTH_MAX] = "pcie.max_width",
	[GC_V_ENERGY] = "energy_mj", [GC_V_COMPUTE_CAP] = "compute_capability",
	[GC_V_RETIRED_PENDING] = "retired_pages.pending", [GC_V_REMAPPED_ROWS] = "remapped_rows",
	[GC_V_PROCS] = "processes", [GC_V_GPROCS] = "graphics_processes",
	[GC_V_PROC_UTIL] = "processes.sm_util",
};

const char *gc_value_name(unsigned v)
{
	return v < GC_V__COUNT ? value_names[v] : NULL;
}

/* value or null, by status */
static void u(struct jw *w, const gc_gpu *g, const char *key, int v, uint64_t x)
{
	if (g->st[v] == GC_ST_OK)
		jsonw_uint(w, key, x);
	else
		jsonw_null(w, key);
}

static void b(struct jw *w, const gc_gpu *g, const char *key, int v, bool x)
{
	if (g->st[v] == GC_ST_OK)
		jsonw_bool(w, key, x);
	else
		jsonw_null(w, key);
}

/* a string from NVML or /proc */
static void s(struct jw *w, const gc_gpu *g, const char *key, int v, const char *x)
{
	if (g->st[v] == GC_ST_OK)
		jsonw_string(w, key, x);
	else
		jsonw_null(w, key);
}

/* a string gpuctl formatted itself */
static void p(struct jw *w, const gc_gpu *g, const char *key, int v, const char *x)
{
	if (g->st[v] == GC_ST_OK)
		jsonw_plain(w, key, x);
	else
		jsonw_null(w, key);
}

static void hex(struct jw *w, const gc_gpu *g, const char *key, int v, uint64_t x, int digits)
{
	char buf[32];
	snprintf(buf, sizeof buf, "0x%0*llX", digits, (unsigned long long)x);
	p(w, g, key, v, buf);
}

static void reasons(struct jw *w, const gc_gpu *g)
{
	jsonw_object(w, "clock_event_reasons");
	hex(w, g, "active", GC_V_REASONS, g->reasons, 16);
	hex(w, g, "supported", GC_V_REASONS_SUPPORTED, g->reasons_supported, 16);
	if (g->st[GC_V_REASONS] == GC_ST_OK) {
		jsonw_array(w, "reasons");
		for (int i = 0; i < 64; i++) {
			uint64_t bit = UINT64_C(1) << i;
			if (!(g->reasons & bit))
				continue;
			const char *nm = gc_reason_name(bit);
			char buf[32];
			if (!nm) {
				snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)bit);
				nm = buf;
			}
			jsonw_plain(w, NULL, nm);
		}
		jsonw_end(w, ']');
	} else {
		jsonw_null(w, "reasons");
	}
	b(w, g, "throttled", GC_V_REASONS, (g->reasons & GC_REASONS_THROTTLING) != 0);
	jsonw_end(w, '}');
}

static void procs(struct jw *w, const gc_gpu *g)
{
	if (g->st[GC_V_PROCS] != GC_ST_OK && g->st[GC_V_GPROCS] != GC_ST_OK) {
		jsonw_null(w, "processes");
		return;
	}
	jsonw_array(w, "processes");
	for (size_t i = 0; i < g->nprocs; i++) {
		const gc_proc *pr = &g->procs[i];
		const char *type = pr->type == (GC_PROC_COMPUTE | GC_PROC_GRAPHICS) ? "compute+graphics"
				   : pr->type == GC_PROC_GRAPHICS ? "graphics" : "compute";
		jsonw_object(w, NULL);
		jsonw_uint(w, "pid", pr->pid);
		jsonw_plain(w, "type", type);
		if (pr->mem_known)
			jsonw_uint(w, "used_memory", pr->used_memory);
		else
			jsonw_null(w, "used_memory");
		/* only where this sample asked for it: a snapshot without it keeps its old shape */
		if (g->st[GC_V_PROC_UTIL] != GC_ST_UNSET) {
			if (g->st[GC_V_PROC_UTIL] == GC_ST_OK && pr->sm_util >= 0) {
				jsonw_int(w, "sm_util", pr->sm_util);
				jsonw_int(w, "mem_util", pr->mem_util);
			} else {
				jsonw_null(w, "sm_util");
				jsonw_null(w, "mem_util");
			}
		}
		jsonw_bool(w, "visible", pr->visible);
		if (pr->visible) {
			jsonw_string(w, "user", pr->user);
			jsonw_uint(w, "uid", pr->uid);
			jsonw_string(w, "command", pr->command);
		} else if (pr->simulated) {
			/* what a simulated node's file says of it; no uid, which the file does not give */
			jsonw_string(w, "user", pr->user);
			jsonw_null(w, "uid");
			jsonw_string(w, "command", pr->command);
			jsonw_bool(w, "simulated", true);
		} else {
			jsonw_null(w, "user");
			jsonw_null(w, "uid");
			jsonw_null(w, "command");
		}
		jsonw_end(w, '}');
	}
	jsonw_end(w, ']');
}

/* MIG mode and the MIG devices CUDA sees instead of the GPU (nvidia-smi -L's MIG lines) */
static void mig_devices(struct jw *w, const gc_gpu *g)
{
	b(w, g, "mig_mode", GC_V_MIG_CURRENT, g->mig_current);
	if (g->st[GC_V_MIG_DEVICES] != GC_ST_OK) {
		jsonw_null(w, "mig_devices");
		return;
	}
	jsonw_array(w, "mig_devices");
	for (size_t i = 0; i < g->nmig; i++) {
		const gc_mig *m = &g->mig[i];
		jsonw_object(w, NULL);
		jsonw_uint(w, "index", m->index);
		if (m->st_uuid == GC_ST_OK)
			jsonw_string(w, "uuid", m->uuid);
		else
			jsonw_null(w, "uuid");
		if (m->st_profile == GC_ST_OK)
			jsonw_string(w, "profile", m->profile);
		else
			jsonw_null(w, "profile");
		jsonw_object(w, "memory");
		if (m->st_mem == GC_ST_OK) {
			jsonw_uint(w, "total", m->mem_total);
			jsonw_uint(w, "used", m->mem_used);
			jsonw_uint(w, "free", m->mem_free);
		} else {
			jsonw_null(w, "total");
			jsonw_null(w, "used");
			jsonw_null(w, "free");
		}
		jsonw_end(w, '}');
		if (m->st_gi == GC_ST_OK)
			jsonw_uint(w, "gpu_instance_id", m->gpu_instance_id);
		else
			jsonw_null(w, "gpu_instance_id");
		if (m->st_ci == GC_ST_OK)
			jsonw_uint(w, "compute_instance_id", m->compute_instance_id);
		else
			jsonw_null(w, "compute_instance_id");
		jsonw_end(w, '}');
	}
	jsonw_end(w, ']');
}

static void gpu_json(struct jw *w, const gc_gpu *g, const struct snapjson_extra *x)
{
	char buf[32];
	jsonw_object(w, NULL);
	jsonw_uint(w, "index", g->index);
	s(w, g, "name", GC_V_NAME, g->name);
	s(w, g, "uuid", GC_V_UUID, g->uuid);
	s(w, g, "serial", GC_V_SERIAL, g->serial);
	s(w, g, "vbios_version", GC_V_VBIOS, g->vbios);
	if (g->st[GC_V_PCI] == GC_ST_OK) {
		jsonw_object(w, "pci");
		jsonw_string(w, "bus_id", g->bus_id);
		jsonw_uint(w, "domain", g->pci_domain);
		jsonw_uint(w, "bus", g->pci_bus);
		jsonw_uint(w, "device", g->pci_device);
		hex(w, g, "device_id", GC_V_PCI, g->pci_device_id, 8);
		hex(w, g, "subsystem_id", GC_V_PCI, g->pci_subsystem_id, 8);
		jsonw_end(w, '}');
	} else {
		jsonw_null(w, "pci");
	}
	jsonw_object(w, "memory");
	u(w, g, "total", GC_V_MEM_TOTAL, g->mem_total);
	u(w, g, "reserved", GC_V_MEM_RESERVED, g->mem_reserved);
	u(w, g, "used", GC_V_MEM_USED, g->mem_used);
	u(w, g, "free", GC_V_MEM_FREE, g->mem_free);
	jsonw_end(w, '}');
	jsonw_object(w, "utilization");
	u(w, g, "gpu", GC_V_UTIL_GPU, g->util_gpu);
	u(w, g, "memory", GC_V_UTIL_MEM, g->util_mem);
	jsonw_end(w, '}');
	u(w, g, "temperature", GC_V_TEMP, g->temp);
	u(w, g, "fan_speed", GC_V_FAN, g->fan);
	jsonw_object(w, "power");
	u(w, g, "draw_mw", GC_V_POWER_DRAW, g->power_draw);
	u(w, g, "limit_mw", GC_V_POWER_LIMIT, g->power_limit);
	u(w, g, "enforced_limit_mw", GC_V_POWER_ENFORCED, g->power_enforced);
	u(w, g, "default_limit_mw", GC_V_POWER_DEFAULT, g->power_default);
	u(w, g, "min_limit_mw", GC_V_POWER_MIN, g->power_min);
	u(w, g, "max_limit_mw", GC_V_POWER_MAX, g->power_max);
	jsonw_end(w, '}');
	jsonw_object(w, "clocks");
	u(w, g, "graphics_mhz", GC_V_CLK_GR, g->clk_gr);
	u(w, g, "sm_mhz", GC_V_CLK_SM, g->clk_sm);
	u(w, g, "memory_mhz", GC_V_CLK_MEM, g->clk_mem);
	u(w, g, "video_mhz", GC_V_CLK_VIDEO, g->clk_video);
	u(w, g, "max_graphics_mhz", GC_V_CLK_MAX_GR, g->clk_max_gr);
	u(w, g, "max_sm_mhz", GC_V_CLK_MAX_SM, g->clk_max_sm);
	u(w, g, "max_memory_mhz", GC_V_CLK_MAX_MEM, g->clk_max_mem);
	jsonw_end(w, '}');
	reasons(w, g);
	jsonw_object(w, "ecc");
	b(w, g, "mode_current", GC_V_ECC_MODE, g->ecc_mode);
	b(w, g, "mode_pending", GC_V_ECC_PENDING, g->ecc_pending);
	u(w, g, "corrected_volatile", GC_V_ECC_CORR_VOL, g->ecc_corr_vol);
	u(w, g, "uncorrected_volatile", GC_V_ECC_UNCORR_VOL, g->ecc_uncorr_vol);
	u(w, g, "corrected_aggregate", GC_V_ECC_CORR_AGG, g->ecc_corr_agg);
	u(w, g, "uncorrected_aggregate", GC_V_ECC_UNCORR_AGG, g->ecc_uncorr_agg);
	jsonw_end(w, '}');
	b(w, g, "persistence_mode", GC_V_PERSISTENCE, g->persistence);
	p(w, g, "compute_mode", GC_V_COMPUTE_MODE, gc_compute_mode_name(g->compute_mode));
	snprintf(buf, sizeof buf, "P%u", g->pstate & 0xffu);
	p(w, g, "pstate", GC_V_PSTATE, buf);
	jsonw_object(w, "mig");
	b(w, g, "current", GC_V_MIG_CURRENT, g->mig_current);
	b(w, g, "pending", GC_V_MIG_PENDING, g->mig_pending);
	jsonw_end(w, '}');
	mig_devices(w, g);
	jsonw_object(w, "pcie");
	u(w, g, "gen", GC_V_PCIE_GEN, g->pcie_gen);
	u(w, g, "max_gen", GC_V_PCIE_GEN_MAX, g->pcie_gen_max);
	u(w, g, "width", GC_V_PCIE_WIDTH, g->pcie_width);
	u(w, g, "max_width", GC_V_PCIE_WIDTH_MAX, g->pcie_width_max);
	jsonw_end(w, '}');
	u(w, g, "energy_mj", GC_V_ENERGY, g->energy_mj);
	snprintf(buf, sizeof buf, "%d.%d", g->cc_major, g->cc_minor);
	p(w, g, "compute_capability", GC_V_COMPUTE_CAP, buf);
	jsonw_object(w, "retired_pages");
	b(w, g, "pending", GC_V_RETIRED_PENDING, g->retired_pending);
	jsonw_end(w, '}');
	jsonw_object(w, "remapped_rows");
	u(w, g, "correctable", GC_V_REMAPPED_ROWS, g->remap_corr);
	u(w, g, "uncorrectable", GC_V_REMAPPED_ROWS, g->remap_uncorr);
	b(w, g, "pending", GC_V_REMAPPED_ROWS, g->remap_pending);
	b(w, g, "failure", GC_V_REMAPPED_ROWS, g->remap_failure);
	jsonw_end(w, '}');
	procs(w, g);
	jsonw_object(w, "errors");
	for (int v = 0; v < GC_V__COUNT; v++)
		if (g->st[v] != GC_ST_OK && g->st[v] != GC_ST_NOT_SUPPORTED && g->st[v] != GC_ST_UNSET)
			jsonw_plain(w, value_names[v], gc_status_token(g->st[v]));
	jsonw_end(w, '}');
	jsonw_bool(w, "lost", g->lost);
	if (x && x->gpu)
		x->gpu(w, g, x->arg);
	jsonw_end(w, '}');
}

char *gc_snapshot_json(const gc_snapshot *snap, const bool *which, const char *hostname, bool pretty)
{
	return snapjson_render(snap, which, hostname, pretty, NULL);
}

static void render(struct jw *wp, const gc_snapshot *snap, const bool *which, const char *hostname,
		   const struct snapjson_extra *x)
{
#define w (*wp)
	char ts[40];
	time_t t = (time_t)(snap->time_ms / 1000);
	struct tm tm;
	clock_utc_tm(t, &tm);
	size_t n = strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(ts + n, sizeof ts - n, ".%03dZ", (int)(snap->time_ms % 1000));
	jsonw_object(&w, NULL);
	jsonw_plain(&w, "schema", "gpuctl.snapshot/1");
	if (hostname)
		jsonw_string(&w, "hostname", hostname);
	else
		jsonw_null(&w, "hostname");
	jsonw_plain(&w, "timestamp", ts);
	jsonw_object(&w, "driver");
	if (snap->driver_version[0])
		jsonw_string(&w, "version", snap->driver_version);
	else
		jsonw_null(&w, "version");
	if (snap->nvml_version[0])
		jsonw_string(&w, "nvml_version", snap->nvml_version);
	else
		jsonw_null(&w, "nvml_version");
	char cuda[16];
	if (gc_cuda_version_str(snap->cuda_version, cuda, sizeof cuda))
		jsonw_plain(&w, "cuda_version", cuda);
	else
		jsonw_null(&w, "cuda_version");
	jsonw_end(&w, '}');
	jsonw_array(&w, "gpus");
	for (size_t i = 0; i < snap->ngpus; i++)
		if (!which || which[i])
			gpu_json(&w, &snap->gpus[i], x);
	jsonw_end(&w, ']');
	if (snap->topo) {
		/* one row per line: a 256-GPU matrix stays readable */
		jsonw_array(&w, "topology");
		for (size_t a = 0; a < snap->ngpus; a++) {
			if (which && !which[a])
				continue;
			jsonw_array_inline(&w, NULL);
			for (size_t c = 0; c < snap->ngpus; c++)
				if (!which || which[c])
					jsonw_plain(&w, NULL, gc_topo_name(snap->topo[a * snap->ngpus + c]));
			jsonw_end(&w, ']');
		}
		jsonw_end(&w, ']');
	} else {
		jsonw_null(&w, "topology");
	}
	if (x && x->top)
		x->top(&w, x->arg);
	jsonw_end(&w, '}');
#undef w
}

char *snapjson_render(const gc_snapshot *snap, const bool *which, const char *hostname, bool pretty,
		      const struct snapjson_extra *x)
{
	struct jw w;
	jsonw_init(&w, pretty);
	render(&w, snap, which, hostname, x);
	return jsonw_finish(&w);
}

int snapjson_write(FILE *out, const gc_snapshot *snap, const bool *which, const char *hostname, bool pretty)
{
	struct jw w;
	jsonw_init_file(&w, pretty, out);
	render(&w, snap, which, hostname, NULL);
	return jsonw_finish_file(&w);
}
