/*
 * reclaim.c — gpuctld's idle reclaim (reclaim.h).
 *
 * A lease is known by its holder (the gpuctl that took it: the supervisor
 * pid of its record and the record's uid; its since only when the record
 * names no supervisor of its user's); its GPUs are those whose
 * claim names that holder in this sample. In authority mode a lease is a
 * grant, known by its number, and when the steps run out gpuctld revokes
 * it: the grant ends, and every process that holds it (an orphan the job
 * left included) is stopped, whatever those processes do.
 */
#include "reclaim.h"

#include "device/proc.h"
#include "jobs/authority.h"
#include "notify.h"
#include "util/grow.h"
#include "util/units.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum stage { WATCH, NOTIFIED, CHECKPOINT, TERMED, KILLED };

struct held {
	uint64_t grant;                    /* authority mode: gpuctld's grant (the key); 0 otherwise */
	pid_t supervisor, job;
	uid_t uid;
	int64_t since;                     /* the record's: with the pids, which lease this is */
	unsigned long long sup_start, job_start;
	char user[33], name[64];
	bool shell;                        /* a pick --lease: no job to signal */
	int64_t idle_ms;                   /* monotonic: idle since; 0 active */
	int64_t at_ms;                     /* when the current stage began */
	enum stage stage;
	char gpus[128];                    /* "0,1", the last sample's that showed it */
	char cur[128];                     /* this sample's, being built */
	bool present, idle;
};

struct reclaim {
	struct reclaim_opts o;
	struct held *v;
	size_t n, cap;
	uint64_t done;
};

int reclaim_parse_signal(const char *arg, int *sig, char *err, size_t errlen)
{
	return units_parse_signal("--reclaim-signal", arg, sig, err, errlen) == 0 ? 0 : -1;
}

struct reclaim *reclaim_new(const struct reclaim_opts *o)
{
	struct reclaim *r = calloc(1, sizeof *r);
	if (r)
		r->o = *o;
	return r;
}

void reclaim_free(struct reclaim *r)
{
	if (!r)
		return;
	free(r->v);
	free(r);
}

uint64_t reclaim_count(const struct reclaim *r)
{
	return r ? r->done : 0;
}

static bool exempt(const struct reclaim *r, const char *user)
{
	size_t n = strlen(user);
	for (const char *p = r->o.exempt; p && *p;) {
		size_t k = strcspn(p, ",");
		if (k == n && strncmp(p, user, n) == 0)
			return true;
		p += k + (p[k] == ',');
	}
	return false;
}

static bool gpu_idle(const gc_gpu *g, unsigned util)
{
	return g->st[GC_V_UTIL_GPU] == GC_ST_OK && g->util_gpu <= util && g->st[GC_V_UTIL_MEM] == GC_ST_OK &&
	       g->util_mem <= util;
}

static struct held *find(struct reclaim *r, const struct lease_info *h)
{
	for (size_t i = 0; i < r->n; i++)
		/* by its holder (a new since would start its idle time over) */
		if (h->grant ? r->v[i].grant == h->grant
			     : lease_same_holder(r->v[i].supervisor, r->v[i].uid, r->v[i].since, h))
			return &r->v[i];
	struct held *nv = grow(r->v, &r->cap, r->n, sizeof *nv, 8);
	if (!nv)
		return NULL;
	r->v = nv;
	struct held *x = &r->v[r->n++];
	memset(x, 0, sizeof *x);
	x->grant = h->grant;
	x->supervisor = h->supervisor;
	x->job = h->pid;
	x->uid = h->uid;
	x->since = h->since;
	x->shell = strncmp(h->command, "(shell of gpuctl pick --lease)", 30) == 0;
	snprintf(x->user, sizeof x->user, "%s", h->user);
	snprintf(x->name, sizeof x->name, "%s", h->name);
	if (x->supervisor <= 0 || proc_stat(x->supervisor, NULL, NULL, &x->sup_start) < 0)
		x->supervisor = 0;
	if (x->job <= 0 || proc_stat(x->job, NULL, NULL, &x->job_start) < 0)
		x->job = 0;
	return x;
}

static void say(struct reclaim *r, struct held *x, const char *event, const char *what)
{
	char text[400], name[80] = "";
	if (x->name[0])
		snprintf(name, sizeof name, " ('%s')", x->name);
	snprintf(text, sizeof text, "GPU %s leased by %s%s: %s", x->gpus, x->user, name, what);
	fprintf(stderr, "gpuctld: reclaim: %s\n", text);
	notify_event(r->o.notify, event, text,
		     json_pack("{s:s, s:s, s:I, s:s, s:I}", "gpus", x->gpus, "holder", x->user, "uid", (json_int_t)x->uid,
			       "job", x->name, "pid", (json_int_t)x->job));
}

/* one lease's next step, if its time has come */
static void step(struct reclaim *r, struct held *x, int64_t now)
{
	char what[200];
	long long idle_s = (long long)((now - x->idle_ms) / 1000);
	switch (x->stage) {
	case WATCH:
		if (!x->idle || now - x->idle_ms < r->o.after_ms)
			return;
		snprintf(what, sizeof what, "idle for %lld s: its job gets signal %d in %lld s, then SIGTERM", idle_s,
			 r->o.signal, r->o.grace_ms / 1000);
		say(r, x, "lease.idle", what);
		break;
	case NOTIFIED:
		if (now - x->at_ms < r->o.grace_ms)
			return;
		if (x->shell) {
			/* a shell's lease: no job to checkpoint; its holder goes, the shell lives on */
			if (x->supervisor)
				(void)proc_signal(x->supervisor, x->sup_start, x->uid, SIGTERM);
			say(r, x, "lease.reclaiming", "still idle: SIGTERM to the holder of the shell's lease");
			x->stage = TERMED;
			x->at_ms = now;
			return;
		}
		if (x->job)
			(void)proc_signal(x->job, x->job_start, x->uid, r->o.signal);
		snprintf(what, sizeof what, "still idle: checkpoint now (signal %d to pid %d); SIGTERM in %lld s", r->o.signal,
			 (int)x->job, r->o.grace_ms / 1000);
		say(r, x, "lease.reclaiming", what);
		break;
	case CHECKPOINT:
		if (now - x->at_ms < r->o.grace_ms)
			return;
		/* gpuctl run passes SIGTERM on to the job's process group and lets the lease go once it ends */
		if (x->supervisor)
			(void)proc_signal(x->supervisor, x->sup_start, x->uid, SIGTERM);
		else if (x->job)
			(void)proc_signal(x->job, x->job_start, x->uid, SIGTERM);
		say(r, x, "lease.reclaiming", "SIGTERM");
		break;
	case TERMED:
		if (now - x->at_ms < r->o.grace_ms)
			return;
		if (x->job)
			(void)proc_signal(x->job, x->job_start, x->uid, SIGKILL);
		if (x->supervisor)
			(void)proc_signal(x->supervisor, x->sup_start, x->uid, SIGKILL);
		if (x->grant && lease_served()) {
			/* gpuctld's alone to end: the grant goes, and so does every process holding it */
			(void)lease_served()->revoke(lease_served()->arg, x->grant, "reclaim: still held after SIGTERM");
			say(r, x, "lease.reclaiming", "still held: grant revoked, its processes killed");
		} else {
			say(r, x, "lease.reclaiming", "still held: SIGKILL");
		}
		break;
	case KILLED:
		return;
	}
	x->stage++;
	x->at_ms = now;
}

void reclaim_sample(struct reclaim *r, const gc_snapshot *snap, const struct lease_info *const *holder,
		    int64_t now_ms)
{
	if (!r || r->o.after_ms <= 0)
		return;
	for (size_t i = 0; i < r->n; i++) {
		r->v[i].present = false;
		r->v[i].idle = true;
		r->v[i].cur[0] = '\0';
	}
	for (size_t i = 0; holder && i < snap->ngpus; i++) {
		const struct lease_info *h = holder[i];
		if (!h || exempt(r, h->user))
			continue;
		struct held *x = find(r, h);
		if (!x)
			continue;
		x->present = true;
		x->idle &= gpu_idle(&snap->gpus[i], r->o.util);
		size_t len = strlen(x->cur);
		snprintf(x->cur + len, sizeof x->cur - len, "%s%zu", len ? "," : "", i);
	}
	size_t w = 0;
	for (size_t i = 0; i < r->n; i++) {
		struct held *x = &r->v[i];
		if (!x->present) {
			/* its lease is gone: let go after the steps, or ended on its own */
			if (x->stage >= CHECKPOINT || (x->shell && x->stage >= TERMED)) {
				r->done++;
				char what[64];
				snprintf(what, sizeof what, "released: %s to the next in line",
					 strchr(x->gpus, ',') ? "the GPUs go" : "the GPU goes");
				say(r, x, "lease.reclaimed", what);
			}
			continue;
		}
		memcpy(x->gpus, x->cur, sizeof x->gpus);
		if (!x->idle && x->stage <= NOTIFIED) {
			/* busy again before the checkpoint signal: called off */
			if (x->stage == NOTIFIED)
				say(r, x, "lease.active", "busy again: reclaim called off");
			x->idle_ms = 0;
			x->stage = WATCH;
		} else if (x->idle && !x->idle_ms) {
			x->idle_ms = now_ms;
		}
		step(r, x, now_ms);
		r->v[w++] = *x;
	}
	r->n = w;
}
