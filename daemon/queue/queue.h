/*
 * queue.h — gpuctld's job queue server: a Unix socket where each caller is
 * known by SO_PEERCRED (never by what it claims), the SQLite store, and
 * event-driven dispatch — on a submit, a job's end, a lease freed — that
 * starts each job as its user, forked by the job runner and leasing its
 * GPUs as gpuctl run does, so queued and interactive jobs share one lease
 * mechanism. docs/queue.md; the parts are in queue-int.h.
 */
#ifndef GPUCTL_DAEMON_QUEUE_H
#define GPUCTL_DAEMON_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sampler.h"

struct queue_opts {
	const char *db;          /* the SQLite file */
	const char *socket;      /* the Unix socket path */
	const char *log_dir;     /* per-job logs: LOG_DIR/ID.log, owned by the job's user */
	long long log_keep_ms;   /* a log is removed this long after its job ended; 0: kept */
	uint64_t log_max;        /* a job's log is cut to stay under this (lib/jobs/joblog.h); 0: no cap */
	uint64_t log_user_max;   /* one user's logs in all: over it, the oldest of ended jobs go; 0: no cap */
	const char *runner;      /* the job runner, gpuctld-runner (daemon/runner/runner.h) */
	const char *sim;         /* the simulated node, passed on to jobs; NULL for the driver */
	gid_t admin_gid;         /* members may act on every job; (gid_t)-1: none */
	long max_queued;         /* queued jobs one user (not root, not the admin group) may have; 0: no limit */
	size_t max_job_bytes;    /* a job's argv and environment as stored (JSON); 0: no limit */
	long long job_keep_ms;   /* an ended job's record is deleted this long after it ended; 0: kept */
	struct notify *notify;   /* borrowed: job events go to it (notify.h), or NULL; set by queue_run */
	double gpu_hour_price;   /* gpuctl usage's cost of a GPU-hour; 0: none */
	const char *price_source; /* borrowed: where that price comes from (--gpu-hour-price auto), or NULL */
	long long fair_half_life_ms; /* fair share: usage decays by half this often; 0: off (FIFO) */
	const char *authority_dir;   /* authority mode (--authority): its directory (socket, marker); NULL: off */
};


struct queue;

/*
 * The queue's Prometheus lines (job counts by state, running jobs by user,
 * the oldest wait, waits of started jobs) as of the last change, with the
 * oldest wait computed now: written into buf (len bytes); returns the length.
 */
size_t queue_metrics(struct queue *q, char *buf, size_t len);

/*
 * /api/v1/jobs: queued and running jobs as JSON (id, user, name, state,
 * GPUs, times; never a command line or an environment: the page is not
 * authenticated) as of the last change. Caller frees; NULL when out of memory.
 */
char *queue_jobs_json(struct queue *q, size_t *len);

/*
 * Take the database's and the socket's locks, open the store and listen on
 * the socket, acting on nothing yet: no job is started, adopted or recorded
 * until queue_run (gpuctld holds everything it needs before any policy runs).
 * o->notify is not used (queue_run's is). 0, or -1 with a one-line message in
 * err. Release it with queue_stop.
 */
int queue_open(struct queue **out, const struct queue_opts *o, char *err, size_t errlen);
/*
 * Start the queue's thread: recovery of the jobs an earlier gpuctld left, then
 * dispatch. s (the sampler) and nt (job events; NULL: none) are borrowed for
 * as long as q runs. 0, or -1 with err; queue_stop releases q either way.
 */
int queue_run(struct queue *q, struct sampler *s, struct notify *nt, char *err, size_t errlen);
void queue_stop(struct queue *q);
#endif
