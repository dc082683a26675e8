/*
 * job.c — choose and lease a job's GPUs (job.h), and the public gc_pick /
 * gc_lease_* built on it.
 */
#include "jobs/job.h"

#include "util/errbuf.h"
#include "jobs/quarantine.h"
#include "jobs/visible.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* how often a choice is made again after losing a GPU to another process's lease */
#define JOB_RACE_TRIES 8

int job_acquire(const gc_snapshot *s, const struct select_request *r, struct lease_dir *d,
		const struct lease_info *me, unsigned *chosen, struct lease **out, char *err, size_t errlen)
{
	size_t n = s->ngpus;
	const char **uuids = calloc(n ? n : 1, sizeof *uuids);
	const char **take = calloc(r->n ? r->n : 1, sizeof *take);
	bool *leased = calloc(n ? n : 1, sizeof *leased);
	bool *marked = calloc(n ? n : 1, sizeof *marked);
	struct select_request rq = *r;
	int rc = GC_ENOMEM;
	if (!uuids || !take || !leased || !marked) {
		errbuf_set(err, errlen, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < n; i++)
		uuids[i] = s->gpus[i].st[GC_V_UUID] == GC_ST_OK ? s->gpus[i].uuid : NULL;
	/* a quarantined GPU goes to nobody (quarantine.h) */
	if (d && (rc = quarantine_marked(d, uuids, n, marked)) < 0) {
		errbuf_set(err, errlen, "cannot read the quarantine marks in %s", lease_dir_path(d));
		goto done;
	}
	rq.quarantined = d ? marked : r->quarantined;
	for (int tries = 0; tries < JOB_RACE_TRIES; tries++) {
		if (!d)
			memset(leased, 0, n * sizeof *leased); /* lease_held clears it itself */
		else if ((rc = lease_held(d, uuids, n, leased)) < 0) {
			errbuf_set(err, errlen, "cannot read the leases in %s", lease_dir_path(d));
			goto done;
		}
		rc = select_pick(s, &rq, leased, chosen);
		if (rc == GC_ENOTNOW)
			errbuf_set(err, errlen, "fewer than %u GPU%s fit the request now", r->n, r->n > 1 ? "s" : "");
		else if (rc != GC_OK)
			errbuf_set(err, errlen, "%s", gc_strerror(rc));
		if (rc != GC_OK || !out || !d)
			goto done;
		for (unsigned k = 0; k < r->n; k++)
			if (!(take[k] = uuids[chosen[k]])) {
				errbuf_set(err, errlen, "GPU %u has no UUID to lease it by", chosen[k]);
				rc = GC_EINVAL;
				goto done;
			}
		size_t busy = 0;
		rc = lease_try(d, take, r->n, me, out, &busy, err, errlen);
		if (rc != GC_EBUSY)
			goto done;
		errbuf_set(err, errlen, "GPU %u was leased by another process each time it was chosen", chosen[busy]);
	}
done:
	free(uuids);
	free(take);
	free(leased);
	free(marked);
	return rc;
}

/* the public request, read as far as its size says, as select.c takes it */
static int request_from(const gc_request *pub, struct select_request *r)
{
	gc_request q;
	memset(&q, 0, sizeof q);
	if (!pub || pub->size < offsetof(gc_request, n) + sizeof pub->n)
		return GC_EINVAL;
	memcpy(&q, pub, pub->size < sizeof q ? pub->size : sizeof q);
	if (q.n == 0 || q.max_util > 100 || q.max_util < -1)
		return GC_EINVAL;
	memset(r, 0, sizeof *r);
	r->n = q.n;
	r->min_free_mem = q.min_free_mem;
	r->max_util = pub->size >= offsetof(gc_request, model) ? q.max_util : -1;
	r->model = q.model;
	r->shared = q.shared;
	r->uid = getuid();
	return GC_OK;
}

int gc_pick(const gc_snapshot *snap, const gc_request *req, const char *state_dir, unsigned *out)
{
	struct select_request r;
	if (!snap || !out || request_from(req, &r) != GC_OK)
		return GC_EINVAL;
	struct lease_dir *d = NULL;
	char err[512];
	int rc = lease_dir_open(&d, state_dir, false, err, sizeof err);
	if (rc != GC_OK && rc != GC_ENOTFOUND)
		return rc;
	rc = job_acquire(snap, &r, d, NULL, out, NULL, err, sizeof err);
	lease_dir_close(d);
	return rc;
}

struct gc_lease {
	struct lease_dir *dir;
	struct lease *lease;
	size_t n;
	unsigned *gpus;
	char (*uuids)[LEASE_UUID_MAX];
};

/* a lease for n GPUs, none taken yet (its dir and lease NULL); NULL when out of memory */
static gc_lease *lease_new(unsigned n)
{
	gc_lease *l = calloc(1, sizeof *l);
	if (l && (!(l->gpus = calloc(n, sizeof *l->gpus)) || !(l->uuids = calloc(n, sizeof *l->uuids)))) {
		gc_lease_release(l);
		l = NULL;
	}
	return l;
}

/* the lease's name in `gpuctl leases`, if the caller's request is new enough to carry one */
static const char *request_name(const gc_request *req)
{
	return req->size >= offsetof(gc_request, name) + sizeof req->name ? req->name : NULL;
}

int gc_lease_take(const gc_snapshot *snap, const gc_request *req, const char *state_dir, gc_lease **out,
		  char *err, size_t errlen)
{
	struct select_request r;
	if (out)
		*out = NULL;
	if (!snap || !out || request_from(req, &r) != GC_OK) {
		errbuf_set(err, errlen, "invalid request (set size, and n of at least 1; max_util -1 or 0 to 100)");
		return GC_EINVAL;
	}
	gc_lease *l = lease_new(r.n);
	if (!l) {
		errbuf_set(err, errlen, "out of memory");
		return GC_ENOMEM;
	}
	int rc = lease_dir_open(&l->dir, state_dir, true, err, errlen);
	if (rc == GC_OK) {
		struct lease_info me;
		lease_info_self(&me, request_name(req), NULL, NULL);
		rc = job_acquire(snap, &r, l->dir, &me, l->gpus, &l->lease, err, errlen);
	}
	if (rc != GC_OK) {
		gc_lease_release(l);
		return rc;
	}
	l->n = r.n;
	for (size_t k = 0; k < l->n; k++)
		memcpy(l->uuids[k], snap->gpus[l->gpus[k]].uuid, sizeof l->uuids[k]);
	*out = l;
	return GC_OK;
}

int gc_lease_wait(gc_ctx *ctx, const gc_request *req, const char *state_dir, int64_t timeout_ms,
		  const volatile int *stop, gc_lease **out, char *err, size_t errlen)
{
	struct select_request r;
	if (out)
		*out = NULL;
	if (!ctx || !out || request_from(req, &r) != GC_OK || timeout_ms < -1) {
		errbuf_set(err, errlen, "invalid request (a context, a place for the lease, size set, n of at least 1, "
					"max_util -1 or 0 to 100, timeout_ms -1 or more)");
		return GC_EINVAL;
	}
	struct job_request jr;
	job_request_init(&jr);
	jr.jg.sel = r;
	jr.jg.n_given = jr.jg.choice_given = true;
	jr.ctx_borrowed = true;
	gc_lease *l = lease_new(r.n);
	struct lease_ticket *t = NULL;
	char why[2048] = "";
	int rc = GC_ENOMEM;
	if (!l) {
		errbuf_set(err, errlen, "out of memory");
		goto out;
	}
	if ((rc = job_request_prepare(&jr, ctx, err, errlen)) != GC_OK ||
	    (rc = lease_dir_open(&l->dir, state_dir, true, err, errlen)) != GC_OK)
		goto out;
	char desc[64];
	job_request_describe(&jr, desc, sizeof desc);
	struct lease_info me;
	lease_info_self(&me, request_name(req), NULL, desc);
	me.want = r.n;
	rc = job_request_acquire(&jr, l->dir, &me, timeout_ms != 0, timeout_ms, stop, &l->lease, &t, l->gpus, why,
				 sizeof why);
	if (rc == GC_EBUSY)
		rc = GC_ENOTNOW; /* the public word for it */
	if (rc != GC_OK) {
		errbuf_set(err, errlen, "%s", why[0] ? why : gc_strerror(rc));
		goto out;
	}
	lease_queue_withdraw(t);
	lease_queue_leave(t);
	l->n = r.n;
	for (size_t k = 0; k < l->n; k++)
		snprintf(l->uuids[k], sizeof l->uuids[k], "%s", jr.uuids[l->gpus[k]] ? jr.uuids[l->gpus[k]] : "");
	*out = l;
	l = NULL;
out:
	gc_lease_release(l);
	job_request_release(&jr);
	return rc;
}

size_t gc_lease_count(const gc_lease *l)
{
	return l ? l->n : 0;
}

unsigned gc_lease_gpu(const gc_lease *l, size_t i)
{
	return l && i < l->n ? l->gpus[i] : 0;
}

int gc_lease_visible(const gc_lease *l, char *buf, size_t len)
{
	if (!l || !buf)
		return GC_EINVAL;
	const char **uu = calloc(l->n ? l->n : 1, sizeof *uu);
	unsigned *at = calloc(l->n ? l->n : 1, sizeof *at);
	int rc = GC_ENOMEM;
	if (uu && at) {
		for (size_t k = 0; k < l->n; k++) {
			uu[k] = l->uuids[k];
			at[k] = (unsigned)k;
		}
		rc = visible_render(VISIBLE_UUID, uu, l->n, at, l->n, buf, len) == 0 ? GC_OK : GC_EINVAL;
	}
	free(uu);
	free(at);
	return rc;
}

void gc_lease_release(gc_lease *l)
{
	if (!l)
		return;
	lease_release(l->lease);
	lease_dir_close(l->dir);
	free(l->gpus);
	free(l->uuids);
	free(l);
}
