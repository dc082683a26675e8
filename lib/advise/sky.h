/*
 * sky.h — `gpuctl advise --emit skypilot`: the ranked plans as a SkyPilot
 * task YAML (resources.ordered or any_of, job_recovery, a checkpoint bucket
 * mounted, setup and run), so that `sky jobs launch` provisions the
 * cheapest feasible setup and relaunches it elsewhere after a preemption,
 * while gpuctl on the VM handles the notice, the checkpoints and the resume.
 * Keys and shapes follow SkyPilot's sky/utils/schemas.py (docs/cloud.md).
 */
#ifndef GPUCTL_LIB_SKY_H
#define GPUCTL_LIB_SKY_H

#include "advise/advise.h"
#include "advise/specs.h"

#include <stdbool.h>
#include <stdio.h>

struct advise_sky_opts {
	char *const *cmd;           /* the job's command (argv), at least one word */
	size_t ncmd;
	bool any;                   /* resources.any_of (SkyPilot picks) instead of ordered (cheapest first) */
	bool launch;                /* gpuctl launch (torchrun, one process per GPU) instead of gpuctl run */
	const char *bucket;         /* checkpoint bucket URL mounted at ckpt_dir, or NULL */
	const char *ckpt_dir;       /* on the VM; NULL: /gpuctl-ckpt with a bucket, $HOME/gpuctl-ckpt without */
	const char *install;        /* setup's line when gpuctl is absent; NULL: fail, saying so */
	const char *name;           /* the task's name; NULL: gpuctl-MODEL-TASK */
	unsigned max_restarts;      /* job_recovery.max_restarts_on_errors */
	unsigned disk_gb;           /* resources.disk_size */
};

/*
 * SkyPilot's name for the accelerator of plan row r of GPU g: the row's own
 * name when the table has it, else the table's first name for g; NULL when
 * SkyPilot has none.
 */
const char *sky_accelerator(const spec_sky *t, size_t n, const char *row_acc, const char *gpu);

/*
 * Write res's shown plans (at most res->top) of the cheapest plan's node
 * count as a task YAML to f (several nodes: num_nodes, and gpuctl launch
 * --sky-step on each). GC_OK; GC_EINVAL with the reason in err (no feasible
 * plan, a cloud SkyPilot does not know, a GPU it has no name for, a bucket
 * that is not a URL); GC_EIO when f fails. name[namelen] (or NULL) receives
 * the task's name: o->name, else the default it chose ("gpuctl-MODEL-TASK").
 */
int advise_emit_skypilot(const struct advise_result *res, const spec_sky *t, size_t nt,
			 const struct advise_sky_opts *o, FILE *f, char *name, size_t namelen, char *err, size_t errlen);

#endif
