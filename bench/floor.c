/*
 * floor.c — the benchmark floor: the least a program can do to answer what
 * `gpuctl query` / `gpuctl ls --json` answer. It dlopens the same NVML
 * library (argv[2], normally BUILD/sim/libnvidia-ml-sim.so, driven by
 * $GPUCTL_SIM_NODE), makes the NVML calls gpuctl makes for the output and
 * prints the result with printf. Nothing else: no option parsing, no
 * caching, no JSON.
 *
 *   floor query LIB   the CSV of `gpuctl query --format=csv --query-gpu=
 *                     index,name,uuid,pci.bus_id,memory.used,memory.total,
 *                     utilization.gpu,temperature.gpu,power.draw`, byte for
 *                     byte (bench/query.sh checks that)
 *   floor full LIB    every NVML call `gpuctl ls --json` makes (all of
 *                     GC_ALL_VALUES per GPU, the pairwise topology, the
 *                     system versions), values printed as plain text, one
 *                     line per GPU, then "nvml-calls N"
 *
 * Built by bench/query.sh with `cc -O2`; not part of the main build.
 */
#include "device/nvml-abi.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *lib;
static unsigned long calls; /* NVML entry points called */

static void *need(const char *name)
{
	void *p = dlsym(lib, name);
	if (!p) {
		fprintf(stderr, "floor: %s not exported\n", name);
		exit(1);
	}
	return p;
}

#define FN(type, var, name) type var = (type)need(name)
/* count every NVML call */
#define C(expr) (calls++, (expr))

static void die_rc(const char *what, nvmlReturn_t rc)
{
	fprintf(stderr, "floor: %s failed (%d)\n", what, rc);
	exit(1);
}

/* gpuctl's [N/A] / [Unknown Error] tokens for a failed call */
static const char *tok(nvmlReturn_t rc)
{
	switch (rc) {
	case NVML_ERROR_NOT_SUPPORTED: case NVML_ERROR_FUNCTION_NOT_FOUND: case NVML_ERROR_NOT_FOUND:
		return "[N/A]";
	case NVML_ERROR_NO_PERMISSION: return "[Insufficient Permissions]";
	case NVML_ERROR_GPU_IS_LOST: return "[GPU is lost]";
	default: return "[Unknown Error]";
	}
}

static unsigned long long mib(unsigned long long b)
{
	return b / 1048576ULL + (b % 1048576ULL != 0);
}

/* nvmlInit, the device count and every handle, which both modes need; exits on a failure */
static nvmlDevice_t *open_devices(unsigned *n)
{
	FN(nvml_fn_void, init, "nvmlInit_v2");
	FN(nvml_fn_count, count, "nvmlDeviceGetCount_v2");
	FN(nvml_fn_handle_by_index, handle, "nvmlDeviceGetHandleByIndex_v2");
	nvmlReturn_t rc;
	if ((rc = C(init())) != NVML_SUCCESS)
		die_rc("nvmlInit_v2", rc);
	*n = 0;
	if ((rc = C(count(n))) != NVML_SUCCESS)
		die_rc("nvmlDeviceGetCount_v2", rc);
	nvmlDevice_t *h = calloc(*n ? *n : 1, sizeof *h);
	if (!h) {
		fprintf(stderr, "floor: out of memory\n");
		exit(1);
	}
	for (unsigned i = 0; i < *n; i++)
		if ((rc = C(handle(i, &h[i]))) != NVML_SUCCESS)
			die_rc("nvmlDeviceGetHandleByIndex_v2", rc);
	return h;
}

static int query(void)
{
	FN(nvml_fn_void, shutdown, "nvmlShutdown");
	FN(nvml_fn_sysstr, driver, "nvmlSystemGetDriverVersion");
	FN(nvml_fn_devstr, name, "nvmlDeviceGetName");
	FN(nvml_fn_devstr, uuid, "nvmlDeviceGetUUID");
	FN(nvml_fn_pci, pci, "nvmlDeviceGetPciInfo_v3");
	FN(nvml_fn_mem, mem, "nvmlDeviceGetMemoryInfo_v2");
	FN(nvml_fn_util, util, "nvmlDeviceGetUtilizationRates");
	FN(nvml_fn_devenum, temp, "nvmlDeviceGetTemperature");
	FN(nvml_fn_devuint, power, "nvmlDeviceGetPowerUsage");

	unsigned n;
	nvmlDevice_t *h = open_devices(&n);
	char drv[NVML_VERSION_BUFFER_SIZE];
	(void)C(driver(drv, sizeof drv));

	printf("index, name, uuid, pci.bus_id, memory.used [MiB], memory.total [MiB], "
	       "utilization.gpu [%%], temperature.gpu, power.draw [W]\n");
	for (unsigned i = 0; i < n; i++) {
		char nm[NVML_NAME_BUFFER_SIZE] = "", id[NVML_UUID_BUFFER_SIZE] = "";
		nvmlReturn_t rn = C(name(h[i], nm, sizeof nm));
		nvmlReturn_t ru = C(uuid(h[i], id, sizeof id));
		nvmlPciInfo_t p;
		memset(&p, 0, sizeof p);
		nvmlReturn_t rp = C(pci(h[i], &p));
		nvmlMemory_v2_t m;
		memset(&m, 0, sizeof m);
		m.version = 0x02000028U;
		nvmlReturn_t rm = C(mem(h[i], &m));
		nvmlUtilization_t u = {0, 0};
		nvmlReturn_t rut = C(util(h[i], &u));
		unsigned t = 0, w = 0;
		nvmlReturn_t rt = C(temp(h[i], NVML_TEMPERATURE_GPU, &t));
		nvmlReturn_t rw = C(power(h[i], &w));

		printf("%u, ", i);
		if (rn) printf("%s, ", tok(rn)); else printf("%s, ", nm);
		if (ru) printf("%s, ", tok(ru)); else printf("%s, ", id);
		if (rp) printf("%s, ", tok(rp)); else printf("%s, ", p.busId);
		if (rm) printf("%s, %s, ", tok(rm), tok(rm));
		else printf("%llu MiB, %llu MiB, ", mib(m.used), mib(m.total));
		if (rut) printf("%s, ", tok(rut)); else printf("%u %%, ", u.gpu);
		if (rt) printf("%s, ", tok(rt)); else printf("%u, ", t);
		if (rw) printf("%s\n", tok(rw)); else printf("%.2f W\n", w / 1000.0);
	}
	(void)C(shutdown());
	free(h);
	return 0;
}

/* one process list, with the INSUFFICIENT_SIZE grow-and-retry */
static nvmlReturn_t procs(nvml_fn_procs fn, nvmlDevice_t h, nvmlProcessInfo_v2_t **buf,
			  unsigned *cap, unsigned *cnt)
{
	nvmlReturn_t rc = NVML_ERROR_INSUFFICIENT_SIZE;
	for (int attempt = 0; attempt < 5; attempt++) {
		*cnt = *cap;
		rc = C(fn(h, cnt, *buf));
		if (rc != NVML_ERROR_INSUFFICIENT_SIZE)
			break;
		unsigned ncap = *cnt + *cnt / 4 + 8;
		nvmlProcessInfo_v2_t *p = realloc(*buf, ncap * sizeof *p);
		if (!p)
			return NVML_ERROR_MEMORY;
		*buf = p;
		*cap = ncap;
	}
	if (rc == NVML_SUCCESS && *cnt > *cap)
		*cnt = *cap;
	return rc;
}

/* a value or "-" for a failed call */
#define PU(rc, v) ((rc) ? printf(" -") : printf(" %u", (unsigned)(v)))
#define PI(rc, v) ((rc) ? printf(" -") : printf(" %d", (int)(v)))
#define PL(rc, v) ((rc) ? printf(" -") : printf(" %llu", (unsigned long long)(v)))
#define PS(rc, s) ((rc) ? printf(" -") : printf(" %s", (s)))

static int full(void)
{
	FN(nvml_fn_void, shutdown, "nvmlShutdown");
	FN(nvml_fn_sysstr, driver, "nvmlSystemGetDriverVersion");
	FN(nvml_fn_sysstr, nvmlver, "nvmlSystemGetNVMLVersion");
	FN(nvml_fn_sysint, cuda, "nvmlSystemGetCudaDriverVersion_v2");
	FN(nvml_fn_devstr, name, "nvmlDeviceGetName");
	FN(nvml_fn_devstr, uuid, "nvmlDeviceGetUUID");
	FN(nvml_fn_devstr, serial, "nvmlDeviceGetSerial");
	FN(nvml_fn_devstr, vbios, "nvmlDeviceGetVbiosVersion");
	FN(nvml_fn_pci, pci, "nvmlDeviceGetPciInfo_v3");
	FN(nvml_fn_mem, mem, "nvmlDeviceGetMemoryInfo_v2");
	FN(nvml_fn_util, util, "nvmlDeviceGetUtilizationRates");
	FN(nvml_fn_devenum, temp, "nvmlDeviceGetTemperature");
	FN(nvml_fn_devuint, fan, "nvmlDeviceGetFanSpeed");
	FN(nvml_fn_devuint, power, "nvmlDeviceGetPowerUsage");
	FN(nvml_fn_devuint, plimit, "nvmlDeviceGetPowerManagementLimit");
	FN(nvml_fn_devuint, penforced, "nvmlDeviceGetEnforcedPowerLimit");
	FN(nvml_fn_devuint, pdefault, "nvmlDeviceGetPowerManagementDefaultLimit");
	FN(nvml_fn_devuint2, pconstr, "nvmlDeviceGetPowerManagementLimitConstraints");
	FN(nvml_fn_devenum, clock, "nvmlDeviceGetClockInfo");
	FN(nvml_fn_devenum, maxclock, "nvmlDeviceGetMaxClockInfo");
	FN(nvml_fn_devull, reasons, "nvmlDeviceGetCurrentClocksEventReasons");
	FN(nvml_fn_devull, reasons_sup, "nvmlDeviceGetSupportedClocksEventReasons");
	FN(nvml_fn_devint2, eccmode, "nvmlDeviceGetEccMode");
	FN(nvml_fn_ecc, ecctotal, "nvmlDeviceGetTotalEccErrors");
	FN(nvml_fn_devint, persist, "nvmlDeviceGetPersistenceMode");
	FN(nvml_fn_devint, cmode, "nvmlDeviceGetComputeMode");
	FN(nvml_fn_devint, pstate, "nvmlDeviceGetPerformanceState");
	FN(nvml_fn_devuint2, mig, "nvmlDeviceGetMigMode");
	FN(nvml_fn_devuint, pgen, "nvmlDeviceGetCurrPcieLinkGeneration");
	FN(nvml_fn_devuint, pgenmax, "nvmlDeviceGetMaxPcieLinkGeneration");
	FN(nvml_fn_devuint, pwidth, "nvmlDeviceGetCurrPcieLinkWidth");
	FN(nvml_fn_devuint, pwidthmax, "nvmlDeviceGetMaxPcieLinkWidth");
	FN(nvml_fn_devull, energy, "nvmlDeviceGetTotalEnergyConsumption");
	FN(nvml_fn_devint2, cc, "nvmlDeviceGetCudaComputeCapability");
	FN(nvml_fn_procs, cprocs, "nvmlDeviceGetComputeRunningProcesses_v3");
	FN(nvml_fn_procs, gprocs, "nvmlDeviceGetGraphicsRunningProcesses_v3");
	FN(nvml_fn_topo, topo, "nvmlDeviceGetTopologyCommonAncestor");

	nvmlReturn_t rc;
	unsigned n;
	nvmlDevice_t *h = open_devices(&n);
	char drv[NVML_VERSION_BUFFER_SIZE] = "", nv[NVML_VERSION_BUFFER_SIZE] = "";
	int cv = 0;
	nvmlReturn_t r1 = C(driver(drv, sizeof drv));
	nvmlReturn_t r2 = C(nvmlver(nv, sizeof nv));
	nvmlReturn_t r3 = C(cuda(&cv));
	printf("driver");
	PS(r1, drv);
	PS(r2, nv);
	PI(r3, cv);
	printf(" gpus %u\n", n);

	unsigned pcap = 32;
	nvmlProcessInfo_v2_t *pbuf = malloc(pcap * sizeof *pbuf);
	if (!pbuf)
		return 1;
	for (unsigned i = 0; i < n; i++) {
		nvmlDevice_t d = h[i];
		char s[NVML_NAME_BUFFER_SIZE];
		printf("%u", i);
		rc = C(name(d, s, sizeof s)); PS(rc, s);
		rc = C(uuid(d, s, sizeof s)); PS(rc, s);
		rc = C(serial(d, s, sizeof s)); PS(rc, s);
		rc = C(vbios(d, s, sizeof s)); PS(rc, s);
		nvmlPciInfo_t p;
		memset(&p, 0, sizeof p);
		rc = C(pci(d, &p));
		if (rc)
			printf(" -");
		else
			printf(" %s %x %x %x %x %x", p.busId, p.domain, p.bus, p.device, p.pciDeviceId,
			       p.pciSubSystemId);
		nvmlMemory_v2_t m;
		memset(&m, 0, sizeof m);
		m.version = 0x02000028U;
		rc = C(mem(d, &m));
		if (rc)
			printf(" -");
		else
			printf(" %llu %llu %llu %llu", m.total, m.reserved, m.used, m.free);
		nvmlUtilization_t u = {0, 0};
		rc = C(util(d, &u));
		if (rc)
			printf(" -");
		else
			printf(" %u %u", u.gpu, u.memory);
		unsigned v = 0, v2 = 0;
		int iv = 0, iv2 = 0;
		unsigned long long ull = 0;
		rc = C(temp(d, NVML_TEMPERATURE_GPU, &v)); PU(rc, v);
		rc = C(fan(d, &v)); PU(rc, v);
		rc = C(power(d, &v)); PU(rc, v);
		rc = C(plimit(d, &v)); PU(rc, v);
		rc = C(penforced(d, &v)); PU(rc, v);
		rc = C(pdefault(d, &v)); PU(rc, v);
		rc = C(pconstr(d, &v, &v2)); PU(rc, v); PU(rc, v2);
		for (int k = NVML_CLOCK_GRAPHICS; k <= NVML_CLOCK_VIDEO; k++) {
			rc = C(clock(d, k, &v)); PU(rc, v);
		}
		for (int k = NVML_CLOCK_GRAPHICS; k <= NVML_CLOCK_MEM; k++) {
			rc = C(maxclock(d, k, &v)); PU(rc, v);
		}
		rc = C(reasons(d, &ull)); PL(rc, ull);
		rc = C(reasons_sup(d, &ull)); PL(rc, ull);
		rc = C(eccmode(d, &iv, &iv2)); PI(rc, iv); PI(rc, iv2);
		for (int type = NVML_MEMORY_ERROR_TYPE_CORRECTED; type <= NVML_MEMORY_ERROR_TYPE_UNCORRECTED; type++)
			for (int ctr = NVML_VOLATILE_ECC; ctr <= NVML_AGGREGATE_ECC; ctr++) {
				rc = C(ecctotal(d, type, ctr, &ull)); PL(rc, ull);
			}
		rc = C(persist(d, &iv)); PI(rc, iv);
		rc = C(cmode(d, &iv)); PI(rc, iv);
		rc = C(pstate(d, &iv)); PI(rc, iv);
		rc = C(mig(d, &v, &v2)); PU(rc, v); PU(rc, v2);
		rc = C(pgen(d, &v)); PU(rc, v);
		rc = C(pgenmax(d, &v)); PU(rc, v);
		rc = C(pwidth(d, &v)); PU(rc, v);
		rc = C(pwidthmax(d, &v)); PU(rc, v);
		rc = C(energy(d, &ull)); PL(rc, ull);
		rc = C(cc(d, &iv, &iv2)); PI(rc, iv); PI(rc, iv2);
		unsigned np = 0;
		nvml_fn_procs pf[2] = {cprocs, gprocs};
		for (int k = 0; k < 2; k++) {
			rc = procs(pf[k], d, &pbuf, &pcap, &np);
			if (rc) {
				printf(" -");
				continue;
			}
			printf(" procs %u", np);
			for (unsigned j = 0; j < np; j++)
				printf(" %u:%llu", pbuf[j].pid, pbuf[j].usedGpuMemory);
		}
		printf(" topo");
		for (unsigned j = i + 1; j < n; j++) {
			rc = C(topo(d, h[j], &iv)); PI(rc, iv);
		}
		putchar('\n');
	}
	(void)C(shutdown());
	printf("nvml-calls %lu\n", calls);
	free(pbuf);
	free(h);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 3 || (strcmp(argv[1], "query") != 0 && strcmp(argv[1], "full") != 0)) {
		fprintf(stderr, "usage: floor query|full LIBRARY\n");
		return 2;
	}
	lib = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "floor: cannot load %s: %s\n", argv[2], dlerror());
		return 1;
	}
	int rc = strcmp(argv[1], "query") == 0 ? query() : full();
	dlclose(lib);
	return rc;
}
