/*
 * gpu.h — libgpuctl's own view of a snapshot: the layouts of gc_gpu,
 * gc_mig and gc_snapshot, which the public header keeps opaque (a program
 * reads them through gc_value_u64 and friends, so that a new value breaks
 * no program built before it). The tools and tests, built with the
 * library, read the fields directly.
 */
#ifndef GPUCTL_LIB_GPU_H
#define GPUCTL_LIB_GPU_H

#include "gpuctl/gpuctl.h"

/*
 * One MIG device of a GPU in MIG mode: a compute instance inside a GPU
 * instance, what CUDA sees instead of the GPU (by its MIG UUID). Each value
 * has its own status, as in gc_gpu.
 */
typedef struct gc_mig {
	unsigned index;           /* NVML's MIG device index under its GPU */
	uint8_t st_uuid, st_profile, st_mem, st_gi, st_ci; /* GC_ST_* of the values below */
	char uuid[96];            /* "MIG-..." */
	char profile[32];         /* "1g.10gb": what follows " MIG " in the device's name */
	uint64_t mem_total, mem_used, mem_free; /* bytes, its own slice of the GPU's memory */
	unsigned gpu_instance_id, compute_instance_id;
} gc_mig;

/* One GPU in a snapshot. Read a value only when st[its gc_value] == GC_ST_OK. */
struct gc_gpu {
	unsigned index;
	uint8_t st[GC_V__COUNT];
	char name[96];
	char uuid[96];
	char serial[32];
	char vbios[32];
	char bus_id[32];          /* "00000000:18:00.0" */
	unsigned pci_domain, pci_bus, pci_device;
	uint32_t pci_device_id, pci_subsystem_id;
	uint64_t mem_total, mem_reserved, mem_used, mem_free; /* bytes */
	unsigned util_gpu, util_mem;                          /* percent */
	unsigned temp;                                        /* degrees C */
	unsigned fan;                                         /* percent */
	unsigned power_draw, power_limit, power_enforced;     /* milliwatts */
	unsigned power_default, power_min, power_max;         /* milliwatts */
	unsigned clk_gr, clk_sm, clk_mem, clk_video;          /* MHz */
	unsigned clk_max_gr, clk_max_sm, clk_max_mem;         /* MHz */
	uint64_t reasons, reasons_supported;
	bool ecc_mode, ecc_pending;
	uint64_t ecc_corr_vol, ecc_uncorr_vol, ecc_corr_agg, ecc_uncorr_agg;
	bool persistence;
	unsigned compute_mode;    /* 0 Default, 1 Exclusive_Thread, 2 Prohibited, 3 Exclusive_Process */
	unsigned pstate;          /* 0..15 */
	bool mig_current, mig_pending;
	unsigned pcie_gen, pcie_gen_max, pcie_width, pcie_width_max;
	uint64_t energy_mj;       /* millijoules since driver load */
	int cc_major, cc_minor;
	bool retired_pending;     /* retired pages wait for a reboot or reset */
	unsigned remap_corr, remap_uncorr; /* rows remapped for correctable/uncorrectable errors */
	bool remap_pending;       /* remappings wait for a GPU reset */
	bool remap_failure;       /* a remapping has failed in the past */
	size_t nprocs;
	gc_proc *procs;           /* owned by the snapshot */
	size_t procs_cap;         /* private: allocated entries of procs */
	size_t nmig;              /* MIG devices, valid when st[GC_V_MIG_DEVICES] == GC_ST_OK */
	gc_mig *mig;              /* owned by the snapshot */
	size_t mig_cap;           /* private: allocated entries of mig */
	bool lost;                /* a call returned GPU_IS_LOST in this sample */
};

/* One sample of the whole node. */
struct gc_snapshot {
	char driver_version[80];   /* "" when unknown */
	char nvml_version[80];
	int cuda_version;          /* 12040 for 12.4; 0 when unknown */
	int64_t time_ms;           /* wall clock (ms since the epoch) of the sample */
	size_t ngpus;
	gc_gpu *gpus;              /* owned by the snapshot */
	int8_t *topo;              /* ngpus*ngpus gc_topo levels (all fit), or NULL when not requested */
};

/* Free what a snapshot holds (not the struct itself: the tools keep theirs on the stack). */
void gpu_snapshot_release(gc_snapshot *snap);
/* dst (released first) becomes a deep copy of src. GC_OK, or GC_ENOMEM with dst empty. */
int gpu_snapshot_copy(gc_snapshot *dst, const gc_snapshot *src);

#endif
