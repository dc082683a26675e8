/*
 * specs.h — the fact tables gpuctl advise reasons with: GPU models
 * (data/gpus.csv: memory, bandwidth, dense peaks, interconnect, source),
 * model presets (data/models.csv: architecture and parameter counts) and
 * instance types with a GPU network between instances (data/fabrics.csv).
 * All are read by header name, so columns may be reordered or added.
 */
#ifndef GPUCTL_LIB_SPECS_H
#define GPUCTL_LIB_SPECS_H

#include "advise/memmodel.h"

#include <stddef.h>

typedef struct spec_gpu {
	char name[32];
	char acc[128];          /* catalog accelerator names, ';'-separated */
	double mem;             /* bytes: marketed GB x 10^9 */
	double bw;              /* memory bandwidth, bytes/s */
	double peak[6];         /* dense FLOP/s (OP/s for int8) by enum memmodel_prec; 0: not supported */
	char interconnect[48];
	double link;            /* bytes/s per GPU between GPUs */
	char source[256];
	char notes[256];
} spec_gpu;

/* a SkyPilot accelerator name and the GPU of gpus.csv it is planned as (data/sky-accelerators.csv) */
typedef struct spec_sky {
	char name[32];
	char gpu[32];
} spec_sky;

/* an instance type with a GPU-to-GPU network between instances (data/fabrics.csv) */
typedef struct spec_fabric {
	char cloud[16];
	char instance[48];
	char fabric[48];        /* "EFA", "InfiniBand HDR with GPUDirect RDMA", "GPUDirect-TCPX" ... */
	double gbps;            /* network bandwidth per instance, Gbit/s; 0: not given */
	bool plain;             /* the instance's plain network (gpu_network no); false: a GPU-to-GPU network
				   (GPUDirect RDMA, TCPX) between instances */
} spec_fabric;

/* Load data/gpus.csv (or a file like it). *out is freed with free(). */
int specs_load_gpus(const char *path, spec_gpu **out, size_t *n, char *err, size_t errlen);
/* Load data/models.csv. *out is freed with free(). */
int specs_load_models(const char *path, memmodel_model **out, size_t *n, char *err, size_t errlen);

/* Load data/fabrics.csv. *out is freed with free(). */
int specs_load_fabrics(const char *path, spec_fabric **out, size_t *n, char *err, size_t errlen);

/* the GPU a catalog's accelerator name ("A100-80GB") stands for, or NULL */
const spec_gpu *specs_gpu_for(const spec_gpu *g, size_t n, const char *acc);
/* the GPU a user names ("rtx4090", "A100-80GB", "h100 sxm"): its name or a catalog name, letters and digits
 * compared without case; NULL when none */
const spec_gpu *specs_gpu_named(const spec_gpu *g, size_t n, const char *name);
/* the fabric of a catalog's instance type (case-insensitive; any cloud), or NULL */
const spec_fabric *specs_fabric_for(const spec_fabric *f, size_t n, const char *instance);
/*
 * The shape to assume for a decoder of `params` parameters given without an
 * architecture: the default_shape preset (data/models.csv) nearest in the
 * ratio of parameter counts, or NULL when the table marks none.
 */
const memmodel_model *specs_model_shape_for(const memmodel_model *m, size_t n, double params);
/* a preset by name or alias (case-insensitive), or NULL */
const memmodel_model *specs_model_find(const memmodel_model *m, size_t n, const char *name);
/*
 * Up to max preset names close to `name` (edit distance, or a shared
 * prefix), best first, into out[] (borrowed from m). Returns how many.
 */
size_t specs_model_suggest(const memmodel_model *m, size_t n, const char *name, const char **out, size_t max);

/* data/sky-accelerators.csv: 0, or a GC_E* code with err set; free(*out) */
int specs_load_sky(const char *path, spec_sky **out, size_t *n, char *err, size_t errlen);
/* data/nvml-gpus.csv (driver name patterns in spec_sky.name, the gpus.csv row in .gpu), likewise */
int specs_load_nvml(const char *path, spec_sky **out, size_t *n, char *err, size_t errlen);
/* the GPU of g[] the driver's name stands for by t[]'s first matching pattern, or NULL */
const spec_gpu *specs_gpu_for_nvml(const spec_sky *t, size_t nt, const spec_gpu *g, size_t ng, const char *name);

#endif
