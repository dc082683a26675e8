/*
 * test-sim.c — unit test of the simulated NVML library (sim/).
 *
 * Loads every built variant with dlopen, exactly as gpuctl loads the real
 * libnvidia-ml, and checks the contracts gpuctl relies on: which symbols each
 * driver generation exports, record sizes (the r535 `_v3` quirk), memory v1
 * vs v2, the count/INSUFFICIENT_SIZE protocol, fault injection, sticky lost
 * GPUs, unsupported metrics, registrations of live and dead processes,
 * topology, and gpuctl-sim-hold.
 *
 * Environment (set by sim/meson.build): GPUCTL_TEST_SIM_LIBDIR (the built
 * libraries), GPUCTL_TEST_NODES (examples/nodes), GPUCTL_TEST_SIM_HOLD.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "device/nvml-abi.h"

typedef nvmlReturn_t (*fn_uuid)(const char *, nvmlDevice_t *);
typedef nvmlReturn_t (*fn_devint)(nvmlDevice_t, int *);
typedef const char *(*fn_lasterr)(void);

enum { MODERN, R535, LEGACY, R410, NVARIANTS };

static struct {
	const char *gen, *file;
	void *h;
} variants[NVARIANTS] = {
	{ "modern", "libnvidia-ml-sim.so", NULL },
	{ "r535", "libnvidia-ml-sim-r535.so", NULL },
	{ "legacy", "libnvidia-ml-sim-legacy.so", NULL },
	{ "r410", "libnvidia-ml-sim-r410.so", NULL },
};

static void *cur; /* the variant the current test talks to */
static char tmpdir[] = "/tmp/test-sim-XXXXXX";
static char rundir[PATH_MAX];
static int node_seq;

static void *must(const char *name)
{
	void *p = dlsym(cur, name);

	if (!p)
		fail_msg("symbol %s missing", name);
	return p;
}

#define CALL(T, name, ...) (((T)must(name))(__VA_ARGS__))
#define INIT() CALL(nvml_fn_void, "nvmlInit_v2")
#define SHUTDOWN() CALL(nvml_fn_void, "nvmlShutdown")

static const char *env_or(const char *name, const char *def)
{
	const char *v = getenv(name);

	return v && v[0] ? v : def;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

/* Write json as a fresh node file and point GPUCTL_SIM_NODE at it. */
static void use_node_text(const char *json)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/node-%d.json", tmpdir, node_seq++);
	write_file(path, json);
	setenv("GPUCTL_SIM_NODE", path, 1);
}

static void use_example(const char *name)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", env_or("GPUCTL_TEST_NODES", "examples/nodes"), name);
	setenv("GPUCTL_SIM_NODE", path, 1);
}

static nvmlDevice_t dev(unsigned int i)
{
	nvmlDevice_t d = NULL;

	assert_int_equal(CALL(nvml_fn_handle_by_index, "nvmlDeviceGetHandleByIndex_v2", i, &d),
			 NVML_SUCCESS);
	return d;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int group_setup(void **state)
{
	const char *libdir = env_or("GPUCTL_TEST_SIM_LIBDIR", "build/sim");

	(void)state;
	for (int i = 0; i < NVARIANTS; i++) {
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/%s", libdir, variants[i].file);
		variants[i].h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (!variants[i].h) {
			fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
			return -1;
		}
	}
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(rundir, sizeof(rundir), "%s/run", tmpdir);
	if (mkdir(rundir, 0700) < 0)
		return -1;
	setenv("GPUCTL_SIM_RUNDIR", rundir, 1);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	for (int i = 0; i < NVARIANTS; i++)
		if (variants[i].h)
			dlclose(variants[i].h);
	return 0;
}

/* ---- the parsed-node cache (sim/nodecache.c) ------------------------------ */

/* the names of the cache files in dir (".node-*"), joined by spaces, and how many */
static int cache_entries(const char *dir, char *names, size_t len)
{
	char cmd[PATH_MAX + 64];
	snprintf(cmd, sizeof cmd, "ls -A '%s' 2>/dev/null", dir);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	char line[PATH_MAX];
	int n = 0;
	names[0] = '\0';
	while (fgets(line, sizeof line, p)) {
		line[strcspn(line, "\n")] = '\0';
		if (strncmp(line, ".node-", 6) != 0)
			continue;
		n++;
		snprintf(names + strlen(names), len - strlen(names), "%s%s", n > 1 ? " " : "", line);
	}
	pclose(p);
	return n;
}

static void gpu0_name(char *buf, size_t len)
{
	if (INIT() != NVML_SUCCESS)
		fail_msg("init: %s", CALL(fn_lasterr, "gpuctlSimLastError"));
	assert_int_equal(CALL(nvml_fn_devstr, "nvmlDeviceGetName", dev(0), buf, (unsigned int)len), NVML_SUCCESS);
	assert_int_equal(SHUTDOWN(), NVML_SUCCESS);
}

/* wait until path's last change is more than a second old: the cache keeps no younger file */
static void age(const char *path)
{
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	for (;;) {
		struct timespec now;
		clock_gettime(CLOCK_REALTIME, &now);
		double d = (double)(now.tv_sec - st.st_ctim.tv_sec) + (now.tv_nsec - st.st_ctim.tv_nsec) / 1e9;
		if (d > 1.2)
			return;
		usleep((useconds_t)((1.25 - d) * 1e6));
	}
}

static void rewrite_bytes(const char *path, const char *from, const char *to)
{
	FILE *f = fopen(path, "r+");
	assert_non_null(f);
	static char buf[1 << 20];
	size_t n = fread(buf, 1, sizeof buf, f);
	char *at = memmem(buf, n, from, strlen(from));
	assert_non_null(at);
	memcpy(at, to, strlen(to));
	assert_int_equal(fseek(f, 0, SEEK_SET), 0);
	assert_int_equal(fwrite(buf, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

/*
 * A node file is parsed once and then read back from the cache: a byte
 * changed in the cached form shows (so it is what was read), a damaged one
 * is parsed again and replaced, a changed node file is parsed again, a file
 * younger than a second is not kept, one not owned by this user is ignored,
 * and GPUCTL_SIM_CACHE=off keeps nothing. Each of the four generations has
 * its own entry.
 */
static void test_node_cache(void **state)
{
	(void)state;
	char dir[PATH_MAX], names[4096], name[96], entry[PATH_MAX + 128], node[PATH_MAX], text[8192];
	snprintf(dir, sizeof dir, "%s/cache", tmpdir);
	setenv("GPUCTL_SIM_CACHE", dir, 1);
	cur = variants[MODERN].h;
	use_example("h100-8x-sxm.json");
	age(getenv("GPUCTL_SIM_NODE"));

	gpu0_name(name, sizeof name);
	assert_string_equal(name, "NVIDIA H100 80GB HBM3");
	assert_int_equal(cache_entries(dir, names, sizeof names), 1);
	assert_int_equal(strncmp(names, ".node-modern-", 13), 0);
	snprintf(entry, sizeof entry, "%s/%.100s", dir, names);
	struct stat st;
	assert_int_equal(stat(entry, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);

	/* what the second load reads is the cached form */
	rewrite_bytes(entry, "NVIDIA H100 80GB HBM3", "NVIDIA X100 80GB HBM3");
	gpu0_name(name, sizeof name);
	assert_string_equal(name, "NVIDIA X100 80GB HBM3");

	/* damaged: parsed again, and replaced by a whole one */
	assert_int_equal(truncate(entry, st.st_size / 2), 0);
	gpu0_name(name, sizeof name);
	assert_string_equal(name, "NVIDIA H100 80GB HBM3");
	struct stat again;
	assert_int_equal(stat(entry, &again), 0);
	assert_int_equal(again.st_size, st.st_size);

	/* another user's file in its place is not read */
	if (geteuid() == 0) {
		rewrite_bytes(entry, "NVIDIA H100 80GB HBM3", "NVIDIA X100 80GB HBM3");
		assert_int_equal(chown(entry, 65534, 65534), 0);
		gpu0_name(name, sizeof name);
		assert_string_equal(name, "NVIDIA H100 80GB HBM3");
		assert_int_equal(unlink(entry), 0);
	}

	/* each generation its own entry */
	for (int v = R535; v < NVARIANTS; v++) {
		cur = variants[v].h;
		gpu0_name(name, sizeof name);
	}
	cur = variants[MODERN].h;
	gpu0_name(name, sizeof name);
	assert_int_equal(cache_entries(dir, names, sizeof names), NVARIANTS);

	/* a fresh file is not kept; once older, it is; changed (same size), it is parsed again */
	snprintf(node, sizeof node, "%s/cached-node.json", tmpdir);
	snprintf(text, sizeof text,
		 "{\"gpus\": [{\"name\": \"NVIDIA L4\", \"uuid\": \"GPU-00000000-0000-0000-0000-0000000000c1\"}]}");
	write_file(node, text);
	setenv("GPUCTL_SIM_NODE", node, 1);
	gpu0_name(name, sizeof name);
	assert_string_equal(name, "NVIDIA L4");
	assert_int_equal(cache_entries(dir, names, sizeof names), NVARIANTS);
	age(node);
	gpu0_name(name, sizeof name);
	assert_int_equal(cache_entries(dir, names, sizeof names), NVARIANTS + 1);
	rewrite_bytes(node, "NVIDIA L4", "NVIDIA T4");
	gpu0_name(name, sizeof name);
	assert_string_equal(name, "NVIDIA T4");

	/* off: nothing kept, nothing read */
	setenv("GPUCTL_SIM_CACHE", "off", 1);
	use_example("l4-2x.json");
	gpu0_name(name, sizeof name);
	assert_int_equal(cache_entries(dir, names, sizeof names), NVARIANTS + 1);
	unsetenv("GPUCTL_SIM_CACHE");
}

/* ---- symbols per generation -------------------------------------------- */

static void test_symbols(void **state)
{
	static const char *const everywhere[] = {
		"nvmlInit_v2", "nvmlInit", "nvmlShutdown", "nvmlErrorString", "gpuctlSimLastError",
		"nvmlSystemGetDriverVersion", "nvmlSystemGetCudaDriverVersion", "nvmlDeviceGetCount_v2",
		"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByUUID",
		"nvmlDeviceGetPciInfo", "nvmlDeviceGetPciInfo_v2", "nvmlDeviceGetMemoryInfo",
		"nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetCurrentClocksThrottleReasons",
		"nvmlDeviceGetTopologyCommonAncestor", "nvmlDeviceGetFanSpeed",
		"nvmlDeviceGetRetiredPagesPendingStatus",
	};
	/* symbol, then presence in modern, r535, legacy, r410 */
	static const struct {
		const char *name;
		bool in[NVARIANTS];
	} table[] = {
		{ "nvmlDeviceGetRunningProcessDetailList", { 1, 0, 0, 0 } },
		{ "nvmlDeviceGetComputeRunningProcesses_v3", { 1, 1, 0, 0 } },
		{ "nvmlDeviceGetGraphicsRunningProcesses_v3", { 1, 1, 0, 0 } },
		{ "nvmlDeviceGetMemoryInfo_v2", { 1, 1, 0, 0 } },
		{ "nvmlDeviceGetCurrentClocksEventReasons", { 1, 1, 0, 0 } },
		{ "nvmlDeviceGetSupportedClocksEventReasons", { 1, 1, 0, 0 } },
		{ "nvmlDeviceGetConfComputeMemSizeInfo", { 1, 1, 0, 0 } },
		{ "nvmlDeviceGetComputeRunningProcesses_v2", { 1, 1, 1, 0 } },
		{ "nvmlDeviceGetGraphicsRunningProcesses_v2", { 1, 1, 1, 0 } },
		{ "nvmlDeviceGetPciInfo_v3", { 1, 1, 1, 0 } },
		{ "nvmlSystemGetCudaDriverVersion_v2", { 1, 1, 1, 0 } },
		{ "nvmlDeviceGetMigMode", { 1, 1, 1, 0 } },
		{ "nvmlDeviceGetRemappedRows", { 1, 1, 1, 0 } },
		{ "nvmlDeviceGetMaxMigDeviceCount", { 1, 1, 1, 0 } },
		{ "nvmlDeviceGetMigDeviceHandleByIndex", { 1, 1, 1, 0 } },
		{ "nvmlDeviceGetDeviceHandleFromMigDeviceHandle", { 1, 1, 1, 0 } },
		{ "nvmlDeviceIsMigDeviceHandle", { 1, 1, 1, 0 } },
		{ "nvmlDeviceGetGpuInstanceId", { 1, 1, 1, 0 } },
		{ "nvmlDeviceGetComputeInstanceId", { 1, 1, 1, 0 } },
		/* internal helpers never leak out */
		{ "sim_node_load", { 0, 0, 0, 0 } },
		{ "sim_generation", { 0, 0, 0, 0 } },
		{ "sim_rundir_scan", { 0, 0, 0, 0 } },
	};

	(void)state;
	for (int v = 0; v < NVARIANTS; v++) {
		for (size_t i = 0; i < sizeof(everywhere) / sizeof(everywhere[0]); i++)
			if (!dlsym(variants[v].h, everywhere[i]))
				fail_msg("%s: %s missing", variants[v].gen, everywhere[i]);
		for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
			if ((dlsym(variants[v].h, table[i].name) != NULL) != table[i].in[v])
				fail_msg("%s: %s should be %s", variants[v].gen, table[i].name,
					 table[i].in[v] ? "present" : "absent");
	}
}

static void test_default_versions(void **state)
{
	static const char *const want[NVARIANTS] = { "550.54.14", "535.54.03", "450.80.02",
						     "410.93" };
	char buf[80];
	int cuda = 0;

	(void)state;
	use_node_text("{\"gpus\": [{}]}");
	for (int v = 0; v < NVARIANTS; v++) {
		cur = variants[v].h;
		assert_int_equal(INIT(), NVML_SUCCESS);
		assert_int_equal(CALL(nvml_fn_sysstr, "nvmlSystemGetDriverVersion", buf, sizeof(buf)),
				 NVML_SUCCESS);
		assert_string_equal(buf, want[v]);
		assert_int_equal(SHUTDOWN(), NVML_SUCCESS);
	}
	cur = variants[MODERN].h;
	/* answered without init, as real NVML does */
	assert_int_equal(CALL(nvml_fn_sysint, "nvmlSystemGetCudaDriverVersion_v2", &cuda),
			 NVML_SUCCESS);
	assert_int_equal(cuda, 12040);
}

/* ---- init, errors ------------------------------------------------------- */

static void expect_init_error(const char *json, const char *msg_part)
{
	const char *msg;

	use_node_text(json);
	assert_int_equal(INIT(), NVML_ERROR_UNKNOWN);
	msg = CALL(fn_lasterr, "gpuctlSimLastError");
	if (!strstr(msg, msg_part))
		fail_msg("message '%s' lacks '%s'", msg, msg_part);
}

static void test_init(void **state)
{
	unsigned int n = 0;

	(void)state;
	cur = variants[MODERN].h;
	assert_int_equal(CALL(nvml_fn_count, "nvmlDeviceGetCount_v2", &n), NVML_ERROR_UNINITIALIZED);
	assert_string_equal(CALL(fn_lasterr, "gpuctlSimLastError"), "");

	unsetenv("GPUCTL_SIM_NODE");
	assert_int_equal(INIT(), NVML_ERROR_UNKNOWN);
	assert_non_null(strstr(CALL(fn_lasterr, "gpuctlSimLastError"), "GPUCTL_SIM_NODE"));
	setenv("GPUCTL_SIM_NODE", "/nonexistent/node.json", 1);
	assert_int_equal(INIT(), NVML_ERROR_UNKNOWN);
	assert_non_null(strstr(CALL(fn_lasterr, "gpuctlSimLastError"), "/nonexistent/node.json"));

	expect_init_error("{\"gpus\": [\n{\"name\": \"x\"\n\"uuid\": 1}]}", ": line 3: ");
	expect_init_error("{\"gpus\": [{}, {}, {\"memory\": {\"total\": \"big\"}}]}",
			  "gpus[2].memory.total: expected an integer");
	expect_init_error("{\"gpus\": [{\"temprature\": 3}]}", "gpus[0].temprature: unknown key");
	expect_init_error("{\"gpus\": [{\"faults\": {\"nvmlDeviceGetFan\": \"UNKNOWN\"}}]}",
			  "unknown NVML function");
	expect_init_error("{\"gpus\": [{\"faults\": {\"nvmlDeviceGetFanSpeed\": \"OOPS\"}}]}",
			  "unknown error name 'OOPS'");
	expect_init_error("{\"gpus\": [{\"processes\": [{\"pid\": 1, \"type\": \"x\"}]}]}",
			  "gpus[0].processes[0].type");
	expect_init_error("{\"gpus\": [{\"uuid\": \"GPU-a\"}, {\"uuid\": \"GPU-a\"}]}",
			  "gpus[1].uuid: same as gpus[0].uuid");
	expect_init_error("[]", "top level");
	expect_init_error("{}", "gpus: expected an array");

	/* refcounted like NVML */
	use_node_text("{\"gpus\": [{}, {}], \"_comment\": \"ignored\"}");
	assert_int_equal(INIT(), NVML_SUCCESS);
	assert_string_equal(CALL(fn_lasterr, "gpuctlSimLastError"), "");
	assert_int_equal(CALL(nvml_fn_void, "nvmlInit"), NVML_SUCCESS);
	assert_int_equal(SHUTDOWN(), NVML_SUCCESS);
	assert_int_equal(CALL(nvml_fn_count, "nvmlDeviceGetCount", &n), NVML_SUCCESS);
	assert_int_equal(n, 2);
	assert_int_equal(SHUTDOWN(), NVML_SUCCESS);
	assert_int_equal(SHUTDOWN(), NVML_ERROR_UNINITIALIZED);
	assert_int_equal(CALL(nvml_fn_count, "nvmlDeviceGetCount", &n), NVML_ERROR_UNINITIALIZED);

	assert_string_equal(CALL(nvml_fn_errstr, "nvmlErrorString", NVML_ERROR_GPU_IS_LOST),
			    "GPU is lost");
	assert_string_equal(CALL(nvml_fn_errstr, "nvmlErrorString", NVML_ERROR_NOT_SUPPORTED),
			    "Not Supported");
	assert_string_equal(CALL(nvml_fn_errstr, "nvmlErrorString",
				 NVML_ERROR_LIB_RM_VERSION_MISMATCH),
			    "RM has detected an NVML/RM version mismatch.");
	assert_string_equal(CALL(nvml_fn_errstr, "nvmlErrorString", 12345), "Unknown Error");
}

/* ---- example nodes ------------------------------------------------------ */

static void test_examples(void **state)
{
	static const struct {
		const char *file, *name;
		unsigned int count;
	} ex[] = {
		{ "h100-8x-sxm.json", "NVIDIA H100 80GB HBM3", 8 },
		{ "a100-4x-pcie.json", "NVIDIA A100 80GB PCIe", 4 },
		{ "l4-2x.json", "NVIDIA L4", 2 },
		{ "t4-1x.json", "Tesla T4", 1 },
	};

	(void)state;
	for (int v = 0; v < NVARIANTS; v++) {
		cur = variants[v].h;
		for (size_t i = 0; i < sizeof(ex) / sizeof(ex[0]); i++) {
			unsigned int n = 0, fan;
			char name[96], uuid[96];
			nvmlDevice_t d = NULL;

			use_example(ex[i].file);
			if (INIT() != NVML_SUCCESS)
				fail_msg("%s: %s", ex[i].file, CALL(fn_lasterr, "gpuctlSimLastError"));
			assert_int_equal(CALL(nvml_fn_count, "nvmlDeviceGetCount_v2", &n), NVML_SUCCESS);
			assert_int_equal(n, ex[i].count);
			for (unsigned int g = 0; g < n; g++) {
				assert_int_equal(CALL(nvml_fn_devstr, "nvmlDeviceGetName", dev(g), name,
						      sizeof(name)),
						 NVML_SUCCESS);
				assert_string_equal(name, ex[i].name);
				assert_int_equal(CALL(nvml_fn_devuint, "nvmlDeviceGetFanSpeed", dev(g),
						      &fan),
						 NVML_ERROR_NOT_SUPPORTED);
				assert_int_equal(CALL(nvml_fn_devstr, "nvmlDeviceGetUUID", dev(g), uuid,
						      sizeof(uuid)),
						 NVML_SUCCESS);
				assert_int_equal(CALL(fn_uuid, "nvmlDeviceGetHandleByUUID", uuid, &d),
						 NVML_SUCCESS);
				assert_ptr_equal(d, dev(g));
			}
			assert_int_equal(SHUTDOWN(), NVML_SUCCESS);
		}
	}
}

static void test_h100_values(void **state)
{
	nvmlMemory_v2_t m2;
	unsigned long long reasons = 0;
	unsigned int u = 0, min = 0, max = 0, cur_mig = 9, pend_mig = 9;
	int a = -1, b = -1;
	char buf[80];

	(void)state;
	cur = variants[MODERN].h;
	use_example("h100-8x-sxm.json");
	assert_int_equal(INIT(), NVML_SUCCESS);
	assert_int_equal(CALL(nvml_fn_sysstr, "nvmlSystemGetDriverVersion", buf, sizeof(buf)),
			 NVML_SUCCESS);
	assert_string_equal(buf, "550.54.14");
	assert_int_equal(CALL(nvml_fn_sysint, "nvmlSystemGetCudaDriverVersion_v2", &a), NVML_SUCCESS);
	assert_int_equal(a, 12040);

	memset(&m2, 0, sizeof(m2));
	m2.version = nvmlMemory_v2;
	assert_int_equal(CALL(nvml_fn_mem, "nvmlDeviceGetMemoryInfo_v2", dev(0), &m2), NVML_SUCCESS);
	assert_int_equal(m2.total, 85520809984ULL);
	assert_int_equal(m2.reserved, 501481472ULL);
	assert_int_equal(CALL(nvml_fn_devuint, "nvmlDeviceGetPowerManagementLimit", dev(0), &u),
			 NVML_SUCCESS);
	assert_int_equal(u, 700000);
	assert_int_equal(CALL(nvml_fn_devuint2, "nvmlDeviceGetPowerManagementLimitConstraints",
			      dev(0), &min, &max),
			 NVML_SUCCESS);
	assert_int_equal(max, 700000);
	assert_int_equal(CALL(nvml_fn_devenum, "nvmlDeviceGetMaxClockInfo", dev(0), NVML_CLOCK_SM, &u),
			 NVML_SUCCESS);
	assert_int_equal(u, 1980);
	assert_int_equal(CALL(nvml_fn_devenum, "nvmlDeviceGetMaxClockInfo", dev(0), NVML_CLOCK_MEM,
			      &u),
			 NVML_SUCCESS);
	assert_int_equal(u, 2619);
	assert_int_equal(CALL(nvml_fn_devint2, "nvmlDeviceGetCudaComputeCapability", dev(0), &a, &b),
			 NVML_SUCCESS);
	assert_int_equal(a, 9);
	assert_int_equal(b, 0);
	assert_int_equal(CALL(nvml_fn_devint2, "nvmlDeviceGetEccMode", dev(0), &a, &b), NVML_SUCCESS);
	assert_int_equal(a, 1);
	assert_int_equal(CALL(fn_devint, "nvmlDeviceGetPersistenceMode", dev(0), &a), NVML_SUCCESS);
	assert_int_equal(a, 1);
	assert_int_equal(CALL(nvml_fn_devuint2, "nvmlDeviceGetMigMode", dev(0), &cur_mig, &pend_mig),
			 NVML_SUCCESS);
	assert_int_equal(cur_mig, 0);
	assert_int_equal(CALL(nvml_fn_devuint, "nvmlDeviceGetCurrPcieLinkGeneration", dev(0), &u),
			 NVML_SUCCESS);
	assert_int_equal(u, 5);
	assert_int_equal(CALL(nvml_fn_devuint, "nvmlDeviceGetMaxPcieLinkWidth", dev(0), &u),
			 NVML_SUCCESS);
	assert_int_equal(u, 16);

	/* a mixed load: idle GPUs, one power-capped GPU */
	int idle = 0, capped = 0;
	for (unsigned int g = 0; g < 8; g++) {
		assert_int_equal(CALL(nvml_fn_devull, "nvmlDeviceGetCurrentClocksThrottleReasons",
				      dev(g), &reasons),
				 NVML_SUCCESS);
		idle += reasons == NVML_REASON_GPU_IDLE;
		capped += reasons == NVML_REASON_SW_POWER_CAP;
	}
	assert_true(idle >= 2);
	assert_int_equal(capped, 1);
	assert_int_equal(SHUTDOWN(), NVML_SUCCESS);
}

/* ---- memory ------------------------------------------------------------- */

static const char mem_node[] =
	"{\"gpus\": [{\"memory\": {\"total\": 10000, \"reserved\": 1000, \"used\": 500},"
	"  \"processes\": ["
	"    {\"pid\": 4000001, \"used_memory\": 2000},"
	"    {\"pid\": 4000002, \"used_memory\": null},"
	"    {\"pid\": 4000003, \"used_memory\": 300, \"type\": \"graphics\"},"
	"    {\"pid\": 4000004, \"used_memory\": 100, \"type\": \"compute+graphics\"}]},"
	" {\"memory\": {\"total\": 10000, \"reserved\": 1000, \"used\": 20000}},"
	" {\"memory\": null}]}";

static void test_memory(void **state)
{
	nvmlMemory_t m1;
	nvmlMemory_v2_t m2;

	(void)state;
	cur = variants[MODERN].h;
	use_node_text(mem_node);
	assert_int_equal(INIT(), NVML_SUCCESS);

	assert_int_equal(CALL(nvml_fn_mem, "nvmlDeviceGetMemoryInfo", dev(0), &m1), NVML_SUCCESS);
	assert_int_equal(m1.total, 10000);
	assert_int_equal(m1.used, 1000 + 500 + 2000 + 300 + 100);
	assert_int_equal(m1.free, 10000 - 3900);

	memset(&m2, 0, sizeof(m2));
	m2.version = nvmlMemory_v2;
	assert_int_equal(CALL(nvml_fn_mem, "nvmlDeviceGetMemoryInfo_v2", dev(0), &m2), NVML_SUCCESS);
	assert_int_equal(m2.version, nvmlMemory_v2);
	assert_int_equal(m2.total, 10000);
	assert_int_equal(m2.reserved, 1000);
	assert_int_equal(m2.used, 500 + 2000 + 300 + 100);
	assert_int_equal(m2.free, 10000 - 1000 - 2900);

	/* wrong version words are refused and nothing is written */
	static const unsigned int bad[] = { 0, 1, 0x01000028, 0x02000018, 0x02000020 };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&m2, 0x5A, sizeof(m2));
		m2.version = bad[i];
		assert_int_equal(CALL(nvml_fn_mem, "nvmlDeviceGetMemoryInfo_v2", dev(0), &m2),
				 NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
		assert_int_equal(m2.total, 0x5A5A5A5A5A5A5A5AULL);
	}

	/* over-committed: clamped, total = reserved + used + free */
	m2.version = nvmlMemory_v2;
	assert_int_equal(CALL(nvml_fn_mem, "nvmlDeviceGetMemoryInfo_v2", dev(1), &m2), NVML_SUCCESS);
	assert_int_equal(m2.free, 0);
	assert_int_equal(m2.used, 9000);
	assert_int_equal(CALL(nvml_fn_mem, "nvmlDeviceGetMemoryInfo", dev(1), &m1), NVML_SUCCESS);
	assert_int_equal(m1.used, 10000);
	assert_int_equal(m1.free, 0);

	assert_int_equal(CALL(nvml_fn_mem, "nvmlDeviceGetMemoryInfo", dev(2), &m1),
			 NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(CALL(nvml_fn_mem, "nvmlDeviceGetMemoryInfo", dev(0), NULL),
			 NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(SHUTDOWN(), NVML_SUCCESS);
}

/* ---- processes ---------------------------------------------------------- */

static void test_process_records(void **state)
{
	unsigned char buf[8 * 32];
	unsigned int n;
	nvmlProcessInfo_v2_t p2;
	nvmlProcessInfo_r535_t p3;
	nvmlProcessInfo_v1_t p1;

	(void)state;
	use_node_text(mem_node);
	for (int v = MODERN; v <= R535; v++) {
		size_t rec = v == R535 ? 32 : 24;

		cur = variants[v].h;
		assert_int_equal(INIT(), NVML_SUCCESS);

		/* capacity query: count 0, NULL buffer */
		n = 0;
		assert_int_equal(CALL(nvml_fn_procs, "nvmlDeviceGetComputeRunningProcesses_v3", dev(0),
				      &n, NULL),
				 NVML_ERROR_INSUFFICIENT_SIZE);
		assert_int_equal(n, 3);
		n = 2;
		assert_int_equal(CALL(nvml_fn_procs, "nvmlDeviceGetComputeRunningProcesses_v3", dev(0),
				      &n, buf),
				 NVML_ERROR_INSUFFICIENT_SIZE);
		assert_int_equal(n, 3);

		memset(buf, 0xAA, sizeof(buf));
		n = 8;
		assert_int_equal(CALL(nvml_fn_procs, "nvmlDeviceGetComputeRunningProcesses_v3", dev(0),
				      &n, buf),
				 NVML_SUCCESS);
		assert_int_equal(n, 3);
		/* exactly n records of this generation's size were written */
		assert_int_equal(buf[3 * rec], 0xAA);
		assert_int_not_equal(buf[3 * rec - 1], 0xAA);
		if (v == R535) {
			memcpy(&p3, buf + 1 * rec, sizeof(p3));
			assert_int_equal(p3.pid, 4000002);
			assert_int_equal(p3.usedGpuMemory, NVML_VALUE_NOT_AVAILABLE_ULL);
			assert_int_equal(p3.gpuInstanceId, 0xFFFFFFFFu);
			assert_int_equal(p3.usedGpuCcProtectedMemory, 0);
			memcpy(&p3, buf + 2 * rec, sizeof(p3));
			assert_int_equal(p3.pid, 4000004);
		} else {
			memcpy(&p2, buf + 1 * rec, sizeof(p2));
			assert_int_equal(p2.pid, 4000002);
			assert_int_equal(p2.usedGpuMemory, NVML_VALUE_NOT_AVAILABLE_ULL);
			assert_int_equal(p2.computeInstanceId, 0xFFFFFFFFu);
			memcpy(&p2, buf + 2 * rec, sizeof(p2));
			assert_int_equal(p2.pid, 4000004);
		}

		/* _v2: 24 bytes in every generation */
		memset(buf, 0xAA, sizeof(buf));
		n = 8;
		assert_int_equal(CALL(nvml_fn_procs, "nvmlDeviceGetComputeRunningProcesses_v2", dev(0),
				      &n, buf),
				 NVML_SUCCESS);
		assert_int_equal(buf[3 * 24], 0xAA);
		memcpy(&p2, buf, sizeof(p2));
		assert_int_equal(p2.pid, 4000001);
		assert_int_equal(p2.usedGpuMemory, 2000);

		/* v1: 16 bytes */
		memset(buf, 0xAA, sizeof(buf));
		n = 8;
		assert_int_equal(CALL(nvml_fn_procs, "nvmlDeviceGetComputeRunningProcesses", dev(0),
				      &n, buf),
				 NVML_SUCCESS);
		assert_int_equal(buf[3 * 16], 0xAA);
		memcpy(&p1, buf + 16, sizeof(p1));
		assert_int_equal(p1.pid, 4000002);

		/* graphics: the graphics and compute+graphics processes */
		n = 8;
		assert_int_equal(CALL(nvml_fn_procs, "nvmlDeviceGetGraphicsRunningProcesses_v3", dev(0),
				      &n, buf),
				 NVML_SUCCESS);
		assert_int_equal(n, 2);
		memcpy(&p2, buf, sizeof(p2));
		assert_int_equal(p2.pid, 4000003);

		/* no processes: SUCCESS with NULL buffer */
		n = 0;
		assert_int_equal(CALL(nvml_fn_procs, "nvmlDeviceGetComputeRunningProcesses_v3", dev(1),
				      &n, NULL),
				 NVML_SUCCESS);
		assert_int_equal(n, 0);
		assert_int_equal(CALL(nvml_fn_procs, "nvmlDeviceGetComputeRunningProcesses_v3", dev(1),
				      NULL, NULL),
				 NVML_ERROR_INVALID_ARGUMENT);
		assert_int_equal(SHUTDOWN(), NVML_SUCCESS);
	}

	/* RunningProcessDetailList (modern only) */
	struct {
		unsigned int version, mode, num;
		nvmlProcessInfo_r535_t *arr;
	} list;
	nvmlProcessInfo_r535_t recs[4];

	_Static_assert(sizeof(list) == 24, "detail list is 24 bytes");
	cur = variants[MODERN].h;
	assert_int_equal(INIT(), NVML_SUCCESS);
	memset(&list, 0, sizeof(list));
	list.version = 0x01000018;
	list.arr = recs;
	list.num = 4;
	assert_int_equal(CALL(nvml_fn_mem, "nvmlDeviceGetRunningProcessDetailList", dev(0), &list),
			 NVML_SUCCESS);
	assert_int_equal(list.num, 3);
	assert_int_equal(recs[2].pid, 4000004);
	list.version = 1;
	assert_int_equal(CALL(nvml_fn_mem, "nvmlDeviceGetRunningProcessDetailList", dev(0), &list),
			 NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
	assert_int_equal(CALL(nvml_fn_mem, "nvmlDeviceGetConfComputeMemSizeInfo", dev(0), recs),
			 NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(SHUTDOWN(), NVML_SUCCESS);
}

static void test_mig_processes(void **state)
{
	nvmlProcessInfo_v2_t p[4];
	unsigned int n = 4, c = 9, pe = 9;

	(void)state;
	cur = variants[MODERN].h;
	use_example("a100-4x-pcie.json");
	assert_int_equal(INIT(), NVML_SUCCESS);
	assert_int_equal(CALL(nvml_fn_devuint2, "nvmlDeviceGetMigMode", dev(3), &c, &pe), NVML_SUCCESS);
	assert_int_equal(c, 1);
	assert_int_equal(CALL(nvml_fn_procs, "nvmlDeviceGetComputeRunningProcesses_v3", dev(3), &n, p),
			 NVML_SUCCESS);
	assert_int_equal(n, 2);
	assert_int_equal(p[0].gpuInstanceId, 1);
	assert_int_equal(p[0].computeInstanceId, 0);
	assert_int_equal(SHUTDOWN(), NVML_SUCCESS);
}

/* MIG device enumeration: handles by index, what a MIG handle answers, its parent */
static void test_mig_devices(void **state)
{
	nvmlDevice_t m = NULL, parent = NULL, m2 = NULL;
	unsigned int max = 99, id = 99, is = 99;
	char buf[96];
	nvmlMemory_t v1;
	nvmlMemory_v2_t v2;

	(void)state;
	cur = variants[MODERN].h;
	use_example("a100-4x-pcie.json");
	assert_int_equal(INIT(), NVML_SUCCESS);
	/* GPU 3 is in MIG mode with MIG devices in slots 0 and 1 of 7 */
	assert_int_equal(CALL(nvml_fn_devuint, "nvmlDeviceGetMaxMigDeviceCount", dev(3), &max), NVML_SUCCESS);
	assert_int_equal(max, 7);
	assert_int_equal(CALL(nvml_fn_mig_handle, "nvmlDeviceGetMigDeviceHandleByIndex", dev(3), 1, &m),
			 NVML_SUCCESS);
	assert_non_null(m);
	assert_true(m != dev(3));
	assert_int_equal(CALL(nvml_fn_devstr, "nvmlDeviceGetUUID", m, buf, sizeof(buf)), NVML_SUCCESS);
	assert_string_equal(buf, "MIG-b83e0d52-7c19-5a6f-9e2d-3f4a5b6c7d8e");
	assert_int_equal(CALL(nvml_fn_devstr, "nvmlDeviceGetName", m, buf, sizeof(buf)), NVML_SUCCESS);
	assert_string_equal(buf, "NVIDIA A100 80GB PCIe MIG 3g.40gb");
	assert_int_equal(CALL(nvml_fn_devuint, "nvmlDeviceGetGpuInstanceId", m, &id), NVML_SUCCESS);
	assert_int_equal(id, 2);
	assert_int_equal(CALL(nvml_fn_devuint, "nvmlDeviceGetComputeInstanceId", m, &id), NVML_SUCCESS);
	assert_int_equal(id, 0);
	assert_int_equal(CALL(nvml_fn_devuint, "nvmlDeviceIsMigDeviceHandle", m, &is), NVML_SUCCESS);
	assert_int_equal(is, 1);
	assert_int_equal(CALL(nvml_fn_devuint, "nvmlDeviceIsMigDeviceHandle", dev(3), &is), NVML_SUCCESS);
	assert_int_equal(is, 0);
	/* its own memory: the baseline plus the 4 GiB process of GPU instance 2 */
	assert_int_equal(CALL(nvml_fn_mem, "nvmlDeviceGetMemoryInfo", m, &v1), NVML_SUCCESS);
	assert_true(v1.total == 42144366592ULL);
	assert_true(v1.used == 14680064ULL + 4294967296ULL);
	assert_true(v1.free == v1.total - v1.used);
	memset(&v2, 0, sizeof(v2));
	v2.version = nvmlMemory_v2;
	assert_int_equal(CALL(nvml_fn_mem, "nvmlDeviceGetMemoryInfo_v2", m, &v2), NVML_SUCCESS);
	assert_true(v2.total == 42144366592ULL && v2.reserved == 0 && v2.used == v1.used);
	v2.version = 1;
	assert_int_equal(CALL(nvml_fn_mem, "nvmlDeviceGetMemoryInfo_v2", m, &v2),
			 NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
	assert_int_equal(CALL(nvml_fn_mig_parent, "nvmlDeviceGetDeviceHandleFromMigDeviceHandle", m, &parent),
			 NVML_SUCCESS);
	assert_true(parent == dev(3));
	/* a full GPU's handle is no MIG device; a MIG handle is not a GPU for other calls */
	assert_int_equal(CALL(nvml_fn_mig_parent, "nvmlDeviceGetDeviceHandleFromMigDeviceHandle", dev(3),
			      &parent), NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(CALL(nvml_fn_devuint, "nvmlDeviceGetGpuInstanceId", dev(3), &id),
			 NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(CALL(nvml_fn_devuint, "nvmlDeviceGetFanSpeed", m, &id), NVML_ERROR_INVALID_ARGUMENT);
	/* empty slot, slot out of range */
	assert_int_equal(CALL(nvml_fn_mig_handle, "nvmlDeviceGetMigDeviceHandleByIndex", dev(3), 2, &m2),
			 NVML_ERROR_NOT_FOUND);
	assert_int_equal(CALL(nvml_fn_mig_handle, "nvmlDeviceGetMigDeviceHandleByIndex", dev(3), 7, &m2),
			 NVML_ERROR_INVALID_ARGUMENT);
	/* GPU 0: MIG off (no slots); the H100s of the other example: MIG off too */
	assert_int_equal(CALL(nvml_fn_devuint, "nvmlDeviceGetMaxMigDeviceCount", dev(0), &max), NVML_SUCCESS);
	assert_int_equal(max, 0);
	assert_int_equal(CALL(nvml_fn_mig_handle, "nvmlDeviceGetMigDeviceHandleByIndex", dev(0), 0, &m2),
			 NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(SHUTDOWN(), NVML_SUCCESS);

	/* "mig": null: a GPU without MIG */
	use_node_text("{\"gpus\": [{\"mig\": null}]}");
	assert_int_equal(INIT(), NVML_SUCCESS);
	assert_int_equal(CALL(nvml_fn_devuint, "nvmlDeviceGetMaxMigDeviceCount", dev(0), &max),
			 NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(SHUTDOWN(), NVML_SUCCESS);

	/* faults on the GPU reach its MIG devices */
	use_node_text("{\"gpus\": [{\"mig\": {\"current\": true, \"devices\": [{\"profile\": \"1g.10gb\", "
		      "\"memory\": {\"total\": 10200547328}}]}, "
		      "\"faults\": {\"nvmlDeviceGetUUID\": \"NO_PERMISSION\"}}]}");
	assert_int_equal(INIT(), NVML_SUCCESS);
	assert_int_equal(CALL(nvml_fn_mig_handle, "nvmlDeviceGetMigDeviceHandleByIndex", dev(0), 0, &m),
			 NVML_SUCCESS);
	assert_int_equal(CALL(nvml_fn_devstr, "nvmlDeviceGetUUID", m, buf, sizeof(buf)), NVML_ERROR_NO_PERMISSION);
	assert_int_equal(CALL(nvml_fn_devstr, "nvmlDeviceGetName", m, buf, sizeof(buf)), NVML_SUCCESS);
	assert_string_equal(buf, "NVIDIA Simulated GPU MIG 1g.10gb");
	assert_int_equal(CALL(nvml_fn_devuint, "nvmlDeviceGetGpuInstanceId", m, &id), NVML_SUCCESS);
	assert_int_equal(id, 0); /* the default: the slot */
	assert_int_equal(SHUTDOWN(), NVML_SUCCESS);

	/* the node file is checked */
	expect_init_error("{\"gpus\": [{\"mig\": {\"current\": false, \"devices\": [{\"profile\": \"1g.10gb\", "
			  "\"memory\": {\"total\": 1}}]}}]}",
			  "gpus[0].mig.devices: MIG devices need \"current\": true");
	expect_init_error("{\"gpus\": [{\"mig\": {\"current\": true, \"devices\": [{\"memory\": {\"total\": 1}}]}}]}",
			  "gpus[0].mig.devices[0].profile: expected a profile name");
	expect_init_error("{\"gpus\": [{\"mig\": {\"current\": true, \"devices\": [{\"profile\": \"1g.10gb\"}]}}]}",
			  "gpus[0].mig.devices[0].memory: expected an object");
	expect_init_error("{\"gpus\": [{\"mig\": {\"current\": true, \"max_devices\": 1, \"devices\": ["
			  "{\"profile\": \"1g.10gb\", \"memory\": {\"total\": 1}}, "
			  "{\"profile\": \"1g.10gb\", \"memory\": {\"total\": 1}}]}}]}",
			  "gpus[0].mig.devices: more than max_devices (1)");
	expect_init_error("{\"gpus\": [{\"mig\": {\"current\": true, \"devices\": ["
			  "{\"profile\": \"1g.10gb\", \"memory\": {\"total\": 1}, \"gpu_instance_id\": 3}, "
			  "{\"profile\": \"1g.10gb\", \"memory\": {\"total\": 1}, \"gpu_instance_id\": 3}]}}]}",
			  "gpus[0].mig.devices[1].compute_instance_id: devices[0] has the same GPU and compute instance");
}

/* ---- PCI ---------------------------------------------------------------- */

static void test_pci(void **state)
{
	nvmlPciInfo_t p3;
	nvmlPciInfoLegacy_t p1;
	unsigned char raw[80];
	nvmlDevice_t d = NULL;

	(void)state;
	use_node_text("{\"gpus\": [{\"pci\": {\"domain\": 1, \"bus\": 24, \"device\": 0,"
		      " \"device_id\": \"0x233010DE\", \"subsystem_id\": 381750494}}, {\"pci\": null}]}");
	cur = variants[MODERN].h;
	assert_int_equal(INIT(), NVML_SUCCESS);
	memset(raw, 0xAA, sizeof(raw));
	assert_int_equal(CALL(nvml_fn_pci, "nvmlDeviceGetPciInfo_v3", dev(0), raw), NVML_SUCCESS);
	assert_int_equal(raw[68], 0xAA);
	memcpy(&p3, raw, sizeof(p3));
	assert_string_equal(p3.busId, "00000001:18:00.0");
	assert_string_equal(p3.busIdLegacy, "0001:18:00.0");
	assert_int_equal(p3.bus, 24);
	assert_int_equal(p3.pciDeviceId, 0x233010DE);
	assert_int_equal(p3.pciSubSystemId, 381750494);

	memset(raw, 0xAA, sizeof(raw));
	assert_int_equal(CALL(nvml_fn_pci, "nvmlDeviceGetPciInfo_v2", dev(0), raw), NVML_SUCCESS);
	assert_int_equal(raw[52], 0xAA);
	memcpy(&p1, raw, sizeof(p1));
	assert_string_equal(p1.busId, "0001:18:00.0");
	assert_int_equal(p1.pciDeviceId, 0x233010DE);

	assert_int_equal(CALL(fn_uuid, "nvmlDeviceGetHandleByPciBusId_v2", "00000001:18:00.0", &d),
			 NVML_SUCCESS);
	assert_ptr_equal(d, dev(0));
	d = NULL;
	assert_int_equal(CALL(fn_uuid, "nvmlDeviceGetHandleByPciBusId_v2", "0001:18:00.0", &d),
			 NVML_SUCCESS);
	assert_ptr_equal(d, dev(0));
	assert_int_equal(CALL(fn_uuid, "nvmlDeviceGetHandleByPciBusId_v2", "0000:18:00.0", &d),
			 NVML_ERROR_NOT_FOUND);
	assert_int_equal(CALL(fn_uuid, "nvmlDeviceGetHandleByPciBusId_v2", "garbage", &d),
			 NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(CALL(nvml_fn_pci, "nvmlDeviceGetPciInfo_v3", dev(1), raw),
			 NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(SHUTDOWN(), NVML_SUCCESS);

	/* r410 has only the 52-byte calls */
	cur = variants[R410].h;
	assert_int_equal(INIT(), NVML_SUCCESS);
	memset(raw, 0xAA, sizeof(raw));
	assert_int_equal(CALL(nvml_fn_pci, "nvmlDeviceGetPciInfo", dev(0), raw), NVML_SUCCESS);
	assert_int_equal(raw[52], 0xAA);
	memcpy(&p1, raw, sizeof(p1));
	assert_string_equal(p1.busId, "0001:18:00.0");
	assert_int_equal(SHUTDOWN(), NVML_SUCCESS);
}

/* ---- unsupported metrics, invalid arguments ------------------------------ */

static void test_null_metrics(void **state)
{
	unsigned int u, u2;
	unsigned long long ull;
	int a, b;
	char buf[96];
	nvmlUtilization_t util;

	(void)state;
	cur = variants[MODERN].h;
	use_node_text("{\"gpus\": [{\"fan\": null, \"mig\": null, \"ecc\": null, \"serial\": null,"
		      " \"vbios_version\": null, \"power\": null, \"clocks\": {\"video\": null},"
		      " \"pcie\": null, \"energy_mj\": null, \"temperature\": null,"
		      " \"utilization\": {\"memory\": null}, \"compute_capability\": null,"
		      " \"processes\": null, \"throttle_reasons\": null, \"pstate\": null}]}");
	assert_int_equal(INIT(), NVML_SUCCESS);
	nvmlDevice_t d = dev(0);
	assert_int_equal(CALL(nvml_fn_devuint, "nvmlDeviceGetFanSpeed", d, &u), NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(CALL(nvml_fn_devuint2, "nvmlDeviceGetMigMode", d, &u, &u2),
			 NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(CALL(nvml_fn_devint2, "nvmlDeviceGetEccMode", d, &a, &b),
			 NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(CALL(nvml_fn_ecc, "nvmlDeviceGetTotalEccErrors", d, 1, 1, &ull),
			 NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(CALL(nvml_fn_devstr, "nvmlDeviceGetSerial", d, buf, sizeof(buf)),
			 NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(CALL(nvml_fn_devstr, "nvmlDeviceGetVbiosVersion", d, buf, sizeof(buf)),
			 NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(CALL(nvml_fn_devuint, "nvmlDeviceGetPowerUsage", d, &u),
			 NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(CALL(nvml_fn_devuint2, "nvmlDeviceGetPowerManagementLimitConstraints", d, &u,
			      &u2),
			 NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(CALL(nvml_fn_devenum, "nvmlDeviceGetClockInfo", d, NVML_CLOCK_VIDEO, &u),
			 NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(CALL(nvml_fn_devenum, "nvmlDeviceGetClockInfo", d, NVML_CLOCK_GRAPHICS, &u),
			 NVML_SUCCESS);
	assert_int_equal(CALL(nvml_fn_devuint, "nvmlDeviceGetMaxPcieLinkWidth", d, &u),
			 NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(CALL(nvml_fn_devull, "nvmlDeviceGetTotalEnergyConsumption", d, &ull),
			 NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(CALL(nvml_fn_devenum, "nvmlDeviceGetTemperature", d, 0, &u),
			 NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(CALL(nvml_fn_util, "nvmlDeviceGetUtilizationRates", d, &util),
			 NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(CALL(nvml_fn_devint2, "nvmlDeviceGetCudaComputeCapability", d, &a, &b),
			 NVML_ERROR_NOT_SUPPORTED);
	u = 0;
	assert_int_equal(CALL(nvml_fn_procs, "nvmlDeviceGetComputeRunningProcesses_v3", d, &u, NULL),
			 NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(CALL(nvml_fn_devull, "nvmlDeviceGetCurrentClocksEventReasons", d, &ull),
			 NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(CALL(fn_devint, "nvmlDeviceGetPerformanceState", d, &a),
			 NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(SHUTDOWN(), NVML_SUCCESS);
}

/* retired pages and remapped rows: values, null sections, MIG, bad input */
static void test_memory_repairs(void **state)
{
	unsigned int corr = 9, unc = 9, pend = 9, fail = 9;
	int p = 9;

	(void)state;
	cur = variants[MODERN].h;
	use_node_text("{\"gpus\": [{\"remapped_rows\": {\"correctable\": 3, \"uncorrectable\": 7,"
		      " \"pending\": true, \"failure\": true}, \"retired_pages\": null},"
		      " {\"remapped_rows\": null, \"retired_pages\": {\"pending\": true}},"
		      " {\"mig\": {\"current\": true}},"
		      " {}]}");
	assert_int_equal(INIT(), NVML_SUCCESS);
	assert_int_equal(CALL(nvml_fn_remap, "nvmlDeviceGetRemappedRows", dev(0), &corr, &unc, &pend, &fail),
			 NVML_SUCCESS);
	assert_int_equal(corr, 3);
	assert_int_equal(unc, 7);
	assert_int_equal(pend, 1);
	assert_int_equal(fail, 1);
	assert_int_equal(CALL(fn_devint, "nvmlDeviceGetRetiredPagesPendingStatus", dev(0), &p),
			 NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(CALL(nvml_fn_remap, "nvmlDeviceGetRemappedRows", dev(1), &corr, &unc, &pend, &fail),
			 NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(CALL(fn_devint, "nvmlDeviceGetRetiredPagesPendingStatus", dev(1), &p), NVML_SUCCESS);
	assert_int_equal(p, 1);
	/* not while MIG is on, as the NVML header documents */
	assert_int_equal(CALL(nvml_fn_remap, "nvmlDeviceGetRemappedRows", dev(2), &corr, &unc, &pend, &fail),
			 NVML_ERROR_NOT_SUPPORTED);
	/* defaults: supported, nothing to repair */
	assert_int_equal(CALL(nvml_fn_remap, "nvmlDeviceGetRemappedRows", dev(3), &corr, &unc, &pend, &fail),
			 NVML_SUCCESS);
	assert_int_equal(corr + unc + pend + fail, 0);
	assert_int_equal(CALL(fn_devint, "nvmlDeviceGetRetiredPagesPendingStatus", dev(3), &p), NVML_SUCCESS);
	assert_int_equal(p, 0);
	assert_int_equal(CALL(nvml_fn_remap, "nvmlDeviceGetRemappedRows", dev(3), &corr, NULL, &pend, &fail),
			 NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(SHUTDOWN(), NVML_SUCCESS);

	/* a wrong type names its path */
	expect_init_error("{\"gpus\": [{\"remapped_rows\": {\"pending\": 1}}]}", "gpus[0].remapped_rows");
	expect_init_error("{\"gpus\": [{\"retired_pages\": {\"count\": 1}}]}", "gpus[0].retired_pages");
}

static void test_invalid_args(void **state)
{
	char small[4], buf[96];
	unsigned int u;
	int level;
	nvmlDevice_t d = NULL;
	nvmlDevice_t bogus = (nvmlDevice_t)(uintptr_t)0x1234;

	(void)state;
	cur = variants[MODERN].h;
	use_example("t4-1x.json");
	assert_int_equal(INIT(), NVML_SUCCESS);
	assert_int_equal(CALL(nvml_fn_handle_by_index, "nvmlDeviceGetHandleByIndex_v2", 1, &d),
			 NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(CALL(nvml_fn_handle_by_index, "nvmlDeviceGetHandleByIndex_v2", 0, NULL),
			 NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(CALL(nvml_fn_devuint, "nvmlDeviceGetFanSpeed", bogus, &u),
			 NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(CALL(nvml_fn_devuint, "nvmlDeviceGetFanSpeed", NULL, &u),
			 NVML_ERROR_INVALID_ARGUMENT);
	/* one byte past a real handle is not a handle */
	assert_int_equal(CALL(nvml_fn_devuint, "nvmlDeviceGetPowerUsage",
			      (nvmlDevice_t)((char *)dev(0) + 1), &u),
			 NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(CALL(nvml_fn_devuint, "nvmlDeviceGetPowerUsage", dev(0), NULL),
			 NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(CALL(nvml_fn_devstr, "nvmlDeviceGetName", dev(0), NULL, 96),
			 NVML_ERROR_INVALID_ARGUMENT);
	memset(small, 'x', sizeof(small));
	assert_int_equal(CALL(nvml_fn_devstr, "nvmlDeviceGetName", dev(0), small, sizeof(small)),
			 NVML_ERROR_INSUFFICIENT_SIZE);
	assert_int_equal(CALL(nvml_fn_devstr, "nvmlDeviceGetName", dev(0), buf, 8),
			 NVML_ERROR_INSUFFICIENT_SIZE);
	assert_int_equal(CALL(nvml_fn_devstr, "nvmlDeviceGetName", dev(0), buf, 9), NVML_SUCCESS);
	assert_string_equal(buf, "Tesla T4");
	assert_int_equal(CALL(nvml_fn_sysstr, "nvmlSystemGetDriverVersion", small, sizeof(small)),
			 NVML_ERROR_INSUFFICIENT_SIZE);
	assert_int_equal(CALL(nvml_fn_devenum, "nvmlDeviceGetTemperature", dev(0), 1, &u),
			 NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(CALL(nvml_fn_devenum, "nvmlDeviceGetClockInfo", dev(0), 4, &u),
			 NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(CALL(nvml_fn_devenum, "nvmlDeviceGetClockInfo", dev(0), -1, &u),
			 NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(CALL(nvml_fn_ecc, "nvmlDeviceGetTotalEccErrors", dev(0), 2, 0, NULL),
			 NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(CALL(fn_uuid, "nvmlDeviceGetHandleByUUID", "GPU-nope", &d),
			 NVML_ERROR_NOT_FOUND);
	assert_int_equal(CALL(fn_uuid, "nvmlDeviceGetHandleByUUID", NULL, &d),
			 NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(CALL(nvml_fn_topo, "nvmlDeviceGetTopologyCommonAncestor", dev(0), bogus,
			      &level),
			 NVML_ERROR_INVALID_ARGUMENT);
	d = dev(0);
	assert_int_equal(SHUTDOWN(), NVML_SUCCESS);
	/* a stale handle after shutdown */
	assert_int_equal(CALL(nvml_fn_devuint, "nvmlDeviceGetPowerUsage", d, &u),
			 NVML_ERROR_UNINITIALIZED);
}

/* ---- faults ------------------------------------------------------------- */

static void test_faults(void **state)
{
	unsigned int u;
	char buf[96];
	nvmlDevice_t d = NULL;

	(void)state;
	cur = variants[MODERN].h;
	use_node_text("{\"faults\": {\"nvmlDeviceGetFanSpeed\": \"NO_PERMISSION\","
		      "             \"nvmlSystemGetDriverVersion\": {\"error\": \"UNKNOWN\", \"after\": 1}},"
		      " \"gpus\": [{\"fan\": 30, \"faults\": {\"nvmlDeviceGetTemperature\":"
		      "             {\"error\": \"GPU_IS_LOST\", \"after\": 2}}},"
		      "            {\"fan\": 40, \"faults\": {\"nvmlDeviceGetFanSpeed\": {\"error\": \"TIMEOUT\", \"after\": 1}}},"
		      "            {\"fan\": 50}]}");
	assert_int_equal(INIT(), NVML_SUCCESS);

	/* node-level on a system call, with "after" */
	assert_int_equal(CALL(nvml_fn_sysstr, "nvmlSystemGetDriverVersion", buf, sizeof(buf)),
			 NVML_SUCCESS);
	assert_int_equal(CALL(nvml_fn_sysstr, "nvmlSystemGetDriverVersion", buf, sizeof(buf)),
			 NVML_ERROR_UNKNOWN);

	/* node-level on device calls: every GPU, unless the GPU says otherwise */
	assert_int_equal(CALL(nvml_fn_devuint, "nvmlDeviceGetFanSpeed", dev(0), &u),
			 NVML_ERROR_NO_PERMISSION);
	assert_int_equal(CALL(nvml_fn_devuint, "nvmlDeviceGetFanSpeed", dev(2), &u),
			 NVML_ERROR_NO_PERMISSION);
	assert_int_equal(CALL(nvml_fn_devuint, "nvmlDeviceGetFanSpeed", dev(1), &u), NVML_SUCCESS);
	assert_int_equal(u, 40);
	assert_int_equal(CALL(nvml_fn_devuint, "nvmlDeviceGetFanSpeed", dev(1), &u),
			 NVML_ERROR_TIMEOUT);

	/* first two calls succeed, then the GPU is lost, for good */
	assert_int_equal(CALL(nvml_fn_devenum, "nvmlDeviceGetTemperature", dev(0), 0, &u),
			 NVML_SUCCESS);
	assert_int_equal(CALL(nvml_fn_devenum, "nvmlDeviceGetTemperature", dev(0), 0, &u),
			 NVML_SUCCESS);
	assert_int_equal(CALL(nvml_fn_devstr, "nvmlDeviceGetName", dev(0), buf, sizeof(buf)),
			 NVML_SUCCESS);
	d = dev(0);
	assert_int_equal(CALL(nvml_fn_devenum, "nvmlDeviceGetTemperature", d, 0, &u),
			 NVML_ERROR_GPU_IS_LOST);
	assert_int_equal(CALL(nvml_fn_devstr, "nvmlDeviceGetName", d, buf, sizeof(buf)),
			 NVML_ERROR_GPU_IS_LOST);
	assert_int_equal(CALL(nvml_fn_devuint, "nvmlDeviceGetPowerUsage", d, &u),
			 NVML_ERROR_GPU_IS_LOST);
	assert_int_equal(CALL(nvml_fn_handle_by_index, "nvmlDeviceGetHandleByIndex_v2", 0, &d),
			 NVML_ERROR_GPU_IS_LOST);
	/* other GPUs are unaffected */
	assert_int_equal(CALL(nvml_fn_devenum, "nvmlDeviceGetTemperature", dev(2), 0, &u),
			 NVML_SUCCESS);
	assert_int_equal(SHUTDOWN(), NVML_SUCCESS);

	/* a fault on nvmlInit_v2 also covers nvmlInit */
	use_node_text("{\"faults\": {\"nvmlInit_v2\": \"DRIVER_NOT_LOADED\"}, \"gpus\": []}");
	assert_int_equal(INIT(), NVML_ERROR_DRIVER_NOT_LOADED);
	assert_int_equal(CALL(nvml_fn_void, "nvmlInit"), NVML_ERROR_DRIVER_NOT_LOADED);
	assert_string_equal(CALL(fn_lasterr, "gpuctlSimLastError"), "");
	assert_int_equal(SHUTDOWN(), NVML_ERROR_UNINITIALIZED);
	use_node_text("{\"faults\": {\"nvmlInit_v2\": \"LIB_RM_VERSION_MISMATCH\"}, \"gpus\": []}");
	cur = variants[LEGACY].h;
	assert_int_equal(CALL(nvml_fn_void, "nvmlInit"), NVML_ERROR_LIB_RM_VERSION_MISMATCH);
}

/* ---- registrations ------------------------------------------------------ */

static bool has_pid(nvmlDevice_t d, unsigned int pid, unsigned long long *mem)
{
	nvmlProcessInfo_v2_t p[16];
	unsigned int n = 16;

	assert_int_equal(CALL(nvml_fn_procs, "nvmlDeviceGetComputeRunningProcesses_v2", d, &n, p),
			 NVML_SUCCESS);
	for (unsigned int i = 0; i < n; i++)
		if (p[i].pid == pid) {
			if (mem)
				*mem = p[i].usedGpuMemory;
			return true;
		}
	return false;
}

static void reg_path(char *buf, size_t len, long pid, unsigned int gpu)
{
	int w = snprintf(buf, len, "%s/%ld-%u.json", rundir, pid, gpu);

	assert_true(w > 0 && (size_t)w < len);
}

static void test_registrations(void **state)
{
	char path[PATH_MAX], text[128];
	nvmlMemory_v2_t m;
	unsigned long long mem = 0, before;
	pid_t dead;
	int status;

	(void)state;
	cur = variants[MODERN].h;
	use_node_text("{\"gpus\": [{\"memory\": {\"total\": 100000000000, \"reserved\": 0}},"
		      "            {\"memory\": {\"total\": 100000000000, \"reserved\": 0}}]}");
	assert_int_equal(INIT(), NVML_SUCCESS);
	memset(&m, 0, sizeof(m));
	m.version = nvmlMemory_v2;
	assert_int_equal(CALL(nvml_fn_mem, "nvmlDeviceGetMemoryInfo_v2", dev(0), &m), NVML_SUCCESS);
	before = m.used;

	/* a live pid (this test) */
	reg_path(path, sizeof(path), (long)getpid(), 0);
	snprintf(text, sizeof(text), "{\"pid\": %ld, \"gpu\": 0, \"used_memory\": 1073741824}",
		 (long)getpid());
	write_file(path, text);
	assert_true(has_pid(dev(0), (unsigned int)getpid(), &mem));
	assert_int_equal(mem, 1073741824ULL);
	assert_false(has_pid(dev(1), (unsigned int)getpid(), NULL));
	assert_int_equal(CALL(nvml_fn_mem, "nvmlDeviceGetMemoryInfo_v2", dev(0), &m), NVML_SUCCESS);
	assert_int_equal(m.used, before + 1073741824ULL);

	/* malformed: ignored, left alone */
	reg_path(path, sizeof(path), (long)getpid(), 1);
	write_file(path, "{\"pid\": \"me\"");
	assert_false(has_pid(dev(1), (unsigned int)getpid(), NULL));
	assert_int_equal(access(path, F_OK), 0);
	/* disagreeing content: ignored */
	write_file(path, "{\"pid\": 1, \"gpu\": 1, \"used_memory\": 5}");
	assert_false(has_pid(dev(1), (unsigned int)getpid(), NULL));
	assert_int_equal(unlink(path), 0);

	/* a dead pid: ignored and its file deleted */
	dead = fork();
	assert_true(dead >= 0);
	if (dead == 0)
		_exit(0);
	assert_int_equal(waitpid(dead, &status, 0), dead);
	reg_path(path, sizeof(path), (long)dead, 1);
	snprintf(text, sizeof(text), "{\"pid\": %ld, \"gpu\": 1, \"used_memory\": 5}", (long)dead);
	write_file(path, text);
	assert_false(has_pid(dev(1), (unsigned int)dead, NULL));
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(errno, ENOENT);

	reg_path(path, sizeof(path), (long)getpid(), 0);
	assert_int_equal(unlink(path), 0);
	assert_false(has_pid(dev(0), (unsigned int)getpid(), NULL));

	/*
	 * The directory is read once and kept while nothing in it changes: every change is
	 * still seen, also long (in file-system clock ticks) after the last scan: a new
	 * file, one rewritten in place, one removed.
	 */
	const struct timespec settle = {.tv_nsec = 60 * 1000000L};
	nanosleep(&settle, NULL);
	assert_false(has_pid(dev(0), (unsigned int)getpid(), NULL)); /* scanned, kept */
	assert_false(has_pid(dev(0), (unsigned int)getpid(), NULL));
	nanosleep(&settle, NULL);
	snprintf(text, sizeof(text), "{\"pid\": %ld, \"gpu\": 0, \"used_memory\": 1024}", (long)getpid());
	write_file(path, text);
	assert_true(has_pid(dev(0), (unsigned int)getpid(), &mem));
	assert_int_equal(mem, 1024ULL);
	nanosleep(&settle, NULL);
	assert_true(has_pid(dev(0), (unsigned int)getpid(), &mem)); /* scanned again, kept */
	snprintf(text, sizeof(text), "{\"pid\": %ld, \"gpu\": 0, \"used_memory\": 2048000}", (long)getpid());
	write_file(path, text); /* in place: the directory does not change */
	assert_true(has_pid(dev(0), (unsigned int)getpid(), &mem));
	assert_int_equal(mem, 2048000ULL);
	nanosleep(&settle, NULL);
	assert_true(has_pid(dev(0), (unsigned int)getpid(), NULL));
	assert_int_equal(unlink(path), 0);
	assert_false(has_pid(dev(0), (unsigned int)getpid(), NULL));
	assert_int_equal(SHUTDOWN(), NVML_SUCCESS);
}

/* ---- gpuctl-sim-hold ---------------------------------------------------- */

/* Run the hold tool; returns its exit status and its stderr in err. */
static int run_hold(char *const argv[], char *err, size_t errlen)
{
	int fds[2], status;
	ssize_t n;
	size_t off = 0;
	pid_t pid;

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fds[1], 2);
		close(fds[0]);
		execv(argv[0], argv);
		_exit(99);
	}
	close(fds[1]);
	while (off + 1 < errlen && (n = read(fds[0], err + off, errlen - 1 - off)) > 0)
		off += (size_t)n;
	err[off] = '\0';
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void test_simhold(void **state)
{
	const char *hold = env_or("GPUCTL_TEST_SIM_HOLD", "build/sim/gpuctl-sim-hold");
	char err[512], path[PATH_MAX];
	unsigned long long mem = 0;
	pid_t pid;
	int status;

	(void)state;
	{
		char *argv[] = { (char *)hold, "--gpu", "0", "--mem", "12X", "--", "true", NULL };

		assert_int_equal(run_hold(argv, err, sizeof(err)), 2);
		assert_string_equal(err, "gpuctl-sim-hold: invalid --mem '12X' (expected a size such "
					 "as 512MiB or 20G)\n");
	}
	{
		char *argv[] = { (char *)hold, "--rundir", rundir, "--gpu", "0", "--mem", "1G", "--",
				 "/nonexistent/cmd", NULL };

		assert_int_equal(run_hold(argv, err, sizeof(err)), 127);
		assert_non_null(strstr(err, "/nonexistent/cmd"));
	}

	cur = variants[MODERN].h;
	use_example("l4-2x.json");
	assert_int_equal(INIT(), NVML_SUCCESS);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* GPUCTL_SIM_RUNDIR is inherited: no --rundir needed */
		execl(hold, hold, "--gpu", "0", "--mem", "512MiB", "--", "sleep", "30", (char *)NULL);
		_exit(99);
	}
	reg_path(path, sizeof(path), (long)pid, 0);
	for (int i = 0; i < 500 && access(path, F_OK) != 0; i++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		nanosleep(&ts, NULL);
	}
	assert_int_equal(access(path, F_OK), 0);
	assert_true(has_pid(dev(0), (unsigned int)pid, &mem));
	assert_int_equal(mem, 512ULL << 20);
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_false(has_pid(dev(0), (unsigned int)pid, NULL));
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(SHUTDOWN(), NVML_SUCCESS);
}

/* ---- topology ----------------------------------------------------------- */

static int topo(unsigned int a, unsigned int b)
{
	int level = -1;

	assert_int_equal(CALL(nvml_fn_topo, "nvmlDeviceGetTopologyCommonAncestor", dev(a), dev(b),
			      &level),
			 NVML_SUCCESS);
	return level;
}

static void test_topology(void **state)
{
	(void)state;
	cur = variants[MODERN].h;
	use_node_text(
		"{\"gpus\": ["
		" {\"topology\": {\"numa_node\": 0, \"host_bridge\": 0, \"pcie_root\": 0, \"pcie_switch\": 0}},"
		" {\"topology\": {\"numa_node\": 0, \"host_bridge\": 0, \"pcie_root\": 0, \"pcie_switch\": 0}},"
		" {\"topology\": {\"numa_node\": 0, \"host_bridge\": 0, \"pcie_root\": 0, \"pcie_switch\": 1}},"
		" {\"topology\": {\"numa_node\": 0, \"host_bridge\": 0, \"pcie_root\": 1}},"
		" {\"topology\": {\"numa_node\": 0, \"host_bridge\": 1}},"
		" {\"topology\": {\"numa_node\": 1, \"host_bridge\": 2}},"
		" {}]}");
	assert_int_equal(INIT(), NVML_SUCCESS);
	assert_int_equal(topo(0, 0), NVML_TOPOLOGY_INTERNAL);
	assert_int_equal(topo(0, 1), NVML_TOPOLOGY_SINGLE);
	assert_int_equal(topo(0, 2), NVML_TOPOLOGY_MULTIPLE);
	assert_int_equal(topo(0, 3), NVML_TOPOLOGY_HOSTBRIDGE);
	assert_int_equal(topo(3, 0), NVML_TOPOLOGY_HOSTBRIDGE);
	assert_int_equal(topo(0, 4), NVML_TOPOLOGY_NODE);
	assert_int_equal(topo(0, 5), NVML_TOPOLOGY_SYSTEM);
	assert_int_equal(topo(6, 6), NVML_TOPOLOGY_INTERNAL);
	assert_int_equal(topo(6, 0), NVML_TOPOLOGY_SYSTEM);
	assert_int_equal(SHUTDOWN(), NVML_SUCCESS);

	/* the H100 example: a switch per pair, 4 GPUs per NUMA node */
	use_example("h100-8x-sxm.json");
	assert_int_equal(INIT(), NVML_SUCCESS);
	assert_int_equal(topo(0, 1), NVML_TOPOLOGY_SINGLE);
	assert_int_equal(topo(0, 2), NVML_TOPOLOGY_NODE);
	assert_int_equal(topo(0, 4), NVML_TOPOLOGY_SYSTEM);
	assert_int_equal(topo(6, 7), NVML_TOPOLOGY_SINGLE);
	assert_int_equal(SHUTDOWN(), NVML_SUCCESS);
	/* the A100 example: two switches under one host bridge */
	use_example("a100-4x-pcie.json");
	assert_int_equal(INIT(), NVML_SUCCESS);
	assert_int_equal(topo(0, 1), NVML_TOPOLOGY_SINGLE);
	assert_int_equal(topo(1, 2), NVML_TOPOLOGY_HOSTBRIDGE);
	assert_int_equal(SHUTDOWN(), NVML_SUCCESS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_symbols),
		cmocka_unit_test(test_default_versions),
		cmocka_unit_test(test_init),
		cmocka_unit_test(test_examples),
		cmocka_unit_test(test_node_cache),
		cmocka_unit_test(test_h100_values),
		cmocka_unit_test(test_memory),
		cmocka_unit_test(test_process_records),
		cmocka_unit_test(test_mig_processes),
		cmocka_unit_test(test_mig_devices),
		cmocka_unit_test(test_pci),
		cmocka_unit_test(test_null_metrics),
		cmocka_unit_test(test_memory_repairs),
		cmocka_unit_test(test_invalid_args),
		cmocka_unit_test(test_faults),
		cmocka_unit_test(test_registrations),
		cmocka_unit_test(test_simhold),
		cmocka_unit_test(test_topology),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
