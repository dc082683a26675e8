/*
 * here.c — this machine as an option for gpuctl advise (here.h).
 */
#include "advise/here.h"

#include "device/proc.h"
#include "gpuctl/gpuctl.h"
#include "jobs/gpuctld-ask.h"
#include "jobs/job.h"
#include "jobs/lease.h"
#include "jobs/select.h"
#include "util/datadir.h"
#include "util/errbuf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int here_plan(const advise_req *req, const struct here_machine *m, const spec_gpu *gpus, size_t ngpus,
	      cat_row *row, advise_plan *out, bool *found, char *err, size_t errlen)
{
	*found = false;
	if (!m->gpu || !m->ngpus)
		return GC_OK;
	/* one row of k GPUs on one node, for k = 1, 2, ...: the first that holds the workload */
	for (unsigned k = 1; k <= m->ngpus; k++) {
		memset(row, 0, sizeof *row);
		snprintf(row->cloud, sizeof row->cloud, "here");
		snprintf(row->instance, sizeof row->instance, "this machine");
		snprintf(row->acc, sizeof row->acc, "%s", m->gpu->name);
		snprintf(row->region, sizeof row->region, "local");
		row->count = k;
		row->mem_gib = m->host_gib;
		row->price = m->price >= 0 ? m->price * k : 0;
		row->spot = -1;
		catalog cat = {.rows = row, .n = 1, .cap = 1};
		advise_req r = *req;
		r.spot = false;
		r.clouds = r.regions = NULL;
		r.max_gpus = k; /* this node only: no "nodes" of it */
		r.nfabrics = 0;
		r.budget = m->price >= 0 ? r.budget : 0;
		advise_plan *plans = NULL;
		size_t np = 0;
		advise_need need;
		advise_skipped skipped;
		memset(&need, 0, sizeof need);
		memset(&skipped, 0, sizeof skipped);
		int rc = advise_rank(&r, gpus, ngpus, &cat, &plans, &np, &need, &skipped, err, errlen);
		if (rc != GC_OK)
			return rc;
		if (np) {
			*out = plans[0];
			out->row = row;
			if (m->price < 0)
				out->price_h = out->cost = -1;
			out->spot_h = out->spot_cost = -1;
			free(plans);
			*found = true;
			return GC_OK;
		}
		free(plans);
	}
	return GC_OK;
}

/* the pending releases of GPUs: (when, how many), kept as a small unsorted set */
struct release {
	int64_t at;
	unsigned n;
};

static int take_next(struct release *v, size_t *n, int64_t *at, unsigned *freed)
{
	if (!*n)
		return 0;
	size_t best = 0;
	for (size_t i = 1; i < *n; i++)
		if (v[i].at < v[best].at)
			best = i;
	*at = v[best].at;
	*freed = v[best].n;
	v[best] = v[--*n];
	return 1;
}

int64_t here_wait_ms(unsigned k, unsigned free_now, unsigned total, const struct here_job *running, size_t nrun,
		     const unsigned *queued, size_t nq, double runtime_ms, int64_t now_ms)
{
	if (k == 0 || k > total)
		return -1;
	if (free_now >= k && nq == 0)
		return 0;
	if (!(runtime_ms > 0))
		return -1;
	struct release *v = calloc(nrun + nq + 1, sizeof *v);
	if (!v)
		return -1;
	size_t nv = 0;
	int64_t run = (int64_t)runtime_ms;
	for (size_t i = 0; i < nrun; i++) {
		int64_t end = running[i].started_ms + run;
		v[nv++] = (struct release){.at = end > now_ms ? end : now_ms + run / 2, .n = running[i].ngpus};
	}
	unsigned freeg = free_now;
	int64_t t = now_ms;
	int64_t wait = -1;
	/* the jobs ahead, first come first served (the head holds what it needs: no one passes it) */
	for (size_t q = 0; q <= nq; q++) {
		unsigned want = q < nq ? queued[q] : k;
		if (want == 0 || want > total)
			continue; /* it can never start: gpuctld refuses it, nobody waits behind it */
		while (freeg < want) {
			int64_t at;
			unsigned got;
			if (!take_next(v, &nv, &at, &got))
				goto out; /* never enough: held by what will not end */
			freeg += got;
			if (at > t)
				t = at;
		}
		freeg -= want;
		if (q == nq) {
			wait = t - now_ms;
			break;
		}
		v[nv++] = (struct release){.at = t + run, .n = want};
	}
out:
	free(v);
	return wait;
}

/* ---- the answer: this machine beside the rentals ---- */

#define GB 1e9

/* host memory, GiB: MemTotal of /proc/meminfo; 0 unknown */
static double host_gib(void)
{
	FILE *f = fopen("/proc/meminfo", "re");
	double kb = 0;
	char line[256];
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "MemTotal: %lf kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb / 1024 / 1024;
}

static void fmt_wait(char *buf, size_t len, int64_t ms)
{
	long long min = (ms + 59999) / 60000;
	if (min < 90)
		snprintf(buf, len, "~%lld min", min < 1 ? 1 : min);
	else
		snprintf(buf, len, "~%.1f h", (double)ms / 3600e3);
}

/* "2x H100 (tp1, 41.3 GB each), 3.1 h, $15.50 at $2.50 per GPU-hour" */
static void plan_line(const advise_plan *p, double price, char *buf, size_t len)
{
	char t[32], c[96] = "";
	advise_fmt_hours(t, sizeof t, p->hours);
	if (price >= 0) {
		char m[32], pr[32];
		advise_fmt_money(m, sizeof m, p->cost);
		advise_fmt_money(pr, sizeof pr, price);
		snprintf(c, sizeof c, ", %s at %s/GPU-hour", m, pr);
	}
	snprintf(buf, len, "%ux %s (tp%u, %.1f GB each), %s%s", p->gpus, p->gpu->name, p->tp, p->mem.total / GB, t, c);
}

/* the wait in gpuctld's queue for k GPUs; -1 with *why when it cannot be told */
static int64_t queue_wait(unsigned k, unsigned free_now, unsigned total, char *why, size_t whylen, json_t *o)
{
	char err[512];
	int reached = 0;
	json_t *req = json_pack("{s:s}", "op", "load");
	json_t *ans = req ? gpuctld_ask(req, 2000, &reached, err, sizeof err) : NULL;
	json_decref(req);
	if (!ans) {
		if (reached)
			snprintf(why, whylen, "gpuctld's queue did not say: %.200s", err);
		else
			snprintf(why, whylen, "no gpuctld queue at %s to ask", gpuctld_socket_path());
		return -1;
	}
	json_t *run = json_object_get(ans, "running"), *q = json_object_get(ans, "queued");
	size_t nrun = json_array_size(run), nq = json_array_size(q);
	struct here_job *rv = calloc(nrun + 1, sizeof *rv);
	unsigned *qv = calloc(nq + 1, sizeof *qv);
	int64_t wait = -1;
	if (rv && qv) {
		for (size_t i = 0; i < nrun; i++) {
			json_t *e = json_array_get(run, i);
			json_int_t n = json_integer_value(json_object_get(e, "gpus"));
			rv[i] = (struct here_job){.ngpus = n > 0 && n < 100000 ? (unsigned)n : 0,
						  .started_ms = json_integer_value(json_object_get(e, "started_ms"))};
		}
		for (size_t i = 0; i < nq; i++) {
			json_int_t n = json_integer_value(json_array_get(q, i));
			qv[i] = n > 0 && n < 100000 ? (unsigned)n : 0;
		}
		json_t *rt = json_object_get(ans, "runtime_ms");
		double runtime = json_is_integer(rt) ? (double)json_integer_value(rt) : 0;
		wait = here_wait_ms(k, free_now, total, rv, nrun, qv, nq, runtime,
				    json_integer_value(json_object_get(ans, "now_ms")));
		json_object_set_new(o, "queue", json_pack("{s:I, s:I, s:O, s:I}", "running", (json_int_t)nrun, "queued",
							  (json_int_t)nq, "typical_runtime_ms", rt ? rt : json_null(),
							  "runtimes", json_integer_value(json_object_get(ans, "runtimes"))));
		if (wait < 0 && !json_is_integer(rt))
			snprintf(why, whylen, "no job has ended in gpuctld's queue yet to tell a typical runtime");
		else if (wait < 0)
			snprintf(why, whylen, "the GPUs it needs are held by what gpuctld's queue does not run "
					      "(interactive leases, other users' processes)");
		else {
			char r[32];
			advise_fmt_hours(r, sizeof r, runtime / 3600e3);
			snprintf(why, whylen, "%zu job%s running, %zu queued; a job runs %s typically (the last %lld)", nrun,
				 nrun == 1 ? "" : "s", nq, r, (long long)json_integer_value(json_object_get(ans, "runtimes")));
		}
	}
	free(rv);
	free(qv);
	json_decref(ans);
	return wait;
}

int here_answer(const struct advise_result *res, gc_ctx *ctx, const char *unseen, double price, json_t **out, bool *fits,
		char *err, size_t errlen)
{
	*fits = false;
	*out = NULL;
	json_t *o = json_object();
	if (!o) {
		errbuf_set(err, errlen, "out of memory");
		return GC_ENOMEM;
	}
	*out = o;
	char text[1536], why0[512];
	struct job_request r;
	job_request_init(&r);
	r.jg.sel.n = 1;
	r.jg.n_given = true;
	r.peek_only = true;
	r.ctx_borrowed = true;
	if (!ctx || job_request_prepare(&r, ctx, why0, sizeof why0) != GC_OK) {
		const char *why = ctx ? why0 : unseen ? unseen : "no GPU context";
		char safe[600];
		proc_sanitize(safe, sizeof safe, why, strlen(why));
		snprintf(text, sizeof text, "here: this machine's GPUs cannot be seen: %s", safe);
		json_object_set_new(o, "kind", json_string("no-gpus"));
		json_object_set_new(o, "text", json_string(text));
		job_request_release(&r);
		return GC_OK;
	}
	/* the machine: its first GPU's model, and how many GPUs of it could serve a job */
	spec_sky *names = NULL;
	size_t nnames = 0;
	char path[4096];
	const spec_gpu *gpu = NULL;
	const char *gname = NULL;
	unsigned total = 0;
	int rc;
	if ((rc = datadir_file("nvml-gpus.csv", path, sizeof path, err, errlen)) != GC_OK ||
	    (rc = specs_load_nvml(path, &names, &nnames, err, errlen)) != GC_OK) {
		job_request_release(&r);
		return rc;
	}
	for (size_t i = 0; i < r.snap.ngpus; i++) {
		const gc_gpu *x = &r.snap.gpus[i];
		if (select_gpu_lost(x) || select_gpu_mig(x))
			continue;
		if (!gname)
			gname = x->name;
		if (strcmp(x->name, gname) == 0)
			total++;
	}
	if (gname)
		gpu = specs_gpu_for_nvml(names, nnames, res->gpus, res->ngpus, gname);
	free(names);
	char gsafe[100];
	proc_sanitize(gsafe, sizeof gsafe, gname ? gname : "", gname ? strlen(gname) : 0);
	json_object_set_new(o, "machine", json_pack("{s:s, s:I, s:s?}", "gpu_name", gsafe, "gpus", (json_int_t)total,
						    "gpu", gpu ? gpu->name : NULL));
	if (price >= 0)
		json_object_set_new(o, "price_per_gpu_hour", json_real(price));
	if (!gname || !gpu) {
		snprintf(text, sizeof text, gname ? "here: this machine's GPUs (%s) are not in gpuctl's GPU table "
						    "(data/nvml-gpus.csv, data/gpus.csv): not planned"
						  : "here: no usable GPU on this machine", gsafe);
		json_object_set_new(o, "kind", json_string(gname ? "unknown-gpu" : "no-gpus"));
		json_object_set_new(o, "text", json_string(text));
		job_request_release(&r);
		return GC_OK;
	}
	struct here_machine m = {.gpu = gpu, .ngpus = total, .host_gib = host_gib(), .price = price};
	cat_row row;
	advise_plan p;
	bool found;
	if ((rc = here_plan(&res->req, &m, res->gpus, res->ngpus, &row, &p, &found, err, errlen)) != GC_OK) {
		job_request_release(&r);
		return rc;
	}
	if (!found) {
		/* how many of these GPUs it would take (on one node, at most 64), and the cheapest rental */
		char need[160] = "", rent[300] = "";
		struct here_machine more = m;
		more.ngpus = 64;
		advise_plan mp;
		bool mfound = false;
		if ((rc = here_plan(&res->req, &more, res->gpus, res->ngpus, &row, &mp, &mfound, err, errlen)) != GC_OK) {
			job_request_release(&r);
			return rc;
		}
		if (mfound)
			snprintf(need, sizeof need, "needs %ux %s (%.1f GB each)", mp.gpus, gpu->name, mp.mem.total / GB);
		else
			snprintf(need, sizeof need, "more than 64 %s on one node", gpu->name);
		if (res->np) {
			const advise_plan *c = &res->plans[0];
			char tot[32];
			advise_fmt_money(tot, sizeof tot, res->req.spot ? c->spot_cost : c->cost);
			snprintf(rent, sizeof rent, "; cheapest rental: %s %s in %s, %ux %s, %s", c->row->cloud,
				 c->row->instance, c->row->region, c->gpus, c->gpu->name, tot);
		} else {
			snprintf(rent, sizeof rent, "; no rental in the catalog fits either");
		}
		snprintf(text, sizeof text, "here: does not fit: %s; this machine has %u (%.0f GB each)%s", need, total,
			 gpu->mem / GB, rent);
		json_object_set_new(o, "kind", json_string("no-fit"));
		json_object_set_new(o, "text", json_string(text));
		job_request_release(&r);
		return GC_OK;
	}
	*fits = true;
	char pl[256];
	plan_line(&p, price, pl, sizeof pl);
	json_object_set_new(o, "plan", json_pack("{s:s, s:I, s:I, s:f, s:f, s:f}", "gpu", gpu->name, "gpus",
						 (json_int_t)p.gpus, "tp", (json_int_t)p.tp, "mem_per_gpu_bytes", p.mem.total,
						 "hours", p.hours, "cost", p.cost));
	/* free now, for this user, as gpuctl pick would find them: k GPUs with the memory the plan needs */
	struct lease_dir *d = NULL;
	int orc = lease_dir_open(&d, NULL, false, err, errlen);
	if (orc != GC_OK && orc != GC_ENOTFOUND) {
		job_request_release(&r);
		return orc;
	}
	r.jg.sel.n = p.gpus;
	r.jg.sel.min_free_mem = (uint64_t)ceil(p.mem.total);
	/* inside an ancestor's lease the request becomes that lease's GPUs: room for every GPU */
	unsigned *chosen = calloc(r.ngpus + p.gpus + 1, sizeof *chosen);
	char why[2048] = "";
	struct lease_info me;
	char *argv0[] = {(char *)"(gpuctl advise --here)", NULL};
	lease_info_self(&me, NULL, argv0, "");
	struct lease *l = NULL;
	int tr = chosen ? job_request_try(&r, d, &me, &l, chosen, why, sizeof why) : GC_ENOMEM;
	lease_release(l);
	if (tr == GC_OK) {
		bool sel[4096] = {false};
		for (unsigned i = 0; i < r.jg.sel.n; i++)
			if (chosen[i] < 4096)
				sel[chosen[i]] = true;
		char list[512];
		select_index_list(sel, r.ngpus < 4096 ? r.ngpus : 4096, list, sizeof list);
		snprintf(text, sizeof text, "here: fits on GPU%s %s here, free now: %s", p.gpus > 1 ? "s" : "", list, pl);
		json_object_set_new(o, "kind", json_string("free-now"));
		json_object_set_new(o, "free_gpus", json_string(list));
	} else {
		unsigned free_now = 0;
		for (size_t i = 0; i < r.ngpus; i++)
			free_now += r.why && r.why[i] == SELECT_OK;
		char qwhy[400] = "";
		int64_t wait = queue_wait(p.gpus, free_now, total, qwhy, sizeof qwhy, o);
		if (wait >= 0) {
			char w[32];
			fmt_wait(w, sizeof w, wait);
			snprintf(text, sizeof text, "here: fits here after %s in gpuctld's queue: %s (%s)", w, pl, qwhy);
			json_object_set_new(o, "kind", json_string("queue"));
			json_object_set_new(o, "wait_s", json_real((double)wait / 1000));
		} else {
			/* why not, counted by reason (each GPU's in full in the JSON's "why") */
			static const struct {
				enum select_why w;
				const char *what;
			} reasons[] = {{SELECT_LEASED, "leased"}, {SELECT_MEMORY, "short of the free memory"},
				       {SELECT_OTHER_USER, "in use by another user"}, {SELECT_UTIL, "busy"},
				       {SELECT_QUARANTINED, "quarantined"}};
			char sum[300] = "";
			for (size_t k = 0; k < sizeof reasons / sizeof reasons[0]; k++) {
				unsigned cnt = 0;
				for (size_t i = 0; r.why && i < r.ngpus; i++)
					cnt += r.why[i] == reasons[k].w;
				if (cnt)
					snprintf(sum + strlen(sum), sizeof sum - strlen(sum), "%s%u %s", sum[0] ? ", " : "",
						 cnt, reasons[k].what);
			}
			snprintf(text, sizeof text, "here: fits on %s, none free now (%s); no wait estimate: %s", pl,
				 sum[0] ? sum : "busy", qwhy);
			json_object_set_new(o, "kind", json_string("busy"));
			json_object_set_new(o, "why", json_string(why));
		}
	}
	json_object_set_new(o, "text", json_string(text));
	free(chosen);
	lease_dir_close(d);
	job_request_release(&r);
	return GC_OK;
}
