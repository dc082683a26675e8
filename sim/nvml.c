/*
 * nvml.c — the exported NVML entry points of the simulated driver.
 *
 * gpuctl dlopens this library exactly as it would libnvidia-ml.so.1, so the
 * simulator must honour the real C ABI and NVML's calling contracts: record
 * sizes per function version, the count/INSUFFICIENT_SIZE protocol, struct
 * version words, refcounted init, UNINITIALIZED before init, and never a
 * crash on bad arguments. Which of these functions a build exports is
 * decided by its linker version script (sim/<generation>.map), one per driver
 * generation; the only behaviour that differs at run time is the record
 * size of the r535 `_v3` process calls (see sim_generation).
 *
 * Every call takes one process-wide lock: the simulator is not a hot path,
 * and the lock keeps fault counters and the sticky "GPU lost" state exact
 * when a daemon polls from several threads.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

#include "sim.h"

/* the functions must have exactly the types gpuctl's loader calls them with */
#define SIM_ABI(fn, T) \
	_Static_assert(__builtin_types_compatible_p(__typeof__(&fn), T), #fn " has type " #T)
SIM_ABI(nvmlInit_v2, nvml_fn_void);
SIM_ABI(nvmlShutdown, nvml_fn_void);
SIM_ABI(nvmlErrorString, nvml_fn_errstr);
SIM_ABI(nvmlSystemGetDriverVersion, nvml_fn_sysstr);
SIM_ABI(nvmlSystemGetCudaDriverVersion_v2, nvml_fn_sysint);
SIM_ABI(nvmlDeviceGetCount_v2, nvml_fn_count);
SIM_ABI(nvmlDeviceGetHandleByIndex_v2, nvml_fn_handle_by_index);
SIM_ABI(nvmlDeviceGetName, nvml_fn_devstr);
SIM_ABI(nvmlDeviceGetFanSpeed, nvml_fn_devuint);
SIM_ABI(nvmlDeviceGetTotalEnergyConsumption, nvml_fn_devull);
SIM_ABI(nvmlDeviceGetCurrentClocksEventReasons, nvml_fn_devull);
SIM_ABI(nvmlDeviceGetEccMode, nvml_fn_devint2);
SIM_ABI(nvmlDeviceGetCudaComputeCapability, nvml_fn_devint2);
SIM_ABI(nvmlDeviceGetMigMode, nvml_fn_devuint2);
SIM_ABI(nvmlDeviceGetPowerManagementLimitConstraints, nvml_fn_devuint2);
SIM_ABI(nvmlDeviceGetTemperature, nvml_fn_devenum);
SIM_ABI(nvmlDeviceGetClockInfo, nvml_fn_devenum);
SIM_ABI(nvmlDeviceGetPciInfo_v3, nvml_fn_pci);
SIM_ABI(nvmlDeviceGetMemoryInfo_v2, nvml_fn_mem);
SIM_ABI(nvmlDeviceGetUtilizationRates, nvml_fn_util);
SIM_ABI(nvmlDeviceGetTotalEccErrors, nvml_fn_ecc);
SIM_ABI(nvmlDeviceGetComputeRunningProcesses_v3, nvml_fn_procs);
SIM_ABI(nvmlDeviceGetProcessUtilization, nvml_fn_proc_util);
SIM_ABI(nvmlEventSetCreate, nvml_fn_evset_create);
SIM_ABI(nvmlEventSetFree, nvml_fn_evset_free);
SIM_ABI(nvmlDeviceRegisterEvents, nvml_fn_register_events);
SIM_ABI(nvmlEventSetWait_v2, nvml_fn_evset_wait);
SIM_ABI(nvmlEventSetWait, nvml_fn_evset_wait);
SIM_ABI(nvmlDeviceGetTopologyCommonAncestor, nvml_fn_topo);
SIM_ABI(nvmlDeviceGetRetiredPagesPendingStatus, nvml_fn_devint);
SIM_ABI(nvmlDeviceGetRemappedRows, nvml_fn_remap);
SIM_ABI(nvmlDeviceGetMaxMigDeviceCount, nvml_fn_devuint);
SIM_ABI(nvmlDeviceGetMigDeviceHandleByIndex, nvml_fn_mig_handle);
SIM_ABI(nvmlDeviceGetDeviceHandleFromMigDeviceHandle, nvml_fn_mig_parent);
SIM_ABI(nvmlDeviceGetGpuInstanceId, nvml_fn_devuint);
SIM_ABI(nvmlDeviceGetComputeInstanceId, nvml_fn_devuint);

/* nvmlProcessDetailList_v1_t: records are laid out as nvmlProcessInfo_r535_t */
typedef struct {
	unsigned int version;
	unsigned int mode; /* 0 compute, 1 graphics, 2 MPS */
	unsigned int numProcArrayEntries;
	nvmlProcessInfo_r535_t *procArray;
} sim_process_detail_list_t;
_Static_assert(sizeof(sim_process_detail_list_t) == 24, "nvmlProcessDetailList_v1_t is 24 bytes");
_Static_assert(offsetof(sim_process_detail_list_t, procArray) == 16, "procArray at 16");
#define SIM_PROCESS_DETAIL_LIST_V1 NVML_STRUCT_VERSION(sizeof(sim_process_detail_list_t), 1)
_Static_assert(SIM_PROCESS_DETAIL_LIST_V1 == 0x01000018U, "nvmlProcessDetailList_v1 word");

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct sim_node *node;	     /* loaded while refcount > 0 */
static unsigned int refcount;
static unsigned long long init_calls; /* for "after" on nvmlInit faults */
static char last_error[512];
static char node_path[4096]; /* gpuctlSimSetNode's; "": $GPUCTL_SIM_NODE */
static char loaded_path[4096]; /* the file `node` was loaded from */

/*
 * The node file to simulate, given by libgpuctl's gc_ctx_open before
 * nvmlInit, so that no library has to set an environment variable for
 * another (kept in a static buffer: nothing to free when the library is
 * unloaded). NULL goes back to $GPUCTL_SIM_NODE. 0, or -1 when too long.
 */
int gpuctlSimSetNode(const char *path)
{
	if (path && strlen(path) >= sizeof(node_path))
		return -1;
	pthread_mutex_lock(&lock);
	snprintf(node_path, sizeof(node_path), "%s", path ? path : "");
	pthread_mutex_unlock(&lock);
	return 0;
}

/* the node file: the one set, else $GPUCTL_SIM_NODE (called with lock held) */
static const char *node_file(void)
{
	return node_path[0] ? node_path : getenv("GPUCTL_SIM_NODE");
}

const char *gpuctlSimLastError(void)
{
	return last_error;
}

const char *gpuctlSimGeneration(void)
{
	const char *g = sim_generation;
	pthread_mutex_lock(&lock);
	if (node && node->generation[0])
		g = node->generation;
	pthread_mutex_unlock(&lock);
	return g;
}

/*
 * Who runs a process of the node file, and what, as the file says (no NVML call tells):
 * copied into user and command, 1; 0 when the node names no such process or gives
 * neither text. Between nvmlInit and nvmlShutdown.
 */
int gpuctlSimProcessText(unsigned int pid, char *user, unsigned int ulen, char *command, unsigned int clen)
{
	int found = 0;
	pthread_mutex_lock(&lock);
	for (unsigned int i = 0; node && !found && i < node->ngpus; i++) {
		const struct nvmlDevice_st *g = &node->gpus[i];
		for (size_t k = 0; k < g->nprocs; k++) {
			const struct sim_proc *p = &g->procs[k];
			if (p->pid != pid || (!p->user && !p->command))
				continue;
			if (ulen)
				snprintf(user, ulen, "%s", p->user ? p->user : "");
			if (clen)
				snprintf(command, clen, "%s", p->command ? p->command : "");
			found = 1;
			break;
		}
	}
	pthread_mutex_unlock(&lock);
	return found;
}

const char *nvmlErrorString(nvmlReturn_t r)
{
	switch (r) {
	case NVML_SUCCESS: return "Success";
	case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
	case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
	case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
	case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
	case NVML_ERROR_ALREADY_INITIALIZED: return "Already Initialized";
	case NVML_ERROR_NOT_FOUND: return "Not Found";
	case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
	case NVML_ERROR_INSUFFICIENT_POWER: return "Insufficient External Power";
	case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
	case NVML_ERROR_TIMEOUT: return "Timeout";
	case NVML_ERROR_IRQ_ISSUE: return "Interrupt request issue";
	case NVML_ERROR_LIBRARY_NOT_FOUND: return "NVML Shared Library Not Found";
	case NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
	case NVML_ERROR_CORRUPTED_INFOROM: return "Corrupted infoROM";
	case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
	case NVML_ERROR_RESET_REQUIRED: return "GPU requires restart";
	case NVML_ERROR_OPERATING_SYSTEM: return "The operating system has blocked the request.";
	case NVML_ERROR_LIB_RM_VERSION_MISMATCH: return "RM has detected an NVML/RM version mismatch.";
	case NVML_ERROR_IN_USE: return "In use by another client";
	case NVML_ERROR_MEMORY: return "Insufficient Memory";
	case NVML_ERROR_NO_DATA: return "No data";
	case NVML_ERROR_VGPU_ECC_NOT_SUPPORTED:
		return "The requested vgpu operation is not available on target device, because ECC is enabled";
	case NVML_ERROR_INSUFFICIENT_RESOURCES: return "Insufficient resources";
	case NVML_ERROR_FREQ_NOT_SUPPORTED: return "Frequency not supported";
	case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument version mismatch";
	case NVML_ERROR_DEPRECATED: return "Deprecated";
	case NVML_ERROR_NOT_READY: return "Not Ready";
	case NVML_ERROR_GPU_NOT_FOUND: return "GPU not found";
	case NVML_ERROR_INVALID_STATE: return "Invalid state";
	default: return "Unknown Error";
	}
}

/* ---- init / shutdown ---------------------------------------------------- */

static nvmlReturn_t init_fault(unsigned long long call, bool v2)
{
	for (size_t i = 0; i < node->faults.n; i++) {
		const struct sim_fault *f = &node->faults.v[i];

		if (strcmp(f->fn, "nvmlInit_v2") != 0 && (v2 || strcmp(f->fn, "nvmlInit") != 0))
			continue;
		if (call >= f->after)
			return f->error;
	}
	return NVML_SUCCESS;
}

static nvmlReturn_t init_common(bool v2)
{
	unsigned long long call;
	nvmlReturn_t r;

	pthread_mutex_lock(&lock);
	call = init_calls++;
	const char *want = node_file();
	if (node && want && want[0] && strcmp(want, loaded_path) != 0) {
		/* NVML serves one machine per process, and so does the simulator: a second node
		 * while the first is in use would be answered with the first's GPUs */
		snprintf(last_error, sizeof(last_error),
			 "this process already simulates '%.300s'; one simulated node per process, as NVML serves "
			 "one machine (close its contexts first)", loaded_path);
		r = NVML_ERROR_UNKNOWN;
		goto out;
	}
	if (!node) {
		const char *path = node_file();

		if (!path || !path[0]) {
			snprintf(last_error, sizeof(last_error),
				 "GPUCTL_SIM_NODE is not set (it names the node JSON file to simulate)");
			r = NVML_ERROR_UNKNOWN;
			goto out;
		}
		node = sim_node_load(path, last_error, sizeof(last_error));
		if (!node) {
			r = NVML_ERROR_UNKNOWN;
			goto out;
		}
		snprintf(loaded_path, sizeof(loaded_path), "%s", path);
		last_error[0] = '\0';
	}
	r = init_fault(call, v2);
	if (r == NVML_SUCCESS)
		refcount++;
	else if (refcount == 0) {
		sim_node_free(node);
		node = NULL;
		sim_rundir_forget();
	}
out:
	pthread_mutex_unlock(&lock);
	return r;
}

nvmlReturn_t nvmlInit_v2(void)
{
	return init_common(true);
}

nvmlReturn_t nvmlInit(void)
{
	return init_common(false);
}

nvmlReturn_t nvmlShutdown(void)
{
	nvmlReturn_t r = NVML_ERROR_UNINITIALIZED;

	pthread_mutex_lock(&lock);
	if (node) {
		r = sim_fault_check(&node->faults, __func__);
		if (r == NVML_SUCCESS && --refcount == 0) {
			sim_node_free(node);
			node = NULL;
			sim_rundir_forget();
		}
	}
	pthread_mutex_unlock(&lock);
	return r;
}

/* ---- helpers ------------------------------------------------------------ */

/* Lock, and check init plus system-level faults. Pair with leave(). */
static nvmlReturn_t sys_enter(const char *fn)
{
	pthread_mutex_lock(&lock);
	if (!node)
		return NVML_ERROR_UNINITIALIZED;
	return sim_fault_check(&node->faults, fn);
}

static nvmlReturn_t leave(nvmlReturn_t r)
{
	pthread_mutex_unlock(&lock);
	return r;
}

/* A handle is valid only if it points at one of the loaded GPUs. */
static bool valid(nvmlDevice_t dev)
{
	uintptr_t p = (uintptr_t)dev, base;

	if (!node || !node->ngpus)
		return false;
	base = (uintptr_t)node->gpus;
	return p >= base && p < base + node->ngpus * sizeof(*node->gpus) &&
	       (p - base) % sizeof(*node->gpus) == 0;
}

static nvmlReturn_t gpu_enter(struct nvmlDevice_st *g, const char *fn)
{
	if (g->lost)
		return NVML_ERROR_GPU_IS_LOST;
	return sim_fault_check(&g->faults, fn);
}

static nvmlReturn_t gpu_result(struct nvmlDevice_st *g, nvmlReturn_t r)
{
	if (r == NVML_ERROR_GPU_IS_LOST)
		g->lost = true; /* like real hardware: lost stays lost */
	return r;
}

/* Lock, and check init, the handle, lost state and faults. Pair with dev_leave(). */
static nvmlReturn_t dev_enter(nvmlDevice_t dev, const char *fn)
{
	pthread_mutex_lock(&lock);
	if (!node)
		return NVML_ERROR_UNINITIALIZED;
	if (!valid(dev))
		return NVML_ERROR_INVALID_ARGUMENT;
	return gpu_enter(dev, fn);
}

static nvmlReturn_t dev_leave(nvmlDevice_t dev, nvmlReturn_t r)
{
	if (valid(dev))
		gpu_result(dev, r);
	pthread_mutex_unlock(&lock);
	return r;
}

/* The MIG device a handle points at, or NULL (a GPU's handle, or garbage). */
static struct sim_mig *mig_of(nvmlDevice_t dev)
{
	uintptr_t p = (uintptr_t)dev;

	for (unsigned int i = 0; node && i < node->ngpus; i++) {
		const struct nvmlDevice_st *g = &node->gpus[i];
		uintptr_t base = (uintptr_t)g->migs;

		if (g->nmig && p >= base && p < base + g->nmig * sizeof(*g->migs) &&
		    (p - base) % sizeof(*g->migs) == 0)
			return &g->migs[(p - base) / sizeof(*g->migs)];
	}
	return NULL;
}

/*
 * Like dev_enter for the calls that also take a MIG device handle: *gpu is
 * the GPU (the MIG device's parent), *mig the MIG device or NULL. Pair with
 * any_leave().
 */
static nvmlReturn_t any_enter(nvmlDevice_t dev, const char *fn, struct nvmlDevice_st **gpu,
			      struct sim_mig **mig)
{
	*gpu = NULL;
	*mig = NULL;
	pthread_mutex_lock(&lock);
	if (!node)
		return NVML_ERROR_UNINITIALIZED;
	if (valid(dev))
		*gpu = dev;
	else if ((*mig = mig_of(dev)))
		*gpu = (*mig)->parent;
	else
		return NVML_ERROR_INVALID_ARGUMENT;
	return gpu_enter(*gpu, fn);
}

static nvmlReturn_t any_leave(struct nvmlDevice_st *gpu, nvmlReturn_t r)
{
	if (gpu)
		gpu_result(gpu, r);
	pthread_mutex_unlock(&lock);
	return r;
}

static nvmlReturn_t copy_str(const char *s, char *buf, unsigned int len)
{
	size_t n;

	if (!buf)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!s)
		return NVML_ERROR_NOT_SUPPORTED;
	n = strlen(s);
	if (n >= len)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(buf, s, n + 1);
	return NVML_SUCCESS;
}

static nvmlReturn_t put_uint(struct sim_val v, unsigned int *out)
{
	if (!out)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!v.ok)
		return NVML_ERROR_NOT_SUPPORTED;
	*out = (unsigned int)v.v;
	return NVML_SUCCESS;
}

static nvmlReturn_t put_int(struct sim_val v, int *out)
{
	if (!out)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!v.ok)
		return NVML_ERROR_NOT_SUPPORTED;
	*out = (int)v.v;
	return NVML_SUCCESS;
}

static nvmlReturn_t put_ull(struct sim_val v, unsigned long long *out)
{
	if (!out)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!v.ok)
		return NVML_ERROR_NOT_SUPPORTED;
	*out = v.v;
	return NVML_SUCCESS;
}

/* The common shapes: one metric of the GPU, at a fixed offset in its struct. */
static struct sim_val field(nvmlDevice_t dev, size_t off)
{
	struct sim_val v;

	memcpy(&v, (const char *)dev + off, sizeof(v));
	return v;
}

/*
 * sin(2π·turns) for turns ≥ 0, by Bhaskara I's rational approximation on each
 * half turn (within 0.0017 of the sine): the simulator's one use of libm,
 * which would otherwise be loaded, at about 0.07 ms, by every program that
 * opens the simulated node.
 */
static double sine_of_turns(double turns)
{
	double x = (turns - (double)(long long)turns) * 2 * M_PI; /* 0 ≤ x < 2π */
	double sign = 1;
	if (x >= M_PI) {
		x -= M_PI;
		sign = -1;
	}
	double p = x * (M_PI - x);
	return sign * 16 * p / (5 * M_PI * M_PI - 4 * p);
}

/*
 * A GPU with "vary": how far its load is from the file's now, in percent
 * points (-amplitude..amplitude), on a sine of the wall clock, so that every
 * process sees the same; each GPU a little out of phase with the others.
 */
static double vary_delta(const struct nvmlDevice_st *d)
{
	if (!d->vary_period_s)
		return 0;
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	double t = (double)(now.tv_sec % 86400) + (double)now.tv_nsec / 1e9;
	return (double)d->vary_amplitude * sine_of_turns(t / d->vary_period_s + 0.9 * d->index / (2 * M_PI));
}

static unsigned int clamp_pct(double v)
{
	return v < 0 ? 0 : v > 100 ? 100 : (unsigned int)(v + 0.5);
}

/* a varying GPU's load, power draw (its share of the limit moves with the load) and temperature */
static struct sim_val varied(const struct nvmlDevice_st *d, struct sim_val v, int what)
{
	if (!v.ok || !d->vary_period_s)
		return v;
	double x = vary_delta(d);
	switch (what) {
	case 0: v.v = clamp_pct((double)v.v + x); break; /* utilization, % */
	case 1: { /* power: the load's change, as a share of the limit */
		double lim = d->power_limit.ok ? (double)d->power_limit.v : (double)v.v * 2;
		double p = (double)v.v + x / 100.0 * lim * 0.8, floor = (double)v.v * 0.4;
		v.v = (uint64_t)(p < floor ? floor : p);
		break;
	}
	case 2: { double t = (double)v.v + x / 5.0; v.v = t < 0 ? 0 : (uint64_t)t; break; } /* temperature, C */
	}
	return v;
}

static nvmlReturn_t dev_uint(nvmlDevice_t dev, const char *fn, size_t off, unsigned int *out)
{
	nvmlReturn_t r = dev_enter(dev, fn);

	if (r == NVML_SUCCESS)
		r = put_uint(field(dev, off), out);
	return dev_leave(dev, r);
}

static nvmlReturn_t dev_ull(nvmlDevice_t dev, const char *fn, size_t off, unsigned long long *out)
{
	nvmlReturn_t r = dev_enter(dev, fn);

	if (r == NVML_SUCCESS)
		r = put_ull(field(dev, off), out);
	return dev_leave(dev, r);
}

static nvmlReturn_t dev_int(nvmlDevice_t dev, const char *fn, size_t off, int *out)
{
	nvmlReturn_t r = dev_enter(dev, fn);

	if (r == NVML_SUCCESS)
		r = put_int(field(dev, off), out);
	return dev_leave(dev, r);
}

#define OFF(member) offsetof(struct nvmlDevice_st, member)

/* ---- system ------------------------------------------------------------- */

nvmlReturn_t nvmlSystemGetDriverVersion(char *buf, unsigned int len)
{
	nvmlReturn_t r = sys_enter(__func__);

	if (r == NVML_SUCCESS)
		r = copy_str(node->driver_version, buf, len);
	return leave(r);
}

nvmlReturn_t nvmlSystemGetNVMLVersion(char *buf, unsigned int len)
{
	nvmlReturn_t r = sys_enter(__func__);

	if (r == NVML_SUCCESS)
		r = copy_str(node->nvml_version, buf, len);
	return leave(r);
}

/*
 * Real NVML answers this one without nvmlInit (it asks libcuda), so before
 * init the node file is read just for the answer.
 */
static nvmlReturn_t cuda_version(const char *fn, int *v)
{
	struct sim_node *n;
	char err[256];
	nvmlReturn_t r;

	if (!v)
		return NVML_ERROR_INVALID_ARGUMENT;
	pthread_mutex_lock(&lock);
	n = node;
	if (!n) {
		const char *path = node_file();

		n = path && path[0] ? sim_node_load(path, err, sizeof(err)) : NULL;
	}
	if (!n) {
		r = NVML_ERROR_LIBRARY_NOT_FOUND;
	} else {
		r = sim_fault_check(&n->faults, fn);
		if (r == NVML_SUCCESS)
			r = put_int(n->cuda_version, v);
		if (n != node)
			sim_node_free(n);
	}
	pthread_mutex_unlock(&lock);
	return r;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v)
{
	return cuda_version(__func__, v);
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v)
{
	return cuda_version(__func__, v);
}

static nvmlReturn_t count_common(const char *fn, unsigned int *count)
{
	nvmlReturn_t r = sys_enter(fn);

	if (r == NVML_SUCCESS) {
		if (!count)
			r = NVML_ERROR_INVALID_ARGUMENT;
		else
			*count = node->ngpus;
	}
	return leave(r);
}

nvmlReturn_t nvmlDeviceGetCount(unsigned int *count)
{
	return count_common(__func__, count);
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count)
{
	return count_common(__func__, count);
}

/* ---- handles ------------------------------------------------------------ */

/* Calls that name a GPU consult that GPU's faults (node-level ones included). */
static nvmlReturn_t handle_common(const char *fn, struct nvmlDevice_st *g, nvmlDevice_t *dev)
{
	nvmlReturn_t r = gpu_result(g, gpu_enter(g, fn));

	if (r == NVML_SUCCESS)
		*dev = g;
	return r;
}

static nvmlReturn_t by_index(const char *fn, unsigned int index, nvmlDevice_t *dev)
{
	nvmlReturn_t r = NVML_ERROR_UNINITIALIZED;

	pthread_mutex_lock(&lock);
	if (!node)
		r = NVML_ERROR_UNINITIALIZED;
	else if (!dev || index >= node->ngpus)
		r = NVML_ERROR_INVALID_ARGUMENT;
	else
		r = handle_common(fn, &node->gpus[index], dev);
	return leave(r);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *dev)
{
	return by_index(__func__, index, dev);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *dev)
{
	return by_index(__func__, index, dev);
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *dev)
{
	nvmlReturn_t r = NVML_ERROR_UNINITIALIZED;

	pthread_mutex_lock(&lock);
	if (!node)
		return leave(r);
	if (!uuid || !dev)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	r = NVML_ERROR_NOT_FOUND;
	for (unsigned int i = 0; i < node->ngpus; i++) {
		struct nvmlDevice_st *g = &node->gpus[i];

		if (g->uuid && strcmp(g->uuid, uuid) == 0) {
			r = handle_common(__func__, g, dev);
			break;
		}
	}
	return leave(r);
}

/* "DDDDDDDD:BB:DD.F", "DDDD:BB:DD.F" or "BB:DD.F", hex, any case. */
static bool parse_bus_id(const char *s, unsigned int *domain, unsigned int *bus,
			 unsigned int *device)
{
	unsigned long v[3];
	int n = 0;
	char *end;

	for (;;) {
		if (!isxdigit((unsigned char)*s))
			return false;
		errno = 0;
		v[n] = strtoul(s, &end, 16);
		if (errno || end - s > 8)
			return false;
		n++;
		s = end;
		if (*s == ':' && n < 3) {
			s++;
			continue;
		}
		if (*s == '.' && n >= 2 && isxdigit((unsigned char)s[1]) && s[2] == '\0')
			break;
		return false;
	}
	*domain = n == 3 ? (unsigned int)v[0] : 0;
	*bus = (unsigned int)v[n - 2];
	*device = (unsigned int)v[n - 1];
	return true;
}

static nvmlReturn_t by_bus_id(const char *fn, const char *bus_id, nvmlDevice_t *dev)
{
	unsigned int d, b, s;
	nvmlReturn_t r = NVML_ERROR_UNINITIALIZED;

	pthread_mutex_lock(&lock);
	if (!node)
		return leave(r);
	if (!bus_id || !dev || !parse_bus_id(bus_id, &d, &b, &s))
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	r = NVML_ERROR_NOT_FOUND;
	for (unsigned int i = 0; i < node->ngpus; i++) {
		struct nvmlDevice_st *g = &node->gpus[i];

		if (g->pci_ok && g->domain == d && g->bus == b && g->device == s) {
			r = handle_common(fn, g, dev);
			break;
		}
	}
	return leave(r);
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *bus_id, nvmlDevice_t *dev)
{
	return by_bus_id(__func__, bus_id, dev);
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus_id, nvmlDevice_t *dev)
{
	return by_bus_id(__func__, bus_id, dev);
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t dev, unsigned int *index)
{
	nvmlReturn_t r = dev_enter(dev, __func__);

	if (r == NVML_SUCCESS) {
		if (!index)
			r = NVML_ERROR_INVALID_ARGUMENT;
		else
			*index = dev->index;
	}
	return dev_leave(dev, r);
}

/* ---- identity ----------------------------------------------------------- */

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t dev, char *buf, unsigned int len)
{
	struct nvmlDevice_st *g;
	struct sim_mig *m;
	nvmlReturn_t r = any_enter(dev, __func__, &g, &m);

	if (r == NVML_SUCCESS)
		r = copy_str(m ? m->name : g->name, buf, len);
	return any_leave(g, r);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t dev, char *buf, unsigned int len)
{
	struct nvmlDevice_st *g;
	struct sim_mig *m;
	nvmlReturn_t r = any_enter(dev, __func__, &g, &m);

	if (r == NVML_SUCCESS)
		r = copy_str(m ? m->uuid : g->uuid, buf, len);
	return any_leave(g, r);
}

nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t dev, char *buf, unsigned int len)
{
	nvmlReturn_t r = dev_enter(dev, __func__);

	if (r == NVML_SUCCESS)
		r = copy_str(dev->serial, buf, len);
	return dev_leave(dev, r);
}

nvmlReturn_t nvmlDeviceGetVbiosVersion(nvmlDevice_t dev, char *buf, unsigned int len)
{
	nvmlReturn_t r = dev_enter(dev, __func__);

	if (r == NVML_SUCCESS)
		r = copy_str(dev->vbios, buf, len);
	return dev_leave(dev, r);
}

static nvmlReturn_t pci_common(nvmlDevice_t dev, const char *fn, void *out, bool v3)
{
	nvmlReturn_t r = dev_enter(dev, fn);

	if (r == NVML_SUCCESS && !out)
		r = NVML_ERROR_INVALID_ARGUMENT;
	else if (r == NVML_SUCCESS && !dev->pci_ok)
		r = NVML_ERROR_NOT_SUPPORTED;
	if (r != NVML_SUCCESS)
		return dev_leave(dev, r);
	if (v3) {
		nvmlPciInfo_t p;

		memset(&p, 0, sizeof(p));
		snprintf(p.busIdLegacy, sizeof(p.busIdLegacy), "%04X:%02X:%02X.0",
			 dev->domain & 0xFFFF, dev->bus, dev->device);
		snprintf(p.busId, sizeof(p.busId), "%08X:%02X:%02X.0", dev->domain, dev->bus,
			 dev->device);
		p.domain = dev->domain;
		p.bus = dev->bus;
		p.device = dev->device;
		p.pciDeviceId = dev->device_id;
		p.pciSubSystemId = dev->subsystem_id;
		memcpy(out, &p, sizeof(p));
	} else {
		nvmlPciInfoLegacy_t p;

		memset(&p, 0, sizeof(p));
		snprintf(p.busId, sizeof(p.busId), "%04X:%02X:%02X.0", dev->domain & 0xFFFF,
			 dev->bus, dev->device);
		p.domain = dev->domain;
		p.bus = dev->bus;
		p.device = dev->device;
		p.pciDeviceId = dev->device_id;
		p.pciSubSystemId = dev->subsystem_id;
		memcpy(out, &p, sizeof(p));
	}
	return dev_leave(dev, r);
}

nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t dev, void *pci)
{
	return pci_common(dev, __func__, pci, false);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t dev, void *pci)
{
	return pci_common(dev, __func__, pci, false);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t dev, void *pci)
{
	return pci_common(dev, __func__, pci, true);
}

/* ---- processes and memory ---------------------------------------------- */

/*
 * The processes on a GPU of the given SIM_PROC_* types: the node's static
 * ones, then live registrations (compute) sorted by pid, minus registrations
 * of a pid the node already lists. *out is malloc'ed; the caller frees it.
 */
static nvmlReturn_t gather(struct nvmlDevice_st *g, unsigned int mask, struct sim_proc **out,
			   size_t *n)
{
	size_t cap = g->nprocs + 16, first, k;
	struct sim_proc *v = malloc(cap * sizeof(*v));
	bool mig = g->mig_current.ok && g->mig_current.v;

	*out = NULL;
	*n = 0;
	if (!v)
		return NVML_ERROR_MEMORY;
	for (size_t i = 0; i < g->nprocs; i++)
		if (g->procs[i].type & mask)
			v[(*n)++] = g->procs[i];
	if (!(mask & SIM_PROC_COMPUTE)) {
		*out = v;
		return NVML_SUCCESS;
	}
	first = *n;
	if (sim_rundir_scan(node->rundir, g->index, &v, n, &cap) < 0) {
		free(v);
		*n = 0;
		return NVML_ERROR_MEMORY;
	}
	for (size_t i = k = first; i < *n; i++) {
		bool dup = false;

		for (size_t j = 0; j < g->nprocs && !dup; j++)
			dup = g->procs[j].pid == v[i].pid;
		if (dup)
			continue;
		v[k] = v[i];
		if (mig)
			v[k].gpu_instance_id = v[k].compute_instance_id = 0;
		k++;
	}
	*n = k;
	*out = v;
	return NVML_SUCCESS;
}

/* bytes allocated on the GPU: baseline + known process memory, capped */
static nvmlReturn_t allocated(struct nvmlDevice_st *g, uint64_t *used)
{
	struct sim_proc *v;
	size_t n;
	nvmlReturn_t r = gather(g, SIM_PROC_COMPUTE | SIM_PROC_GRAPHICS, &v, &n);
	uint64_t sum = g->mem_used, room;

	if (r != NVML_SUCCESS)
		return r;
	for (size_t i = 0; i < n; i++)
		if (v[i].used_memory != NVML_VALUE_NOT_AVAILABLE_ULL)
			sum += v[i].used_memory;
	free(v);
	room = g->mem_total > g->mem_reserved ? g->mem_total - g->mem_reserved : 0;
	*used = sum < room ? sum : room;
	return NVML_SUCCESS;
}

/* a MIG device's used memory: its baseline plus the static processes in its instances */
static uint64_t mig_used(const struct sim_mig *m)
{
	const struct nvmlDevice_st *g = m->parent;
	uint64_t sum = m->mem_used;

	for (size_t i = 0; i < g->nprocs; i++)
		if (g->procs[i].gpu_instance_id == m->gpu_instance_id &&
		    g->procs[i].compute_instance_id == m->compute_instance_id &&
		    g->procs[i].used_memory != NVML_VALUE_NOT_AVAILABLE_ULL)
			sum += g->procs[i].used_memory;
	return sum < m->mem_total ? sum : m->mem_total;
}

/* nvmlDeviceGetMemoryInfo(_v2) on a MIG device handle (lock held): its own slice, nothing reserved */
static nvmlReturn_t mig_memory(const struct sim_mig *m, void *mem, bool v2)
{
	unsigned int version = 0;

	if (!mem)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (v2) {
		nvmlMemory_v2_t x;

		memcpy(&version, mem, sizeof(version));
		if (version != nvmlMemory_v2)
			return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
		memset(&x, 0, sizeof(x));
		x.version = version;
		x.total = m->mem_total;
		x.used = mig_used(m);
		x.free = x.total - x.used;
		memcpy(mem, &x, sizeof(x));
	} else {
		nvmlMemory_t x;

		x.total = m->mem_total;
		x.used = mig_used(m);
		x.free = x.total - x.used;
		memcpy(mem, &x, sizeof(x));
	}
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, void *mem)
{
	struct sim_mig *m;
	nvmlReturn_t r = any_enter(dev, __func__, &dev, &m);
	uint64_t used = 0;

	if (r == NVML_SUCCESS && m)
		return any_leave(dev, mig_memory(m, mem, false));

	if (r == NVML_SUCCESS && !mem)
		r = NVML_ERROR_INVALID_ARGUMENT;
	else if (r == NVML_SUCCESS && !dev->mem_ok)
		r = NVML_ERROR_NOT_SUPPORTED;
	if (r == NVML_SUCCESS)
		r = allocated(dev, &used);
	if (r == NVML_SUCCESS) {
		nvmlMemory_t x;
		uint64_t held = dev->mem_reserved + used;

		x.total = dev->mem_total;
		x.used = held < dev->mem_total ? held : dev->mem_total;
		x.free = dev->mem_total - x.used;
		memcpy(mem, &x, sizeof(x));
	}
	return dev_leave(dev, r);
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t dev, void *mem)
{
	struct sim_mig *m;
	nvmlReturn_t r = any_enter(dev, __func__, &dev, &m);
	unsigned int version = 0;
	uint64_t used = 0;

	if (r == NVML_SUCCESS && m)
		return any_leave(dev, mig_memory(m, mem, true));
	if (r == NVML_SUCCESS && !mem)
		r = NVML_ERROR_INVALID_ARGUMENT;
	if (r == NVML_SUCCESS) {
		memcpy(&version, mem, sizeof(version));
		if (version != nvmlMemory_v2)
			r = NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
		else if (!dev->mem_ok)
			r = NVML_ERROR_NOT_SUPPORTED;
	}
	if (r == NVML_SUCCESS)
		r = allocated(dev, &used);
	if (r == NVML_SUCCESS) {
		nvmlMemory_v2_t x;
		uint64_t held = dev->mem_reserved + used;

		memset(&x, 0, sizeof(x));
		x.version = version;
		x.total = dev->mem_total;
		x.reserved = dev->mem_reserved;
		x.used = used;
		x.free = held < dev->mem_total ? dev->mem_total - held : 0;
		memcpy(mem, &x, sizeof(x));
	}
	return dev_leave(dev, r);
}

/*
 * NVML's count protocol: *count is the capacity on the way in and the
 * number of processes on the way out; too small a capacity gives
 * INSUFFICIENT_SIZE (infos may then be NULL). Records are written as the
 * first `rec` bytes of the 32-byte layout, which every smaller one prefixes.
 */
static nvmlReturn_t fill_procs(nvmlDevice_t dev, unsigned int mask, unsigned int *count,
			       void *infos, size_t rec)
{
	struct sim_proc *v;
	size_t n;
	nvmlReturn_t r;

	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!dev->procs_ok)
		return NVML_ERROR_NOT_SUPPORTED;
	r = gather(dev, mask, &v, &n);
	if (r != NVML_SUCCESS)
		return r;
	if (*count < n) {
		*count = (unsigned int)n;
		r = NVML_ERROR_INSUFFICIENT_SIZE;
	} else if (n && !infos) {
		r = NVML_ERROR_INVALID_ARGUMENT;
	} else {
		for (size_t i = 0; i < n; i++) {
			nvmlProcessInfo_r535_t x;

			memset(&x, 0, sizeof(x));
			x.pid = v[i].pid;
			x.usedGpuMemory = v[i].used_memory;
			x.gpuInstanceId = v[i].gpu_instance_id;
			x.computeInstanceId = v[i].compute_instance_id;
			x.usedGpuCcProtectedMemory = 0;
			memcpy((char *)infos + i * rec, &x, rec);
		}
		*count = (unsigned int)n;
	}
	free(v);
	return r;
}

static nvmlReturn_t procs_common(nvmlDevice_t dev, const char *fn, unsigned int mask,
				 unsigned int *count, void *infos, size_t rec)
{
	nvmlReturn_t r = dev_enter(dev, fn);

	if (r == NVML_SUCCESS)
		r = fill_procs(dev, mask, count, infos, rec);
	return dev_leave(dev, r);
}

/* 535.43 .. 535.86 wrote 32-byte records from _v3; later drivers 24 bytes */
static size_t v3_record(void)
{
	return strcmp(sim_generation, "r535") == 0 ? sizeof(nvmlProcessInfo_r535_t)
						   : sizeof(nvmlProcessInfo_v2_t);
}

/* the wall clock in ns: NVML's timestamps (process samples, events) are of it */
static long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/*
 * One sample, taken now, per process of the node file with "sm_util" (or
 * "mem_util") above 0, as the driver keeps one for each process that ran
 * kernels in the window; none: NOT_FOUND, the driver's answer for an idle
 * GPU. The count protocol is fill_procs's.
 */
nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t dev, nvmlProcessUtilizationSample_t *samples,
					     unsigned int *count, unsigned long long last_seen)
{
	nvmlReturn_t r = dev_enter(dev, __func__);
	unsigned long long now_us = (unsigned long long)now_ns() / 1000;
	size_t n = 0;

	if (r == NVML_SUCCESS && !count)
		r = NVML_ERROR_INVALID_ARGUMENT;
	else if (r == NVML_SUCCESS && !dev->procs_ok)
		r = NVML_ERROR_NOT_SUPPORTED;
	if (r == NVML_SUCCESS) {
		for (size_t i = 0; i < dev->nprocs; i++)
			n += dev->procs[i].sm_util > 0 || dev->procs[i].mem_util > 0;
		if (n == 0 || last_seen >= now_us) {
			r = NVML_ERROR_NOT_FOUND;
		} else if (!samples || *count < n) {
			*count = (unsigned int)n;
			r = NVML_ERROR_INSUFFICIENT_SIZE;
		} else {
			size_t k = 0;

			for (size_t i = 0; i < dev->nprocs; i++) {
				const struct sim_proc *p = &dev->procs[i];

				if (p->sm_util <= 0 && p->mem_util <= 0)
					continue;
				memset(&samples[k], 0, sizeof(samples[k]));
				samples[k].pid = p->pid;
				samples[k].timeStamp = now_us;
				samples[k].smUtil = p->sm_util > 0 ? (unsigned int)p->sm_util : 0;
				samples[k].memUtil = p->mem_util > 0 ? (unsigned int)p->mem_util : 0;
				k++;
			}
			*count = (unsigned int)k;
		}
	}
	return dev_leave(dev, r);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t dev, unsigned int *count, void *infos)
{
	return procs_common(dev, __func__, SIM_PROC_COMPUTE, count, infos,
			    sizeof(nvmlProcessInfo_v1_t));
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t dev, unsigned int *count,
						     void *infos)
{
	return procs_common(dev, __func__, SIM_PROC_COMPUTE, count, infos,
			    sizeof(nvmlProcessInfo_v2_t));
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t dev, unsigned int *count,
						     void *infos)
{
	return procs_common(dev, __func__, SIM_PROC_COMPUTE, count, infos, v3_record());
}

nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t dev, unsigned int *count,
						   void *infos)
{
	return procs_common(dev, __func__, SIM_PROC_GRAPHICS, count, infos,
			    sizeof(nvmlProcessInfo_v1_t));
}

nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t dev, unsigned int *count,
						      void *infos)
{
	return procs_common(dev, __func__, SIM_PROC_GRAPHICS, count, infos,
			    sizeof(nvmlProcessInfo_v2_t));
}

nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t dev, unsigned int *count,
						      void *infos)
{
	return procs_common(dev, __func__, SIM_PROC_GRAPHICS, count, infos, v3_record());
}

nvmlReturn_t nvmlDeviceGetRunningProcessDetailList(nvmlDevice_t dev, void *list)
{
	nvmlReturn_t r = dev_enter(dev, __func__);
	sim_process_detail_list_t l;

	if (r == NVML_SUCCESS && !list)
		r = NVML_ERROR_INVALID_ARGUMENT;
	if (r != NVML_SUCCESS)
		return dev_leave(dev, r);
	memcpy(&l, list, sizeof(l));
	if (l.version != SIM_PROCESS_DETAIL_LIST_V1) {
		r = NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	} else if (l.mode > 2) {
		r = NVML_ERROR_INVALID_ARGUMENT;
	} else if (l.mode == 2) { /* MPS: the simulator runs no MPS server */
		l.numProcArrayEntries = 0;
	} else {
		r = fill_procs(dev, l.mode == 0 ? SIM_PROC_COMPUTE : SIM_PROC_GRAPHICS,
			       &l.numProcArrayEntries, l.procArray, sizeof(nvmlProcessInfo_r535_t));
	}
	if (r == NVML_SUCCESS || r == NVML_ERROR_INSUFFICIENT_SIZE)
		memcpy(list, &l, sizeof(l));
	return dev_leave(dev, r);
}

nvmlReturn_t nvmlDeviceGetConfComputeMemSizeInfo(nvmlDevice_t dev, void *info)
{
	nvmlReturn_t r = dev_enter(dev, __func__);

	if (r == NVML_SUCCESS)
		r = info ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_INVALID_ARGUMENT;
	return dev_leave(dev, r);
}

/* ---- metrics ------------------------------------------------------------ */

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t dev, nvmlUtilization_t *u)
{
	nvmlReturn_t r = dev_enter(dev, __func__);

	if (r == NVML_SUCCESS) {
		if (!u)
			r = NVML_ERROR_INVALID_ARGUMENT;
		else if (!dev->util_gpu.ok || !dev->util_mem.ok)
			r = NVML_ERROR_NOT_SUPPORTED;
		else {
			u->gpu = (unsigned int)varied(dev, dev->util_gpu, 0).v;
			u->memory = (unsigned int)varied(dev, dev->util_mem, 0).v;
		}
	}
	return dev_leave(dev, r);
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t dev, int sensor, unsigned int *t)
{
	nvmlReturn_t r = dev_enter(dev, __func__);

	if (r == NVML_SUCCESS)
		r = sensor != NVML_TEMPERATURE_GPU ? NVML_ERROR_INVALID_ARGUMENT
						   : put_uint(varied(dev, dev->temperature, 2), t);
	return dev_leave(dev, r);
}

nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t dev, unsigned int *speed)
{
	return dev_uint(dev, __func__, OFF(fan), speed);
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t dev, unsigned int *mw)
{
	nvmlReturn_t r = dev_enter(dev, __func__);

	if (r == NVML_SUCCESS)
		r = put_uint(varied(dev, dev->power_draw, 1), mw);
	return dev_leave(dev, r);
}

nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t dev, unsigned int *mw)
{
	return dev_uint(dev, __func__, OFF(power_limit), mw);
}

nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t dev, unsigned int *mw)
{
	return dev_uint(dev, __func__, OFF(power_enforced), mw);
}

nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t dev, unsigned int *mw)
{
	return dev_uint(dev, __func__, OFF(power_default), mw);
}

nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t dev, unsigned int *min,
							  unsigned int *max)
{
	nvmlReturn_t r = dev_enter(dev, __func__);

	if (r == NVML_SUCCESS) {
		if (!min || !max)
			r = NVML_ERROR_INVALID_ARGUMENT;
		else if (!dev->power_min.ok || !dev->power_max.ok)
			r = NVML_ERROR_NOT_SUPPORTED;
		else {
			*min = (unsigned int)dev->power_min.v;
			*max = (unsigned int)dev->power_max.v;
		}
	}
	return dev_leave(dev, r);
}

static nvmlReturn_t clock_common(nvmlDevice_t dev, const char *fn, bool max, int type,
				 unsigned int *mhz)
{
	nvmlReturn_t r = dev_enter(dev, fn);

	if (r == NVML_SUCCESS)
		r = (type < 0 || type > NVML_CLOCK_VIDEO)
			    ? NVML_ERROR_INVALID_ARGUMENT
			    : put_uint(max ? dev->max_clock[type] : dev->clock[type], mhz);
	return dev_leave(dev, r);
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t dev, int type, unsigned int *mhz)
{
	return clock_common(dev, __func__, false, type, mhz);
}

nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t dev, int type, unsigned int *mhz)
{
	return clock_common(dev, __func__, true, type, mhz);
}

nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t dev, unsigned long long *r)
{
	return dev_ull(dev, __func__, OFF(throttle), r);
}

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t dev, unsigned long long *r)
{
	return dev_ull(dev, __func__, OFF(throttle), r);
}

nvmlReturn_t nvmlDeviceGetSupportedClocksThrottleReasons(nvmlDevice_t dev, unsigned long long *r)
{
	return dev_ull(dev, __func__, OFF(supported_throttle), r);
}

nvmlReturn_t nvmlDeviceGetSupportedClocksEventReasons(nvmlDevice_t dev, unsigned long long *r)
{
	return dev_ull(dev, __func__, OFF(supported_throttle), r);
}

nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t dev, int *current, int *pending)
{
	nvmlReturn_t r = dev_enter(dev, __func__);

	if (r == NVML_SUCCESS) {
		if (!current || !pending)
			r = NVML_ERROR_INVALID_ARGUMENT;
		else if (!dev->ecc_current.ok || !dev->ecc_pending.ok)
			r = NVML_ERROR_NOT_SUPPORTED;
		else {
			*current = (int)dev->ecc_current.v;
			*pending = (int)dev->ecc_pending.v;
		}
	}
	return dev_leave(dev, r);
}

nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t dev, int error_type, int counter_type,
					 unsigned long long *count)
{
	nvmlReturn_t r = dev_enter(dev, __func__);

	if (r == NVML_SUCCESS) {
		if (error_type < 0 || error_type > 1 || counter_type < 0 || counter_type > 1)
			r = NVML_ERROR_INVALID_ARGUMENT;
		else
			r = put_ull(dev->ecc_count[error_type][counter_type], count);
	}
	return dev_leave(dev, r);
}

nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t dev, int *mode)
{
	return dev_int(dev, __func__, OFF(persistence), mode);
}

nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t dev, int *mode)
{
	return dev_int(dev, __func__, OFF(compute_mode), mode);
}

nvmlReturn_t nvmlDeviceGetPerformanceState(nvmlDevice_t dev, int *pstate)
{
	return dev_int(dev, __func__, OFF(pstate), pstate);
}

nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t dev, int *pending)
{
	return dev_int(dev, __func__, OFF(retired_pending), pending);
}

/* NOT_SUPPORTED while MIG is on, as the header documents */
nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t dev, unsigned int *corr, unsigned int *unc,
				       unsigned int *pending, unsigned int *failure)
{
	nvmlReturn_t r = dev_enter(dev, __func__);

	if (r == NVML_SUCCESS) {
		if (!corr || !unc || !pending || !failure)
			r = NVML_ERROR_INVALID_ARGUMENT;
		else if (!dev->remap_corr.ok || !dev->remap_uncorr.ok || !dev->remap_pending.ok ||
			 !dev->remap_failure.ok || (dev->mig_current.ok && dev->mig_current.v))
			r = NVML_ERROR_NOT_SUPPORTED;
		else {
			*corr = (unsigned int)dev->remap_corr.v;
			*unc = (unsigned int)dev->remap_uncorr.v;
			*pending = (unsigned int)dev->remap_pending.v;
			*failure = (unsigned int)dev->remap_failure.v;
		}
	}
	return dev_leave(dev, r);
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t dev, unsigned int *current, unsigned int *pending)
{
	nvmlReturn_t r = dev_enter(dev, __func__);

	if (r == NVML_SUCCESS) {
		if (!current || !pending)
			r = NVML_ERROR_INVALID_ARGUMENT;
		else if (!dev->mig_current.ok || !dev->mig_pending.ok)
			r = NVML_ERROR_NOT_SUPPORTED;
		else {
			*current = (unsigned int)dev->mig_current.v;
			*pending = (unsigned int)dev->mig_pending.v;
		}
	}
	return dev_leave(dev, r);
}

/* ---- MIG devices ------------------------------------------------------- */

static bool mig_on(const struct nvmlDevice_st *g)
{
	return g->mig_current.ok && g->mig_current.v;
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t dev, unsigned int *count)
{
	nvmlReturn_t r = dev_enter(dev, __func__);

	if (r == NVML_SUCCESS) {
		if (!count)
			r = NVML_ERROR_INVALID_ARGUMENT;
		else if (!dev->mig_current.ok || !dev->mig_max.ok)
			r = NVML_ERROR_NOT_SUPPORTED;
		else
			*count = mig_on(dev) ? (unsigned int)dev->mig_max.v : 0; /* 0 when MIG is off */
	}
	return dev_leave(dev, r);
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t dev, unsigned int index,
						 nvmlDevice_t *mig)
{
	nvmlReturn_t r = dev_enter(dev, __func__);

	if (r == NVML_SUCCESS) {
		if (!mig)
			r = NVML_ERROR_INVALID_ARGUMENT;
		else if (!mig_on(dev) || !dev->mig_max.ok)
			r = NVML_ERROR_NOT_SUPPORTED;
		else if (index >= dev->mig_max.v)
			r = NVML_ERROR_INVALID_ARGUMENT;
		else if (index >= dev->nmig)
			r = NVML_ERROR_NOT_FOUND;
		else
			*mig = (nvmlDevice_t)(void *)&dev->migs[index];
	}
	return dev_leave(dev, r);
}

nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t mig, nvmlDevice_t *dev)
{
	struct nvmlDevice_st *g;
	struct sim_mig *m;
	nvmlReturn_t r = any_enter(mig, __func__, &g, &m);

	if (r == NVML_SUCCESS) {
		if (!dev || !m)
			r = NVML_ERROR_INVALID_ARGUMENT;
		else
			*dev = g;
	}
	return any_leave(g, r);
}

nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t dev, unsigned int *is_mig)
{
	struct nvmlDevice_st *g;
	struct sim_mig *m;
	nvmlReturn_t r = any_enter(dev, __func__, &g, &m);

	if (r == NVML_SUCCESS) {
		if (!is_mig)
			r = NVML_ERROR_INVALID_ARGUMENT;
		else
			*is_mig = m != NULL;
	}
	return any_leave(g, r);
}

/* GPU and compute instance ids: of a MIG device handle only */
static nvmlReturn_t instance_id(const char *fn, nvmlDevice_t dev, unsigned int *id, bool gi)
{
	struct nvmlDevice_st *g;
	struct sim_mig *m;
	nvmlReturn_t r = any_enter(dev, fn, &g, &m);

	if (r == NVML_SUCCESS) {
		if (!id)
			r = NVML_ERROR_INVALID_ARGUMENT;
		else if (!m)
			r = NVML_ERROR_NOT_SUPPORTED;
		else
			*id = gi ? m->gpu_instance_id : m->compute_instance_id;
	}
	return any_leave(g, r);
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t dev, unsigned int *id)
{
	return instance_id(__func__, dev, id, true);
}

nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t dev, unsigned int *id)
{
	return instance_id(__func__, dev, id, false);
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t dev, unsigned int *v)
{
	return dev_uint(dev, __func__, OFF(pcie_gen), v);
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t dev, unsigned int *v)
{
	return dev_uint(dev, __func__, OFF(pcie_max_gen), v);
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t dev, unsigned int *v)
{
	return dev_uint(dev, __func__, OFF(pcie_width), v);
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t dev, unsigned int *v)
{
	return dev_uint(dev, __func__, OFF(pcie_max_width), v);
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t dev, unsigned long long *mj)
{
	return dev_ull(dev, __func__, OFF(energy), mj);
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t dev, int *major, int *minor)
{
	nvmlReturn_t r = dev_enter(dev, __func__);

	if (r == NVML_SUCCESS) {
		if (!major || !minor)
			r = NVML_ERROR_INVALID_ARGUMENT;
		else if (!dev->cc_major.ok || !dev->cc_minor.ok)
			r = NVML_ERROR_NOT_SUPPORTED;
		else {
			*major = (int)dev->cc_major.v;
			*minor = (int)dev->cc_minor.v;
		}
	}
	return dev_leave(dev, r);
}

/* ---- topology ----------------------------------------------------------- */

static bool same(const struct nvmlDevice_st *a, const struct nvmlDevice_st *b, int level)
{
	return a->topo[level] >= 0 && a->topo[level] == b->topo[level];
}

nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t a, nvmlDevice_t b, int *level)
{
	nvmlReturn_t r = dev_enter(a, __func__);

	if (r == NVML_SUCCESS) {
		if (!level || !valid(b))
			r = NVML_ERROR_INVALID_ARGUMENT;
		else if (a == b)
			*level = NVML_TOPOLOGY_INTERNAL;
		else if (same(a, b, SIM_TOPO_PCIE_SWITCH))
			*level = NVML_TOPOLOGY_SINGLE;
		else if (same(a, b, SIM_TOPO_PCIE_ROOT))
			*level = NVML_TOPOLOGY_MULTIPLE;
		else if (same(a, b, SIM_TOPO_HOST_BRIDGE))
			*level = NVML_TOPOLOGY_HOSTBRIDGE;
		else if (same(a, b, SIM_TOPO_NUMA))
			*level = NVML_TOPOLOGY_NODE;
		else
			*level = NVML_TOPOLOGY_SYSTEM;
	}
	return dev_leave(a, r);
}

/* ---- events: Xid errors ---------------------------------------------------- */

/*
 * An event set: the GPUs registered for Xid errors and the time of the
 * newest event it reported (its creation at first). Events come from the
 * run directory (gpuctl-sim-hold --xid), so any process can inject one
 * into a running gpuctl.
 */
#define SIM_MAX_GPUS 4096 /* node.c's NODE_MAX_GPUS */
struct nvmlEventSet_st {
	bool gpus[SIM_MAX_GPUS];
	long long after_ns;
	/* the run directory's watch, made at the first wait and kept: the driver's wait costs
	 * nothing while nothing happens, and neither should ours (gpuctld waits in a loop) */
	int ifd;            /* inotify, -1: none yet, or none to be had (then a look every 10 ms) */
	char watched[PATH_MAX]; /* the directory it watches */
	bool looked;        /* the directory was looked at since the watch's last event */
};

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set)
{
	nvmlReturn_t r = sys_enter(__func__);

	if (r == NVML_SUCCESS && !set)
		r = NVML_ERROR_INVALID_ARGUMENT;
	if (r == NVML_SUCCESS) {
		*set = calloc(1, sizeof(**set));
		if (!*set) {
			r = NVML_ERROR_MEMORY;
		} else {
			(*set)->after_ns = now_ns();
			(*set)->ifd = -1;
		}
	}
	return leave(r);
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set)
{
	if (set && set->ifd >= 0)
		close(set->ifd);
	free(set);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t dev, unsigned long long *types)
{
	nvmlReturn_t r = dev_enter(dev, __func__);

	if (r == NVML_SUCCESS) {
		if (!types)
			r = NVML_ERROR_INVALID_ARGUMENT;
		else
			*types = NVML_EVENT_TYPE_XID_CRITICAL_ERROR;
	}
	return dev_leave(dev, r);
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t dev, unsigned long long types, nvmlEventSet_t set)
{
	nvmlReturn_t r = dev_enter(dev, __func__);

	if (r == NVML_SUCCESS) {
		if (!set)
			r = NVML_ERROR_INVALID_ARGUMENT;
		else if (types & ~NVML_EVENT_TYPE_XID_CRITICAL_ERROR)
			r = NVML_ERROR_NOT_SUPPORTED; /* only Xid errors are simulated */
		else if (dev->index < SIM_MAX_GPUS)
			set->gpus[dev->index] = true;
	}
	return dev_leave(dev, r);
}

/* the next event, waiting up to timeout_ms; rec: bytes of nvmlEventData_t the version writes */
static nvmlReturn_t event_wait(const char *fn, nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeout_ms,
			       size_t rec)
{
	long long deadline = now_ns() + (long long)timeout_ms * 1000000LL;

	if (set && node && node->rundir && (set->ifd < 0 || strcmp(set->watched, node->rundir) != 0)) {
		/* the driver blocks: so do we, woken by a file made in the run directory (an Xid among
		 * them), watched before the first look so none is missed; every 10 ms without inotify */
		if (set->ifd >= 0)
			close(set->ifd);
		set->looked = false;
		set->ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
		if (set->ifd >= 0 && inotify_add_watch(set->ifd, node->rundir, IN_CREATE | IN_MOVED_TO) < 0) {
			close(set->ifd);
			set->ifd = -1;
		}
		snprintf(set->watched, sizeof(set->watched), "%s", node->rundir);
	}
	for (;;) {
		nvmlReturn_t r = sys_enter(fn);
		unsigned int gpu;
		long long ns;
		unsigned long long xid;

		if (r == NVML_SUCCESS && (!set || !data))
			r = NVML_ERROR_INVALID_ARGUMENT;
		if (r != NVML_SUCCESS)
			return leave(r);
		if (set->ifd < 0)
			set->looked = false; /* no watch: look each time */
		/* looked at again only after the watch saw a file made (or without a watch) */
		if (!set->looked &&
		    sim_rundir_next_xid(node->rundir, set->gpus, node->ngpus < SIM_MAX_GPUS ? node->ngpus : SIM_MAX_GPUS,
					set->after_ns, &gpu, &ns, &xid)) {
			nvmlEventData_t x;

			memset(&x, 0, sizeof(x));
			x.device = &node->gpus[gpu];
			x.eventType = NVML_EVENT_TYPE_XID_CRITICAL_ERROR;
			x.eventData = xid;
			x.gpuInstanceId = x.computeInstanceId = 0xFFFFFFFFu;
			memcpy(data, &x, rec);
			set->after_ns = ns;
			return leave(NVML_SUCCESS); /* more may be there: the next wait looks again */
		}
		set->looked = set->ifd >= 0;
		leave(NVML_SUCCESS);
		long long left = deadline - now_ns();
		if (left <= 0)
			return NVML_ERROR_TIMEOUT;
		if (set->ifd >= 0) {
			char buf[4096];
			struct pollfd pfd = {.fd = set->ifd, .events = POLLIN};

			if (poll(&pfd, 1, (int)((left + 999999) / 1000000)) > 0) {
				bool gone = false;
				ssize_t n;

				while ((n = read(set->ifd, buf, sizeof(buf))) > 0)
					for (ssize_t at = 0; at + (ssize_t)sizeof(struct inotify_event) <= n;) {
						struct inotify_event ev;

						memcpy(&ev, buf + at, sizeof(ev));
						gone |= (ev.mask & IN_IGNORED) != 0;
						at += (ssize_t)sizeof(ev) + ev.len;
					}
				set->looked = false;
				if (gone) { /* the directory went: watch it again at the next wait */
					close(set->ifd);
					set->ifd = -1;
				}
			}
		} else {
			nanosleep(&(struct timespec){.tv_nsec = 10000000}, NULL);
		}
	}
}

nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeout_ms)
{
	return event_wait(__func__, set, data, timeout_ms, sizeof(nvmlEventData_t));
}

nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeout_ms)
{
	return event_wait(__func__, set, data, timeout_ms, 24);
}
