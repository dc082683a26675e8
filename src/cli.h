/*
 * cli.h — what every gpuctl verb shares: exit codes, error printing,
 * opening the backend (real driver or --sim), GPU selection with -i, the
 * sampling loop, and colour decisions.
 */
#ifndef GPUCTL_CLI_H
#define GPUCTL_CLI_H

#include "device/gpu.h"
#include "progerr.h"
#include <jansson.h>
#include <stdio.h>


struct cli_global {
	const char *sim;   /* --sim FILE or $GPUCTL_SIM, borrowed from argv/env */
	const char *prog;  /* "gpuctl" */
};

/* g as the environment sets it: prog "gpuctl", sim $GPUCTL_SIM (NULL when unset or empty) */
void cli_global_init(struct cli_global *g);
/*
 * What a command runs (a job, nvidia-smi's simulator, a torch probe) sees the
 * node g simulates: the library hands it to the simulator and sets no
 * environment, so the program exports $GPUCTL_SIM_NODE. An exit code (printed).
 */
int cli_export_sim(const struct cli_global *g);

/* Open the backend; on failure print one line and return the exit code. */
int cli_open(const struct cli_global *g, gc_ctx **ctx);

/*
 * Parse a GPU list ("0,2", a UUID, a PCI bus id) given to option `opt`
 * (-i, --gpus, --exclude) into which[ngpus]. `snap` must hold UUIDs and PCI
 * ids of all GPUs. Prints the error and returns EXIT_USAGE on a bad id.
 */
int cli_select(const char *opt, const char *spec, const gc_snapshot *snap, bool *which);

/*
 * Which GPUs a verb works on: *which (caller frees) gets one flag per GPU,
 * all set when spec is NULL, else those -i names (read from a sample of
 * UUIDs and bus ids taken into snap). Prints the error; returns an exit code.
 */
int cli_select_gpus(gc_ctx *ctx, const char *spec, gc_snapshot *snap, bool **which);

/*
 * EXIT_GPULOST if a selected GPU was lost in this sample, else EXIT_OK; the
 * first time, one line on stderr (unless quiet) naming the GPU.
 */
int cli_check_lost(const gc_snapshot *snap, const bool *which, bool *reported, bool quiet);


/*
 * Sampling loop: calls tick(arg) now and then every `interval` seconds
 * (absolute deadlines, no drift) until it returns non-zero, `count` ticks
 * were made (0 = unlimited) or SIGINT/SIGTERM arrives. interval <= 0 runs
 * once. Returns the last tick's non-zero value, else 0.
 */
int cli_loop(double interval, long count, int (*tick)(void *arg, long n), void *arg);
/* true once SIGINT/SIGTERM was received inside cli_loop (or after cli_catch_stop) */
bool cli_interrupted(void);
/* catch SIGINT and SIGTERM from now on, for cli_interrupted and cli_stop_signal (which one; 0: none) */
void cli_catch_stop(void);
int cli_stop_signal(void);

enum cli_color { COLOR_AUTO, COLOR_ALWAYS, COLOR_NEVER };
int cli_parse_color(const char *arg, enum cli_color *out);
bool cli_use_color(enum cli_color c, FILE *f);

/*
 * Text that came from another user or process (names, commands, users, paths),
 * made safe for a terminal into buf (len bytes): control characters and bytes
 * that are not UTF-8 become '?'. Returns buf; NULL s gives "".
 */
const char *cli_safe(char *buf, size_t len, const char *s);
/* (every text field of a lease record, in place: lease_info_sanitize, lib/jobs/lease.h) */

/*
 * The value of an option with an optional value (--wait[=DUR]) given as the next
 * word instead ("--wait 5m"): a next word that starts like a number (a digit or
 * '.') is taken, moving optind past it, so a duration word is never the command;
 * whether it parses is the option's check. Anything else is left for the caller.
 */
char *cli_optional_next(char *arg, int argc, char **argv);


/* The failure signatures' directory ($GPUCTL_DATA_DIR, installed, source tree); prints the error unless quiet. */
int cli_signatures_dir(char *buf, size_t len, bool quiet);
/* path of data file `name` ("gpus.csv", "catalog/aws.csv"): $GPUCTL_DATA_DIR, the installed data,
   the source tree; 0, or -1 after printing the error */
int cli_data_file(const char *name, char *buf, size_t len);

/* An executable `name` in a directory of $PATH. */
bool cli_on_path(const char *name);
/* The same, with its path (the first one, as execvp finds it) in buf (len bytes). */
bool cli_find_on_path(const char *name, char *buf, size_t len);

/* Print doctor-style checks (a table and a summary line headed `title`, or
 * JSON with `schema`); EXIT_FAIL when a check failed, else EXIT_OK. */
struct doctor_report;
int cli_print_checks(const struct doctor_report *r, bool json, const char *schema, const char *title);
/* doc as gpuctl prints JSON (indented, members in order, ASCII): EXIT_OK, or EXIT_FAIL after "out of memory" */
int cli_put_json(const json_t *doc);

/* GiB-style size for humans is not needed here; MiB as nvidia-smi rounds it (ceil). */
unsigned long long cli_mib(uint64_t bytes);

int cmd_ls(const struct cli_global *g, int argc, char **argv);
int cmd_top(const struct cli_global *g, int argc, char **argv);
int cmd_query(const struct cli_global *g, int argc, char **argv);
int cmd_run(const struct cli_global *g, int argc, char **argv);
int cmd_leases(const struct cli_global *g, int argc, char **argv);
int cmd_quarantine(const struct cli_global *g, int argc, char **argv);
int cmd_usage(const struct cli_global *g, int argc, char **argv);
int cmd_pick(const struct cli_global *g, int argc, char **argv);
int cmd_spot(const struct cli_global *g, int argc, char **argv);
int cmd_explain(const struct cli_global *g, int argc, char **argv);
int cmd_doctor(const struct cli_global *g, int argc, char **argv);
int cmd_ckpt(const struct cli_global *g, int argc, char **argv);
int cmd_advise(const struct cli_global *g, int argc, char **argv);
/* gpuctl launch --sky: advise's plans as a SkyPilot task, then sky jobs launch (cmd-advise.c) */
int cmd_advise_sky(const struct cli_global *g, int argc, char **argv);
int cmd_gpus(const struct cli_global *g, int argc, char **argv);
int cmd_launch(const struct cli_global *g, int argc, char **argv);
int cmd_slurm(const struct cli_global *g, int argc, char **argv);
int cmd_submit(const struct cli_global *g, int argc, char **argv);
int cmd_queue(const struct cli_global *g, int argc, char **argv);
int cmd_show(const struct cli_global *g, int argc, char **argv);
int cmd_cancel(const struct cli_global *g, int argc, char **argv);
int cmd_logs(const struct cli_global *g, int argc, char **argv);
int cmd_wait(const struct cli_global *g, int argc, char **argv);
int cmd_wait_free(const struct cli_global *g, int argc, char **argv);

#endif
