/*
 * launch.h — what `gpuctl launch` knows about torchrun and Slurm, as pure
 * functions: placeholder expansion in the job's arguments, torchrun's
 * command line, the fail-fast environment defaults, and the sbatch script
 * for a multi-node job. Never runs anything, never reads the environment
 * except where a function says so.
 */
#ifndef GPUCTL_LIB_LAUNCH_H
#define GPUCTL_LIB_LAUNCH_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "jobs/torchenv.h"

/* the values placeholders stand for */
struct launch_vars {
	int64_t gpus;        /* processes (GPUs) per node */
	int64_t nodes;
	int64_t world_size;  /* gpus * nodes */
};

/*
 * Expand the placeholders in arg: "{gpus}", "{nodes}", "{world_size}" and
 * products of them with whole numbers, "{32*gpus}", "{ 2 * nodes * gpus }".
 * A brace group that is not such an expression — "{epoch}", "{0}",
 * '{"lr": 1}' — or names anything else stays exactly as it is, so templates
 * meant for the script pass through. 0 with *out (caller frees with free);
 * -1 with a message in err when a product overflows 64 bits or memory runs out.
 */
int launch_expand(const char *arg, const struct launch_vars *v, char **out, char *err, size_t errlen);

/* One default the job gets unless its environment already sets `name`. */
struct launch_default {
	const char *name;
	char value[32];
	const char *why;     /* a few words for the documentation and --dry-run */
};

/*
 * The fail-fast defaults for nproc processes on a node where the job may
 * use ncpus CPUs: TORCH_NCCL_ASYNC_ERROR_HANDLING, the NCCL heartbeat
 * monitor, OMP_NUM_THREADS (CPUs per process, at least 1) and, when the
 * job's PyTorch (torch, borrowed; NULL: not known) is 2.1 or newer,
 * PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: older ones fail at the
 * first CUDA allocation on that option, and one whose version is not
 * known is not given it. Fills out[max]; returns how many.
 */
size_t launch_defaults(unsigned nproc, long ncpus, const struct torchenv *torch, struct launch_default *out,
		       size_t max);

/* torchrun's options for one node of the job */
struct launch_torchrun {
	unsigned nnodes, nproc_per_node, node_rank;
	bool node_rank_opt;      /* pass --node_rank even on one node (a Slurm step) */
	const char *endpoint;    /* HOST:PORT of the c10d rendezvous */
	const char *rdzv_id;     /* the same on every node of one job */
	bool std_workaround;     /* pass --redirects=1 --tee=1: torchenv_std_bug */
};

/*
 * argv for the launcher: launcher[] (e.g. {"torchrun"} or {"python3", "-m",
 * "torch.distributed.run"}), then the rendezvous options, then cmd[] as
 * given. NULL-terminated; free with launch_argv_free. NULL on no memory.
 */
char **launch_torchrun_argv(char *const *launcher, const struct launch_torchrun *t, char *const *cmd);
void launch_argv_free(char **argv);

/* A multi-node job for sbatch */
struct launch_slurm {
	unsigned nodes, gpus_per_node;
	unsigned cpus_per_task;      /* 0: Slurm's default */
	const char *partition, *time, *account;  /* NULL: not asked for */
	const char *job_name;        /* required */
	const char *output;          /* required: the --output path (may hold %j) */
	unsigned max_requeues;       /* requeue after a notice or the time limit at most this often */
	unsigned signal_secs;        /* --signal=B:TERM@N */
	const char *gpuctl;          /* the gpuctl binary on the nodes */
	char *const *step_opts;      /* options of `gpuctl launch --slurm-step` (before --) */
	char *const *cmd;            /* SCRIPT ARGS, passed byte for byte */
};

/* Exit status of a `--slurm-step` whose job was stopped by a notice: requeue it (EX_TEMPFAIL). */
#define LAUNCH_EXIT_REQUEUE 75

/*
 * Is s a value Slurm reads back unchanged on an #SBATCH line (no blank,
 * quote, #, newline or control character, at most 200 bytes)? 
 */
int launch_sbatch_value_ok(const char *s);

/* Write the batch script. 0, or -1 when a value is not launch_sbatch_value_ok. */
int launch_slurm_script(FILE *f, const struct launch_slurm *s);
#endif
