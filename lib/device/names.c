/*
 * names.c — fixed English names for gpuctl's enums: error codes, clock
 * event reasons (as nvidia-smi's --query-gpu names them) and topology
 * levels (as nvidia-smi topo -m prints them), and the CUDA version as text.
 */
#include "device/gpu.h"

#include <stdio.h>

const char *gc_strerror(int err)
{
	switch (err) {
	case GC_OK: return "success";
	case GC_ENOLIB: return "NVIDIA driver library not found";
	case GC_ENODRIVER: return "NVIDIA driver not loaded";
	case GC_EMISMATCH: return "NVIDIA driver/library version mismatch";
	case GC_ENOPERM: return "insufficient permissions";
	case GC_EGPULOST: return "GPU is lost";
	case GC_ENOMEM: return "out of memory";
	case GC_EINVAL: return "invalid argument";
	case GC_ENOTFOUND: return "not found";
	case GC_ESIM: return "invalid simulated node";
	case GC_ENVML: return "NVML error";
	case GC_EIO: return "input/output error";
	case GC_EBUSY: return "busy";
	case GC_ETIMEDOUT: return "timed out";
	case GC_ENOTNOW: return "not available now";
	case GC_ECANCELED: return "stopped while waiting";
	default: return "unknown error";
	}
}

const char *gc_reason_name(uint64_t bit)
{
	switch (bit) {
	case GC_REASON_GPU_IDLE: return "gpu_idle";
	case GC_REASON_APP_CLOCKS: return "applications_clocks_setting";
	case GC_REASON_SW_POWER_CAP: return "sw_power_cap";
	case GC_REASON_HW_SLOWDOWN: return "hw_slowdown";
	case GC_REASON_SYNC_BOOST: return "sync_boost";
	case GC_REASON_SW_THERMAL: return "sw_thermal_slowdown";
	case GC_REASON_HW_THERMAL: return "hw_thermal_slowdown";
	case GC_REASON_HW_POWER_BRAKE: return "hw_power_brake_slowdown";
	case GC_REASON_DISPLAY_CLOCK: return "display_clock_setting";
	default: return NULL;
	}
}

const char *gc_topo_name(int level)
{
	switch (level) {
	case GC_TOPO_SELF: return "X";
	case GC_TOPO_PIX: return "PIX";
	case GC_TOPO_PXB: return "PXB";
	case GC_TOPO_PHB: return "PHB";
	case GC_TOPO_NODE: return "NODE";
	case GC_TOPO_SYS: return "SYS";
	default: return "N/A";
	}
}

const char *gc_status_token(int st)
{
	switch (st) {
	case GC_ST_OK: return "";
	case GC_ST_UNSET: return "N/A";
	case GC_ST_NOT_SUPPORTED: return "N/A";
	case GC_ST_NO_PERMISSION: return "Insufficient Permissions";
	case GC_ST_GPU_LOST: return "GPU is lost";
	case GC_ST_RESET_REQUIRED: return "GPU requires reset";
	default: return "Unknown Error";
	}
}

bool gc_cuda_version_str(int v, char *buf, size_t len)
{
	if (v <= 0)
		return false;
	snprintf(buf, len, "%d.%d", v / 1000, (v % 1000) / 10);
	return true;
}

const char *gc_compute_mode_name(unsigned mode)
{
	static const char *const names[] = {"Default", "Exclusive_Thread", "Prohibited",
					    "Exclusive_Process"};
	return mode < sizeof names / sizeof names[0] ? names[mode] : "Unknown";
}
