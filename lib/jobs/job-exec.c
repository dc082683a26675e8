/*
 * job-exec.c — the life of a job (exec.h): lease, run, explain, plan a
 * retry, release; and the one retry rule, job_retry_plan, which gpuctld's
 * queue applies too. Never prints.
 */
#include "jobs/exec.h"

#include "diagnose/explain.h"
#include "gpuctl/gpuctl.h"
#include "jobs/outtail.h"
#include "util/datadir.h"
#include "util/errbuf.h"
#include "util/units.h"

#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* cur with opt added (a list of key:value pairs, comma-separated), into buf */
static void alloc_conf_with(const char *cur, const char *opt, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s", cur && *cur ? cur : "", cur && *cur ? "," : "", opt);
}

void job_retry_plan(const struct job_opts *jo, const struct job_retry_in *in, struct job_retry *out)
{
	memset(out, 0, sizeof *out);
	const char *cls = in->cls;
	bool fix_conf = strcmp(cls, "alloc-conf-expandable-segments-unsupported") == 0;
	out->cls = fix_conf ? "oom-fragmentation" : cls;
	if (!job_retry_listed(jo, out->cls))
		return;
	if (in->retries >= jo->sv.max_restarts) {
		snprintf(out->msg, sizeof out->msg, "not retried: %s again, and --max-restarts %u retries were spent", cls,
			 jo->sv.max_restarts);
		return;
	}
	char what[600];
	enum job_retry_how how;
	if (strcmp(cls, "oom-too-big") == 0) {
		if (!jo->bigger) {
			snprintf(out->msg, sizeof out->msg, "not retried: oom-too-big moves to bigger GPUs only with --bigger");
			return;
		}
		if (in->gpus_named) {
			snprintf(out->msg, sizeof out->msg, "not retried: %s names the GPUs, and oom-too-big needs bigger ones",
				 in->gpus_named);
			return;
		}
		uint64_t need = (uint64_t)(in->need_mib * 1048576.0) + (256ull << 20); /* and a margin for the context */
		if (in->need_mib <= 0 || need <= in->min_free || need > in->largest) {
			snprintf(out->msg, sizeof out->msg,
				 "not retried: it needs about %.1f GiB on one GPU and the largest here has %.1f GiB (gpuctl "
				 "advise tells what would fit)", (double)need / 1073741824.0, (double)in->largest / 1073741824.0);
			return;
		}
		out->min_free = need;
		how = JOB_RETRY_BIGGER;
		snprintf(what, sizeof what, "on GPUs with at least %.1f GiB free", (double)need / 1073741824.0);
	} else if (strcmp(cls, "oom-fragmentation") == 0 || fix_conf) {
		const char *cur = in->alloc_conf;
		if (fix_conf) {
			/* PyTorch before 2.1: take our expandable_segments back out, keep the user's */
			char base[512] = "";
			for (const char *p = cur ? cur : ""; *p;) {
				size_t k = strcspn(p, ",");
				if (strncmp(p, "expandable_segments:", 20) != 0)
					snprintf(base + strlen(base), sizeof base - strlen(base), "%s%.*s", base[0] ? "," : "",
						 (int)k, p);
				p += k + (p[k] == ',');
			}
			if (strstr(base, "max_split_size_mb")) {
				snprintf(out->msg, sizeof out->msg, "not retried: this PyTorch refuses expandable_segments and "
					 "max_split_size_mb is set already");
				return;
			}
			alloc_conf_with(base, "max_split_size_mb:128", out->alloc_conf, sizeof out->alloc_conf);
		} else {
			if (cur && strstr(cur, "expandable_segments")) {
				snprintf(out->msg, sizeof out->msg,
					 "not retried: PYTORCH_CUDA_ALLOC_CONF already sets expandable_segments (%.400s)", cur);
				return;
			}
			alloc_conf_with(cur, "expandable_segments:True", out->alloc_conf, sizeof out->alloc_conf);
		}
		how = JOB_RETRY_IN_PLACE;
		snprintf(what, sizeof what, "with PYTORCH_CUDA_ALLOC_CONF=%.500s", out->alloc_conf);
	} else {
		if (in->gpus_named && strcmp(in->gpus_named, "--gpus") == 0) {
			snprintf(out->msg, sizeof out->msg, "not retried: --gpus names the GPUs, and %s needs others", cls);
			return;
		}
		if (in->left < in->want) {
			snprintf(out->msg, sizeof out->msg,
				 "not retried: %s, and no %u other GPUs are left here (those it failed on are left out)", cls,
				 in->want);
			return;
		}
		how = JOB_RETRY_ELSEWHERE;
		snprintf(what, sizeof what, "on other GPUs than %.200s", in->failed_on ? in->failed_on : "these");
	}
	out->how = how;
	snprintf(out->msg, sizeof out->msg, "retrying (%u of %u, --retry-on %s): %s", in->retries + 1,
		 jo->sv.max_restarts, out->cls, what);
}

void job_exec_init(struct job_exec *x)
{
	memset(x, 0, sizeof *x);
	x->timeout_ms = -1;
	x->go_fd = -1;
	x->out_log = -1;
	x->cloud = SPOT_NONE;
}

void job_exec_setup(struct job_exec *x, struct job_request *r, struct job_opts *jo, struct job_env *env)
{
	job_request_init(r);
	job_opts_init(jo);
	job_env_init(env);
	job_exec_init(x);
	x->r = r;
	x->jo = jo;
	x->env = env;
}

void job_exec_release(struct job_exec *x)
{
	job_env_free(x->env);
	job_request_release(x->r);
}

static const struct option exec_options[] = {
	JOB_GPU_OPTIONS,
	JOB_SUPERVISOR_OPTIONS,
	{"n", required_argument, NULL, 'n'},
	{"wait", optional_argument, NULL, 'w'},
	{"name", required_argument, NULL, 'N'},
};

int job_exec_option(struct job_exec *x, const char *opt, char *err, size_t errlen)
{
	const char *eq = strchr(opt, '=');
	size_t len = eq ? (size_t)(eq - opt) : strlen(opt);
	const struct option *o = NULL;
	for (size_t i = 0; opt[0] == '-' && opt[1] == '-' && i < sizeof exec_options / sizeof exec_options[0]; i++)
		if (strlen(exec_options[i].name) == len - 2 && strncmp(exec_options[i].name, opt + 2, len - 2) == 0)
			o = &exec_options[i];
	if (!o) {
		errbuf_set(err, errlen, "unknown option '%.64s' (the options of gpuctl run, as --NAME or --NAME=VALUE)", opt);
		return GC_EINVAL;
	}
	if ((o->has_arg == no_argument && eq) || (o->has_arg == required_argument && !eq)) {
		errbuf_set(err, errlen, "option '%.64s' %s", opt, eq ? "takes no value" : "needs a value (--NAME=VALUE)");
		return GC_EINVAL;
	}
	const char *arg = eq ? eq + 1 : NULL;
	if (o->val == 'w') {
		x->wait = true;
		x->timeout_ms = -1;
		return arg ? units_parse_duration("--wait", arg, &x->timeout_ms, err, errlen) : GC_OK;
	}
	if (o->val == 'N') {
		x->name = arg;
		return GC_OK;
	}
	int rc = job_gpu_option(&x->r->jg, o->val, arg, err, errlen);
	return rc != GC_ENOTFOUND ? rc : job_option(x->jo, o->val, arg, err, errlen);
}

static void tell(struct job_exec *x, const char *line)
{
	if (x->log)
		x->log(x->arg, line);
}

/*
 * After a failed attempt: its class, from the last output the tail kept
 * (cls "" when nothing is recognised), and the findings told. need_mib:
 * what an oom-too-big needed.
 */
static void explain_failure(struct job_exec *x, struct outtail *tail, const struct supervise_result *sv, char *cls,
			    size_t clslen, double *need_mib)
{
	cls[0] = '\0';
	*need_mib = 0;
	char *text = NULL;
	size_t len = outtail_text(tail, &text);
	char dir[4200], err[512];
	struct explain_db *db = NULL;
	struct explain_result r = {0};
	if (!len || datadir_signatures(dir, sizeof dir, err, sizeof err) != GC_OK ||
	    explain_db_load(&db, dir, err, sizeof err) != GC_OK || explain_scan_buf(db, text, len, &r) != GC_OK ||
	    r.n == 0)
		goto out;
	explain_class(&r.findings[r.root], cls, clslen);
	*need_mib = explain_need_mib(&r.findings[r.root]);
	char how[64];
	if (sv->end == SUPERVISE_END_OOM)
		snprintf(how, sizeof how, "killed by the kernel's OOM killer");
	else if (sv->status > 128)
		snprintf(how, sizeof how, "ended by signal %d", sv->status - 128);
	else
		snprintf(how, sizeof how, "exit status %d", sv->status);
	char *block = explain_summary_text(&r, how, 3);
	if (block && x->report)
		x->report(x->arg, block);
	else if (block)
		tell(x, block);
	free(block);
out:
	explain_result_free(&r);
	explain_db_free(db);
	free(text);
}

/* the plan after a failure of class cls on chosen[] */
static void plan(struct job_exec *x, const char *cls, const unsigned *chosen, double need_mib, struct job_retry *p)
{
	struct job_request *r = x->r;
	struct job_retry_in in = {
		.cls = cls, .retries = x->retries, .need_mib = need_mib, .min_free = r->jg.sel.min_free_mem,
		.want = r->jg.sel.n,
		.gpus_named = r->placed_spec ? "gpuctld's placement" : r->jg.gpus_spec ? "--gpus" : NULL,
	};
	const char *cur = job_env_get(x->env, "PYTORCH_CUDA_ALLOC_CONF");
	in.alloc_conf = cur ? cur : getenv("PYTORCH_CUDA_ALLOC_CONF");
	for (size_t i = 0; i < r->snap.ngpus; i++)
		if (r->snap.gpus[i].mem_total > in.largest)
			in.largest = r->snap.gpus[i].mem_total;
	char list[256] = "";
	for (unsigned i = 0; i < r->jg.sel.n; i++)
		snprintf(list + strlen(list), sizeof list - strlen(list), "%s%u", i ? "," : "", chosen[i]);
	in.failed_on = list;
	for (size_t i = 0; i < r->ngpus; i++) {
		bool failed = false;
		for (unsigned k = 0; k < r->jg.sel.n; k++)
			failed |= chosen[k] == i;
		in.left += !failed && !(r->exclude && r->exclude[i]);
	}
	if (r->placed_spec)
		in.left = r->jg.sel.n; /* gpuctld knows what is left: it decides again with this rule */
	job_retry_plan(x->jo, &in, p);
}

/* apply a plan to the request: what the next attempt asks for */
static bool apply(struct job_exec *x, const struct job_retry *p, const unsigned *chosen)
{
	struct job_request *r = x->r;
	switch (p->how) {
	case JOB_RETRY_IN_PLACE:
		return job_env_set(x->env, "PYTORCH_CUDA_ALLOC_CONF", p->alloc_conf) == GC_OK;
	case JOB_RETRY_BIGGER:
		r->jg.sel.min_free_mem = p->min_free;
		return true;
	case JOB_RETRY_ELSEWHERE:
		if (r->placed_spec)
			return false; /* gpuctld placed it: it queues the job again without them */
		r->jg.sel.exclude = r->exclude; /* with or without --exclude's own */
		for (unsigned i = 0; i < r->jg.sel.n && r->exclude; i++)
			if (chosen[i] < r->ngpus)
				r->exclude[chosen[i]] = true;
		return r->exclude != NULL;
	default:
		return false;
	}
}

static void record(struct job_exec *x, const unsigned *chosen, const struct job_run_result *res, const char *cls,
		   enum job_retry_how how)
{
	size_t k = x->nattempts++;
	if (k >= JOB_ATTEMPTS_MAX)
		return;
	struct job_attempt *a = &x->attempts[k];
	memset(a, 0, sizeof *a);
	for (unsigned i = 0; i < x->r->jg.sel.n; i++)
		snprintf(a->gpus + strlen(a->gpus), sizeof a->gpus - strlen(a->gpus), "%s%u", i ? "," : "", chosen[i]);
	a->ran = res->ran;
	a->status = res->sv.status;
	snprintf(a->cls, sizeof a->cls, "%s", cls);
	a->retry = how;
}

int job_exec(struct job_exec *x, char *err, size_t errlen)
{
	struct job_request *r = x->r;
	struct lease_dir *d = NULL;
	int rc = lease_dir_open(&d, NULL, true, err, errlen);
	if (rc != GC_OK)
		return rc;
	char desc[300];
	job_request_describe(r, desc, sizeof desc);
	struct lease_info me;
	lease_info_self(&me, x->name, x->jo->sv.argv, desc);
	me.want = r->jg.n_auto || r->jg.sel.n == 0 ? 1 : (unsigned)r->jg.sel.n;
	/* -n auto may take every GPU */
	unsigned *chosen = calloc(r->ngpus + r->jg.sel.n + 1, sizeof *chosen);
	if (!chosen) {
		lease_dir_close(d);
		errbuf_set(err, errlen, "out of memory");
		return GC_ENOMEM;
	}
	x->cls[0] = '\0';
	bool elsewhere;
	do {
		elsewhere = false;
		struct lease *l = NULL;
		struct lease_ticket *t = NULL;
		char why[2048] = "";
		rc = job_request_acquire(r, d, &me, x->wait, x->timeout_ms, x->stop, &l, &t, chosen, why, sizeof why);
		if (r->note[0]) {
			tell(x, r->note); /* -n auto took fewer than were free */
			r->note[0] = '\0';
		}
		if (rc == GC_EBUSY)
			errbuf_set(err, errlen, "%s not available now: %s", desc, why);
		else if (rc == GC_ETIMEDOUT)
			errbuf_set(err, errlen, "gave up waiting for %s after the --wait timeout: %s", desc, why);
		else if (rc != GC_OK && rc != GC_ECANCELED)
			errbuf_set(err, errlen, "%s", why);
		if (l) {
			char eerr[512];
			if (job_env_gpus(x->env, r, chosen, eerr, sizeof eerr) != GC_OK) {
				errbuf_set(err, errlen, "%s", eerr);
				rc = GC_EINVAL;
			} else if (x->ready && (x->ready_rc = x->ready(x->arg, chosen, d)) != 0) {
				rc = GC_ECANCELED;
			}
			for (bool here = rc == GC_OK; here;) {
				here = false;
				struct job_run run = {
					.r = r, .chosen = chosen, .lease = l, .d = d, .ticket = &t, .jo = x->jo,
					.cloud = x->cloud, .env = x->env, .go_fd = x->go_fd, .stop = x->stop,
					.open_ctx = x->open_ctx, .log = x->log, .arg = x->arg,
				};
				/* the job's output passes through the tail keeper, so that a failure can be explained */
				struct outtail *tail = NULL;
				if (!x->jo->no_explain &&
				    (x->out_log >= 0 ? outtail_open_log(&tail, OUTTAIL_KEEP, x->out_log, x->out_sync, x->arg,
									 eerr, sizeof eerr)
						     : outtail_open(&tail, OUTTAIL_KEEP, x->jo->retry_on != NULL, eerr,
								    sizeof eerr)) != GC_OK)
					errbuf_log(x->log, x->arg, "%s: the job runs, but a failure will not be explained", eerr);
				x->jo->sv.tail = tail;
				struct job_run_result res;
				memset(&res, 0, sizeof res);
				int jr = job_run(&run, &res, eerr, sizeof eerr);
				x->jo->sv.tail = NULL;
				char cls[64] = "";
				double need_mib = 0;
				if (tail && jr == GC_OK && res.ran && res.sv.status != 0 && res.sv.end != SUPERVISE_END_INTERRUPTED)
					explain_failure(x, tail, &res.sv, cls, sizeof cls, &need_mib);
				outtail_close(tail);
				struct job_retry p = {.how = JOB_RETRY_NO};
				if (cls[0] && !(x->stop && *x->stop)) {
					plan(x, cls, chosen, need_mib, &p);
					if (p.how == JOB_RETRY_ELSEWHERE && r->placed_spec)
						tell(x, "not retried here: gpuctld placed this queued job's GPUs; it queues the job "
						       "again without them");
					else if (p.msg[0])
						tell(x, p.msg);
					if (!apply(x, &p, chosen))
						p.how = JOB_RETRY_NO;
					else
						x->retries++;
				}
				if (cls[0])
					snprintf(x->cls, sizeof x->cls, "%s", cls);
				record(x, chosen, &res, cls, p.how);
				x->go_fd = run.go_fd; /* -1 once job_run has read it */
				x->no_go = res.no_go;
				x->ran |= res.ran;
				x->end = res.sv.end;
				x->status = res.sv.status;
				rc = jr;
				if (jr != GC_OK && jr != GC_ECANCELED)
					errbuf_set(err, errlen, "%s", eerr);
				here = p.how == JOB_RETRY_IN_PLACE;       /* the same GPUs, still leased */
				elsewhere = p.how == JOB_RETRY_ELSEWHERE || p.how == JOB_RETRY_BIGGER;
			}
			lease_release(l);
		}
		lease_queue_leave(t);
	} while (elsewhere && !(x->stop && *x->stop));
	free(chosen);
	lease_dir_close(d);
	return rc;
}

/* ---- gc_run_json: the job core for programs on libgpuctl (Python's gpuctl.run) ---------------- */

struct say_to {
	gc_say_fn say;
	void *arg;
};

/* a line of the job's, as gpuctl run says it: "gpuctl: LINE\n" */
static void public_log(void *arg, const char *line)
{
	const struct say_to *s = arg;
	size_t n = strlen(line) + 10;
	char *t = malloc(n);
	if (!t)
		return;
	snprintf(t, n, "gpuctl: %s\n", line);
	s->say(s->arg, t);
	free(t);
}

static void public_report(void *arg, const char *text)
{
	const struct say_to *s = arg;
	s->say(s->arg, text);
}

static const char *retry_name(enum job_retry_how h)
{
	switch (h) {
	case JOB_RETRY_IN_PLACE: return "in-place";
	case JOB_RETRY_ELSEWHERE: return "elsewhere";
	case JOB_RETRY_BIGGER: return "bigger";
	default: return NULL;
	}
}

static json_t *attempts_json(const struct job_exec *x)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < x->nattempts && i < JOB_ATTEMPTS_MAX; i++) {
		const struct job_attempt *t = &x->attempts[i];
		json_t *g = json_array();
		for (const char *p = t->gpus; g && *p;) {
			char *end;
			unsigned long v = strtoul(p, &end, 10);
			if (end == p)
				break;
			json_array_append_new(g, json_integer((json_int_t)v));
			p = *end == ',' ? end + 1 : end;
		}
		const char *r = retry_name(t->retry);
		json_array_append_new(a, json_pack("{s:o, s:b, s:i, s:s?, s:s?}", "gpus", g ? g : json_array(), "ran", t->ran,
						   "exit_code", t->status, "class", t->cls[0] ? t->cls : NULL, "retry", r));
	}
	return a;
}

int gc_run_json(gc_ctx *ctx, const char *const *options, const char *const *argv, gc_say_fn say, void *say_arg,
		char **json, char *err, size_t errlen)
{
	if (json)
		*json = NULL;
	if (!ctx || !argv || !argv[0] || !json) {
		errbuf_set(err, errlen, "invalid call (a context, a command of at least one word, a place for the result)");
		return GC_EINVAL;
	}
	struct job_request r;
	struct job_opts jo;
	struct job_env env;
	struct job_exec x;
	job_exec_setup(&x, &r, &jo, &env);
	struct say_to to = {.say = say, .arg = say_arg};
	if (say) {
		x.log = public_log;
		x.report = public_report;
		x.arg = &to;
	}
	r.ctx_borrowed = true;
	jo.sv.argv = (char **)argv;
	int rc = GC_OK;
	for (size_t i = 0; options && options[i] && rc == GC_OK; i++)
		rc = job_exec_option(&x, options[i], err, errlen);
	if (rc == GC_OK)
		rc = job_opts_resolve(&jo, true, &x.cloud, err, errlen);
	if (rc == GC_OK)
		rc = job_request_prepare(&r, ctx, err, errlen);
	if (rc == GC_OK && (rc = job_exec(&x, err, errlen)) == GC_EBUSY)
		rc = GC_ENOTNOW; /* the public word for it, as gc_lease_wait's */
	if (rc == GC_OK) {
		json_t *o = json_pack("{s:i, s:b, s:i, s:s?, s:o}", "exit_code", x.status, "ran", x.ran, "retries",
				      (int)x.retries, "class", x.cls[0] ? x.cls : NULL, "attempts", attempts_json(&x));
		*json = o ? json_dumps(o, JSON_COMPACT) : NULL;
		json_decref(o);
		if (!*json) {
			errbuf_set(err, errlen, "out of memory");
			rc = GC_ENOMEM;
		}
	}
	job_exec_release(&x);
	return rc;
}
