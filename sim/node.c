/*
 * node.c — loads a simulated node description (JSON, see docs/sim.md) into
 * the structs of sim.h.
 *
 * The node is parsed once per nvmlInit, never per call, and strictly: a
 * wrong type, an out-of-range value or an unknown key fails initialisation
 * with a one-line message naming the file and the JSON path, so a typo in a
 * test node cannot silently turn into a default. Keys starting with '_' are
 * comments and ignored. A metric given as null becomes "not supported"; a
 * missing key gets the documented default.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "sim.h"

#define NODE_MAX_BYTES (64L * 1024 * 1024)
#define NODE_MAX_GPUS 4096
#define NODE_MAX_PROCS 65536
#define PATH_LEN 96

struct ld {
	const char *file; /* basename of the node file, for messages */
	char *err;
	size_t errlen;
	json_t *empty; /* stands in for a missing section: every key defaults */
};

static const struct sim_val NA = { 0, false };

static struct sim_val V(uint64_t v)
{
	struct sim_val r = { v, true };
	return r;
}

__attribute__((format(printf, 4, 5))) static int fail(struct ld *ld, const char *path,
						       const char *key, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(ld->err, ld->errlen, "%s: %s%s%s: %s", ld->file, path,
		 (path[0] && key) ? "." : "", key ? key : "", msg);
	return -1;
}

/* JSON paths are for messages only: a truncated one is still useful */
static void subpath(char *buf, size_t len, const char *path, const char *key)
{
	size_t n = 0;

	for (; *path && n + 1 < len; path++)
		buf[n++] = *path;
	if (n && n + 1 < len)
		buf[n++] = '.';
	for (; *key && n + 1 < len; key++)
		buf[n++] = *key;
	buf[n] = '\0';
}

static bool key_in(const char *key, const char *const *keys)
{
	for (; *keys; keys++)
		if (strcmp(*keys, key) == 0)
			return true;
	return false;
}

static int check_keys(struct ld *ld, const char *path, json_t *obj, const char *const *keys)
{
	const char *key;
	json_t *v;

	json_object_foreach(obj, key, v) {
		(void)v;
		if (key[0] == '_' || key_in(key, keys))
			continue;
		return fail(ld, path, key, "unknown key");
	}
	return 0;
}

/*
 * *out: the object; ld->empty when the key is missing (defaults apply); NULL
 * when the key or the parent is null (everything inside is not supported).
 */
static int get_section(struct ld *ld, const char *path, json_t *obj, const char *key,
		       const char *const *keys, json_t **out)
{
	json_t *v;
	char sub[PATH_LEN];

	*out = NULL;
	if (!obj)
		return 0;
	v = json_object_get(obj, key);
	if (!v) {
		*out = ld->empty;
		return 0;
	}
	if (json_is_null(v))
		return 0;
	if (!json_is_object(v))
		return fail(ld, path, key, "expected an object or null");
	subpath(sub, sizeof(sub), path, key);
	if (check_keys(ld, sub, v, keys) < 0)
		return -1;
	*out = v;
	return 0;
}

static int get_uint(struct ld *ld, const char *path, json_t *obj, const char *key,
		    struct sim_val def, uint64_t max, struct sim_val *out)
{
	json_t *v;
	json_int_t x;

	*out = NA;
	if (!obj)
		return 0;
	v = json_object_get(obj, key);
	if (!v) {
		*out = def;
		return 0;
	}
	if (json_is_null(v))
		return 0;
	if (!json_is_integer(v))
		return fail(ld, path, key, "expected an integer or null");
	x = json_integer_value(v);
	if (x < 0 || (uint64_t)x > max)
		return fail(ld, path, key, "%lld is out of range (0 to %llu)", (long long)x,
			    (unsigned long long)max);
	*out = V((uint64_t)x);
	return 0;
}

static int get_bool(struct ld *ld, const char *path, json_t *obj, const char *key, struct sim_val def,
		    struct sim_val *out)
{
	json_t *v;

	*out = NA;
	if (!obj)
		return 0;
	v = json_object_get(obj, key);
	if (!v) {
		*out = def;
		return 0;
	}
	if (json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return fail(ld, path, key, "expected true, false or null");
	*out = V(json_is_true(v) ? 1 : 0);
	return 0;
}

/* *out: an owned copy, or NULL for null; def may be NULL. */
static int get_str(struct ld *ld, const char *path, json_t *obj, const char *key, const char *def,
		   size_t maxlen, char **out)
{
	json_t *v;
	const char *s;

	*out = NULL;
	if (!obj)
		return 0;
	v = json_object_get(obj, key);
	if (!v)
		s = def;
	else if (json_is_null(v))
		s = NULL;
	else if (!json_is_string(v))
		return fail(ld, path, key, "expected a string or null");
	else
		s = json_string_value(v);
	if (!s)
		return 0;
	if (strlen(s) > maxlen)
		return fail(ld, path, key, "longer than %zu characters", maxlen);
	*out = strdup(s);
	if (!*out)
		return fail(ld, path, key, "out of memory");
	return 0;
}

/* A 32-bit PCI id, as an integer or a string such as "0x233010DE". */
static int get_id(struct ld *ld, const char *path, json_t *obj, const char *key, unsigned int def,
		  unsigned int *out)
{
	json_t *v = json_object_get(obj, key);
	const char *s;
	char *end;
	unsigned long long x;

	*out = def;
	if (!v)
		return 0;
	if (json_is_integer(v)) {
		if (json_integer_value(v) < 0 || json_integer_value(v) > (json_int_t)UINT32_MAX)
			return fail(ld, path, key, "out of range (0 to 0xFFFFFFFF)");
		*out = (unsigned int)json_integer_value(v);
		return 0;
	}
	if (!json_is_string(v))
		return fail(ld, path, key, "expected an integer or a hex string such as \"0x233010DE\"");
	s = json_string_value(v);
	errno = 0;
	x = strtoull(s, &end, 0);
	if (!s[0] || s[0] == '-' || *end || errno || x > UINT32_MAX)
		return fail(ld, path, key, "'%s' is not a 32-bit id such as \"0x233010DE\"", s);
	*out = (unsigned int)x;
	return 0;
}

static int parse_faults(struct ld *ld, const char *path, json_t *obj, struct sim_faults *out)
{
	static const char *const fault_keys[] = { "error", "after", NULL };
	json_t *f = json_object_get(obj, "faults");
	const char *fn;
	json_t *val;
	char sub[PATH_LEN];

	out->v = NULL;
	out->n = 0;
	if (!f || json_is_null(f))
		return 0;
	if (!json_is_object(f))
		return fail(ld, path, "faults", "expected an object");
	subpath(sub, sizeof(sub), path, "faults");
	out->v = calloc(json_object_size(f) + 1, sizeof(*out->v));
	if (!out->v)
		return fail(ld, path, "faults", "out of memory");
	json_object_foreach(f, fn, val) {
		const char *ename = NULL;
		json_int_t after = 0;
		int code;

		if (fn[0] == '_')
			continue;
		if (!sim_is_known_function(fn))
			return fail(ld, sub, fn, "unknown NVML function");
		if (json_is_string(val)) {
			ename = json_string_value(val);
		} else if (json_is_object(val)) {
			json_t *e = json_object_get(val, "error");
			json_t *a = json_object_get(val, "after");
			char fsub[PATH_LEN * 2];

			snprintf(fsub, sizeof(fsub), "%s.%s", sub, fn);
			if (check_keys(ld, fsub, val, fault_keys) < 0)
				return -1;
			if (!json_is_string(e))
				return fail(ld, fsub, "error", "expected an error name such as \"GPU_IS_LOST\"");
			ename = json_string_value(e);
			if (a && !json_is_null(a)) {
				if (!json_is_integer(a) || json_integer_value(a) < 0)
					return fail(ld, fsub, "after", "expected a non-negative integer");
				after = json_integer_value(a);
			}
		} else {
			return fail(ld, sub, fn, "expected an error name or {\"error\": NAME, \"after\": N}");
		}
		code = sim_error_from_name(ename);
		if (code < 0)
			return fail(ld, sub, fn, "unknown error name '%s'", ename);
		out->v[out->n].fn = strdup(fn);
		if (!out->v[out->n].fn)
			return fail(ld, sub, fn, "out of memory");
		out->v[out->n].error = code;
		out->v[out->n].after = (unsigned long long)after;
		out->n++;
	}
	return 0;
}

/* GPU-level faults win; node-level ones are copied in with their own count. */
static int inherit_faults(struct sim_faults *gpu, const struct sim_faults *node)
{
	struct sim_fault *v;

	if (!node->n)
		return 0;
	v = realloc(gpu->v, (gpu->n + node->n) * sizeof(*v));
	if (!v)
		return -1;
	gpu->v = v;
	for (size_t i = 0; i < node->n; i++) {
		bool have = false;

		for (size_t j = 0; j < gpu->n && !have; j++)
			have = strcmp(gpu->v[j].fn, node->v[i].fn) == 0;
		if (have)
			continue;
		gpu->v[gpu->n] = node->v[i];
		gpu->v[gpu->n].calls = 0;
		gpu->v[gpu->n].fn = strdup(node->v[i].fn);
		if (!gpu->v[gpu->n].fn)
			return -1;
		gpu->n++;
	}
	return 0;
}

static int parse_processes(struct ld *ld, const char *path, json_t *obj, struct nvmlDevice_st *g)
{
	static const char *const proc_keys[] = { "pid", "used_memory", "type", "gpu_instance_id",
						 "compute_instance_id", "user", "command", "sm_util",
						 "mem_util", NULL };
	json_t *a = json_object_get(obj, "processes");
	bool mig = g->mig_current.ok && g->mig_current.v;
	size_t i;
	json_t *p;

	g->procs_ok = !a || !json_is_null(a);
	if (!a || !g->procs_ok)
		return 0;
	if (!json_is_array(a))
		return fail(ld, path, "processes", "expected an array or null");
	if (json_array_size(a) > NODE_MAX_PROCS)
		return fail(ld, path, "processes", "more than %d entries", NODE_MAX_PROCS);
	g->procs = calloc(json_array_size(a) + 1, sizeof(*g->procs));
	if (!g->procs)
		return fail(ld, path, "processes", "out of memory");
	json_array_foreach(a, i, p) {
		char sub[PATH_LEN + 40];
		struct sim_val pid, mem, gi, ci;
		struct sim_proc *pr = &g->procs[g->nprocs];
		json_t *t;

		snprintf(sub, sizeof(sub), "%s.processes[%zu]", path, i);
		if (!json_is_object(p))
			return fail(ld, sub, NULL, "expected an object");
		if (check_keys(ld, sub, p, proc_keys) < 0)
			return -1;
		if (!json_object_get(p, "pid"))
			return fail(ld, sub, "pid", "missing");
		if (get_uint(ld, sub, p, "pid", NA, INT_MAX, &pid) < 0)
			return -1;
		if (!pid.ok || pid.v == 0)
			return fail(ld, sub, "pid", "expected a positive integer");
		if (get_uint(ld, sub, p, "used_memory", NA, INT64_MAX, &mem) < 0 ||
		    get_uint(ld, sub, p, "gpu_instance_id", V(mig ? 0 : 0xFFFFFFFFu), UINT32_MAX, &gi) < 0 ||
		    get_uint(ld, sub, p, "compute_instance_id", V(mig ? 0 : 0xFFFFFFFFu), UINT32_MAX, &ci) < 0)
			return -1;
		struct sim_val sm, mu;
		if (get_uint(ld, sub, p, "sm_util", NA, 100, &sm) < 0 || get_uint(ld, sub, p, "mem_util", NA, 100, &mu) < 0)
			return -1;
		pr->sm_util = sm.ok ? (int)sm.v : -1;
		pr->mem_util = mu.ok ? (int)mu.v : -1;
		pr->pid = (unsigned int)pid.v;
		pr->used_memory = mem.ok ? mem.v : NVML_VALUE_NOT_AVAILABLE_ULL;
		pr->gpu_instance_id = gi.ok ? (unsigned int)gi.v : 0xFFFFFFFFu;
		pr->compute_instance_id = ci.ok ? (unsigned int)ci.v : 0xFFFFFFFFu;
		/* who runs it and what: for gpuctl's display only (NVML has no such call), which
		 * libgpuctl asks for with gpuctlSimProcessText */
		static const char *const texts[] = {"user", "command"};
		const char **dst[] = {&pr->user, &pr->command};
		for (size_t k = 0; k < 2; k++) {
			json_t *v = json_object_get(p, texts[k]);
			if (v && (!json_is_string(v) || !*json_string_value(v) ||
				  json_string_length(v) > (k ? 255u : 32u)))
				return fail(ld, sub, texts[k], "expected a non-empty string of at most %u bytes",
					    k ? 255u : 32u);
			if (v && !(*dst[k] = strdup(json_string_value(v))))
				return fail(ld, sub, texts[k], "out of memory");
		}
		pr->type = SIM_PROC_COMPUTE;
		t = json_object_get(p, "type");
		if (t) {
			const char *ts = json_is_string(t) ? json_string_value(t) : "";

			if (strcmp(ts, "compute") == 0)
				pr->type = SIM_PROC_COMPUTE;
			else if (strcmp(ts, "graphics") == 0)
				pr->type = SIM_PROC_GRAPHICS;
			else if (strcmp(ts, "compute+graphics") == 0)
				pr->type = SIM_PROC_COMPUTE | SIM_PROC_GRAPHICS;
			else
				return fail(ld, sub, "type",
					    "expected \"compute\", \"graphics\" or \"compute+graphics\"");
		}
		g->nprocs++;
	}
	return 0;
}

static int parse_topology(struct ld *ld, const char *path, json_t *obj, struct nvmlDevice_st *g)
{
	static const char *const keys[] = { "numa_node", "host_bridge", "pcie_root", "pcie_switch",
					    NULL };
	json_t *t;
	char sub[PATH_LEN];

	for (int i = 0; i < SIM_TOPO_N; i++)
		g->topo[i] = -1;
	if (get_section(ld, path, obj, "topology", keys, &t) < 0)
		return -1;
	if (!t)
		return 0;
	subpath(sub, sizeof(sub), path, "topology");
	for (int i = 0; i < SIM_TOPO_N; i++) {
		struct sim_val v;

		if (get_uint(ld, sub, t, keys[i], NA, INT32_MAX, &v) < 0)
			return -1;
		if (v.ok)
			g->topo[i] = (long long)v.v;
	}
	return 0;
}

#define NODE_MAX_MIG 64

/* mig.devices: only on a GPU in MIG mode, at most mig.max_devices of them */
static int parse_migs(struct ld *ld, const char *path, json_t *mig, struct nvmlDevice_st *g)
{
	static const char *const keys[] = { "uuid", "profile", "memory", "gpu_instance_id",
					    "compute_instance_id", NULL };
	static const char *const mem_keys[] = { "total", "used", NULL };
	json_t *a = mig ? json_object_get(mig, "devices") : NULL, *d;
	size_t i;

	if (!a)
		return 0;
	if (!json_is_array(a))
		return fail(ld, path, "devices", "expected an array");
	if (json_array_size(a) && !(g->mig_current.ok && g->mig_current.v))
		return fail(ld, path, "devices", "MIG devices need \"current\": true");
	if (json_array_size(a) > (g->mig_max.ok ? g->mig_max.v : 0))
		return fail(ld, path, "devices", "more than max_devices (%llu)",
			    (unsigned long long)g->mig_max.v);
	g->migs = calloc(json_array_size(a) + 1, sizeof(*g->migs));
	if (!g->migs)
		return fail(ld, path, "devices", "out of memory");
	json_array_foreach(a, i, d) {
		struct sim_mig *m = &g->migs[g->nmig];
		char sub[PATH_LEN + 40], msub[PATH_LEN + 48], def[64];
		struct sim_val t, u, gi, ci;
		json_t *mem;
		size_t nl;

		snprintf(sub, sizeof(sub), "%s.devices[%zu]", path, i);
		if (!json_is_object(d))
			return fail(ld, sub, NULL, "expected an object");
		if (check_keys(ld, sub, d, keys) < 0)
			return -1;
		g->nmig++; /* freed with the node from here on */
		m->parent = g;
		snprintf(def, sizeof(def), "MIG-5e4d0000-0000-5000-8000-%06x%06zx", g->index, i);
		if (get_str(ld, sub, d, "uuid", def, 79, &m->uuid) < 0 ||
		    get_str(ld, sub, d, "profile", NULL, 31, &m->profile) < 0)
			return -1;
		if (!m->uuid)
			return fail(ld, sub, "uuid", "expected a string");
		if (!m->profile || !m->profile[0])
			return fail(ld, sub, "profile", "expected a profile name such as \"1g.10gb\"");
		mem = json_object_get(d, "memory");
		if (!json_is_object(mem))
			return fail(ld, sub, "memory", "expected an object with \"total\"");
		if (check_keys(ld, sub, mem, mem_keys) < 0)
			return -1;
		subpath(msub, sizeof(msub), sub, "memory");
		if (get_uint(ld, msub, mem, "total", NA, INT64_MAX, &t) < 0 ||
		    get_uint(ld, msub, mem, "used", V(0), INT64_MAX, &u) < 0)
			return -1;
		if (!t.ok)
			return fail(ld, msub, "total", "expected an integer (bytes)");
		if (!u.ok || u.v > t.v)
			return fail(ld, msub, "used", "expected an integer (bytes) at most total");
		if (get_uint(ld, sub, d, "gpu_instance_id", V(i), UINT32_MAX - 1, &gi) < 0 ||
		    get_uint(ld, sub, d, "compute_instance_id", V(0), UINT32_MAX - 1, &ci) < 0)
			return -1;
		if (!gi.ok || !ci.ok)
			return fail(ld, sub, !gi.ok ? "gpu_instance_id" : "compute_instance_id",
				    "expected an integer");
		m->mem_total = t.v;
		m->mem_used = u.v;
		m->gpu_instance_id = (unsigned int)gi.v;
		m->compute_instance_id = (unsigned int)ci.v;
		nl = strlen(g->name ? g->name : "") + strlen(m->profile) + 6;
		m->name = malloc(nl);
		if (!m->name)
			return fail(ld, sub, NULL, "out of memory");
		snprintf(m->name, nl, "%s MIG %s", g->name ? g->name : "", m->profile);
		for (unsigned int k = 0; k + 1 < g->nmig; k++) {
			const struct sim_mig *o = &g->migs[k];

			if (strcmp(o->uuid, m->uuid) == 0)
				return fail(ld, sub, "uuid", "same as devices[%u].uuid", k);
			if (o->gpu_instance_id == m->gpu_instance_id &&
			    o->compute_instance_id == m->compute_instance_id)
				return fail(ld, sub, "compute_instance_id",
					    "devices[%u] has the same GPU and compute instance", k);
		}
	}
	return 0;
}

static int parse_gpu(struct ld *ld, json_t *o, unsigned int index, struct nvmlDevice_st *g)
{
	static const char *const gpu_keys[] = {
		"name", "uuid", "serial", "vbios_version", "pci", "memory", "utilization",
		"temperature", "fan", "power", "clocks", "throttle_reasons",
		"supported_throttle_reasons", "ecc", "persistence_mode", "compute_mode", "pstate",
		"mig", "pcie", "energy_mj", "compute_capability", "topology", "processes", "faults",
		"retired_pages", "remapped_rows", "vary", NULL
	};
	static const char *const pci_keys[] = { "domain", "bus", "device", "device_id",
						"subsystem_id", NULL };
	static const char *const mem_keys[] = { "total", "reserved", "used", NULL };
	static const char *const util_keys[] = { "gpu", "memory", NULL };
	static const char *const power_keys[] = { "draw_mw", "limit_mw", "enforced_limit_mw",
						  "default_limit_mw", "min_limit_mw",
						  "max_limit_mw", NULL };
	static const char *const clock_keys[] = { "graphics", "sm", "memory", "video",
						  "max_graphics", "max_sm", "max_memory",
						  "max_video", NULL };
	static const char *const ecc_keys[] = { "current", "pending", "corrected_volatile",
						"uncorrected_volatile", "corrected_aggregate",
						"uncorrected_aggregate", NULL };
	static const char *const mig_keys[] = { "current", "pending", "max_devices", "devices", NULL };
	static const char *const retired_keys[] = { "pending", NULL };
	static const char *const remap_keys[] = { "correctable", "uncorrectable", "pending", "failure",
						   NULL };
	static const char *const pcie_keys[] = { "gen", "max_gen", "width", "max_width", NULL };
	char path[PATH_LEN], sub[PATH_LEN], def[64];
	json_t *s;
	struct sim_val x;

	snprintf(path, sizeof(path), "gpus[%u]", index);
	if (!json_is_object(o))
		return fail(ld, path, NULL, "expected an object");
	if (check_keys(ld, path, o, gpu_keys) < 0)
		return -1;
	g->index = index;

	if (get_str(ld, path, o, "name", "NVIDIA Simulated GPU", 95, &g->name) < 0)
		return -1;
	snprintf(def, sizeof(def), "GPU-5e4d0000-0000-4000-8000-%012x", index);
	if (get_str(ld, path, o, "uuid", def, 79, &g->uuid) < 0)
		return -1;
	snprintf(def, sizeof(def), "13240%08u", index);
	if (get_str(ld, path, o, "serial", def, 29, &g->serial) < 0 ||
	    get_str(ld, path, o, "vbios_version", "00.00.00.00.00", 31, &g->vbios) < 0)
		return -1;

	/* pci */
	if (get_section(ld, path, o, "pci", pci_keys, &s) < 0)
		return -1;
	g->pci_ok = s != NULL;
	if (s) {
		subpath(sub, sizeof(sub), path, "pci");
		if (get_uint(ld, sub, s, "domain", V(index / 255), UINT32_MAX, &x) < 0)
			return -1;
		g->domain = (unsigned int)x.v;
		if (get_uint(ld, sub, s, "bus", V(1 + index % 255), 255, &x) < 0)
			return -1;
		g->bus = (unsigned int)x.v;
		if (get_uint(ld, sub, s, "device", V(0), 31, &x) < 0)
			return -1;
		g->device = (unsigned int)x.v;
		if (get_id(ld, sub, s, "device_id", 0x000010DEu, &g->device_id) < 0 ||
		    get_id(ld, sub, s, "subsystem_id", 0x000010DEu, &g->subsystem_id) < 0)
			return -1;
	}

	/* memory */
	if (get_section(ld, path, o, "memory", mem_keys, &s) < 0)
		return -1;
	subpath(sub, sizeof(sub), path, "memory");
	{
		struct sim_val t, r, u;

		if (get_uint(ld, sub, s, "total", V(17179869184ULL), INT64_MAX, &t) < 0 ||
		    get_uint(ld, sub, s, "reserved", V(0), INT64_MAX, &r) < 0 ||
		    get_uint(ld, sub, s, "used", V(0), INT64_MAX, &u) < 0)
			return -1;
		g->mem_ok = t.ok && r.ok && u.ok;
		g->mem_total = t.v;
		g->mem_reserved = r.v;
		g->mem_used = u.v;
	}

	/* utilization */
	if (get_section(ld, path, o, "utilization", util_keys, &s) < 0)
		return -1;
	subpath(sub, sizeof(sub), path, "utilization");
	if (get_uint(ld, sub, s, "gpu", V(0), 100, &g->util_gpu) < 0 ||
	    get_uint(ld, sub, s, "memory", V(0), 100, &g->util_mem) < 0)
		return -1;

	/* vary: load, power and temperature follow a wave, for demos and sparklines */
	static const char *const vary_keys[] = {"period_s", "amplitude", NULL};
	struct sim_val per, amp;
	if (get_section(ld, path, o, "vary", vary_keys, &s) < 0)
		return -1;
	subpath(sub, sizeof(sub), path, "vary");
	if (get_uint(ld, sub, s, "period_s", V(60), 86400, &per) < 0 ||
	    get_uint(ld, sub, s, "amplitude", V(30), 100, &amp) < 0)
		return -1;
	if (json_object_get(o, "vary") && s && per.ok && per.v > 0) {
		g->vary_period_s = (unsigned int)per.v;
		g->vary_amplitude = amp.ok ? (unsigned int)amp.v : 0;
	}

	if (get_uint(ld, path, o, "temperature", V(30), 200, &g->temperature) < 0 ||
	    get_uint(ld, path, o, "fan", NA, 100, &g->fan) < 0)
		return -1;

	/* power */
	if (get_section(ld, path, o, "power", power_keys, &s) < 0)
		return -1;
	subpath(sub, sizeof(sub), path, "power");
	if (get_uint(ld, sub, s, "draw_mw", V(50000), UINT32_MAX, &g->power_draw) < 0 ||
	    get_uint(ld, sub, s, "limit_mw", V(250000), UINT32_MAX, &g->power_limit) < 0 ||
	    get_uint(ld, sub, s, "enforced_limit_mw", g->power_limit, UINT32_MAX,
		     &g->power_enforced) < 0 ||
	    get_uint(ld, sub, s, "default_limit_mw", g->power_limit, UINT32_MAX,
		     &g->power_default) < 0 ||
	    get_uint(ld, sub, s, "min_limit_mw", g->power_limit.ok ? V(g->power_limit.v / 2) : NA,
		     UINT32_MAX, &g->power_min) < 0 ||
	    get_uint(ld, sub, s, "max_limit_mw", g->power_limit, UINT32_MAX, &g->power_max) < 0)
		return -1;

	/* clocks: sm defaults to graphics, max_video to video */
	if (get_section(ld, path, o, "clocks", clock_keys, &s) < 0)
		return -1;
	subpath(sub, sizeof(sub), path, "clocks");
	if (get_uint(ld, sub, s, "graphics", V(210), UINT32_MAX, &g->clock[NVML_CLOCK_GRAPHICS]) < 0 ||
	    get_uint(ld, sub, s, "sm", g->clock[NVML_CLOCK_GRAPHICS], UINT32_MAX,
		     &g->clock[NVML_CLOCK_SM]) < 0 ||
	    get_uint(ld, sub, s, "memory", V(1215), UINT32_MAX, &g->clock[NVML_CLOCK_MEM]) < 0 ||
	    get_uint(ld, sub, s, "video", V(555), UINT32_MAX, &g->clock[NVML_CLOCK_VIDEO]) < 0 ||
	    get_uint(ld, sub, s, "max_graphics", V(1410), UINT32_MAX,
		     &g->max_clock[NVML_CLOCK_GRAPHICS]) < 0 ||
	    get_uint(ld, sub, s, "max_sm", g->max_clock[NVML_CLOCK_GRAPHICS], UINT32_MAX,
		     &g->max_clock[NVML_CLOCK_SM]) < 0 ||
	    get_uint(ld, sub, s, "max_memory", g->clock[NVML_CLOCK_MEM], UINT32_MAX,
		     &g->max_clock[NVML_CLOCK_MEM]) < 0 ||
	    get_uint(ld, sub, s, "max_video", V(1290), UINT32_MAX,
		     &g->max_clock[NVML_CLOCK_VIDEO]) < 0)
		return -1;

	if (get_uint(ld, path, o, "throttle_reasons", V(0), UINT64_MAX >> 1, &g->throttle) < 0 ||
	    get_uint(ld, path, o, "supported_throttle_reasons", V(0x1FF), UINT64_MAX >> 1,
		     &g->supported_throttle) < 0)
		return -1;

	/* ecc */
	if (get_section(ld, path, o, "ecc", ecc_keys, &s) < 0)
		return -1;
	subpath(sub, sizeof(sub), path, "ecc");
	if (get_bool(ld, sub, s, "current", V(0), &g->ecc_current) < 0 ||
	    get_bool(ld, sub, s, "pending", g->ecc_current, &g->ecc_pending) < 0 ||
	    get_uint(ld, sub, s, "corrected_volatile", V(0), INT64_MAX,
		     &g->ecc_count[NVML_MEMORY_ERROR_TYPE_CORRECTED][NVML_VOLATILE_ECC]) < 0 ||
	    get_uint(ld, sub, s, "uncorrected_volatile", V(0), INT64_MAX,
		     &g->ecc_count[NVML_MEMORY_ERROR_TYPE_UNCORRECTED][NVML_VOLATILE_ECC]) < 0 ||
	    get_uint(ld, sub, s, "corrected_aggregate", V(0), INT64_MAX,
		     &g->ecc_count[NVML_MEMORY_ERROR_TYPE_CORRECTED][NVML_AGGREGATE_ECC]) < 0 ||
	    get_uint(ld, sub, s, "uncorrected_aggregate", V(0), INT64_MAX,
		     &g->ecc_count[NVML_MEMORY_ERROR_TYPE_UNCORRECTED][NVML_AGGREGATE_ECC]) < 0)
		return -1;

	if (get_bool(ld, path, o, "persistence_mode", V(0), &g->persistence) < 0 ||
	    get_uint(ld, path, o, "compute_mode", V(0), 3, &g->compute_mode) < 0 ||
	    get_uint(ld, path, o, "pstate", V(0), NVML_PSTATE_UNKNOWN, &g->pstate) < 0)
		return -1;
	if (g->pstate.ok && g->pstate.v > 15 && g->pstate.v != NVML_PSTATE_UNKNOWN)
		return fail(ld, path, "pstate", "expected 0 to 15, or 32 (unknown)");

	/* mig */
	if (get_section(ld, path, o, "mig", mig_keys, &s) < 0)
		return -1;
	subpath(sub, sizeof(sub), path, "mig");
	if (get_bool(ld, sub, s, "current", V(0), &g->mig_current) < 0 ||
	    get_bool(ld, sub, s, "pending", g->mig_current, &g->mig_pending) < 0 ||
	    get_uint(ld, sub, s, "max_devices", V(7), NODE_MAX_MIG, &g->mig_max) < 0 ||
	    parse_migs(ld, sub, s, g) < 0)
		return -1;

	/* pcie */
	if (get_section(ld, path, o, "pcie", pcie_keys, &s) < 0)
		return -1;
	subpath(sub, sizeof(sub), path, "pcie");
	if (get_uint(ld, sub, s, "gen", V(4), 16, &g->pcie_gen) < 0 ||
	    get_uint(ld, sub, s, "max_gen", g->pcie_gen, 16, &g->pcie_max_gen) < 0 ||
	    get_uint(ld, sub, s, "width", V(16), 32, &g->pcie_width) < 0 ||
	    get_uint(ld, sub, s, "max_width", g->pcie_width, 32, &g->pcie_max_width) < 0)
		return -1;

	if (get_uint(ld, path, o, "energy_mj", V(0), INT64_MAX, &g->energy) < 0)
		return -1;

	/* retired_pages (Kepler to Turing), remapped_rows (Ampere and newer) */
	if (get_section(ld, path, o, "retired_pages", retired_keys, &s) < 0)
		return -1;
	subpath(sub, sizeof(sub), path, "retired_pages");
	if (get_bool(ld, sub, s, "pending", V(0), &g->retired_pending) < 0)
		return -1;
	if (get_section(ld, path, o, "remapped_rows", remap_keys, &s) < 0)
		return -1;
	subpath(sub, sizeof(sub), path, "remapped_rows");
	if (get_uint(ld, sub, s, "correctable", V(0), UINT32_MAX, &g->remap_corr) < 0 ||
	    get_uint(ld, sub, s, "uncorrectable", V(0), UINT32_MAX, &g->remap_uncorr) < 0 ||
	    get_bool(ld, sub, s, "pending", V(0), &g->remap_pending) < 0 ||
	    get_bool(ld, sub, s, "failure", V(0), &g->remap_failure) < 0)
		return -1;

	/* compute_capability: [major, minor] */
	{
		json_t *cc = json_object_get(o, "compute_capability");

		g->cc_major = V(8);
		g->cc_minor = V(0);
		if (cc && json_is_null(cc)) {
			g->cc_major = g->cc_minor = NA;
		} else if (cc) {
			json_t *ma = json_array_get(cc, 0), *mi = json_array_get(cc, 1);

			if (!json_is_array(cc) || json_array_size(cc) != 2 || !json_is_integer(ma) ||
			    !json_is_integer(mi) || json_integer_value(ma) < 0 ||
			    json_integer_value(ma) > 99 || json_integer_value(mi) < 0 ||
			    json_integer_value(mi) > 99)
				return fail(ld, path, "compute_capability",
					    "expected [major, minor] such as [9, 0], or null");
			g->cc_major = V((uint64_t)json_integer_value(ma));
			g->cc_minor = V((uint64_t)json_integer_value(mi));
		}
	}

	if (parse_topology(ld, path, o, g) < 0 || parse_processes(ld, path, o, g) < 0 ||
	    parse_faults(ld, path, o, &g->faults) < 0)
		return -1;
	return 0;
}

static const struct {
	const char *gen, *version, *nvml;
	int cuda;
} gen_defaults[] = {
	{ "modern", "550.54.14", "12.550.54.14", 12040 },
	{ "r535", "535.54.03", "12.535.54.03", 12020 },
	{ "legacy", "450.80.02", "11.450.80.02", 11000 },
	{ "r410", "410.93", "10.410.93", 10000 },
};

static int parse_driver(struct ld *ld, json_t *root, struct sim_node *n)
{
	static const char *const keys[] = { "version", "nvml_version", "cuda_version", "generation",
					    NULL };
	json_t *d;
	char *gen = NULL;
	size_t k;
	int rc = -1;

	if (get_section(ld, "", root, "driver", keys, &d) < 0)
		return -1;
	if (!d)
		return fail(ld, "", "driver", "expected an object");
	if (get_str(ld, "driver", d, "generation", sim_generation, 15, &gen) < 0)
		return -1;
	for (k = 0; k < sizeof(gen_defaults) / sizeof(gen_defaults[0]); k++)
		if (gen && strcmp(gen, gen_defaults[k].gen) == 0)
			break;
	if (k == sizeof(gen_defaults) / sizeof(gen_defaults[0])) {
		fail(ld, "driver", "generation", "expected \"modern\", \"r535\", \"legacy\" or \"r410\"");
		goto out;
	}
	snprintf(n->generation, sizeof n->generation, "%s", gen_defaults[k].gen);
	if (get_str(ld, "driver", d, "version", gen_defaults[k].version, 79, &n->driver_version) < 0 ||
	    get_str(ld, "driver", d, "nvml_version", gen_defaults[k].nvml, 79, &n->nvml_version) < 0 ||
	    get_uint(ld, "driver", d, "cuda_version", V((uint64_t)gen_defaults[k].cuda), INT_MAX,
		     &n->cuda_version) < 0)
		goto out;
	rc = 0;
out:
	free(gen);
	return rc;
}

static int check_unique(struct ld *ld, struct sim_node *n)
{
	for (unsigned int i = 0; i < n->ngpus; i++) {
		struct nvmlDevice_st *a = &n->gpus[i];

		for (unsigned int j = 0; j < i; j++) {
			struct nvmlDevice_st *b = &n->gpus[j];
			char path[PATH_LEN];

			snprintf(path, sizeof(path), "gpus[%u]", i);
			if (a->uuid && b->uuid && strcmp(a->uuid, b->uuid) == 0)
				return fail(ld, path, "uuid", "same as gpus[%u].uuid", j);
			if (a->pci_ok && b->pci_ok && a->domain == b->domain && a->bus == b->bus &&
			    a->device == b->device)
				return fail(ld, path, "pci", "same bus id as gpus[%u]", j);
		}
	}
	return 0;
}

/* n->rundir: where processes register, from the environment, the file's own value or the default */
static int resolve_rundir(struct ld *ld, const char *path, const char *field, struct sim_node *n)
{
	char dir[4096];
	bool is_default;
	if (sim_rundir_resolve(path, field, dir, sizeof(dir), &is_default) < 0) {
		fail(ld, "", "rundir", "path too long");
		return -1;
	}
	n->rundir = strdup(dir);
	if (!n->rundir) {
		fail(ld, "", "rundir", "out of memory");
		return -1;
	}
	return 0;
}

/* the node; *rundir_field (caller frees) is the file's own "rundir" value, or NULL */
static struct sim_node *parse_node(struct ld *ld, const char *path, json_t *root, char **rundir_field)
{
	static const char *const keys[] = { "name", "driver", "rundir", "faults", "gpus", NULL };
	struct sim_node *n;
	json_t *gpus, *g;
	char *rundir = NULL, *name = NULL;
	size_t i;

	if (!json_is_object(root)) {
		snprintf(ld->err, ld->errlen, "%s: expected a JSON object at the top level", ld->file);
		return NULL;
	}
	n = calloc(1, sizeof(*n));
	if (!n) {
		snprintf(ld->err, ld->errlen, "%s: out of memory", ld->file);
		return NULL;
	}
	if (check_keys(ld, "", root, keys) < 0 ||
	    get_str(ld, "", root, "name", NULL, 255, &name) < 0 ||
	    parse_driver(ld, root, n) < 0 ||
	    get_str(ld, "", root, "rundir", NULL, 4096 - 64, &rundir) < 0 ||
	    parse_faults(ld, "", root, &n->faults) < 0)
		goto fail;
	free(name);
	name = NULL;

	gpus = json_object_get(root, "gpus");
	if (!json_is_array(gpus)) {
		fail(ld, "", "gpus", "expected an array");
		goto fail;
	}
	if (json_array_size(gpus) > NODE_MAX_GPUS) {
		fail(ld, "", "gpus", "more than %d GPUs", NODE_MAX_GPUS);
		goto fail;
	}
	n->gpus = calloc(json_array_size(gpus) + 1, sizeof(*n->gpus));
	if (!n->gpus) {
		fail(ld, "", "gpus", "out of memory");
		goto fail;
	}
	json_array_foreach(gpus, i, g) {
		n->ngpus = (unsigned int)i + 1;
		if (parse_gpu(ld, g, (unsigned int)i, &n->gpus[i]) < 0)
			goto fail;
		if (inherit_faults(&n->gpus[i].faults, &n->faults) < 0) {
			fail(ld, "", "faults", "out of memory");
			goto fail;
		}
	}
	if (check_unique(ld, n) < 0)
		goto fail;

	if (resolve_rundir(ld, path, rundir, n) < 0)
		goto fail;
	*rundir_field = rundir;
	return n;
fail:
	free(name);
	free(rundir);
	sim_node_free(n);
	return NULL;
}

struct sim_node *sim_node_load(const char *path, char *err, size_t errlen)
{
	struct ld ld = { .err = err, .errlen = errlen };
	const char *slash = strrchr(path, '/');
	struct sim_node *n;
	struct stat st;
	json_error_t jerr;
	json_t *root;
	char *buf, *own_rundir = NULL;
	const char *rundir_field = NULL;
	size_t len = 0;
	int fd;

	ld.file = slash ? slash + 1 : path;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "cannot read node file '%s': %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > NODE_MAX_BYTES) {
		snprintf(err, errlen, "%s: not a regular file of at most %ld bytes", ld.file,
			 NODE_MAX_BYTES);
		close(fd);
		return NULL;
	}
	n = sim_node_cache_get(&st, &rundir_field);
	if (n) {
		close(fd);
		if (resolve_rundir(&ld, path, rundir_field, n) < 0) {
			sim_node_free(n);
			return NULL;
		}
		return n;
	}
	/* read whole, parsed from memory: json_loadf reads a character at a time */
	buf = malloc((size_t)st.st_size + 1);
	int rd_errno = buf ? 0 : ENOMEM;
	while (buf && len <= (size_t)st.st_size) {
		ssize_t got = read(fd, buf + len, (size_t)st.st_size + 1 - len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			rd_errno = errno;
		if (got <= 0)
			break;
		len += (size_t)got;
	}
	close(fd);
	if (rd_errno || len > (size_t)st.st_size) {
		if (rd_errno)
			snprintf(err, errlen, "cannot read node file '%s': %s", path, strerror(rd_errno));
		else
			snprintf(err, errlen, "%s: changed while it was read; try again", ld.file);
		free(buf);
		return NULL;
	}
	root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	free(buf);
	if (!root) {
		if (jerr.line > 0)
			snprintf(err, errlen, "%s: line %d: %s", ld.file, jerr.line, jerr.text);
		else
			snprintf(err, errlen, "%s: %s", ld.file, jerr.text);
		return NULL;
	}
	ld.empty = json_object();
	if (!ld.empty) {
		json_decref(root);
		snprintf(err, errlen, "%s: out of memory", ld.file);
		return NULL;
	}
	n = parse_node(&ld, path, root, &own_rundir);
	json_decref(ld.empty);
	json_decref(root);
	if (n)
		sim_node_cache_put(&st, n, own_rundir);
	free(own_rundir);
	return n;
}

void sim_node_free(struct sim_node *n)
{
	if (!n)
		return;
	if (n->blob) { /* the node and all it points to but rundir live in the block */
		free(n->rundir);
		free(n->blob);
		return;
	}
	for (unsigned int i = 0; i < n->ngpus; i++) {
		struct nvmlDevice_st *g = &n->gpus[i];

		free(g->name);
		free(g->uuid);
		free(g->serial);
		free(g->vbios);
		for (size_t k = 0; g->procs && k <= g->nprocs; k++) { /* calloc'ed one more: a half-parsed last */
			free((char *)g->procs[k].user);
			free((char *)g->procs[k].command);
		}
		free(g->procs);
		for (unsigned int k = 0; k < g->nmig; k++) {
			free(g->migs[k].uuid);
			free(g->migs[k].profile);
			free(g->migs[k].name);
		}
		free(g->migs);
		sim_faults_free(&g->faults);
	}
	free(n->gpus);
	sim_faults_free(&n->faults);
	free(n->driver_version);
	free(n->nvml_version);
	free(n->rundir);
	free(n);
}
