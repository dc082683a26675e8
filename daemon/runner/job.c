/*
 * job.c — gpuctld-runner's main, and a queued job in the runner's child
 * (runner.h): the GPUs gpuctld's dispatch chose (r->placed) are leased,
 * the command runs under the supervisor with the job's options once the go
 * byte comes on SPAWNREQ_GO_FD, and its end goes into r->status as job
 * r->slot's record (jobstatus.h). The library's job_exec does it, as for
 * `gpuctl run` with the same options: the same leases, supervisor,
 * explanation and retry rule. No argv is built for it.
 */
#include "runner.h"

#include "jobs/exec.h"
#include "jobs/jobstatus.h"
#include "jobs/spawnreq.h"
#include "util/errbuf.h"
#include "sigstop.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* the job's lines, in its log (stderr), as `gpuctl run` says them */
static void job_log(void *arg, const char *line)
{
	(void)arg;
	fflush(stdout);
	fprintf(stderr, "gpuctl: %s\n", line);
}

static void job_report(void *arg, const char *text)
{
	(void)arg;
	fflush(stdout);
	fputs(text, stderr);
}

/* the first look at the load (--hang-timeout) opens NVML, or the node gpuctld simulates */
static int open_ctx(struct job_request *r, void *arg)
{
	(void)arg;
	const char *sim = getenv("GPUCTL_SIM");
	gc_open_opts o = {.size = sizeof o, .sim_node = sim && *sim ? sim : NULL};
	int rc = gc_ctx_open(&r->ctx, &o);
	if (rc != GC_OK) {
		const char *msg = r->ctx ? gc_ctx_errmsg(r->ctx) : NULL;
		job_log(NULL, msg && *msg ? msg : gc_strerror(rc));
		gc_ctx_free(r->ctx);
		r->ctx = NULL;
	}
	return rc;
}

static int log_sync(void *arg)
{
	(void)arg;
	return runner_log_sync();
}

/* job id's record ("ID RAN STATUS END RETRIES") in its user's status file: 0, or -1 */
static int write_status(const struct spawnreq *r, const struct job_exec *x, int rc)
{
	int fd = open(r->status, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	int w = fd < 0 ? -1 : jobstatus_write(fd, (int64_t)r->slot, x->ran, rc, x->ran ? (int)x->end : -1, x->retries);
	if (w < 0)
		runner_err("cannot write the status file '%s': %s", r->status, strerror(errno));
	if (fd >= 0)
		close(fd);
	return w < 0 ? -1 : 0;
}

static int run_job(const struct spawnreq *r, struct job_exec *x, char *err, size_t errlen)
{
	/* what cannot be written or made is refused before anything is leased or run */
	int fd = open(r->status, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		errbuf_set(err, errlen, "cannot write the status file '%s': %s (it must exist)", r->status, strerror(errno));
		return 2;
	}
	close(fd);
	if (job_opts_resolve(x->jo, true, &x->cloud, err, errlen) != GC_OK)
		return 2;
	/* the placement is leased without opening NVML: gpuctld has checked it */
	x->r->placed_spec = r->placed;
	int rc = job_request_prepare(x->r, NULL, err, errlen);
	if (rc != GC_OK)
		return rc == GC_EINVAL ? 2 : 1;
	rc = job_exec(x, err, errlen);
	switch (rc) {
	case GC_OK:
		return x->status;
	case GC_ECANCELED:
		/* a stop signal (a cancel) before it ran; gpuctld went away before it said go: nothing ran, nothing
		 * failed */
		return sigstop_last ? 128 + sigstop_last : x->no_go ? 0 : 1;
	default:
		return 1;
	}
}

static int job_fn(const struct spawnreq *r)
{
	/* the job's processes see the simulated node as gpuctl run's would */
	const char *sim = getenv("GPUCTL_SIM");
	if (sim && *sim && setenv("GPUCTL_SIM_NODE", sim, 1) != 0) {
		runner_err("cannot set GPUCTL_SIM_NODE: %s", strerror(errno));
		return 1;
	}
	struct job_request req;
	struct job_opts jo;
	struct job_env env;
	struct job_exec x;
	job_exec_setup(&x, &req, &jo, &env);
	x.name = r->name;
	x.go_fd = SPAWNREQ_GO_FD;
	x.open_ctx = open_ctx;
	x.log = job_log;
	x.report = job_report;
	x.retries = r->retries;
	/* a capped log: the job writes to its writer's pipe, a failure is explained from the log */
	x.out_log = runner_log_fd();
	x.out_sync = log_sync;
	/* a cancel (SIGTERM) while it waits for its GPUs or the go byte: it never starts */
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
	sigstop_catch(sigs, sizeof sigs / sizeof sigs[0]);
	x.stop = &sigstop_last;
	jo.sv.argv = r->argv;
	char err[2600] = "";
	int rc = 0;
	for (size_t i = 0; i < r->nopts && rc == 0; i++)
		if (job_queued_option(&jo, r->opts[i], err, sizeof err) != GC_OK)
			rc = 2;
	if (rc == 0)
		rc = run_job(r, &x, err, sizeof err);
	if (err[0])
		job_log(NULL, err);
	if (runner_log_drained() < 0 && rc == 0)
		rc = 1; /* its output was lost (a full disk): not a success; gpuctld's log says why */
	if (write_status(r, &x, rc) < 0 && rc == 0)
		rc = 1; /* whoever reads it would not learn how the job ended */
	job_exec_release(&x);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		runner_err("usage: gpuctld-runner FD (gpuctld starts it with its socket; not for use by hand)");
		return 2;
	}
	return runner_serve(argv, argv[1], job_fn);
}
