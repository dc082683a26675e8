/*
 * fault.c — fault injection for the simulated NVML library.
 *
 * A node file can make any NVML call fail with a chosen error, optionally
 * after N successful calls, so gpuctl's handling of broken drivers, lost
 * GPUs and permission errors is testable without hardware. This file owns
 * the vocabulary (error names, known function names) and the per-call
 * counting; nvml.c decides which fault list a call consults.
 */
#include <stdlib.h>
#include <string.h>

#include "sim.h"

static const struct {
	const char *name;
	int code;
} errors[] = {
	{ "UNINITIALIZED", NVML_ERROR_UNINITIALIZED },
	{ "INVALID_ARGUMENT", NVML_ERROR_INVALID_ARGUMENT },
	{ "NOT_SUPPORTED", NVML_ERROR_NOT_SUPPORTED },
	{ "NO_PERMISSION", NVML_ERROR_NO_PERMISSION },
	{ "ALREADY_INITIALIZED", NVML_ERROR_ALREADY_INITIALIZED },
	{ "NOT_FOUND", NVML_ERROR_NOT_FOUND },
	{ "INSUFFICIENT_SIZE", NVML_ERROR_INSUFFICIENT_SIZE },
	{ "INSUFFICIENT_POWER", NVML_ERROR_INSUFFICIENT_POWER },
	{ "DRIVER_NOT_LOADED", NVML_ERROR_DRIVER_NOT_LOADED },
	{ "TIMEOUT", NVML_ERROR_TIMEOUT },
	{ "IRQ_ISSUE", NVML_ERROR_IRQ_ISSUE },
	{ "LIBRARY_NOT_FOUND", NVML_ERROR_LIBRARY_NOT_FOUND },
	{ "FUNCTION_NOT_FOUND", NVML_ERROR_FUNCTION_NOT_FOUND },
	{ "CORRUPTED_INFOROM", NVML_ERROR_CORRUPTED_INFOROM },
	{ "GPU_IS_LOST", NVML_ERROR_GPU_IS_LOST },
	{ "RESET_REQUIRED", NVML_ERROR_RESET_REQUIRED },
	{ "OPERATING_SYSTEM", NVML_ERROR_OPERATING_SYSTEM },
	{ "LIB_RM_VERSION_MISMATCH", NVML_ERROR_LIB_RM_VERSION_MISMATCH },
	{ "IN_USE", NVML_ERROR_IN_USE },
	{ "MEMORY", NVML_ERROR_MEMORY },
	{ "NO_DATA", NVML_ERROR_NO_DATA },
	{ "VGPU_ECC_NOT_SUPPORTED", NVML_ERROR_VGPU_ECC_NOT_SUPPORTED },
	{ "INSUFFICIENT_RESOURCES", NVML_ERROR_INSUFFICIENT_RESOURCES },
	{ "FREQ_NOT_SUPPORTED", NVML_ERROR_FREQ_NOT_SUPPORTED },
	{ "ARGUMENT_VERSION_MISMATCH", NVML_ERROR_ARGUMENT_VERSION_MISMATCH },
	{ "DEPRECATED", NVML_ERROR_DEPRECATED },
	{ "NOT_READY", NVML_ERROR_NOT_READY },
	{ "GPU_NOT_FOUND", NVML_ERROR_GPU_NOT_FOUND },
	{ "INVALID_STATE", NVML_ERROR_INVALID_STATE },
	{ "UNKNOWN", NVML_ERROR_UNKNOWN },
};

/* Every entry point a fault may name; a typo in a node file is an error. */
static const char *const functions[] = {
	"nvmlInit_v2",
	"nvmlInit",
	"nvmlShutdown",
	"nvmlSystemGetDriverVersion",
	"nvmlSystemGetNVMLVersion",
	"nvmlSystemGetCudaDriverVersion",
	"nvmlSystemGetCudaDriverVersion_v2",
	"nvmlDeviceGetCount",
	"nvmlDeviceGetCount_v2",
	"nvmlDeviceGetHandleByIndex",
	"nvmlDeviceGetHandleByIndex_v2",
	"nvmlDeviceGetHandleByUUID",
	"nvmlDeviceGetHandleByPciBusId",
	"nvmlDeviceGetHandleByPciBusId_v2",
	"nvmlDeviceGetIndex",
	"nvmlDeviceGetName",
	"nvmlDeviceGetUUID",
	"nvmlDeviceGetSerial",
	"nvmlDeviceGetVbiosVersion",
	"nvmlDeviceGetPciInfo",
	"nvmlDeviceGetPciInfo_v2",
	"nvmlDeviceGetPciInfo_v3",
	"nvmlDeviceGetMemoryInfo",
	"nvmlDeviceGetMemoryInfo_v2",
	"nvmlDeviceGetUtilizationRates",
	"nvmlDeviceGetTemperature",
	"nvmlDeviceGetFanSpeed",
	"nvmlDeviceGetPowerUsage",
	"nvmlDeviceGetPowerManagementLimit",
	"nvmlDeviceGetEnforcedPowerLimit",
	"nvmlDeviceGetPowerManagementDefaultLimit",
	"nvmlDeviceGetPowerManagementLimitConstraints",
	"nvmlDeviceGetClockInfo",
	"nvmlDeviceGetMaxClockInfo",
	"nvmlDeviceGetCurrentClocksThrottleReasons",
	"nvmlDeviceGetCurrentClocksEventReasons",
	"nvmlDeviceGetSupportedClocksThrottleReasons",
	"nvmlDeviceGetSupportedClocksEventReasons",
	"nvmlDeviceGetEccMode",
	"nvmlDeviceGetTotalEccErrors",
	"nvmlDeviceGetPersistenceMode",
	"nvmlDeviceGetComputeMode",
	"nvmlDeviceGetPerformanceState",
	"nvmlDeviceGetMigMode",
	"nvmlDeviceGetMaxMigDeviceCount",
	"nvmlDeviceGetMigDeviceHandleByIndex",
	"nvmlDeviceGetDeviceHandleFromMigDeviceHandle",
	"nvmlDeviceIsMigDeviceHandle",
	"nvmlDeviceGetGpuInstanceId",
	"nvmlDeviceGetComputeInstanceId",
	"nvmlDeviceGetCurrPcieLinkGeneration",
	"nvmlDeviceGetMaxPcieLinkGeneration",
	"nvmlDeviceGetCurrPcieLinkWidth",
	"nvmlDeviceGetMaxPcieLinkWidth",
	"nvmlDeviceGetTotalEnergyConsumption",
	"nvmlDeviceGetCudaComputeCapability",
	"nvmlDeviceGetRetiredPagesPendingStatus",
	"nvmlDeviceGetRemappedRows",
	"nvmlDeviceGetComputeRunningProcesses",
	"nvmlDeviceGetComputeRunningProcesses_v2",
	"nvmlDeviceGetComputeRunningProcesses_v3",
	"nvmlDeviceGetGraphicsRunningProcesses",
	"nvmlDeviceGetGraphicsRunningProcesses_v2",
	"nvmlDeviceGetGraphicsRunningProcesses_v3",
	"nvmlDeviceGetTopologyCommonAncestor",
	"nvmlDeviceGetConfComputeMemSizeInfo",
	"nvmlDeviceGetRunningProcessDetailList",
	"nvmlDeviceGetProcessUtilization",
	"nvmlEventSetCreate",
	"nvmlDeviceGetSupportedEventTypes",
	"nvmlDeviceRegisterEvents",
	"nvmlEventSetWait",
	"nvmlEventSetWait_v2",
};

int sim_error_from_name(const char *name)
{
	if (strncmp(name, "NVML_ERROR_", 11) == 0)
		name += 11;
	for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
		if (strcmp(errors[i].name, name) == 0)
			return errors[i].code;
	return -1;
}

bool sim_is_known_function(const char *fn)
{
	for (size_t i = 0; i < sizeof(functions) / sizeof(functions[0]); i++)
		if (strcmp(functions[i], fn) == 0)
			return true;
	return false;
}

nvmlReturn_t sim_fault_check(struct sim_faults *f, const char *fn)
{
	for (size_t i = 0; i < f->n; i++) {
		struct sim_fault *x = &f->v[i];

		if (strcmp(x->fn, fn) != 0)
			continue;
		if (x->calls < x->after) {
			x->calls++;
			return NVML_SUCCESS;
		}
		return x->error;
	}
	return NVML_SUCCESS;
}

void sim_faults_free(struct sim_faults *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->v[i].fn);
	free(f->v);
	f->v = NULL;
	f->n = 0;
}
