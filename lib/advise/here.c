/*
 * here.c — this machine as an option for gpuctl advise (here.h).
 */
#include "advise/here.h"

#include "gpuctl/gpuctl.h"
#include "util/errbuf.h"

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
