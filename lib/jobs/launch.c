/*
 * launch.c — placeholders, torchrun's command line, fail-fast defaults and
 * the sbatch script of `gpuctl launch` (see launch.h).
 *
 * The script passes the job's arguments through shquote() and expands
 * placeholders on the node, so every byte the user typed reaches the script
 * on every node: no shell ever reads them unquoted.
 */
#include "jobs/launch.h"
#include "util/errbuf.h"
#include "util/shquote.h"

#include <ctype.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ---- placeholders -------------------------------------------------------- */

enum { EXPR_NO, EXPR_OK, EXPR_OVERFLOW };

/* s[0..n) is "factor (* factor)*" with at least one known name: its value */
static int eval_product(const char *s, size_t n, const struct launch_vars *v, int64_t *out)
{
	static const struct { const char *name; size_t off; } names[] = {
		{"gpus", offsetof(struct launch_vars, gpus)},
		{"nodes", offsetof(struct launch_vars, nodes)},
		{"world_size", offsetof(struct launch_vars, world_size)},
	};
	const char *p = s, *end = s + n;
	int64_t acc = 1;
	bool named = false, overflow = false;
	for (;;) {
		while (p < end && *p == ' ')
			p++;
		int64_t f;
		if (p < end && isdigit((unsigned char)*p)) {
			f = 0;
			for (; p < end && isdigit((unsigned char)*p); p++)
				if (__builtin_mul_overflow(f, 10, &f) || __builtin_add_overflow(f, *p - '0', &f))
					overflow = true;
		} else {
			const char *w = p;
			while (p < end && (islower((unsigned char)*p) || *p == '_'))
				p++;
			size_t k = 0, len = (size_t)(p - w);
			for (; k < sizeof names / sizeof names[0]; k++)
				if (strlen(names[k].name) == len && memcmp(w, names[k].name, len) == 0)
					break;
			if (k == sizeof names / sizeof names[0])
				return EXPR_NO;
			memcpy(&f, (const char *)v + names[k].off, sizeof f);
			named = true;
		}
		if (__builtin_mul_overflow(acc, f, &acc))
			overflow = true;
		while (p < end && *p == ' ')
			p++;
		if (p == end)
			break;
		if (*p++ != '*')
			return EXPR_NO;
	}
	if (!named)
		return EXPR_NO;
	*out = acc;
	return overflow ? EXPR_OVERFLOW : EXPR_OK;
}

int launch_expand(const char *arg, const struct launch_vars *v, char **out, char *err, size_t errlen)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f) {
		errbuf_set(err, errlen, "out of memory");
		return -1;
	}
	int rc = 0;
	for (const char *p = arg; *p;) {
		const char *close = *p == '{' ? strchr(p + 1, '}') : NULL;
		int64_t val;
		int e = close ? eval_product(p + 1, (size_t)(close - p - 1), v, &val) : EXPR_NO;
		if (e == EXPR_OVERFLOW) {
			errbuf_set(err, errlen, "placeholder '%.*s' in argument '%s' is too large",
				   (int)(close - p + 1), p, arg);
			rc = -1;
			break;
		}
		if (e == EXPR_OK) {
			fprintf(f, "%lld", (long long)val);
			p = close + 1;
		} else {
			fputc(*p++, f);
		}
	}
	if (fclose(f) != 0 && rc == 0) {
		errbuf_set(err, errlen, "out of memory");
		rc = -1;
	}
	if (rc < 0) {
		free(buf);
		return -1;
	}
	*out = buf;
	return 0;
}

/* ---- environment ---------------------------------------------------------- */

size_t launch_defaults(unsigned nproc, long ncpus, const struct torchenv *torch, struct launch_default *out,
		       size_t max)
{
	long per = nproc ? ncpus / (long)nproc : ncpus;
	if (per < 1)
		per = 1;
	struct launch_default d[] = {
		{"TORCH_NCCL_ASYNC_ERROR_HANDLING", "1", "abort the communicator and stop on an NCCL error"},
		{"TORCH_NCCL_ENABLE_MONITORING", "1", "abort a process whose NCCL watchdog is stuck"},
		{"TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC", "300", "after 5 minutes without a watchdog heartbeat"},
		{"OMP_NUM_THREADS", "", "CPUs per process, not every CPU in every process"},
		{"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True", "less fragmentation, fewer OOMs (PyTorch 2.1+)"},
	};
	snprintf(d[3].value, sizeof d[3].value, "%ld", per);
	size_t n = sizeof d / sizeof d[0];
	if (!torch || !torchenv_has_expandable(torch))
		n--;
	if (n > max)
		n = max;
	memcpy(out, d, n * sizeof *out);
	return n;
}

/* ---- torchrun ------------------------------------------------------------- */

void launch_argv_free(char **argv)
{
	if (!argv)
		return;
	for (size_t i = 0; argv[i]; i++)
		free(argv[i]);
	free(argv);
}

/* "--name=value" or NULL when memory runs out */
static char *opt_u(const char *name, unsigned v)
{
	char buf[64];
	snprintf(buf, sizeof buf, "--%s=%u", name, v);
	return strdup(buf);
}

static char *opt_s(const char *name, const char *v)
{
	size_t n = strlen(name) + strlen(v) + 4;
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "--%s=%s", name, v);
	return p;
}

char **launch_torchrun_argv(char *const *launcher, const struct launch_torchrun *t, char *const *cmd)
{
	size_t nl = 0, nc = 0;
	while (launcher[nl])
		nl++;
	while (cmd[nc])
		nc++;
	char **v = calloc(nl + nc + 10, sizeof *v);
	if (!v)
		return NULL;
	size_t k = 0;
	bool ok = true;
	for (size_t i = 0; i < nl; i++)
		ok &= (v[k++] = strdup(launcher[i])) != NULL;
	ok &= (v[k++] = opt_u("nnodes", t->nnodes)) != NULL;
	/* torchrun before 2.0 knows only the underscore spellings; later ones accept both */
	ok &= (v[k++] = opt_u("nproc_per_node", t->nproc_per_node)) != NULL;
	if (t->nnodes > 1 || t->node_rank_opt)
		ok &= (v[k++] = opt_u("node_rank", t->node_rank)) != NULL;
	ok &= (v[k++] = strdup("--rdzv_backend=c10d")) != NULL;
	ok &= (v[k++] = opt_s("rdzv_endpoint", t->endpoint)) != NULL;
	ok &= (v[k++] = opt_s("rdzv_id", t->rdzv_id)) != NULL;
	if (t->std_workaround) {
		/* any value but 0 and 3 parses there; 1: stdout through a file, copied to the console */
		ok &= (v[k++] = strdup("--redirects=1")) != NULL;
		ok &= (v[k++] = strdup("--tee=1")) != NULL;
	}
	for (size_t i = 0; i < nc; i++)
		ok &= (v[k++] = strdup(cmd[i])) != NULL;
	if (!ok) {
		/* a NULL in the middle would end the list early: free every slot */
		for (size_t i = 0; i < k; i++)
			free(v[i]);
		free(v);
		return NULL;
	}
	return v;
}

/* ---- Slurm ---------------------------------------------------------------- */

int launch_sbatch_value_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 200)
		return 0;
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f || *p == '"' || *p == '\'' || *p == '#' ||
		    *p == '\\')
			return 0;
	return 1;
}

int launch_slurm_script(FILE *f, const struct launch_slurm *s)
{
	const char *vals[] = {s->partition, s->time, s->account, s->job_name, s->output};
	for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++)
		if (vals[i] && !launch_sbatch_value_ok(vals[i]))
			return -1;
	if (!s->job_name || !s->output)
		return -1;
	fprintf(f, "#!/bin/bash\n"
		   "# Generated by gpuctl launch --slurm: %u node%s x %u GPU%s.\n",
		s->nodes, s->nodes == 1 ? "" : "s", s->gpus_per_node, s->gpus_per_node == 1 ? "" : "s");
	fprintf(f, "#SBATCH --job-name=%s\n", s->job_name);
	fprintf(f, "#SBATCH --nodes=%u\n", s->nodes);
	fprintf(f, "#SBATCH --ntasks-per-node=1\n");
	fprintf(f, "#SBATCH --gpus-per-node=%u\n", s->gpus_per_node);
	if (s->cpus_per_task)
		fprintf(f, "#SBATCH --cpus-per-task=%u\n", s->cpus_per_task);
	if (s->partition)
		fprintf(f, "#SBATCH --partition=%s\n", s->partition);
	if (s->time)
		fprintf(f, "#SBATCH --time=%s\n", s->time);
	if (s->account)
		fprintf(f, "#SBATCH --account=%s\n", s->account);
	fprintf(f, "#SBATCH --output=%s\n", s->output);
	fprintf(f, "#SBATCH --open-mode=append\n");
	fprintf(f, "#SBATCH --requeue\n");
	fprintf(f, "#SBATCH --signal=B:TERM@%u\n", s->signal_secs);
	fprintf(f, "set -u\n"
		   "# GPUs numbered in PCI order, as nvidia-smi numbers them\n"
		   "export CUDA_DEVICE_ORDER=PCI_BUS_ID\n"
		   "export GPUCTL_MAX_REQUEUES=%u\n"
		   "# the rendezvous: the allocation's first node, a port derived from the job id\n"
		   "head_node=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)\n"
		   "port=$(( 10000 + SLURM_JOB_ID %% 20000 ))\n"
		   "echo \"gpuctl: job $SLURM_JOB_ID attempt $(( ${SLURM_RESTART_COUNT:-0} + 1 )) on "
		   "$SLURM_JOB_NODELIST, rendezvous $head_node:$port\" >&2\n",
		s->max_requeues);
	/*
	 * TERM reaches this shell before the time limit (--signal=B:TERM) and
	 * when the job is cancelled or requeued. In the first case the job
	 * still runs: pass TERM to the tasks of its steps with scancel --signal
	 * (a TERM to srun would make it kill the step at once, with no time
	 * for a checkpoint) and requeue once they are done. In the others
	 * Slurm signals the steps itself (and scancel would wait for it).
	 */
	fprintf(f, "step=\n"
		   "requeue=0\n"
		   "on_term() {\n"
		   "\tcase $(scontrol show job \"$SLURM_JOB_ID\" -o 2>/dev/null) in\n"
		   "\t*JobState=RUNNING*) requeue=1 ;;\n"
		   "\t*JobState=*) return ;;\n"
		   "\tesac\n"
		   "\tscancel --signal=TERM \"$SLURM_JOB_ID\" 2>/dev/null ||\n"
		   "\t\t{ [ -n \"$step\" ] && kill -TERM \"$step\" 2>/dev/null; }\n"
		   "}\n"
		   "trap on_term TERM\n");
	fprintf(f, "srun --ntasks-per-node=1 --kill-on-bad-exit=1 ");
	shquote(f, s->gpuctl);
	fprintf(f, " launch --slurm-step --rdzv-endpoint=\"$head_node:$port\"");
	for (size_t i = 0; s->step_opts && s->step_opts[i]; i++) {
		fputc(' ', f);
		shquote(f, s->step_opts[i]);
	}
	fprintf(f, " --");
	for (size_t i = 0; s->cmd[i]; i++) {
		fputc(' ', f);
		shquote(f, s->cmd[i]);
	}
	fprintf(f, " &\n"
		   "step=$!\n"
		   "# a trapped TERM interrupts wait: wait again until the step has ended\n"
		   "while :; do\n"
		   "\twait \"$step\"\n"
		   "\trc=$?\n"
		   "\tkill -0 \"$step\" 2>/dev/null || break\n"
		   "done\n"
		   "if [ \"$requeue\" = 1 ] && [ \"${SLURM_RESTART_COUNT:-0}\" -lt \"$GPUCTL_MAX_REQUEUES\" ]; then\n"
		   "\techo \"gpuctl: requeueing job $SLURM_JOB_ID; it resumes from its last checkpoint\" >&2\n"
		   "\tscontrol requeue \"$SLURM_JOB_ID\"\n"
		   "fi\n"
		   "exit \"$rc\"\n");
	return ferror(f) ? -1 : 0;
}
