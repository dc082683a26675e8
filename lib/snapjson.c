/*
 * snapjson.c — a snapshot as JSON (schema "gpuctl.snapshot/1", documented in
 * docs/json.md). Every value the backend collects appears; a value the GPU
 * does not give is null, never 0, and any failure other than "not
 * supported" is also named in the GPU's "errors" object.
 */
#include "gpuctl/gpuctl.h"

#include <jansson.h>
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
	[GC_V_MIG_PENDING] = "mig.pending",
	[GC_V_PCIE_GEN] = "pcie.gen", [GC_V_PCIE_GEN_MAX] = "pcie.max_gen",
	[GC_V_PCIE_WIDTH] = "pcie.width", [GC_V_PCIE_WIDTH_MAX] = "pcie.max_width",
	[GC_V_ENERGY] = "energy_mj", [GC_V_COMPUTE_CAP] = "compute_capability",
	[GC_V_PROCS] = "processes", [GC_V_GPROCS] = "graphics_processes",
};

/* value or null, by status */
static json_t *u(const gc_gpu *g, int v, uint64_t x)
{
	return g->st[v] == GC_ST_OK ? json_integer((json_int_t)x) : json_null();
}

static json_t *b(const gc_gpu *g, int v, bool x)
{
	return g->st[v] == GC_ST_OK ? json_boolean(x) : json_null();
}

static json_t *s(const gc_gpu *g, int v, const char *x)
{
	return g->st[v] == GC_ST_OK ? json_string(x) : json_null();
}

static json_t *hex(const gc_gpu *g, int v, uint64_t x, int digits)
{
	if (g->st[v] != GC_ST_OK)
		return json_null();
	char buf[32];
	snprintf(buf, sizeof buf, "0x%0*llX", digits, (unsigned long long)x);
	return json_string(buf);
}

static json_t *reasons(const gc_gpu *g)
{
	json_t *o = json_object();
	json_object_set_new(o, "active", hex(g, GC_V_REASONS, g->reasons, 16));
	json_object_set_new(o, "supported", hex(g, GC_V_REASONS_SUPPORTED, g->reasons_supported, 16));
	json_t *names = g->st[GC_V_REASONS] == GC_ST_OK ? json_array() : json_null();
	if (json_is_array(names)) {
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
			json_array_append_new(names, json_string(nm));
		}
	}
	json_object_set_new(o, "reasons", names);
	json_object_set_new(o, "throttled",
			    g->st[GC_V_REASONS] == GC_ST_OK
				    ? json_boolean((g->reasons & GC_REASONS_THROTTLING) != 0)
				    : json_null());
	return o;
}

static json_t *procs(const gc_gpu *g)
{
	if (g->st[GC_V_PROCS] != GC_ST_OK && g->st[GC_V_GPROCS] != GC_ST_OK)
		return json_null();
	json_t *a = json_array();
	for (size_t i = 0; i < g->nprocs; i++) {
		const gc_proc *p = &g->procs[i];
		const char *type = p->type == (GC_PROC_COMPUTE | GC_PROC_GRAPHICS) ? "compute+graphics"
				   : p->type == GC_PROC_GRAPHICS ? "graphics" : "compute";
		json_t *o = json_pack("{s:I, s:s, s:o, s:b}", "pid", (json_int_t)p->pid, "type", type,
				      "used_memory",
				      p->mem_known ? json_integer((json_int_t)p->used_memory) : json_null(),
				      "visible", p->visible);
		json_object_set_new(o, "user", p->visible ? json_string(p->user) : json_null());
		json_object_set_new(o, "uid", p->visible ? json_integer(p->uid) : json_null());
		json_object_set_new(o, "command", p->visible ? json_string(p->command) : json_null());
		json_array_append_new(a, o);
	}
	return a;
}

static json_t *gpu_json(const gc_gpu *g)
{
	json_t *o = json_object();
	json_object_set_new(o, "index", json_integer(g->index));
	json_object_set_new(o, "name", s(g, GC_V_NAME, g->name));
	json_object_set_new(o, "uuid", s(g, GC_V_UUID, g->uuid));
	json_object_set_new(o, "serial", s(g, GC_V_SERIAL, g->serial));
	json_object_set_new(o, "vbios_version", s(g, GC_V_VBIOS, g->vbios));
	json_object_set_new(o, "pci", g->st[GC_V_PCI] == GC_ST_OK
		? json_pack("{s:s, s:I, s:I, s:I, s:o, s:o}", "bus_id", g->bus_id,
			    "domain", (json_int_t)g->pci_domain, "bus", (json_int_t)g->pci_bus,
			    "device", (json_int_t)g->pci_device,
			    "device_id", hex(g, GC_V_PCI, g->pci_device_id, 8),
			    "subsystem_id", hex(g, GC_V_PCI, g->pci_subsystem_id, 8))
		: json_null());
	json_object_set_new(o, "memory", json_pack("{s:o, s:o, s:o, s:o}",
		"total", u(g, GC_V_MEM_TOTAL, g->mem_total),
		"reserved", u(g, GC_V_MEM_RESERVED, g->mem_reserved),
		"used", u(g, GC_V_MEM_USED, g->mem_used),
		"free", u(g, GC_V_MEM_FREE, g->mem_free)));
	json_object_set_new(o, "utilization", json_pack("{s:o, s:o}",
		"gpu", u(g, GC_V_UTIL_GPU, g->util_gpu), "memory", u(g, GC_V_UTIL_MEM, g->util_mem)));
	json_object_set_new(o, "temperature", u(g, GC_V_TEMP, g->temp));
	json_object_set_new(o, "fan_speed", u(g, GC_V_FAN, g->fan));
	json_object_set_new(o, "power", json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}",
		"draw_mw", u(g, GC_V_POWER_DRAW, g->power_draw),
		"limit_mw", u(g, GC_V_POWER_LIMIT, g->power_limit),
		"enforced_limit_mw", u(g, GC_V_POWER_ENFORCED, g->power_enforced),
		"default_limit_mw", u(g, GC_V_POWER_DEFAULT, g->power_default),
		"min_limit_mw", u(g, GC_V_POWER_MIN, g->power_min),
		"max_limit_mw", u(g, GC_V_POWER_MAX, g->power_max)));
	json_object_set_new(o, "clocks", json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
		"graphics_mhz", u(g, GC_V_CLK_GR, g->clk_gr),
		"sm_mhz", u(g, GC_V_CLK_SM, g->clk_sm),
		"memory_mhz", u(g, GC_V_CLK_MEM, g->clk_mem),
		"video_mhz", u(g, GC_V_CLK_VIDEO, g->clk_video),
		"max_graphics_mhz", u(g, GC_V_CLK_MAX_GR, g->clk_max_gr),
		"max_sm_mhz", u(g, GC_V_CLK_MAX_SM, g->clk_max_sm),
		"max_memory_mhz", u(g, GC_V_CLK_MAX_MEM, g->clk_max_mem)));
	json_object_set_new(o, "clock_event_reasons", reasons(g));
	json_object_set_new(o, "ecc", json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}",
		"mode_current", b(g, GC_V_ECC_MODE, g->ecc_mode),
		"mode_pending", b(g, GC_V_ECC_PENDING, g->ecc_pending),
		"corrected_volatile", u(g, GC_V_ECC_CORR_VOL, g->ecc_corr_vol),
		"uncorrected_volatile", u(g, GC_V_ECC_UNCORR_VOL, g->ecc_uncorr_vol),
		"corrected_aggregate", u(g, GC_V_ECC_CORR_AGG, g->ecc_corr_agg),
		"uncorrected_aggregate", u(g, GC_V_ECC_UNCORR_AGG, g->ecc_uncorr_agg)));
	json_object_set_new(o, "persistence_mode", b(g, GC_V_PERSISTENCE, g->persistence));
	json_object_set_new(o, "compute_mode", s(g, GC_V_COMPUTE_MODE, gc_compute_mode_name(g->compute_mode)));
	char ps[8];
	snprintf(ps, sizeof ps, "P%u", g->pstate & 0xffu);
	json_object_set_new(o, "pstate", s(g, GC_V_PSTATE, ps));
	json_object_set_new(o, "mig", json_pack("{s:o, s:o}",
		"current", b(g, GC_V_MIG_CURRENT, g->mig_current),
		"pending", b(g, GC_V_MIG_PENDING, g->mig_pending)));
	json_object_set_new(o, "pcie", json_pack("{s:o, s:o, s:o, s:o}",
		"gen", u(g, GC_V_PCIE_GEN, g->pcie_gen),
		"max_gen", u(g, GC_V_PCIE_GEN_MAX, g->pcie_gen_max),
		"width", u(g, GC_V_PCIE_WIDTH, g->pcie_width),
		"max_width", u(g, GC_V_PCIE_WIDTH_MAX, g->pcie_width_max)));
	json_object_set_new(o, "energy_mj", u(g, GC_V_ENERGY, g->energy_mj));
	char cc[24];
	snprintf(cc, sizeof cc, "%d.%d", g->cc_major, g->cc_minor);
	json_object_set_new(o, "compute_capability", s(g, GC_V_COMPUTE_CAP, cc));
	json_object_set_new(o, "processes", procs(g));

	json_t *errors = json_object();
	for (int v = 0; v < GC_V__COUNT; v++)
		if (g->st[v] != GC_ST_OK && g->st[v] != GC_ST_NOT_SUPPORTED && g->st[v] != GC_ST_UNSET)
			json_object_set_new(errors, value_names[v], json_string(gc_status_token(g->st[v])));
	json_object_set_new(o, "errors", errors);
	json_object_set_new(o, "lost", json_boolean(g->lost));
	return o;
}

char *gc_snapshot_json(const gc_snapshot *snap, const bool *which, const char *hostname)
{
	json_t *root = json_object();
	if (!root)
		return NULL;
	char ts[40];
	time_t t = (time_t)(snap->time_ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	size_t w = strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(ts + w, sizeof ts - w, ".%03dZ", (int)(snap->time_ms % 1000));
	json_object_set_new(root, "schema", json_string("gpuctl.snapshot/1"));
	json_object_set_new(root, "hostname", hostname ? json_string(hostname) : json_null());
	json_object_set_new(root, "timestamp", json_string(ts));
	char cuda[16];
	snprintf(cuda, sizeof cuda, "%d.%d", snap->cuda_version / 1000, (snap->cuda_version % 1000) / 10);
	json_object_set_new(root, "driver", json_pack("{s:o, s:o, s:o}",
		"version", snap->driver_version[0] ? json_string(snap->driver_version) : json_null(),
		"nvml_version", snap->nvml_version[0] ? json_string(snap->nvml_version) : json_null(),
		"cuda_version", snap->cuda_version > 0 ? json_string(cuda) : json_null()));
	json_t *gpus = json_array();
	for (size_t i = 0; i < snap->ngpus; i++)
		if (!which || which[i])
			json_array_append_new(gpus, gpu_json(&snap->gpus[i]));
	json_object_set_new(root, "gpus", gpus);
	if (snap->topo) {
		json_t *m = json_array();
		for (size_t a = 0; a < snap->ngpus; a++) {
			if (which && !which[a])
				continue;
			json_t *row = json_array();
			for (size_t b2 = 0; b2 < snap->ngpus; b2++)
				if (!which || which[b2])
					json_array_append_new(row,
						json_string(gc_topo_name(snap->topo[a * snap->ngpus + b2])));
			json_array_append_new(m, row);
		}
		json_object_set_new(root, "topology", m);
	} else {
		json_object_set_new(root, "topology", json_null());
	}
	char *out = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(root);
	return out;
}
