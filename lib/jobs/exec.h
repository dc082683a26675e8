/*
 * exec.h — the whole life of a job, one path for `gpuctl run`, `gpuctl
 * launch`, gpuctld's runner and Python's gpuctl.run(): lease its GPUs
 * (waiting in line when asked), run it under the supervisor (job_run),
 * explain a failure from its last output, plan a retry by the one rule
 * (job_retry_plan), and release. gpuctld's queue retries a queued job on
 * other GPUs by the same job_retry_plan.
 *
 * Never prints: the lines for the user go through log(), the findings of a
 * failure (a block of lines) through report().
 */
#ifndef GPUCTL_LIB_EXEC_H
#define GPUCTL_LIB_EXEC_H

#include "jobs/job.h"

#include <stdbool.h>
#include <stdint.h>

/* How a failure is retried. */
enum job_retry_how {
	JOB_RETRY_NO,
	JOB_RETRY_IN_PLACE,          /* the same GPUs, the lease kept: the allocator's setting changed */
	JOB_RETRY_ELSEWHERE,         /* other GPUs: those it failed on left out */
	JOB_RETRY_BIGGER,            /* GPUs with at least min_free free (oom-too-big, --bigger) */
};

/* What the plan is made from, besides the job's options. */
struct job_retry_in {
	const char *cls;             /* the failure's class (explain_class) */
	unsigned retries;            /* retries spent so far (a queued job's: its starts but the first) */
	double need_mib;             /* oom-too-big: what it needed on one GPU (explain_need_mib), MiB */
	const char *gpus_named;      /* "--gpus" or "gpuctld's placement" when the GPUs are named; NULL */
	uint64_t min_free;           /* the free memory it asks for now, bytes */
	uint64_t largest;            /* the largest GPU's memory here, bytes */
	const char *alloc_conf;      /* PYTORCH_CUDA_ALLOC_CONF in its environment now; NULL */
	unsigned want;               /* how many GPUs it runs on */
	size_t left;                 /* GPUs left here once those it failed on are left out */
	const char *failed_on;       /* those GPUs, "0,1" (for the message) */
};

struct job_retry {
	enum job_retry_how how;
	const char *cls;             /* the class retried by --retry-on's name for it */
	char alloc_conf[512];        /* JOB_RETRY_IN_PLACE: the new PYTORCH_CUDA_ALLOC_CONF */
	uint64_t min_free;           /* JOB_RETRY_BIGGER: at least this much free */
	char msg[700];               /* "retrying (1 of 3, --retry-on X): WHAT" or "not retried: WHY"; "" when
					--retry-on does not name the class */
};

/*
 * The one retry rule: after a failure of class in->cls, whether --retry-on
 * asks for a retry, one is left (--max-restarts: in->retries spent), and
 * how: oom-fragmentation in place with expandable_segments merged into the
 * user's PYTORCH_CUDA_ALLOC_CONF (alloc-conf-expandable-segments-unsupported,
 * PyTorch before 2.1: max_split_size_mb:128 instead); oom-too-big, with
 * --bigger, on GPUs with more free memory than it needed; the other classes
 * on other GPUs, while enough are left. Named GPUs are never moved.
 */
void job_retry_plan(const struct job_opts *jo, const struct job_retry_in *in, struct job_retry *out);

#define JOB_ATTEMPTS_MAX 16

/* One attempt: where it ran and how it ended. */
struct job_attempt {
	char gpus[96];               /* NVML indices, "0,1" */
	bool ran;
	int status;                  /* exit status; 128+N: signal N */
	char cls[64];                /* its failure's class; "" */
	enum job_retry_how retry;    /* what followed it */
};

struct job_exec {
	/* in */
	struct job_request *r;       /* prepared (job_request_prepare, or blind in authority mode) */
	struct job_opts *jo;         /* the supervisor options; jo->sv.argv: the command */
	struct job_env *env;         /* what the job gets besides our environment */
	const char *name;            /* its lease's name; NULL */
	bool wait;                   /* wait in line for the GPUs */
	long long timeout_ms;        /* ... at most this long; -1: no limit */
	enum spot_cloud cloud;       /* the spot watcher's cloud; SPOT_NONE */
	int go_fd;                   /* gpuctld's go pipe (job_run); -1 */
	const volatile int *stop;    /* set by the caller's signal handler: stop waiting, start nothing */
	int (*open_ctx)(struct job_request *r, void *arg); /* job_run's; NULL */
	/* the GPUs are chosen and the env has them: may set jo->sv.argv and add to env; 0 to go on, else
	 * the caller's own code, which ends the job (x->ready_rc) */
	int (*ready)(void *arg, const unsigned *chosen, struct lease_dir *d);
	void (*log)(void *arg, const char *line);   /* a line for the user, no newline; NULL */
	void (*report)(void *arg, const char *text); /* a failure's findings, whole lines; NULL: log's */
	void *arg;
	/* our stdout and stderr reach this log, open for reading (a queued job's capped log, through its writer):
	 * the job gets them as they are and a failure is explained from the log's tail, read once
	 * out_sync(arg) (when not NULL) has seen the job's output reach it (outtail_open_log); -1 */
	int out_log;
	int (*out_sync)(void *arg);
	unsigned retries;            /* in: retries spent before (a queued job's); out: in all */
	/* out */
	bool ran;                    /* the command started (status and end say how it ended) */
	bool no_go;                  /* the go pipe gave end of file: nothing ran */
	int status;                  /* the last attempt's exit status */
	enum supervise_end end;
	int ready_rc;                /* ready()'s code when it ended the job */
	char cls[64];                /* the last failure's class; "" */
	size_t nattempts;            /* attempts[] holds the first JOB_ATTEMPTS_MAX */
	struct job_attempt attempts[JOB_ATTEMPTS_MAX];
};

/* what a struct job_exec needs before its in fields are set */
void job_exec_init(struct job_exec *x);
/*
 * x on a request, options and an environment of the caller's, each made new:
 * job_request_init, job_opts_init, job_env_init and job_exec_init at once, and
 * x->r, x->jo, x->env set (gc_run_json, gpuctld's runner). job_exec_release
 * frees what they hold.
 */
void job_exec_setup(struct job_exec *x, struct job_request *r, struct job_opts *jo, struct job_env *env);
void job_exec_release(struct job_exec *x);
/*
 * Lease, run, explain, retry, release. GC_OK with x->status (the command
 * ran, or could not be run: SUPERVISE_END_EXEC_FAILED); GC_EBUSY ("DESC not
 * available now: WHY" in err) or GC_ETIMEDOUT (the wait's limit, err says
 * why) when the GPUs are not to be had; GC_ECANCELED when *stop was set or
 * the go pipe closed before it started (x->no_go), or ready() ended it
 * (x->ready_rc); another GC_E* with err. Nothing is left leased.
 */
int job_exec(struct job_exec *x, char *err, size_t errlen);

/*
 * Python's gpuctl.run and programs on libgpuctl (gc_run_json): options as
 * "--NAME[=VALUE]" (the GPU request, --wait, --name and the supervisor
 * options), one at a time. GC_OK; GC_EINVAL with err.
 */
int job_exec_option(struct job_exec *x, const char *opt, char *err, size_t errlen);

#endif
