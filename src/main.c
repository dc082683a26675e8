/*
 * main.c — gpuctl's entry point: global options, then the command table
 * that dispatches to one cmd-<verb>.c per verb (as git's builtins do).
 */
#include "config.h"
#include "cli.h"
#include "jobs/authority.h"
#include "runjob.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct command {
	const char *name;
	int (*fn)(const struct cli_global *g, int argc, char **argv);
	const char *help;
};

static const struct command commands[] = {
	{"ls", cmd_ls, "show GPUs, their processes and throttling (like gpustat)"},
#if GPUCTL_HAVE_TUI
	{"top", cmd_top, "interactive monitor: GPUs, processes, leases and waiters (like nvtop)"},
#endif
	{"query", cmd_query, "nvidia-smi compatible --query-gpu / --query-compute-apps CSV"},
	{"pick", cmd_pick, "choose free GPUs and print a CUDA_VISIBLE_DEVICES value"},
	{"run", cmd_run, "lease free GPUs and run a command on them"},
	{"launch", cmd_launch, "run a torchrun job on leased GPUs, or across nodes through Slurm"},
	{"slurm", cmd_slurm, "check a Slurm cluster for gpuctl launch --slurm (slurm doctor)"},
	{"submit", cmd_submit, "queue a job with gpuctld (runs as you when GPUs are free)"},
	{"queue", cmd_queue, "list queued and running jobs"},
	{"show", cmd_show, "one queued job: state, GPUs, exit code, log"},
	{"cancel", cmd_cancel, "cancel queued or running jobs"},
	{"logs", cmd_logs, "a queued job's output (-f: follow it)"},
	{"wait", cmd_wait, "wait for queued jobs to end, exit with their status"},
	{"leases", cmd_leases, "list leased GPUs and the queue of waiting jobs"},
	{"usage", cmd_usage, "GPU-hours per user, GPU or day, idle hours held, cost (gpuctld's records)"},
	{"quarantine", cmd_quarantine, "GPUs out of service after hardware faults: list, add, clear"},
	{"spot", cmd_spot, "watch for spot preemption and maintenance notices"},
	{"ckpt", cmd_ckpt, "commit, find and prune checkpoints safely"},
	{"explain", cmd_explain, "name the known failures in a training log, with the fix"},
	{"doctor", cmd_doctor, "check the driver, the CUDA stack, the environment and GPU health"},
	{"advise", cmd_advise, "the cheapest GPU setup that fits a workload, with time and cost"},
	{"gpus", cmd_gpus, "the GPU table advise uses: memory, bandwidth, dense peaks"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: gpuctl [--sim FILE] <command> [options]\n\n"
		   "commands:\n");
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		fprintf(f, "  %-11s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "\nglobal options:\n"
		   "  --sim FILE   run against a simulated node described by FILE (also $GPUCTL_SIM)\n"
		   "  --version    print the version and exit\n"
		   "  -h, --help   print this help and exit\n"
		   "\n'gpuctl <command> --help' describes a command; see gpuctl(1).\n");
}

/*
 * `gpuctl ls --sim FILE`: the global --sim after the verb too. It is taken out of the
 * verb's words (argv[0] is the verb), up to "--". A verb that runs a command (run,
 * launch, submit) passes its words after "--", or its first word that is not an
 * option, to the command untouched, so there --sim is taken only before either.
 */
static int take_sim_after_verb(struct cli_global *g, int *argc, char **argv)
{
	static const char *const with_command[] = {"run", "launch", "submit", "spot", NULL};
	bool runs = false, dashdash = false;
	for (size_t k = 0; with_command[k]; k++)
		runs |= strcmp(argv[0], with_command[k]) == 0;
	for (int k = 1; k < *argc; k++)
		dashdash |= strcmp(argv[k], "--") == 0;
	int out = 1;
	for (int k = 1; k < *argc; k++) {
		const char *a = argv[k];
		bool stop = strcmp(a, "--") == 0 || (runs && !dashdash && a[0] != '-');
		if (stop) {
			while (k < *argc)
				argv[out++] = argv[k++];
			break;
		}
		if (strcmp(a, "--sim") == 0) {
			if (k + 1 >= *argc || !*argv[k + 1]) {
				cli_err("option '--sim' needs a node file (see examples/nodes/)");
				return EXIT_USAGE;
			}
			g->sim = argv[++k];
		} else if (strncmp(a, "--sim=", 6) == 0) {
			if (!a[6]) {
				cli_err("option '--sim' needs a node file (see examples/nodes/)");
				return EXIT_USAGE;
			}
			g->sim = a + 6;
		} else
			argv[out++] = argv[k];
	}
	argv[out] = NULL;
	*argc = out;
	return EXIT_OK;
}

/* authority mode: gpuctld is down or restarting, and this command waits for it */
static void say_waiting(void *arg, const char *sock)
{
	(void)arg;
	cli_err("waiting for gpuctld at '%s' (authority mode: leases are granted by it alone)", sock);
}

static int gpuctl_main(int argc, char **argv)
{
	struct cli_global g;
	cli_global_init(&g);
	authority_on_wait(say_waiting, NULL);
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--sim") == 0) {
			if (i + 1 >= argc) {
				cli_err("option '--sim' needs a node file (see examples/nodes/)");
				return EXIT_USAGE;
			}
			g.sim = argv[++i];
		} else if (strncmp(a, "--sim=", 6) == 0) {
			g.sim = a + 6;
		} else if (strcmp(a, "--version") == 0) {
			printf("gpuctl %s\n", GPUCTL_VERSION);
			return EXIT_OK;
		} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(stdout);
			return EXIT_OK;
		} else {
			cli_err("unknown global option '%s' (try 'gpuctl --help')", a);
			return EXIT_USAGE;
		}
	}
	if (g.sim && !*g.sim) {
		cli_err("option '--sim' needs a node file (see examples/nodes/)");
		return EXIT_USAGE;
	}
	if (i >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	for (size_t c = 0; c < sizeof commands / sizeof commands[0]; c++)
		if (strcmp(argv[i], commands[c].name) == 0) {
			int n = argc - i, rc = take_sim_after_verb(&g, &n, argv + i);
			if (!rc)
				rc = cli_export_sim(&g);
			return rc ? rc : commands[c].fn(&g, n, argv + i);
		}
#if !GPUCTL_HAVE_TUI
	if (strcmp(argv[i], "top") == 0) {
		cli_err("this gpuctl was built without 'gpuctl top' (it needs ncursesw: libncurses-dev, then meson "
			"setup -Dtui=enabled)");
		return EXIT_USAGE;
	}
#endif
	cli_err("unknown command '%s' (try 'gpuctl --help')", argv[i]);
	return EXIT_USAGE;
}

int main(int argc, char **argv)
{
	return gpuctl_main(argc, argv);
}
