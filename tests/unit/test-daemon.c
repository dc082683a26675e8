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

#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <inttypes.h>
#include <string.h>

#include <limits.h>
#include <unistd.h>

#include "enforce.h"
#include "health.h"
#include "reclaim.h"
#include "metrics.h"
#include "route.h"
#include "sampler.h"
#include "jobs/select.h"
#include "jobs/quarantine.h"
#include "tmpdir.h"

#include <jansson.h>

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

/* a sampler on tests/cli/nodes/NAME, sampling every interval_ms, rendering for keep_ms after a
 * request (0: the default) */
static struct sampler *start_sampler_keep(const char *name, int interval_ms, int keep_ms)
{
	char node[PATH_MAX], err[256];
	const char *src = getenv("GPUCTL_SRCDIR");
	snprintf(node, sizeof node, "%s/tests/cli/nodes/%s", src ? src : ".", name);
	struct sampler_opts o = {.sim = node, .interval_ms = interval_ms, .history_ms = 60000, .hostname = "h",
				 .render_keep_ms = keep_ms};
	struct sampler *s = NULL;
	if (sampler_start(&s, &o, err, sizeof err) != GC_OK)
		fail_msg("sampler_start: %s", err);
	return s;
}

static struct sampler *start_sampler(const char *name, int interval_ms)
{
	return start_sampler_keep(name, interval_ms, 0);
}

/* samples nobody asked for are not rendered; a request then gets the newest one rendered
 * (not the last one that was) */
static void test_sampler_renders_when_asked(void **state)
{
	(void)state;
	struct sampler *s = start_sampler_keep("idle-8x.json", 10, 1);
	struct frame *f = sampler_frame(s);
	assert_non_null(f);
	uint64_t first = f->seq;
	frame_unref(f);
	for (int tries = 0; tries < 3000 && sampler_seq(s) < first + 3; tries++)
		usleep(10000);
	uint64_t newest = sampler_seq(s);
	assert_true(newest >= first + 3);
	f = sampler_frame(s);
	assert_non_null(f);
	assert_true(f->seq >= newest);
	assert_non_null(strstr(f->metrics, "gpuctl_sampler_samples_total"));
	char seq[48];
	snprintf(seq, sizeof seq, "\"seq\":%" PRIu64 ",", f->seq);
	assert_non_null(strstr(f->gpus, seq));
	frame_unref(f);
	sampler_stop(s);
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

/* --quarantine and --quarantine-xids: what they take, and what they refuse in one line */
static void test_health_parse(void **state)
{
	(void)state;
	struct health_opts o = {0};
	char err[256];
	assert_int_equal(health_parse_faults("xid,lost", &o, err, sizeof err), 0);
	assert_int_equal(o.faults, HEALTH_XID | HEALTH_LOST);
	assert_int_equal(health_parse_faults("all", &o, err, sizeof err), 0);
	assert_int_equal(o.faults, HEALTH_ALL);
	assert_int_equal(health_parse_faults("off", &o, err, sizeof err), 0);
	assert_int_equal(o.faults, 0);
	assert_int_equal(health_parse_faults("xid,bogus", &o, err, sizeof err), -1);
	assert_non_null(strstr(err, "invalid --quarantine 'xid,bogus'"));
	assert_int_equal(health_parse_faults("", &o, err, sizeof err), -1);
	assert_int_equal(health_parse_xids("48,79", &o, err, sizeof err), 0);
	assert_int_equal(o.nxids, 2);
	assert_int_equal(o.xids[1], 79);
	assert_int_equal(health_parse_xids("all", &o, err, sizeof err), 0);
	assert_true(o.xid_all);
	static const char *const bad[] = {"", "48,", "-1", "0", "x", "48;79", "1000000", "+5"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		if (health_parse_xids(bad[i], &o, err, sizeof err) != -1)
			fail_msg("--quarantine-xids '%s' was taken", bad[i]);
		assert_non_null(strstr(err, "invalid --quarantine-xids"));
	}
}

/* the default Xids are exactly those data/signatures/xid.json says need a GPU reset ("yes...") */
static void test_health_default_xids_match_catalogue(void **state)
{
	(void)state;
	const char *src = getenv("GPUCTL_SRCDIR");
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/data/signatures/xid.json", src ? src : ".");
	json_t *root = json_load_file(path, 0, NULL);
	assert_non_null(root);
	struct health_opts o = {0};
	char err[256];
	assert_int_equal(health_parse_xids("reset", &o, err, sizeof err), 0);
	size_t yes = 0;
	const char *code;
	json_t *e;
	json_object_foreach(json_object_get(root, "xid"), code, e) {
		bool needs = strncmp(json_string_value(json_object_get(e, "reset")), "yes", 3) == 0;
		bool listed = false;
		for (size_t k = 0; k < o.nxids; k++)
			listed |= o.xids[k] == strtoull(code, NULL, 10);
		if (needs != listed)
			fail_msg("Xid %s: xid.json says reset %s, the default list %s it", code, needs ? "yes" : "no",
				 listed ? "has" : "lacks");
		yes += needs;
	}
	assert_int_equal(yes, o.nxids);
	json_decref(root);
}

/* a sample of tests/cli/nodes/idle-8x.json, its values then set by hand */
static gc_ctx *sim_ctx(void)
{
	char node[PATH_MAX];
	const char *src = getenv("GPUCTL_SRCDIR");
	snprintf(node, sizeof node, "%s/tests/cli/nodes/idle-8x.json", src ? src : ".");
	gc_open_opts oo = {.sim_node = strdup(node)};
	gc_ctx *ctx = NULL;
	if (gc_ctx_open(&ctx, &oo) != GC_OK)
		fail_msg("gc_ctx_open: %s", ctx ? gc_ctx_errmsg(ctx) : "?");
	free((char *)oo.sim_node);
	return ctx;
}

/* ECC, remap and lost quarantine on a new fault, not again after a clear for the same one,
 * again for a new one; a remap quarantine lifts itself; marks show in the sample's marks */
static void test_health_transitions(void **state)
{
	(void)state;
	char dir[64];
	assert_int_equal(tmpdir_make(dir, sizeof dir, "health"), 0);
	setenv("GPUCTL_STATE_DIR", dir, 1);
	char node[PATH_MAX];
	const char *src = getenv("GPUCTL_SRCDIR");
	snprintf(node, sizeof node, "%s/tests/cli/nodes/idle-8x.json", src ? src : ".");
	struct health_opts o = {.faults = HEALTH_ALL, .sim = node};
	char err[256];
	assert_int_equal(health_parse_xids("reset", &o, err, sizeof err), 0);
	struct health *h = NULL;
	assert_int_equal(health_start(&h, &o, err, sizeof err), GC_OK);
	gc_ctx *ctx = sim_ctx();
	gc_snapshot snap = {0};
	assert_int_equal(gc_ctx_sample(ctx, &snap, GC_ALL_VALUES, NULL, false), GC_OK);
	assert_int_equal(snap.ngpus, 8);
	struct quarantine_info marks[8];
	uint64_t xid[8];
	gc_gpu *g = snap.gpus;
	for (int i = 0; i < 8; i++) {
		g[i].st[GC_V_ECC_UNCORR_VOL] = GC_ST_OK;
		g[i].ecc_uncorr_vol = 2; /* old errors: a baseline, not a fault */
		g[i].st[GC_V_REMAPPED_ROWS] = GC_ST_OK;
		g[i].remap_pending = false;
	}
	health_sample(h, &snap, marks, xid);
	for (int i = 0; i < 8; i++)
		assert_string_equal(marks[i].uuid, "");
	/* GPU 1: new uncorrectable errors; GPU 2: rows wait for a reset; GPU 5: lost */
	g[1].ecc_uncorr_vol = 3;
	g[2].remap_pending = true;
	g[5].lost = true;
	health_sample(h, &snap, marks, xid);
	assert_string_equal(marks[1].reason, "ecc");
	assert_non_null(strstr(marks[1].detail, "1 new uncorrectable ECC error"));
	assert_string_equal(marks[2].reason, "remap");
	assert_string_equal(marks[5].reason, "lost");
	assert_string_equal(marks[0].uuid, "");
	assert_int_equal(health_quarantines(h), 3);
	/* cleared by an administrator: the same faults do not mark them again */
	struct lease_dir *d = NULL;
	assert_int_equal(lease_dir_open(&d, dir, false, err, sizeof err), GC_OK);
	static const int cleared[] = {1, 2, 5};
	for (size_t k = 0; k < 3; k++)
		assert_int_equal(quarantine_clear(d, g[cleared[k]].uuid, err, sizeof err), 1);
	health_sample(h, &snap, marks, xid);
	assert_string_equal(marks[1].uuid, "");
	assert_string_equal(marks[2].uuid, "");
	assert_string_equal(marks[5].uuid, "");
	/* a new error does */
	g[1].ecc_uncorr_vol = 5;
	health_sample(h, &snap, marks, xid);
	assert_non_null(strstr(marks[1].detail, "2 new uncorrectable ECC errors"));
	/* GPU 2 is reset: nothing waits; then rows wait again, and once they no longer do the
	 * quarantine lifts itself, while an administrator's mark stays */
	g[2].remap_pending = false;
	health_sample(h, &snap, marks, xid);
	g[2].remap_pending = true;
	health_sample(h, &snap, marks, xid);
	assert_string_equal(marks[2].reason, "remap");
	struct quarantine_info admin = {.gpu = 3};
	snprintf(admin.uuid, sizeof admin.uuid, "%s", g[3].uuid);
	snprintf(admin.reason, sizeof admin.reason, "admin");
	assert_int_equal(quarantine_set(d, &admin, err, sizeof err), GC_OK);
	g[2].remap_pending = false;
	health_sample(h, &snap, marks, xid);
	assert_string_equal(marks[2].uuid, "");
	assert_string_equal(marks[3].reason, "admin");
	/* with the faults off, nothing is marked, and marks are still shown */
	health_stop(h);
	o.faults = 0;
	assert_int_equal(health_start(&h, &o, err, sizeof err), GC_OK);
	g[6].lost = true;
	health_sample(h, &snap, marks, xid);
	assert_string_equal(marks[6].uuid, "");
	assert_string_equal(marks[3].reason, "admin");
	health_stop(h);
	lease_dir_close(d);
	gpu_snapshot_release(&snap);
	gc_ctx_free(ctx);
	unsetenv("GPUCTL_STATE_DIR");
	tmpdir_remove(dir);
}

/* enforcement's rules on a crafted sample: root's process is counted, signalled only with
 * --enforce-root; one gpuctld cannot map to a user is counted as "unknown", never signalled;
 * the holder's own is no violation; each is counted once however many samples show it */
static void test_enforce_rules(void **state)
{
	(void)state;
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		pause();
		_exit(0);
	}
	gc_gpu g;
	memset(&g, 0, sizeof g);
	g.index = 2;
	gc_proc procs[3];
	memset(procs, 0, sizeof procs);
	procs[0] = (gc_proc){.pid = (uint32_t)child, .type = GC_PROC_COMPUTE, .visible = true, .uid = 0};
	snprintf(procs[0].user, sizeof procs[0].user, "root");
	procs[1] = (gc_proc){.pid = 999999, .type = GC_PROC_COMPUTE, .visible = false};
	procs[2] = (gc_proc){.pid = (uint32_t)getpid(), .type = GC_PROC_COMPUTE, .visible = true, .uid = 1000};
	g.procs = procs;
	g.nprocs = 3;
	gc_snapshot snap;
	memset(&snap, 0, sizeof snap);
	snap.gpus = &g;
	snap.ngpus = 1;
	struct lease_info holder = {.uid = 1000};
	snprintf(holder.user, sizeof holder.user, "alice");
	const struct lease_info *h[1] = {&holder};
	struct enforce_opts o = {.mode = ENFORCE_KILL, .grace_ms = 60000};
	struct enforce *e = enforce_new(&o);
	for (int k = 0; k < 3; k++)
		enforce_sample(e, &snap, h, 1000 + k);
	const char *user;
	uint64_t n;
	size_t users = 0;
	for (size_t i = 0; enforce_count(e, i, &user, &n); i++, users++) {
		assert_int_equal(n, 1);
		assert_true(strcmp(user, "root") == 0 || strcmp(user, "unknown") == 0);
	}
	assert_int_equal(users, 2);
	int st;
	assert_int_equal(waitpid(child, &st, WNOHANG), 0); /* root's: not signalled */
	enforce_free(e);
	/* with --enforce-root it is */
	o.root = true;
	e = enforce_new(&o);
	enforce_sample(e, &snap, h, 5000);
	assert_int_equal(waitpid(child, &st, 0), child);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
	enforce_free(e);
	/* off: nothing at all */
	o.mode = ENFORCE_OFF;
	e = enforce_new(&o);
	enforce_sample(e, &snap, h, 6000);
	assert_false(enforce_count(e, 0, &user, &n));
	enforce_free(e);
	char err[128];
	enum enforce_mode m;
	assert_int_equal(enforce_parse_mode("kill", &m, err, sizeof err), 0);
	assert_int_equal(m, ENFORCE_KILL);
	assert_int_equal(enforce_parse_mode("Kill", &m, err, sizeof err), -1);
	assert_non_null(strstr(err, "invalid --enforce 'Kill'"));
}

/* idle reclaim on a crafted sample: notified after --reclaim-after idle; busy again in the grace
 * calls it off; idle again, the checkpoint signal reaches the job a grace after the notice;
 * unknown utilization is never idle; an exempt user is left alone */
static void test_reclaim_rules(void **state)
{
	(void)state;
	pid_t job = fork();
	assert_true(job >= 0);
	if (job == 0) {
		pause();
		_exit(0);
	}
	gc_gpu g;
	memset(&g, 0, sizeof g);
	g.st[GC_V_UTIL_GPU] = g.st[GC_V_UTIL_MEM] = GC_ST_OK;
	gc_snapshot snap;
	memset(&snap, 0, sizeof snap);
	snap.gpus = &g;
	snap.ngpus = 1;
	struct lease_info holder = {.pid = job, .supervisor = 0, .uid = getuid(), .since = 1};
	snprintf(holder.user, sizeof holder.user, "root");
	const struct lease_info *h[1] = {&holder};
	struct reclaim_opts o = {.after_ms = 100, .grace_ms = 100, .signal = SIGUSR1, .util = 5};
	struct reclaim *r = reclaim_new(&o);
	int st;
	reclaim_sample(r, &snap, h, 1000);        /* idle from now */
	reclaim_sample(r, &snap, h, 1150);        /* notified */
	g.util_gpu = 60;
	reclaim_sample(r, &snap, h, 1200);        /* busy: called off */
	g.util_gpu = 3;
	reclaim_sample(r, &snap, h, 1260);        /* idle from now, again */
	reclaim_sample(r, &snap, h, 1300);        /* the old notice would have fired its signal by now */
	assert_int_equal(waitpid(job, &st, WNOHANG), 0);
	g.st[GC_V_UTIL_MEM] = GC_ST_NOT_SUPPORTED; /* unknown: never idle */
	reclaim_sample(r, &snap, h, 1500);
	reclaim_sample(r, &snap, h, 1700);
	assert_int_equal(waitpid(job, &st, WNOHANG), 0);
	g.st[GC_V_UTIL_MEM] = GC_ST_OK;
	reclaim_sample(r, &snap, h, 2000);        /* idle from now */
	reclaim_sample(r, &snap, h, 2150);        /* notified */
	assert_int_equal(waitpid(job, &st, WNOHANG), 0);
	reclaim_sample(r, &snap, h, 2300);        /* the checkpoint signal */
	assert_int_equal(waitpid(job, &st, 0), job);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGUSR1);
	reclaim_free(r);
	/* exempt */
	o.exempt = "alice,root";
	r = reclaim_new(&o);
	for (int64_t t = 0; t < 1000; t += 50)
		reclaim_sample(r, &snap, h, 5000 + t);
	assert_int_equal(reclaim_count(r), 0);
	reclaim_free(r);
	int sig;
	char err[128];
	assert_int_equal(reclaim_parse_signal("SIGUSR2", &sig, err, sizeof err), 0);
	assert_int_equal(sig, SIGUSR2);
	assert_int_equal(reclaim_parse_signal("10", &sig, err, sizeof err), 0);
	assert_int_equal(reclaim_parse_signal("9", &sig, err, sizeof err), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_metrics),
		cmocka_unit_test(test_routes),
		cmocka_unit_test(test_listen),
		cmocka_unit_test(test_sampler_mig),
		cmocka_unit_test(test_sampler_renders_when_asked),
		cmocka_unit_test(test_sampler_lost),
		cmocka_unit_test(test_health_parse),
		cmocka_unit_test(test_health_default_xids_match_catalogue),
		cmocka_unit_test(test_health_transitions),
		cmocka_unit_test(test_enforce_rules),
		cmocka_unit_test(test_reclaim_rules),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
