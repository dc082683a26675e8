/*
 * job-request.c — a job's GPU request (job.h): sample, apply our own
 * CUDA_VISIBLE_DEVICES, --exclude and --gpus, refuse a request that can
 * never be met, then one attempt at a time at choosing and leasing the
 * GPUs: exactly the --gpus ones, or the best that fit, or, inside a lease
 * of an ancestor (`gpuctl pick --lease` in this shell, an outer `gpuctl
 * run`), only that lease's. With gpuctld's placement nothing is sampled:
 * the GPUs are only leased. Never prints: messages go into the caller's
 * buffers, "not now" reasons name who holds what.
 */
#include "jobs/job.h"
#include "jobs/quarantine.h"

#include "device/gputable.h"

#include "util/clock.h"
#include "util/errbuf.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void job_request_init(struct job_request *r)
{
	memset(r, 0, sizeof *r);
	job_gpus_init(&r->jg);
}

#define REQUEST_MASK (GC_BIT(GC_V_NAME) | GC_BIT(GC_V_UUID) | GC_BIT(GC_V_PCI) | \
	GC_BIT(GC_V_MEM_TOTAL) | GC_BIT(GC_V_MEM_FREE) | GC_BIT(GC_V_UTIL_GPU) | \
	GC_BIT(GC_V_PROCS) | GC_BIT(GC_V_GPROCS) | GC_BIT(GC_V_MIG_CURRENT))

/* what names a GPU in --gpus, --exclude and CUDA_VISIBLE_DEVICES */
#define NAMES_MASK (GC_BIT(GC_V_UUID) | GC_BIT(GC_V_PCI))

int job_request_resample(struct job_request *r, char *err, size_t errlen)
{
	if (r->placed_spec)
		return GC_OK; /* gpuctld looked: nothing to look at again */
	/*
	 * --gpus: the first sample only names every GPU; once the list is
	 * parsed, only its GPUs are looked at (the others cannot matter),
	 * and no topology is needed to choose among them.
	 */
	const bool *which = r->jg.gpus_spec && r->wanted_known ? r->wanted : NULL;
	/* when gpuctld chooses, neither the processes nor the topology are ours to look at */
	bool table = r->server_picks && !r->peek_only;
	uint64_t mask = r->jg.gpus_spec && !r->wanted_known ? NAMES_MASK : table ? GPU_TABLE_MASK : REQUEST_MASK;
	int rc = gc_ctx_sample(r->ctx, &r->snap, mask, which, !table && !r->jg.gpus_spec && r->jg.sel.n > 1);
	if (rc != GC_OK) {
		errbuf_set(err, errlen, "cannot sample GPUs: %s", gc_ctx_errmsg(r->ctx));
		return rc;
	}
	for (size_t i = 0; i < r->ngpus; i++)
		r->uuids[i] = r->snap.gpus[i].st[GC_V_UUID] == GC_ST_OK ? r->snap.gpus[i].uuid : NULL;
	return GC_OK;
}

#define PLACED_MAX 1024     /* GPU indices a placement may name */
#define PLACED_UUID_MAX 95  /* as NVML writes them, letters, digits and dashes */

/* the GPUs of gpuctld's placement "0=GPU-…,3=GPU-…": 1 + the largest index, or 0 (the reason in err) */
static size_t placed_count(const char *spec, char *err, size_t errlen)
{
	size_t n = 0;
	for (const char *p = spec; *p;) {
		char *end;
		long i = strtol(p, &end, 10);
		size_t ulen = *end == '=' ? strcspn(end + 1, ",") : 0;
		static const char uuid_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-";
		if (end == p || !isdigit((unsigned char)*p) || i >= PLACED_MAX || ulen == 0 || ulen > PLACED_UUID_MAX ||
		    strspn(end + 1, uuid_chars) < ulen) {
			errbuf_set(err, errlen, "invalid placement '%s' from gpuctld (expected INDEX=UUID[,INDEX=UUID...])", spec);
			return 0;
		}
		if ((size_t)i + 1 > n)
			n = (size_t)i + 1;
		p = end + 1 + ulen;
		if (*p == ',')
			p++;
	}
	if (!n)
		errbuf_set(err, errlen, "invalid placement '%s' from gpuctld (expected INDEX=UUID[,INDEX=UUID...])", spec);
	return n;
}

/* the placement into wanted and uuids (checked by placed_count) */
static int placed_parse(struct job_request *r, char *err, size_t errlen)
{
	if (!(r->placed_buf = strdup(r->placed_spec))) {
		errbuf_set(err, errlen, "out of memory");
		return GC_ENOMEM;
	}
	unsigned cnt = 0;
	for (char *tok = strtok(r->placed_buf, ","); tok; tok = strtok(NULL, ",")) {
		char *eq = strchr(tok, '=');
		size_t i = (size_t)strtol(tok, NULL, 10);
		if (r->wanted[i]) {
			errbuf_set(err, errlen, "invalid placement '%s' from gpuctld (GPU %zu twice)", r->placed_spec, i);
			return GC_EINVAL;
		}
		r->wanted[i] = r->allowed[i] = true;
		r->uuids[i] = eq + 1;
		cnt++;
	}
	r->jg.sel.n = cnt;
	r->wanted_known = true;
	return GC_OK;
}

int job_request_check(const struct job_request *r, char *err, size_t errlen)
{
	if (r->jg.gpus_spec && r->jg.n_given) {
		errbuf_set(err, errlen, "give either -n or --gpus, not both");
		return GC_EINVAL;
	}
	if (r->placed_spec && r->jg.choice_given) {
		errbuf_set(err, errlen, "a placement from gpuctld comes with no -n, --gpus, --exclude or filter");
		return GC_EINVAL;
	}
	return GC_OK;
}

int job_request_prepare(struct job_request *r, gc_ctx *ctx, char *err, size_t errlen)
{
	int rc;
	if ((rc = job_request_check(r, err, errlen)) != GC_OK)
		return rc;
	if (r->placed_spec) {
		if (!(r->ngpus = placed_count(r->placed_spec, err, errlen)))
			return GC_EINVAL;
	} else {
		if (!ctx) {
			errbuf_set(err, errlen, "no GPU library open to choose GPUs with");
			return GC_EINVAL;
		}
		r->ctx = ctx;
		r->ngpus = gc_ctx_count(r->ctx);
		if (!r->ngpus) {
			errbuf_set(err, errlen, "No devices were found: this machine has no GPU to choose from");
			return GC_ENOTFOUND;
		}
	}
	size_t n = r->ngpus ? r->ngpus : 1;
	r->uuids = calloc(n, sizeof *r->uuids);
	r->allowed = calloc(n, sizeof *r->allowed);
	r->exclude = calloc(n, sizeof *r->exclude);
	r->wanted = calloc(n, sizeof *r->wanted);
	r->leased = calloc(n, sizeof *r->leased);
	r->quarantined = calloc(n, sizeof *r->quarantined);
	r->own = calloc(n, sizeof *r->own);
	r->why = calloc(n, sizeof *r->why);
	if (!r->uuids || !r->allowed || !r->exclude || !r->wanted || !r->leased || !r->quarantined || !r->own ||
	    !r->why) {
		errbuf_set(err, errlen, "out of memory");
		return GC_ENOMEM;
	}
	if (r->placed_spec)
		return placed_parse(r, err, errlen); /* our own CUDA_VISIBLE_DEVICES is gpuctld's to decide: it drops it */
	if ((rc = job_request_resample(r, err, errlen)))
		return rc;
	/* we may only hand out what our own CUDA_VISIBLE_DEVICES lets us see */
	const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
	visible_parse(cvd, r->uuids, r->ngpus, &r->parent);
	r->parent_set = cvd != NULL;
	if (r->parent.form == VISIBLE_MIG) {
		errbuf_set(err, errlen, "CUDA_VISIBLE_DEVICES='%s' names MIG devices; gpuctl leases whole GPUs only", cvd);
		return GC_EINVAL;
	}
	for (size_t i = 0; i < r->ngpus; i++)
		r->allowed[i] = visible_has(&r->parent, (int)i);
	if (r->parent_set && r->parent.n == 0) {
		if (r->parent.stop == VISIBLE_STOP_NONE)
			errbuf_set(err, errlen, "CUDA_VISIBLE_DEVICES is set but empty, so no GPU is visible to gpuctl");
		else
			errbuf_set(err, errlen, "CUDA_VISIBLE_DEVICES='%s' leaves no GPU visible (entry %zu: %s)", cvd,
				r->parent.stop_at + 1, visible_stop_reason(r->parent.stop));
		return GC_EINVAL;
	}
	r->jg.sel.allowed = r->allowed;
	if (r->jg.exclude_spec) {
		if ((rc = select_parse_ids("--exclude", r->jg.exclude_spec, &r->snap, r->exclude, err, errlen)))
			return rc;
		r->jg.sel.exclude = r->exclude;
	}
	if (r->jg.gpus_spec) {
		if ((rc = select_parse_ids("--gpus", r->jg.gpus_spec, &r->snap, r->wanted, err, errlen)))
			return rc;
		unsigned cnt = 0;
		for (size_t i = 0; i < r->ngpus; i++) {
			if (!r->wanted[i])
				continue;
			cnt++;
			if (!r->allowed[i]) {
				errbuf_set(err, errlen, "GPU %zu is not visible through CUDA_VISIBLE_DEVICES='%s'", i, cvd);
				return GC_EINVAL;
			}
			if (r->exclude[i]) {
				errbuf_set(err, errlen, "GPU %zu is both in --gpus and --exclude", i);
				return GC_EINVAL;
			}
		}
		r->jg.sel.n = cnt;
		r->wanted_known = true;
		if ((rc = job_request_resample(r, err, errlen)))
			return rc;
		/* a GPU in MIG mode stays so until an administrator changes it: waiting cannot help */
		for (size_t i = 0; i < r->ngpus; i++) {
			if (r->wanted[i] && select_gpu_mig(&r->snap.gpus[i])) {
				errbuf_set(err, errlen, "GPU %zu is %s: gpuctl hands out whole GPUs only", i,
					select_why_text(SELECT_MIG));
				return GC_EINVAL;
			}
		}
		return GC_OK;
	}
	if (select_possible(&r->snap, &r->jg.sel, err, errlen) < 0)
		return GC_EINVAL;
	return GC_OK;
}

/* "GPU 0 leased by alice (...); GPU 1: processes of other users" */
static void reasons(struct job_request *r, struct lease_dir *d, char *buf, size_t len)
{
	size_t off = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < r->ngpus && off + 1 < len; i++) {
		bool relevant = r->jg.gpus_spec || r->placed_spec ? r->wanted[i]
					     : r->why[i] != SELECT_OK && r->why[i] != SELECT_NOT_VISIBLE &&
					       r->why[i] != SELECT_EXCLUDED && r->why[i] != SELECT_MODEL;
		if (!relevant || r->why[i] == SELECT_OK)
			continue;
		char one[400];
		struct lease_info info;
		struct quarantine_info q;
		if (r->why[i] == SELECT_LEASED && d && r->uuids[i] && lease_peek(d, r->uuids[i], &info) == 1) {
			char who[300];
			lease_holder_text(&info, who, sizeof who);
			snprintf(one, sizeof one, "GPU %zu is leased by %s", i, who);
		} else if (r->why[i] == SELECT_QUARANTINED && d && r->uuids[i] && quarantine_get(d, r->uuids[i], &q) == 1) {
			snprintf(one, sizeof one, "GPU %zu is quarantined: %s (until 'gpuctl quarantine clear %zu')", i,
				 q.detail[0] ? q.detail : q.reason, i);
		} else {
			char what[160];
			snprintf(one, sizeof one, "GPU %zu: %s", i,
				 select_why_format(r->why[i], &r->jg.sel, what, sizeof what));
		}
		off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? "; " : "", one);
	}
}

/*
 * The GPUs an ancestor of ours leased (a shell's `gpuctl pick --lease`, an outer gpuctl
 * run) are ours to use and only they: the rest become not allowed. 0, or GC_EINVAL
 * (the reason in err) when the request asks for more than, or other GPUs than, that lease holds.
 */
static int inside_own_lease(struct job_request *r, struct lease_dir *d, char *err, size_t errlen)
{
	r->nown = 0;
	struct lease_info holder = {0};
	for (size_t i = 0; i < r->ngpus; i++) {
		r->own[i] = r->leased[i] && lease_ours(d, r->uuids[i], &holder) == 1;
		if (r->own[i]) {
			r->leased[i] = false;
			r->nown++;
		}
	}
	if (!r->nown)
		return 0;
	char list[256], who[300], desc[300];
	select_index_list(r->own, r->ngpus, list, sizeof list);
	lease_holder_text(&holder, who, sizeof who);
	job_request_describe(r, desc, sizeof desc);
	for (size_t i = 0; i < r->ngpus; i++) {
		if ((r->jg.gpus_spec && r->wanted[i] && !r->own[i])) {
			errbuf_set(err, errlen, "GPU %zu is not in the lease this runs inside (GPU%s %s, leased by %s): ask for those",
				i, r->nown > 1 ? "s" : "", list, who);
			return GC_EINVAL;
		}
		r->allowed[i] = r->allowed[i] && r->own[i];
	}
	if (!r->jg.gpus_spec && !r->jg.n_given)
		r->jg.sel.n = (unsigned)r->nown; /* like srun inside salloc: the whole lease */
	if (!r->jg.gpus_spec && !r->jg.n_auto && r->jg.sel.n > r->nown) {
		errbuf_set(err, errlen, "%s asked for inside a lease of %zu (GPU%s %s, leased by %s): ask for at most %zu", desc,
			r->nown, r->nown > 1 ? "s" : "", list, who, r->nown);
		return GC_EINVAL;
	}
	return 0;
}

int job_request_try(struct job_request *r, struct lease_dir *d, const struct lease_info *me,
		struct lease **out, unsigned *chosen, char *why, size_t whylen)
{
	int rc;
	r->raced = false;
	bool exact = r->jg.gpus_spec || r->placed_spec;
	/* with --gpus only its GPUs' leases matter (the others have no UUID sampled); one look at
	 * the state directory for all of them, however many files others have left in it */
	const char **look = calloc(r->ngpus ? r->ngpus : 1, sizeof *look);
	if (!look) {
		errbuf_set(why, whylen, "out of memory");
		return GC_ENOMEM;
	}
	for (size_t i = 0; i < r->ngpus; i++)
		look[i] = r->uuids[i] && (!exact || r->wanted[i]) ? r->uuids[i] : NULL;
	if (!d || lease_held(d, look, r->ngpus, r->leased) < 0)
		for (size_t i = 0; i < r->ngpus; i++)
			r->leased[i] = false;
	if (!d || quarantine_marked(d, look, r->ngpus, r->quarantined) < 0)
		for (size_t i = 0; i < r->ngpus; i++)
			r->quarantined[i] = false;
	r->jg.sel.quarantined = r->quarantined;
	free(look);
	if (d && !r->placed_spec && (rc = inside_own_lease(r, d, why, whylen)))
		return rc;
	bool ok;
	if (r->placed_spec) {
		/* gpuctld checked them against the job's filters: only a lease can stop us */
		ok = true;
		size_t k = 0;
		for (size_t i = 0; i < r->ngpus; i++) {
			if (r->wanted[i] && r->leased[i]) {
				ok = false;
				r->why[i] = SELECT_LEASED;
			} else if (r->wanted[i] && r->quarantined[i]) {
				ok = false; /* since gpuctld chose it */
				r->why[i] = SELECT_QUARANTINED;
			}
			if (r->wanted[i])
				chosen[k++] = (unsigned)i;
		}
	} else if (r->jg.gpus_spec) {
		/* exactly these GPUs: each must pass the filters now */
		select_eligible(&r->snap, &r->jg.sel, r->leased, r->why);
		ok = true;
		size_t k = 0;
		for (size_t i = 0; i < r->ngpus; i++) {
			if (!r->wanted[i])
				continue;
			if (r->why[i] != SELECT_OK)
				ok = false;
			chosen[k++] = (unsigned)i;
		}
	} else {
		size_t cnt = select_eligible(&r->snap, &r->jg.sel, r->leased, r->why);
		if (r->jg.n_auto) {
			/* every free GPU, as a power of two: the world sizes data-parallel recipes
			 * divide their batch by; none free is "not now" */
			unsigned all = cnt ? (unsigned)cnt : 1, p = 1;
			while (p * 2 <= all)
				p *= 2;
			if (p < all && !r->auto_said) {
				snprintf(r->note, sizeof r->note,
					 "-n auto: %u GPUs are free; taking %u, a power of two (-n %u takes them all)", all, p, all);
				r->auto_said = true;
			}
			r->jg.sel.n = p;
		}
		ok = select_pick(&r->snap, &r->jg.sel, r->leased, chosen) == 0;
	}
	if (!ok) {
		reasons(r, d, why, whylen);
		return GC_EBUSY;
	}
	if (!d || r->peek_only)
		return GC_OK;
	const char **uu = calloc(r->jg.sel.n ? r->jg.sel.n : 1, sizeof *uu);
	if (!uu) {
		errbuf_set(why, whylen, "out of memory");
		return GC_ENOMEM;
	}
	/* the GPUs an ancestor leased stay its: not leased again, so not released at our end */
	unsigned nu = 0, *at = calloc(r->jg.sel.n ? r->jg.sel.n : 1, sizeof *at);
	if (!at) {
		free(uu);
		errbuf_set(why, whylen, "out of memory");
		return GC_ENOMEM;
	}
	for (unsigned k = 0; k < r->jg.sel.n; k++) {
		if (r->own[chosen[k]])
			continue;
		at[nu] = chosen[k];
		uu[nu] = r->uuids[chosen[k]];
		if (!uu[nu++]) {
			errbuf_set(why, whylen, "GPU %u has no UUID to lease it by", chosen[k]);
			free(uu);
			free(at);
			return GC_EINVAL;
		}
	}
	size_t busy = 0;
	char err[512];
	rc = lease_try(d, uu, nu, me, out, &busy, err, sizeof err);
	if (rc == GC_EBUSY) {
		/* taken between our look and our try: say by whom */
		r->raced = true;
		struct lease_info info;
		char who[300] = "someone";
		if (lease_peek(d, uu[busy], &info) == 1)
			lease_holder_text(&info, who, sizeof who);
		snprintf(why, whylen, "GPU %u is leased by %s", at[busy], who);
	} else if (rc != GC_OK) {
		snprintf(why, whylen, "%s", err);
	}
	free(uu);
	free(at);
	return rc;
}

bool job_request_blind_ok(const struct job_request *r)
{
	return !r->placed_spec && !r->peek_only && !r->jg.gpus_spec && !r->jg.exclude_spec && !r->jg.n_auto &&
	       !(r->jg.sel.model && *r->jg.sel.model) && !r->jg.sel.min_free_mem && !getenv("CUDA_VISIBLE_DEVICES");
}

/* a blind request, answered: prepared on the table the answer brought (else on NVML, opened now) */
static int blind_prepare(struct job_request *r, const json_t *table, char *err, size_t errlen)
{
	gc_open_opts o = {.size = sizeof o, .sim_node = r->sim_node};
	gc_ctx *ctx = NULL;
	r->blind = false;
	int rc = table && gpu_ctx_open_json(&ctx, table, -1, &o, err, errlen) == GC_OK ? GC_OK : gc_ctx_open(&ctx, &o);
	if (rc != GC_OK) {
		errbuf_set(err, errlen, "%s", gc_ctx_errmsg(ctx));
		gc_ctx_free(ctx);
		return rc;
	}
	rc = job_request_prepare(r, ctx, err, errlen);
	if (!r->ctx)
		gc_ctx_free(ctx); /* not yet the request's */
	return rc;
}

/*
 * Authority mode: gpuctld chooses, in its one line (docs/queue.md), among the GPUs
 * this request may use (CUDA_VISIBLE_DEVICES, --gpus, --exclude), by its filters.
 * 1 when the caller should go on as in cooperative mode instead (inside an
 * ancestor's lease, whose GPUs are used and never leased again; a placement).
 */
static int auth_acquire(struct job_request *r, struct lease_dir *d, const struct lease_info *me, bool wait,
			long long timeout_ms, const volatile int *stop, struct lease **out, unsigned *chosen, char *why,
			size_t whylen)
{
	if (r->placed_spec || r->peek_only)
		return 1;
	/* inside an ancestor's lease (a pick --lease shell, an outer gpuctl run), whose
	 * CUDA_VISIBLE_DEVICES we have: one look at the grants says which are ours */
	int rc;
	bool blind = r->blind;
	if (!blind && r->parent_set) {
		if (lease_held(d, r->uuids, r->ngpus, r->leased) < 0) {
			snprintf(why, whylen, "cannot read gpuctld's grants");
			return GC_EIO;
		}
		if ((rc = inside_own_lease(r, d, why, whylen)))
			return rc;
		if (r->nown)
			return 1;
	}
	bool exact = r->jg.gpus_spec != NULL;
	size_t slots = blind ? r->jg.sel.n : r->ngpus;
	const char **allowed = calloc(r->ngpus ? r->ngpus : 1, sizeof *allowed);
	char(*got)[LEASE_UUID_MAX] = calloc(slots ? slots : 1, sizeof *got);
	if (!allowed || !got) {
		free(allowed);
		free(got);
		snprintf(why, whylen, "out of memory");
		return GC_ENOMEM;
	}
	for (size_t i = 0; i < r->ngpus; i++)
		if (r->uuids[i] && r->allowed[i] && !r->exclude[i] && (!exact || r->wanted[i]))
			allowed[i] = r->uuids[i];
	struct lease_ask a = {.n = r->jg.n_auto ? 0 : r->jg.sel.n, .allowed = blind ? NULL : allowed,
			      .nallowed = r->ngpus, .exact = exact, .min_free_mem = r->jg.sel.min_free_mem,
			      .max_util = r->jg.sel.max_util, .model = r->jg.sel.model, .shared = r->jg.sel.shared,
			      .wait = wait, .timeout_ms = timeout_ms, .want_table = blind};
	size_t ngot = 0;
	rc = lease_ask(d, &a, me, stop, out, got, slots, &ngot, why, whylen);
	if (blind && (rc == GC_OK || rc == GC_EBUSY)) {
		/* asked without a look at the GPUs: the answer brought gpuctld's, to name them by */
		char err[512];
		int prc = blind_prepare(r, a.table, err, sizeof err);
		if (prc != GC_OK) {
			if (*out)
				lease_release(*out);
			*out = NULL;
			snprintf(why, whylen, "%s", err);
			rc = prc;
		}
	}
	json_decref(a.table);
	if (rc == GC_EBUSY) {
		/* why, as cooperative mode says it: who holds what, which filter keeps which GPU out;
		 * when nothing does, it is the line */
		bool peek = r->peek_only;
		unsigned *tmp = calloc(r->ngpus + r->jg.sel.n + 1, sizeof *tmp);
		char err[512];
		r->peek_only = true;
		r->server_picks = false; /* a full sample now: processes and load say why */
		if (tmp && job_request_resample(r, err, sizeof err) == GC_OK &&
		    job_request_try(r, d, me, NULL, tmp, why, whylen) == GC_OK)
			snprintf(why, whylen, "GPUs for it are free, but earlier requests in gpuctld's line wait for them "
				 "(gpuctl leases and gpuctl queue show them)");
		r->peek_only = peek;
		free(tmp);
	}
	if (rc == GC_OK) {
		/* the GPUs granted, as our indices, ascending */
		unsigned k = 0;
		for (size_t i = 0; i < r->ngpus; i++)
			for (size_t g = 0; g < ngot; g++)
				if (r->uuids[i] && strcmp(r->uuids[i], got[g]) == 0)
					chosen[k++] = (unsigned)i;
		if (k != ngot) {
			snprintf(why, whylen, "gpuctld granted a GPU this process does not see");
			lease_release(*out);
			*out = NULL;
			rc = GC_EIO;
		} else if (r->jg.n_auto) {
			r->jg.sel.n = k; /* gpuctld took every free one, as a power of two */
		}
	}
	free(allowed);
	free(got);
	return rc;
}

int job_request_acquire(struct job_request *r, struct lease_dir *d, const struct lease_info *me, bool wait,
			long long timeout_ms, const volatile int *stop, struct lease **out, struct lease_ticket **ticket,
			unsigned *chosen, char *why, size_t whylen)
{
	char err[512];
	int rc;
	*out = NULL;
	*ticket = NULL;
	if (r->blind && !lease_dir_authority(d) && (rc = blind_prepare(r, NULL, why, whylen)) != GC_OK)
		return rc; /* gpuctld stopped being the authority since the request was made */
	if (lease_dir_authority(d) && (rc = auth_acquire(r, d, me, wait, timeout_ms, stop, out, chosen, why, whylen)) != 1)
		return rc;
	if (r->server_picks) {
		/* we choose after all (inside an ancestor's lease): from a full sample */
		r->server_picks = false;
		if ((rc = job_request_resample(r, why, whylen)) != GC_OK)
			return rc;
	}
	if (wait && lease_queue_join(d, me, ticket, err, sizeof err) != GC_OK) {
		snprintf(why, whylen, "%s", err);
		return GC_EIO;
	}
	long long deadline = timeout_ms >= 0 ? clock_mono_ms() + timeout_ms : -1;
	bool resample = false; /* job_request_prepare has just sampled */
	unsigned races = 0;
	for (;;) {
		why[0] = '\0';
		int head = *ticket ? lease_queue_is_head(d, *ticket, r->uuids, r->ngpus) : 1;
		if (head < 0) {
			snprintf(why, whylen, "cannot read the queue in '%s'", lease_dir_path(d));
			rc = GC_EIO;
			break;
		}
		if (head) {
			/* only the head looks at the GPUs again: the others just wait their turn */
			if (resample && (rc = job_request_resample(r, why, whylen)) != GC_OK)
				break;
			resample = true;
			rc = job_request_try(r, d, me, out, chosen, why, whylen);
			if (rc != GC_EBUSY)
				break;
			/* another job took a GPU between our look and our lease: others may be free */
			if (r->raced && ++races < 64)
				continue;
		} else {
			snprintf(why, whylen, "waiting behind earlier requests");
		}
		rc = GC_EBUSY;
		if (!wait)
			break;
		if (stop && *stop) {
			rc = GC_ECANCELED;
			break;
		}
		long long left = deadline < 0 ? 1000 : deadline - clock_mono_ms();
		if (deadline >= 0 && left <= 0) {
			rc = GC_ETIMEDOUT;
			break;
		}
		/* woken at once by a release; the 1 s bound notices processes that end on their own */
		if (lease_wait(d, left < 1000 ? (int)left : 1000) < 0) {
			snprintf(why, whylen, "cannot wait for GPUs in '%s'", lease_dir_path(d));
			rc = GC_EIO;
			break;
		}
		if (stop && *stop) {
			rc = GC_ECANCELED;
			break;
		}
	}
	if (rc != GC_OK) {
		lease_queue_leave(*ticket);
		*ticket = NULL;
	}
	return rc;
}

int job_request_render(const struct job_request *r, const unsigned *chosen, char *buf, size_t len)
{
	enum visible_form f = visible_child_form(r->parent_set ? &r->parent : NULL, r->jg.ids_uuid);
	return visible_render(f, r->uuids, r->ngpus, chosen, r->jg.sel.n, buf, len);
}

void job_request_describe(const struct job_request *r, char *buf, size_t len)
{
	if (r->jg.gpus_spec || r->placed_spec) {
		char list[256];
		select_index_list(r->wanted, r->ngpus, list, sizeof list);
		snprintf(buf, len, "GPU%s %s", r->jg.sel.n > 1 ? "s" : "", list);
	} else if (r->jg.n_auto) {
		snprintf(buf, len, "every free GPU");
	} else {
		snprintf(buf, len, "%u GPU%s", r->jg.sel.n, r->jg.sel.n > 1 ? "s" : "");
	}
}

void job_request_release(struct job_request *r)
{
	gpu_snapshot_release(&r->snap);
	if (!r->ctx_borrowed)
		gc_ctx_free(r->ctx);
	free(r->placed_buf);
	free(r->uuids);
	free(r->allowed);
	free(r->exclude);
	free(r->wanted);
	free(r->leased);
	free(r->quarantined);
	free(r->own);
	free(r->why);
}
