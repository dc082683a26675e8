/*
 * sim.h — internal interface of the simulated NVML library (sim/).
 *
 * The simulator is split by concept: node.c turns the node JSON into the
 * structs below once per nvmlInit, fault.c decides whether an injected error
 * fires, rundir.c reads and writes process registrations, nvml.c holds the
 * exported NVML entry points. This header is what they share; nothing outside
 * sim/ includes it.
 */
#ifndef GPUCTL_SIM_H
#define GPUCTL_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "device/nvml-abi.h"

/*
 * Which driver generation this shared library imitates: "modern", "r535",
 * "legacy" or "r410". Defined by the one gen-*.c file linked into each
 * variant, so the shared sources are compiled once.
 */
extern const char sim_generation[];

/* A metric: ok == false means NVML reports NOT_SUPPORTED for it. */
struct sim_val {
	uint64_t v;
	bool ok;
};

enum {
	SIM_PROC_COMPUTE = 1,
	SIM_PROC_GRAPHICS = 2,
};

struct sim_proc {
	unsigned int pid;
	unsigned long long used_memory; /* NVML_VALUE_NOT_AVAILABLE_ULL if unknown */
	unsigned int type;		/* SIM_PROC_* bits */
	unsigned int gpu_instance_id;
	unsigned int compute_instance_id;
	int sm_util, mem_util;		/* what nvmlDeviceGetProcessUtilization says; -1: no sample */
	const char *user, *command;	/* the node file's, for display (NULL: none); owned by the node */
};

struct sim_fault {
	char *fn; /* exact NVML function name, owned */
	int error;
	unsigned long long after; /* this many calls succeed first */
	unsigned long long calls;
};

struct sim_faults {
	struct sim_fault *v; /* owned */
	size_t n;
};

/*
 * One MIG device of a GPU in MIG mode. Its address, cast, is the MIG device
 * handle nvmlDeviceGetMigDeviceHandleByIndex hands out; calls on it consult
 * the parent GPU's faults and lost state.
 */
struct sim_mig {
	struct nvmlDevice_st *parent;
	char *uuid, *profile, *name; /* owned; name = parent's name + " MIG " + profile */
	uint64_t mem_total, mem_used; /* used: the baseline, before the processes in it */
	unsigned int gpu_instance_id, compute_instance_id;
};

enum { SIM_TOPO_NUMA, SIM_TOPO_HOST_BRIDGE, SIM_TOPO_PCIE_ROOT, SIM_TOPO_PCIE_SWITCH, SIM_TOPO_N };

/* One simulated GPU. Its address is the nvmlDevice_t handed to callers. */
struct nvmlDevice_st {
	unsigned int index;
	char *name, *uuid, *serial, *vbios; /* owned; NULL = not supported */
	bool pci_ok;
	unsigned int domain, bus, device, device_id, subsystem_id;
	bool mem_ok;
	uint64_t mem_total, mem_reserved, mem_used;
	struct sim_val util_gpu, util_mem;
	unsigned int vary_period_s;  /* > 0: load, power and temperature move over this period */
	unsigned int vary_amplitude; /* by up to this many percent of load around the file's values */
	struct sim_val temperature, fan;
	struct sim_val power_draw, power_limit, power_enforced, power_default;
	struct sim_val power_min, power_max;
	struct sim_val clock[4], max_clock[4]; /* indexed by NVML_CLOCK_* */
	struct sim_val throttle, supported_throttle;
	struct sim_val ecc_current, ecc_pending;
	struct sim_val ecc_count[2][2]; /* [error type][counter type] */
	struct sim_val persistence, compute_mode, pstate;
	struct sim_val mig_current, mig_pending;
	struct sim_val mig_max;   /* MIG device slots (nvmlDeviceGetMaxMigDeviceCount in MIG mode) */
	struct sim_mig *migs;     /* owned; in slot order from 0 */
	unsigned int nmig;
	struct sim_val pcie_gen, pcie_max_gen, pcie_width, pcie_max_width;
	struct sim_val energy;
	struct sim_val cc_major, cc_minor;
	struct sim_val retired_pending;
	struct sim_val remap_corr, remap_uncorr, remap_pending, remap_failure;
	long long topo[SIM_TOPO_N]; /* -1: unique to this GPU */
	struct sim_proc *procs;	    /* owned; static processes from the node file */
	size_t nprocs;
	bool procs_ok;		  /* false: process calls are NOT_SUPPORTED */
	struct sim_faults faults; /* GPU-level plus inherited node-level */
	bool lost;		  /* sticky GPU_IS_LOST */
};

struct sim_node {
	char generation[16];  /* the driver generation the node declares */
	char *driver_version, *nvml_version; /* owned */
	struct sim_val cuda_version;
	char *rundir; /* owned; resolved runtime directory */
	struct sim_faults faults; /* node-level, for system calls */
	struct nvmlDevice_st *gpus; /* owned */
	unsigned int ngpus;
	void *blob; /* read from the cache (nodecache.c): everything but rundir lives in it */
};

/* node.c */
/*
 * Load the node description at path. Returns NULL and writes a one-line
 * message into err (of errlen bytes) on any failure; never prints.
 * The result is freed with sim_node_free.
 */
struct sim_node *sim_node_load(const char *path, char *err, size_t errlen);
void sim_node_free(struct sim_node *n);

/* nodecache.c: the parsed node, flattened into one block and kept across processes */
/* n (and the node file's own "rundir" value) as one block of *len bytes; NULL on failure */
void *sim_node_flatten(const struct sim_node *n, const char *rundir_field, size_t *len);
/*
 * The node inside a block sim_node_flatten made, its offsets made pointers
 * again, each checked against the block; NULL when the block is not one.
 * On success the node owns the block; its rundir is NULL (the caller
 * resolves it) and *rundir_field points into the block.
 */
struct sim_node *sim_node_unflatten(void *block, size_t len, const char **rundir_field);
/* the cached node for the node file st describes, or NULL (then parse it) */
struct sim_node *sim_node_cache_get(const struct stat *st, const char **rundir_field);
/* keep n, just parsed from the file st describes, for the next load; failures are ignored */
void sim_node_cache_put(const struct stat *st, const struct sim_node *n, const char *rundir_field);

/* fault.c */
/* NVML_ERROR_* value for a name such as "GPU_IS_LOST"; -1 if unknown. */
int sim_error_from_name(const char *name);
/* Whether fn is the name of an NVML function the simulator implements. */
bool sim_is_known_function(const char *fn);
/* Count a call of fn and return the injected error, or NVML_SUCCESS. */
nvmlReturn_t sim_fault_check(struct sim_faults *f, const char *fn);
void sim_faults_free(struct sim_faults *f);

/* rundir.c */
#define SIM_REG_MAX_BYTES 4096
#define SIM_REG_MAX_ENTRIES 4096
/*
 * Resolve the runtime directory: $GPUCTL_SIM_RUNDIR, else node_rundir
 * (relative to the node file's directory; may be NULL), else
 * $XDG_RUNTIME_DIR/gpuctl-sim, else /tmp/gpuctl-sim-<uid>. *is_default is
 * set when one of the last two was chosen. Returns 0, or -1 if too long.
 */
int sim_rundir_resolve(const char *node_path, const char *node_rundir, char *buf, size_t len,
		       bool *is_default);
/*
 * Append the live registrations for GPU `gpu` in dir to *procs (growing
 * *cap), deleting those of dead pids. Returns 0 or -1 on allocation failure.
 * A missing directory is not an error.
 */
/* drop the kept scan (sim_rundir_scan's), as the node is unloaded */
void sim_rundir_forget(void);
int sim_rundir_scan(const char *dir, unsigned int gpu, struct sim_proc **procs, size_t *n,
		    size_t *cap);
/*
 * Atomically write the registration <pid>-<gpu>.json into dir. Returns 0,
 * or -1 with errno set.
 */
int sim_rundir_register(const char *dir, long pid, unsigned int gpu, unsigned long long used);
/* Record Xid event xid on gpu now (gpuctl-sim-hold --xid). 0, or -1 with errno. */
int sim_rundir_xid(const char *dir, unsigned int gpu, unsigned long long xid);
/*
 * The earliest Xid event of dir on a GPU marked in gpus[ngpus] that
 * happened after after_ns (CLOCK_REALTIME ns): 1 with *gpu, *ns and *xid;
 * 0 when none.
 */
int sim_rundir_next_xid(const char *dir, const bool *gpus, unsigned int ngpus, long long after_ns,
			unsigned int *gpu, long long *ns, unsigned long long *xid);

/* nvml.c: the exported entry points (prototypes for -Wmissing-prototypes) */
nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlInit(void);
nvmlReturn_t nvmlShutdown(void);
const char *nvmlErrorString(nvmlReturn_t r);
const char *gpuctlSimLastError(void);
int gpuctlSimSetNode(const char *path);
/*
 * The driver generation the loaded node declares ("modern", "r535", ...), or
 * this library's own before a node is loaded. gpuctl reopens the matching
 * library variant when the two differ.
 */
const char *gpuctlSimGeneration(void);
int gpuctlSimProcessText(unsigned int pid, char *user, unsigned int ulen, char *command, unsigned int clen);
nvmlReturn_t nvmlSystemGetDriverVersion(char *buf, unsigned int len);
nvmlReturn_t nvmlSystemGetNVMLVersion(char *buf, unsigned int len);
nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v);
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v);
nvmlReturn_t nvmlDeviceGetCount(unsigned int *count);
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count);
nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *dev);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *dev);
nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *dev);
nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *bus_id, nvmlDevice_t *dev);
nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus_id, nvmlDevice_t *dev);
nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t dev, unsigned int *index);
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t dev, char *buf, unsigned int len);
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t dev, char *buf, unsigned int len);
nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t dev, char *buf, unsigned int len);
nvmlReturn_t nvmlDeviceGetVbiosVersion(nvmlDevice_t dev, char *buf, unsigned int len);
nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t dev, void *pci);
nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t dev, void *pci);
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t dev, void *pci);
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, void *mem);
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t dev, void *mem);
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t dev, nvmlUtilization_t *u);
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t dev, int sensor, unsigned int *t);
nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t dev, unsigned int *speed);
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t dev, unsigned int *mw);
nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t dev, unsigned int *mw);
nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t dev, unsigned int *mw);
nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t dev, unsigned int *mw);
nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t dev, unsigned int *min,
							  unsigned int *max);
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t dev, int type, unsigned int *mhz);
nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t dev, int type, unsigned int *mhz);
nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t dev, unsigned long long *r);
nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t dev, unsigned long long *r);
nvmlReturn_t nvmlDeviceGetSupportedClocksThrottleReasons(nvmlDevice_t dev, unsigned long long *r);
nvmlReturn_t nvmlDeviceGetSupportedClocksEventReasons(nvmlDevice_t dev, unsigned long long *r);
nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t dev, int *current, int *pending);
nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t dev, int error_type, int counter_type,
					 unsigned long long *count);
nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t dev, int *mode);
nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t dev, int *mode);
nvmlReturn_t nvmlDeviceGetPerformanceState(nvmlDevice_t dev, int *pstate);
nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t dev, unsigned int *current, unsigned int *pending);
nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t dev, unsigned int *count);
nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t dev, unsigned int index,
						 nvmlDevice_t *mig);
nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t mig, nvmlDevice_t *dev);
nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t dev, unsigned int *is_mig);
nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t dev, unsigned int *id);
nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t dev, unsigned int *id);
nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t dev, unsigned int *v);
nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t dev, unsigned int *v);
nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t dev, unsigned int *v);
nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t dev, unsigned int *v);
nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t dev, unsigned long long *mj);
nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t dev, int *major, int *minor);
nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t dev, int *pending);
nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t dev, unsigned int *corr, unsigned int *unc,
				       unsigned int *pending, unsigned int *failure);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t dev, unsigned int *count, void *infos);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t dev, unsigned int *count,
						     void *infos);
nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set);
nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set);
nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t dev, unsigned long long *types);
nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t dev, unsigned long long types, nvmlEventSet_t set);
nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeout_ms);
nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeout_ms);
nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t dev, nvmlProcessUtilizationSample_t *samples,
					     unsigned int *count, unsigned long long last_seen);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t dev, unsigned int *count,
						     void *infos);
nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t dev, unsigned int *count,
						   void *infos);
nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t dev, unsigned int *count,
						      void *infos);
nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t dev, unsigned int *count,
						      void *infos);
nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t a, nvmlDevice_t b, int *level);
nvmlReturn_t nvmlDeviceGetConfComputeMemSizeInfo(nvmlDevice_t dev, void *info);
nvmlReturn_t nvmlDeviceGetRunningProcessDetailList(nvmlDevice_t dev, void *list);

#endif
