/*
 * request.h — the GPU request of `gpuctl run`, `pick` and `launch` as the
 * command line has it: the library's job_request (lib/jobs/job.h), whose
 * messages these print and whose codes they turn into exit codes.
 */
#ifndef GPUCTL_REQUEST_H
#define GPUCTL_REQUEST_H

#include "cli.h"
#include "jobs/job.h"

/* Handle one option ('n' and JOB_GPU_OPTIONS). -1: not a request option; else an exit code (printed). */
int request_option(struct job_request *r, int c, const char *arg);
/* Open the backend (unless gpuctld placed the GPUs), then job_request_prepare. An exit code (printed). */
int request_prepare(struct job_request *r, const struct cli_global *g);
/* A job_request code (not GC_OK) as gpuctl exits with it: no GPU at all is EXIT_NODEVICE. */
int request_exit_code(int rc);
/* job_request_resample. An exit code (printed). */
int request_resample(struct job_request *r);
/* r->ctx, opened now if a placement left it closed. An exit code (printed). */
int request_open(struct job_request *r);
/*
 * job_request_try, with its note (-n auto) printed once and its errors
 * printed: GC_OK, GC_EBUSY with the reason in why (not printed: the
 * caller says it or waits), another GC_E* (printed).
 */
int request_try(struct job_request *r, struct lease_dir *d, const struct lease_info *me,
		struct lease **out, unsigned *chosen, char *why, size_t whylen);

#endif
