/*
 * test-job.c — lib/jobs/job.c and the public snapshot accessors (lib/device/gpu.c) given
 * bad input: a request without its size, for no GPU, with max_util out of
 * range; more GPUs than the node has; NULL snapshots and outputs; GPUs and
 * values out of range; a CUDA_VISIBLE_DEVICES buffer too small; a state
 * directory that cannot be made; a simulated node path longer than
 * PATH_MAX; the checkpoint, spot and explain functions without their
 * directory, watcher, event, input or result, and advise with bad options;
 * the supervisor options out of range. Each is refused with its
 * GC_E* code, and nothing is left leased. And a leased job run by
 * job_run: the environment it gets (ours untouched), its status, a stop,
 * gpuctld's go pipe closed, a checkpoint directory that cannot be made, a
 * command that cannot be run.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "device/gpu.h"
#include "jobs/job.h"
#include "tmpdir.h"

static gc_ctx *ctx;
static gc_snapshot *snap;
static char state[PATH_MAX];

/* a context of node file `rel` (under the source tree): l4-2x, the one every context of this
 * process shares (one simulated node per process, as NVML is), or another to be refused */
static int open_node(const char *rel, gc_ctx **out)
{
	char node[PATH_MAX];
	const char *src = getenv("GPUCTL_SRCDIR");
	snprintf(node, sizeof node, "%s/%s", src ? src : ".", rel);
	gc_open_opts o = {.size = sizeof o, .sim_node = node};
	return gc_ctx_open(out, &o);
}

static int setup(void **st)
{
	(void)st;
	if (open_node("examples/nodes/l4-2x.json", &ctx) != GC_OK || !(snap = gc_snapshot_new()) ||
	    gc_ctx_sample(ctx, snap, GC_ALL_VALUES, NULL, false) != GC_OK || tmpdir_make(state, sizeof state, "job") < 0)
		return -1;
	return 0;
}

static int teardown(void **st)
{
	(void)st;
	gc_snapshot_free(snap);
	gc_ctx_free(ctx);
	return tmpdir_remove(state);
}

static void test_bad_requests(void **st)
{
	(void)st;
	unsigned out[4];
	gc_request r = {.size = sizeof r, .n = 1, .max_util = -1};
	gc_request nosize = {.n = 1, .max_util = -1};
	assert_int_equal(gc_pick(snap, &nosize, state, out), GC_EINVAL);
	gc_request none = {.size = sizeof none, .n = 0, .max_util = -1};
	assert_int_equal(gc_pick(snap, &none, state, out), GC_EINVAL);
	gc_request util = {.size = sizeof util, .n = 1, .max_util = 101};
	assert_int_equal(gc_pick(snap, &util, state, out), GC_EINVAL);
	util.max_util = -2;
	assert_int_equal(gc_pick(snap, &util, state, out), GC_EINVAL);
	assert_int_equal(gc_pick(NULL, &r, state, out), GC_EINVAL);
	assert_int_equal(gc_pick(snap, NULL, state, out), GC_EINVAL);
	assert_int_equal(gc_pick(snap, &r, state, NULL), GC_EINVAL);
	/* more than the node has is "not now", never out of bounds */
	gc_request many = {.size = sizeof many, .n = 3, .max_util = -1, .shared = true};
	assert_int_equal(gc_pick(snap, &many, state, out), GC_ENOTNOW);
	char err[256] = "";
	gc_lease *l = (gc_lease *)1;
	assert_int_equal(gc_lease_take(snap, &many, state, &l, err, sizeof err), GC_ENOTNOW);
	assert_null(l);
	assert_true(err[0] != '\0');
	assert_int_equal(gc_lease_take(snap, &none, state, &l, err, sizeof err), GC_EINVAL);
	assert_null(l);
	assert_int_equal(gc_lease_take(snap, &r, state, NULL, err, sizeof err), GC_EINVAL);
	/* a state directory that cannot be made: an error with a message, nothing leased */
	err[0] = '\0';
	assert_true(gc_lease_take(snap, &r, "/proc/gpuctl-no/state", &l, err, sizeof err) < 0);
	assert_null(l);
	assert_true(err[0] != '\0');
	/* a pick from a state directory nobody made yet: nothing is leased there */
	assert_int_equal(gc_pick(snap, &r, "/nonexistent/gpuctl-job-test", out), GC_OK);
}

static void test_lease_visible_bounds(void **st)
{
	(void)st;
	gc_request r = {.size = sizeof r, .n = 1, .max_util = -1, .shared = true};
	char err[256], small[8], cvd[256];
	gc_lease *l = NULL;
	assert_int_equal(gc_lease_take(snap, &r, state, &l, err, sizeof err), GC_OK);
	assert_int_equal(gc_lease_visible(l, small, sizeof small), GC_EINVAL);
	assert_int_equal(gc_lease_visible(l, cvd, sizeof cvd), GC_OK);
	assert_int_equal(strncmp(cvd, "GPU-", 4), 0);
	assert_int_equal(gc_lease_visible(NULL, cvd, sizeof cvd), GC_EINVAL);
	assert_int_equal(gc_lease_visible(l, NULL, 0), GC_EINVAL);
	assert_int_equal(gc_lease_count(NULL), 0);
	assert_int_equal(gc_lease_gpu(l, 5), 0);
	gc_lease_release(l);
	gc_lease_release(NULL);
}

static void test_accessor_bounds(void **st)
{
	(void)st;
	uint64_t x = 42;
	const char *s = "untouched";
	gc_proc p;
	assert_int_equal(gc_value_status(NULL, 0, GC_V_NAME), GC_EINVAL);
	assert_int_equal(gc_value_status(snap, 2, GC_V_NAME), GC_EINVAL);
	assert_int_equal(gc_value_status(snap, 0, GC_V__COUNT), GC_EINVAL);
	assert_int_equal(gc_value_u64(snap, 0, GC_V_UUID, &x), GC_EINVAL);
	assert_int_equal(gc_value_u64(snap, 0, GC_V_MEM_TOTAL, NULL), GC_EINVAL);
	assert_int_equal(gc_value_u64(snap, 0, 1000, &x), GC_EINVAL);
	assert_int_equal(gc_value_str(snap, 0, GC_V_MEM_TOTAL, &s), GC_EINVAL);
	assert_int_equal(gc_value_str(snap, (size_t)-1, GC_V_NAME, &s), GC_EINVAL);
	assert_int_equal(x, 42);
	assert_string_equal(s, "untouched");
	assert_int_equal(gc_proc_count(snap, 2), 0);
	assert_int_equal(gc_proc_get(snap, 0, gc_proc_count(snap, 0), &p, sizeof p), GC_EINVAL);
	assert_int_equal(gc_proc_get(snap, 0, 0, NULL, sizeof p), GC_EINVAL);
	assert_int_equal(gc_snapshot_count(NULL), 0);
	assert_string_equal(gc_snapshot_driver(NULL), "");
	/* a value that was not sampled says so and leaves *out alone */
	gc_snapshot *few = gc_snapshot_new();
	assert_non_null(few);
	assert_int_equal(gc_ctx_sample(ctx, few, GC_BIT(GC_V_NAME), NULL, false), GC_OK);
	assert_int_equal(gc_value_u64(few, 0, GC_V_MEM_TOTAL, &x), GC_ST_UNSET);
	assert_int_equal(x, 42);
	gc_snapshot_free(few);
	gc_snapshot_free(NULL);
}

static void test_sim_node_too_long(void **st)
{
	(void)st;
	size_t n = 5000;
	char *path = malloc(n + 1);
	assert_non_null(path);
	memset(path, 'a', n);
	path[0] = '/';
	path[n] = '\0';
	gc_ctx *c = NULL;
	gc_open_opts o = {.sim_node = path};
	/* the kernel refuses it (ENAMETOOLONG) before the simulator's own 4096-byte limit is reached */
	assert_int_equal(gc_ctx_open(&c, &o), GC_ESIM);
	assert_non_null(strstr(gc_ctx_errmsg(c), "cannot read simulated node"));
	gc_ctx_free(c);
	free(path);
}

static void test_ckpt_spot_explain_advise_args(void **st)
{
	(void)st;
	char err[256] = "", out[64];
	char *json = (char *)err;
	assert_int_equal(gc_ckpt_commit(NULL, "a", err, sizeof err), GC_EINVAL);
	assert_non_null(strstr(err, "no checkpoint directory"));
	assert_int_equal(gc_ckpt_commit("", "a", err, sizeof err), GC_EINVAL);
	assert_int_equal(gc_ckpt_commit(state, "", err, sizeof err), GC_EINVAL);
	assert_int_equal(gc_ckpt_commit(state, NULL, err, sizeof err), GC_EINVAL);
	assert_int_equal(gc_ckpt_latest(state, NULL, 0, err, sizeof err), GC_EINVAL);
	assert_int_equal(gc_ckpt_latest(NULL, out, sizeof out, NULL, 0), GC_EINVAL);
	size_t removed = 7;
	assert_int_equal(gc_ckpt_prune(state, 0, &removed, err, sizeof err), GC_EINVAL);
	assert_int_equal(removed, 0);
	assert_int_equal(gc_ckpt_list_json(state, NULL, err, sizeof err), GC_EINVAL);
	assert_int_equal(gc_ckpt_list_json("/nonexistent/ckpt", &json, err, sizeof err), GC_EIO);
	assert_non_null(strstr(err, "/nonexistent/ckpt"));

	gc_spot *w = (gc_spot *)err;
	assert_int_equal(gc_spot_start(NULL, GC_CLOUD_AWS, NULL, err, sizeof err), GC_EINVAL);
	assert_int_equal(gc_spot_start(&w, GC_CLOUD_NONE, NULL, err, sizeof err), GC_EINVAL);
	assert_non_null(strstr(err, "GC_CLOUD_AWS"));
	assert_int_equal(gc_spot_start(&w, 42, NULL, err, sizeof err), GC_EINVAL);
	assert_int_equal(gc_spot_start(&w, GC_CLOUD_GCP, "ftp://x", err, sizeof err), GC_EINVAL);
	assert_null(w);
	gc_spot_event ev;
	assert_int_equal(gc_spot_fd(NULL), GC_EINVAL);
	assert_int_equal(gc_spot_next(NULL, &ev, sizeof ev), GC_EINVAL);
	assert_int_equal(gc_spot_ack(NULL, &ev, sizeof ev, err, sizeof err), GC_EINVAL);
	gc_spot_stop(NULL);
	assert_string_equal(gc_cloud_name(GC_CLOUD_AZURE), "azure");
	assert_null(gc_cloud_name(-1));
	assert_null(gc_cloud_name(GC_CLOUD_AZURE + 1));
	int c = gc_spot_detect();
	assert_true(c >= GC_CLOUD_NONE && c <= GC_CLOUD_AZURE);

	assert_int_equal(gc_explain_fd(-1, NULL, &json, err, sizeof err), GC_EINVAL);
	assert_int_equal(gc_explain_text("x", 1, NULL, NULL, err, sizeof err), GC_EINVAL);
	assert_int_equal(gc_explain_text(NULL, 5, NULL, &json, err, sizeof err), GC_EINVAL);
	/* an empty log: nothing found, a valid document */
	assert_int_equal(gc_explain_text(NULL, 0, NULL, &json, err, sizeof err), GC_OK);
	assert_non_null(strstr(json, "\"source\": \"text\""));
	assert_non_null(strstr(json, "\"findings\": []"));
	free(json);

	/* advise: options as the command line has them, each refused with its reason */
	static const struct {
		const char *opts[5], *why;
	} bad[] = {
		{{"model", "x", NULL}, "is not an option"},
		{{"--", NULL}, "is not an option"},
		{{"--model", NULL}, "--model needs a value"},
		{{"--bogus", NULL}, "unknown advise option '--bogus'"},
		{{"--json", NULL}, "unknown advise option '--json'"},
		{{"--params=7B", "--spot=yes", NULL}, "--spot takes no value"},
		{{"--params", "7B", "--tp", "3", NULL}, "a power of two"},
		{{"--task", "lora", NULL}, "give the model"},
		{{"--model", "list", NULL}, "--model list is a listing"},
		{{"--model", "Llama-2-7", NULL}, "did you mean"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		err[0] = '\0';
		json = NULL;
		if (gc_advise_json(bad[i].opts, &json, err, sizeof err) != GC_EINVAL || !strstr(err, bad[i].why) || json)
			fail_msg("advise case %zu: err '%s', want GC_EINVAL and '%s'", i, err, bad[i].why);
	}
	assert_int_equal(gc_advise_json(NULL, &json, err, sizeof err), GC_EINVAL);
	assert_int_equal(gc_advise_json(bad[0].opts, NULL, err, sizeof err), GC_EINVAL);
}

/* the supervisor options: one table, parsed as gpuctl run parses them, refused with the reason */
static void test_job_options(void **st)
{
	(void)st;
	struct job_opts o;
	job_opts_init(&o);
	char err[400] = "";
	assert_string_equal(o.cloud_arg, "auto");
	assert_int_equal(o.sv.restart, SUPERVISE_RESTART_NEVER);
	assert_int_equal(job_queued_option(&o, "--restart=on-preempt", err, sizeof err), GC_OK);
	assert_int_equal(o.sv.restart, SUPERVISE_RESTART_ON_PREEMPT);
	assert_int_equal(job_queued_option(&o, "--backoff=2s:1m", err, sizeof err), GC_OK);
	assert_int_equal(o.sv.backoff_ms, 2000);
	assert_int_equal(o.sv.backoff_max_ms, 60000);
	assert_int_equal(job_queued_option(&o, "--cloud=gcp", err, sizeof err), GC_OK);
	assert_true(o.spot);
	assert_int_equal(job_queued_option(&o, "--ack", err, sizeof err), GC_OK);
	assert_true(o.ack);
	assert_int_equal(job_queued_option(&o, "--hang-timeout=10m", err, sizeof err), GC_OK);
	assert_int_equal(o.sv.hang_timeout_ms, 600000);
	static const struct {
		const char *opt, *why;
	} bad[] = {
		{"--restart=sometimes", "invalid --restart 'sometimes'"},
		{"--backoff=5m:1s", "the maximum must be at least the first wait"},
		{"--backoff=:1s", "expected FIRST[:MAX]"},
		{"--poll=1ms", "invalid --poll"},
		{"--poll=2h", "between 0.01 s and 1 h"},
		{"--max-restarts=-1", "invalid --max-restarts"},
		{"--checkpoint-dir=", "empty --checkpoint-dir"},
		{"--cloud=ibm", "invalid --cloud 'ibm'"},
		{"--retry-on=oom", "invalid --retry-on 'oom' (expected classes separated by commas"},
		{"--retry-on=xid,", "invalid --retry-on 'xid,'"},
		{"--retry-on=", "invalid --retry-on ''"},
		{"--grace", "is not a gpuctl run option a queued job may take"},  /* needs its value */
		{"--spot=yes", "is not a gpuctl run option a queued job may take"}, /* takes none */
		{"--gpus=1", "--spot, --cloud"},                                   /* not a supervisor option */
		{"--status-file=/tmp/x", "is not a gpuctl run option"},            /* never an internal one */
		{"spot", "is not a gpuctl run option"},
		{"", "is not a gpuctl run option"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		err[0] = '\0';
		if (job_queued_option(&o, bad[i].opt, err, sizeof err) != GC_EINVAL || !strstr(err, bad[i].why))
			fail_msg("'%s': err '%s', want GC_EINVAL and '%s'", bad[i].opt, err, bad[i].why);
	}
	assert_int_equal(job_option(&o, 'n', "1", err, sizeof err), GC_ENOTFOUND);
	assert_true(job_is_supervisor_option('S') && job_is_supervisor_option('T'));
	assert_false(job_is_supervisor_option('n') || job_is_supervisor_option(0) || job_is_supervisor_option(-1));
}

/* the GPU request options: one parser for run, pick, launch and submit */
static void test_gpu_options(void **st)
{
	(void)st;
	struct job_gpus g;
	job_gpus_init(&g);
	char err[300] = "";
	assert_int_equal(g.sel.n, 1);
	assert_int_equal(g.sel.max_util, -1);
	assert_int_equal(job_gpu_option(&g, 'n', "3", err, sizeof err), GC_OK);
	assert_int_equal(g.sel.n, 3);
	assert_true(g.n_given && g.choice_given);
	assert_int_equal(job_gpu_option(&g, 'M', "20G", err, sizeof err), GC_OK);
	assert_true(g.sel.min_free_mem == 20ULL << 30);
	assert_int_equal(job_gpu_option(&g, 'U', "30%", err, sizeof err), GC_OK);
	assert_int_equal(g.sel.max_util, 30);
	assert_int_equal(job_gpu_option(&g, 'I', "uuid", err, sizeof err), GC_OK);
	assert_true(g.ids_uuid);
	char model[97];
	memset(model, 'A', 95);
	model[95] = '\0';
	assert_int_equal(job_gpu_option(&g, 'm', model, err, sizeof err), GC_OK);
	model[95] = 'A';
	model[96] = '\0';
	static const struct {
		int c;
		const char *arg, *why;
	} bad[] = {
		{'n', "0", "invalid -n value '0' (expected a positive whole number)"},
		{'n', "5000", "at most 4096 GPUs"},
		{'n', "auto", "invalid -n value 'auto'"},
		{'m', "", "invalid --model ''"},
		{'M', "20", "invalid --min-free-mem '20'"},
		{'U', "101", "invalid --max-util '101'"},
		{'I', "serial", "invalid --ids 'serial' (expected index or uuid)"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		err[0] = '\0';
		if (job_gpu_option(&g, bad[i].c, bad[i].arg, err, sizeof err) != GC_EINVAL || !strstr(err, bad[i].why))
			fail_msg("-%c '%s': err '%s', want GC_EINVAL and '%s'", bad[i].c, bad[i].arg, err, bad[i].why);
	}
	assert_int_equal(job_gpu_option(&g, 'm', model, err, sizeof err), GC_EINVAL); /* 96 bytes */
	assert_non_null(strstr(err, "1 to 95 bytes"));
	assert_int_equal(g.sel.n, 3); /* a refused value changes nothing */
	assert_int_equal(job_gpu_option(&g, 'S', NULL, err, sizeof err), GC_ENOTFOUND);
	g.allow_auto = true;
	assert_int_equal(job_gpu_option(&g, 'n', "auto", err, sizeof err), GC_OK);
	assert_true(g.n_auto);
	assert_int_equal(job_gpu_option(&g, 'n', "zero", err, sizeof err), GC_EINVAL);
	assert_non_null(strstr(err, "or auto"));
}

/* a request met by the library: exact --gpus, a GPU leased by someone else, bad lists */
static void test_job_request(void **st)
{
	(void)st;
	char err[1024] = "", why[1024] = "";
	struct lease_dir *d = NULL;
	assert_int_equal(lease_dir_open(&d, state, true, err, sizeof err), GC_OK);
	struct lease_info me;
	lease_info_self(&me, "first", NULL, "GPUs 0,1");

	struct job_request a;
	job_request_init(&a);
	assert_int_equal(job_gpu_option(&a.jg, 'g', "1,0", err, sizeof err), GC_OK);
	gc_ctx *c1 = NULL;
	assert_int_equal(open_node("examples/nodes/l4-2x.json", &c1), GC_OK);
	assert_int_equal(job_request_prepare(&a, c1, err, sizeof err), GC_OK);
	unsigned chosen[2];
	struct lease *l = NULL;
	assert_int_equal(job_request_try(&a, d, &me, &l, chosen, why, sizeof why), GC_EBUSY);
	assert_non_null(strstr(why, "GPU 1: in use by another user")); /* frank's processes */
	assert_int_equal(job_gpu_option(&a.jg, 's', NULL, err, sizeof err), GC_OK); /* --shared */
	assert_int_equal(job_request_try(&a, d, &me, &l, chosen, why, sizeof why), GC_OK);
	assert_int_equal(a.jg.sel.n, 2);
	assert_int_equal(chosen[0], 0);
	assert_int_equal(chosen[1], 1);
	char cvd[200], desc[64];
	assert_int_equal(job_request_render(&a, chosen, cvd, sizeof cvd), 0);
	assert_string_equal(cvd, "0,1");
	job_request_describe(&a, desc, sizeof desc);
	assert_string_equal(desc, "GPUs 0,1");

	/* inside our own lease (this process holds GPUs 0 and 1), a request is met from it and
	 * leases nothing again: releasing it leaves the lease alone */
	struct job_request b;
	job_request_init(&b);
	assert_int_equal(job_gpu_option(&b.jg, 'g', "1", err, sizeof err), GC_OK);
	assert_int_equal(job_gpu_option(&b.jg, 's', NULL, err, sizeof err), GC_OK);
	gc_ctx *c2 = NULL;
	assert_int_equal(open_node("examples/nodes/l4-2x.json", &c2), GC_OK);
	assert_int_equal(job_request_prepare(&b, c2, err, sizeof err), GC_OK);
	struct lease *l2 = NULL;
	assert_int_equal(job_request_try(&b, d, &me, &l2, chosen, why, sizeof why), GC_OK);
	assert_int_equal(chosen[0], 1);
	assert_int_equal(b.nown, 1); /* with --gpus only its GPUs are looked at */
	lease_release(l2);
	const char *u1 = a.uuids[1];
	assert_int_equal(lease_ours(d, u1, NULL), 1); /* still a's */
	lease_release(l);
	assert_int_equal(lease_ours(d, u1, NULL), 0);
	job_request_release(&b);
	job_request_release(&a);

	/* lists that name no GPU, or -n with --gpus, are refused before anything is leased */
	static const struct {
		int c1;
		const char *a1;
		int c2;
		const char *a2, *why;
	} bad[] = {
		{'g', "7", 0, NULL, "invalid GPU id '7' for --gpus"},
		{'g', "GPU-1", 0, NULL, "invalid GPU id 'GPU-1' for --gpus: no GPU on this machine has that index (0-1), UUID"},
		{'g', "0", 'x', "0", "GPU 0 is both in --gpus and --exclude"},
		{'g', "0", 'n', "1", "give either -n or --gpus"},
		{'n', "3", 0, NULL, "3 GPUs requested but only 2 exist"},
		{'m', "H100", 0, NULL, "no GPU on this machine matches --model 'H100'"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		struct job_request r;
		job_request_init(&r);
		assert_int_equal(job_gpu_option(&r.jg, bad[i].c1, bad[i].a1, err, sizeof err), GC_OK);
		if (bad[i].c2)
			assert_int_equal(job_gpu_option(&r.jg, bad[i].c2, bad[i].a2, err, sizeof err), GC_OK);
		gc_ctx *c = NULL;
		assert_int_equal(open_node("examples/nodes/l4-2x.json", &c), GC_OK);
		err[0] = '\0';
		int rc = job_request_prepare(&r, c, err, sizeof err);
		if (rc != GC_EINVAL || !strstr(err, bad[i].why))
			fail_msg("case %zu: rc %d err '%s', want GC_EINVAL and '%s'", i, rc, err, bad[i].why);
		if (!r.ctx)
			gc_ctx_free(c);
		job_request_release(&r);
	}
	lease_dir_close(d);
}

/* NVML serves one machine per process, and so does the simulator: a second node is refused, not
 * answered with the first's GPUs; once every context is closed another may be opened */
static void test_one_node_per_process(void **st)
{
	(void)st;
	gc_ctx *c = NULL;
	assert_int_equal(open_node("tests/cli/nodes/idle-8x.json", &c), GC_ESIM); /* setup's l4-2x is open */
	assert_non_null(strstr(gc_ctx_errmsg(c), "one simulated node per process"));
	gc_ctx_free(c);
}

/* another process that leases GPU 0 (as job 'holder') and holds it until let_go */
static pid_t hold_gpu0(void)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t holder = fork();
	assert_true(holder >= 0);
	if (holder == 0) {
		char err[512];
		gc_request h = {.size = sizeof h, .n = 1, .max_util = -1, .name = "holder"};
		gc_lease *hl = NULL;
		if (gc_lease_take(snap, &h, state, &hl, err, sizeof err) != GC_OK || gc_lease_gpu(hl, 0) != 0)
			_exit(1);
		(void)!write(p[1], "x", 1);
		pause();
		_exit(0);
	}
	close(p[1]);
	char c;
	assert_int_equal(read(p[0], &c, 1), 1); /* it holds GPU 0 */
	close(p[0]);
	return holder;
}

static void let_go(pid_t holder)
{
	int st;
	kill(holder, SIGKILL);
	waitpid(holder, &st, 0);
}

/* acquire: not now, a timeout, a stop, and the GPU once its holder (another process) is gone */
static void test_acquire(void **st)
{
	(void)st;
	char err[1024] = "", why[2048] = "";
	pid_t holder = hold_gpu0();

	struct lease_dir *d = NULL;
	assert_int_equal(lease_dir_open(&d, state, true, err, sizeof err), GC_OK);
	struct lease_info me;
	lease_info_self(&me, "waiter", NULL, "GPU 0");
	struct job_request r;
	job_request_init(&r);
	assert_int_equal(job_gpu_option(&r.jg, 'g', "0", err, sizeof err), GC_OK);
	gc_ctx *ctx2 = NULL;
	assert_int_equal(open_node("examples/nodes/l4-2x.json", &ctx2), GC_OK);
	assert_int_equal(job_request_prepare(&r, ctx2, err, sizeof err), GC_OK);
	unsigned chosen[2];
	struct lease *l = NULL;
	struct lease_ticket *t = NULL;
	assert_int_equal(job_request_acquire(&r, d, &me, false, -1, NULL, &l, &t, chosen, why, sizeof why), GC_EBUSY);
	assert_non_null(strstr(why, "GPU 0 is leased by"));
	assert_non_null(strstr(why, "job 'holder'"));
	assert_null(l);
	assert_null(t);
	assert_int_equal(job_request_acquire(&r, d, &me, true, 200, NULL, &l, &t, chosen, why, sizeof why), GC_ETIMEDOUT);
	assert_null(t); /* out of line again */
	volatile int stop = 1;
	assert_int_equal(job_request_acquire(&r, d, &me, true, -1, &stop, &l, &t, chosen, why, sizeof why), GC_ECANCELED);
	let_go(holder);
	assert_int_equal(job_request_acquire(&r, d, &me, true, 10000, NULL, &l, &t, chosen, why, sizeof why), GC_OK);
	assert_non_null(l);
	assert_int_equal(chosen[0], 0);
	lease_queue_withdraw(t);
	lease_queue_leave(t);
	lease_release(l);
	job_request_release(&r);
	lease_dir_close(d);
}

/* gc_lease_wait: not now, a timeout, a stop, the GPU once its holder (another process) is gone,
 * and inside this process's own lease the same GPU without a new claim */
static void test_lease_wait(void **st)
{
	(void)st;
	char err[1024] = "";
	pid_t holder = hold_gpu0();

	gc_request r = {.size = sizeof r, .n = 1, .max_util = -1, .name = "waiter"};
	gc_lease *l = (gc_lease *)err;
	assert_int_equal(gc_lease_wait(ctx, &r, state, 0, NULL, &l, err, sizeof err), GC_ENOTNOW);
	assert_null(l);
	assert_non_null(strstr(err, "GPU 0 is leased by"));
	assert_non_null(strstr(err, "job 'holder'"));
	assert_int_equal(gc_lease_wait(ctx, &r, state, 200, NULL, &l, err, sizeof err), GC_ETIMEDOUT);
	volatile int stop = 1;
	assert_int_equal(gc_lease_wait(ctx, &r, state, -1, &stop, &l, err, sizeof err), GC_ECANCELED);
	let_go(holder);
	assert_int_equal(gc_lease_wait(ctx, &r, state, 10000, NULL, &l, err, sizeof err), GC_OK);
	assert_int_equal(gc_lease_count(l), 1);
	assert_int_equal(gc_lease_gpu(l, 0), 0);
	char cvd[128];
	assert_int_equal(gc_lease_visible(l, cvd, sizeof cvd), GC_OK);
	assert_memory_equal(cvd, "GPU-", 4);
	/* inside our own lease: the same GPU again, and releasing that leaves ours alone */
	gc_lease *again = NULL;
	assert_int_equal(gc_lease_wait(ctx, &r, state, 0, NULL, &again, err, sizeof err), GC_OK);
	assert_int_equal(gc_lease_gpu(again, 0), 0);
	gc_lease_release(again);
	unsigned other;
	gc_request r2 = {.size = sizeof r2, .n = 1, .max_util = -1, .shared = true};
	assert_int_equal(gc_pick(snap, &r2, state, &other), GC_OK);
	assert_int_equal(other, 1); /* GPU 0 still leased */
	gc_lease_release(l);
	/* ctx stays the caller's */
	assert_int_equal(gc_ctx_sample(ctx, snap, GC_ALL_VALUES, NULL, false), GC_OK);
	/* bad input */
	assert_int_equal(gc_lease_wait(NULL, &r, state, 0, NULL, &l, err, sizeof err), GC_EINVAL);
	assert_int_equal(gc_lease_wait(ctx, &r, state, 0, NULL, NULL, err, sizeof err), GC_EINVAL);
	assert_int_equal(gc_lease_wait(ctx, &r, state, -2, NULL, &l, err, sizeof err), GC_EINVAL);
	gc_request big = {.size = sizeof big, .n = 3, .max_util = -1};
	assert_int_equal(gc_lease_wait(ctx, &big, state, -1, NULL, &l, err, sizeof err), GC_EINVAL);
	assert_non_null(strstr(err, "3 GPUs requested but only 2 exist"));
}

/* job_env: set, set again in place, get, bad names, full */
static void test_job_env(void **st)
{
	(void)st;
	struct job_env e;
	job_env_init(&e);
	assert_int_equal(job_env_set(&e, "A", "1"), GC_OK);
	assert_int_equal(job_env_set(&e, "B", "two words"), GC_OK);
	assert_int_equal(job_env_set(&e, "A", "3"), GC_OK);
	assert_int_equal(e.n, 2);
	assert_string_equal(e.v[0], "A=3");
	assert_string_equal(job_env_get(&e, "B"), "two words");
	assert_null(job_env_get(&e, "AB"));
	assert_null(e.v[2]);
	assert_int_equal(job_env_set(&e, "", "x"), GC_EINVAL);
	assert_int_equal(job_env_set(&e, "A=B", "x"), GC_EINVAL);
	char name[16];
	int rc = GC_OK;
	for (int i = 0; i < JOB_ENV_MAX + 2 && rc == GC_OK; i++) {
		snprintf(name, sizeof name, "V%d", i);
		rc = job_env_set(&e, name, "v");
	}
	assert_int_equal(rc, GC_ENOMEM);
	assert_int_equal(e.n, JOB_ENV_MAX);
	assert_null(e.v[JOB_ENV_MAX]);
	job_env_free(&e);
	assert_int_equal(e.n, 0);
}

static char run_log_line[1024];

static void keep_log(void *arg, const char *line)
{
	(void)arg;
	snprintf(run_log_line, sizeof run_log_line, "%s", line);
}

/* the file `path` holds, or "" */
static const char *slurp_small(const char *path)
{
	static char buf[512];
	buf[0] = '\0';
	FILE *f = fopen(path, "r");
	if (f) {
		size_t n = fread(buf, 1, sizeof buf - 1, f);
		buf[n] = '\0';
		fclose(f);
	}
	return buf;
}

/* job_run: a leased GPU 0, the command's environment and status; a stop, no go, a bad
 * checkpoint directory and a missing command, none of which runs anything */
static void test_job_run(void **st)
{
	(void)st;
	char err[1024] = "", why[2048] = "", out[PATH_MAX + 8], script[PATH_MAX + 200], file[PATH_MAX + 8];
	struct lease_dir *d = NULL;
	assert_int_equal(lease_dir_open(&d, state, true, err, sizeof err), GC_OK);
	struct lease_info me;
	lease_info_self(&me, "runner", NULL, "GPU 0");
	struct job_request r;
	job_request_init(&r);
	r.ctx_borrowed = true;
	assert_int_equal(job_gpu_option(&r.jg, 'g', "0", err, sizeof err), GC_OK);
	assert_int_equal(job_request_prepare(&r, ctx, err, sizeof err), GC_OK);
	unsigned chosen[2];
	struct lease *l = NULL;
	struct lease_ticket *t = NULL;
	assert_int_equal(job_request_acquire(&r, d, &me, false, -1, NULL, &l, &t, chosen, why, sizeof why), GC_OK);
	assert_int_equal(chosen[0], 0);
	assert_null(t); /* no wait, no line */

	struct job_env env;
	job_env_init(&env);
	assert_int_equal(job_env_gpus(&env, &r, chosen, err, sizeof err), GC_OK);
	assert_string_equal(job_env_get(&env, "GPUCTL_GPUS"), "0");
	assert_string_equal(job_env_get(&env, "CUDA_DEVICE_ORDER"), "PCI_BUS_ID");
	assert_int_equal(job_env_set(&env, "EXTRA", "x y"), GC_OK);
	snprintf(out, sizeof out, "%s/out", state);
	snprintf(script, sizeof script,
		 "printf '%%s|%%s|%%s|%%s|%%s' \"$CUDA_VISIBLE_DEVICES\" \"$GPUCTL_NUM_GPUS\" \"${GPUCTL_TICKET-none}\" "
		 "\"$EXTRA\" \"${GPUCTL_LEASE_START:+set}\" > '%s'; exit 3", out);
	char *cmd[] = {"/bin/sh", "-c", script, NULL};
	struct job_opts jo;
	job_opts_init(&jo);
	jo.sv.argv = cmd;
	setenv("GPUCTL_TICKET", "stale", 1);
	const char *ours = getenv("CUDA_VISIBLE_DEVICES");
	char ours_was[256];
	snprintf(ours_was, sizeof ours_was, "%s", ours ? ours : "(unset)");
	struct job_run run = {.r = &r, .chosen = chosen, .lease = l, .d = d, .ticket = &t, .jo = &jo, .cloud = SPOT_NONE,
			      .env = &env, .go_fd = -1, .log = keep_log};
	struct job_run_result res;
	assert_int_equal(job_run(&run, &res, err, sizeof err), GC_OK);
	assert_true(res.ran);
	assert_false(res.no_go);
	assert_int_equal(res.sv.end, SUPERVISE_END_EXITED);
	assert_int_equal(res.sv.status, 3);
	/* CUDA_VISIBLE_DEVICES by index (--ids index), no stale ticket of ours, the caller's own */
	assert_string_equal(slurp_small(out), "0|1|none|x y|set");
	/* ours is as it was: the job's environment was built for it alone */
	ours = getenv("CUDA_VISIBLE_DEVICES");
	assert_string_equal(ours ? ours : "(unset)", ours_was);
	assert_string_equal(getenv("GPUCTL_TICKET"), "stale");
	unsetenv("GPUCTL_TICKET");
	unlink(out);

	/* stopped before it starts: nothing runs */
	volatile int stop = SIGTERM;
	run.stop = &stop;
	assert_int_equal(job_run(&run, &res, err, sizeof err), GC_ECANCELED);
	assert_false(res.ran);
	assert_false(res.no_go);
	assert_int_equal(access(out, F_OK), -1);
	run.stop = NULL;

	/* gpuctld's go pipe closes first: nothing runs, and the pipe is closed */
	int p[2];
	assert_int_equal(pipe(p), 0);
	close(p[1]);
	run.go_fd = p[0];
	assert_int_equal(job_run(&run, &res, err, sizeof err), GC_ECANCELED);
	assert_true(res.no_go);
	assert_int_equal(run.go_fd, -1);
	assert_int_equal(fcntl(p[0], F_GETFD), -1);
	assert_int_equal(access(out, F_OK), -1);

	/* a checkpoint directory under a file cannot be made */
	snprintf(file, sizeof file, "%s/file", state);
	int fd = open(file, O_WRONLY | O_CREAT, 0644);
	assert_true(fd >= 0);
	close(fd);
	char ckpt[PATH_MAX + 16];
	snprintf(ckpt, sizeof ckpt, "%s/sub", file);
	jo.sv.checkpoint_dir = ckpt;
	assert_int_equal(job_run(&run, &res, err, sizeof err), GC_EIO);
	assert_non_null(strstr(err, "cannot create --checkpoint-dir"));
	assert_int_equal(access(out, F_OK), -1);
	jo.sv.checkpoint_dir = NULL;
	unlink(file);

	/* a command that is not there: 127, said in the log, not "ran" */
	char *missing[] = {"/nonexistent/gpuctl-test-cmd", NULL};
	jo.sv.argv = missing;
	run_log_line[0] = '\0';
	assert_int_equal(job_run(&run, &res, err, sizeof err), GC_OK);
	assert_false(res.ran);
	assert_int_equal(res.sv.end, SUPERVISE_END_EXEC_FAILED);
	assert_int_equal(res.sv.status, 127);
	assert_non_null(strstr(run_log_line, "cannot run '/nonexistent/gpuctl-test-cmd'"));

	job_env_free(&env);
	lease_release(l);
	job_request_release(&r);
	lease_dir_close(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_requests),
		cmocka_unit_test(test_lease_visible_bounds),
		cmocka_unit_test(test_accessor_bounds),
		cmocka_unit_test(test_sim_node_too_long),
		cmocka_unit_test(test_ckpt_spot_explain_advise_args),
		cmocka_unit_test(test_job_options),
		cmocka_unit_test(test_gpu_options),
		cmocka_unit_test(test_job_request),
		cmocka_unit_test(test_one_node_per_process),
		cmocka_unit_test(test_acquire),
		cmocka_unit_test(test_lease_wait),
		cmocka_unit_test(test_job_env),
		cmocka_unit_test(test_job_run),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
