/*
 * nvml.h — libgpuctl's internal interface to the NVML backend (lib/device/nvml.c).
 * Only lib/ includes this; it speaks gc_* types so callers never see NVML's.
 */
#ifndef GPUCTL_LIB_NVML_H
#define GPUCTL_LIB_NVML_H

#include "device/gpu.h"

struct nvml;

/*
 * Load `path` (NULL: libnvidia-ml.so.1), resolve symbols, initialise NVML
 * and enumerate devices. sim_node: the simulator's node file, handed to
 * the library (gpuctlSimSetNode) before nvmlInit; NULL for a real driver.
 * On failure returns a GC_E* code with a message in err; *out is NULL.
 */
int nvml_open(struct nvml **out, const char *path, const char *sim_node, char *err, size_t errlen);
void nvml_close(struct nvml *n);
size_t nvml_count(const struct nvml *n);
const char *nvml_proc_api(const struct nvml *n);

/* driver/NVML/CUDA versions into the snapshot header */
void nvml_system_info(struct nvml *n, gc_snapshot *s);

/*
 * Sample the values in `mask` of device `idx` into g (statuses included).
 * Processes are returned with pid/type/memory only; the caller resolves
 * users and commands. g->procs must be NULL or come from a previous call
 * (it is grown with realloc; *proc_cap tracks its capacity).
 */
int nvml_sample_gpu(struct nvml *n, unsigned idx, uint64_t mask, gc_gpu *g, size_t *proc_cap);

/*
 * Xid errors (nvmlEventTypeXidCriticalError) of every GPU: watch registers
 * them once (GC_ENOTFOUND when the driver has no event API or no GPU takes
 * the registration); next waits up to timeout_ms for one: 1 with *gpu (an
 * index; UINT_MAX for a device not enumerated) and *xid (999: the driver
 * could not name it), 0 when none came, a GC_E* with err.
 */
int nvml_xid_watch(struct nvml *n, char *err, size_t errlen);
int nvml_xid_next(struct nvml *n, int timeout_ms, unsigned *gpu, uint64_t *xid, char *err, size_t errlen);

/* an extra symbol of the loaded library (the simulator's), or NULL */
void *nvml_symbol(struct nvml *n, const char *name);

/* topology level between two devices, GC_TOPO_UNKNOWN on failure */
int nvml_topology(struct nvml *n, unsigned a, unsigned b);

#endif
