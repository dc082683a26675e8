/*
 * runjob.c — the life of a job shared by `gpuctl run` and `gpuctl launch`
 * (see runjob.h), lived by the library's job_exec (lib/jobs/exec.h); this
 * file checks the options, prints what it is told and maps the end to an
 * exit code: lease GPUs — waiting in line with --wait — then run the
 * command, no shell in between, in its own process group, with
 * CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER=PCI_BUS_ID set; forward
 * SIGINT/SIGTERM/SIGHUP/SIGQUIT to it, and exit with its status (128+N when
 * a signal N ended it). The lease files pass to the command, so its GPUs
 * stay leased for exactly as long as any process of the job lives.
 */
#include "runjob.h"
#include "jobs/exec.h"
#include "util/shquote.h"
#include "sigstop.h"

#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

/* while waiting in line: a signal ends the wait */
static void catch_signals(void)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
	sigstop_catch(sigs, sizeof sigs / sizeof sigs[0]);
}

/* a placement opened nothing: the first look at the load (--hang-timeout) opens NVML */
static int open_ctx(struct job_request *r, void *arg)
{
	(void)arg;
	return request_open(r) == EXIT_OK ? GC_OK : GC_ENOLIB;
}

static void job_log(void *arg, const char *line)
{
	(void)arg;
	cli_err("%s", line);
}

void runjob_init(struct runjob *j)
{
	memset(j, 0, sizeof *j);
	job_request_init(&j->r);
	j->timeout_ms = -1;
	job_opts_init(&j->jo);
	job_env_init(&j->env);
}

void runjob_release(struct runjob *j)
{
	job_env_free(&j->env);
	job_request_release(&j->r);
}

int runjob_setenv(struct runjob *j, const char *name, const char *value)
{
	int rc = job_env_set(&j->env, name, value);
	if (rc != GC_OK) {
		cli_err("cannot set %s in the job's environment: %s", name, gc_strerror(rc));
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

int runjob_option(struct runjob *j, int c, const char *arg)
{
	int rc;
	if ((rc = request_option(&j->r, c, arg)) >= 0)
		return rc;
	char err[400];
	if ((rc = job_option(&j->jo, c, arg, err, sizeof err)) != GC_ENOTFOUND) {
		if (rc != GC_OK)
			cli_err("%s", err);
		return rc == GC_OK ? EXIT_OK : EXIT_USAGE;
	}
	switch (c) {
	case 'w':
		j->wait = true;
		if (arg && (rc = cli_parse_duration("--wait", arg, &j->timeout_ms)))
			return rc;
		return EXIT_OK;
	case 'N': j->name = arg; return EXIT_OK;
	default:
		return -1;
	}
}

/* --dry-run: what would run, as lines a shell can read back */
static int print_dry_run(struct runjob *j)
{
	for (size_t i = 0; i < j->env.n; i++) {
		const char *eq = strchr(j->env.v[i], '=');
		printf("export %.*s=", (int)(eq - j->env.v[i]), j->env.v[i]);
		shquote(stdout, eq + 1);
		putchar('\n');
	}
	for (size_t k = 0; j->jo.sv.argv[k]; k++) {
		if (k)
			putchar(' ');
		shquote(stdout, j->jo.sv.argv[k]);
	}
	putchar('\n');
	return fflush(stdout) == 0 ? EXIT_OK : EXIT_FAIL;
}

/* the job's environment and command, once its GPUs are chosen */
static int job_ready(struct runjob *j, const unsigned *chosen, struct lease_dir *d)
{
	char err[512];
	if (job_env_gpus(&j->env, &j->r, chosen, err, sizeof err) != GC_OK) {
		cli_err("%s", err);
		return EXIT_FAIL;
	}
	int rc = EXIT_OK;
	if (j->ready)
		rc = j->ready(j, chosen, d);
	return rc;
}

static int dry_run(struct runjob *j, const struct cli_global *g)
{
	int rc;
	if ((rc = request_prepare(&j->r, g)))
		return rc;
	/* look at who holds what, lease nothing, create nothing */
	struct lease_dir *d = NULL;
	char err[512];
	int dr = lease_dir_open(&d, NULL, false, err, sizeof err);
	if (dr != GC_OK && dr != GC_ENOTFOUND) {
		cli_err("%s", err);
		return EXIT_FAIL;
	}
	j->r.peek_only = true;
	unsigned *chosen = calloc(j->r.ngpus + j->r.jg.sel.n + 1, sizeof *chosen);
	char why[2048] = "", desc[300];
	if (!chosen) {
		cli_err("out of memory");
		rc = EXIT_FAIL;
	} else if ((dr = request_try(&j->r, d, NULL, NULL, chosen, why, sizeof why)) == GC_EBUSY) {
		job_request_describe(&j->r, desc, sizeof desc);
		cli_err("%s not available now: %s", desc, why);
		rc = EXIT_FAIL;
	} else if (dr != GC_OK) {
		rc = request_exit_code(dr);
	} else if ((rc = job_ready(j, chosen, d)) == EXIT_OK) {
		rc = print_dry_run(j);
	}
	free(chosen);
	lease_dir_close(d);
	return rc;
}

static void job_report(void *arg, const char *text)
{
	(void)arg;
	fflush(stdout);
	fputs(text, stderr);
}

/* ready() of the job core: the CLI's callback, its exit code */
static int core_ready(void *arg, const unsigned *chosen, struct lease_dir *d)
{
	struct runjob *j = arg;
	return j->ready ? j->ready(j, chosen, d) : EXIT_OK;
}

int runjob_exec(struct runjob *j, const struct cli_global *g, char **cmd)
{
	/* what cannot be made or run is refused before anything is leased or run */
	enum spot_cloud cloud;
	char err[2600];
	j->jo.sv.argv = cmd;
	if (job_opts_resolve(&j->jo, !j->dry_run, &cloud, err, sizeof err) != GC_OK) {
		cli_err("%s", err);
		return EXIT_USAGE;
	}
	if (j->dry_run)
		return dry_run(j, g);
	int rc;
	j->r.server_picks = true; /* in authority mode: it leases, so gpuctld chooses */
	if ((rc = request_prepare(&j->r, g)))
		return rc;
	catch_signals();
	struct job_exec x;
	job_exec_init(&x);
	x.r = &j->r;
	x.jo = &j->jo;
	x.env = &j->env;
	x.name = j->name;
	x.wait = j->wait;
	x.timeout_ms = j->timeout_ms;
	x.cloud = cloud;
	x.stop = &sigstop_last;
	x.open_ctx = open_ctx;
	x.ready = core_ready;
	x.log = job_log;
	x.report = job_report;
	x.arg = j;
	int xr = job_exec(&x, err, sizeof err);
	j->ran = x.ran;
	j->end = x.end;
	switch (xr) {
	case GC_OK:
		return x.status;
	case GC_EBUSY:
		cli_err("%s; use --wait to wait in line", err);
		return EXIT_FAIL;
	case GC_ETIMEDOUT:
		cli_err("%s", err);
		return EXIT_FAIL;
	case GC_ECANCELED:
		/* ready() said why; a signal: reported as never ran */
		return x.ready_rc ? x.ready_rc : sigstop_last ? 128 + sigstop_last : EXIT_FAIL;
	default:
		cli_err("%s", err);
		return request_exit_code(xr);
	}
}
