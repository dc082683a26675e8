/*
 * health.c — gpuctld's health quarantine (health.h).
 *
 * Two threads touch it: the sampler's (health_sample: ECC, remaps, lost, and
 * reading the marks) and the Xid watcher's (its own driver context, blocked
 * in the event wait). h->lock keeps their baselines and marks in step.
 */
#include "health.h"
#include "notify.h"

#include "diagnose/explain.h"
#include "jobs/lease.h"
#include "jobs/quarantine.h"
#include "jobs/select.h"
#include "util/datadir.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char HEALTH_DEFAULT_XIDS[] = "46,48,62,64,74,79,95,109,110,119,120,136,140,143,154,155,156,158,168,171,172";

struct gpu_state {
	char uuid[LEASE_UUID_MAX];
	bool seen;                 /* a sample has set the baselines */
	bool vol_known, agg_known;
	uint64_t vol, agg;         /* uncorrectable ECC errors: volatile, aggregate */
	bool remap_pending, lost;
	uint64_t last_xid;
};

struct health {
	struct health_opts o;
	uint64_t xids[HEALTH_MAX_XIDS];
	pthread_mutex_t lock;
	struct lease_dir *d;       /* NULL until there is a state directory */
	struct gpu_state *g;
	size_t n;
	struct explain_db *db;     /* Xid meanings; NULL when the data files are missing */
	gc_ctx *xctx;              /* the Xid watcher's */
	pthread_t thread;
	bool thread_on;
	atomic_bool stop;
	uint64_t made;
};

static bool word_is(const char *s, size_t n, const char *w)
{
	return strlen(w) == n && strncmp(s, w, n) == 0;
}

int health_parse_faults(const char *arg, struct health_opts *o, char *err, size_t errlen)
{
	if (strcmp(arg, "off") == 0 || strcmp(arg, "none") == 0) {
		o->faults = 0;
		return 0;
	}
	if (strcmp(arg, "all") == 0 || strcmp(arg, "on") == 0) {
		o->faults = HEALTH_ALL;
		return 0;
	}
	unsigned f = 0;
	for (const char *p = arg;;) {
		size_t n = strcspn(p, ",");
		if (word_is(p, n, "xid"))
			f |= HEALTH_XID;
		else if (word_is(p, n, "ecc"))
			f |= HEALTH_ECC;
		else if (word_is(p, n, "remap"))
			f |= HEALTH_REMAP;
		else if (word_is(p, n, "lost"))
			f |= HEALTH_LOST;
		else {
			snprintf(err, errlen, "invalid --quarantine '%s' (expected off, all, or a list of xid, ecc, remap, "
				 "lost)", arg);
			return -1;
		}
		if (!p[n])
			break;
		p += n + 1;
	}
	o->faults = f;
	return 0;
}

int health_parse_xids(const char *arg, struct health_opts *o, char *err, size_t errlen)
{
	o->xid_all = false;
	o->nxids = 0;
	if (strcmp(arg, "all") == 0) {
		o->xid_all = true;
		return 0;
	}
	const char *list = strcmp(arg, "reset") == 0 ? HEALTH_DEFAULT_XIDS : arg;
	for (const char *p = list;;) {
		char *end;
		errno = 0;
		unsigned long long v = strtoull(p, &end, 10);
		if (end == p || (*end && *end != ',') || errno || v == 0 || v > 100000 || *p == '-' || *p == '+' ||
		    o->nxids == HEALTH_MAX_XIDS) {
			snprintf(err, errlen, "invalid --quarantine-xids '%s' (expected reset, all, or up to %d Xid "
				 "numbers, e.g. 48,79)", arg, HEALTH_MAX_XIDS);
			o->nxids = 0;
			return -1;
		}
		o->xids[o->nxids++] = v;
		if (!*end)
			break;
		p = end + 1;
	}
	return 0;
}

/* the state directory, opened when first needed (create: to write a mark) */
static struct lease_dir *dir(struct health *h, bool create)
{
	if (!h->d) {
		char err[512];
		if (lease_dir_open(&h->d, NULL, create, err, sizeof err) != GC_OK) {
			h->d = NULL;
			if (create)
				fprintf(stderr, "gpuctld: cannot quarantine: %s\n", err);
		}
	}
	return h->d;
}

/* mark GPU i, with the lock held; an existing mark (an earlier fault, an administrator's) stays */
static void quarantine(struct health *h, size_t i, const char *reason, uint64_t xid, const char *detail)
{
	struct gpu_state *g = &h->g[i];
	struct lease_dir *d = g->uuid[0] ? dir(h, true) : NULL;
	if (!d) {
		fprintf(stderr, "gpuctld: GPU %zu: %s, but it cannot be quarantined (%s)\n", i, detail,
			g->uuid[0] ? "no state directory" : "its UUID is unknown");
		return;
	}
	if (quarantine_get(d, g->uuid, NULL) == 1)
		return;
	struct quarantine_info q = {.gpu = (int)i, .xid = xid};
	snprintf(q.uuid, sizeof q.uuid, "%s", g->uuid);
	snprintf(q.reason, sizeof q.reason, "%s", reason);
	snprintf(q.detail, sizeof q.detail, "%s", detail);
	char err[512];
	if (quarantine_set(d, &q, err, sizeof err) != GC_OK) {
		fprintf(stderr, "gpuctld: GPU %zu: %s, but it cannot be quarantined: %s\n", i, detail, err);
		return;
	}
	h->made++;
	fprintf(stderr, "gpuctld: GPU %zu (%s) quarantined: %s; 'gpuctl quarantine clear %zu' returns it\n", i,
		g->uuid, detail, i);
	char text[300];
	snprintf(text, sizeof text, "GPU %zu quarantined: %s", i, detail);
	json_t *o = json_pack("{s:{s:I, s:s}, s:s, s:s}", "gpu", "index", (json_int_t)i, "uuid", g->uuid, "reason",
			      reason, "detail", detail);
	if (o && xid)
		json_object_set_new(o, "xid", json_integer((json_int_t)xid));
	notify_event(h->o.notify, "gpu.quarantined", text, o);
}

static bool xid_counts(const struct health *h, uint64_t xid)
{
	if (!(h->o.faults & HEALTH_XID))
		return false;
	if (h->o.xid_all)
		return true;
	for (size_t k = 0; k < h->o.nxids; k++)
		if (h->o.xids[k] == xid)
			return true;
	return false;
}

static void on_xid(struct health *h, unsigned gpu, uint64_t xid)
{
	pthread_mutex_lock(&h->lock);
	if (gpu < h->n) {
		h->g[gpu].last_xid = xid;
		const char *meaning = xid <= INT_MAX ? explain_xid_meaning(h->db, (int)xid) : NULL;
		char detail[200];
		snprintf(detail, sizeof detail, "Xid %llu%s%s%s", (unsigned long long)xid, meaning ? " (" : "",
			 meaning ? meaning : "", meaning ? ")" : "");
		if (xid_counts(h, xid))
			quarantine(h, gpu, "xid", xid, detail);
		else
			fprintf(stderr, "gpuctld: GPU %u: %s (not one that quarantines: --quarantine-xids)\n", gpu, detail);
	}
	pthread_mutex_unlock(&h->lock);
}

static void *watch_xids(void *arg)
{
	struct health *h = arg;
	bool said = false;
	while (!atomic_load(&h->stop)) {
		unsigned gpu;
		uint64_t xid;
		int rc = gc_xid_next(h->xctx, 500, &gpu, &xid);
		if (rc == 1) {
			on_xid(h, gpu, xid);
			said = false;
		} else if (rc < 0) {
			if (!said)
				fprintf(stderr, "gpuctld: waiting for Xid events failed: %s\n", gc_ctx_errmsg(h->xctx));
			said = true;
			usleep(1000000); /* not a busy loop while the driver cannot answer */
		}
	}
	return NULL;
}

int health_start(struct health **out, const struct health_opts *o, char *err, size_t errlen)
{
	*out = NULL;
	struct health *h = calloc(1, sizeof *h);
	if (!h)
		return GC_ENOMEM;
	h->o = *o;
	pthread_mutex_init(&h->lock, NULL);
	atomic_init(&h->stop, false);
	gc_open_opts oo = {.library = NULL, .sim_node = o->sim};
	int rc = gc_ctx_open(&h->xctx, &oo);
	if (rc != GC_OK) {
		snprintf(err, errlen, "health: %s", h->xctx ? gc_ctx_errmsg(h->xctx) : gc_strerror(rc));
		health_stop(h);
		return rc;
	}
	h->n = gc_ctx_count(h->xctx);
	h->g = calloc(h->n ? h->n : 1, sizeof *h->g);
	gc_snapshot *snap = gc_snapshot_new();
	if (!h->g || !snap) {
		gc_snapshot_free(snap);
		health_stop(h);
		return GC_ENOMEM;
	}
	/* the UUIDs, for an Xid that comes before the first sample */
	if (gc_ctx_sample(h->xctx, snap, GC_BIT(GC_V_UUID), NULL, false) == GC_OK)
		for (size_t i = 0; i < h->n && i < snap->ngpus; i++)
			if (snap->gpus[i].st[GC_V_UUID] == GC_ST_OK)
				snprintf(h->g[i].uuid, sizeof h->g[i].uuid, "%s", snap->gpus[i].uuid);
	gc_snapshot_free(snap);
	char sig[4096], derr[512];
	const char *sd = o->signatures;
	if (!sd && datadir_signatures(sig, sizeof sig, derr, sizeof derr) == GC_OK)
		sd = sig;
	if (sd && explain_db_load(&h->db, sd, derr, sizeof derr) != GC_OK)
		h->db = NULL; /* Xids are then named by number only */
	/* watched whatever quarantines: DCGM_FI_DEV_XID_ERRORS reports the last one */
	rc = gc_xid_watch(h->xctx);
	if (rc != GC_OK) {
		fprintf(stderr, "gpuctld: Xid events are not watched: %s\n", gc_ctx_errmsg(h->xctx));
	} else if ((errno = pthread_create(&h->thread, NULL, watch_xids, h)) != 0) {
		snprintf(err, errlen, "cannot start the Xid watcher: %s", strerror(errno));
		health_stop(h);
		return GC_EIO;
	} else {
		h->thread_on = true;
	}
	*out = h;
	return GC_OK;
}

void health_stop(struct health *h)
{
	if (!h)
		return;
	atomic_store(&h->stop, true);
	if (h->thread_on)
		pthread_join(h->thread, NULL);
	gc_ctx_free(h->xctx);
	explain_db_free(h->db);
	lease_dir_close(h->d);
	free(h->g);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

/* one GPU's sample against its baselines, with the lock held */
static void check(struct health *h, size_t i, const gc_gpu *gg)
{
	struct gpu_state *g = &h->g[i];
	if (gg->st[GC_V_UUID] == GC_ST_OK && gg->uuid[0])
		snprintf(g->uuid, sizeof g->uuid, "%s", gg->uuid);
	bool lost = select_gpu_lost(gg);
	bool vol_ok = gg->st[GC_V_ECC_UNCORR_VOL] == GC_ST_OK, agg_ok = gg->st[GC_V_ECC_UNCORR_AGG] == GC_ST_OK;
	bool remap_ok = gg->st[GC_V_REMAPPED_ROWS] == GC_ST_OK;
	bool pending = remap_ok && gg->remap_pending;
	char detail[200];
	/* a fault there at the first sample counts as new: nobody has cleared it yet */
	if ((h->o.faults & HEALTH_LOST) && lost && (!g->seen || !g->lost))
		quarantine(h, i, "lost", 0, "lost: the GPU fell off the bus or needs a reset");
	if ((h->o.faults & HEALTH_REMAP) && pending && (!g->seen || !g->remap_pending))
		quarantine(h, i, "remap", 0, "rows wait to be remapped at the next GPU reset");
	if ((h->o.faults & HEALTH_ECC) && g->seen &&
	    ((vol_ok && g->vol_known && gg->ecc_uncorr_vol > g->vol) ||
	     (agg_ok && g->agg_known && gg->ecc_uncorr_agg > g->agg))) {
		uint64_t by = vol_ok && g->vol_known && gg->ecc_uncorr_vol > g->vol ? gg->ecc_uncorr_vol - g->vol
										 : gg->ecc_uncorr_agg - g->agg;
		snprintf(detail, sizeof detail, "%llu new uncorrectable ECC error%s", (unsigned long long)by,
			 by == 1 ? "" : "s");
		quarantine(h, i, "ecc", 0, detail);
	}
	/* a remap quarantine lifts itself once nothing waits for a reset any more */
	if (remap_ok && !pending && g->remap_pending && h->d && g->uuid[0]) {
		struct quarantine_info q;
		char err[512];
		if (quarantine_get(h->d, g->uuid, &q) == 1 && strcmp(q.reason, "remap") == 0 && q.uid == geteuid() &&
		    quarantine_clear(h->d, g->uuid, err, sizeof err) == 1)
			fprintf(stderr, "gpuctld: GPU %zu (%s): no rows wait to be remapped any more: quarantine lifted\n",
				i, g->uuid);
	}
	if (vol_ok) {
		g->vol = gg->ecc_uncorr_vol;
		g->vol_known = true;
	}
	if (agg_ok) {
		g->agg = gg->ecc_uncorr_agg;
		g->agg_known = true;
	}
	if (remap_ok)
		g->remap_pending = pending;
	g->lost = lost;
	g->seen = true;
}

void health_sample(struct health *h, const gc_snapshot *snap, struct quarantine_info *marks, uint64_t *last_xid)
{
	pthread_mutex_lock(&h->lock);
	for (size_t i = 0; i < snap->ngpus && i < h->n; i++)
		check(h, i, &snap->gpus[i]);
	struct lease_dir *d = dir(h, false);
	for (size_t i = 0; i < snap->ngpus; i++) {
		const gc_gpu *gg = &snap->gpus[i];
		last_xid[i] = i < h->n ? h->g[i].last_xid : 0;
		if (!d || gg->st[GC_V_UUID] != GC_ST_OK || quarantine_get(d, gg->uuid, &marks[i]) != 1)
			marks[i].uuid[0] = '\0';
	}
	pthread_mutex_unlock(&h->lock);
}

uint64_t health_quarantines(struct health *h)
{
	if (!h)
		return 0;
	pthread_mutex_lock(&h->lock);
	uint64_t n = h->made;
	pthread_mutex_unlock(&h->lock);
	return n;
}
