/*
 * nvml.c — the NVML backend: the only file in gpuctl that knows NVML.
 *
 * It dlopens libnvidia-ml.so.1 (or the simulator, or $GPUCTL_NVML_LIBRARY),
 * resolves every entry point newest version first so that one binary runs
 * on drivers from R410 to today, and turns each call into a value plus a
 * status (gc_status) so that "not supported" is never shown as 0.
 *
 * ABI quirks handled here (facts: docs/facts/nvml-abi.md):
 *  - nvmlMemory_v2_t needs version 0x02000028; its `used` excludes the
 *    reserved memory, like nvidia-smi. Old drivers fall back to v1, where
 *    `used` includes it and `reserved` is not available.
 *  - nvmlDeviceGetPciInfo_v3 writes the 68-byte R418+ struct; _v2/v1 the
 *    52-byte one whose busId is the legacy 4-digit-domain form.
 *  - drivers 535.43..535.86 write 32-byte records from
 *    nvmlDeviceGet*RunningProcesses_v3 while declaring 24. Those drivers are
 *    recognised (as nvitop does: _v3 and ConfComputeMemSizeInfo present,
 *    RunningProcessDetailList absent, or the version string) and the _v2
 *    entry point, whose records are 24 bytes on every driver, is used.
 *  - process lists grow-and-retry on INSUFFICIENT_SIZE; a usedGpuMemory of
 *    ULLONG_MAX means "not available".
 *  - a GPU in MIG mode is enumerated through nvmlDeviceGetMaxMigDeviceCount and
 *    nvmlDeviceGetMigDeviceHandleByIndex (NOT_FOUND marks an empty slot); a MIG
 *    device handle answers GetUUID ("MIG-..."), GetName ("<GPU> MIG 1g.10gb",
 *    whose suffix is the profile), GetMemoryInfo and the GPU/compute instance ids.
 * Static facts (name, UUID, serial, PCI, max clocks, ...) are fetched once
 * per device and cached; handles are kept for the life of the context.
 */
#include "config.h"
#include "util/clock.h"
#include "util/errbuf.h"
#include "device/nvml.h"
#include "device/nvml-abi.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_NVML_LIBRARY "libnvidia-ml.so.1"
#define PROC_RETRIES 5
#define PROC_MAX 65536 /* bound on one device's process list */
#define MIG_MAX 64     /* bound on one GPU's MIG device slots (7 on every MIG GPU so far) */

/* bits of gc_value that never change while the driver is loaded */
#define STATIC_MASK (GC_BIT(GC_V_NAME) | GC_BIT(GC_V_UUID) | GC_BIT(GC_V_SERIAL) | \
	GC_BIT(GC_V_VBIOS) | GC_BIT(GC_V_PCI) | GC_BIT(GC_V_CLK_MAX_GR) | \
	GC_BIT(GC_V_CLK_MAX_SM) | GC_BIT(GC_V_CLK_MAX_MEM) | GC_BIT(GC_V_COMPUTE_CAP) | \
	GC_BIT(GC_V_PCIE_GEN_MAX) | GC_BIT(GC_V_PCIE_WIDTH_MAX) | \
	GC_BIT(GC_V_REASONS_SUPPORTED) | GC_BIT(GC_V_POWER_DEFAULT) | \
	GC_BIT(GC_V_POWER_MIN) | GC_BIT(GC_V_POWER_MAX))

struct dev {
	nvmlDevice_t h;
	int handle_rc;          /* NVML rc of getting the handle */
	uint64_t cached;        /* STATIC_MASK bits already in *stat */
	gc_gpu *stat;           /* cache of the static values and their statuses; made at the second sample */
	bool sampled;           /* sampled before */
	unsigned long long util_seen; /* the newest process utilization sample taken (NVML's us) */
};

struct nvml {
	void *dl;
	nvml_fn_void init, shutdown;
	nvml_fn_errstr errstr;
	nvml_fn_sysstr driver_version, nvml_version;
	nvml_fn_sysint cuda_version;
	nvml_fn_count count;
	nvml_fn_handle_by_index handle;
	nvml_fn_devstr name, uuid, serial, vbios;
	nvml_fn_pci pci;
	int pci_v3;
	nvml_fn_mem mem;
	nvml_fn_mem mem_v1;
	int mem_v2;
	nvml_fn_util util;
	nvml_fn_devenum temp, clock, max_clock;
	nvml_fn_devuint fan, power, power_limit, power_enforced, power_default;
	nvml_fn_devuint pcie_gen, pcie_gen_max, pcie_width, pcie_width_max;
	nvml_fn_devuint2 power_constraints, mig;
	nvml_fn_devull reasons, reasons_supported, energy;
	nvml_fn_devint2 ecc_mode, cc;
	nvml_fn_ecc ecc_total;
	nvml_fn_devint persistence, compute_mode, pstate, retired_pending;
	nvml_fn_remap remap;
	nvml_fn_proc_util proc_util;
	nvml_fn_evset_create evset_create;
	nvml_fn_evset_free evset_free;
	nvml_fn_register_events register_events;
	nvml_fn_evset_wait evset_wait;  /* _v2, else the first version (it writes 24 of the 32 bytes) */
	nvmlEventSet_t evset;           /* Xid events of every GPU, once nvml_xid_watch made it */
	nvml_fn_procs cprocs, gprocs;
	size_t proc_stride;
	const char *proc_api;
	nvml_fn_topo topo;
	nvml_fn_devuint mig_max, mig_gi, mig_ci;
	nvml_fn_mig_handle mig_handle;

	unsigned ndev;
	struct dev *devs;
	unsigned char *scratch; /* process records */
	size_t scratch_cap;     /* in records */
};

static void *sym(struct nvml *n, const char *name)
{
	return dlsym(n->dl, name);
}

void *nvml_symbol(struct nvml *n, const char *name)
{
	return n ? sym(n, name) : NULL;
}

/* first symbol of a NULL-terminated list that the library exports */
static void *sym_first(struct nvml *n, const char **names, const char **found)
{
	for (; *names; names++) {
		void *p = sym(n, *names);
		if (p) {
			if (found)
				*found = *names;
			return p;
		}
	}
	return NULL;
}

#define SYM(n, type, ...) ((type)sym_first((n), (const char *[]){__VA_ARGS__, NULL}, NULL))

static const char *errstr(const struct nvml *n, nvmlReturn_t rc)
{
	const char *s = n->errstr ? n->errstr(rc) : NULL;
	return s ? s : "unknown NVML error";
}

static uint8_t status_of(nvmlReturn_t rc)
{
	switch (rc) {
	case NVML_SUCCESS: return GC_ST_OK;
	case NVML_ERROR_NOT_SUPPORTED:
	case NVML_ERROR_FUNCTION_NOT_FOUND:
	case NVML_ERROR_NOT_FOUND:
		return GC_ST_NOT_SUPPORTED;
	case NVML_ERROR_NO_PERMISSION: return GC_ST_NO_PERMISSION;
	case NVML_ERROR_GPU_IS_LOST: return GC_ST_GPU_LOST;
	case NVML_ERROR_RESET_REQUIRED: return GC_ST_RESET_REQUIRED;
	default: return GC_ST_UNKNOWN_ERROR;
	}
}

/* Is this an R535.43..535.86 driver whose _v3 records are 32 bytes? */
static int is_r535_v3(struct nvml *n)
{
	if (sym(n, "nvmlDeviceGetConfComputeMemSizeInfo") &&
	    !sym(n, "nvmlDeviceGetRunningProcessDetailList"))
		return 1;
	char ver[NVML_VERSION_BUFFER_SIZE] = "";
	if (n->driver_version && n->driver_version(ver, sizeof ver) == NVML_SUCCESS) {
		unsigned maj = 0, min = 0;
		if (sscanf(ver, "%u.%u", &maj, &min) == 2 && maj == 535 && min >= 43 && min <= 86)
			return 1;
	}
	return 0;
}

static void resolve(struct nvml *n)
{
	n->errstr = SYM(n, nvml_fn_errstr, "nvmlErrorString");
	n->shutdown = SYM(n, nvml_fn_void, "nvmlShutdown");
	n->driver_version = SYM(n, nvml_fn_sysstr, "nvmlSystemGetDriverVersion");
	n->nvml_version = SYM(n, nvml_fn_sysstr, "nvmlSystemGetNVMLVersion");
	n->cuda_version = SYM(n, nvml_fn_sysint, "nvmlSystemGetCudaDriverVersion_v2",
			      "nvmlSystemGetCudaDriverVersion");
	n->count = SYM(n, nvml_fn_count, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
	n->handle = SYM(n, nvml_fn_handle_by_index, "nvmlDeviceGetHandleByIndex_v2",
			"nvmlDeviceGetHandleByIndex");
	n->name = SYM(n, nvml_fn_devstr, "nvmlDeviceGetName");
	n->uuid = SYM(n, nvml_fn_devstr, "nvmlDeviceGetUUID");
	n->serial = SYM(n, nvml_fn_devstr, "nvmlDeviceGetSerial");
	n->vbios = SYM(n, nvml_fn_devstr, "nvmlDeviceGetVbiosVersion");
	n->pci = SYM(n, nvml_fn_pci, "nvmlDeviceGetPciInfo_v3");
	n->pci_v3 = n->pci != NULL;
	if (!n->pci)
		n->pci = SYM(n, nvml_fn_pci, "nvmlDeviceGetPciInfo_v2", "nvmlDeviceGetPciInfo");
	n->mem = SYM(n, nvml_fn_mem, "nvmlDeviceGetMemoryInfo_v2");
	n->mem_v2 = n->mem != NULL;
	n->mem_v1 = SYM(n, nvml_fn_mem, "nvmlDeviceGetMemoryInfo");
	if (!n->mem)
		n->mem = n->mem_v1;
	n->util = SYM(n, nvml_fn_util, "nvmlDeviceGetUtilizationRates");
	n->temp = SYM(n, nvml_fn_devenum, "nvmlDeviceGetTemperature");
	n->clock = SYM(n, nvml_fn_devenum, "nvmlDeviceGetClockInfo");
	n->max_clock = SYM(n, nvml_fn_devenum, "nvmlDeviceGetMaxClockInfo");
	n->fan = SYM(n, nvml_fn_devuint, "nvmlDeviceGetFanSpeed");
	n->power = SYM(n, nvml_fn_devuint, "nvmlDeviceGetPowerUsage");
	n->power_limit = SYM(n, nvml_fn_devuint, "nvmlDeviceGetPowerManagementLimit");
	n->power_enforced = SYM(n, nvml_fn_devuint, "nvmlDeviceGetEnforcedPowerLimit");
	n->power_default = SYM(n, nvml_fn_devuint, "nvmlDeviceGetPowerManagementDefaultLimit");
	n->power_constraints = SYM(n, nvml_fn_devuint2, "nvmlDeviceGetPowerManagementLimitConstraints");
	n->pcie_gen = SYM(n, nvml_fn_devuint, "nvmlDeviceGetCurrPcieLinkGeneration");
	n->pcie_gen_max = SYM(n, nvml_fn_devuint, "nvmlDeviceGetMaxPcieLinkGeneration");
	n->pcie_width = SYM(n, nvml_fn_devuint, "nvmlDeviceGetCurrPcieLinkWidth");
	n->pcie_width_max = SYM(n, nvml_fn_devuint, "nvmlDeviceGetMaxPcieLinkWidth");
	n->mig = SYM(n, nvml_fn_devuint2, "nvmlDeviceGetMigMode");
	n->reasons = SYM(n, nvml_fn_devull, "nvmlDeviceGetCurrentClocksEventReasons",
			 "nvmlDeviceGetCurrentClocksThrottleReasons");
	n->reasons_supported = SYM(n, nvml_fn_devull, "nvmlDeviceGetSupportedClocksEventReasons",
				   "nvmlDeviceGetSupportedClocksThrottleReasons");
	n->energy = SYM(n, nvml_fn_devull, "nvmlDeviceGetTotalEnergyConsumption");
	n->ecc_mode = SYM(n, nvml_fn_devint2, "nvmlDeviceGetEccMode");
	n->ecc_total = SYM(n, nvml_fn_ecc, "nvmlDeviceGetTotalEccErrors");
	n->cc = SYM(n, nvml_fn_devint2, "nvmlDeviceGetCudaComputeCapability");
	n->persistence = SYM(n, nvml_fn_devint, "nvmlDeviceGetPersistenceMode");
	n->compute_mode = SYM(n, nvml_fn_devint, "nvmlDeviceGetComputeMode");
	n->pstate = SYM(n, nvml_fn_devint, "nvmlDeviceGetPerformanceState");
	n->topo = SYM(n, nvml_fn_topo, "nvmlDeviceGetTopologyCommonAncestor");
	/* nvmlEnableState_t *isPending: an enum, 4 bytes */
	n->retired_pending = SYM(n, nvml_fn_devint, "nvmlDeviceGetRetiredPagesPendingStatus");
	n->remap = SYM(n, nvml_fn_remap, "nvmlDeviceGetRemappedRows");
	n->proc_util = SYM(n, nvml_fn_proc_util, "nvmlDeviceGetProcessUtilization");
	n->evset_create = SYM(n, nvml_fn_evset_create, "nvmlEventSetCreate");
	n->evset_free = SYM(n, nvml_fn_evset_free, "nvmlEventSetFree");
	n->register_events = SYM(n, nvml_fn_register_events, "nvmlDeviceRegisterEvents");
	n->evset_wait = SYM(n, nvml_fn_evset_wait, "nvmlEventSetWait_v2", "nvmlEventSetWait");
	/* MIG enumeration, R450+; absent on older drivers (the GPU then has no MIG devices to show) */
	n->mig_max = SYM(n, nvml_fn_devuint, "nvmlDeviceGetMaxMigDeviceCount");
	n->mig_handle = SYM(n, nvml_fn_mig_handle, "nvmlDeviceGetMigDeviceHandleByIndex");
	n->mig_gi = SYM(n, nvml_fn_devuint, "nvmlDeviceGetGpuInstanceId");
	n->mig_ci = SYM(n, nvml_fn_devuint, "nvmlDeviceGetComputeInstanceId");
}

/* Process entry points: resolved after init (the r535 check may ask the driver version). */
static void resolve_procs(struct nvml *n)
{
	static const char *v3[] = {"nvmlDeviceGetComputeRunningProcesses_v3",
				   "nvmlDeviceGetGraphicsRunningProcesses_v3"};
	static const char *v2[] = {"nvmlDeviceGetComputeRunningProcesses_v2",
				   "nvmlDeviceGetGraphicsRunningProcesses_v2"};
	static const char *v1[] = {"nvmlDeviceGetComputeRunningProcesses",
				   "nvmlDeviceGetGraphicsRunningProcesses"};
	const char **pick = NULL;
	if (sym(n, v3[0]) && !is_r535_v3(n)) {
		pick = v3;
		n->proc_stride = sizeof(nvmlProcessInfo_v2_t);
	} else if (sym(n, v2[0])) {
		pick = v2;
		n->proc_stride = sizeof(nvmlProcessInfo_v2_t);
	} else {
		pick = v1;
		n->proc_stride = sizeof(nvmlProcessInfo_v1_t);
	}
	n->cprocs = (nvml_fn_procs)sym(n, pick[0]);
	n->gprocs = (nvml_fn_procs)sym(n, pick[1]);
	n->proc_api = n->cprocs ? pick[0] : "none";
}

static int init_error(struct nvml *n, nvmlReturn_t rc, const char *path, char *err, size_t errlen)
{
	typedef const char *(*sim_err_fn)(void);
	sim_err_fn simerr = (sim_err_fn)sym(n, "gpuctlSimLastError");
	const char *sm = simerr ? simerr() : NULL;
	if (sm && *sm) {
		errbuf_set(err, errlen, "simulated node: %s", sm);
		return GC_ESIM;
	}
	switch (rc) {
	case NVML_ERROR_DRIVER_NOT_LOADED:
		errbuf_set(err, errlen, "NVIDIA driver not loaded: %s loaded but nvmlInit failed (%s); "
			"is the nvidia kernel module loaded?", path, errstr(n, rc));
		return GC_ENODRIVER;
	case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
		errbuf_set(err, errlen, "NVIDIA driver/library version mismatch: the loaded kernel module "
			"and %s differ (usually the driver was upgraded without a reboot; reboot or "
			"reload the nvidia kernel module)", path);
		return GC_EMISMATCH;
	case NVML_ERROR_NO_PERMISSION:
		errbuf_set(err, errlen, "no permission to use the NVIDIA driver (%s): check the "
			"permissions of /dev/nvidia*", errstr(n, rc));
		return GC_ENOPERM;
	default:
		errbuf_set(err, errlen, "cannot initialise NVML from %s: %s", path, errstr(n, rc));
		return GC_ENVML;
	}
}

int nvml_open(struct nvml **out, const char *path, const char *sim_node, char *err, size_t errlen)
{
	*out = NULL;
	if (!path)
		path = DEFAULT_NVML_LIBRARY;
	struct nvml *n = calloc(1, sizeof *n);
	if (!n) {
		errbuf_set(err, errlen, "out of memory");
		return GC_ENOMEM;
	}
	n->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!n->dl) {
		const char *why = dlerror();
		errbuf_set(err, errlen, "NVIDIA driver not found: cannot load %s (%s)", path,
			why ? why : "unknown error");
		free(n);
		return GC_ENOLIB;
	}
	n->init = SYM(n, nvml_fn_void, "nvmlInit_v2", "nvmlInit");
	if (!n->init) {
		errbuf_set(err, errlen, "%s is not an NVML library (no nvmlInit)", path);
		dlclose(n->dl);
		free(n);
		return GC_ENOLIB;
	}
	if (sim_node) {
		typedef int (*set_node_fn)(const char *);
		set_node_fn set = (set_node_fn)nvml_symbol(n, "gpuctlSimSetNode");
		if (!set || set(sim_node) != 0) {
			if (set)
				errbuf_set(err, errlen, "simulated node path too long (%zu bytes): '%.200s...'",
					   strlen(sim_node), sim_node);
			else
				errbuf_set(err, errlen, "%s is not the gpuctl simulator (no gpuctlSimSetNode)", path);
			dlclose(n->dl);
			free(n);
			return GC_ENOLIB;
		}
	}
	resolve(n);
	nvmlReturn_t rc = n->init();
	if (rc != NVML_SUCCESS) {
		int e = init_error(n, rc, path, err, errlen);
		dlclose(n->dl);
		free(n);
		return e;
	}
	resolve_procs(n);
	unsigned cnt = 0;
	rc = n->count ? n->count(&cnt) : NVML_ERROR_FUNCTION_NOT_FOUND;
	if (rc != NVML_SUCCESS) {
		errbuf_set(err, errlen, "cannot count GPUs: %s", errstr(n, rc));
		nvml_close(n);
		return rc == NVML_ERROR_NO_PERMISSION ? GC_ENOPERM : GC_ENVML;
	}
	if (cnt > 4096)
		cnt = 4096; /* bound what a driver can make us allocate */
	n->ndev = cnt;
	n->devs = calloc(cnt ? cnt : 1, sizeof *n->devs);
	if (!n->devs) {
		errbuf_set(err, errlen, "out of memory");
		nvml_close(n);
		return GC_ENOMEM;
	}
	for (unsigned i = 0; i < cnt; i++) {
		n->devs[i].handle_rc = n->handle ? n->handle(i, &n->devs[i].h)
						 : NVML_ERROR_FUNCTION_NOT_FOUND;
		if (n->devs[i].handle_rc != NVML_SUCCESS)
			n->devs[i].h = NULL;
	}
	*out = n;
	return GC_OK;
}

void nvml_close(struct nvml *n)
{
	if (!n)
		return;
	if (n->evset && n->evset_free)
		n->evset_free(n->evset);
	if (n->shutdown)
		n->shutdown();
	if (n->dl)
		dlclose(n->dl);
	for (unsigned i = 0; i < n->ndev; i++)
		free(n->devs[i].stat);
	free(n->devs);
	free(n->scratch);
	free(n);
}

int nvml_xid_watch(struct nvml *n, char *err, size_t errlen)
{
	if (n->evset)
		return GC_OK;
	if (!n->evset_create || !n->register_events || !n->evset_wait) {
		errbuf_set(err, errlen, "this driver has no event API (nvmlEventSetCreate): Xid errors cannot be watched");
		return GC_ENOTFOUND;
	}
	nvmlReturn_t rc = n->evset_create(&n->evset);
	if (rc != NVML_SUCCESS) {
		errbuf_set(err, errlen, "nvmlEventSetCreate: %s", errstr(n, rc));
		n->evset = NULL;
		return rc == NVML_ERROR_NO_PERMISSION ? GC_ENOPERM : GC_ENVML;
	}
	unsigned watched = 0;
	for (unsigned i = 0; i < n->ndev; i++)
		if (n->devs[i].h &&
		    n->register_events(n->devs[i].h, NVML_EVENT_TYPE_XID_CRITICAL_ERROR, n->evset) == NVML_SUCCESS)
			watched++;
	if (watched == 0) {
		errbuf_set(err, errlen, "no GPU reports Xid errors as events (nvmlDeviceRegisterEvents)");
		if (n->evset_free)
			n->evset_free(n->evset);
		n->evset = NULL;
		return GC_ENOTFOUND;
	}
	return GC_OK;
}

int nvml_xid_next(struct nvml *n, int timeout_ms, unsigned *gpu, uint64_t *xid, char *err, size_t errlen)
{
	if (!n->evset) {
		errbuf_set(err, errlen, "Xid errors are not watched (gc_xid_watch first)");
		return GC_EINVAL;
	}
	nvmlEventData_t d;
	memset(&d, 0, sizeof d);
	nvmlReturn_t rc = n->evset_wait(n->evset, &d, timeout_ms < 0 ? 0 : (unsigned)timeout_ms);
	if (rc == NVML_ERROR_TIMEOUT)
		return 0;
	if (rc != NVML_SUCCESS) {
		errbuf_set(err, errlen, "nvmlEventSetWait: %s", errstr(n, rc));
		return rc == NVML_ERROR_GPU_IS_LOST ? GC_EGPULOST : GC_ENVML;
	}
	if (!(d.eventType & NVML_EVENT_TYPE_XID_CRITICAL_ERROR))
		return 0; /* nothing else was registered; ignore what else comes */
	*gpu = UINT_MAX;
	for (unsigned i = 0; i < n->ndev; i++)
		if (n->devs[i].h == d.device)
			*gpu = i;
	*xid = d.eventData;
	return 1;
}

size_t nvml_count(const struct nvml *n)
{
	return n->ndev;
}

const char *nvml_proc_api(const struct nvml *n)
{
	return n->proc_api;
}

void nvml_system_info(struct nvml *n, gc_snapshot *s)
{
	s->driver_version[0] = s->nvml_version[0] = '\0';
	s->cuda_version = 0;
	if (n->driver_version && n->driver_version(s->driver_version, sizeof s->driver_version) != NVML_SUCCESS)
		s->driver_version[0] = '\0';
	if (n->nvml_version && n->nvml_version(s->nvml_version, sizeof s->nvml_version) != NVML_SUCCESS)
		s->nvml_version[0] = '\0';
	s->driver_version[sizeof s->driver_version - 1] = '\0';
	s->nvml_version[sizeof s->nvml_version - 1] = '\0';
	int v = 0;
	if (n->cuda_version && n->cuda_version(&v) == NVML_SUCCESS && v > 0)
		s->cuda_version = v;
}

/* Record the status of one call into the values it feeds. */
static nvmlReturn_t note(gc_gpu *g, nvmlReturn_t rc, uint64_t values)
{
	uint8_t st = status_of(rc);
	for (uint64_t m = values & GC_ALL_VALUES; m; m &= m - 1) /* each bit set, lowest first */
		g->st[__builtin_ctzll(m)] = st;
	if (rc == NVML_ERROR_GPU_IS_LOST)
		g->lost = true;
	return rc;
}

#define CALL(fn, ...) ((fn) ? (fn)(__VA_ARGS__) : NVML_ERROR_FUNCTION_NOT_FOUND)

static void copy_str(char *dst, size_t dstlen, const char *src)
{
	size_t n = strnlen(src, dstlen - 1);
	memcpy(dst, src, n);
	dst[n] = '\0';
}

static void sample_static(struct nvml *n, nvmlDevice_t h, uint64_t want, gc_gpu *c)
{
	char buf[NVML_NAME_BUFFER_SIZE];
	nvmlReturn_t rc;
	if (want & GC_BIT(GC_V_NAME)) {
		buf[0] = '\0';
		if (note(c, CALL(n->name, h, buf, sizeof buf), GC_BIT(GC_V_NAME)) == NVML_SUCCESS)
			copy_str(c->name, sizeof c->name, buf);
	}
	if (want & GC_BIT(GC_V_UUID)) {
		buf[0] = '\0';
		if (note(c, CALL(n->uuid, h, buf, sizeof buf), GC_BIT(GC_V_UUID)) == NVML_SUCCESS)
			copy_str(c->uuid, sizeof c->uuid, buf);
	}
	if (want & GC_BIT(GC_V_SERIAL)) {
		buf[0] = '\0';
		if (note(c, CALL(n->serial, h, buf, sizeof buf), GC_BIT(GC_V_SERIAL)) == NVML_SUCCESS)
			copy_str(c->serial, sizeof c->serial, buf);
	}
	if (want & GC_BIT(GC_V_VBIOS)) {
		buf[0] = '\0';
		if (note(c, CALL(n->vbios, h, buf, sizeof buf), GC_BIT(GC_V_VBIOS)) == NVML_SUCCESS)
			copy_str(c->vbios, sizeof c->vbios, buf);
	}
	if (want & GC_BIT(GC_V_PCI)) {
		/* room for the larger layout whichever entry point writes */
		union { nvmlPciInfo_t v3; nvmlPciInfoLegacy_t v2; unsigned char raw[128]; } pci;
		memset(&pci, 0, sizeof pci);
		if (note(c, CALL(n->pci, h, &pci), GC_BIT(GC_V_PCI)) == NVML_SUCCESS) {
			c->pci_domain = pci.v3.domain;
			c->pci_bus = pci.v3.bus;
			c->pci_device = pci.v3.device;
			c->pci_device_id = pci.v3.pciDeviceId;
			c->pci_subsystem_id = pci.v3.pciSubSystemId;
			if (n->pci_v3 && pci.v3.busId[0]) {
				pci.v3.busId[sizeof pci.v3.busId - 1] = '\0';
				copy_str(c->bus_id, sizeof c->bus_id, pci.v3.busId);
			} else {
				/* the legacy busId has a 4-digit domain; print the modern form */
				snprintf(c->bus_id, sizeof c->bus_id, "%08X:%02X:%02X.0",
					 c->pci_domain, c->pci_bus & 0xffu, c->pci_device & 0xffu);
			}
		}
	}
	if (want & GC_BIT(GC_V_CLK_MAX_GR))
		note(c, CALL(n->max_clock, h, NVML_CLOCK_GRAPHICS, &c->clk_max_gr), GC_BIT(GC_V_CLK_MAX_GR));
	if (want & GC_BIT(GC_V_CLK_MAX_SM))
		note(c, CALL(n->max_clock, h, NVML_CLOCK_SM, &c->clk_max_sm), GC_BIT(GC_V_CLK_MAX_SM));
	if (want & GC_BIT(GC_V_CLK_MAX_MEM))
		note(c, CALL(n->max_clock, h, NVML_CLOCK_MEM, &c->clk_max_mem), GC_BIT(GC_V_CLK_MAX_MEM));
	if (want & GC_BIT(GC_V_COMPUTE_CAP))
		note(c, CALL(n->cc, h, &c->cc_major, &c->cc_minor), GC_BIT(GC_V_COMPUTE_CAP));
	if (want & GC_BIT(GC_V_PCIE_GEN_MAX))
		note(c, CALL(n->pcie_gen_max, h, &c->pcie_gen_max), GC_BIT(GC_V_PCIE_GEN_MAX));
	if (want & GC_BIT(GC_V_PCIE_WIDTH_MAX))
		note(c, CALL(n->pcie_width_max, h, &c->pcie_width_max), GC_BIT(GC_V_PCIE_WIDTH_MAX));
	if (want & GC_BIT(GC_V_REASONS_SUPPORTED)) {
		unsigned long long v = 0;
		note(c, CALL(n->reasons_supported, h, &v), GC_BIT(GC_V_REASONS_SUPPORTED));
		c->reasons_supported = v;
	}
	if (want & GC_BIT(GC_V_POWER_DEFAULT))
		note(c, CALL(n->power_default, h, &c->power_default), GC_BIT(GC_V_POWER_DEFAULT));
	if (want & (GC_BIT(GC_V_POWER_MIN) | GC_BIT(GC_V_POWER_MAX))) {
		rc = CALL(n->power_constraints, h, &c->power_min, &c->power_max);
		note(c, rc, GC_BIT(GC_V_POWER_MIN) | GC_BIT(GC_V_POWER_MAX));
	}
}

/* of the values in want, those c holds settled: a value, or a definite "not supported" */
static uint64_t settled(const gc_gpu *c, uint64_t want)
{
	uint64_t out = 0;
	for (uint64_t m = want & GC_ALL_VALUES; m; m &= m - 1) {
		int v = __builtin_ctzll(m);
		if (c->st[v] == GC_ST_OK || c->st[v] == GC_ST_NOT_SUPPORTED)
			out |= GC_BIT(v);
	}
	return out;
}

static void copy_static(gc_gpu *g, const gc_gpu *c, uint64_t mask)
{
	for (uint64_t m = mask & GC_ALL_VALUES; m; m &= m - 1) {
		int v = __builtin_ctzll(m);
		g->st[v] = c->st[v];
	}
	if (mask & GC_BIT(GC_V_NAME)) memcpy(g->name, c->name, sizeof g->name);
	if (mask & GC_BIT(GC_V_UUID)) memcpy(g->uuid, c->uuid, sizeof g->uuid);
	if (mask & GC_BIT(GC_V_SERIAL)) memcpy(g->serial, c->serial, sizeof g->serial);
	if (mask & GC_BIT(GC_V_VBIOS)) memcpy(g->vbios, c->vbios, sizeof g->vbios);
	if (mask & GC_BIT(GC_V_PCI)) {
		memcpy(g->bus_id, c->bus_id, sizeof g->bus_id);
		g->pci_domain = c->pci_domain;
		g->pci_bus = c->pci_bus;
		g->pci_device = c->pci_device;
		g->pci_device_id = c->pci_device_id;
		g->pci_subsystem_id = c->pci_subsystem_id;
	}
	g->clk_max_gr = c->clk_max_gr;
	g->clk_max_sm = c->clk_max_sm;
	g->clk_max_mem = c->clk_max_mem;
	g->cc_major = c->cc_major;
	g->cc_minor = c->cc_minor;
	g->pcie_gen_max = c->pcie_gen_max;
	g->pcie_width_max = c->pcie_width_max;
	g->reasons_supported = c->reasons_supported;
	g->power_default = c->power_default;
	g->power_min = c->power_min;
	g->power_max = c->power_max;
}

static void sample_memory(struct nvml *n, nvmlDevice_t h, gc_gpu *g)
{
	const uint64_t all = GC_BIT(GC_V_MEM_TOTAL) | GC_BIT(GC_V_MEM_RESERVED) |
			     GC_BIT(GC_V_MEM_USED) | GC_BIT(GC_V_MEM_FREE);
	if (n->mem_v2) {
		nvmlMemory_v2_t m;
		memset(&m, 0, sizeof m);
		m.version = nvmlMemory_v2;
		nvmlReturn_t rc = n->mem(h, &m);
		if (rc == NVML_ERROR_ARGUMENT_VERSION_MISMATCH || rc == NVML_ERROR_FUNCTION_NOT_FOUND) {
			/* a driver that exports _v2 but rejects it: use v1 from now on */
			n->mem_v2 = 0;
			n->mem = n->mem_v1;
		} else {
			if (note(g, rc, all) == NVML_SUCCESS) {
				g->mem_total = m.total;
				g->mem_reserved = m.reserved;
				g->mem_used = m.used;
				g->mem_free = m.free;
			}
			return;
		}
	}
	nvmlMemory_t m;
	memset(&m, 0, sizeof m);
	if (note(g, CALL(n->mem, h, &m), all) == NVML_SUCCESS) {
		g->mem_total = m.total;
		g->mem_used = m.used;
		g->mem_free = m.free;
		g->st[GC_V_MEM_RESERVED] = GC_ST_NOT_SUPPORTED;
	}
}

static int grow_scratch(struct nvml *n, size_t records)
{
	if (records <= n->scratch_cap)
		return 0;
	if (records > PROC_MAX)
		return -1;
	/* room for the largest record layout any entry point may write */
	unsigned char *p = realloc(n->scratch, records * sizeof(nvmlProcessInfo_r535_t));
	if (!p)
		return -1;
	n->scratch = p;
	n->scratch_cap = records;
	return 0;
}

/* Fetch one process list into g->procs (appending, merging by pid). */
static nvmlReturn_t sample_procs(struct nvml *n, nvmlDevice_t h, nvml_fn_procs fn, unsigned type,
				 gc_gpu *g, size_t *cap)
{
	if (!fn)
		return NVML_ERROR_FUNCTION_NOT_FOUND;
	if (grow_scratch(n, 32) < 0)
		return NVML_ERROR_MEMORY;
	nvmlReturn_t rc = NVML_ERROR_INSUFFICIENT_SIZE;
	unsigned cnt = 0;
	for (int attempt = 0; attempt < PROC_RETRIES; attempt++) {
		cnt = (unsigned)n->scratch_cap;
		rc = fn(h, &cnt, n->scratch);
		if (rc != NVML_ERROR_INSUFFICIENT_SIZE)
			break;
		/* processes can start between the calls: ask for some slack */
		if (grow_scratch(n, (size_t)cnt + cnt / 4 + 8) < 0)
			return NVML_ERROR_MEMORY;
	}
	if (rc != NVML_SUCCESS)
		return rc;
	if (cnt > n->scratch_cap)
		cnt = (unsigned)n->scratch_cap;
	for (unsigned i = 0; i < cnt; i++) {
		const unsigned char *rec = n->scratch + (size_t)i * n->proc_stride;
		unsigned pid;
		unsigned long long mem;
		memcpy(&pid, rec + offsetof(nvmlProcessInfo_v1_t, pid), sizeof pid);
		memcpy(&mem, rec + offsetof(nvmlProcessInfo_v1_t, usedGpuMemory), sizeof mem);
		size_t j = 0;
		for (; j < g->nprocs; j++)
			if (g->procs[j].pid == pid)
				break;
		if (j < g->nprocs) {
			g->procs[j].type |= type;
			continue;
		}
		if (g->nprocs == *cap) {
			/* from 2: most GPUs hold one or two processes, and a 592-byte
			 * record each (8 at a time cost a page fault per GPU at 256) */
			size_t ncap = *cap ? *cap * 2 : 2;
			gc_proc *p = realloc(g->procs, ncap * sizeof *p);
			if (!p)
				return NVML_ERROR_MEMORY;
			g->procs = p;
			*cap = ncap;
		}
		gc_proc *p = &g->procs[g->nprocs++];
		memset(p, 0, sizeof *p);
		p->sm_util = p->mem_util = -1;
		p->pid = pid;
		p->type = type;
		p->mem_known = mem != NVML_VALUE_NOT_AVAILABLE_ULL;
		p->used_memory = p->mem_known ? mem : 0;
	}
	return NVML_SUCCESS;
}

/*
 * Each listed process's utilization since the previous call for this GPU
 * (the first: the last second), the newest sample of each. A process with
 * no sample used the GPU not at all in that time: 0. NOT_FOUND is NVML's
 * "no process used it": all 0.
 */
static nvmlReturn_t sample_proc_util(struct nvml *n, struct dev *d, gc_gpu *g)
{
	if (!n->proc_util)
		return NVML_ERROR_FUNCTION_NOT_FOUND;
	unsigned long long now_us = (unsigned long long)clock_real_ms() * 1000ULL;
	unsigned long long since = d->util_seen && d->util_seen < now_us ? d->util_seen : now_us - 1000000ULL;
	unsigned cnt = 0;
	nvmlReturn_t rc = n->proc_util(d->h, NULL, &cnt, since);
	nvmlProcessUtilizationSample_t *v = NULL;
	for (int attempt = 0; attempt < PROC_RETRIES && rc == NVML_ERROR_INSUFFICIENT_SIZE; attempt++) {
		unsigned cap = cnt + cnt / 4 + 8;
		nvmlProcessUtilizationSample_t *nv = realloc(v, cap * sizeof *v);
		if (!nv) {
			free(v);
			return NVML_ERROR_MEMORY;
		}
		v = nv;
		cnt = cap;
		rc = n->proc_util(d->h, v, &cnt, since);
	}
	if (rc != NVML_SUCCESS && rc != NVML_ERROR_NOT_FOUND) {
		free(v);
		return rc;
	}
	if (rc == NVML_ERROR_NOT_FOUND || !v)
		cnt = 0;
	/* the newest sample of each process wins: they come in no promised order */
	unsigned long long *taken = calloc(g->nprocs ? g->nprocs : 1, sizeof *taken);
	if (!taken) {
		free(v);
		return NVML_ERROR_MEMORY;
	}
	for (size_t j = 0; j < g->nprocs; j++)
		g->procs[j].sm_util = g->procs[j].mem_util = 0;
	unsigned long long newest = since;
	for (unsigned i = 0; i < cnt; i++) {
		if (v[i].timeStamp > newest)
			newest = v[i].timeStamp;
		for (size_t j = 0; j < g->nprocs; j++) {
			gc_proc *p = &g->procs[j];
			if (p->pid != v[i].pid || v[i].timeStamp < taken[j])
				continue;
			taken[j] = v[i].timeStamp;
			p->sm_util = v[i].smUtil > 100 ? 100 : (int)v[i].smUtil;
			p->mem_util = v[i].memUtil > 100 ? 100 : (int)v[i].memUtil;
		}
	}
	d->util_seen = newest;
	free(taken);
	free(v);
	return NVML_SUCCESS;
}

/* One MIG device's memory: its own slice (v2 where the driver takes it, like the GPU's). */
static nvmlReturn_t mig_memory(struct nvml *n, nvmlDevice_t m, gc_mig *d)
{
	if (n->mem_v2) {
		nvmlMemory_v2_t v;
		memset(&v, 0, sizeof v);
		v.version = nvmlMemory_v2;
		nvmlReturn_t rc = n->mem(m, &v);
		if (rc != NVML_ERROR_ARGUMENT_VERSION_MISMATCH && rc != NVML_ERROR_FUNCTION_NOT_FOUND) {
			if (rc == NVML_SUCCESS) {
				d->mem_total = v.total;
				d->mem_used = v.used;
				d->mem_free = v.free;
			}
			return rc;
		}
	}
	nvmlMemory_t v;
	memset(&v, 0, sizeof v);
	nvmlReturn_t rc = CALL(n->mem_v1, m, &v);
	if (rc == NVML_SUCCESS) {
		d->mem_total = v.total;
		d->mem_used = v.used;
		d->mem_free = v.free;
	}
	return rc;
}

/* " MIG 1g.10gb" ends a MIG device's name: the profile, as nvidia-smi -L prints it */
static bool mig_profile(const char *name, char *out, size_t len)
{
	const char *p = NULL;
	for (const char *q = strstr(name, " MIG "); q; q = strstr(q + 1, " MIG "))
		p = q + 5;
	if (!p || !*p || strlen(p) >= len)
		return false;
	for (const char *c = p; *c; c++)
		if (*c <= ' ' || *c > '~')
			return false;
	copy_str(out, len, p);
	return true;
}

static uint8_t mig_note(gc_gpu *g, nvmlReturn_t rc)
{
	if (rc == NVML_ERROR_GPU_IS_LOST)
		g->lost = true;
	return status_of(rc);
}

/* The MIG devices of a GPU in MIG mode into g->mig (grown with realloc; g->mig_cap). */
static nvmlReturn_t sample_mig(struct nvml *n, nvmlDevice_t h, gc_gpu *g)
{
	unsigned max = 0;
	nvmlReturn_t rc = CALL(n->mig_max, h, &max);
	if (rc != NVML_SUCCESS)
		return rc;
	if (max && !n->mig_handle)
		return NVML_ERROR_FUNCTION_NOT_FOUND;
	if (max > MIG_MAX)
		max = MIG_MAX;
	for (unsigned i = 0; i < max; i++) {
		nvmlDevice_t m = NULL;
		rc = n->mig_handle(h, i, &m);
		if (rc == NVML_ERROR_NOT_FOUND)
			continue; /* no MIG device in this slot */
		if (rc != NVML_SUCCESS)
			return rc;
		if (g->nmig == g->mig_cap) {
			size_t ncap = g->mig_cap ? g->mig_cap * 2 : 8;
			gc_mig *p = realloc(g->mig, ncap * sizeof *p);
			if (!p)
				return NVML_ERROR_MEMORY;
			g->mig = p;
			g->mig_cap = ncap;
		}
		gc_mig *d = &g->mig[g->nmig++];
		memset(d, 0, sizeof *d);
		d->index = i;
		char buf[NVML_NAME_BUFFER_SIZE];
		buf[0] = '\0';
		d->st_uuid = mig_note(g, CALL(n->uuid, m, buf, sizeof buf));
		if (d->st_uuid == GC_ST_OK)
			copy_str(d->uuid, sizeof d->uuid, buf);
		buf[0] = '\0';
		d->st_profile = mig_note(g, CALL(n->name, m, buf, sizeof buf));
		buf[sizeof buf - 1] = '\0';
		if (d->st_profile == GC_ST_OK && !mig_profile(buf, d->profile, sizeof d->profile))
			d->st_profile = GC_ST_NOT_SUPPORTED; /* a name without the profile */
		d->st_mem = mig_note(g, mig_memory(n, m, d));
		d->st_gi = mig_note(g, CALL(n->mig_gi, m, &d->gpu_instance_id));
		d->st_ci = mig_note(g, CALL(n->mig_ci, m, &d->compute_instance_id));
	}
	return NVML_SUCCESS;
}

static uint64_t ecc_count(struct nvml *n, nvmlDevice_t h, gc_gpu *g, int type, int counter, int value)
{
	unsigned long long v = 0;
	note(g, CALL(n->ecc_total, h, type, counter, &v), GC_BIT(value));
	return v;
}

int nvml_sample_gpu(struct nvml *n, unsigned idx, uint64_t mask, gc_gpu *g, size_t *proc_cap)
{
	if (idx >= n->ndev)
		return GC_EINVAL;
	struct dev *d = &n->devs[idx];
	g->index = idx;
	g->lost = false;
	g->nprocs = 0;
	g->nmig = 0;
	memset(g->st, GC_ST_UNSET, sizeof g->st);
	if (mask & GC_BIT(GC_V_MIG_DEVICES))
		mask |= GC_BIT(GC_V_MIG_CURRENT) | GC_BIT(GC_V_MIG_PENDING); /* enumerated only in MIG mode */
	if (!d->h) {
		note(g, d->handle_rc, mask);
		return GC_OK;
	}
	nvmlDevice_t h = d->h;

	/* Static values: a context sampled once (query, ls) fetches them straight
	 * into g; one sampled again (a loop, top, gpuctld) keeps them from the
	 * second sample on. At 256 GPUs a cache filled for one sample cost 42 page
	 * faults (bench/query.sh). */
	uint64_t stat_want = mask & STATIC_MASK, missing = stat_want & ~d->cached;
	if (stat_want && d->sampled && !d->stat)
		d->stat = calloc(1, sizeof *d->stat); /* out of memory: fetched every time */
	d->sampled = true;
	if (stat_want && d->stat) {
		if (missing) {
			sample_static(n, h, missing, d->stat);
			d->cached |= settled(d->stat, missing);
		}
		copy_static(g, d->stat, stat_want);
	} else if (stat_want) {
		sample_static(n, h, stat_want, g);
	}

	if (mask & (GC_BIT(GC_V_MEM_TOTAL) | GC_BIT(GC_V_MEM_RESERVED) |
		    GC_BIT(GC_V_MEM_USED) | GC_BIT(GC_V_MEM_FREE)))
		sample_memory(n, h, g);
	if (mask & (GC_BIT(GC_V_UTIL_GPU) | GC_BIT(GC_V_UTIL_MEM))) {
		nvmlUtilization_t u = {0, 0};
		if (note(g, CALL(n->util, h, &u), GC_BIT(GC_V_UTIL_GPU) | GC_BIT(GC_V_UTIL_MEM)) == NVML_SUCCESS) {
			g->util_gpu = u.gpu;
			g->util_mem = u.memory;
		}
	}
	if (mask & GC_BIT(GC_V_TEMP))
		note(g, CALL(n->temp, h, NVML_TEMPERATURE_GPU, &g->temp), GC_BIT(GC_V_TEMP));
	if (mask & GC_BIT(GC_V_FAN))
		note(g, CALL(n->fan, h, &g->fan), GC_BIT(GC_V_FAN));
	if (mask & GC_BIT(GC_V_POWER_DRAW))
		note(g, CALL(n->power, h, &g->power_draw), GC_BIT(GC_V_POWER_DRAW));
	if (mask & GC_BIT(GC_V_POWER_LIMIT))
		note(g, CALL(n->power_limit, h, &g->power_limit), GC_BIT(GC_V_POWER_LIMIT));
	if (mask & GC_BIT(GC_V_POWER_ENFORCED))
		note(g, CALL(n->power_enforced, h, &g->power_enforced), GC_BIT(GC_V_POWER_ENFORCED));
	if (mask & GC_BIT(GC_V_CLK_GR))
		note(g, CALL(n->clock, h, NVML_CLOCK_GRAPHICS, &g->clk_gr), GC_BIT(GC_V_CLK_GR));
	if (mask & GC_BIT(GC_V_CLK_SM))
		note(g, CALL(n->clock, h, NVML_CLOCK_SM, &g->clk_sm), GC_BIT(GC_V_CLK_SM));
	if (mask & GC_BIT(GC_V_CLK_MEM))
		note(g, CALL(n->clock, h, NVML_CLOCK_MEM, &g->clk_mem), GC_BIT(GC_V_CLK_MEM));
	if (mask & GC_BIT(GC_V_CLK_VIDEO))
		note(g, CALL(n->clock, h, NVML_CLOCK_VIDEO, &g->clk_video), GC_BIT(GC_V_CLK_VIDEO));
	if (mask & GC_BIT(GC_V_REASONS)) {
		unsigned long long v = 0;
		note(g, CALL(n->reasons, h, &v), GC_BIT(GC_V_REASONS));
		g->reasons = v;
	}
	if (mask & (GC_BIT(GC_V_ECC_MODE) | GC_BIT(GC_V_ECC_PENDING))) {
		int cur = 0, pend = 0;
		note(g, CALL(n->ecc_mode, h, &cur, &pend), GC_BIT(GC_V_ECC_MODE) | GC_BIT(GC_V_ECC_PENDING));
		g->ecc_mode = cur != 0;
		g->ecc_pending = pend != 0;
	}
	if (mask & GC_BIT(GC_V_ECC_CORR_VOL))
		g->ecc_corr_vol = ecc_count(n, h, g, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC,
					    GC_V_ECC_CORR_VOL);
	if (mask & GC_BIT(GC_V_ECC_UNCORR_VOL))
		g->ecc_uncorr_vol = ecc_count(n, h, g, NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
					      NVML_VOLATILE_ECC, GC_V_ECC_UNCORR_VOL);
	if (mask & GC_BIT(GC_V_ECC_CORR_AGG))
		g->ecc_corr_agg = ecc_count(n, h, g, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC,
					    GC_V_ECC_CORR_AGG);
	if (mask & GC_BIT(GC_V_ECC_UNCORR_AGG))
		g->ecc_uncorr_agg = ecc_count(n, h, g, NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
					      NVML_AGGREGATE_ECC, GC_V_ECC_UNCORR_AGG);
	if (mask & GC_BIT(GC_V_PERSISTENCE)) {
		int v = 0;
		note(g, CALL(n->persistence, h, &v), GC_BIT(GC_V_PERSISTENCE));
		g->persistence = v != 0;
	}
	if (mask & GC_BIT(GC_V_COMPUTE_MODE)) {
		int v = 0;
		note(g, CALL(n->compute_mode, h, &v), GC_BIT(GC_V_COMPUTE_MODE));
		g->compute_mode = (unsigned)v;
		if (g->st[GC_V_COMPUTE_MODE] == GC_ST_OK && (v < 0 || v > 3))
			g->st[GC_V_COMPUTE_MODE] = GC_ST_UNKNOWN_ERROR;
	}
	if (mask & GC_BIT(GC_V_PSTATE)) {
		int v = 0;
		note(g, CALL(n->pstate, h, &v), GC_BIT(GC_V_PSTATE));
		g->pstate = (unsigned)v;
		if (g->st[GC_V_PSTATE] == GC_ST_OK && (v < 0 || v > 15))
			g->st[GC_V_PSTATE] = GC_ST_NOT_SUPPORTED; /* NVML_PSTATE_UNKNOWN */
	}
	if (mask & (GC_BIT(GC_V_MIG_CURRENT) | GC_BIT(GC_V_MIG_PENDING))) {
		unsigned cur = 0, pend = 0;
		note(g, CALL(n->mig, h, &cur, &pend), GC_BIT(GC_V_MIG_CURRENT) | GC_BIT(GC_V_MIG_PENDING));
		g->mig_current = cur != 0;
		g->mig_pending = pend != 0;
	}
	if (mask & GC_BIT(GC_V_MIG_DEVICES)) {
		if (g->st[GC_V_MIG_CURRENT] != GC_ST_OK)
			g->st[GC_V_MIG_DEVICES] = g->st[GC_V_MIG_CURRENT]; /* no MIG, or its mode unknown */
		else if (!g->mig_current)
			g->st[GC_V_MIG_DEVICES] = GC_ST_OK; /* MIG off: none */
		else
			note(g, sample_mig(n, h, g), GC_BIT(GC_V_MIG_DEVICES));
	}
	if (mask & GC_BIT(GC_V_PCIE_GEN))
		note(g, CALL(n->pcie_gen, h, &g->pcie_gen), GC_BIT(GC_V_PCIE_GEN));
	if (mask & GC_BIT(GC_V_PCIE_WIDTH))
		note(g, CALL(n->pcie_width, h, &g->pcie_width), GC_BIT(GC_V_PCIE_WIDTH));
	if (mask & GC_BIT(GC_V_ENERGY)) {
		unsigned long long v = 0;
		note(g, CALL(n->energy, h, &v), GC_BIT(GC_V_ENERGY));
		g->energy_mj = v;
	}
	if (mask & GC_BIT(GC_V_RETIRED_PENDING)) {
		int v = 0;
		note(g, CALL(n->retired_pending, h, &v), GC_BIT(GC_V_RETIRED_PENDING));
		g->retired_pending = v != 0;
	}
	if (mask & GC_BIT(GC_V_REMAPPED_ROWS)) {
		unsigned corr = 0, unc = 0, pend = 0, fail = 0;
		note(g, CALL(n->remap, h, &corr, &unc, &pend, &fail), GC_BIT(GC_V_REMAPPED_ROWS));
		g->remap_corr = corr;
		g->remap_uncorr = unc;
		g->remap_pending = pend != 0;
		g->remap_failure = fail != 0;
	}
	if (mask & GC_BIT(GC_V_PROCS))
		note(g, sample_procs(n, h, n->cprocs, GC_PROC_COMPUTE, g, proc_cap), GC_BIT(GC_V_PROCS));
	if (mask & GC_BIT(GC_V_GPROCS))
		note(g, sample_procs(n, h, n->gprocs, GC_PROC_GRAPHICS, g, proc_cap), GC_BIT(GC_V_GPROCS));
	/* of the processes just listed (gc_ctx_sample asks for them with it) */
	if (mask & GC_BIT(GC_V_PROC_UTIL))
		note(g, sample_proc_util(n, &n->devs[idx], g), GC_BIT(GC_V_PROC_UTIL));
	return GC_OK;
}

int nvml_topology(struct nvml *n, unsigned a, unsigned b)
{
	if (a >= n->ndev || b >= n->ndev)
		return GC_TOPO_UNKNOWN;
	if (a == b)
		return GC_TOPO_SELF;
	if (!n->devs[a].h || !n->devs[b].h || !n->topo)
		return GC_TOPO_UNKNOWN;
	int level = 0;
	if (n->topo(n->devs[a].h, n->devs[b].h, &level) != NVML_SUCCESS)
		return GC_TOPO_UNKNOWN;
	switch (level) {
	case NVML_TOPOLOGY_INTERNAL: return GC_TOPO_SELF;
	case NVML_TOPOLOGY_SINGLE: return GC_TOPO_PIX;
	case NVML_TOPOLOGY_MULTIPLE: return GC_TOPO_PXB;
	case NVML_TOPOLOGY_HOSTBRIDGE: return GC_TOPO_PHB;
	case NVML_TOPOLOGY_NODE: return GC_TOPO_NODE;
	case NVML_TOPOLOGY_SYSTEM: return GC_TOPO_SYS;
	default: return GC_TOPO_UNKNOWN;
	}
}

const char *gc_value_source(unsigned v)
{
	static const char *const src[GC_V__COUNT] = {
		[GC_V_NAME] = "nvmlDeviceGetName", [GC_V_UUID] = "nvmlDeviceGetUUID",
		[GC_V_SERIAL] = "nvmlDeviceGetSerial", [GC_V_VBIOS] = "nvmlDeviceGetVbiosVersion",
		[GC_V_PCI] = "nvmlDeviceGetPciInfo",
		[GC_V_MEM_TOTAL] = "nvmlDeviceGetMemoryInfo", [GC_V_MEM_RESERVED] = "nvmlDeviceGetMemoryInfo",
		[GC_V_MEM_USED] = "nvmlDeviceGetMemoryInfo", [GC_V_MEM_FREE] = "nvmlDeviceGetMemoryInfo",
		[GC_V_UTIL_GPU] = "nvmlDeviceGetUtilizationRates", [GC_V_UTIL_MEM] = "nvmlDeviceGetUtilizationRates",
		[GC_V_TEMP] = "nvmlDeviceGetTemperature", [GC_V_FAN] = "nvmlDeviceGetFanSpeed",
		[GC_V_POWER_DRAW] = "nvmlDeviceGetPowerUsage",
		[GC_V_POWER_LIMIT] = "nvmlDeviceGetPowerManagementLimit",
		[GC_V_POWER_ENFORCED] = "nvmlDeviceGetEnforcedPowerLimit",
		[GC_V_POWER_DEFAULT] = "nvmlDeviceGetPowerManagementDefaultLimit",
		[GC_V_POWER_MIN] = "nvmlDeviceGetPowerManagementLimitConstraints",
		[GC_V_POWER_MAX] = "nvmlDeviceGetPowerManagementLimitConstraints",
		[GC_V_CLK_GR] = "nvmlDeviceGetClockInfo", [GC_V_CLK_SM] = "nvmlDeviceGetClockInfo",
		[GC_V_CLK_MEM] = "nvmlDeviceGetClockInfo", [GC_V_CLK_VIDEO] = "nvmlDeviceGetClockInfo",
		[GC_V_CLK_MAX_GR] = "nvmlDeviceGetMaxClockInfo", [GC_V_CLK_MAX_SM] = "nvmlDeviceGetMaxClockInfo",
		[GC_V_CLK_MAX_MEM] = "nvmlDeviceGetMaxClockInfo",
		[GC_V_REASONS] = "nvmlDeviceGetCurrentClocksEventReasons",
		[GC_V_REASONS_SUPPORTED] = "nvmlDeviceGetSupportedClocksEventReasons",
		[GC_V_ECC_MODE] = "nvmlDeviceGetEccMode", [GC_V_ECC_PENDING] = "nvmlDeviceGetEccMode",
		[GC_V_ECC_CORR_VOL] = "nvmlDeviceGetTotalEccErrors", [GC_V_ECC_UNCORR_VOL] = "nvmlDeviceGetTotalEccErrors",
		[GC_V_ECC_CORR_AGG] = "nvmlDeviceGetTotalEccErrors", [GC_V_ECC_UNCORR_AGG] = "nvmlDeviceGetTotalEccErrors",
		[GC_V_PERSISTENCE] = "nvmlDeviceGetPersistenceMode", [GC_V_COMPUTE_MODE] = "nvmlDeviceGetComputeMode",
		[GC_V_PSTATE] = "nvmlDeviceGetPerformanceState",
		[GC_V_MIG_CURRENT] = "nvmlDeviceGetMigMode", [GC_V_MIG_PENDING] = "nvmlDeviceGetMigMode",
		[GC_V_MIG_DEVICES] = "nvmlDeviceGetMigDeviceHandleByIndex",
		[GC_V_PCIE_GEN] = "nvmlDeviceGetCurrPcieLinkGeneration",
		[GC_V_PCIE_GEN_MAX] = "nvmlDeviceGetMaxPcieLinkGeneration",
		[GC_V_PCIE_WIDTH] = "nvmlDeviceGetCurrPcieLinkWidth",
		[GC_V_PCIE_WIDTH_MAX] = "nvmlDeviceGetMaxPcieLinkWidth",
		[GC_V_ENERGY] = "nvmlDeviceGetTotalEnergyConsumption",
		[GC_V_COMPUTE_CAP] = "nvmlDeviceGetCudaComputeCapability",
		[GC_V_RETIRED_PENDING] = "nvmlDeviceGetRetiredPagesPendingStatus",
		[GC_V_REMAPPED_ROWS] = "nvmlDeviceGetRemappedRows",
		[GC_V_PROCS] = "nvmlDeviceGetComputeRunningProcesses",
		[GC_V_GPROCS] = "nvmlDeviceGetGraphicsRunningProcesses",
		[GC_V_PROC_UTIL] = "nvmlDeviceGetProcessUtilization",
	};
	return v < GC_V__COUNT ? src[v] : NULL;
}
