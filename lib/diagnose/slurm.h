/*
 * slurm.h — the checks of `gpuctl slurm doctor`: can this machine submit
 * GPU jobs that gpuctl launch --slurm will run correctly? Policy only, as
 * doctor.h: what the Slurm commands printed and gres.conf's text come in
 * through struct slurm_env (so tests can set them), verdicts go out as
 * doctor_checks.
 */
#ifndef GPUCTL_LIB_SLURM_H
#define GPUCTL_LIB_SLURM_H
#include <stdbool.h>

#include "diagnose/doctor.h"

struct slurm_env {
	const char *version;       /* what `sinfo --version` printed ("slurm 22.05.8"), or NULL */
	int version_rc;            /* its exit status, <0 when it did not run */
	const char *missing;       /* client commands not on PATH ("sbatch, srun"), "" for none */
	int ping_rc;               /* `scontrol ping`: exit status, <0 when it did not run or timed out */
	const char *ping_out;
	int sinfo_rc;              /* `sinfo -h -o %P|%G|%D|%a`: exit status, <0 not run */
	const char *sinfo_out;
	const char *gres_path;     /* this node's gres.conf; NULL: the configuration is unknown */
	const char *gres_conf;     /* its text; NULL: not there or not readable */
};

/* Run the checks (slurm.client, slurm.controller, slurm.gpu_partitions,
 * slurm.gres_conf). 0, or GC_ENOMEM. */
int slurm_run(const struct slurm_env *e, struct doctor_report *r);

/*
 * What gres.conf says about GPUs: 1 when a Name=gpu line has File= (or
 * AutoDetect is set), so Slurm sets CUDA_VISIBLE_DEVICES; 0 when GPUs are
 * only counted (Count= alone); -1 when no line names gpu. `line` gets the
 * first Name=gpu line (trimmed) when there is one.
 */
int slurm_gres_sets_devices(const char *text, char *line, size_t len);
#endif
