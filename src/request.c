/*
 * request.c — the GPU request as the command line has it (see request.h):
 * the library decides, this prints.
 */
#include "request.h"

#include "jobs/authority.h"

#include <string.h>

int request_option(struct job_request *r, int c, const char *arg)
{
	char err[300];
	int rc = job_gpu_option(&r->jg, c, arg, err, sizeof err);
	if (rc == GC_ENOTFOUND)
		return -1;
	if (rc != GC_OK) {
		cli_err("%s", err);
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

int request_exit_code(int rc)
{
	if (rc == GC_ENOTFOUND)
		return EXIT_NODEVICE;
	int e = cli_exit_code(rc);
	return e == EXIT_OK ? EXIT_FAIL : e;
}

int request_prepare(struct job_request *r, const struct cli_global *g)
{
	char err[1024];
	gc_ctx *ctx = NULL;
	int rc;
	r->caller = (void *)g;
	/* a contradiction is said before the driver is asked for anything */
	if (job_request_check(r, err, sizeof err) != GC_OK) {
		cli_err("%s", err);
		return EXIT_USAGE;
	}
	/*
	 * gpuctld will choose: a request that names no GPU is asked blind (the answer brings the
	 * table of GPUs); another is prepared on gpuctld's table. NVML stays closed (authority.h).
	 */
	gc_open_opts o = {.size = sizeof o, .sim_node = g->sim};
	r->sim_node = g->sim;
	char sock[4096];
	if (!r->placed_spec && r->server_picks && job_request_blind_ok(r) &&
	    authority_find(sock, sizeof sock, err, sizeof err) == 1) {
		r->blind = true;
		return EXIT_OK;
	}
	if (!r->placed_spec && r->server_picks && authority_gpu_ctx(&ctx, &o) != 1)
		r->server_picks = false;
	if (!r->placed_spec && !ctx && (rc = cli_open(g, &ctx)))
		return rc;
	if ((rc = job_request_prepare(r, ctx, err, sizeof err)) != GC_OK) {
		if (!r->ctx)
			gc_ctx_free(ctx); /* not yet the request's */
		cli_err("%s", err);
		return request_exit_code(rc);
	}
	return EXIT_OK;
}

int request_resample(struct job_request *r)
{
	char err[1024];
	int rc = job_request_resample(r, err, sizeof err);
	if (rc == GC_OK)
		return EXIT_OK;
	cli_err("%s", err);
	return request_exit_code(rc);
}

int request_open(struct job_request *r)
{
	return r->ctx ? EXIT_OK : cli_open(r->caller, &r->ctx);
}

int request_try(struct job_request *r, struct lease_dir *d, const struct lease_info *me,
		struct lease **out, unsigned *chosen, char *why, size_t whylen)
{
	int rc = job_request_try(r, d, me, out, chosen, why, whylen);
	if (r->note[0]) {
		cli_err("%s", r->note);
		r->note[0] = '\0';
	}
	if (rc != GC_OK && rc != GC_EBUSY)
		cli_err("%s", why);
	return rc;
}
