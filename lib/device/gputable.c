/*
 * gputable.c — the table of gputable.h: gpuctld's sample of each GPU, the
 * values of GPU_TABLE_MASK, each present when its status is GC_ST_OK and
 * else given as "st_<key>": its status.
 */
#include "device/gputable.h"
#include "util/clock.h"
#include "util/errbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum kind { STR, U64, U32, BOOL };

static const struct field {
	int v;            /* GC_V_* */
	const char *key;
	enum kind kind;
	size_t off, size; /* in gc_gpu */
} fields[] = {
	{GC_V_NAME, "name", STR, offsetof(gc_gpu, name), sizeof(((gc_gpu *)0)->name)},
	{GC_V_UUID, "uuid", STR, offsetof(gc_gpu, uuid), sizeof(((gc_gpu *)0)->uuid)},
	{GC_V_PCI, "bus_id", STR, offsetof(gc_gpu, bus_id), sizeof(((gc_gpu *)0)->bus_id)},
	{GC_V_MEM_TOTAL, "mem_total", U64, offsetof(gc_gpu, mem_total), 0},
	{GC_V_MEM_USED, "mem_used", U64, offsetof(gc_gpu, mem_used), 0},
	{GC_V_MEM_FREE, "mem_free", U64, offsetof(gc_gpu, mem_free), 0},
	{GC_V_UTIL_GPU, "util_gpu", U32, offsetof(gc_gpu, util_gpu), 0},
	{GC_V_MIG_CURRENT, "mig", BOOL, offsetof(gc_gpu, mig_current), 0},
};
#define NFIELDS (sizeof fields / sizeof fields[0])

json_t *gpu_table_json(const gc_snapshot *snap)
{
	json_t *gpus = json_array();
	json_t *o = json_pack("{s:b, s:I, s:s, s:s, s:i, s:o}", "ok", 1, "time_ms", (json_int_t)snap->time_ms, "driver",
			      snap->driver_version, "nvml", snap->nvml_version, "cuda", snap->cuda_version, "gpus", gpus);
	for (size_t i = 0; o && i < snap->ngpus && i < GPU_TABLE_MAX; i++) {
		const gc_gpu *g = &snap->gpus[i];
		json_t *j = json_pack("{s:I, s:b}", "index", (json_int_t)g->index, "lost", g->lost);
		if (!j || json_array_append_new(gpus, j) < 0) {
			json_decref(o);
			return NULL;
		}
		for (size_t f = 0; f < NFIELDS; f++) {
			const struct field *x = &fields[f];
			const char *p = (const char *)g + x->off;
			if (g->st[x->v] != GC_ST_OK) {
				char key[40];
				snprintf(key, sizeof key, "st_%s", x->key);
				json_object_set_new(j, key, json_integer(g->st[x->v]));
				continue;
			}
			json_t *val = x->kind == STR    ? json_string(p)
				      : x->kind == U64  ? json_integer((json_int_t) * (const uint64_t *)p)
				      : x->kind == U32  ? json_integer((json_int_t) * (const unsigned *)p)
							: json_boolean(*(const bool *)p);
			json_object_set_new(j, x->key, val);
		}
	}
	return o;
}

int gpu_table_read(const json_t *o, gc_snapshot *out, char *err, size_t errlen)
{
	gpu_snapshot_release(out);
	const json_t *gpus = json_object_get(o, "gpus");
	size_t n = json_array_size(gpus);
	if (!json_is_array(gpus) || n > GPU_TABLE_MAX) {
		errbuf_set(err, errlen, "gpuctld's GPU table is not a list of at most %d GPUs", GPU_TABLE_MAX);
		return GC_EINVAL;
	}
	if (!(out->gpus = calloc(n ? n : 1, sizeof *out->gpus))) {
		errbuf_set(err, errlen, "out of memory");
		return GC_ENOMEM;
	}
	out->ngpus = n;
	out->time_ms = json_integer_value(json_object_get(o, "time_ms"));
	out->cuda_version = (int)json_integer_value(json_object_get(o, "cuda"));
	const char *drv = json_string_value(json_object_get(o, "driver"));
	const char *nv = json_string_value(json_object_get(o, "nvml"));
	snprintf(out->driver_version, sizeof out->driver_version, "%s", drv ? drv : "");
	snprintf(out->nvml_version, sizeof out->nvml_version, "%s", nv ? nv : "");
	for (size_t i = 0; i < n; i++) {
		const json_t *j = json_array_get(gpus, i);
		gc_gpu *g = &out->gpus[i];
		memset(g->st, GC_ST_UNSET, sizeof g->st);
		if (!json_is_object(j) || json_integer_value(json_object_get(j, "index")) != (json_int_t)i) {
			gpu_snapshot_release(out);
			errbuf_set(err, errlen, "gpuctld's GPU table lists GPU %zu out of order", i);
			return GC_EINVAL;
		}
		g->index = (unsigned)i;
		g->lost = json_is_true(json_object_get(j, "lost"));
		for (size_t f = 0; f < NFIELDS; f++) {
			const struct field *x = &fields[f];
			char *p = (char *)g + x->off;
			const json_t *val = json_object_get(j, x->key);
			bool ok = x->kind == STR ? json_is_string(val) && json_string_length(val) < x->size
				  : x->kind == BOOL ? json_is_boolean(val)
						    : json_is_integer(val) && json_integer_value(val) >= 0;
			if (!ok) {
				char key[40];
				snprintf(key, sizeof key, "st_%s", x->key);
				json_int_t st = json_integer_value(json_object_get(j, key));
				g->st[x->v] = st > GC_ST_OK && st <= GC_ST_UNKNOWN_ERROR ? (uint8_t)st : GC_ST_UNSET;
				continue;
			}
			g->st[x->v] = GC_ST_OK;
			if (x->kind == STR)
				snprintf(p, x->size, "%s", json_string_value(val));
			else if (x->kind == U64)
				*(uint64_t *)p = (uint64_t)json_integer_value(val);
			else if (x->kind == U32)
				*(unsigned *)p = (unsigned)json_integer_value(val);
			else
				*(bool *)p = json_is_true(val);
		}
	}
	return GC_OK;
}

int gpu_ctx_open_json(gc_ctx **out, const json_t *table, int64_t max_age_ms, const gc_open_opts *opts, char *err,
		      size_t errlen)
{
	gc_snapshot t = {0};
	*out = NULL;
	int rc = gpu_table_read(table, &t, err, errlen);
	int64_t age = clock_real_ms() - t.time_ms;
	if (rc == GC_OK && max_age_ms >= 0 && (age < -max_age_ms || age > max_age_ms)) {
		errbuf_set(err, errlen, "gpuctld's GPU table is %lld ms old", (long long)age);
		rc = GC_EINVAL;
	}
	if (rc == GC_OK && (rc = gpu_ctx_open_table(out, &t, opts)) != GC_OK)
		errbuf_set(err, errlen, "out of memory");
	gpu_snapshot_release(&t);
	if (rc != GC_OK) {
		gc_ctx_free(*out);
		*out = NULL;
	}
	return rc;
}
