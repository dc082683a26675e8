/*
 * round.c — the queue's dispatch round (queue-int.h). Anything that can
 * free or take a GPU — a submit, a cancel, a job's end, a lease released
 * by gpuctl run — asks for a round; there is no timer.
 *
 * A round (round_settle) records every job that ended and starts what
 * dispatch chose in ONE transaction: one fsync however many jobs it moves.
 * The started jobs are forked by the runner inside it and wait on their go
 * pipe; they go once the commit is on disk, so a crash at any point runs
 * no job twice. Dispatch reads only the head of the queue (in priority, id
 * order) as far as free GPUs remain, so a round costs the same with 10 or
 * 10 000 queued jobs. Which GPUs a job may use is decided by select.c's
 * rules (select_eligible, select_could), those of gpuctl run and pick, on
 * the sampler's last sample.
 */
#include "queue-int.h"

#include "util/clock.h"
#include "dispatch.h"
#include "jobs/jobstatus.h"
#include "jobs/quarantine.h"
#include "jobs/supervise.h"
#include "jobs/exec.h"
#include "notify.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* GPU i's UUID, or NULL when this sample has none (it cannot be leased, so not used) */
static const char *uuid_of(const gc_snapshot *s, size_t i)
{
	const gc_gpu *g = &s->gpus[i];
	return g->st[GC_V_UUID] == GC_ST_OK && g->uuid[0] ? g->uuid : NULL;
}

/* the sampler's last sample into g, no GPU free yet (what submit's check needs) */
void round_gpus_sample(struct queue *q, struct gpus_now *g)
{
	memset(g, 0, sizeof *g);
	if (sampler_snapshot(q->s, &g->snap) != GC_OK)
		queue_log("out of memory copying the last sample: no GPU is free this round");
	g->n = g->snap.ngpus < MAX_GPUS ? g->snap.ngpus : MAX_GPUS;
	g->view = g->snap;
	g->view.ngpus = g->n;
	g->view.topo = NULL; /* sized for snap.ngpus; dispatch ranks no topology */
}

/* ... and which GPUs are free now: one look at the leases of all, and at their quarantine marks */
void round_gpus_now(struct queue *q, struct gpus_now *g)
{
	round_gpus_sample(q, g);
	const char *uuids[MAX_GPUS];
	bool held[MAX_GPUS];
	for (size_t i = 0; i < g->n; i++)
		uuids[i] = uuid_of(&g->view, i);
	struct lease_dir *d = q->round.leases;
	if (q->grants.on)
		grants_held(q, uuids, g->n, held); /* authority mode: the grants are the leases */
	if (!d || (!q->grants.on && lease_held(d, uuids, g->n, held) < 0) ||
	    quarantine_marked(d, uuids, g->n, g->quarantined) < 0)
		return; /* none free this round */
	for (size_t i = 0; i < g->n; i++) {
		g->nquarantined += g->quarantined[i];
		g->is_free[i] = uuids[i] && !g->quarantined[i] && !held[i];
	}
	for (size_t r = 0; r < q->round.nrun; r++)
		for (size_t i = 0; i < g->n; i++)
			if (q->round.run[r].gpus[i])
				g->is_free[i] = false; /* between fork and gpuctl run's lease */
}

void round_gpus_release(struct gpus_now *g)
{
	gpu_snapshot_release(&g->snap);
}

/*
 * Job j's GPU request (its ngpus, --model and --min-free-mem, its user) as
 * select.c takes it: the queue asks select_could and select_eligible, the
 * rules gpuctl run and gpuctl pick decide by. rq is the job's request JSON.
 */
void round_job_request(const struct store_job *j, const json_t *rq, struct select_request *r, bool excl[MAX_GPUS])
{
	json_int_t minfree = json_integer_value(json_object_get(rq, "min_free_mem"));
	memset(r, 0, sizeof *r);
	r->n = j->ngpus;
	r->model = json_string_value(json_object_get(rq, "model"));
	r->min_free_mem = minfree > 0 ? (uint64_t)minfree : 0;
	r->max_util = -1;
	r->uid = j->uid;
	/* the GPUs a --retry-on requeue left out: those it failed on (indices) */
	json_t *x = json_object_get(rq, "exclude");
	memset(excl, 0, MAX_GPUS * sizeof *excl);
	for (size_t i = 0; i < json_array_size(x); i++) {
		json_int_t g = json_integer_value(json_array_get(x, i));
		if (g >= 0 && g < MAX_GPUS) {
			excl[g] = true;
			r->exclude = excl;
		}
	}
}

/* the GPUs request r may use now, whether or not free: e[now->n] */
void round_job_eligible(const struct gpus_now *now, const struct select_request *r, bool *e)
{
	enum select_why why[MAX_GPUS];
	struct select_request rq = *r;
	rq.quarantined = now->quarantined;
	select_eligible(&now->view, &rq, NULL, why);
	for (size_t g = 0; g < now->n; g++)
		e[g] = why[g] == SELECT_OK && uuid_of(&now->view, g);
}

/*
 * dispatch's placement: select_pick's ranking (most free memory, least busy,
 * GPU 0 last, the best-linked set) over the GPUs dispatch left usable, so a
 * queued job lands where gpuctl run would put it.
 */
static int choose_gpus(void *arg, const struct dispatch_job *j, const bool *usable, size_t ngpu, unsigned *gpus)
{
	const struct gpus_now *now = arg;
	struct select_request r = {.n = j->ngpus, .max_util = -1, .shared = true, .allowed = usable};
	if (ngpu != now->view.ngpus || select_pick(&now->view, &r, NULL, gpus) != 0)
		return -1;
	for (unsigned k = 0; k < j->ngpus; k++) { /* NVML indices to positions */
		size_t g = 0;
		while (g < ngpu && now->view.gpus[g].index != gpus[k])
			g++;
		if (g == ngpu)
			return -1;
		gpus[k] = (unsigned)g;
	}
	return 0;
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

/*
 * what job id left in its status record: 1 with *ran, *code, and *end (enum
 * supervise_end, -1 unknown) and *retries (--retry-on's, in all) when not
 * NULL; 0 when nothing was written
 */
int round_read_status(const struct queue *q, uid_t uid, int64_t id, bool *ran, int *code, int *end, unsigned *retries)
{
	char path[4300];
	queue_status_path(q, uid, path, sizeof path);
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	int r = fd >= 0 ? jobstatus_read(fd, id, ran, code, end, retries) : 0;
	if (fd >= 0)
		close(fd);
	return r > 0;
}

/*
 * job id's new state as an event (notify.h): job.started, job.ended (done,
 * cancelled), job.preempted (stopped by a spot notice) or job.failed
 */
static void queue_job_event(struct queue *q, int64_t id, bool preempted, json_t *diagnosis)
{
	struct store_job j;
	if (!q->o.notify || store_get(q->st, id, &j) != 1)
		return;
	const char *ev = j.state == STORE_RUNNING ? "job.started"
			 : preempted ? "job.preempted"
			 : j.state == STORE_DONE || j.state == STORE_CANCELLED ? "job.ended" : "job.failed";
	char text[400], name[80] = "";
	if (j.name[0])
		snprintf(name, sizeof name, " '%s'", j.name);
	if (j.state == STORE_RUNNING)
		snprintf(text, sizeof text, "job %lld%s of %s started on GPU%s %s", (long long)j.id, name, j.user,
			 strchr(j.gpus, ',') ? "s" : "", j.gpus);
	else
		snprintf(text, sizeof text, "job %lld%s of %s %s%s%s", (long long)j.id, name, j.user,
			 j.state == STORE_DONE ? "ended" : store_state_name(j.state), j.reason[0] ? ": " : "", j.reason);
	json_t *o = json_pack("{s:I, s:s, s:I, s:s, s:s, s:s}", "id", (json_int_t)j.id, "user", j.user, "uid",
			      (json_int_t)j.uid, "name", j.name, "state", store_state_name(j.state), "gpus", j.gpus);
	if (o && j.state != STORE_RUNNING) {
		json_object_set_new(o, "exit_code", json_integer(j.exit_code));
		json_object_set_new(o, "reason", json_string(j.reason));
		json_object_set_new(o, "preempted", json_boolean(preempted));
		if (diagnosis)
			json_object_set(o, "diagnosis", diagnosis);
	}
	notify_event(q->o.notify, ev, text, o ? json_pack("{s:o}", "job", o) : NULL);
	store_job_release(&j);
}

/*
 * A running job whose gpuctl run is gone without leaving a status (it was
 * killed too, or the machine restarted): it may have run part way. Queued
 * again when submitted with --requeue (at most 5 starts in all), else lost.
 */
void round_lost(struct queue *q, int64_t id, const char *when)
{
	struct store_job j;
	bool wants = false, again = false;
	if (store_get(q->st, id, &j) == 1) {
		json_t *rq = json_loads(j.request, 0, NULL);
		wants = json_is_true(json_object_get(rq, "requeue"));
		again = wants && j.starts < 5;
		json_decref(rq);
		store_job_release(&j);
	}
	char why[160];
	snprintf(why, sizeof why, "lost %s (its gpuctl run was gone without an exit status)%s", when,
		 again ? "; queued again: --requeue" : wants ? " after 5 starts" : "");
	if (again && store_requeue(q->st, id, why) == 1) {
		queue_log("job %lld %s", (long long)id, why);
		return;
	}
	store_finish(q->st, id, STORE_LOST, 1, why, clock_real_ms());
	queue_log("job %lld %s", (long long)id, why);
	queue_job_event(q, id, false, NULL);
	q->round.deps_dirty = true;
}

/*
 * Did job j (which ran on j->gpus) fail on a GPU quarantined for an Xid
 * since it started? The first such GPU's mark's detail into why. A job
 * submitted with --requeue is then queued again: the quarantine keeps it off
 * that GPU.
 */
static bool failed_on_xid(struct queue *q, const struct store_job *j, char *why, size_t len)
{
	if (!q->round.leases || !j->gpus[0])
		return false;
	gc_snapshot snap = {0};
	if (sampler_snapshot(q->s, &snap) != GC_OK)
		return false;
	bool hit = false;
	for (const char *p = j->gpus; *p && !hit;) {
		char *end;
		long g = strtol(p, &end, 10);
		if (end == p)
			break;
		struct quarantine_info qi;
		if (g >= 0 && (size_t)g < snap.ngpus && snap.gpus[g].st[GC_V_UUID] == GC_ST_OK &&
		    quarantine_get(q->round.leases, snap.gpus[g].uuid, &qi) == 1 && strcmp(qi.reason, "xid") == 0 &&
		    qi.since * 1000 >= j->started_ms - 1000) {
			snprintf(why, len, "failed after %s on GPU %ld; queued again (--requeue), not on that GPU",
				 qi.detail, g);
			hit = true;
		}
		p = *end == ',' ? end + 1 : end;
	}
	gpu_snapshot_release(&snap);
	return hit;
}

/* the --retry-on retries job rq has spent ("retries" in its request, kept across its starts) */
static unsigned request_retries(const json_t *rq)
{
	json_int_t n = json_integer_value(json_object_get(rq, "retries"));
	return n > 0 && n <= 100000 ? (unsigned)n : 0;
}

/*
 * A failure of class cls on the GPUs the job ran on: what the one retry
 * rule (job_retry_plan, lib/jobs/exec.h) says, with the job's own
 * --retry-on and --max-restarts and the retries it has spent (its status
 * record's, which counts those its runner made in place). A retry on other
 * GPUs is the queue's: the job queued again with the GPUs it failed on left
 * out. 1 when it was, 0 when not.
 */
static int retry_elsewhere(struct queue *q, int64_t id, const char *cls, unsigned spent)
{
	struct store_job j;
	if (store_get(q->st, id, &j) != 1)
		return 0;
	int done = 0;
	json_t *rq = json_loads(j.request, 0, NULL);
	struct job_opts jo;
	job_opts_init(&jo);
	char err[200];
	json_t *run = json_object_get(rq, "run");
	for (size_t i = 0; i < json_array_size(run); i++)
		(void)job_queued_option(&jo, json_string_value(json_array_get(run, i)), err, sizeof err);
	if (!jo.retry_on)
		goto out;
	if (spent < request_retries(rq))
		spent = request_retries(rq);
	/* the GPUs it failed on join those left out before */
	json_t *x = json_object_get(rq, "exclude");
	if (!json_is_array(x)) {
		x = json_array();
		json_object_set_new(rq, "exclude", x);
	}
	bool out_[MAX_GPUS] = {false};
	for (size_t i = 0; i < json_array_size(x); i++) {
		json_int_t g = json_integer_value(json_array_get(x, i));
		if (g >= 0 && g < MAX_GPUS)
			out_[g] = true;
	}
	for (const char *p = j.gpus; *p;) {
		char *end;
		long g = strtol(p, &end, 10);
		if (end == p)
			break;
		if (g >= 0 && g < MAX_GPUS && !out_[g]) {
			out_[g] = true;
			json_array_append_new(x, json_integer(g));
		}
		p = *end == ',' ? end + 1 : end;
	}
	/* enough GPUs must be left for it, or it would wait forever */
	struct gpus_now now;
	round_gpus_sample(q, &now);
	size_t left = 0;
	for (size_t g = 0; g < now.n; g++)
		left += !out_[g];
	round_gpus_release(&now);
	struct job_retry_in in = {.cls = cls, .retries = spent, .want = j.ngpus, .left = left, .failed_on = j.gpus,
				  .gpus_named = "gpuctld's placement"};
	struct job_retry p;
	job_retry_plan(&jo, &in, &p);
	if (p.how != JOB_RETRY_ELSEWHERE) {
		if (p.msg[0] && strncmp(p.msg, "not retried: ", 13) == 0)
			queue_log("job %lld failed with %s on GPUs %s: %s", (long long)id, cls, j.gpus, p.msg + 13);
		goto out;
	}
	json_object_set_new(rq, "retries", json_integer((json_int_t)spent + 1));
	char *nj = json_dumps(rq, JSON_COMPACT);
	char why[400];
	snprintf(why, sizeof why, "failed with %s on GPU%s %s: queued again without %s (--retry-on, %u of %u)", cls,
		 strchr(j.gpus, ',') ? "s" : "", j.gpus, strchr(j.gpus, ',') ? "them" : "it", spent + 1, jo.sv.max_restarts);
	if (nj && store_set_request(q->st, id, nj) == 0 && store_requeue(q->st, id, why) == 1) {
		queue_log("job %lld %s", (long long)id, why);
		(void)store_clear_diagnosis(q->st, id);
		findings_mark(q, id, j.uid, why);
		done = 1;
	}
	free(nj);
out:
	json_decref(rq);
	store_job_release(&j);
	return done;
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
	int scode, end = -1;
	unsigned retries = 0;
	bool record = round_read_status(q, f->uid, id, &ran, &scode, &end, &retries);
	if (record)
		code = scode;
	else if (code < 0) {
		round_lost(q, id, "after a gpuctld restart");
		return;
	}
	if (!ran && !f->cancelled && code != 127 && code != 126) {
		/*
		 * Never started: another job took a GPU between our look and its
		 * lease, or gpuctl run refused it (another user's process on it).
		 * Queue it again, but not forever: its log says why.
		 */
		struct store_job j;
		unsigned starts = store_get(q->st, id, &j) == 1 ? j.starts : 0;
		if (starts)
			store_job_release(&j);
		if (starts < 5 && store_requeue(q->st, id, "its GPUs were taken before it could lease them") == 1)
			return;
		code = code ? code : 1;
	}
	if (code != 0 && !f->cancelled) {
		/* a failure on a GPU that an Xid has taken out meanwhile: the GPU's fault, not the job's */
		struct store_job j;
		if (store_get(q->st, id, &j) == 1) {
			json_t *rq = json_loads(j.request, 0, NULL);
			char xwhy[300];
			bool again = json_is_true(json_object_get(rq, "requeue")) && j.starts < 5 &&
				     failed_on_xid(q, &j, xwhy, sizeof xwhy);
			json_decref(rq);
			store_job_release(&j);
			if (again && store_requeue(q->st, id, xwhy) == 1) {
				queue_log("job %lld %s", (long long)id, xwhy);
				findings_mark(q, id, f->uid, xwhy);
				return;
			}
		}
	}
	enum store_state s = f->cancelled ? STORE_CANCELLED : code == 0 ? STORE_DONE : STORE_FAILED;
	char why[96] = "";
	if (f->cancelled)
		snprintf(why, sizeof why, "cancelled while running");
	else if (!record && code == 126 && !queue_log_made(q, id))
		/* the runner's child could not create it (it said why on our stderr) */
		snprintf(why, sizeof why, "its log could not be created (exit status 126; gpuctld's log says why)");
	else if (end == SUPERVISE_END_PREEMPTED)
		snprintf(why, sizeof why, "stopped by a spot preemption notice (exit status %d)", code);
	else if (code)
		snprintf(why, sizeof why, "exit status %d", code);
	/* a failure explained from its log: kept with the job, counted by class, told in the event */
	json_t *diag = NULL;
	if (s != STORE_FAILED)
		(void)store_clear_diagnosis(q->st, id); /* an earlier start's, if any */
	if (s == STORE_FAILED && !(end == SUPERVISE_END_PREEMPTED)) {
		char cls[64];
		diag = findings_of_job(q, id, cls, sizeof cls);
		char *dj = diag ? json_dumps(diag, JSON_COMPACT) : NULL;
		if (dj && store_set_diagnosis(q->st, id, dj) < 0)
			queue_log("job %lld's diagnosis could not be recorded: %s", (long long)id, store_errmsg(q->st));
		free(dj);
		view_failed(&q->view, cls);
		if (diag && !f->cancelled && retry_elsewhere(q, id, cls, retries)) {
			json_decref(diag);
			return;
		}
	}
	if (store_finish(q->st, id, s, code, why, clock_real_ms()) != 1)
		queue_log("job %lld ended but could not be recorded: %s", (long long)id, store_errmsg(q->st));
	else
		queue_job_event(q, id, !f->cancelled && end == SUPERVISE_END_PREEMPTED, diag);
	json_decref(diag);
	q->round.deps_dirty |= s != STORE_DONE; /* the jobs waiting for it to succeed never will */
}

/* inside the round's transaction: job id could not be started on gpus, and why; -1 */
static int start_failed(struct queue *q, int64_t id, const char *gpus, const char *why)
{
	store_start(q->st, id, 0, 0, gpus, clock_real_ms());
	store_finish(q->st, id, STORE_FAILED, 1, why, clock_real_ms());
	queue_log("job %lld failed to start: %s", (long long)id, why);
	queue_job_event(q, id, false, NULL);
	q->round.deps_dirty = true;
	return -1;
}

/*
 * Inside the round's transaction: start job j on GPUs g (gs: the sample they
 * were chosen in). Asks the runner to fork the job as the user (launched()
 * takes its answer, after the round's other requests are sent); it leases
 * the GPUs and waits on its go pipe (fd 3) for settle() to write one byte
 * once the round is committed. The GPUs go by index and UUID ("placed"):
 * dispatch chose them from the sampler's view, so the job only leases them
 * and opens no NVML of its own. 0 (*p to collect), or -1 (the job failed).
 */
static int launch(struct queue *q, const struct store_job *j, const bool *g, const gc_snapshot *gs,
		  struct launching *p)
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
	queue_log_path(q, j->id, log, sizeof log);
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
	queue_status_path(q, j->uid, status, sizeof status);
	/* owned by the user, whose gpuctl runs write their records into it; this job's emptied */
	int sfd = open(status, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (sfd < 0 || fchown(sfd, j->uid, j->gid) < 0 || jobstatus_clear(sfd, j->id) < 0)
		queue_log("cannot prepare %s for job %lld: %s", status, (long long)j->id, strerror(errno));
	if (sfd >= 0)
		close(sfd);
	if (!cmd || !env || !opts)
		snprintf(why, sizeof why, "out of memory");
	else if (q->nullfd < 0)
		snprintf(why, sizeof why, "cannot open /dev/null");
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
	char idv[40], simv[4200], authv[4200];
	char *keep[] = {"GPUCTL_SIM_LIBDIR", "GPUCTL_SIM_RUNDIR", "GPUCTL_STATE_DIR", "GPUCTL_AUTHORITY_DIR", NULL};
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
	if (q->o.authority_dir) {
		/* the job's gpuctl run asks this gpuctld for the GPUs it was placed on */
		snprintf(authv, sizeof authv, "GPUCTL_AUTHORITY_DIR=%s", q->o.authority_dir);
		env[m++] = authv;
		keep[3] = NULL;
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
			      .slot = (uint64_t)j->id, .retries = request_retries(rq), .nopts = nopts, .opts = (char **)opts, .argc = na, .argv = cmd,
			      .envc = m, .env = env};
	int sent = runner_link_submit(&q->runner, &sr, &p->req, why, sizeof why);
	for (size_t i = 0; env[i]; i++)
		if (env[i] != idv && env[i] != simv && env[i] != authv)
			free(env[i]);
	free(env);
	vec_free(cmd);
	free(opts);
	json_decref(rq);
	if (sent < 0)
		return start_failed(q, j->id, gpus, why);
	p->id = j->id;
	p->uid = j->uid;
	p->submitted_ms = j->submitted_ms;
	memcpy(p->g, g, sizeof p->g);
	snprintf(p->gpus, sizeof p->gpus, "%s", gpus);
	return 0;
}

/* the runner's answer to launch(): the job forked and its start recorded, or it failed to start */
static void launched(struct queue *q, struct launching *p)
{
	char why[256] = "";
	pid_t pid = runner_link_collect(&q->runner, &p->req, why, sizeof why);
	if (pid < 0) {
		start_failed(q, p->id, p->gpus, why);
		return;
	}
	int go = p->req.go[1];
	if (store_start(q->st, p->id, pid, queue_proc_start(pid), p->gpus, clock_real_ms()) != 1) {
		queue_log("job %lld could not be marked started: %s", (long long)p->id, store_errmsg(q->st));
		close(go); /* it leaves without running anything; the runner reaps it */
		return;
	}
	queue_job_event(q, p->id, false, NULL);
	struct running *r = &q->round.run[q->round.nrun++];
	memset(r, 0, sizeof *r);
	r->id = p->id;
	r->uid = p->uid;
	r->pid = pid;
	r->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	r->child = true;
	memcpy(r->gpus, p->g, sizeof r->gpus);
	q->round.go[q->round.ngo++] = (struct go){.id = p->id, .pid = pid, .fd = go, .submitted_ms = p->submitted_ms};
}

/* run[i] has ended with exit code `code` (-1: unknown): move it to the round's ends */
static void end_run(struct queue *q, size_t i, int code)
{
	struct running *r = &q->round.run[i];
	q->round.fin[q->round.nfin++] = (struct fin){.id = r->id, .uid = r->uid, .code = code, .cancelled = r->cancelled};
	if (r->pidfd >= 0)
		close(r->pidfd);
	q->round.run[i] = q->round.run[--q->round.nrun];
	q->round.dirty = true;
}

/* an adopted job's pidfd is readable (or it has none): has it ended? */
void round_collect_end(struct queue *q, size_t i)
{
	if (!q->round.run[i].child && kill(q->round.run[i].pid, 0) < 0)
		end_run(q, i, -1); /* its end is seen, its exit code is not: its status file has it */
}

/* the runner's EXITED records: the jobs they name have ended */
void round_runner_exits(struct queue *q)
{
	pid_t pid;
	int st;
	while (runner_link_next_exit(&q->runner, &pid, &st))
		for (size_t i = 0; i < q->round.nrun; i++)
			if (q->round.run[i].child && q->round.run[i].pid == pid) {
				end_run(q, i, WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1);
				break;
			}
}

void round_runner_down(void *arg)
{
	struct queue *q = arg;
	for (size_t i = 0; i < q->round.nrun; i++)
		q->round.run[i].child = false;
}

void round_adopt(struct queue *q, const struct store_job *j)
{
	if (q->round.nrun == MAX_RUNNING)
		return;
	struct running *r = &q->round.run[q->round.nrun++];
	memset(r, 0, sizeof *r);
	r->id = j->id;
	r->uid = j->uid;
	r->pid = j->pid;
	r->pidfd = (int)syscall(SYS_pidfd_open, j->pid, 0);
	for (const char *p = j->gpus; *p;) {
		long g = strtol(p, NULL, 10);
		if (g >= 0 && g < MAX_GPUS)
			r->gpus[g] = true;
		p += strcspn(p, ",");
		if (*p)
			p++;
	}
	queue_log("job %lld (pid %d) still runs: adopted", (long long)j->id, j->pid);
}

bool round_cancel(struct queue *q, int64_t id)
{
	bool found = false;
	for (size_t i = 0; i < q->round.nrun; i++)
		if (q->round.run[i].id == id) {
			kill(q->round.run[i].pid, SIGTERM);
			q->round.run[i].cancelled = true;
			found = true;
		}
	return found;
}

/* ---- dispatch ----------------------------------------------------------------- */

/* a job's state, through the memo: 1 found, 0 no such job, -1 error */
static int dep_state(struct queue *q, int64_t id, enum store_state *st)
{
	size_t slot = (size_t)(((uint64_t)id * 0x9E3779B97F4A7C15ull) >> 52); /* 12 bits: 4096 slots */
	if (q->round.memo[slot].round == q->round.memo_round && q->round.memo[slot].id == id) {
		if (q->round.memo[slot].state < 0)
			return 0;
		*st = (enum store_state)q->round.memo[slot].state;
		return 1;
	}
	int r = store_state(q->st, id, st);
	if (r >= 0) {
		q->round.memo[slot].id = id;
		q->round.memo[slot].round = q->round.memo_round;
		q->round.memo[slot].state = r ? (int8_t)*st : -1;
	}
	return r;
}

/* a new look at the queue: what the memo holds may have changed since */
void round_memo_forget(struct queue *q)
{
	if (++q->round.memo_round == 0) {
		memset(q->round.memo, 0, sizeof q->round.memo);
		q->round.memo_round = 1;
	}
}

static void memo_cancelled(struct queue *q, int64_t id)
{
	size_t slot = (size_t)(((uint64_t)id * 0x9E3779B97F4A7C15ull) >> 52);
	if (q->round.memo[slot].id == id)
		q->round.memo[slot].round = q->round.memo_round - 1;
}

bool round_deps_state(struct queue *q, const struct store_job *j, bool *failed)
{
	*failed = false;
	if (!j->after)
		return true;
	bool ready = true;
	for (const char *p = j->after; *p;) {
		long long id = strtoll(p, NULL, 10);
		enum store_state st = STORE_QUEUED;
		int r = dep_state(q, id, &st);
		if (r != 1 || (store_state_final(st) && st != STORE_DONE))
			*failed = true;
		else if (st != STORE_DONE)
			ready = false;
		p += strcspn(p, ",");
		if (*p)
			p++;
	}
	return ready && !*failed;
}

/* jobs waiting --after one that failed, was cancelled or does not exist: cancelled */
static void cancel_orphans(struct queue *q)
{
	struct store_job *v;
	size_t n;
	round_memo_forget(q);
	if (store_brief(q->st, STORE_WAITING, SIZE_MAX, &v, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		bool failed;
		if (!round_deps_state(q, &v[i], &failed) && failed)
			store_cancel(q->st, v[i].id, "a job it runs --after did not succeed", clock_real_ms());
	}
	store_list_free(v, n);
}

/* which queued jobs start now: inside the round's transaction, from the head of the queue */
static void dispatch(struct queue *q)
{
	struct gpus_now now;
	size_t nfree = 0;
	round_memo_forget(q);
	if (!q->round.leases) {
		char err[256];
		if (lease_dir_open(&q->round.leases, NULL, true, err, sizeof err) != GC_OK) {
			q->round.leases = NULL;
			queue_log("cannot open the lease directory: %s", err);
		}
	}
	if (q->round.deps_dirty) {
		cancel_orphans(q);
		q->round.deps_dirty = false;
	}
	round_gpus_now(q, &now);
	const bool *is_free = now.is_free;
	size_t ngpu = now.n;
	for (size_t g = 0; g < ngpu; g++)
		nfree += is_free[g];
	/* authority mode: the requests of gpuctl run, pick, launch and Python wait in the same line */
	struct dispatch_job line[MAX_WAITERS];
	bool *linemem = NULL;
	size_t nline = grants_line(q, &now, line, MAX_WAITERS, &linemem);
	if (!nfree) {
		free(linemem);
		round_gpus_release(&now);
		return;
	}
	/*
	 * Plan the head of the queue; while GPUs are left over (every job read
	 * could start or can never run), read further. dispatch_plan over a prefix
	 * starts what it would start over the whole queue once none are left.
	 */
	struct store_job *v = NULL;
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
		sj = calloc(n + nline + 1, sizeof *sj);
		elig = calloc((n ? n : 1) * MAX_GPUS, sizeof *elig);
		if (!sj || !elig)
			break;
		size_t ns = 0, left = 0;
		for (size_t i = 0; i < n; i++) {
			bool failed;
			if (!round_deps_state(q, &v[i], &failed)) {
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
			bool excl[MAX_GPUS];
			round_job_request(&v[i], rq, &r, excl);
			round_job_eligible(&now, &r, e);
			json_decref(rq);
			sj[ns++] = (struct dispatch_job){.id = v[i].id, .priority = v[i].priority, .ngpus = v[i].ngpus,
						      .eligible = e, .share = usage_share(q, v[i].uid),
						      .arrival = v[i].submitted_ms};
		}
		/* a user's own grants never make others wait for it (dispatch.h) */
		bool *own = q->grants.on ? calloc(ns ? ns : 1, MAX_GPUS * sizeof *own) : NULL;
		for (size_t i = 0, x = 0; own && i < n && x < ns; i++)
			if (sj[x].id == v[i].id) {
				grants_own(q, &now, v[i].uid, &own[x * MAX_GPUS]);
				sj[x].own = &own[x * MAX_GPUS];
				x++;
			}
		memcpy(sj + ns, line, nline * sizeof *line);
		ns += nline;
		k = dispatch_plan(sj, ns, is_free, ngpu, choose_gpus, &now, out, MAX_GPUS, &left);
		/* the starts refer to own[] no more */
		for (size_t i = 0; i < ns; i++)
			sj[i].own = NULL;
		free(own);
		if (left == 0 || n < limit)
			break;
		k = 0;
	}
	/* every start's request sent first, then the answers taken in order */
	struct launching starts[MAX_GPUS];
	size_t nstarts = 0;
	for (size_t s = 0; s < k && q->round.nrun + nstarts < MAX_RUNNING && q->round.ngo + nstarts < MAX_GPUS; s++) {
		bool g[MAX_GPUS] = {false};
		for (unsigned x = 0; x < out[s].n; x++)
			g[out[s].gpus[x]] = true;
		if (out[s].id < 0) {
			grants_start(q, out[s].id, out[s].gpus, out[s].n, &now);
			continue;
		}
		struct store_job j;
		if (store_get(q->st, out[s].id, &j) == 1) {
			if (launch(q, &j, g, &now.view, &starts[nstarts]) == 0)
				nstarts++;
			store_job_release(&j);
		}
	}
	for (size_t s = 0; s < nstarts; s++)
		launched(q, &starts[s]);
	free(sj);
	free(elig);
	free(linemem);
	store_list_free(v, n);
	round_gpus_release(&now);
}

/*
 * One round: record the jobs that ended and start what dispatch chooses, in
 * one transaction; then, once it is on disk, let the started ones go. When
 * the commit fails, nothing of the round happened: the spawned gpuctl runs
 * leave without running anything, and the ends are recorded again at the
 * next wake-up (within a second).
 */
void round_settle(struct queue *q)
{
	if (store_begin(q->st) < 0) {
		queue_log("cannot begin a transaction: %s; trying again", store_errmsg(q->st));
		return;
	}
	for (size_t i = 0; i < q->round.nfin; i++)
		record_end(q, &q->round.fin[i]);
	dispatch(q);
	if (store_commit(q->st) < 0) {
		queue_log("cannot commit the queue's changes: %s; trying again", store_errmsg(q->st));
		grants_committed(q, false);
		for (size_t i = 0; i < q->round.ngo; i++) {
			close(q->round.go[i].fd); /* it leaves without running anything; the runner reaps it */
			for (size_t r = 0; r < q->round.nrun; r++)
				if (q->round.run[r].pid == q->round.go[i].pid) {
					if (q->round.run[r].pidfd >= 0)
						close(q->round.run[r].pidfd);
					q->round.run[r] = q->round.run[--q->round.nrun];
					break;
				}
		}
		q->round.ngo = 0;
		q->round.deps_dirty = true;
		return;
	}
	q->round.nfin = 0;
	/*
	 * The grants of the round, and the usage of those that ended, in a transaction of their
	 * own that waits for the write, not the disk: a grant must outlive gpuctld, not the
	 * machine (a power loss ends its holders). So a hand-over costs no fsync.
	 */
	if (q->grants.on) {
		bool ok = store_sync(q->st, false) == 0 && store_begin(q->st) == 0;
		if (ok) {
			grants_flush(q);
			ok = store_commit(q->st) == 0;
		}
		if (!ok)
			queue_log("cannot store the round's grants: %s; trying again", store_errmsg(q->st));
		(void)store_sync(q->st, true);
		grants_committed(q, ok);
	}
	long long now = clock_real_ms();
	for (size_t i = 0; i < q->round.ngo; i++) {
		(void)!write(q->round.go[i].fd, "x", 1); /* go */
		close(q->round.go[i].fd);
		view_started(&q->view, 1, (now - q->round.go[i].submitted_ms) / 1000.0);
	}
	q->round.ngo = 0;
	q->round.dirty = false;
	view_render_later(&q->view);
}

void round_free(struct round *rd)
{
	for (size_t i = 0; i < rd->nrun; i++)
		if (rd->run[i].pidfd >= 0)
			close(rd->run[i].pidfd);
	lease_dir_close(rd->leases);
}
