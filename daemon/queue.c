/*
 * queue.c — gpuctld's job queue server (see queue.h).
 *
 * One thread, one poll loop: the listening socket, the clients (one JSON
 * request line, one JSON answer line), a pidfd per running job and the
 * lease directory's inotify descriptor. Anything that can free or take a
 * GPU — a submit, a cancel, a job's end, a lease released by gpuctl run —
 * runs the dispatcher in the same round; there is no timer.
 *
 * A round (settle) records every job that ended and starts what dispatch
 * chose in ONE transaction: one fsync however many jobs it moves. The
 * started jobs are spawned inside it and wait on their go pipe; they
 * go once the commit is on disk, so a crash at any point runs no job twice.
 * Dispatch reads only the head of the queue (in priority, id order) as far
 * as free GPUs remain, so a round costs the same with 10 or 10 000 queued
 * jobs. The counts for /metrics and the jobs for /api/v1/jobs are rendered
 * at most every RENDER_MS.
 *
 * Jobs are started by the job runner, `gpuctl --runner 3`: one gpuctl
 * process this thread spawns and talks to over a socket pair
 * (lib/spawnreq.h). For each job it forks a child that becomes the user
 * and runs the job in-process (runjob_spawned: the GPUs dispatch chose,
 * the job's options and command, as fields, never a command line), so no
 * job pays for an exec of gpuctl. The runner says which pid it forked and, later, how it
 * ended. If the runner dies, its children are adopted like the jobs of an
 * earlier gpuctld, and the next start spawns a new runner.
 */
#include "clock.h"
#include "config.h"
#include "queue.h"
#include "job.h"
#include "dispatch.h"
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "errbuf.h"
#include "gpu.h"
#include "lease.h"
#include "pidlock.h"
#include "proc.h"
#include "select.h"
#include "jobstatus.h"
#include "spawnreq.h"

#define MAX_GPUS 64
#define MAX_CLIENTS 256
#define CLIENTS_PER_USER 32         /* connections one user (not root, not the admin group) may hold */
#define CLIENTS_ADMIN_ONLY 16       /* the last slots: root and the admin group always get in */
#define MAX_REQUEST (1u << 20)      /* a request line, environment included */
#define CLIENT_TIMEOUT_MS 10000
#define MAX_RUNNING 256
#define MAX_AFTER 64                /* jobs one --after may name */
#define LIST_PAGE 16                /* jobs in one answer to list (rows read: at most this many) */
#define LIST_PAGE_BYTES (256u << 10) /* and about this much of their command lines */
#define RENDER_MS 200               /* /metrics and /api/v1/jobs lag the queue by at most this */
#define RUNNER_TIMEOUT_MS 5000      /* the runner answers a request within this, or is replaced */
#define HEAD_FIRST 64               /* queued jobs dispatch reads first; more only while GPUs are left */

struct client {
	int fd;
	uid_t uid;
	gid_t gid;
	char *buf;
	size_t len;
	long long deadline;
	bool too_big;            /* over MAX_REQUEST: the rest is read and dropped, then refused */
	char *out;               /* the answer being written, as the client reads it; NULL: reading */
	size_t outlen, outoff;
};

struct running {
	int64_t id;
	uid_t uid;
	pid_t pid;
	int pidfd;
	bool gpus[MAX_GPUS];
	bool cancelled;
	bool child;              /* the runner's child: its end comes as an EXITED record (else adopted) */
};

/* a job whose process ended, to record in the round's transaction */
struct fin {
	int64_t id;
	uid_t uid;               /* whose status file has its record */
	int code;                /* from the runner's EXITED record; -1: unknown (adopted) */
	bool cancelled;
};

/* a job forked in this round, waiting for the commit to go */
struct go {
	int64_t id;
	pid_t pid;
	int fd;
	int64_t submitted_ms;
};

struct queue {
	struct queue_opts o;
	struct sampler *s;
	struct store *st;
	int lfd, stopfd;
	int dblock, socklock;        /* pidlocks beside the database and the socket; -1: not held */
	struct lease_dir *leases;
	struct client cl[MAX_CLIENTS];
	size_t ncl;
	struct running run[MAX_RUNNING];
	size_t nrun;
	struct fin fin[MAX_RUNNING];
	size_t nfin;
	struct go go[MAX_GPUS];
	size_t ngo;
	bool dirty;                  /* a GPU may have freed or a job arrived: settle this round */
	bool deps_dirty;             /* a job failed or was cancelled: look at the jobs waiting --after */
	/* the states of jobs named by --after, as read in this look at the queue (memo_round): a
	 * head of 200 jobs each --after the same 64 costs 64 reads, not 12 800 */
	struct { int64_t id; uint32_t round; int8_t state; } memo[4096];
	uint32_t memo_round;
	long long render_at;         /* monotonic ms when the metrics are due; 0: up to date */
	long long rendered;          /* monotonic ms of the last render */
	int nullfd;                  /* /dev/null, the jobs' stdin */
	pid_t rpid;                  /* the job runner (gpuctl --runner); 0: none */
	int rfd;                     /* its socket, non-blocking; -1: none */
	char *rbuf;                  /* records read from it and not yet handled */
	size_t rlen, rcap;
	long long prune_at;          /* monotonic ms of the next look for logs to remove; 0: never */
	int64_t pruned_until;        /* logs of jobs that ended up to then are gone */
	pthread_t thread;
	bool started;
	/* for /metrics, read by the HTTP threads */
	pthread_mutex_t mlock;
	char *mtext;                 /* counts, rendered at each dispatch */
	char *jtext;                 /* /api/v1/jobs, rendered at each dispatch */
	int64_t oldest_ms;           /* submission time of the oldest queued job; 0: none */
	uint64_t started_total;
	double wait_total;           /* seconds queued, over every job started */
};

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("gpuctld: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/*
 * field 22 of /proc/PID/stat: when the process started, to tell it from a
 * later one with its pid; 0 when there is none, or only its zombie (a
 * killed runner whose new parent has not reaped it yet is not running)
 */
static uint64_t proc_start(pid_t pid)
{
	char st = 0;
	unsigned long long v = 0;
	return proc_stat(pid, &st, NULL, &v) == 0 && st != 'Z' && st != 'X' ? v : 0;
}

/* the files in --log-dir: a job's output, and how one user's jobs ended (lib/jobstatus.h) */
static void log_path(const struct queue *q, int64_t id, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%lld.log", q->o.log_dir, (long long)id);
}

/* is job id's log there, a file? (the runner's child creates it) */
static bool log_made(const struct queue *q, int64_t id)
{
	char log[4300];
	log_path(q, id, log, sizeof log);
	struct stat st;
	return lstat(log, &st) == 0 && S_ISREG(st.st_mode);
}

static void status_path(const struct queue *q, uid_t uid, char *buf, size_t len)
{
	snprintf(buf, len, "%s/user-%u.status", q->o.log_dir, (unsigned)uid);
}

/* ---- answers ------------------------------------------------------------------ */

/* "0,3" (as the store keeps a job's GPUs) as [0, 3]: numbers in JSON, not a string */
static json_t *gpu_list_json(const char *gpus)
{
	json_t *a = json_array();
	for (const char *p = gpus ? gpus : ""; a && *p;) {
		char *end;
		long v = strtol(p, &end, 10);
		if (end == p)
			break;
		json_array_append_new(a, json_integer(v));
		p = *end == ',' ? end + 1 : end;
	}
	return a;
}

static json_t *job_json(const struct job *j)
{
	json_t *argv = json_loads(j->argv, 0, NULL);
	json_t *o = json_pack("{s:I, s:s, s:I, s:s, s:i, s:i, s:s, s:o, s:s, s:I, s:I, s:I, s:o, s:s, s:i}",
			      "id", (json_int_t)j->id, "user", j->user, "uid", (json_int_t)j->uid, "name", j->name,
			      "priority", j->priority, "gpus_requested", (int)j->ngpus,
			      "state", job_state_name(j->state), "argv", argv ? argv : json_array(), "cwd", j->cwd,
			      "submitted_ms", (json_int_t)j->submitted_ms, "started_ms", (json_int_t)j->started_ms,
			      "ended_ms", (json_int_t)j->ended_ms, "gpus", gpu_list_json(j->gpus), "reason", j->reason,
			      "starts", (int)j->starts);
	if (o && job_state_final(j->state) && j->state != JOB_CANCELLED)
		json_object_set_new(o, "exit_code", json_integer(j->exit_code));
	if (o && j->state == JOB_RUNNING && j->pid > 0)
		json_object_set_new(o, "pid", json_integer(j->pid)); /* its gpuctl run */
	if (o && j->after)
		json_object_set_new(o, "after", json_string(j->after));
	json_t *rq = o ? json_loads(j->request, 0, NULL) : NULL;
	json_t *run = json_object_get(rq, "run");
	if (run) {
		json_object_set(o, "run_options", run);
		json_object_del(rq, "run");
	}
	if (o)
		json_object_set_new(o, "requeue", json_boolean(json_is_true(json_object_get(rq, "requeue"))));
	json_object_del(rq, "requeue");
	if (rq && json_object_size(rq))
		json_object_set_new(o, "filters", rq);
	else
		json_decref(rq);
	return o;
}

static json_t *fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static json_t *fail(const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return json_pack("{s:b, s:s}", "ok", 0, "error", msg);
}

static bool is_admin(const struct queue *q, uid_t uid, gid_t gid)
{
	if (uid == 0)
		return true;
	if (q->o.admin_gid == (gid_t)-1)
		return false;
	if (gid == q->o.admin_gid)
		return true;
	struct passwd pw, *res = NULL;
	char buf[4096];
	if (getpwuid_r(uid, &pw, buf, sizeof buf, &res) != 0 || !res)
		return false;
	gid_t groups[256];
	int n = 256;
	if (getgrouplist(pw.pw_name, pw.pw_gid, groups, &n) < 0)
		return false;
	for (int i = 0; i < n; i++)
		if (groups[i] == q->o.admin_gid)
			return true;
	return false;
}

/* a JSON array of strings, each NUL-free: 0, or -1 */
static int strings(json_t *a, size_t max)
{
	if (!json_is_array(a) || json_array_size(a) > max)
		return -1;
	size_t i;
	json_t *v;
	json_array_foreach(a, i, v) {
		if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
			return -1;
	}
	return 0;
}

/* ---- why a queued job waits ------------------------------------------------------- */

static bool deps_state(struct queue *q, const struct job *j, bool *failed);
static void memo_forget(struct queue *q);

/* the GPUs as the dispatch round sees them: the sampler's last sample, and which are free
 * now (no lease, no job starting) */
struct gpus_now {
	gc_snapshot snap;      /* a copy, this round's own */
	gc_snapshot view;      /* snap, cut to MAX_GPUS GPUs (shares its memory) */
	size_t n;
	bool is_free[MAX_GPUS];
};

/* GPU i's UUID, or NULL when this sample has none (it cannot be leased, so not used) */
static const char *uuid_of(const gc_snapshot *s, size_t i)
{
	const gc_gpu *g = &s->gpus[i];
	return g->st[GC_V_UUID] == GC_ST_OK && g->uuid[0] ? g->uuid : NULL;
}

/* the sampler's last sample into g, no GPU free yet (what submit's check needs) */
static void gpus_sample(struct queue *q, struct gpus_now *g)
{
	memset(g, 0, sizeof *g);
	if (sampler_snapshot(q->s, &g->snap) != GC_OK)
		logf_("out of memory copying the last sample: no GPU is free this round");
	g->n = g->snap.ngpus < MAX_GPUS ? g->snap.ngpus : MAX_GPUS;
	g->view = g->snap;
	g->view.ngpus = g->n;
	g->view.topo = NULL; /* sized for snap.ngpus; dispatch ranks no topology */
}

/* ... and which GPUs are free now: a look at each one's lease */
static void gpus_now(struct queue *q, struct gpus_now *g)
{
	gpus_sample(q, g);
	for (size_t i = 0; i < g->n; i++) {
		const char *uuid = uuid_of(&g->view, i);
		g->is_free[i] = uuid && q->leases && lease_peek(q->leases, uuid, NULL) == 0;
	}
	for (size_t r = 0; r < q->nrun; r++)
		for (size_t i = 0; i < g->n; i++)
			if (q->run[r].gpus[i])
				g->is_free[i] = false; /* between fork and gpuctl run's lease */
}

static void gpus_now_release(struct gpus_now *g)
{
	gpu_snapshot_release(&g->snap);
}

/*
 * Job j's GPU request (its ngpus, --model and --min-free-mem, its user) as
 * select.c takes it: the queue asks select_could and select_eligible, the
 * rules gpuctl run and gpuctl pick decide by. rq is the job's request JSON.
 */
static void job_request(const struct job *j, const json_t *rq, struct select_request *r)
{
	json_int_t minfree = json_integer_value(json_object_get(rq, "min_free_mem"));
	memset(r, 0, sizeof *r);
	r->n = j->ngpus;
	r->model = json_string_value(json_object_get(rq, "model"));
	r->min_free_mem = minfree > 0 ? (uint64_t)minfree : 0;
	r->max_util = -1;
	r->uid = j->uid;
}

/* the GPUs request r may use now, whether or not free: e[now->n] */
static void job_eligible(const struct gpus_now *now, const struct select_request *r, bool *e)
{
	enum select_why why[MAX_GPUS];
	select_eligible(&now->view, r, NULL, why);
	for (size_t g = 0; g < now->n; g++)
		e[g] = why[g] == SELECT_OK && uuid_of(&now->view, g);
}

/* a queued job's reason, as Slurm's squeue REASON column: "pending" (one word) and "pending_reason" */
static void add_pending_reason(struct queue *q, const struct gpus_now *now, const struct job *j, json_t *o)
{
	if (!o || j->state != JOB_QUEUED)
		return;
	char why[300];
	const char *word;
	bool failed;
	if (!deps_state(q, j, &failed)) {
		word = failed ? "DependencyNeverSatisfied" : "Dependency";
		snprintf(why, sizeof why, failed ? "a job it runs --after (%s) did not succeed: it will be cancelled"
						 : "waits for job %s to succeed (--after)", j->after);
	} else {
		json_t *rq = json_loads(j->request, 0, NULL);
		struct select_request r;
		job_request(j, rq, &r);
		bool e[MAX_GPUS];
		size_t ever = 0, fit = 0;
		job_eligible(now, &r, e);
		for (size_t g = 0; g < now->n; g++) {
			ever += select_could(&now->view, g, &r) == SELECT_OK;
			fit += now->is_free[g] && e[g];
		}
		json_decref(rq);
		const char *s = j->ngpus == 1 ? "" : "s";
		if (ever < j->ngpus) {
			word = "NeverFits";
			snprintf(why, sizeof why, "%u GPU%s requested, but only %zu of this machine's %zu GPUs could ever match it",
				 j->ngpus, s, ever, now->n);
		} else if (fit < j->ngpus) {
			word = "Resources";
			snprintf(why, sizeof why, "%u GPU%s requested, %zu free now that it may use (%zu could match)",
				 j->ngpus, s, fit, ever);
		} else {
			word = "Priority";
			snprintf(why, sizeof why, "behind earlier or higher-priority jobs (first come, first served)");
		}
	}
	json_object_set_new(o, "pending", json_string(word));
	json_object_set_new(o, "pending_reason", json_string(why));
}

static json_t *op_submit(struct queue *q, const struct client *c, json_t *req)
{
	json_t *argv = json_object_get(req, "argv"), *env = json_object_get(req, "env");
	const char *cwd = json_string_value(json_object_get(req, "cwd"));
	const char *name = json_string_value(json_object_get(req, "name"));
	const char *after = json_string_value(json_object_get(req, "after"));
	json_int_t n = json_integer_value(json_object_get(req, "gpus"));
	json_int_t prio = json_integer_value(json_object_get(req, "priority"));
	size_t ngpu = sampler_ngpus(q->s);
	if (strings(argv, 4096) < 0 || json_array_size(argv) == 0)
		return fail("argv must be a non-empty list of strings without NUL bytes");
	if (strings(env, 65536) < 0)
		return fail("env must be a list of NAME=value strings");
	if (!cwd || cwd[0] != '/')
		return fail("cwd must be an absolute path");
	if (n < 1 || (size_t)n > ngpu)
		return fail("%lld GPUs requested but this machine has %zu", (long long)n, ngpu);
	if (name && strlen(name) > 63)
		return fail("--name is at most 63 bytes");
	if (prio < -1000 || prio > 1000)
		return fail("--priority must be from -1000 to 1000");
	if (prio > 0 && !is_admin(q, c->uid, c->gid))
		return fail("only root or the admin group may give a priority above 0");
	if (after && (strspn(after, "0123456789,") != strlen(after) || !*after))
		return fail("--after takes job ids separated by commas");
	/* every dispatch round reads each of them: bounded */
	size_t nafter = 0;
	for (const char *p = after; p && *p; p++)
		nafter += *p != ',' && (p == after || p[-1] == ',');
	if (nafter > MAX_AFTER)
		return fail("--after names %zu jobs; at most %d", nafter, MAX_AFTER);
	if (q->o.max_queued > 0) {
		int64_t mine = store_count_queued(q->st, c->uid);
		if (mine < 0)
			return fail("cannot read the queue: %s", store_errmsg(q->st));
		if (mine >= q->o.max_queued && !is_admin(q, c->uid, c->gid))
			return fail("you have %lld jobs queued, the most gpuctld takes from one user (--max-queued %ld); "
				    "wait for some to start, or cancel some", (long long)mine, q->o.max_queued);
	}
	/* each job it waits for must exist and be the submitter's to see (else "no job N", as show says) */
	for (const char *p = after; p && *p;) {
		long long id = strtoll(p, NULL, 10);
		struct job d;
		int r = id > 0 ? store_get(q->st, id, &d) : 0;
		bool visible = r == 1 && (d.uid == c->uid || is_admin(q, c->uid, c->gid));
		if (r == 1)
			job_release(&d);
		if (r < 0)
			return fail("cannot read the queue: %s", store_errmsg(q->st));
		if (!visible)
			return fail("--after %s: no job %lld (gpuctl queue lists yours)", after, id);
		p += strcspn(p, ",");
		if (*p)
			p++;
	}
	json_t *model = json_object_get(req, "model"), *minfree = json_object_get(req, "min_free_mem");
	if (model && (!json_is_string(model) || !*json_string_value(model) || json_string_length(model) > 95))
		return fail("--model must be a GPU name or glob of 1 to 95 bytes");
	if (minfree && (!json_is_integer(minfree) || json_integer_value(minfree) < 0))
		return fail("--min-free-mem must be a size in bytes");
	json_t *requeue = json_object_get(req, "requeue");
	if (requeue && !json_is_boolean(requeue))
		return fail("requeue must be true or false");
	/* gpuctl run's supervisor options, passed on to the job: only these (never --gpus or an internal one) */
	json_t *run = json_object_get(req, "run");
	if (run && strings(run, 16) < 0)
		return fail("run must be a list of at most 16 gpuctl run options");
	/* each checked by the code gpuctl submit and gpuctl run check it with: what gpuctl run
	 * would refuse must not be queued (it would fail at every start) */
	size_t ri;
	json_t *rv;
	json_array_foreach(run, ri, rv) {
		char why[400] = "";
		struct job_opts jo;
		job_opts_init(&jo);
		if (json_string_length(rv) > 4096)
			return fail("a gpuctl run option over 4096 bytes");
		if (job_queued_option(&jo, json_string_value(rv), why, sizeof why) != GC_OK)
			return fail("%s", why);
	}
	/* a request no GPU of this machine can ever meet is refused now, not left waiting forever */
	struct gpus_now now;
	gpus_sample(q, &now);
	struct job asked = {.ngpus = (unsigned)n};
	struct select_request sr;
	job_request(&asked, req, &sr);
	size_t fit = 0, mig = 0;
	json_int_t want = json_integer_value(minfree);
	for (size_t g = 0; g < now.n; g++) {
		enum select_why w = select_could(&now.view, g, &sr);
		fit += w == SELECT_OK;
		mig += w == SELECT_MIG; /* only an administrator changes MIG mode */
	}
	gpus_now_release(&now);
	if (mig && fit < (size_t)n)
		return fail("%lld GPUs requested, but only %zu of this machine's GPUs could ever be handed out: "
			    "%zu %s in MIG mode (CUDA sees only MIG devices there, by MIG UUID)",
			    (long long)n, fit, mig, mig == 1 ? "is" : "are");
	if ((model || want > 0) && fit < (size_t)n)
		return fail("%lld GPUs matching --model/--min-free-mem requested, but only %zu of this machine's "
			    "GPUs could ever match", (long long)n, fit);
	struct passwd pw, *res = NULL;
	char pwbuf[4096];
	if (getpwuid_r(c->uid, &pw, pwbuf, sizeof pwbuf, &res) != 0 || !res)
		return fail("uid %u has no passwd entry: jobs run as a named user", (unsigned)c->uid);
	struct job j;
	memset(&j, 0, sizeof j);
	j.uid = c->uid;
	j.gid = pw.pw_gid;
	snprintf(j.user, sizeof j.user, "%s", pw.pw_name);
	snprintf(j.name, sizeof j.name, "%s", name ? name : "");
	j.priority = (int)prio;
	j.ngpus = (unsigned)n;
	j.argv = json_dumps(argv, JSON_COMPACT);
	j.env = json_dumps(env, JSON_COMPACT);
	j.cwd = (char *)cwd;
	j.after = (char *)after;
	json_t *rq = json_object();
	if (model)
		json_object_set(rq, "model", model);
	if (minfree)
		json_object_set(rq, "min_free_mem", minfree);
	if (json_array_size(run))
		json_object_set(rq, "run", run);
	if (json_is_true(requeue))
		json_object_set_new(rq, "requeue", json_true());
	j.request = json_dumps(rq, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(rq);
	char err[256];
	json_t *ans;
	size_t stored = j.argv && j.env ? strlen(j.argv) + strlen(j.env) : 0;
	if (!j.argv || !j.env)
		ans = fail("out of memory");
	else if (q->o.max_job_bytes > 0 && stored > q->o.max_job_bytes)
		/* what one user may store is bounded: --max-queued jobs of at most this */
		ans = fail("the command line and environment take %zu bytes, more than gpuctld keeps for a job "
			   "(--max-job-bytes %zu)", stored, q->o.max_job_bytes);
	else if (store_submit(q->st, &j, err, sizeof err) < 0)
		ans = fail("%s", err);
	else
		ans = json_pack("{s:b, s:I}", "ok", 1, "id", (json_int_t)j.id);
	free(j.argv);
	free(j.env);
	free(j.request);
	q->dirty = true;
	q->deps_dirty |= after != NULL; /* it may wait for a job that has already failed */
	return ans;
}

/*
 * One page of jobs: those after id "from" (0: from the start), at most LIST_PAGE
 * of them and about LIST_PAGE_BYTES of command lines, then "next" (the id to ask
 * from) when there may be more. No answer is ever so big that writing it holds
 * the queue up or the client refuses it, however many jobs and however long
 * their command lines.
 */
static json_t *op_list(struct queue *q, const struct client *c, json_t *req)
{
	memo_forget(q);
	bool all = json_is_true(json_object_get(req, "all"));
	bool admin = is_admin(q, c->uid, c->gid);
	json_int_t from = json_integer_value(json_object_get(req, "from"));
	struct job *v;
	size_t n;
	if (store_list(q->st, all, !admin, c->uid, from > 0 ? from : 0, LIST_PAGE, LIST_PAGE_BYTES, &v, &n) < 0)
		return fail("cannot read the queue: %s", store_errmsg(q->st));
	json_t *a = json_array();
	struct gpus_now now;
	gpus_now(q, &now);
	size_t bytes = 0, i;
	for (i = 0; i < n; i++) {
		json_t *o = job_json(&v[i]);
		add_pending_reason(q, &now, &v[i], o);
		json_array_append_new(a, o);
		bytes += strlen(v[i].argv);
	}
	gpus_now_release(&now);
	json_t *ans = json_pack("{s:b, s:o}", "ok", 1, "jobs", a);
	/* a full page, by count or by bytes: there may be more */
	if (ans && n && (n == LIST_PAGE || bytes >= LIST_PAGE_BYTES))
		json_object_set_new(ans, "next", json_integer((json_int_t)v[n - 1].id));
	store_list_free(v, n);
	return ans;
}

/* the job, if c may see it; else an answer in *ans */
static int own_job(struct queue *q, const struct client *c, json_t *req, struct job *j, json_t **ans)
{
	json_int_t id = json_integer_value(json_object_get(req, "id"));
	int r = id > 0 ? store_get(q->st, id, j) : 0;
	if (r < 0) {
		*ans = fail("cannot read the queue: %s", store_errmsg(q->st));
		return -1;
	}
	/* another user's job is "no such job": its existence is not theirs to learn */
	if (r == 0 || (j->uid != c->uid && !is_admin(q, c->uid, c->gid))) {
		if (r)
			job_release(j);
		*ans = fail("no job %lld (gpuctl queue lists yours)", (long long)id);
		return -1;
	}
	return 0;
}

static json_t *op_show(struct queue *q, const struct client *c, json_t *req)
{
	struct job j;
	json_t *ans;
	memo_forget(q);
	if (own_job(q, c, req, &j, &ans) < 0)
		return ans;
	char log[4300];
	log_path(q, j.id, log, sizeof log);
	json_t *o = job_json(&j);
	struct gpus_now now;
	gpus_now(q, &now);
	add_pending_reason(q, &now, &j, o);
	gpus_now_release(&now);
	ans = json_pack("{s:b, s:o, s:s}", "ok", 1, "job", o, "log", log);
	job_release(&j);
	return ans;
}

static json_t *op_cancel(struct queue *q, const struct client *c, json_t *req)
{
	struct job j;
	json_t *ans;
	if (own_job(q, c, req, &j, &ans) < 0)
		return ans;
	char why[96];
	snprintf(why, sizeof why, "cancelled by uid %u", (unsigned)c->uid);
	if (j.state == JOB_QUEUED) {
		int r = store_cancel(q->st, j.id, why, clock_real_ms());
		ans = r == 1 ? json_pack("{s:b, s:s}", "ok", 1, "state", "cancelled")
			     : fail("job %lld has just started or ended; look again", (long long)j.id);
	} else if (j.state == JOB_RUNNING) {
		ans = fail("job %lld is not running under this gpuctld", (long long)j.id);
		for (size_t i = 0; i < q->nrun; i++)
			if (q->run[i].id == j.id) {
				/* the supervisor forwards TERM to the job's process group */
				kill(q->run[i].pid, SIGTERM);
				q->run[i].cancelled = true;
				json_decref(ans);
				ans = json_pack("{s:b, s:s}", "ok", 1, "state", "cancelling");
			}
	} else {
		ans = fail("job %lld has already ended (%s)", (long long)j.id, job_state_name(j.state));
	}
	job_release(&j);
	q->dirty = q->deps_dirty = true;
	return ans;
}

static json_t *answer(struct queue *q, const struct client *c, const char *line)
{
	json_error_t e;
	json_t *req = json_loads(line, 0, &e);
	if (!req || !json_is_object(req)) {
		json_decref(req);
		return fail("not a JSON object: %s", e.text);
	}
	const char *op = json_string_value(json_object_get(req, "op"));
	json_t *ans;
	if (!op)
		ans = fail("no op");
	else if (strcmp(op, "submit") == 0)
		ans = op_submit(q, c, req);
	else if (strcmp(op, "list") == 0)
		ans = op_list(q, c, req);
	else if (strcmp(op, "show") == 0)
		ans = op_show(q, c, req);
	else if (strcmp(op, "cancel") == 0)
		ans = op_cancel(q, c, req);
	else
		ans = fail("unknown op '%s' (expected submit, list, show or cancel)", op);
	json_decref(req);
	return ans;
}

/* ---- running jobs ------------------------------------------------------------- */

/* strings of a JSON array, NULL-terminated, plus room for `extra` more; NULL on error */
static char **vec(const char *text, size_t extra, size_t *n)
{
	json_t *a = json_loads(text, 0, NULL);
	size_t k = json_array_size(a);
	char **v = a ? calloc(k + extra + 1, sizeof *v) : NULL;
	for (size_t i = 0; v && i < k; i++)
		v[i] = strdup(json_string_value(json_array_get(a, i)));
	json_decref(a);
	*n = k;
	return v;
}

static void vec_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* what job id left in its status record: 1 with *ran and *code, 0 when nothing was written */
static int read_status(const struct queue *q, uid_t uid, int64_t id, bool *ran, int *code)
{
	char path[4300];
	status_path(q, uid, path, sizeof path);
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	int r = fd >= 0 ? jobstatus_read(fd, id, ran, code) : 0;
	if (fd >= 0)
		close(fd);
	return r > 0;
}

/*
 * A running job whose gpuctl run is gone without leaving a status (it was
 * killed too, or the machine restarted): it may have run part way. Queued
 * again when submitted with --requeue (at most 5 starts in all), else lost.
 */
static void lost(struct queue *q, int64_t id, const char *when)
{
	struct job j;
	bool wants = false, again = false;
	if (store_get(q->st, id, &j) == 1) {
		json_t *rq = json_loads(j.request, 0, NULL);
		wants = json_is_true(json_object_get(rq, "requeue"));
		again = wants && j.starts < 5;
		json_decref(rq);
		job_release(&j);
	}
	char why[160];
	snprintf(why, sizeof why, "lost %s (its gpuctl run was gone without an exit status)%s", when,
		 again ? "; queued again: --requeue" : wants ? " after 5 starts" : "");
	if (again && store_requeue(q->st, id, why) == 1) {
		logf_("job %lld %s", (long long)id, why);
		return;
	}
	store_finish(q->st, id, JOB_LOST, 1, why, clock_real_ms());
	logf_("job %lld %s", (long long)id, why);
	q->deps_dirty = true;
}

/*
 * Inside the round's transaction: a job's supervisor ended with exit code
 * f->code (from waitpid, or -1 unknown).
 */
static void record_end(struct queue *q, struct fin *f)
{
	int64_t id = f->id;
	int code = f->code;
	bool ran = true;
	int scode;
	bool record = read_status(q, f->uid, id, &ran, &scode);
	if (record)
		code = scode;
	else if (code < 0) {
		lost(q, id, "after a gpuctld restart");
		return;
	}
	if (!ran && !f->cancelled && code != 127 && code != 126) {
		/*
		 * Never started: another job took a GPU between our look and its
		 * lease, or gpuctl run refused it (another user's process on it).
		 * Queue it again, but not forever: its log says why.
		 */
		struct job j;
		unsigned starts = store_get(q->st, id, &j) == 1 ? j.starts : 0;
		if (starts)
			job_release(&j);
		if (starts < 5 && store_requeue(q->st, id, "its GPUs were taken before it could lease them") == 1)
			return;
		code = code ? code : 1;
	}
	enum job_state s = f->cancelled ? JOB_CANCELLED : code == 0 ? JOB_DONE : JOB_FAILED;
	char why[96] = "";
	if (f->cancelled)
		snprintf(why, sizeof why, "cancelled while running");
	else if (!record && code == 126 && !log_made(q, id))
		/* the runner's child could not create it (it said why on our stderr) */
		snprintf(why, sizeof why, "its log could not be created (exit status 126; gpuctld's log says why)");
	else if (code)
		snprintf(why, sizeof why, "exit status %d", code);
	if (store_finish(q->st, id, s, code, why, clock_real_ms()) != 1)
		logf_("job %lld ended but could not be recorded: %s", (long long)id, store_errmsg(q->st));
	q->deps_dirty |= s != JOB_DONE; /* the jobs waiting for it to succeed never will */
}

/* ---- the job runner ----------------------------------------------------------- */

/* read what the runner sent into rbuf: 0, or -1 when it is gone */
static int runner_read(struct queue *q)
{
	for (;;) {
		if (q->rcap - q->rlen < 4096) {
			size_t cap = q->rcap ? q->rcap * 2 : 8192;
			char *b = realloc(q->rbuf, cap);
			if (!b)
				return 0; /* read later */
			q->rbuf = b;
			q->rcap = cap;
		}
		ssize_t n = read(q->rfd, q->rbuf + q->rlen, q->rcap - q->rlen);
		if (n > 0) {
			q->rlen += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		return n < 0 && errno == EAGAIN ? 0 : -1;
	}
}

/* take the first record of this kind out of rbuf: 1, or 0 when none is there yet */
static int runner_take(struct queue *q, int kind, struct spawnrec *out)
{
	for (size_t off = 0; off + sizeof *out <= q->rlen; off += sizeof *out) {
		memcpy(out, q->rbuf + off, sizeof *out);
		if (out->kind == kind) {
			memmove(q->rbuf + off, q->rbuf + off + sizeof *out, q->rlen - off - sizeof *out);
			q->rlen -= sizeof *out;
			return 1;
		}
	}
	return 0;
}

/* wait (at most RUNNER_TIMEOUT_MS) for the runner's next record of this kind: 0, or -1 */
static int runner_wait(struct queue *q, int kind, struct spawnrec *out)
{
	long long deadline = clock_mono_ms() + RUNNER_TIMEOUT_MS;
	while (!runner_take(q, kind, out)) {
		long long left = deadline - clock_mono_ms();
		struct pollfd p = {.fd = q->rfd, .events = POLLIN};
		if (left <= 0 || (poll(&p, 1, (int)left) < 0 && errno != EINTR) || runner_read(q) < 0)
			return -1;
	}
	return 0;
}

/*
 * The runner is gone, or no longer to be trusted: kill it (its children run
 * on) and adopt its children, whose ends are then seen through their pidfds.
 */
static void runner_down(struct queue *q, const char *why)
{
	if (q->rfd < 0)
		return;
	close(q->rfd);
	q->rfd = -1;
	kill(q->rpid, SIGKILL);
	int st;
	while (waitpid(q->rpid, &st, 0) < 0 && errno == EINTR)
		;
	q->rpid = 0;
	q->rlen = 0;
	for (size_t i = 0; i < q->nrun; i++)
		q->run[i].child = false;
	if (why)
		logf_("job runner stopped: %s", why);
}

/* start the runner unless it runs: 0, or -1 with why */
static int runner_up(struct queue *q, char *why, size_t len)
{
	if (q->rfd >= 0)
		return 0;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		snprintf(why, len, "cannot make a socket pair for the job runner: %s", strerror(errno));
		return -1;
	}
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, q->nullfd, 0);
	posix_spawn_file_actions_adddup2(&fa, sv[1], 3);
	posix_spawnattr_init(&at);
	sigset_t all, none;
	sigfillset(&all);
	sigemptyset(&none);
	posix_spawnattr_setsigdefault(&at, &all); /* SIGPIPE is ignored here; not in jobs */
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSID);
	char *argv[] = {(char *)"gpuctl", (char *)"--runner", (char *)"3", NULL};
	extern char **environ;
	int e = posix_spawn(&q->rpid, q->o.gpuctl, &fa, &at, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close(sv[1]);
	if (e) {
		close(sv[0]);
		q->rpid = 0;
		snprintf(why, len, "cannot start the job runner '%s --runner': %s", q->o.gpuctl, strerror(e));
		return -1;
	}
	q->rfd = sv[0];
	fcntl(q->rfd, F_SETFL, fcntl(q->rfd, F_GETFL) | O_NONBLOCK);
	q->rlen = 0;
	struct spawnrec hello;
	if (runner_wait(q, SPAWNREC_HELLO, &hello) < 0 || hello.value != (int32_t)SPAWNREQ_MAGIC) {
		runner_down(q, NULL);
		snprintf(why, len, "the job runner '%s --runner' did not answer (is it gpuctld's version, %s?)",
			 q->o.gpuctl, GPUCTL_VERSION);
		return -1;
	}
	return 0;
}

/* send all of buf, the fds with its first byte: 0, or -1 */
static int runner_send(struct queue *q, const char *buf, size_t len, const int *fds)
{
	union {
		char b[CMSG_SPACE(SPAWNREQ_NFDS * sizeof(int))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof u);
	long long deadline = clock_mono_ms() + RUNNER_TIMEOUT_MS;
	size_t off = 0;
	while (off < len) {
		struct iovec iov = {.iov_base = (char *)buf + off, .iov_len = len - off};
		struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
		if (off == 0) {
			m.msg_control = u.b;
			m.msg_controllen = sizeof u.b;
			struct cmsghdr *c = CMSG_FIRSTHDR(&m);
			c->cmsg_level = SOL_SOCKET;
			c->cmsg_type = SCM_RIGHTS;
			c->cmsg_len = CMSG_LEN(SPAWNREQ_NFDS * sizeof(int));
			memcpy(CMSG_DATA(c), fds, SPAWNREQ_NFDS * sizeof(int));
		}
		ssize_t n = sendmsg(q->rfd, &m, MSG_NOSIGNAL);
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		long long left = deadline - clock_mono_ms();
		struct pollfd p = {.fd = q->rfd, .events = POLLOUT};
		if (n == 0 || errno != EAGAIN || left <= 0 || (poll(&p, 1, (int)left) < 0 && errno != EINTR))
			return -1;
	}
	return 0;
}

/*
 * Have the runner fork a child for r with fds (stdin, go pipe):
 * its pid, or -1 with why. A runner that fails is replaced once.
 */
static pid_t runner_spawn(struct queue *q, const struct spawnreq *r, const int *fds, char *why, size_t len)
{
	char *buf;
	size_t n;
	if (spawnreq_encode(r, &buf, &n) < 0) {
		snprintf(why, len, "the job's command line and environment are larger than %u bytes", SPAWNREQ_MAX);
		return -1;
	}
	pid_t pid = -1;
	for (int attempt = 0; attempt < 2 && pid < 0; attempt++) {
		if (runner_up(q, why, len) < 0)
			break;
		struct spawnrec rec;
		if (runner_send(q, buf, n, fds) < 0 || runner_wait(q, SPAWNREC_SPAWNED, &rec) < 0) {
			snprintf(why, len, "the job runner went away");
			runner_down(q, "it did not take a job; starting a new one");
			continue;
		}
		if (rec.pid > 0)
			pid = rec.pid;
		else
			snprintf(why, len, "cannot start a process: %s", strerror(rec.value));
		break;
	}
	free(buf);
	return pid;
}

/* inside the round's transaction: job id could not be started on gpus, and why; -1 */
static int start_failed(struct queue *q, int64_t id, const char *gpus, const char *why)
{
	store_start(q->st, id, 0, 0, gpus, clock_real_ms());
	store_finish(q->st, id, JOB_FAILED, 1, why, clock_real_ms());
	logf_("job %lld failed to start: %s", (long long)id, why);
	q->deps_dirty = true;
	return -1;
}

/*
 * Inside the round's transaction: start job j on GPUs g (gs: the sample they
 * were chosen in). Has the runner fork the job as the user; it leases the
 * GPUs and waits on its go pipe (fd 3) for settle() to write one byte once
 * the round is committed. The GPUs go by index and UUID ("placed"):
 * dispatch chose them from the sampler's view, so the job only leases them
 * and opens no NVML of its own. 0, or -1 (the job failed, or stays queued
 * when its start could not be recorded).
 */
static int launch(struct queue *q, const struct job *j, const bool *g, const gc_snapshot *gs)
{
	size_t ngpu = gs->ngpus;
	char gpus[256], placed[MAX_GPUS * 100], name[80], log[4300], why[256] = "";
	select_index_list(g, ngpu, gpus, sizeof gpus);
	size_t off = 0;
	placed[0] = '\0';
	for (size_t i = 0; i < ngpu && off < sizeof placed; i++)
		if (g[i])
			off += (size_t)snprintf(placed + off, sizeof placed - off, "%s%zu=%s", off ? "," : "", i, uuid_of(gs, i));
	snprintf(name, sizeof name, "job-%lld%s%s", (long long)j->id, j->name[0] ? "-" : "", j->name);
	log_path(q, j->id, log, sizeof log);
	/* everything the runner's child needs, sent in one request */
	gid_t groups[256];
	int ngroups = 256;
	if (getgrouplist(j->user, j->gid, groups, &ngroups) < 0)
		ngroups = 0;
	size_t na, ne;
	char **cmd = vec(j->argv, 0, &na), **env = vec(j->env, 8, &ne);
	json_t *rq = json_loads(j->request, 0, NULL), *run = json_object_get(rq, "run");
	size_t nopts = json_array_size(run);
	const char **opts = calloc(nopts + 1, sizeof *opts);
	char status[4300];
	status_path(q, j->uid, status, sizeof status);
	/* owned by the user, whose gpuctl runs write their records into it; this job's emptied */
	int sfd = open(status, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (sfd < 0 || fchown(sfd, j->uid, j->gid) < 0 || jobstatus_clear(sfd, j->id) < 0)
		logf_("cannot prepare %s for job %lld: %s", status, (long long)j->id, strerror(errno));
	if (sfd >= 0)
		close(sfd);
	int go[2] = {-1, -1};
	if (!cmd || !env || !opts)
		snprintf(why, sizeof why, "out of memory");
	else if (q->nullfd < 0)
		snprintf(why, sizeof why, "cannot open /dev/null");
	else if (pipe2(go, O_CLOEXEC) < 0)
		snprintf(why, sizeof why, "cannot make a pipe: %s", strerror(errno));
	if (why[0]) {
		vec_free(cmd);
		vec_free(env);
		free(opts);
		json_decref(rq);
		return start_failed(q, j->id, gpus, why);
	}
	for (size_t i = 0; i < nopts; i++)
		opts[i] = json_string_value(json_array_get(run, i)); /* rq lives until after the spawn */
	/* the daemon's view of the node wins over what the submitter's environment said */
	char idv[40], simv[4200], *keep[] = {"GPUCTL_SIM_LIBDIR", "GPUCTL_SIM_RUNDIR", "GPUCTL_STATE_DIR", NULL};
	snprintf(idv, sizeof idv, "GPUCTL_JOB_ID=%lld", (long long)j->id);
	size_t m = 0;
	for (size_t i = 0; i < ne; i++) {
		const char *e = env[i];
		bool drop = strncmp(e, "GPUCTL_SIM=", 11) == 0 || strncmp(e, "CUDA_VISIBLE_DEVICES=", 21) == 0;
		for (size_t x = 0; keep[x]; x++)
			drop |= strncmp(e, keep[x], strlen(keep[x])) == 0 && e[strlen(keep[x])] == '=';
		if (drop)
			free(env[i]);
		else
			env[m++] = env[i];
	}
	env[m++] = idv;
	if (q->o.sim) {
		snprintf(simv, sizeof simv, "GPUCTL_SIM=%s", q->o.sim);
		env[m++] = simv;
	}
	for (size_t x = 0; keep[x]; x++) {
		const char *v = getenv(keep[x]);
		if (v && (env[m] = malloc(strlen(keep[x]) + strlen(v) + 2)))
			sprintf(env[m++], "%s=%s", keep[x], v);
	}
	env[m] = NULL;
	/*
	 * Exactly once, whenever gpuctld dies: the job waits on its go pipe
	 * until the round that records this start (with its pid) is committed.
	 * One whose parent died first writes "0 0" (never ran) to the status
	 * file and leaves: its start was not committed, or a restart finds
	 * "never ran" and queues the job again. A job recorded with a pid that
	 * is gone and left no status is lost.
	 */
	struct spawnreq sr = {.uid = j->uid, .gid = j->gid, .ngroups = (size_t)ngroups, .groups = groups,
			      .cwd = j->cwd, .log = log, .placed = placed, .name = name, .status = status,
			      .slot = (uint64_t)j->id, .nopts = nopts, .opts = (char **)opts, .argc = na, .argv = cmd,
			      .envc = m, .env = env};
	int fds[SPAWNREQ_NFDS] = {q->nullfd, go[0]};
	pid_t pid = runner_spawn(q, &sr, fds, why, sizeof why);
	close(go[0]);
	for (size_t i = 0; env[i]; i++)
		if (env[i] != idv && env[i] != simv)
			free(env[i]);
	free(env);
	vec_free(cmd);
	free(opts);
	json_decref(rq);
	if (pid < 0) {
		close(go[1]);
		return start_failed(q, j->id, gpus, why);
	}
	if (store_start(q->st, j->id, pid, proc_start(pid), gpus, clock_real_ms()) != 1) {
		logf_("job %lld could not be marked started: %s", (long long)j->id, store_errmsg(q->st));
		close(go[1]); /* it leaves without running anything; the runner reaps it */
		return -1;
	}
	struct running *r = &q->run[q->nrun++];
	memset(r, 0, sizeof *r);
	r->id = j->id;
	r->uid = j->uid;
	r->pid = pid;
	r->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	r->child = true;
	memcpy(r->gpus, g, ngpu * sizeof *g);
	q->go[q->ngo++] = (struct go){.id = j->id, .pid = pid, .fd = go[1], .submitted_ms = j->submitted_ms};
	return 0;
}

/* run[i] has ended with exit code `code` (-1: unknown): move it to the round's ends */
static void end_run(struct queue *q, size_t i, int code)
{
	struct running *r = &q->run[i];
	q->fin[q->nfin++] = (struct fin){.id = r->id, .uid = r->uid, .code = code, .cancelled = r->cancelled};
	if (r->pidfd >= 0)
		close(r->pidfd);
	q->run[i] = q->run[--q->nrun];
	q->dirty = true;
}

/* an adopted job's pidfd is readable (or it has none): has it ended? */
static void collect_end(struct queue *q, size_t i)
{
	if (!q->run[i].child && kill(q->run[i].pid, 0) < 0)
		end_run(q, i, -1); /* its end is seen, its exit code is not: its status file has it */
}

/* the runner's EXITED records: the jobs they name have ended */
static void runner_exits(struct queue *q)
{
	struct spawnrec rec;
	while (runner_take(q, SPAWNREC_EXITED, &rec))
		for (size_t i = 0; i < q->nrun; i++)
			if (q->run[i].child && q->run[i].pid == rec.pid) {
				int st = rec.value;
				end_run(q, i, WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1);
				break;
			}
	/* no other record is due between requests: drop any, keep a partial one */
	size_t whole = q->rlen - q->rlen % sizeof rec;
	if (whole) {
		memmove(q->rbuf, q->rbuf + whole, q->rlen - whole);
		q->rlen -= whole;
	}
}

/* ---- dispatch ----------------------------------------------------------------- */

/* a job's state, through the memo: 1 found, 0 no such job, -1 error */
static int dep_state(struct queue *q, int64_t id, enum job_state *st)
{
	size_t slot = (size_t)(((uint64_t)id * 0x9E3779B97F4A7C15ull) >> 52); /* 12 bits: 4096 slots */
	if (q->memo[slot].round == q->memo_round && q->memo[slot].id == id) {
		if (q->memo[slot].state < 0)
			return 0;
		*st = (enum job_state)q->memo[slot].state;
		return 1;
	}
	int r = store_state(q->st, id, st);
	if (r >= 0) {
		q->memo[slot].id = id;
		q->memo[slot].round = q->memo_round;
		q->memo[slot].state = r ? (int8_t)*st : -1;
	}
	return r;
}

/* a new look at the queue: what the memo holds may have changed since */
static void memo_forget(struct queue *q)
{
	if (++q->memo_round == 0) {
		memset(q->memo, 0, sizeof q->memo);
		q->memo_round = 1;
	}
}

static void memo_cancelled(struct queue *q, int64_t id)
{
	size_t slot = (size_t)(((uint64_t)id * 0x9E3779B97F4A7C15ull) >> 52);
	if (q->memo[slot].id == id)
		q->memo[slot].round = q->memo_round - 1;
}

static bool deps_state(struct queue *q, const struct job *j, bool *failed)
{
	*failed = false;
	if (!j->after)
		return true;
	bool ready = true;
	for (const char *p = j->after; *p;) {
		long long id = strtoll(p, NULL, 10);
		enum job_state st = JOB_QUEUED;
		int r = dep_state(q, id, &st);
		if (r != 1 || (job_state_final(st) && st != JOB_DONE))
			*failed = true;
		else if (st != JOB_DONE)
			ready = false;
		p += strcspn(p, ",");
		if (*p)
			p++;
	}
	return ready && !*failed;
}

/* the counts for /metrics and the jobs for /api/v1/jobs, from the live jobs */
static void render(struct queue *q)
{
	size_t queued = 0, running = 0;
	int64_t oldest = 0;
	char *buf = NULL;
	size_t len = 0;
	struct job *v;
	size_t n;
	q->rendered = clock_mono_ms();
	q->render_at = 0;
	if (store_brief(q->st, STORE_LIVE, SIZE_MAX, &v, &n) < 0)
		return;
	FILE *f = open_memstream(&buf, &len);
	if (!f) {
		store_list_free(v, n);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if (v[i].state == JOB_QUEUED) {
			queued++;
			if (!oldest || v[i].submitted_ms < oldest)
				oldest = v[i].submitted_ms;
		}
		running += v[i].state == JOB_RUNNING;
	}
	fprintf(f, "# HELP gpuctl_queue_jobs Jobs in gpuctld's queue, by state.\n# TYPE gpuctl_queue_jobs gauge\n"
		   "gpuctl_queue_jobs{state=\"queued\"} %zu\ngpuctl_queue_jobs{state=\"running\"} %zu\n", queued, running);
	fprintf(f, "# HELP gpuctl_queue_running_jobs Running queued jobs, by user.\n"
		   "# TYPE gpuctl_queue_running_jobs gauge\n");
	for (size_t i = 0; i < n; i++) {
		if (v[i].state != JOB_RUNNING)
			continue;
		bool seen = false;
		size_t cnt = 0;
		for (size_t k = 0; k < n; k++) {
			if (v[k].state == JOB_RUNNING && strcmp(v[k].user, v[i].user) == 0) {
				seen |= k < i;
				cnt++;
			}
		}
		if (seen)
			continue;
		/* a label value must be UTF-8 without quotes or backslashes: keep the usual user-name bytes */
		char user[sizeof v[i].user];
		for (size_t c = 0; c < sizeof user; c++) {
			char ch = v[i].user[c];
			user[c] = !ch || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
				  ch == '-' || ch == '_' || ch == '.' ? ch : '_';
			if (!ch)
				break;
		}
		fprintf(f, "gpuctl_queue_running_jobs{user=\"%s\"} %zu\n", user, cnt);
	}
	if (fclose(f) != 0) {
		free(buf);
		store_list_free(v, n);
		return;
	}
	json_t *a = json_array();
	for (size_t i = 0; a && i < n; i++) {
		if (v[i].state != JOB_QUEUED && v[i].state != JOB_RUNNING)
			continue;
		json_array_append_new(a, json_pack("{s:I, s:s, s:s, s:s, s:i, s:s, s:I, s:I}", "id",
						   (json_int_t)v[i].id, "user", v[i].user, "name", v[i].name,
						   "state", job_state_name(v[i].state), "gpus_requested",
						   (int)v[i].ngpus, "gpus", v[i].state == JOB_RUNNING ? v[i].gpus : "",
						   "submitted_ms", (json_int_t)v[i].submitted_ms, "started_ms",
						   (json_int_t)v[i].started_ms));
	}
	json_t *doc = a ? json_pack("{s:s, s:b, s:o}", "schema", "gpuctl.jobs/1", "queue", 1, "jobs", a) : NULL;
	char *jt = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	json_decref(doc);
	pthread_mutex_lock(&q->mlock);
	free(q->mtext);
	q->mtext = buf;
	if (jt) {
		free(q->jtext);
		q->jtext = jt;
	}
	q->oldest_ms = oldest;
	pthread_mutex_unlock(&q->mlock);
	store_list_free(v, n);
}

/* something changed: render soon, but not more often than every RENDER_MS */
static void render_later(struct queue *q)
{
	if (!q->render_at) {
		long long now = clock_mono_ms(), next = q->rendered + RENDER_MS;
		q->render_at = next > now ? next : now;
	}
}

char *queue_jobs_json(struct queue *q, size_t *len)
{
	pthread_mutex_lock(&q->mlock);
	char *out = strdup(q->jtext ? q->jtext : "{\"schema\":\"gpuctl.jobs/1\",\"queue\":true,\"jobs\":[]}");
	pthread_mutex_unlock(&q->mlock);
	if (out)
		*len = strlen(out);
	return out;
}

size_t queue_metrics(struct queue *q, char *buf, size_t len)
{
	pthread_mutex_lock(&q->mlock);
	double oldest = q->oldest_ms ? (clock_real_ms() - q->oldest_ms) / 1000.0 : 0;
	int n = snprintf(buf, len,
			 "%s# HELP gpuctl_queue_oldest_wait_seconds How long the longest-waiting queued job has "
			 "waited (0: none waits).\n# TYPE gpuctl_queue_oldest_wait_seconds gauge\n"
			 "gpuctl_queue_oldest_wait_seconds %.3f\n"
			 "# HELP gpuctl_queue_started_total Queued jobs started since gpuctld started.\n"
			 "# TYPE gpuctl_queue_started_total counter\ngpuctl_queue_started_total %llu\n"
			 "# HELP gpuctl_queue_wait_seconds_total Seconds those jobs waited in the queue, summed "
			 "(divide by gpuctl_queue_started_total for the mean).\n"
			 "# TYPE gpuctl_queue_wait_seconds_total counter\ngpuctl_queue_wait_seconds_total %.3f\n",
			 q->mtext ? q->mtext : "", oldest < 0 ? 0 : oldest, (unsigned long long)q->started_total,
			 q->wait_total);
	pthread_mutex_unlock(&q->mlock);
	return n < 0 ? 0 : (size_t)n < len ? (size_t)n : len - 1;
}

/* jobs waiting --after one that failed, was cancelled or does not exist: cancelled */
static void cancel_orphans(struct queue *q)
{
	struct job *v;
	size_t n;
	memo_forget(q);
	if (store_brief(q->st, STORE_WAITING, SIZE_MAX, &v, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		bool failed;
		if (!deps_state(q, &v[i], &failed) && failed)
			store_cancel(q->st, v[i].id, "a job it runs --after did not succeed", clock_real_ms());
	}
	store_list_free(v, n);
}

/* which queued jobs start now: inside the round's transaction, from the head of the queue */
static void dispatch(struct queue *q)
{
	struct gpus_now now;
	size_t nfree = 0;
	memo_forget(q);
	if (!q->leases) {
		char err[256];
		if (lease_dir_open(&q->leases, NULL, true, err, sizeof err) != GC_OK) {
			q->leases = NULL;
			logf_("cannot open the lease directory: %s", err);
		}
	}
	if (q->deps_dirty) {
		cancel_orphans(q);
		q->deps_dirty = false;
	}
	gpus_now(q, &now);
	const bool *is_free = now.is_free;
	size_t ngpu = now.n;
	for (size_t g = 0; g < ngpu; g++)
		nfree += is_free[g];
	if (!nfree) {
		gpus_now_release(&now);
		return;
	}
	/*
	 * Plan the head of the queue; while GPUs are left over (every job read
	 * could start or can never run), read further. dispatch_plan over a prefix
	 * starts what it would start over the whole queue once none are left.
	 */
	struct job *v = NULL;
	size_t n = 0, k = 0;
	struct dispatch_job *sj = NULL;
	bool *elig = NULL;
	struct dispatch_start out[MAX_GPUS];
	for (size_t limit = HEAD_FIRST;; limit *= 8) {
		store_list_free(v, n);
		free(sj);
		free(elig);
		sj = NULL;
		elig = NULL;
		if (store_brief(q->st, STORE_HEAD, limit, &v, &n) < 0) {
			v = NULL;
			n = 0;
			break;
		}
		sj = calloc(n ? n : 1, sizeof *sj);
		elig = calloc((n ? n : 1) * MAX_GPUS, sizeof *elig);
		if (!sj || !elig)
			break;
		size_t ns = 0, left = 0;
		for (size_t i = 0; i < n; i++) {
			bool failed;
			if (!deps_state(q, &v[i], &failed)) {
				if (failed) {
					store_cancel(q->st, v[i].id, "a job it runs --after did not succeed", clock_real_ms());
					memo_cancelled(q, v[i].id);
				}
				continue;
			}
			/* the GPUs the job may use now, by gpuctl run's rules (select_eligible) */
			bool *e = &elig[ns * MAX_GPUS];
			json_t *rq = json_loads(v[i].request, 0, NULL);
			struct select_request r;
			job_request(&v[i], rq, &r);
			job_eligible(&now, &r, e);
			json_decref(rq);
			sj[ns++] = (struct dispatch_job){.id = v[i].id, .priority = v[i].priority, .ngpus = v[i].ngpus,
						      .eligible = e};
		}
		k = dispatch_plan(sj, ns, is_free, ngpu, out, MAX_GPUS, &left);
		if (left == 0 || n < limit)
			break;
		k = 0;
	}
	for (size_t s = 0; s < k && q->nrun < MAX_RUNNING && q->ngo < MAX_GPUS; s++) {
		bool g[MAX_GPUS] = {false};
		for (unsigned x = 0; x < out[s].n; x++)
			g[out[s].gpus[x]] = true;
		struct job j;
		if (store_get(q->st, out[s].id, &j) == 1) {
			launch(q, &j, g, &now.view);
			job_release(&j);
		}
	}
	free(sj);
	free(elig);
	store_list_free(v, n);
	gpus_now_release(&now);
}

/*
 * One round: record the jobs that ended and start what dispatch chooses, in
 * one transaction; then, once it is on disk, let the started ones go. When
 * the commit fails, nothing of the round happened: the spawned gpuctl runs
 * leave without running anything, and the ends are recorded again at the
 * next wake-up (within a second).
 */
static void settle(struct queue *q)
{
	if (store_begin(q->st) < 0) {
		logf_("cannot begin a transaction: %s; trying again", store_errmsg(q->st));
		return;
	}
	for (size_t i = 0; i < q->nfin; i++)
		record_end(q, &q->fin[i]);
	dispatch(q);
	if (store_commit(q->st) < 0) {
		logf_("cannot commit the queue's changes: %s; trying again", store_errmsg(q->st));
		for (size_t i = 0; i < q->ngo; i++) {
			close(q->go[i].fd); /* it leaves without running anything; the runner reaps it */
			for (size_t r = 0; r < q->nrun; r++)
				if (q->run[r].pid == q->go[i].pid) {
					if (q->run[r].pidfd >= 0)
						close(q->run[r].pidfd);
					q->run[r] = q->run[--q->nrun];
					break;
				}
		}
		q->ngo = 0;
		q->deps_dirty = true;
		return;
	}
	q->nfin = 0;
	long long now = clock_real_ms();
	for (size_t i = 0; i < q->ngo; i++) {
		(void)!write(q->go[i].fd, "x", 1); /* go */
		close(q->go[i].fd);
		pthread_mutex_lock(&q->mlock);
		q->started_total++;
		q->wait_total += (now - q->go[i].submitted_ms) / 1000.0;
		pthread_mutex_unlock(&q->mlock);
	}
	q->ngo = 0;
	q->dirty = false;
	render_later(q);
}

/* ---- log retention ------------------------------------------------------------- */

/*
 * --log-keep: remove the logs of jobs that ended longer ago than that,
 * looking again every half of it (at most every hour). The jobs' records
 * stay; gpuctl logs says the log is gone.
 */
struct prune {
	struct queue *q;
	size_t gone;
};

static void prune_log(void *arg, int64_t id)
{
	struct prune *p = arg;
	char log[4300];
	log_path(p->q, id, log, sizeof log);
	if (unlink(log) == 0)
		p->gone++;
	else if (errno != ENOENT)
		logf_("cannot remove %s: %s", log, strerror(errno));
}

static long long half_or_hour(long long keep)
{
	return keep / 2 < 3600000 ? (keep / 2 > 100 ? keep / 2 : 100) : 3600000;
}

static void prune_logs(struct queue *q)
{
	long long keep = q->o.log_keep_ms, jkeep = q->o.job_keep_ms;
	long long every = keep > 0 && jkeep > 0 ? (half_or_hour(keep) < half_or_hour(jkeep) ? half_or_hour(keep)
											     : half_or_hour(jkeep))
				      : half_or_hour(keep > 0 ? keep : jkeep);
	q->prune_at = clock_mono_ms() + every;
	if (keep > 0) {
		int64_t cut = clock_real_ms() - keep;
		struct prune p = {.q = q};
		if (store_ended(q->st, q->pruned_until, cut, prune_log, &p) < 0) {
			logf_("cannot list the jobs whose logs are due for removal: %s", store_errmsg(q->st));
			return; /* the same window again next time: the removals are repeatable */
		}
		q->pruned_until = cut;
		if (p.gone)
			logf_("removed %zu job log%s older than --log-keep", p.gone, p.gone == 1 ? "" : "s");
	}
	if (jkeep > 0) {
		/* records go, with the logs they still have (a --job-keep shorter than --log-keep) */
		int64_t cut = clock_real_ms() - jkeep;
		struct prune p = {.q = q};
		if (store_ended(q->st, 0, cut, prune_log, &p) < 0)
			return;
		int gone = store_forget(q->st, cut);
		if (gone < 0)
			logf_("cannot forget the jobs that ended before --job-keep: %s", store_errmsg(q->st));
		else if (gone)
			logf_("forgot %d job%s that ended longer ago than --job-keep", gone, gone == 1 ? "" : "s");
	}
}

/* ---- the loop ------------------------------------------------------------------ */

static void drop_client(struct queue *q, size_t i)
{
	close(q->cl[i].fd);
	free(q->cl[i].buf);
	free(q->cl[i].out);
	q->cl[i] = q->cl[--q->ncl];
}

static void accept_client(struct queue *q)
{
	int fd = accept4(q->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	struct ucred cr;
	socklen_t len = sizeof cr;
	if (q->ncl == MAX_CLIENTS || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0) {
		close(fd);
		return;
	}
	/* one user holding connections open (and opening them again when dropped) must not
	 * keep everyone else out: a cap per uid, and the last slots for root and the admins */
	size_t mine = 0;
	for (size_t i = 0; i < q->ncl; i++)
		mine += q->cl[i].uid == cr.uid;
	if ((mine >= CLIENTS_PER_USER || q->ncl >= MAX_CLIENTS - CLIENTS_ADMIN_ONLY) && !is_admin(q, cr.uid, cr.gid)) {
		close(fd);
		return;
	}
	q->cl[q->ncl++] = (struct client){.fd = fd, .uid = cr.uid, .gid = cr.gid,
					  .deadline = clock_mono_ms() + CLIENT_TIMEOUT_MS};
}

/* send what the client's socket takes now of its answer; drop it once all is sent */
static void write_answer(struct queue *q, size_t i)
{
	struct client *c = &q->cl[i];
	while (c->outoff < c->outlen) {
		ssize_t w = send(c->fd, c->out + c->outoff, c->outlen - c->outoff, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && (errno == EAGAIN || errno == EINTR))
			return; /* the rest when it reads */
		if (w <= 0)
			break;
		c->outoff += (size_t)w;
	}
	drop_client(q, i);
}

/* read what the client sent; answer once a whole line is in */
static void serve_client(struct queue *q, size_t i)
{
	struct client *c = &q->cl[i];
	char tmp[65536];
	ssize_t n = read(c->fd, tmp, sizeof tmp);
	if (n <= 0) {
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		drop_client(q, i); /* gone before finishing its request */
		return;
	}
	json_t *ans = NULL;
	if (c->too_big || c->len + (size_t)n > MAX_REQUEST) {
		/*
		 * Answer only once the client has sent it all: closing with its data
		 * unread would reset the connection before it reads why. Nothing is
		 * kept meanwhile, and the request deadline still holds.
		 */
		free(c->buf);
		c->buf = NULL;
		c->len = 0;
		c->too_big = true;
		if (!memchr(tmp, '\n', (size_t)n))
			return;
		ans = fail("request larger than %u bytes (a huge environment?)", MAX_REQUEST);
	} else {
		char *b = realloc(c->buf, c->len + (size_t)n + 1);
		if (!b) {
			drop_client(q, i);
			return;
		}
		c->buf = b;
		memcpy(c->buf + c->len, tmp, (size_t)n);
		c->len += (size_t)n;
		c->buf[c->len] = '\0';
		char *nl = memchr(c->buf, '\n', c->len);
		if (!nl)
			return;
		*nl = '\0';
		if (strlen(c->buf) != (size_t)(nl - c->buf))
			ans = fail("a NUL byte in the request");
		else
			ans = answer(q, c, c->buf);
	}
	char *out = ans ? json_dumps(ans, JSON_COMPACT) : NULL;
	json_decref(ans);
	size_t len = out ? strlen(out) : 0;
	char *line = out ? realloc(out, len + 2) : NULL;
	if (!line) {
		free(out);
		drop_client(q, i);
		return;
	}
	line[len++] = '\n';
	line[len] = '\0';
	/*
	 * Written as the client reads it, never blocking the queue's thread: a
	 * client that does not read its answer holds only its own connection,
	 * until the deadline drops it.
	 */
	free(c->buf);
	c->buf = NULL;
	c->out = line;
	c->outlen = len;
	c->outoff = 0;
	c->deadline = clock_mono_ms() + CLIENT_TIMEOUT_MS;
	write_answer(q, i);
}

/* after a restart: the jobs that were running when the daemon went away */
static void recover(struct queue *q)
{
	/* a page at a time: the queued jobs' command lines need not all be in memory at once */
	for (int64_t from = 0;;) {
	struct job *v;
	size_t n;
	if (store_list(q->st, false, false, 0, from, 256, 0, &v, &n) < 0)
		return;
	if (n == 0) {
		store_list_free(v, n);
		return;
	}
	from = v[n - 1].id;
	for (size_t i = 0; i < n; i++) {
		if (v[i].state != JOB_RUNNING)
			continue;
		uint64_t ps = v[i].pid > 0 ? proc_start(v[i].pid) : 0;
		bool alive = ps != 0 && ps == v[i].pid_start;
		if (alive) {
			/* not our child: its end is seen, its status is not */
			if (q->nrun < MAX_RUNNING) {
				struct running *r = &q->run[q->nrun++];
				memset(r, 0, sizeof *r);
				r->id = v[i].id;
				r->uid = v[i].uid;
				r->pid = v[i].pid;
				r->pidfd = (int)syscall(SYS_pidfd_open, v[i].pid, 0);
				for (const char *p = v[i].gpus; *p;) {
					long g = strtol(p, NULL, 10);
					if (g >= 0 && g < MAX_GPUS)
						r->gpus[g] = true;
					p += strcspn(p, ",");
					if (*p)
						p++;
				}
				logf_("job %lld (pid %d) still runs: adopted", (long long)v[i].id, v[i].pid);
			}
		} else {
			bool ran;
			int code;
			int st = read_status(q, v[i].uid, v[i].id, &ran, &code);
			if ((st && !ran) || (!st && v[i].pid == 0)) {
				/* it never ran: forked too late, or not at all */
				store_requeue(q->st, v[i].id, "gpuctld stopped before it could start");
				logf_("job %lld never started before gpuctld stopped: queued again", (long long)v[i].id);
			} else if (st) {
				/* it ended while gpuctld was away and left its status */
				store_finish(q->st, v[i].id, code == 0 ? JOB_DONE : JOB_FAILED, code,
					     code ? "exit status left while gpuctld was away" : "", clock_real_ms());
			} else {
				lost(q, v[i].id, "while gpuctld was away");
			}
		}
	}
	store_list_free(v, n);
	}
}

/* poll's timeout: wait ms, or less to be back by monotonic ms `at` (0: no such time) */
static int sooner(int wait, long long at)
{
	if (!at)
		return wait;
	long long d = at - clock_mono_ms();
	return d < 0 ? 0 : d < wait ? (int)d : wait;
}

static void *loop(void *arg)
{
	struct queue *q = arg;
	recover(q);
	if (q->o.log_keep_ms > 0 || q->o.job_keep_ms > 0)
		q->prune_at = clock_mono_ms(); /* at once, then every half --log-keep or --job-keep */
	q->dirty = q->deps_dirty = true;
	settle(q);
	if (q->render_at)
		render(q);
	for (;;) {
		struct pollfd p[4 + MAX_CLIENTS + MAX_RUNNING];
		size_t np = 0;
		p[np++] = (struct pollfd){.fd = q->stopfd, .events = POLLIN};
		p[np++] = (struct pollfd){.fd = q->lfd, .events = POLLIN};
		int wfd = q->leases ? lease_watch_fd(q->leases) : -1;
		p[np++] = (struct pollfd){.fd = wfd, .events = POLLIN};
		p[np++] = (struct pollfd){.fd = q->rfd, .events = POLLIN};
		for (size_t i = 0; i < q->ncl; i++)
			p[np++] = (struct pollfd){.fd = q->cl[i].fd, .events = q->cl[i].out ? POLLOUT : POLLIN};
		/* the runner's children end through its records; adopted jobs through their pidfds */
		for (size_t i = 0; i < q->nrun; i++)
			p[np++] = (struct pollfd){.fd = q->run[i].child ? -1 : q->run[i].pidfd, .events = POLLIN};
		if (poll(p, np, sooner(sooner(1000, q->render_at), q->prune_at)) < 0 && errno != EINTR)
			break;
		if (p[0].revents)
			break;
		if (p[1].revents & POLLIN)
			accept_client(q);
		if (wfd >= 0 && (p[2].revents & POLLIN)) {
			lease_watch_drain(q->leases);
			q->dirty = true;
		}
		/* clients and jobs, from the end so removal does not skip one */
		size_t base = 4, ncl = q->ncl;
		for (size_t i = ncl; i-- > 0;)
			if (p[base + i].revents && q->cl[i].out)
				write_answer(q, i);
			else if (p[base + i].revents)
				serve_client(q, i);
		base += ncl;
		long long now = clock_mono_ms();
		for (size_t i = q->ncl; i-- > 0;)
			if (now > q->cl[i].deadline)
				drop_client(q, i); /* too slow to send its request */
		for (size_t i = q->nrun; i-- > 0;)
			if (p[base + i].revents || (!q->run[i].child && q->run[i].pidfd < 0))
				collect_end(q, i);
		/* after the loop above: ends reorder run[], which p[] follows */
		if (q->rfd >= 0 && p[3].revents && runner_read(q) < 0)
			runner_down(q, "it went away; its jobs are adopted");
		runner_exits(q);
		if (q->dirty || q->nfin)
			settle(q);
		if (q->render_at && clock_mono_ms() >= q->render_at)
			render(q);
		if (q->prune_at && clock_mono_ms() >= q->prune_at)
			prune_logs(q);
	}
	return NULL;
}

/* the pidlock PATH.lock into *fd; when another gpuctld holds it, "WHAT 'PATH' is served by pid N" */
static int take_lock(int *fd, const char *path, const char *what, char *err, size_t errlen)
{
	char lock[PATH_MAX];
	if (snprintf(lock, sizeof lock, "%s.lock", path) >= (int)sizeof lock) {
		errbuf_set(err, errlen, "the path '%s' is too long", path);
		return -1;
	}
	pid_t holder;
	*fd = pidlock_take(lock, geteuid(), &holder, err, errlen);
	if (*fd == -EWOULDBLOCK) {
		if (holder > 0)
			errbuf_set(err, errlen, "%s '%s' is served by pid %ld", what, path, (long)holder);
		else
			errbuf_set(err, errlen, "%s '%s' is served by another gpuctld (it holds '%s')", what, path, lock);
	}
	return *fd < 0 ? -1 : 0;
}

int queue_start(struct queue **out, struct sampler *s, const struct queue_opts *o, char *err, size_t errlen)
{
	*out = NULL;
	struct queue *q = calloc(1, sizeof *q);
	if (!q) {
		errbuf_set(err, errlen, "out of memory");
		return -1;
	}
	q->o = *o;
	q->s = s;
	q->lfd = q->stopfd = q->rfd = q->dblock = q->socklock = -1;
	pthread_mutex_init(&q->mlock, NULL);
	/* /dev/null for the jobs' stdin; fds 0-2 taken first if the daemon was started without them */
	while ((q->nullfd = open("/dev/null", O_RDWR)) >= 0 && q->nullfd < 3)
		;
	if (q->nullfd >= 0)
		fcntl(q->nullfd, F_SETFD, FD_CLOEXEC);
	struct stat st;
	if (mkdir(o->log_dir, 0711) < 0 && errno != EEXIST) {
		errbuf_set(err, errlen, "cannot create the job log directory '%s': %s", o->log_dir, strerror(errno));
		goto fail;
	}
	if (stat(o->log_dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		errbuf_set(err, errlen, "invalid --log-dir '%s': not a directory", o->log_dir);
		goto fail;
	}
	const char *why = stat(o->gpuctl, &st) < 0 || access(o->gpuctl, X_OK) < 0 ? strerror(errno)
			  : !S_ISREG(st.st_mode)				      ? "not a regular file"
										      : NULL;
	if (why) {
		errbuf_set(err, errlen, "cannot run '%s' for jobs: %s (give --gpuctl PATH)", o->gpuctl, why);
		goto fail;
	}
	if (stat(o->db, &st) == 0 && !S_ISREG(st.st_mode)) {
		errbuf_set(err, errlen, "invalid --queue-db '%s': not a regular file", o->db);
		goto fail;
	}
	/* one gpuctld per database and per socket: the second refuses, naming the first */
	if (take_lock(&q->dblock, o->db, "the queue at", err, errlen) < 0 ||
	    take_lock(&q->socklock, o->socket, "the queue socket", err, errlen) < 0)
		goto fail;
	if (store_open(&q->st, o->db, err, errlen) < 0)
		goto fail;
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	if (strlen(o->socket) >= sizeof a.sun_path) {
		errbuf_set(err, errlen, "socket path '%s' is too long", o->socket);
		goto fail;
	}
	strcpy(a.sun_path, o->socket);
	q->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	(void)unlink(o->socket); /* a stale socket of an earlier gpuctld */
	if (q->lfd < 0 || bind(q->lfd, (struct sockaddr *)&a, sizeof a) < 0 || chmod(o->socket, 0666) < 0 ||
	    listen(q->lfd, 64) < 0) {
		errbuf_set(err, errlen, "cannot listen on '%s': %s", o->socket, strerror(errno));
		goto fail;
	}
	q->stopfd = eventfd(0, EFD_CLOEXEC);
	if (q->stopfd < 0 || (errno = pthread_create(&q->thread, NULL, loop, q)) != 0) {
		errbuf_set(err, errlen, "cannot start the queue thread: %s", strerror(errno));
		goto fail;
	}
	q->started = true;
	*out = q;
	return 0;
fail:
	queue_stop(q);
	return -1;
}

void queue_stop(struct queue *q)
{
	if (!q)
		return;
	if (q->started) {
		uint64_t one = 1;
		(void)!write(q->stopfd, &one, sizeof one);
		pthread_join(q->thread, NULL);
	}
	while (q->ncl)
		drop_client(q, 0);
	runner_down(q, NULL); /* the jobs it started run on */
	free(q->rbuf);
	for (size_t i = 0; i < q->nrun; i++)
		if (q->run[i].pidfd >= 0)
			close(q->run[i].pidfd);
	if (q->lfd >= 0) {
		close(q->lfd);
		unlink(q->o.socket); /* ours: socklock is held until here */
	}
	if (q->socklock >= 0)
		close(q->socklock);
	if (q->dblock >= 0)
		close(q->dblock);
	if (q->stopfd >= 0)
		close(q->stopfd);
	if (q->nullfd >= 0)
		close(q->nullfd);
	lease_dir_close(q->leases);
	store_close(q->st);
	free(q->mtext);
	free(q->jtext);
	pthread_mutex_destroy(&q->mlock);
	free(q);
}
