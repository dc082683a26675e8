/*
 * reclaim.h — gpuctld's idle reclaim (docs/policy.md): a lease whose GPUs
 * all stay idle (utilization and memory activity at most --reclaim-util %)
 * for --reclaim-after gets, a --reclaim-grace apart: a notification
 * (lease.idle; activity in the grace that follows calls it off); the
 * checkpoint signal (--reclaim-signal, SIGUSR1 by default) to its job's
 * process; SIGTERM to the gpuctl that holds it (which passes it on to the job
 * and lets its lease go when the job has ended); SIGKILL to both. The next
 * waiter or queued job then gets the GPUs (lease.reclaimed). Users of
 * --reclaim-exempt are left alone. A `gpuctl pick --lease` lease has no job:
 * its holder gets SIGTERM in the checkpoint's place (the shell lives on).
 * Signals go through a pidfd checked against each process's start and owner.
 */
#ifndef GPUCTL_DAEMON_RECLAIM_H
#define GPUCTL_DAEMON_RECLAIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "device/gpu.h"
#include "jobs/lease.h"

struct reclaim_opts {
	long long after_ms;       /* 0: off */
	long long grace_ms;
	int signal;               /* the checkpoint signal */
	unsigned util;            /* idle: utilization and memory activity at most this, in % */
	const char *exempt;       /* borrowed: "alice,bob", or NULL */
	struct notify *notify;    /* borrowed, or NULL */
};

/* --reclaim-signal's value: a name (USR1, SIGUSR1, ...) or a number. 0, or -1 with err. */
int reclaim_parse_signal(const char *arg, int *sig, char *err, size_t errlen);

struct reclaim;

/* NULL when out of memory. */
struct reclaim *reclaim_new(const struct reclaim_opts *o);
void reclaim_free(struct reclaim *r);

/* After each sample (the sampler's thread): holder[ngpus] each GPU's lease holder or NULL. */
void reclaim_sample(struct reclaim *r, const gc_snapshot *snap, const struct lease_info *const *holder,
		    int64_t now_ms);

/* Leases reclaimed (their GPUs let go after the steps) since gpuctld started. */
uint64_t reclaim_count(const struct reclaim *r);
#endif
