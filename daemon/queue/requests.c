/*
 * requests.c — gpuctld's queue protocol (queue-int.h): one JSON request
 * line from a client known by SO_PEERCRED, one JSON answer. submit checks
 * everything a job carries before it is stored (its GPU request against
 * what this machine could ever give, its gpuctl run options with the
 * table gpuctl run parses them with); list and show say why a queued job
 * waits, as Slurm's squeue REASON does; cancel stops a queued job or
 * signals a running one. Another user's job is "no such job".
 */
#include "queue-int.h"

#include "util/clock.h"
#include "jobs/job.h"
#include "device/gputable.h"
#include "device/proc.h"
#include "util/grow.h"

#include <errno.h>
#include <jansson.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static json_t *queue_job_json(const struct store_job *j)
{
	json_t *argv = json_loads(j->argv, 0, NULL);
	json_t *o = json_pack("{s:I, s:s, s:I, s:s, s:i, s:i, s:s, s:o, s:s, s:I, s:I, s:I, s:o, s:s, s:i}",
			      "id", (json_int_t)j->id, "user", j->user, "uid", (json_int_t)j->uid, "name", j->name,
			      "priority", j->priority, "gpus_requested", (int)j->ngpus,
			      "state", store_state_name(j->state), "argv", argv ? argv : json_array(), "cwd", j->cwd,
			      "submitted_ms", (json_int_t)j->submitted_ms, "started_ms", (json_int_t)j->started_ms,
			      "ended_ms", (json_int_t)j->ended_ms, "gpus", gpu_list_json(j->gpus), "reason", j->reason,
			      "starts", (int)j->starts);
	if (o && store_state_final(j->state) && j->state != STORE_CANCELLED)
		json_object_set_new(o, "exit_code", json_integer(j->exit_code));
	if (o && j->state == STORE_RUNNING && j->pid > 0)
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

json_t *requests_fail(const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return json_pack("{s:b, s:s}", "ok", 0, "error", msg);
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

/* a queued job's reason, as Slurm's squeue REASON column: one word, and the sentence in why
 * (NULL: not wanted) */
static const char *pending_word(struct queue *q, const struct gpus_now *now, const struct store_job *j, char *why,
				size_t whylen)
{
	bool failed;
	if (!round_deps_state(q, j, &failed)) {
		if (why)
			snprintf(why, whylen, failed ? "a job it runs --after (%s) did not succeed: it will be cancelled"
						     : "waits for job %s to succeed (--after)", j->after);
		return failed ? "DependencyNeverSatisfied" : "Dependency";
	}
	json_t *rq = json_loads(j->request, 0, NULL);
	struct select_request r;
	bool excl[MAX_GPUS];
	round_job_request(j, rq, &r, excl);
	bool e[MAX_GPUS];
	size_t ever = 0, fit = 0;
	round_job_eligible(now, &r, e);
	for (size_t g = 0; g < now->n; g++) {
		ever += select_could(&now->view, g, &r) == SELECT_OK;
		fit += now->is_free[g] && e[g];
	}
	json_decref(rq);
	const char *s = j->ngpus == 1 ? "" : "s";
	if (ever < j->ngpus) {
		if (why)
			snprintf(why, whylen, "%u GPU%s requested, but only %zu of this machine's %zu GPUs could ever match it",
				 j->ngpus, s, ever, now->n);
		return "NeverFits";
	}
	if (fit < j->ngpus) {
		if (why)
			snprintf(why, whylen, "%u GPU%s requested, %zu free now that it may use (%zu could match%s)",
				 j->ngpus, s, fit, ever, now->nquarantined ? "; quarantined GPUs are not used: gpuctl quarantine" : "");
		return "Resources";
	}
	if (why)
		snprintf(why, whylen, "behind earlier or higher-priority jobs (first come, first served)");
	return "Priority";
}

static void add_pending_reason(struct queue *q, const struct gpus_now *now, const struct store_job *j, json_t *o)
{
	if (!o || j->state != STORE_QUEUED)
		return;
	char why[300];
	const char *word = pending_word(q, now, j, why, sizeof why);
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
		return requests_fail("argv must be a non-empty list of strings without NUL bytes");
	if (strings(env, 65536) < 0)
		return requests_fail("env must be a list of NAME=value strings");
	if (!cwd || cwd[0] != '/')
		return requests_fail("cwd must be an absolute path");
	if (n < 1 || (size_t)n > ngpu)
		return requests_fail("%lld GPUs requested but this machine has %zu", (long long)n, ngpu);
	if (name && strlen(name) > 63)
		return requests_fail("--name is at most 63 bytes");
	if (prio < -1000 || prio > 1000)
		return requests_fail("--priority must be from -1000 to 1000");
	if (prio > 0 && !clients_is_admin(&q->clients, c->uid, c->gid))
		return requests_fail("only root or the admin group may give a priority above 0");
	if (after && (strspn(after, "0123456789,") != strlen(after) || !*after))
		return requests_fail("--after takes job ids separated by commas");
	/* every dispatch round reads each of them: bounded */
	size_t nafter = 0;
	for (const char *p = after; p && *p; p++)
		nafter += *p != ',' && (p == after || p[-1] == ',');
	if (nafter > MAX_AFTER)
		return requests_fail("--after names %zu jobs; at most %d", nafter, MAX_AFTER);
	/* root and the admin group have no limit: nothing to read for them */
	if (q->o.max_queued > 0 && !clients_is_admin(&q->clients, c->uid, c->gid)) {
		int64_t mine = store_count_queued(q->st, c->uid);
		if (mine < 0)
			return requests_fail("cannot read the queue: %s", store_errmsg(q->st));
		if (mine >= q->o.max_queued)
			return requests_fail("you have %lld jobs queued, the most gpuctld takes from one user (--max-queued %ld); "
				    "wait for some to start, or cancel some", (long long)mine, q->o.max_queued);
	}
	/* each job it waits for must exist and be the submitter's to see (else "no job N", as show says) */
	for (const char *p = after; p && *p;) {
		long long id = strtoll(p, NULL, 10);
		struct store_job d;
		int r = id > 0 ? store_get(q->st, id, &d) : 0;
		bool visible = r == 1 && (d.uid == c->uid || clients_is_admin(&q->clients, c->uid, c->gid));
		if (r == 1)
			store_job_release(&d);
		if (r < 0)
			return requests_fail("cannot read the queue: %s", store_errmsg(q->st));
		if (!visible)
			return requests_fail("--after %s: no job %lld (gpuctl queue lists yours)", after, id);
		p += strcspn(p, ",");
		if (*p)
			p++;
	}
	json_t *model = json_object_get(req, "model"), *minfree = json_object_get(req, "min_free_mem");
	if (model && (!json_is_string(model) || !*json_string_value(model) || json_string_length(model) > 95))
		return requests_fail("--model must be a GPU name or glob of 1 to 95 bytes");
	if (minfree && (!json_is_integer(minfree) || json_integer_value(minfree) < 0))
		return requests_fail("--min-free-mem must be a size in bytes");
	json_t *requeue = json_object_get(req, "requeue");
	if (requeue && !json_is_boolean(requeue))
		return requests_fail("requeue must be true or false");
	/* gpuctl run's supervisor options, passed on to the job: only these (never --gpus or an internal one) */
	json_t *run = json_object_get(req, "run");
	if (run && strings(run, 16) < 0)
		return requests_fail("run must be a list of at most 16 gpuctl run options");
	/* each checked by the code gpuctl submit and gpuctl run check it with: what gpuctl run
	 * would refuse must not be queued (it would fail at every start) */
	size_t ri;
	json_t *rv;
	json_array_foreach(run, ri, rv) {
		char why[400] = "";
		struct job_opts jo;
		job_opts_init(&jo);
		if (json_string_length(rv) > 4096)
			return requests_fail("a gpuctl run option over 4096 bytes");
		if (job_queued_option(&jo, json_string_value(rv), why, sizeof why) != GC_OK)
			return requests_fail("%s", why);
	}
	/* a request no GPU of this machine can ever meet is refused now, not left waiting forever */
	struct gpus_now now;
	round_gpus_sample(q, &now);
	struct store_job asked = {.ngpus = (unsigned)n};
	struct select_request sr;
	bool excl[MAX_GPUS];
	round_job_request(&asked, req, &sr, excl);
	size_t fit = 0, mig = 0;
	json_int_t want = json_integer_value(minfree);
	for (size_t g = 0; g < now.n; g++) {
		enum select_why w = select_could(&now.view, g, &sr);
		fit += w == SELECT_OK;
		mig += w == SELECT_MIG; /* only an administrator changes MIG mode */
	}
	round_gpus_release(&now);
	if (mig && fit < (size_t)n)
		return requests_fail("%lld GPUs requested, but only %zu of this machine's GPUs could ever be handed out: "
			    "%zu %s in MIG mode (CUDA sees only MIG devices there, by MIG UUID)",
			    (long long)n, fit, mig, mig == 1 ? "is" : "are");
	if ((model || want > 0) && fit < (size_t)n)
		return requests_fail("%lld GPUs matching --model/--min-free-mem requested, but only %zu of this machine's "
			    "GPUs could ever match", (long long)n, fit);
	struct passwd pw, *res = NULL;
	char pwbuf[4096];
	if (getpwuid_r(c->uid, &pw, pwbuf, sizeof pwbuf, &res) != 0 || !res)
		return requests_fail("uid %u has no passwd entry: jobs run as a named user", (unsigned)c->uid);
	struct store_job j;
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
		ans = requests_fail("out of memory");
	else if (q->o.max_job_bytes > 0 && stored > q->o.max_job_bytes)
		/* what one user may store is bounded: --max-queued jobs of at most this */
		ans = requests_fail("the command line and environment take %zu bytes, more than gpuctld keeps for a job "
			   "(--max-job-bytes %zu)", stored, q->o.max_job_bytes);
	else if (store_submit(q->st, &j, err, sizeof err) < 0)
		ans = requests_fail("%s", err);
	else
		ans = json_pack("{s:b, s:I}", "ok", 1, "id", (json_int_t)j.id);
	free(j.argv);
	free(j.env);
	free(j.request);
	q->round.dirty = true;
	q->round.deps_dirty |= after != NULL; /* it may wait for a job that has already failed */
	return ans;
}

/*
 * gpuctl queue's table (list with "table"): a row per job, in text, after the answer's line
 * ("rows_bytes" says how many bytes), so that a listing of 100 000 jobs is not 100 000 JSON
 * objects made, written, read and taken apart again, nor one string escaped and unescaped. Fields:
 * id, user, state, GPUs requested, the GPUs it runs on or (the word why it waits), name, the
 * command line's first TABLE_CMD bytes; apart by tabs, rows ended by newlines, every field
 * sanitised (no control character: a name cannot forge a field or a row).
 */
#define TABLE_PAGE 4096 /* rows in one answer: a row is at most some 330 bytes, a page 1.4 MB */
#define TABLE_CMD 60

struct table {
	char *v;
	size_t len, cap;
	bool oom;
	/* the last queued job's reason, for the next one of the same user that asks the same (a
	 * sweep's jobs, one after the other) */
	char *memo_request;
	unsigned memo_ngpus;
	uid_t memo_uid;
	const char *memo_word;
};

/* s, sanitised, then end: written straight into the rows (sanitising never makes text longer) */
static void table_field(struct table *t, const char *s, size_t n, char end)
{
	char *v = t->oom ? NULL : grow(t->v, &t->cap, t->len + n + 2, 1, 64 << 10);
	if (!v) {
		t->oom = true;
		return;
	}
	t->v = v;
	proc_sanitize(t->v + t->len, n + 1, s, n);
	t->len += strlen(t->v + t->len);
	t->v[t->len++] = end;
}

static void table_text(struct table *t, const char *s, char end)
{
	table_field(t, s, strlen(s), end);
}

static void table_number(struct table *t, long long v, char end)
{
	char num[24], *p = num + sizeof num;
	unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
	do
		*--p = (char)('0' + u % 10);
	while (u /= 10);
	if (v < 0)
		*--p = '-';
	table_field(t, p, (size_t)(num + sizeof num - p), end);
}

static void table_row(struct queue *q, const struct gpus_now *now, const struct store_job *j, struct table *t)
{
	table_number(t, j->id, '\t');
	table_text(t, j->user, '\t');
	table_text(t, store_state_name(j->state), '\t');
	table_number(t, j->ngpus, '\t');
	if (j->state == STORE_QUEUED) {
		const char *word;
		if (!j->after && t->memo_request && t->memo_ngpus == j->ngpus && t->memo_uid == j->uid &&
		    strcmp(t->memo_request, j->request) == 0) {
			word = t->memo_word;
		} else {
			word = pending_word(q, now, j, NULL, 0);
			if (!j->after) {
				free(t->memo_request);
				t->memo_request = strdup(j->request);
				t->memo_ngpus = j->ngpus;
				t->memo_uid = j->uid;
				t->memo_word = word;
			}
		}
		char why[48];
		snprintf(why, sizeof why, "(%s)", word);
		table_text(t, why, '\t');
	} else {
		table_text(t, j->gpus, '\t');
	}
	table_text(t, j->name, '\t');
	/* the command line's first TABLE_CMD bytes: its words apart by spaces */
	char cmd[TABLE_CMD];
	size_t off = 0, i;
	json_t *argv = json_loads(j->argv, 0, NULL), *a;
	json_array_foreach(argv, i, a) {
		const char *w = json_string_value(a);
		size_t n = json_string_length(a);
		if (!w)
			continue;
		if (i && off < sizeof cmd)
			cmd[off++] = ' ';
		if (n > sizeof cmd - off)
			n = sizeof cmd - off;
		memcpy(cmd + off, w, n);
		off += n;
		if (off == sizeof cmd)
			break;
	}
	json_decref(argv);
	table_field(t, cmd, off, '\n');
}

/*
 * One page of jobs: those after id "from" (0: from the start), at most LIST_PAGE
 * of them and about LIST_PAGE_BYTES of command lines, then "next" (the id to ask
 * from) when there may be more. No answer is ever so big that writing it holds
 * the queue up or the client refuses it, however many jobs and however long
 * their command lines.
 */
static json_t *op_list(struct queue *q, struct client *c, json_t *req)
{
	round_memo_forget(q);
	bool all = json_is_true(json_object_get(req, "all"));
	bool admin = clients_is_admin(&q->clients, c->uid, c->gid);
	json_int_t from = json_integer_value(json_object_get(req, "from"));
	/* filters (gpuctl queue --state, --user), each served by an index */
	json_t *sj = json_object_get(req, "state"), *uj = json_object_get(req, "uid");
	int state = -1;
	if (sj) {
		const char *name = json_string_value(sj);
		for (int k = STORE_QUEUED; name && k <= STORE_LOST && state < 0; k++)
			if (strcmp(name, store_state_name((enum store_state)k)) == 0)
				state = k;
		if (state < 0)
			return requests_fail("list: state must be queued, running, done, failed, cancelled or lost");
	}
	if (uj && (!json_is_integer(uj) || json_integer_value(uj) < 0 || json_integer_value(uj) > UINT32_MAX))
		return requests_fail("list: uid must be a user id");
	/* a user who is not root or an admin sees their own jobs alone, whatever they ask for */
	bool mine = !admin || uj;
	uid_t uid = !admin ? c->uid : uj ? (uid_t)json_integer_value(uj) : 0;
	if (!admin && uj && (uid_t)json_integer_value(uj) != c->uid)
		return json_pack("{s:b, s:[]}", "ok", 1, "jobs");
	bool table = json_is_true(json_object_get(req, "table"));
	size_t page = table ? TABLE_PAGE : LIST_PAGE;
	struct store_job *v;
	size_t n;
	size_t budget = table ? 4 * LIST_PAGE_BYTES : LIST_PAGE_BYTES;
	if (store_list(q->st, all, mine, uid, state, from > 0 ? from : 0, page, budget, &v, &n) < 0)
		return requests_fail("cannot read the queue: %s", store_errmsg(q->st));
	struct gpus_now now;
	round_gpus_now(q, &now);
	if (table) {
		struct table t = {0};
		size_t bytes = 0;
		for (size_t i = 0; i < n; i++) {
			table_row(q, &now, &v[i], &t);
			bytes += strlen(v[i].argv);
		}
		round_gpus_release(&now);
		/* the rows follow the answer's line, as many bytes as it says (clients.c) */
		json_t *ans = t.oom ? NULL : json_pack("{s:b, s:I}", "ok", 1, "rows_bytes", (json_int_t)t.len);
		/* a full page, by count or by bytes: there may be more */
		if (ans && n && (n == page || bytes >= budget))
			json_object_set_new(ans, "next", json_integer((json_int_t)v[n - 1].id));
		if (ans) {
			free(c->raw);
			c->raw = t.v;
			c->rawlen = t.len;
		} else {
			free(t.v);
		}
		free(t.memo_request);
		store_list_free(v, n);
		return ans ? ans : requests_fail("out of memory listing the queue");
	}
	json_t *a = json_array();
	size_t bytes = 0, i;
	for (i = 0; i < n; i++) {
		json_t *o = queue_job_json(&v[i]);
		add_pending_reason(q, &now, &v[i], o);
		json_array_append_new(a, o);
		bytes += strlen(v[i].argv);
	}
	round_gpus_release(&now);
	json_t *ans = json_pack("{s:b, s:o}", "ok", 1, "jobs", a);
	/* a full page, by count or by bytes: there may be more */
	if (ans && n && (n == LIST_PAGE || bytes >= budget))
		json_object_set_new(ans, "next", json_integer((json_int_t)v[n - 1].id));
	store_list_free(v, n);
	return ans;
}

/* the job, if c may see it; else an answer in *ans */
static int own_job(struct queue *q, const struct client *c, json_t *req, struct store_job *j, json_t **ans)
{
	json_int_t id = json_integer_value(json_object_get(req, "id"));
	int r = id > 0 ? store_get(q->st, id, j) : 0;
	if (r < 0) {
		*ans = requests_fail("cannot read the queue: %s", store_errmsg(q->st));
		return -1;
	}
	/* another user's job is "no such job": its existence is not theirs to learn */
	if (r == 0 || (j->uid != c->uid && !clients_is_admin(&q->clients, c->uid, c->gid))) {
		if (r)
			store_job_release(j);
		*ans = requests_fail("no job %lld (gpuctl queue lists yours)", (long long)id);
		return -1;
	}
	return 0;
}

static json_t *op_show(struct queue *q, const struct client *c, json_t *req)
{
	struct store_job j;
	json_t *ans;
	round_memo_forget(q);
	if (own_job(q, c, req, &j, &ans) < 0)
		return ans;
	char log[4300];
	queue_log_path(q, j.id, log, sizeof log);
	json_t *o = queue_job_json(&j);
	struct gpus_now now;
	round_gpus_now(q, &now);
	add_pending_reason(q, &now, &j, o);
	round_gpus_release(&now);
	/* a failed job's diagnosis (diagnose.c), when its log showed something known */
	char *dj = store_get_diagnosis(q->st, j.id);
	json_t *diag = dj ? json_loads(dj, 0, NULL) : NULL;
	free(dj);
	if (o && diag)
		json_object_set_new(o, "diagnosis", diag);
	else
		json_decref(diag);
	ans = json_pack("{s:b, s:o, s:s}", "ok", 1, "job", o, "log", log);
	store_job_release(&j);
	return ans;
}

static json_t *op_cancel(struct queue *q, const struct client *c, json_t *req)
{
	struct store_job j;
	json_t *ans;
	if (own_job(q, c, req, &j, &ans) < 0)
		return ans;
	char why[96];
	snprintf(why, sizeof why, "cancelled by uid %u", (unsigned)c->uid);
	if (j.state == STORE_QUEUED) {
		int r = store_cancel(q->st, j.id, why, clock_real_ms());
		ans = r == 1 ? json_pack("{s:b, s:s}", "ok", 1, "state", "cancelled")
			     : requests_fail("job %lld has just started or ended; look again", (long long)j.id);
	} else if (j.state == STORE_RUNNING) {
		/* the supervisor forwards TERM to the job's process group */
		ans = round_cancel(q, j.id) ? json_pack("{s:b, s:s}", "ok", 1, "state", "cancelling")
					    : requests_fail("job %lld is not running under this gpuctld", (long long)j.id);
	} else {
		ans = requests_fail("job %lld has already ended (%s)", (long long)j.id, store_state_name(j.state));
	}
	store_job_release(&j);
	q->round.dirty = q->round.deps_dirty = true;
	return ans;
}

/* gpuctl usage: everyone's GPU time (as Slurm's sreport shows it to everyone) */
static json_t *op_usage(struct queue *q, json_t *req)
{
	json_t *since = json_object_get(req, "since_ms");
	const char *by = json_string_value(json_object_get(req, "by"));
	if (!by)
		by = "user";
	if (strcmp(by, "user") && strcmp(by, "gpu") && strcmp(by, "day"))
		return requests_fail("invalid by '%.40s' (expected user, gpu or day)", by);
	if (since && (!json_is_integer(since) || json_integer_value(since) < 0))
		return requests_fail("invalid since_ms (expected ms since the epoch)");
	json_t *ans = usage_report(q, since ? json_integer_value(since) : 0, by, q->o.gpu_hour_price);
	return ans ? ans : requests_fail("cannot read the usage records: %s", store_errmsg(q->st));
}

/* what `gpuctl advise --here` needs to tell a wait: the queue's sizes and times, no one's job */
struct load {
	json_t *running, *queued;
	int64_t rt[50];
	size_t nrt;
};

static void load_job(void *arg, bool running, unsigned ngpus, int64_t started_ms)
{
	struct load *l = arg;
	if (running)
		json_array_append_new(l->running, json_pack("{s:I, s:I}", "gpus", (json_int_t)ngpus, "started_ms",
							     (json_int_t)started_ms));
	else
		json_array_append_new(l->queued, json_integer(ngpus));
}

static void load_runtime(void *arg, int64_t ms)
{
	struct load *l = arg;
	if (l->nrt < sizeof l->rt / sizeof l->rt[0])
		l->rt[l->nrt++] = ms;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static json_t *op_load(struct queue *q)
{
	struct load l = {.running = json_array(), .queued = json_array()};
	if (!l.running || !l.queued || store_load(q->st, 1000, load_job, load_runtime, &l) < 0) {
		json_decref(l.running);
		json_decref(l.queued);
		return requests_fail("cannot read the queue: %s", store_errmsg(q->st));
	}
	qsort(l.rt, l.nrt, sizeof l.rt[0], cmp_i64);
	json_t *median = l.nrt ? json_integer((json_int_t)(l.nrt % 2 ? l.rt[l.nrt / 2]
								     : (l.rt[l.nrt / 2 - 1] + l.rt[l.nrt / 2]) / 2))
			       : json_null();
	return json_pack("{s:b, s:I, s:o, s:o, s:o, s:I}", "ok", 1, "now_ms", (json_int_t)clock_real_ms(), "running",
			 l.running, "queued", l.queued, "runtime_ms", median, "runtimes", (json_int_t)l.nrt);
}

/* the GPUs as the latest sample has them: a client that leases through us names them by it,
 * without opening NVML (gputable.h) */
static json_t *op_gpus(struct queue *q)
{
	gc_snapshot snap = {0};
	if (sampler_snapshot(q->s, &snap) != GC_OK)
		return requests_fail("no sample of the GPUs yet");
	json_t *ans = gpu_table_json(&snap);
	gpu_snapshot_release(&snap);
	return ans ? ans : requests_fail("out of memory");
}

json_t *requests_answer(void *arg, struct client *c, const char *line)
{
	struct queue *q = arg;
	json_error_t e;
	json_t *req = json_loads(line, 0, &e);
	if (!req || !json_is_object(req)) {
		json_decref(req);
		return requests_fail("not a JSON object: %s", e.text);
	}
	const char *op = json_string_value(json_object_get(req, "op"));
	json_t *ans;
	if (!op)
		ans = requests_fail("no op");
	else if (strcmp(op, "submit") == 0)
		ans = op_submit(q, c, req);
	else if (strcmp(op, "list") == 0)
		ans = op_list(q, c, req);
	else if (strcmp(op, "show") == 0)
		ans = op_show(q, c, req);
	else if (strcmp(op, "cancel") == 0)
		ans = op_cancel(q, c, req);
	else if (strcmp(op, "usage") == 0)
		ans = op_usage(q, req);
	else if (strcmp(op, "load") == 0)
		ans = op_load(q);
	else if (strcmp(op, "gpus") == 0)
		ans = op_gpus(q);
	else if (!q->grants.on && (!strcmp(op, "lease") || !strcmp(op, "leases") || !strcmp(op, "ours") || !strcmp(op, "drop")))
		ans = requests_fail("this gpuctld is not the lease authority (gpuctld --authority)");
	else if (strcmp(op, "lease") == 0)
		ans = grants_take(q, c, req);
	else if (strcmp(op, "leases") == 0)
		ans = grants_list_json(q);
	else if (strcmp(op, "ours") == 0 || strcmp(op, "drop") == 0)
		ans = grants_ours_json(q, c, json_string_value(json_object_get(req, "uuid")), op[0] == 'd');
	else
		ans = requests_fail("unknown op '%s' (expected submit, list, show, cancel, usage, load, gpus, lease, "
				    "leases, ours or drop)", op);
	json_decref(req);
	return ans;
}
