/*
 * job.h — a job's GPUs: choose among those free now (select.c) and lease
 * them (lease.c), choosing again when another process leased one between
 * the look and the lease. The public gc_pick / gc_lease_* are this.
 * And a job's supervisor options (job-opts.c): one table for gpuctl run,
 * launch, submit, gpuctld and its runner.
 */
#ifndef GPUCTL_LIB_JOB_H
#define GPUCTL_LIB_JOB_H

#include "device/gpu.h"
#include "jobs/lease.h"
#include "jobs/select.h"
#include "jobs/visible.h"
#include "spot/spot.h"
#include "jobs/supervise.h"

#include <stdbool.h>

/*
 * Choose r->n GPUs of s not leased in d (NULL: no state directory, so none
 * is leased) into chosen[r->n] (NVML indices, ascending) and, when out is
 * non-NULL, lease them for `me`. A GPU leased by someone else between the
 * look and the lease makes it look and choose again (a few times).
 * 0; GC_ENOTNOW when fewer than r->n are free now; GC_EBUSY when others
 * kept taking the chosen ones; another GC_E* with err set.
 */
int job_acquire(const gc_snapshot *s, const struct select_request *r, struct lease_dir *d,
		const struct lease_info *me, unsigned *chosen, struct lease **out, char *err, size_t errlen);

/* What the GPU request options set: how many GPUs, which, and the filters. */
struct job_gpus {
	struct select_request sel;   /* n and the filters (sel.uid: the caller's) */
	const char *gpus_spec;       /* --gpus LIST: exactly these GPUs */
	const char *exclude_spec;    /* --exclude LIST */
	bool ids_uuid;               /* --ids uuid */
	bool n_given;
	bool allow_auto;             /* -n auto is accepted (launch) */
	const char *n_name;          /* how the count is spelled in messages: "-n" (NULL), "--free" */
	bool n_auto;                 /* -n auto: every GPU that is free now (a power of two), at least 1 */
	bool choice_given;           /* -n, --gpus, --exclude or a filter was given */
};

/*
 * The GPU request options of gpuctl run, pick and launch (getopt_long
 * entries, with -n besides); gpuctl submit takes -n, --model and
 * --min-free-mem of them, by the same rules. Chars < 256.
 */
#define JOB_GPU_OPTIONS                                        \
	{"gpus", required_argument, NULL, 'g'},                \
	{"min-free-mem", required_argument, NULL, 'M'},        \
	{"max-util", required_argument, NULL, 'U'},            \
	{"model", required_argument, NULL, 'm'},               \
	{"exclude", required_argument, NULL, 'x'},             \
	{"shared", no_argument, NULL, 's'},                    \
	{"ids", required_argument, NULL, 'I'}

/* one GPU, any load, for this process's user */
void job_gpus_init(struct job_gpus *g);
/* -n or one of JOB_GPU_OPTIONS by its getopt char: GC_OK; GC_EINVAL with the reason; GC_ENOTFOUND when c is none */
int job_gpu_option(struct job_gpus *g, int c, const char *arg, char *err, size_t errlen);

/*
 * A job's GPU request as it is being met (job-request.c): what the options
 * asked for, and what a sample and the leases say.
 */
struct job_request {
	struct job_gpus jg;          /* what the options asked for */
	const char *placed_spec;     /* gpuctld's placement, INDEX=UUID,...: it chose and checked them (gpuctld-runner) */
	bool auto_said;              /* -n auto has said it took fewer than were free (in note) */
	char note[200];              /* something the caller may tell the user once ("-n auto: ..."); "" when none */
	bool peek_only;              /* job_request_try looks at leases but takes none (--dry-run) */
	bool server_picks;           /* authority mode, gpuctld chooses (the caller sets it before
					job_request_prepare when it will lease): samples take only what
					names the GPUs and what gpuctld's table has (gputable.h) */
	bool blind;                  /* ... and it asks before it looks at anything: gpuctld's answer
					brings its table, and job_request_acquire prepares the request on it */
	const char *sim_node;        /* borrowed: how NVML opens, should the request need it (--sim) */
	bool raced;                  /* the last job_request_try chose free GPUs, but another job leased
					one of them first: worth trying again at once */
	void *caller;                /* the caller's own (the CLI keeps its options there) */
	bool ctx_borrowed;           /* ctx stays the caller's: job_request_release leaves it open */
	/* set by job_request_prepare */
	gc_ctx *ctx;                 /* NULL with a placement until the caller opens one */
	char *placed_buf;            /* the placement, split: uuids point into it */
	gc_snapshot snap;
	size_t ngpus;
	const char **uuids;          /* [ngpus], into snap */
	bool *allowed, *exclude, *wanted, *leased;
	bool *quarantined;           /* out of service (quarantine.h), as of the last job_request_try */
	bool *own;                   /* leased by an ancestor of ours (lease_ours): used, never leased */
	size_t nown;                 /* how many, as of the last job_request_try */
	bool wanted_known;           /* --gpus is parsed into wanted: later samples take only those */
	enum select_why *why;
	struct visible parent;       /* our own CUDA_VISIBLE_DEVICES */
	bool parent_set;
};

void job_request_init(struct job_request *r);
/* Options that contradict each other (-n with --gpus; a choice with a placement): GC_EINVAL with err.
 * job_request_prepare checks it first; a caller may ask before it opens anything. */
int job_request_check(const struct job_request *r, char *err, size_t errlen);
/* Whether, in authority mode, the request may be asked of gpuctld blind (set r->blind instead of
 * job_request_prepare): it names no GPU, sets no filter a sample must check first, and runs under no
 * CUDA_VISIBLE_DEVICES. */
bool job_request_blind_ok(const struct job_request *r);
/*
 * Sample ctx (the request's from now on: job_request_release frees it,
 * unless ctx_borrowed),
 * apply CUDA_VISIBLE_DEVICES, --exclude and --gpus, and refuse a request
 * that can never be met. With a placement ctx may be NULL: nothing is
 * sampled, the GPUs are only leased. GC_OK; GC_EINVAL (a request that
 * cannot be, said in err); GC_ENOTFOUND (no GPU at all); GC_ENOMEM; a
 * sampling error.
 */
int job_request_prepare(struct job_request *r, gc_ctx *ctx, char *err, size_t errlen);
/* Sample again (load, processes) before another attempt. GC_OK, or a GC_E* with err. */
int job_request_resample(struct job_request *r, char *err, size_t errlen);
/*
 * One attempt: choose GPUs and, when d is non-NULL, lease them for me.
 * Inside a lease of an ancestor, only that lease's GPUs are chosen and none
 * is leased again: *out then holds no GPU, and releasing it leaves the
 * ancestor's lease alone. GC_OK with chosen[jg.sel.n] (and *out when
 * leasing); GC_EBUSY when not now, with the reason in why ("GPU 0 is leased
 * by alice (pid 41, since 10:02); ..."); GC_EINVAL (a request that does not
 * fit the lease it runs inside) or another GC_E*, with the message in why.
 */
int job_request_try(struct job_request *r, struct lease_dir *d, const struct lease_info *me, struct lease **out,
		    unsigned *chosen, char *why, size_t whylen);
/*
 * job_request_try until the GPUs are leased for me: at once, or, with wait,
 * in line behind earlier requests (a ticket in d, first come first served;
 * only the head of the line looks at the GPUs again, woken by a release),
 * for at most timeout_ms (-1: no limit). A choice lost to another job's
 * lease is made again at once. *stop (NULL: none), set by the caller's
 * signal handler, ends the wait. GC_OK with *out and chosen, and *ticket
 * still in line (the caller withdraws it once the job has what it needs to
 * know its place: lease_queue_withdraw, then lease_queue_leave); GC_EBUSY
 * (not now, and no wait) or GC_ETIMEDOUT with the reason in why;
 * GC_ECANCELED when *stop was set; another GC_E* with the message in why.
 * Nothing is leased and no ticket is left on any of them.
 */
int job_request_acquire(struct job_request *r, struct lease_dir *d, const struct lease_info *me, bool wait,
			long long timeout_ms, const volatile int *stop, struct lease **out, struct lease_ticket **ticket,
			unsigned *chosen, char *why, size_t whylen);
/* The child's CUDA_VISIBLE_DEVICES for chosen[jg.sel.n]. */
int job_request_render(const struct job_request *r, const unsigned *chosen, char *buf, size_t len);
/* "GPU 3" / "2 GPUs" / "every free GPU", for records and messages */
void job_request_describe(const struct job_request *r, char *buf, size_t len);
void job_request_release(struct job_request *r);

/* What the supervisor options set. */
struct job_opts {
	bool spot, ack;
	bool no_explain;             /* --no-explain: a failed job's output is not kept nor explained */
	const char *retry_on;        /* --retry-on: the failure classes a retry fixes ("oom-fragmentation,..."),
					borrowed; NULL: none */
	bool bigger;                 /* --bigger: an oom-too-big moves to GPUs with more free memory */
	const char *cloud_arg;       /* --cloud, borrowed; "auto" */
	struct supervise_opts sv;
	struct spot_opts so;
};

/*
 * The supervisor options: what gpuctl run and launch take and what a queued
 * job may carry (gpuctl submit and gpuctld check them with
 * job_queued_option, gpuctld's runner applies them). The one list of them,
 * as getopt_long entries; chars < 256.
 */
#define JOB_SUPERVISOR_OPTIONS                                 \
	{"spot", no_argument, NULL, 'S'},                      \
	{"cloud", required_argument, NULL, 'C'},               \
	{"poll", required_argument, NULL, 'P'},                \
	{"grace", required_argument, NULL, 'G'},               \
	{"on-notice", required_argument, NULL, 'O'},           \
	{"ack", no_argument, NULL, 'A'},                       \
	{"restart", required_argument, NULL, 'R'},             \
	{"max-restarts", required_argument, NULL, 'X'},        \
	{"backoff", required_argument, NULL, 'B'},             \
	{"checkpoint-dir", required_argument, NULL, 'K'},      \
	{"hang-timeout", required_argument, NULL, 'T'},        \
	{"on-warning", required_argument, NULL, 'W'},          \
	{"no-explain", no_argument, NULL, 'E'},                \
	{"retry-on", required_argument, NULL, 'Y'},            \
	{"bigger", no_argument, NULL, 'Z'}

/* the classes --retry-on takes, comma-separated in the message of a bad one */
#define JOB_RETRY_CLASSES "oom-fragmentation, oom-other-process, oom-transient, oom-too-big, nccl-timeout, xid, gpu-lost"
/* Is class (explain_class's) in the --retry-on list? */
bool job_retry_listed(const struct job_opts *o, const char *cls);

/* the defaults: no spot watcher, never restart, 3 restarts at most, backoff 1s:5m */
void job_opts_init(struct job_opts *o);
/* Is getopt's c one of JOB_SUPERVISOR_OPTIONS? */
bool job_is_supervisor_option(int c);
/* One supervisor option by its getopt char: GC_OK; GC_EINVAL with the reason in err; GC_ENOTFOUND when c is none. */
int job_option(struct job_opts *o, int c, const char *arg, char *err, size_t errlen);
/*
 * What the options add up to, before anything is leased or run: --retry-on
 * without --no-explain, --checkpoint-dir not a file, --cloud known (and,
 * with detect, "auto" found from DMI) into *cloud (SPOT_NONE without
 * --spot). GC_OK, or GC_EINVAL with the reason.
 */
int job_opts_resolve(const struct job_opts *o, bool detect, enum spot_cloud *cloud, char *err, size_t errlen);
/* One as the queue stores it, "--NAME" or "--NAME=VALUE": GC_OK, or GC_EINVAL with the reason (which
 * names the options a queued job may take). */
int job_queued_option(struct job_opts *o, const char *opt, char *err, size_t errlen);

/*
 * What a job adds to its caller's environment (job-run.c): "NAME=value"
 * entries, each name once, in the order first set. v is NULL-terminated.
 */
#define JOB_ENV_MAX 40
struct job_env {
	char *v[JOB_ENV_MAX + 1];
	size_t n;
};

void job_env_init(struct job_env *e);
void job_env_free(struct job_env *e);
/* Set name (again: it keeps its place). GC_OK; GC_EINVAL for a bad name; GC_ENOMEM (also when full). */
int job_env_set(struct job_env *e, const char *name, const char *value);
/* name's value in e, or NULL */
const char *job_env_get(const struct job_env *e, const char *name);
/*
 * CUDA_VISIBLE_DEVICES (job_request_render), CUDA_DEVICE_ORDER=PCI_BUS_ID,
 * GPUCTL_GPUS (NVML indices), GPUCTL_GPU_UUIDS and GPUCTL_NUM_GPUS for
 * chosen[r->jg.sel.n]. GC_OK, or a GC_E* with err.
 */
int job_env_gpus(struct job_env *e, const struct job_request *r, const unsigned *chosen, char *err, size_t errlen);

/* A job whose GPUs are leased (job_request_acquire), to run. */
struct job_run {
	struct job_request *r;
	const unsigned *chosen;      /* [r->jg.sel.n] */
	struct lease *lease;         /* the caller's: it releases it after job_run */
	struct lease_dir *d;
	struct lease_ticket **ticket; /* the caller's place in line or NULL: withdrawn at once, left
					 (*ticket = NULL) once the command runs */
	struct job_opts *jo;         /* the supervisor options; jo->sv.argv: the command */
	enum spot_cloud cloud;       /* the spot watcher's cloud; SPOT_NONE: none */
	struct job_env *env;         /* what the job gets besides our environment (job_env_gpus and the
					caller's own); GPUCTL_LEASE_START and GPUCTL_TICKET are added */
	int go_fd;                   /* gpuctld's go pipe: one byte, then the command runs; end of file:
					it never runs; -1: none */
	const volatile int *stop;    /* set by the caller's signal handler: the command never starts */
	/* opens r->ctx when a placement left it NULL (the first look at the load, for --hang-timeout);
	 * GC_OK or a GC_E*; NULL: the load stays unknown */
	int (*open_ctx)(struct job_request *r, void *arg);
	void (*log)(void *arg, const char *line); /* one line for the user, no newline; NULL: none */
	void *arg;
};

struct job_run_result {
	bool ran;                    /* the command started (its status says how it ended) */
	bool no_go;                  /* the go pipe gave end of file: nothing ran */
	struct supervise_result sv;  /* with GC_OK */
};

/*
 * Run j's command under the supervisor with its GPUs, until it ends for
 * good. GC_OK with res->sv (a command that could not be run is that too,
 * SUPERVISE_END_EXEC_FAILED, said in the log); GC_ECANCELED when *stop was
 * set or the go pipe closed (res->no_go) before it started; another GC_E*
 * with err when it could not be set up (the checkpoint directory, the
 * lease, the spot watcher, the supervisor). The lease stays the caller's.
 */
int job_run(struct job_run *j, struct job_run_result *res, char *err, size_t errlen);

#endif
