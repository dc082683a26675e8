/*
 * dispatch.h — which queued jobs start now, on which GPUs: priorities first,
 * then (with fair share) users with less recent GPU time, then submission
 * order, and a job that cannot start yet is never starved.
 *
 * A job that does not fit holds (reserves) the free GPUs it could use, and
 * every GPU that frees later goes to it before any job behind it: a stream
 * of 1-GPU jobs cannot keep a 4-GPU job waiting forever. A job behind it
 * may still start on GPUs the blocked job cannot use (its filters exclude
 * them). No runtime estimates are asked for, so there is no backfill that
 * could delay the blocked job. A job that could not start without GPUs its
 * own user holds holds nothing either: a user's own leases never make
 * others wait for it. Pure policy: no I/O, no clock.
 */
#ifndef GPUCTL_DAEMON_DISPATCH_H
#define GPUCTL_DAEMON_DISPATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dispatch_job {
	int64_t id;
	int priority;             /* higher first; ties by share, then by arrival, then by id */
	double share;             /* fair share: its user's recent GPU time (lower first); 0 for all: FIFO */
	int64_t arrival;          /* when it joined the line (ms); queued jobs and waiters share one clock */
	unsigned ngpus;           /* >= 1 */
	const bool *eligible;     /* borrowed: [ngpu] GPUs its filters allow; NULL: all */
	const bool *own;          /* borrowed: [ngpu] GPUs its own user holds; NULL: none */
	bool nowait;              /* starts now or never: holds nothing for itself */
};

/*
 * Which of the usable GPUs (usable[ngpu], at least j->ngpus set) job j starts
 * on: writes j->ngpus indices into gpus[]. Returns 0, or -1 to take the
 * lowest usable indices. gpuctld passes select_pick's ranking, so a queued
 * job lands where gpuctl run would put it.
 */
struct dispatch_job;
typedef int (*dispatch_choose_fn)(void *arg, const struct dispatch_job *j, const bool *usable, size_t ngpu,
				  unsigned *gpus);

struct dispatch_start {
	int64_t id;
	unsigned gpus[64];        /* GPU indices, ascending */
	unsigned n;
};

/*
 * jobs[n] (any order; only ones ready to run: their --after jobs are done),
 * is_free[ngpu] the GPUs free now. Writes the jobs to start into out[max] and
 * returns how many. A job asking for more GPUs than it could ever get
 * (more than ngpu, or than its eligible GPUs) never starts and blocks
 * nothing; the caller fails it.
 *
 * *left (when not NULL) is set to the free GPUs neither started on nor held
 * for a blocked job. When it is 0, jobs after these in the order could not
 * start either: the caller may plan a prefix of its queue (in priority, id
 * order) and look further only while *left > 0. When allocation fails,
 * nothing starts and *left is the number of free GPUs.
 *
 * choose (or NULL: the lowest indices) places each job that starts on GPUs
 * it may use that are free and not held; its answer is checked, and one that
 * names a GPU outside them, or twice, falls back to the lowest indices.
 */
size_t dispatch_plan(const struct dispatch_job *jobs, size_t n, const bool *is_free, size_t ngpu,
		     dispatch_choose_fn choose, void *arg, struct dispatch_start *out, size_t max, size_t *left);
#endif
