/*
 * test-daemon.c — daemon/metrics.c and daemon/route.c: what a sample looks
 * like as Prometheus text (dcgm-exporter's names and labels, absent rather
 * than 0, escaped label values, HELP and TYPE once per family, leases,
 * reasons, error counts), which paths, parameters and --listen
 * addresses are accepted, and what the sampler tells the queue of each GPU.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <limits.h>
#include <unistd.h>

#include "metrics.h"
#include "route.h"
#include "sampler.h"
#include "jobs/select.h"

static void fill(gc_gpu *g, unsigned idx)
{
	memset(g, 0, sizeof *g);
	g->index = idx;
	for (int v = 0; v < GC_V__COUNT; v++)
		g->st[v] = GC_ST_OK;
	snprintf(g->uuid, sizeof g->uuid, "GPU-%u", idx);
	snprintf(g->bus_id, sizeof g->bus_id, "00000000:%02X:00.0", 0x18 + idx);
	snprintf(g->name, sizeof g->name, "NVIDIA H100");
	g->util_gpu = 37;
	g->mem_used = 3ull << 30;
	g->mem_free = 5ull << 30;
	g->power_draw = 123456;
	g->energy_mj = 86395066724ull;
	g->temp = 45;
	g->reasons_supported = 0x1ff;
	g->reasons = 0x4; /* sw power cap */
}

static int count(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

static void test_metrics(void **state)
{
	(void)state;
	gc_gpu g[2];
	fill(&g[0], 0);
	fill(&g[1], 1);
	g[1].st[GC_V_UTIL_GPU] = GC_ST_NOT_SUPPORTED;   /* absent, not 0 */
	g[1].st[GC_V_POWER_DRAW] = GC_ST_UNKNOWN_ERROR;
	snprintf(g[1].name, sizeof g[1].name, "odd \"model\" \\ name");
	snprintf(g[0].name, sizeof g[0].name, "cut \xc3");  /* not UTF-8: Prometheus would drop the scrape */
	gc_snapshot snap = {.ngpus = 2, .gpus = g};
	snprintf(snap.driver_version, sizeof snap.driver_version, "550.54.14");
	struct lease_info li = {.pid = 42};
	snprintf(li.user, sizeof li.user, "alice");
	snprintf(li.name, sizeof li.name, "train");
	const struct lease_info *holders[2] = {NULL, &li};
	struct metrics_errors errs;
	memset(&errs, 0, sizeof errs);
	metrics_count_errors(&errs, &snap);
	metrics_count_errors(&errs, &snap);
	struct metrics_input in = {.snap = &snap, .hostname = "node1", .leases = holders, .errors = &errs,
				   .samples = 7, .failures = 1, .last_duration = 0.002};
	size_t len;
	char *t = metrics_render(&in, &len);
	assert_non_null(t);
	assert_int_equal(strlen(t), len);
	assert_non_null(strstr(t, "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-0\",pci_bus_id=\"00000000:18:00.0\","
				  "device=\"nvidia0\",modelName=\"cut ?\",Hostname=\"node1\",hostname=\"node1\","
				  "DCGM_FI_DRIVER_VERSION=\"550.54.14\"} 37\n"));
	assert_null(strstr(t, "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\""));
	assert_null(strstr(t, "DCGM_FI_DEV_POWER_USAGE{gpu=\"1\""));
	assert_non_null(strstr(t, "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\""));
	assert_non_null(strstr(t, "} 123.456\n"));
	assert_non_null(strstr(t, "} 86395066724\n"));          /* energy exactly, not 8.6e10 */
	assert_non_null(strstr(t, "DCGM_FI_DEV_FB_USED{gpu=\"0\""));
	assert_non_null(strstr(t, "} 3072\n"));
	assert_non_null(strstr(t, "modelName=\"odd \\\"model\\\" \\\\ name\""));
	assert_int_equal(count(t, "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"), 1);
	assert_int_equal(count(t, "# HELP DCGM_FI_DEV_GPU_UTIL "), 1);
	assert_non_null(strstr(t, "reason=\"sw_power_cap\"} 1\n"));
	assert_non_null(strstr(t, "reason=\"hw_slowdown\"} 0\n"));
	assert_non_null(strstr(t, "gpuctl_gpu_throttled{gpu=\"0\""));
	assert_non_null(strstr(t, "user=\"alice\",job=\"train\",pid=\"42\"} 1\n"));
	assert_int_equal(count(t, "gpuctl_lease_info{"), 1);
	assert_non_null(strstr(t, "gpuctl_gpus_free{Hostname=\"node1\"} 1\n"));
	assert_non_null(strstr(t, "gpuctl_sampler_samples_total 7\n"));
	assert_non_null(strstr(t, "gpuctl_nvml_errors_total{function=\"nvmlDeviceGetPowerUsage\","
				  "value=\"power.draw_mw\",error=\"Unknown Error\"} 2\n"));
	assert_null(strstr(t, "nvmlDeviceGetUtilizationRates")); /* not supported is not an error */
	free(t);
	in.snake_labels = true;
	t = metrics_render(&in, &len);
	assert_null(strstr(t, "modelName"));
	assert_non_null(strstr(t, "model_name=\"cut ?\""));
	free(t);
	/* free is gpuctl pick's rule: a GPU in MIG mode, or running a compute process, is not */
	in.leases = NULL;
	t = metrics_render(&in, &len);
	assert_non_null(strstr(t, "gpuctl_gpus_free{Hostname=\"node1\"} 2\n"));
	free(t);
	g[1].st[GC_V_MIG_CURRENT] = GC_ST_OK;
	g[1].mig_current = true;
	g[0].procs = &(gc_proc){.pid = 7, .type = GC_PROC_COMPUTE, .visible = true, .uid = 1000};
	g[0].nprocs = 1;
	t = metrics_render(&in, &len);
	assert_non_null(strstr(t, "gpuctl_gpus_free{Hostname=\"node1\"} 0\n"));
	free(t);
	g[0].nprocs = 0;
	g[0].procs = NULL;
	char age[256];
	size_t n = metrics_age(age, sizeof age, 1.5);
	assert_int_equal(n, strlen(age));
	assert_non_null(strstr(age, "gpuctl_sampler_last_sample_age_seconds 1.500\n"));
}

static void test_routes(void **state)
{
	(void)state;
	assert_int_equal(route_path("/"), ROUTE_DASHBOARD);
	assert_int_equal(route_path("/index.html"), ROUTE_DASHBOARD);
	assert_int_equal(route_path("/metrics"), ROUTE_METRICS);
	assert_int_equal(route_path("/api/v1/gpus"), ROUTE_GPUS);
	assert_int_equal(route_path("/api/v1/history"), ROUTE_HISTORY);
	assert_int_equal(route_path("/api/v1/jobs"), ROUTE_JOBS);
	assert_int_equal(route_path("/metrics/"), ROUTE_NONE);
	assert_int_equal(route_path(""), ROUTE_NONE);
	assert_int_equal(route_path(NULL), ROUTE_NONE);
	int64_t s;
	assert_int_equal(route_seconds(NULL, &s), 0);
	assert_int_equal(s, 0);
	assert_int_equal(route_seconds("60", &s), 0);
	assert_int_equal(s, 60);
	assert_int_equal(route_seconds("2592000", &s), 0);
	static const char *const bad[] = {"", "0", "-1", "2592001", "1e3", " 5", "5 ", "abc", "99999999"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(route_seconds(bad[i], &s), -1);
}

static void test_listen(void **state)
{
	(void)state;
	static const struct { const char *spec; int ok; int loop; } rows[] = {
		{"127.0.0.1:9400", 0, 1}, {"127.1.2.3:0", 0, 1}, {":9400", 0, 1}, {"[::1]:9400", 0, 1},
		{"0.0.0.0:9400", 0, 0}, {"[::]:9400", 0, 0}, {"192.0.2.1:80", 0, 0},
		{"127.0.0.1", -1, 0}, {"127.0.0.1:", -1, 0}, {"127.0.0.1:65536", -1, 0}, {"localhost:80", -1, 0},
		{"[::1]", -1, 0}, {"::1:80", -1, 0}, {"[::1]80", -1, 0}, {"1.2.3.4:-1", -1, 0}, {"", -1, 0},
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct sockaddr_storage ss;
		socklen_t len;
		bool loop = false;
		char err[256] = "";
		int rc = route_listen(rows[i].spec, &ss, &len, &loop, err, sizeof err);
		if (rc != rows[i].ok || (rc == 0 && (int)loop != rows[i].loop) || (rc < 0 && !err[0]))
			fail_msg("'%s': rc %d loopback %d err '%s'", rows[i].spec, rc, loop, err);
	}
}

/* a sampler on tests/cli/nodes/NAME, sampling every interval_ms */
static struct sampler *start_sampler(const char *name, int interval_ms)
{
	char node[PATH_MAX], err[256];
	const char *src = getenv("GPUCTL_SRCDIR");
	snprintf(node, sizeof node, "%s/tests/cli/nodes/%s", src ? src : ".", name);
	struct sampler_opts o = {.sim = node, .interval_ms = interval_ms, .history_ms = 60000, .hostname = "h"};
	struct sampler *s = NULL;
	if (sampler_start(&s, &o, err, sizeof err) != GC_OK)
		fail_msg("sampler_start: %s", err);
	return s;
}

/* the queue's view of a GPU in MIG mode: never handed out by index (as gpuctl run) */
static void test_sampler_mig(void **state)
{
	(void)state;
	struct sampler *s = start_sampler("mig.json", 60000);
	gc_snapshot v = {0};
	assert_int_equal(sampler_snapshot(s, &v), GC_OK);
	assert_int_equal(v.ngpus, 2);
	assert_true(select_gpu_mig(&v.gpus[0]));
	assert_false(select_gpu_mig(&v.gpus[1]));
	/* select.c's rules on it, as the queue asks them: GPU 0 could never be handed out */
	struct select_request r = {.n = 1, .max_util = -1};
	assert_int_equal(select_could(&v, 0, &r), SELECT_MIG);
	assert_int_equal(select_could(&v, 1, &r), SELECT_OK);
	gpu_snapshot_release(&v);
	sampler_stop(s);
}

/* a lost GPU is never dispatched to: the queue's copy of the sample carries it, and
 * select_eligible (what dispatch asks) says SELECT_LOST, as gpuctl run would */
static void test_sampler_lost(void **state)
{
	(void)state;
	/* GPU 1 falls off the bus on its third temperature read: a later sample shows it */
	struct sampler *s = start_sampler("lost.json", 20);
	gc_snapshot v = {0};
	for (int tries = 0; tries < 250; tries++) {
		assert_int_equal(sampler_snapshot(s, &v), GC_OK);
		assert_int_equal(v.ngpus, 2);
		if (select_gpu_lost(&v.gpus[1]))
			break;
		usleep(20000);
	}
	struct select_request r = {.n = 1, .max_util = -1, .shared = true};
	enum select_why why[2];
	assert_int_equal(select_eligible(&v, &r, NULL, why), 1);
	assert_int_equal(why[0], SELECT_OK);
	assert_int_equal(why[1], SELECT_LOST);
	gpu_snapshot_release(&v);
	sampler_stop(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_metrics),
		cmocka_unit_test(test_routes),
		cmocka_unit_test(test_listen),
		cmocka_unit_test(test_sampler_mig),
		cmocka_unit_test(test_sampler_lost),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
