/*
 * here.h — `gpuctl advise --here`: this machine as an option beside
 * renting. The plan for the workload on the fewest of this machine's GPUs
 * that hold it (the same planner as the catalog's instances, on one node),
 * and how long a job asking for them would wait in gpuctld's queue.
 */
#ifndef GPUCTL_LIB_HERE_H
#define GPUCTL_LIB_HERE_H

#include "advise/advise.h"
#include "gpuctl/gpuctl.h"

#include <stdbool.h>
#include <stdint.h>

struct here_machine {
	const spec_gpu *gpu;    /* its GPUs' row of gpus.csv (borrowed); NULL: not in the table */
	unsigned ngpus;         /* GPUs that could serve a job (not lost, quarantined, in MIG mode) */
	double host_gib;        /* host memory (for CPU offload plans); 0: unknown */
	double price;           /* $ per GPU-hour on-premises; < 0: not configured */
};

/*
 * The plan on the fewest of m's GPUs (one node) that fits req: GC_OK with
 * *out and *found; *found false when none does (m->gpu NULL: never). The
 * plan's row is *row's (filled here; keep it while the plan is used).
 */
int here_plan(const advise_req *req, const struct here_machine *m, const spec_gpu *gpus, size_t ngpus,
	      cat_row *row, advise_plan *out, bool *found, char *err, size_t errlen);

/* a job gpuctld runs or has queued, as `gpuctl advise --here` sees the queue */
struct here_job {
	unsigned ngpus;
	int64_t started_ms;     /* running: when it started; queued: 0 */
};

/*
 * How long (ms) a job asking for k GPUs, queued now behind queued[nq] (their
 * GPU counts, in dispatch order), would wait: free GPUs now, and the running
 * jobs' GPUs freed when each has run `runtime_ms` (a typical job's; one that
 * has run longer is given half of it more), the jobs ahead taking them first
 * come first served. total: the GPUs that could serve; those neither free
 * nor a running job's are taken never to be freed. -1 when it cannot be
 * told (no runtime known, or not enough GPUs would ever be freed); 0 when k
 * are free now and nothing is queued.
 */
int64_t here_wait_ms(unsigned k, unsigned free_now, unsigned total, const struct here_job *running, size_t nrun,
		     const unsigned *queued, size_t nq, double runtime_ms, int64_t now_ms);

/*
 * `gpuctl advise --here`'s answer for res on this machine at price $ per
 * GPU-hour (< 0: none): *out a new JSON object ("kind": free-now, queue,
 * busy, no-fit, unknown-gpu or no-gpus; "text", the line to print;
 * "machine", "plan", "free_gpus", "wait_s", "queue", "why" as they apply)
 * and *fits, whether the workload fits here. ctx holds this machine's GPUs
 * (borrowed; NULL: they cannot be seen, unseen says why). Free now is what
 * gpuctl pick would find for the calling user (the default state directory);
 * the wait is the one gpuctld's queue implies ("load", gpuctld-ask.h).
 * GC_OK; GC_ENOMEM; a GC_E* with err when the GPU table or the lease
 * directory cannot be read (*out may then hold a partial object: free it).
 */
int here_answer(const struct advise_result *res, gc_ctx *ctx, const char *unseen, double price, json_t **out,
		bool *fits, char *err, size_t errlen);

#endif
