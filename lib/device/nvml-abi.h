/*
 * nvml-abi.h — gpuctl's own declarations of the subset of the NVML C ABI it
 * uses. Written from the checked facts in docs/facts/nvml-abi.md (struct
 * sizes, offsets, constants), never copied from nvml.h. Shared by lib/device/nvml.c
 * (the caller) and sim/ (the simulated driver) so both agree on one layout;
 * every size that matters is pinned with _Static_assert.
 *
 * Nothing outside lib/device/nvml.c and sim/ may include this file: the rest of
 * gpuctl sees only gc_* types.
 */
#ifndef GPUCTL_NVML_ABI_H
#define GPUCTL_NVML_ABI_H

#include <stddef.h>
#include <stdint.h>

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;

enum {
	NVML_SUCCESS = 0,
	NVML_ERROR_UNINITIALIZED = 1,
	NVML_ERROR_INVALID_ARGUMENT = 2,
	NVML_ERROR_NOT_SUPPORTED = 3,
	NVML_ERROR_NO_PERMISSION = 4,
	NVML_ERROR_ALREADY_INITIALIZED = 5,
	NVML_ERROR_NOT_FOUND = 6,
	NVML_ERROR_INSUFFICIENT_SIZE = 7,
	NVML_ERROR_INSUFFICIENT_POWER = 8,
	NVML_ERROR_DRIVER_NOT_LOADED = 9,
	NVML_ERROR_TIMEOUT = 10,
	NVML_ERROR_IRQ_ISSUE = 11,
	NVML_ERROR_LIBRARY_NOT_FOUND = 12,
	NVML_ERROR_FUNCTION_NOT_FOUND = 13,
	NVML_ERROR_CORRUPTED_INFOROM = 14,
	NVML_ERROR_GPU_IS_LOST = 15,
	NVML_ERROR_RESET_REQUIRED = 16,
	NVML_ERROR_OPERATING_SYSTEM = 17,
	NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
	NVML_ERROR_IN_USE = 19,
	NVML_ERROR_MEMORY = 20,
	NVML_ERROR_NO_DATA = 21,
	NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
	NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
	NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
	NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
	NVML_ERROR_DEPRECATED = 26,
	NVML_ERROR_NOT_READY = 27,
	NVML_ERROR_GPU_NOT_FOUND = 28,
	NVML_ERROR_INVALID_STATE = 29,
	NVML_ERROR_UNKNOWN = 999,
};

/* enums are 4 bytes in the ABI */
enum { NVML_TEMPERATURE_GPU = 0 };
enum { NVML_CLOCK_GRAPHICS = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_CLOCK_VIDEO = 3 };
enum { NVML_MEMORY_ERROR_TYPE_CORRECTED = 0, NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1 };
enum { NVML_VOLATILE_ECC = 0, NVML_AGGREGATE_ECC = 1 };
enum { NVML_PSTATE_UNKNOWN = 32 };
enum { NVML_DEVICE_MIG_DISABLE = 0, NVML_DEVICE_MIG_ENABLE = 1 };
enum {
	NVML_TOPOLOGY_INTERNAL = 0,
	NVML_TOPOLOGY_SINGLE = 10,
	NVML_TOPOLOGY_MULTIPLE = 20,
	NVML_TOPOLOGY_HOSTBRIDGE = 30,
	NVML_TOPOLOGY_NODE = 40,
	NVML_TOPOLOGY_SYSTEM = 50,
};

#define NVML_PCI_BUS_ID_BUFFER_SIZE 32
#define NVML_PCI_BUS_ID_LEGACY_BUFFER_SIZE 16
#define NVML_UUID_BUFFER_SIZE 96 /* v2 size; 80 is enough for v1 callers */
#define NVML_NAME_BUFFER_SIZE 96
#define NVML_SERIAL_BUFFER_SIZE 30
#define NVML_VERSION_BUFFER_SIZE 80
#define NVML_VBIOS_BUFFER_SIZE 32

/* R418+ layout, written by nvmlDeviceGetPciInfo_v3 */
typedef struct {
	char busIdLegacy[NVML_PCI_BUS_ID_LEGACY_BUFFER_SIZE];
	unsigned int domain;
	unsigned int bus;
	unsigned int device;
	unsigned int pciDeviceId;
	unsigned int pciSubSystemId;
	char busId[NVML_PCI_BUS_ID_BUFFER_SIZE];
} nvmlPciInfo_t;
_Static_assert(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t is 68 bytes");
_Static_assert(offsetof(nvmlPciInfo_t, busId) == 36, "busId at 36");

/* pre-R418 layout, written by nvmlDeviceGetPciInfo and _v2 */
typedef struct {
	char busId[NVML_PCI_BUS_ID_LEGACY_BUFFER_SIZE];
	unsigned int domain;
	unsigned int bus;
	unsigned int device;
	unsigned int pciDeviceId;
	unsigned int pciSubSystemId;
	unsigned int reserved0, reserved1, reserved2, reserved3;
} nvmlPciInfoLegacy_t;
_Static_assert(sizeof(nvmlPciInfoLegacy_t) == 52, "legacy nvmlPciInfo_t is 52 bytes");
_Static_assert(offsetof(nvmlPciInfoLegacy_t, domain) == offsetof(nvmlPciInfo_t, domain),
	       "domain/bus/device/ids share offsets in both layouts");

typedef struct {
	unsigned long long total;
	unsigned long long free;
	unsigned long long used; /* reserved + allocated */
} nvmlMemory_t;
_Static_assert(sizeof(nvmlMemory_t) == 24, "nvmlMemory_t is 24 bytes");

typedef struct {
	unsigned int version;
	unsigned long long total;
	unsigned long long reserved;
	unsigned long long free;
	unsigned long long used; /* allocated, excludes reserved */
} nvmlMemory_v2_t;
_Static_assert(sizeof(nvmlMemory_v2_t) == 40, "nvmlMemory_v2_t is 40 bytes");
#define NVML_STRUCT_VERSION(size, ver) ((unsigned int)(size) | ((unsigned int)(ver) << 24U))
#define nvmlMemory_v2 NVML_STRUCT_VERSION(sizeof(nvmlMemory_v2_t), 2)
_Static_assert(nvmlMemory_v2 == 0x02000028U, "nvmlMemory_v2 version word");

typedef struct {
	unsigned int gpu;
	unsigned int memory;
} nvmlUtilization_t;
_Static_assert(sizeof(nvmlUtilization_t) == 8, "nvmlUtilization_t is 8 bytes");

typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;
_Static_assert(sizeof(nvmlProcessInfo_v1_t) == 16, "v1 process record is 16 bytes");

typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId;
	unsigned int computeInstanceId;
} nvmlProcessInfo_v2_t;
_Static_assert(sizeof(nvmlProcessInfo_v2_t) == 24, "v2/v3 process record is 24 bytes");

/* what _v3 writes on drivers 535.43 .. 535.86 */
typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId;
	unsigned int computeInstanceId;
	unsigned long long usedGpuCcProtectedMemory;
} nvmlProcessInfo_r535_t;
_Static_assert(sizeof(nvmlProcessInfo_r535_t) == 32, "r535 process record is 32 bytes");

#define NVML_VALUE_NOT_AVAILABLE_ULL (~0ULL)

/*
 * nvmlDeviceGetProcessUtilization(dev, samples, &count, lastSeenTimeStamp):
 * the processes that used the GPU since lastSeenTimeStamp (microseconds of
 * the CPU's wall clock; 0: every sample the driver keeps), one sample each
 * with a non-zero value. *count is the capacity on the way in; samples NULL
 * or too few: NVML_ERROR_INSUFFICIENT_SIZE with the count. NVML_ERROR_NOT_FOUND
 * when no process used the GPU in that time (the usual answer for an idle GPU).
 */
typedef struct {
	unsigned int pid;
	unsigned long long timeStamp;
	unsigned int smUtil;
	unsigned int memUtil;
	unsigned int encUtil;
	unsigned int decUtil;
} nvmlProcessUtilizationSample_t;
_Static_assert(sizeof(nvmlProcessUtilizationSample_t) == 32, "process utilization sample is 32 bytes");

#define NVML_EVENT_TYPE_XID_CRITICAL_ERROR 0x0000000000000008ULL
#define NVML_XID_UNKNOWN 999ULL /* eventData of an Xid the driver could not name */

typedef struct {
	nvmlDevice_t device;
	unsigned long long eventType;
	unsigned long long eventData;  /* the Xid, for NVML_EVENT_TYPE_XID_CRITICAL_ERROR */
	unsigned int gpuInstanceId;    /* R450+ (_v2): MIG instance, or 0xFFFFFFFF */
	unsigned int computeInstanceId;
} nvmlEventData_t;
_Static_assert(sizeof(nvmlEventData_t) == 32, "nvmlEventData_t (v2) is 32 bytes");

/* reason bits (clocks "throttle" / "event" reasons) */
#define NVML_REASON_GPU_IDLE 0x1ULL
#define NVML_REASON_APPLICATIONS_CLOCKS_SETTING 0x2ULL
#define NVML_REASON_SW_POWER_CAP 0x4ULL
#define NVML_REASON_HW_SLOWDOWN 0x8ULL
#define NVML_REASON_SYNC_BOOST 0x10ULL
#define NVML_REASON_SW_THERMAL_SLOWDOWN 0x20ULL
#define NVML_REASON_HW_THERMAL_SLOWDOWN 0x40ULL
#define NVML_REASON_HW_POWER_BRAKE_SLOWDOWN 0x80ULL
#define NVML_REASON_DISPLAY_CLOCK_SETTING 0x100ULL

/*
 * Function pointer types, one per NVML entry point gpuctl resolves. The
 * simulator defines functions of exactly these types.
 */
typedef nvmlReturn_t (*nvml_fn_void)(void);
typedef const char *(*nvml_fn_errstr)(nvmlReturn_t);
typedef nvmlReturn_t (*nvml_fn_sysstr)(char *, unsigned int);
typedef nvmlReturn_t (*nvml_fn_sysint)(int *);
typedef nvmlReturn_t (*nvml_fn_count)(unsigned int *);
typedef nvmlReturn_t (*nvml_fn_handle_by_index)(unsigned int, nvmlDevice_t *);
typedef nvmlReturn_t (*nvml_fn_devstr)(nvmlDevice_t, char *, unsigned int);
typedef nvmlReturn_t (*nvml_fn_devuint)(nvmlDevice_t, unsigned int *);
typedef nvmlReturn_t (*nvml_fn_devull)(nvmlDevice_t, unsigned long long *);
typedef nvmlReturn_t (*nvml_fn_devint)(nvmlDevice_t, int *);
typedef nvmlReturn_t (*nvml_fn_devint2)(nvmlDevice_t, int *, int *);
typedef nvmlReturn_t (*nvml_fn_devuint2)(nvmlDevice_t, unsigned int *, unsigned int *);
typedef nvmlReturn_t (*nvml_fn_devenum)(nvmlDevice_t, int, unsigned int *);
typedef nvmlReturn_t (*nvml_fn_pci)(nvmlDevice_t, void *);
typedef nvmlReturn_t (*nvml_fn_mem)(nvmlDevice_t, void *);
typedef nvmlReturn_t (*nvml_fn_util)(nvmlDevice_t, nvmlUtilization_t *);
typedef nvmlReturn_t (*nvml_fn_ecc)(nvmlDevice_t, int, int, unsigned long long *);
typedef nvmlReturn_t (*nvml_fn_procs)(nvmlDevice_t, unsigned int *, void *);
/*
 * Events (the Xid path): nvmlEventSetCreate(&set); nvmlDeviceRegisterEvents(dev, types, set)
 * (NOT_SUPPORTED for a type the GPU cannot report); nvmlEventSetWait_v2(set, &data, timeout_ms)
 * (R450+, the 32-byte nvmlEventData_t; nvmlEventSetWait before it wrote the first 24 bytes):
 * NVML_ERROR_TIMEOUT when nothing came; nvmlEventSetFree(set).
 */
typedef struct nvmlEventSet_st *nvmlEventSet_t;
typedef nvmlReturn_t (*nvml_fn_evset_create)(nvmlEventSet_t *);
typedef nvmlReturn_t (*nvml_fn_evset_free)(nvmlEventSet_t);
typedef nvmlReturn_t (*nvml_fn_register_events)(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
typedef nvmlReturn_t (*nvml_fn_evset_wait)(nvmlEventSet_t, nvmlEventData_t *, unsigned int);
typedef nvmlReturn_t (*nvml_fn_proc_util)(nvmlDevice_t, nvmlProcessUtilizationSample_t *, unsigned int *,
					  unsigned long long);
/* nvmlDeviceGetRemappedRows(dev, corrRows, uncRows, isPending, failureOccurred), first in 450.51 */
typedef nvmlReturn_t (*nvml_fn_remap)(nvmlDevice_t, unsigned int *, unsigned int *, unsigned int *,
				      unsigned int *);
typedef nvmlReturn_t (*nvml_fn_topo)(nvmlDevice_t, nvmlDevice_t, int *);
/*
 * MIG (R450+, with nvmlDeviceGetMigMode): nvmlDeviceGetMigDeviceHandleByIndex(gpu, index, &mig)
 * (NOT_FOUND for an index with no MIG device); nvmlDeviceGetDeviceHandleFromMigDeviceHandle(mig,
 * &gpu). nvmlDeviceGetMaxMigDeviceCount, nvmlDeviceGetGpuInstanceId, nvmlDeviceGetComputeInstanceId
 * and nvmlDeviceIsMigDeviceHandle are nvml_fn_devuint. A MIG device handle also answers
 * nvmlDeviceGetName ("<GPU name> MIG 1g.10gb"), nvmlDeviceGetUUID ("MIG-...") and
 * nvmlDeviceGetMemoryInfo(_v2) (its own slice of memory).
 */
typedef nvmlReturn_t (*nvml_fn_mig_handle)(nvmlDevice_t, unsigned int, nvmlDevice_t *);
typedef nvmlReturn_t (*nvml_fn_mig_parent)(nvmlDevice_t, nvmlDevice_t *);

#endif
