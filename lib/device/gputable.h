/*
 * gputable.h — the GPUs as gpuctld's latest sample has them, as much as a
 * client needs to name them and to choose among them when gpuctld does the
 * choosing (authority mode): gpuctld answers it to the op "gpus", and a
 * gc_ctx opened on it (gpu_ctx_open_table) samples from it instead of opening
 * NVML, which on real hardware takes tens of ms (docs/security.md).
 */
#ifndef GPUCTL_LIB_GPUTABLE_H
#define GPUCTL_LIB_GPUTABLE_H

#include "device/gpu.h"

#include <jansson.h>

/* the values the table carries */
#define GPU_TABLE_MASK (GC_BIT(GC_V_NAME) | GC_BIT(GC_V_UUID) | GC_BIT(GC_V_PCI) | GC_BIT(GC_V_MEM_TOTAL) | \
			GC_BIT(GC_V_MEM_USED) | GC_BIT(GC_V_MEM_FREE) | GC_BIT(GC_V_UTIL_GPU) | GC_BIT(GC_V_MIG_CURRENT))
#define GPU_TABLE_MAX 1024        /* GPUs a table may list */
#define GPU_TABLE_ANSWER_MAX 256  /* GPUs a lease's answer lists (some 60 kB) */

/* snap's GPUs as the table (a JSON object, the caller's), or NULL when out of memory */
json_t *gpu_table_json(const gc_snapshot *snap);
/* a table into out (released first): GC_OK, or GC_EINVAL with why in err */
int gpu_table_read(const json_t *o, gc_snapshot *out, char *err, size_t errlen);

/*
 * A context whose samples come from table (copied) while they ask only for
 * GPU_TABLE_MASK's values, without topology, within a second of this call;
 * any other sample opens the library as gc_ctx_open(opts) would, then.
 */
int gpu_ctx_open_table(gc_ctx **out, const gc_snapshot *table, const gc_open_opts *opts);
/* The same on a table as JSON (gpu_table_json's), when its sample is at most max_age_ms old
 * (< 0: any age): GC_OK; GC_EINVAL with why in err (a bad or an old table); GC_ENOMEM. */
int gpu_ctx_open_json(gc_ctx **out, const json_t *table, int64_t max_age_ms, const gc_open_opts *opts, char *err,
		      size_t errlen);

#endif
