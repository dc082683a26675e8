/*
 * runjob.h — what `gpuctl run` and `gpuctl launch` share: the options for
 * waiting, spot notices, restarts and checkpoints, and the whole life of a
 * job: lease GPUs (waiting in line with --wait), set the environment, run
 * the command under the supervisor, release the GPUs.
 *
 * `launch` builds its command (torchrun ...) only once it knows how many
 * GPUs it has, through the ready() callback.
 */
#ifndef GPUCTL_RUNJOB_H
#define GPUCTL_RUNJOB_H
#include "jobs/job.h"
#include "request.h"
#include "jobs/spawnreq.h"

#include <getopt.h>

struct runjob {
	struct job_request r;
	bool wait;
	long long timeout_ms;        /* --wait=TIMEOUT; -1: no limit */
	const char *name;            /* --name, borrowed */
	struct job_opts jo;          /* the supervisor options (lib/jobs/job.h) */
	/*
	 * Called once the GPUs are chosen (leased, or only picked with dry_run)
	 * and CUDA_VISIBLE_DEVICES and the GPUCTL_* variables are in j->env: sets
	 * j->sv.argv (the command to supervise; NULL keeps the user's) and may
	 * add to the environment with runjob_setenv. Returns an exit code.
	 */
	int (*ready)(struct runjob *j, const unsigned *chosen, struct lease_dir *d);
	void *arg;
	/* choose GPUs without leasing them, call ready(), print the environment
	 * set for the job and the command, run nothing */
	bool dry_run;
	/* a job of gpuctld's, run by runjob_spawned (none has an option: gpuctl run cannot set them) */
	const char *status_file;     /* the user's status file: job status_slot's record is written at the end */
	long long status_slot;       /* its id, >= 1 (jobstatus.h); -1: no status file */
	int go_fd;                   /* one byte read once the GPUs are leased; end of file: never run; -1 */
	bool no_go;                  /* the go pipe gave end of file: nothing ran */
	/* before the status is written: the job's output is in its log (its writer's, runner.h); -1 when it
	 * could not all be written, and a job that had succeeded is failed (exit status 1); NULL: nothing */
	int (*log_drained)(void);
	bool ran;                    /* the command started; end says how it ended */
	enum supervise_end end;
	struct job_env env;          /* what the job gets besides our environment (runjob_setenv) */
};

/* getopt_long entries for the run options (see runjob_option); chars < 256 */
#define RUNJOB_LONG_OPTIONS                                    \
	JOB_GPU_OPTIONS,                                  \
	{"wait", optional_argument, NULL, 'w'},                \
	{"name", required_argument, NULL, 'N'},                \
	JOB_SUPERVISOR_OPTIONS

void runjob_init(struct runjob *j);
/* One option ('n', the request options and the above): -1 when not ours, else an exit code. */
int runjob_option(struct runjob *j, int c, const char *arg);
/*
 * A queued job in gpuctld's runner's child (runner.c), in-process: the GPUs
 * dispatch chose (r->placed) are leased, the command runs under the
 * supervisor with r's options once the go byte comes on SPAWNREQ_GO_FD,
 * and its exit status goes into r->status as job r->slot's record. What
 * `gpuctl run` would do with the same options; no argv is built for it.
 * An exit code.
 */
int runjob_spawned(const struct spawnreq *r);
/* Lease, run cmd (borrowed, NULL-terminated) under the supervisor, release. An exit code. */
int runjob_exec(struct runjob *j, const struct cli_global *g, char **cmd);
/* Set name for the job (never in ours), printed by --dry-run. An exit code. */
int runjob_setenv(struct runjob *j, const char *name, const char *value);
void runjob_release(struct runjob *j);
#endif
