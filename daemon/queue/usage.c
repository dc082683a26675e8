/*
 * usage.c — GPU time, per user (gpuctl usage, docs/policy.md): every lease
 * of every GPU, interactive ones (gpuctl run, pick --lease, the Python
 * package) and queued jobs' alike, seen through the lease directory's
 * inotify by the queue's thread (at most every USAGE_EVERY_MS while it keeps
 * changing). A lease is open from when it is first seen (within that of its
 * claim) to when it is seen gone, and is then
 * recorded in the store; the time its GPU sat idle (utilization and memory
 * activity at most 5 %) is added up from the samples meanwhile.
 */
#include "queue-int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/clock.h"
#include "util/grow.h"

#define IDLE_UTIL 5
#define USAGE_EVERY_MS 10

struct usage_open {
	char uuid[LEASE_UUID_MAX];
	int gpu;
	uid_t uid;
	pid_t supervisor;
	int64_t since;       /* the record's: with uuid, uid and supervisor, which lease */
	char user[33], name[64];
	int64_t start_ms, idle_ms;
	bool seen;
};

static int index_of(const gc_snapshot *s, const char *uuid)
{
	for (size_t i = 0; i < s->ngpus; i++)
		if (s->gpus[i].st[GC_V_UUID] == GC_ST_OK && strcmp(s->gpus[i].uuid, uuid) == 0)
			return (int)i;
	return -1;
}

static void record(struct queue *q, const struct usage_open *o, int64_t end)
{
	struct usage_row r = {.uid = o->uid, .gpu_index = o->gpu, .start_ms = o->start_ms, .end_ms = end,
			      .idle_ms = o->idle_ms};
	snprintf(r.user, sizeof r.user, "%s", o->user);
	snprintf(r.gpu, sizeof r.gpu, "%s", o->uuid);
	snprintf(r.name, sizeof r.name, "%s", o->name);
	if (store_usage_add(q->st, &r) < 0)
		queue_log("the GPU time of %s on GPU %d could not be recorded: %s", o->user, o->gpu, store_errmsg(q->st));
	q->usage.share_dirty = true; /* fair share: to compute again */
}

/* a claim's ctime older than this when first seen is not taken (a clock set back, a file touched) */
#define USAGE_CLAIM_TRUST_MS 60000

void usage_observe(struct queue *q, bool changed)
{
	struct usage *u = &q->usage;
	int64_t mono = clock_mono_ms(), now = clock_real_ms();
	bool tick = mono - u->checked_ms >= 1000;
	/* a busy directory (a queue draining) is read at most every USAGE_EVERY_MS: each change
	 * after the last look is looked at by then (the queue's poll wakes for due_ms) */
	if (changed && u->started && mono - u->scanned_ms < USAGE_EVERY_MS) {
		if (!u->due_ms)
			u->due_ms = u->scanned_ms + USAGE_EVERY_MS;
		changed = false;
	}
	if (u->due_ms && mono >= u->due_ms)
		changed = true;
	if (!changed && !tick && u->started)
		return;
	u->due_ms = 0;
	u->scanned_ms = mono;
	struct lease_dir *d = q->round.leases; /* the round opens it, when there is one */
	struct lease_entry *e = NULL;
	size_t n = 0;
	if (d && lease_list(d, &e, &n) != GC_OK)
		return; /* look again next time */
	/* the sample: each second for the idle time, and for a GPU's index when a lease is new */
	bool fresh = tick || !u->started;
	for (size_t i = 0; i < n && !fresh; i++) {
		bool known = false;
		for (size_t k = 0; k < u->n && !known; k++)
			known = strcmp(u->v[k].uuid, e[i].uuid) == 0;
		fresh = !known;
	}
	gc_snapshot snap = {0};
	bool have = fresh && sampler_snapshot(q->s, &snap) == GC_OK;
	/* idle time since the last look, by this sample */
	if (tick && u->started)
		for (size_t k = 0; k < u->n; k++) {
			struct usage_open *o = &u->v[k];
			const gc_gpu *g = have && o->gpu >= 0 && (size_t)o->gpu < snap.ngpus ? &snap.gpus[o->gpu] : NULL;
			if (g && g->st[GC_V_UTIL_GPU] == GC_ST_OK && g->util_gpu <= IDLE_UTIL &&
			    g->st[GC_V_UTIL_MEM] == GC_ST_OK && g->util_mem <= IDLE_UTIL)
				o->idle_ms += mono - u->checked_ms;
		}
	if (tick || !u->started)
		u->checked_ms = mono;
	for (size_t k = 0; k < u->n; k++)
		u->v[k].seen = false;
	for (size_t i = 0; i < n; i++) {
		const struct lease_info *in = &e[i].info;
		struct usage_open *o = NULL;
		/* which open lease this is: its GPU and holder (a lease seen with a new since was
		 * counted twice, closed at the next look and opened again from the rewrite) */
		for (size_t k = 0; k < u->n && !o; k++)
			if (strcmp(u->v[k].uuid, e[i].uuid) == 0 &&
			    lease_same_holder(u->v[k].supervisor, u->v[k].uid, u->v[k].since, in))
				o = &u->v[k];
		if (!o) {
			struct usage_open *nv = grow(u->v, &u->cap, u->n, sizeof *nv, 16);
			if (!nv)
				continue;
			u->v = nv;
			o = &u->v[u->n++];
			memset(o, 0, sizeof *o);
			snprintf(o->uuid, sizeof o->uuid, "%s", e[i].uuid);
			o->uid = in->uid;
			o->supervisor = in->supervisor;
			o->since = in->since;
			struct lease_info safe = *in;
			lease_info_sanitize(&safe);
			snprintf(o->user, sizeof o->user, "%s", safe.user);
			snprintf(o->name, sizeof o->name, "%s", safe.name);
			o->gpu = -1;
			if (have)
				o->gpu = index_of(&snap, o->uuid);
			else /* a GPU we know: its index as the lease before this one had it */
				for (size_t k = 0; k + 1 < u->n && o->gpu < 0; k++)
					if (strcmp(u->v[k].uuid, o->uuid) == 0)
						o->gpu = u->v[k].gpu;
			/*
			 * from its claim file's ctime (made, or rewritten at its job's start): not when we
			 * saw it, which a loaded machine delays; one that was there when gpuctld started,
			 * since its record says (seconds)
			 */
			int64_t claimed = e[i].claimed_ns / 1000000;
			o->start_ms = !u->started && in->since > 0 && in->since * 1000 < now ? in->since * 1000 : now;
			if (u->started && claimed > 0 && claimed <= now && now - claimed < USAGE_CLAIM_TRUST_MS)
				o->start_ms = claimed;
			/* ... but not again the part an earlier gpuctld recorded when it stopped (issue 32: a
			 * lease across a restart was counted twice from its since) */
			int64_t last = !u->started ? store_usage_last_end(q->st, o->uuid, o->uid) : 0;
			if (last > o->start_ms && last <= now)
				o->start_ms = last;
		}
		o->seen = true;
	}
	free(e);
	gpu_snapshot_release(&snap);
	/* the leases that ended since the last look, recorded in one transaction: one commit (one
	 * fsync) for a draining queue's many ends, not one each (issue 35) */
	size_t ended = 0, w = 0;
	for (size_t k = 0; k < u->n; k++)
		ended += !u->v[k].seen;
	bool tx = ended > 1 && store_begin(q->st) == 0;
	for (size_t k = 0; k < u->n; k++) {
		if (u->v[k].seen)
			u->v[w++] = u->v[k];
		else
			record(q, &u->v[k], now);
	}
	if (tx && store_commit(q->st) != 0)
		queue_log("the GPU time of %zu ended leases could not be recorded: %s", ended, store_errmsg(q->st));
	u->n = w;
	u->started = true;
}

void usage_stop(struct queue *q)
{
	/* the leases still held end here as far as the record goes; a restart opens them again
	 * from their records' since */
	int64_t now = clock_real_ms();
	bool tx = q->usage.n > 1 && store_begin(q->st) == 0;
	for (size_t k = 0; k < q->usage.n; k++)
		record(q, &q->usage.v[k], now);
	if (tx && store_commit(q->st) != 0)
		queue_log("the GPU time of %zu open leases could not be recorded: %s", q->usage.n, store_errmsg(q->st));
	free(q->usage.v);
	free(q->usage.share);
	memset(&q->usage, 0, sizeof q->usage);
}

/* ---- fair share ------------------------------------------------------------------- */

struct decay {
	struct queue *q;
	int64_t now;
	double hl;
	bool oom;
};

static void weigh(struct decay *d, uid_t uid, int64_t start, int64_t end)
{
	struct usage *u = &d->q->usage;
	/* each second of GPU time weighs 2^-(its age / half-life): the integral over [start, end] */
	double a = (double)(d->now - end) / d->hl, b = (double)(d->now - start) / d->hl;
	double w = d->hl / 1000.0 / 0.6931471805599453 * (exp2(-a) - exp2(-b));
	for (size_t i = 0; i < u->nshare; i++)
		if (u->share[i].uid == uid) {
			u->share[i].gpu_s += w;
			return;
		}
	struct usage_share *p = realloc(u->share, (u->nshare + 1) * sizeof *p);
	if (!p) {
		d->oom = true;
		return;
	}
	u->share = p;
	u->share[u->nshare++] = (struct usage_share){.uid = uid, .gpu_s = w};
}

static void weigh_row(void *arg, const struct usage_row *r)
{
	weigh(arg, r->uid, r->start_ms, r->end_ms);
}

double usage_share(struct queue *q, uid_t uid)
{
	struct usage *u = &q->usage;
	if (q->o.fair_half_life_ms <= 0)
		return 0;
	int64_t mono = clock_mono_ms();
	/* again after a lease ended (its record; at most once a second), and every 10 s for the
	 * leases held and the decay */
	if ((u->share_dirty && mono - u->share_at_ms >= 1000) || mono - u->share_at_ms >= 10000) {
		u->share_dirty = false;
		u->nshare = 0;
		struct decay d = {.q = q, .now = clock_real_ms(), .hl = (double)q->o.fair_half_life_ms};
		/* older than 20 half-lives weighs less than a millionth */
		int64_t from = d.now - 20 * q->o.fair_half_life_ms;
		(void)store_usage_since(q->st, from > 0 ? from : 0, weigh_row, &d);
		for (size_t k = 0; k < u->n; k++)
			weigh(&d, u->v[k].uid, u->v[k].start_ms, d.now);
		u->share_at_ms = mono;
	}
	for (size_t i = 0; i < u->nshare; i++)
		if (u->share[i].uid == uid)
			return u->share[i].gpu_s;
	return 0;
}

/* ---- gpuctl usage ---------------------------------------------------------------- */

struct tally {
	char key[96];
	double gpu_s, idle_s;
};

struct report {
	const char *by;
	int64_t since, now;
	struct tally *t;
	size_t n;
	bool oom;
};

static struct tally *bucket(struct report *r, const char *key)
{
	for (size_t i = 0; i < r->n; i++)
		if (strcmp(r->t[i].key, key) == 0)
			return &r->t[i];
	struct tally *p = realloc(r->t, (r->n + 1) * sizeof *p);
	if (!p) {
		r->oom = true;
		return NULL;
	}
	r->t = p;
	struct tally *t = &r->t[r->n++];
	memset(t, 0, sizeof *t);
	snprintf(t->key, sizeof t->key, "%s", key);
	return t;
}

/* one lease of one GPU, cut to [since, now], into its bucket(s): days split at UTC midnight */
static void add(void *arg, const struct usage_row *row)
{
	struct report *r = arg;
	int64_t a = row->start_ms > r->since ? row->start_ms : r->since;
	int64_t b = row->end_ms < r->now ? row->end_ms : r->now;
	if (b <= a)
		return;
	double whole = (double)(row->end_ms - row->start_ms);
	double idle_share = whole > 0 ? (double)row->idle_ms / whole : 0;
	while (a < b) {
		int64_t cut = b;
		char key[96];
		if (strcmp(r->by, "day") == 0) {
			time_t t = (time_t)(a / 1000);
			struct tm tm;
			gmtime_r(&t, &tm);
			strftime(key, sizeof key, "%Y-%m-%d", &tm);
			int64_t midnight = ((a / 1000) / 86400 + 1) * 86400 * 1000;
			cut = midnight < b ? midnight : b;
		} else if (strcmp(r->by, "gpu") == 0) {
			if (row->gpu_index >= 0)
				snprintf(key, sizeof key, "%d", row->gpu_index);
			else
				snprintf(key, sizeof key, "%s", row->gpu);
		} else {
			snprintf(key, sizeof key, "%s", row->user);
		}
		struct tally *t = bucket(r, key);
		if (t) {
			t->gpu_s += (double)(cut - a) / 1000.0;
			t->idle_s += (double)(cut - a) / 1000.0 * (idle_share > 1 ? 1 : idle_share);
		}
		a = cut;
	}
}

static int by_key(const void *x, const void *y)
{
	const struct tally *a = x, *b = y;
	/* GPUs by number, the rest by name */
	char *ea, *eb;
	long na = strtol(a->key, &ea, 10), nb = strtol(b->key, &eb, 10);
	if (!*ea && !*eb && ea != a->key && eb != b->key)
		return (na > nb) - (na < nb);
	return strcmp(a->key, b->key);
}

json_t *usage_report(struct queue *q, int64_t since_ms, const char *by, double price)
{
	struct report r = {.by = by, .since = since_ms, .now = clock_real_ms()};
	if (store_usage_since(q->st, since_ms, add, &r) < 0) {
		free(r.t);
		return NULL;
	}
	/* the leases held now, up to now */
	for (size_t k = 0; k < q->usage.n; k++) {
		const struct usage_open *o = &q->usage.v[k];
		struct usage_row row = {.uid = o->uid, .gpu_index = o->gpu, .start_ms = o->start_ms, .end_ms = r.now,
					.idle_ms = o->idle_ms};
		snprintf(row.user, sizeof row.user, "%s", o->user);
		snprintf(row.gpu, sizeof row.gpu, "%s", o->uuid);
		add(&r, &row);
	}
	if (r.oom) {
		free(r.t);
		return NULL;
	}
	if (r.n > 1)
		qsort(r.t, r.n, sizeof *r.t, by_key);
	json_t *rows = json_array();
	double gpu = 0, idle = 0;
	for (size_t i = 0; rows && i < r.n; i++) {
		json_t *o = json_pack("{s:s, s:f, s:f}", "key", r.t[i].key, "gpu_hours", r.t[i].gpu_s / 3600.0,
				      "idle_gpu_hours", r.t[i].idle_s / 3600.0);
		if (o && price > 0)
			json_object_set_new(o, "cost", json_real(r.t[i].gpu_s / 3600.0 * price));
		json_array_append_new(rows, o);
		gpu += r.t[i].gpu_s;
		idle += r.t[i].idle_s;
	}
	free(r.t);
	json_t *ans = json_pack("{s:b, s:s, s:I, s:I, s:o, s:{s:f, s:f}}", "ok", 1, "by", by, "since_ms",
				(json_int_t)since_ms, "until_ms", (json_int_t)r.now, "rows", rows ? rows : json_array(),
				"total", "gpu_hours", gpu / 3600.0, "idle_gpu_hours", idle / 3600.0);
	if (ans && price > 0) {
		json_object_set_new(ans, "price_per_gpu_hour", json_real(price));
		if (q->o.price_source)
			json_object_set_new(ans, "price_source", json_string(q->o.price_source));
		json_object_set_new(json_object_get(ans, "total"), "cost", json_real(gpu / 3600.0 * price));
	}
	return ans;
}
