/*
 * gpuctl.h — the public C API of libgpuctl.
 *
 * A gc_ctx is an open connection to the GPU management library (the real
 * NVML or the simulated node); gc_ctx_sample() fills a gc_snapshot with one
 * sample of every GPU. Each value in a gc_gpu has a status: GC_ST_OK means
 * the value is valid; anything else says why it is not (not supported, no
 * permission, GPU lost, ...), so output code can print [N/A] or null instead
 * of a made-up zero. No NVML type appears here.
 *
 * The library never prints and never exits: errors are negative GC_E* codes
 * with a message in the context (gc_ctx_errmsg).
 */
#ifndef GPUCTL_GPUCTL_H
#define GPUCTL_GPUCTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Error codes: 0 on success, a negative GC_E* on failure. None is -1, so a
 * bare -1 that slips out of some function can never pass for one (it used to
 * read as GC_ENOLIB: "no driver", exit 3). tests/docs/check-errors.py holds
 * the public functions to that.
 */
enum gc_error {
	GC_OK = 0,
	GC_ENOLIB = -2,      /* the NVML library cannot be loaded */
	GC_ENODRIVER = -3,   /* library loaded, kernel driver not loaded */
	GC_EMISMATCH = -4,   /* kernel module and user library versions differ */
	GC_ENOPERM = -5,     /* insufficient permissions */
	GC_EGPULOST = -6,    /* a GPU fell off the bus / needs reset */
	GC_ENOMEM = -7,      /* out of memory */
	GC_EINVAL = -8,      /* invalid argument */
	GC_ENOTFOUND = -9,   /* no such GPU / entry */
	GC_ESIM = -10,       /* the simulated node description is invalid */
	GC_ENVML = -11,      /* any other NVML failure */
	GC_EIO = -12,        /* a file could not be read or written */
	GC_EBUSY = -13,      /* held by someone else (a lease): not now */
	GC_ETIMEDOUT = -14,  /* waited as long as asked */
	GC_ENOTNOW = -15,    /* too few GPUs fit the request now: not now, try again or wait */
};

/* Return a static English description of a GC_E* code. */
const char *gc_strerror(int err);

/*
 * Status of one value in a snapshot. GC_ST_OK = valid; the others map the
 * NVML return code that prevented it (nvidia-smi prints a bracketed token
 * for each).
 */
enum gc_status {
	GC_ST_OK = 0,
	GC_ST_UNSET,          /* not requested in this sample */
	GC_ST_NOT_SUPPORTED,  /* this GPU/driver does not provide it */
	GC_ST_NO_PERMISSION,
	GC_ST_GPU_LOST,
	GC_ST_RESET_REQUIRED,
	GC_ST_UNKNOWN_ERROR,
};

/* Values a sample can collect; each is requested by its bit (GC_BIT(v)). */
enum gc_value {
	GC_V_NAME, GC_V_UUID, GC_V_SERIAL, GC_V_VBIOS, GC_V_PCI,
	GC_V_MEM_TOTAL, GC_V_MEM_RESERVED, GC_V_MEM_USED, GC_V_MEM_FREE,
	GC_V_UTIL_GPU, GC_V_UTIL_MEM,
	GC_V_TEMP, GC_V_FAN,
	GC_V_POWER_DRAW, GC_V_POWER_LIMIT, GC_V_POWER_ENFORCED,
	GC_V_POWER_DEFAULT, GC_V_POWER_MIN, GC_V_POWER_MAX,
	GC_V_CLK_GR, GC_V_CLK_SM, GC_V_CLK_MEM, GC_V_CLK_VIDEO,
	GC_V_CLK_MAX_GR, GC_V_CLK_MAX_SM, GC_V_CLK_MAX_MEM,
	GC_V_REASONS, GC_V_REASONS_SUPPORTED,
	GC_V_ECC_MODE, GC_V_ECC_PENDING,
	GC_V_ECC_CORR_VOL, GC_V_ECC_UNCORR_VOL, GC_V_ECC_CORR_AGG, GC_V_ECC_UNCORR_AGG,
	GC_V_PERSISTENCE, GC_V_COMPUTE_MODE, GC_V_PSTATE,
	GC_V_MIG_CURRENT, GC_V_MIG_PENDING,
	GC_V_MIG_DEVICES, /* the MIG devices of a GPU in MIG mode (gc_gpu.mig); also samples MIG mode */
	GC_V_PCIE_GEN, GC_V_PCIE_GEN_MAX, GC_V_PCIE_WIDTH, GC_V_PCIE_WIDTH_MAX,
	GC_V_ENERGY, GC_V_COMPUTE_CAP,
	GC_V_RETIRED_PENDING, /* pages pending retirement (Kepler to Turing) */
	GC_V_REMAPPED_ROWS,   /* the four remap_* values (Ampere and newer) */
	GC_V_PROCS,   /* compute processes */
	GC_V_GPROCS,  /* graphics processes */
	GC_V__COUNT
};
_Static_assert(GC_V__COUNT <= 64, "value mask fits 64 bits");
#define GC_BIT(v) (UINT64_C(1) << (v))
#define GC_ALL_VALUES ((GC_V__COUNT == 64) ? ~UINT64_C(0) : (GC_BIT(GC_V__COUNT) - 1))

/* Clock event ("throttle") reason bits, as NVML numbers them. */
#define GC_REASON_GPU_IDLE 0x1ULL
#define GC_REASON_APP_CLOCKS 0x2ULL
#define GC_REASON_SW_POWER_CAP 0x4ULL
#define GC_REASON_HW_SLOWDOWN 0x8ULL
#define GC_REASON_SYNC_BOOST 0x10ULL
#define GC_REASON_SW_THERMAL 0x20ULL
#define GC_REASON_HW_THERMAL 0x40ULL
#define GC_REASON_HW_POWER_BRAKE 0x80ULL
#define GC_REASON_DISPLAY_CLOCK 0x100ULL
/* the reasons that mean "this GPU is being slowed down", as gpustat/nvitop flag them */
#define GC_REASONS_THROTTLING (GC_REASON_SW_POWER_CAP | GC_REASON_HW_SLOWDOWN | \
	GC_REASON_SW_THERMAL | GC_REASON_HW_THERMAL | GC_REASON_HW_POWER_BRAKE)

/* Name of one reason bit ("sw_power_cap"), or NULL for an unknown bit. */
const char *gc_reason_name(uint64_t bit);

enum gc_proc_type { GC_PROC_COMPUTE = 1, GC_PROC_GRAPHICS = 2 };

/* One process using a GPU. */
typedef struct gc_proc {
	uint32_t pid;
	unsigned type;            /* GC_PROC_* bits */
	bool mem_known;           /* false: NVML reported "not available" */
	uint64_t used_memory;     /* bytes */
	bool visible;             /* /proc/<pid> exists in this PID namespace */
	uid_t uid;                /* valid when visible */
	char user[33];            /* user name, or the uid in decimal */
	char command[256];        /* cmdline, arguments joined by spaces (truncated) */
	char argv0[256];          /* first cmdline word: nvidia-smi's process_name */
	bool simulated;           /* a simulated node's process, not visible: user, command and
				     argv0 are the node file's ("user", "command"), for display */
} gc_proc;

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
typedef struct gc_gpu {
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
} gc_gpu;

/* Pairwise topology levels, as nvidia-smi topo -m names them. */
enum gc_topo {
	GC_TOPO_UNKNOWN = -1,
	GC_TOPO_SELF = 0,       /* X    */
	GC_TOPO_PIX = 10,       /* single PCIe switch */
	GC_TOPO_PXB = 20,       /* multiple PCIe switches */
	GC_TOPO_PHB = 30,       /* PCIe host bridge */
	GC_TOPO_NODE = 40,      /* host bridges in one NUMA node */
	GC_TOPO_SYS = 50,       /* across NUMA nodes */
};
const char *gc_topo_name(int level); /* "PIX", ..., "X"; "N/A" when unknown */

/* One sample of the whole node. */
typedef struct gc_snapshot {
	char driver_version[80];   /* "" when unknown */
	char nvml_version[80];
	int cuda_version;          /* 12040 for 12.4; 0 when unknown */
	int64_t time_ms;           /* wall clock (ms since the epoch) of the sample */
	size_t ngpus;
	gc_gpu *gpus;              /* owned by the snapshot */
	int *topo;                 /* ngpus*ngpus gc_topo levels, or NULL when not requested */
} gc_snapshot;

typedef struct gc_ctx gc_ctx;

typedef struct gc_open_opts {
	const char *library;   /* borrowed; NULL: $GPUCTL_NVML_LIBRARY, else libnvidia-ml.so.1 */
	const char *sim_node;  /* borrowed; non-NULL: load the simulator with this node file */
} gc_open_opts;

/*
 * Open the management library and enumerate GPUs. On failure *out is still
 * set (so gc_ctx_errmsg works) unless memory ran out; free it with
 * gc_ctx_free in every case.
 */
int gc_ctx_open(gc_ctx **out, const gc_open_opts *opts);
void gc_ctx_free(gc_ctx *ctx);
const char *gc_ctx_errmsg(const gc_ctx *ctx);
/* which library file was loaded (or last tried) */
const char *gc_ctx_library(const gc_ctx *ctx);
/* number of GPUs found at open */
size_t gc_ctx_count(const gc_ctx *ctx);
/* which process-list entry point is in use ("nvmlDeviceGetComputeRunningProcesses_v3", ...) */
const char *gc_ctx_proc_api(const gc_ctx *ctx);

/*
 * Take one sample of the GPUs selected in `which` (indices; NULL = all) of the
 * values in `mask` (GC_BIT()s). `topo` asks for the pairwise topology matrix.
 * The snapshot is reused between calls: its memory is kept and overwritten.
 * Returns 0, or a negative GC_E* when no sample could be taken at all; a
 * failure of one value of one GPU is recorded in its status instead.
 */
int gc_ctx_sample(gc_ctx *ctx, gc_snapshot *snap, uint64_t mask,
		  const bool *which, bool topo);
void gc_snapshot_release(gc_snapshot *snap);

/*
 * Path of the simulator library for a driver generation ("modern", "r535",
 * "legacy", "r410"): $GPUCTL_SIM_LIBDIR, else next to the running binary in a
 * build tree, else the installed package library directory.
 */
int gc_sim_library(const char *generation, char *buf, size_t len);

/*
 * Render a snapshot as the documented JSON schema (docs/json.md), GPUs
 * selected by `which` (NULL = all), indented (pretty) or on one line.
 * Returns a string the caller frees with free(), or NULL when out of memory.
 */
char *gc_snapshot_json(const gc_snapshot *snap, const bool *which, const char *hostname, bool pretty);

/* nvidia-smi's name of a compute mode ("Default", "Exclusive_Process", ...) */
const char *gc_compute_mode_name(unsigned mode);

/* "12.4" in buf for NVML's CUDA driver version 12040; false, buf untouched, when v <= 0 (unknown) */
bool gc_cuda_version_str(int v, char *buf, size_t len);

/* A value's name as the JSON "errors" object spells it ("power.draw_mw"), or NULL. */
const char *gc_value_name(unsigned v);

/* The NVML function a value comes from ("nvmlDeviceGetPowerUsage"; the
 * unversioned name), for error counts; NULL for an unknown value. */
const char *gc_value_source(unsigned v);

/* nvidia-smi's words for a non-OK status: "N/A", "GPU is lost", ... */
const char *gc_status_token(int st);

#ifdef __cplusplus
}
#endif
#endif
