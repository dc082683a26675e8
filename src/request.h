/*
 * request.h — what `gpuctl run` and `gpuctl pick` share: the GPU request
 * options (-n, --gpus, filters, --ids), restricting the choice to our own
 * CUDA_VISIBLE_DEVICES, one attempt at picking and leasing GPUs, and the
 * child's CUDA_VISIBLE_DEVICES value.
 */
#ifndef GPUCTL_REQUEST_H
#define GPUCTL_REQUEST_H

#include "cli.h"
#include "jobs/job.h"
#include "jobs/lease.h"
#include "jobs/select.h"
#include "jobs/visible.h"

struct request {
	struct job_gpus jg;          /* what the options asked for (lib/jobs/job.h) */
	const char *placed_spec;     /* gpuctld's placement, INDEX=UUID,...: it chose and checked them (runjob_spawned) */
	bool auto_said;              /* -n auto has said it took fewer than were free */
	bool peek_only;              /* request_try looks at leases but takes none (--dry-run) */
	bool raced;                  /* the last request_try chose free GPUs, but another job leased
					one of them first: worth trying again at once */
	/* set by request_prepare */
	gc_ctx *ctx;                 /* NULL with a placement until something needs NVML */
	const struct cli_global *g;  /* borrowed: to open ctx later */
	char *placed_buf;            /* the placement, split: uuids point into it */
	gc_snapshot snap;
	size_t ngpus;
	const char **uuids;          /* [ngpus], into snap */
	bool *allowed, *exclude, *wanted, *leased;
	bool *own;                   /* leased by an ancestor of ours (lease_ours): used, never leased */
	size_t nown;                 /* how many, as of the last request_try */
	bool wanted_known;           /* --gpus is parsed into wanted: later samples take only those */
	enum select_why *why;
	struct visible parent;       /* our own CUDA_VISIBLE_DEVICES */
	bool parent_set;
};

void request_init(struct request *r);
/* Handle one option ('n' and JOB_GPU_OPTIONS). -1: not a request option; else an exit code (printed). */
int request_option(struct request *r, int c, const char *arg);
/* Open the backend, sample, apply CUDA_VISIBLE_DEVICES, --exclude and --gpus,
 * and refuse a request that can never be met. Prints; returns an exit code.
 * With a placement (gpuctld's: the GPUs by index and UUID, chosen and checked
 * by the daemon) nothing is opened or sampled: the GPUs are only leased. */
int request_prepare(struct request *r, const struct cli_global *g);
/* Sample again (load, processes) before another attempt. */
int request_resample(struct request *r);
/* ctx, opened now if a placement left it closed. An exit code (printed). */
int request_open(struct request *r);
/*
 * One attempt: choose GPUs and, when d is non-NULL, lease them. Inside a lease
 * of an ancestor (`gpuctl pick --lease` in this shell, an outer `gpuctl run`),
 * only that lease's GPUs are chosen and none is leased again: *out then holds
 * no GPU, and releasing it leaves the ancestor's lease alone; a request that
 * does not fit in it is GC_EINVAL (printed). 0 with
 * chosen[sel.n] (and *out when leasing); GC_EBUSY when not now, with the
 * reason in `why` ("GPU 0 leased by alice (pid 41, since 10:02); ...");
 * another GC_E* on error (printed).
 */
int request_try(struct request *r, struct lease_dir *d, const struct lease_info *me,
		struct lease **out, unsigned *chosen, char *why, size_t whylen);
/* The child's CUDA_VISIBLE_DEVICES for chosen[sel.n]. */
int request_render(const struct request *r, const unsigned *chosen, char *buf, size_t len);
/* "GPU 3" / "2 GPUs" for records and messages */
void request_describe(const struct request *r, char *buf, size_t len);
void request_release(struct request *r);

/* Who holds a lease, for messages: "alice (pid 4121, since 10:02, job 'train')". */
void lease_holder_text(const struct lease_info *i, char *buf, size_t len);

#endif
