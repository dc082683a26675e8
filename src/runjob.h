/*
 * runjob.h — what `gpuctl run` and `gpuctl launch` share: the options for
 * waiting, spot notices, restarts and checkpoints, and the whole life of a
 * job as the library's job_exec lives it (lib/jobs/exec.h): lease GPUs
 * (waiting in line with --wait), set the environment, run the command under
 * the supervisor, explain a failure and retry it, release the GPUs.
 *
 * `launch` builds its command (torchrun ...) only once it knows how many
 * GPUs it has, through the ready() callback.
 */
#ifndef GPUCTL_RUNJOB_H
#define GPUCTL_RUNJOB_H
#include "jobs/job.h"
#include "request.h"

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
	bool ran;                    /* the command started; end says how it ended (set by runjob_exec) */
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
/* Lease, run cmd (borrowed, NULL-terminated) under the supervisor, release. An exit code. */
int runjob_exec(struct runjob *j, const struct cli_global *g, char **cmd);
/* Set name for the job (never in ours), printed by --dry-run. An exit code. */
int runjob_setenv(struct runjob *j, const char *name, const char *value);
void runjob_release(struct runjob *j);
#endif
