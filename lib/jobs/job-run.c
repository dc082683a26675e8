/*
 * job-run.c — the life of a job once its GPUs are leased (job.h): the
 * environment it gets (CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER=PCI_BUS_ID,
 * the GPUCTL_* variables), built for the child and never set in ours; out
 * of line; its checkpoint directory made; the lease passed to it; gpuctld's
 * go byte; the spot watcher; the supervisor; the Azure acknowledgement.
 * `gpuctl run`, `gpuctl launch` and gpuctld's runner all run jobs with
 * this. Never prints: lines for the user go through the log callback.
 */
#include "jobs/job.h"

#include "util/env.h"
#include "util/errbuf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

void job_env_init(struct job_env *e)
{
	memset(e, 0, sizeof *e);
}

void job_env_free(struct job_env *e)
{
	for (size_t i = 0; i < e->n; i++)
		free(e->v[i]);
	memset(e, 0, sizeof *e);
}

/* the entry of e that sets name, or e->n */
static size_t env_find(const struct job_env *e, const char *name)
{
	size_t len = strlen(name);
	for (size_t i = 0; i < e->n; i++)
		if (strncmp(e->v[i], name, len) == 0 && e->v[i][len] == '=')
			return i;
	return e->n;
}

int job_env_set(struct job_env *e, const char *name, const char *value)
{
	if (!*name || strchr(name, '='))
		return GC_EINVAL;
	size_t i = env_find(e, name);
	if (i == e->n && e->n == sizeof e->v / sizeof e->v[0] - 1)
		return GC_ENOMEM;
	size_t len = strlen(name) + strlen(value) + 2;
	char *s = malloc(len);
	if (!s)
		return GC_ENOMEM;
	snprintf(s, len, "%s=%s", name, value);
	if (i < e->n) {
		free(e->v[i]); /* set again: keeps its place */
		e->v[i] = s;
	} else {
		e->v[e->n++] = s;
		e->v[e->n] = NULL;
	}
	return GC_OK;
}

const char *job_env_get(const struct job_env *e, const char *name)
{
	size_t i = env_find(e, name);
	return i < e->n ? e->v[i] + strlen(name) + 1 : NULL;
}

int job_env_gpus(struct job_env *e, const struct job_request *r, const unsigned *chosen, char *err, size_t errlen)
{
	char cvd[8192], idx[4096], uu[8192], num[16];
	if (job_request_render(r, chosen, cvd, sizeof cvd) < 0) {
		errbuf_set(err, errlen, "cannot render CUDA_VISIBLE_DEVICES for %u GPUs", r->jg.sel.n);
		return GC_EINVAL;
	}
	size_t oi = 0, ou = 0;
	idx[0] = uu[0] = '\0';
	for (unsigned k = 0; k < r->jg.sel.n; k++) {
		oi += (size_t)snprintf(idx + oi, sizeof idx - oi, "%s%u", k ? "," : "", chosen[k]);
		ou += (size_t)snprintf(uu + ou, sizeof uu - ou, "%s%s", k ? "," : "", r->uuids[chosen[k]]);
		if (oi >= sizeof idx || ou >= sizeof uu) {
			errbuf_set(err, errlen, "too many GPUs for the environment");
			return GC_EINVAL;
		}
	}
	snprintf(num, sizeof num, "%u", r->jg.sel.n);
	int rc;
	if ((rc = job_env_set(e, "CUDA_VISIBLE_DEVICES", cvd)) ||
	    (rc = job_env_set(e, "CUDA_DEVICE_ORDER", "PCI_BUS_ID")) || (rc = job_env_set(e, "GPUCTL_GPUS", idx)) ||
	    (rc = job_env_set(e, "GPUCTL_GPU_UUIDS", uu)) || (rc = job_env_set(e, "GPUCTL_NUM_GPUS", num)))
		errbuf_set(err, errlen, "cannot make the job's environment: %s", gc_strerror(rc));
	return rc;
}

/* the supervisor's callbacks */
static void run_log(void *arg, const char *line)
{
	const struct job_run *j = arg;
	errbuf_log(j->log, j->arg, "%s", line);
}

static void run_started(void *arg, pid_t pid)
{
	struct job_run *j = arg;
	/* out of line and no longer woken by releases once the job runs (after the spawn: a ticket's
	 * close is slow on ext4) */
	if (j->ticket) {
		lease_queue_leave(*j->ticket);
		*j->ticket = NULL;
	}
	lease_unwatch(j->d);
	lease_set_pid(j->lease, pid, 0);
}

static int run_gpu_util(void *arg, int *pct)
{
	struct job_run *j = arg;
	struct job_request *r = j->r;
	/* a placement opened nothing: the first look at the load opens NVML */
	if (!r->ctx && (!j->open_ctx || j->open_ctx(r, j->arg) != GC_OK || !r->ctx))
		return -1;
	if (gc_ctx_sample(r->ctx, &r->snap, GC_BIT(GC_V_UTIL_GPU), NULL, false) != GC_OK)
		return -1;
	int max = 0;
	for (unsigned k = 0; k < r->jg.sel.n; k++) {
		const gc_gpu *g = &r->snap.gpus[j->chosen[k]];
		if (g->st[GC_V_UTIL_GPU] != GC_ST_OK)
			return -1;
		if ((int)g->util_gpu > max)
			max = (int)g->util_gpu;
	}
	*pct = max;
	return 0;
}

/*
 * The go byte: gpuctld starts its runner's child before it has committed
 * the start, and writes one byte once it has. End of file means gpuctld
 * died first: the job must not run (a restarted gpuctld queues it again).
 */
static bool wait_go(struct job_run *j)
{
	char c;
	ssize_t n;
	do
		n = read(j->go_fd, &c, 1);
	while (n < 0 && errno == EINTR && !(j->stop && *j->stop));
	close(j->go_fd);
	j->go_fd = -1;
	return n == 1;
}

int job_run(struct job_run *j, struct job_run_result *res, char *err, size_t errlen)
{
	memset(res, 0, sizeof *res);
	struct supervise_opts *sv = &j->jo->sv;
	struct lease_ticket *t = j->ticket ? *j->ticket : NULL;
	/* when the lease began and its place in line, read before the next waiter can take its turn */
	struct timespec began;
	clock_gettime(CLOCK_REALTIME, &began);
	char start[40], ticket[24];
	snprintf(start, sizeof start, "%lld.%09ld", (long long)began.tv_sec, began.tv_nsec);
	int rc = job_env_set(j->env, "GPUCTL_LEASE_START", start);
	if (rc == GC_OK && t) {
		snprintf(ticket, sizeof ticket, "%llu", (unsigned long long)lease_ticket_number(t));
		rc = job_env_set(j->env, "GPUCTL_TICKET", ticket);
	}
	if (rc != GC_OK) {
		errbuf_set(err, errlen, "cannot make the job's environment: %s", gc_strerror(rc));
		return rc;
	}
	/* out of line at once, so the next waiter can go */
	lease_queue_withdraw(t);
	/* made only now that the job will run: a run refused for busy GPUs leaves nothing behind */
	if (sv->checkpoint_dir && mkdir(sv->checkpoint_dir, 0755) < 0 && errno != EEXIST) {
		errbuf_set(err, errlen, "cannot create --checkpoint-dir '%s': %s", sv->checkpoint_dir, strerror(errno));
		return GC_EIO;
	}
	/* the job holds its GPUs too: they stay leased while any process of it lives */
	if (lease_inherit(j->lease) != GC_OK) {
		errbuf_set(err, errlen, "cannot pass the lease to '%s': %s", sv->argv[0], strerror(errno));
		return GC_EIO;
	}
	if (j->go_fd >= 0 && !wait_go(j)) {
		res->no_go = true; /* never ran */
		return GC_ECANCELED;
	}
	if (j->stop && *j->stop)
		return GC_ECANCELED; /* cancelled while it leased: the command never starts */
	struct spot_watcher *watcher = NULL;
	if (j->cloud != SPOT_NONE && spot_watch_start(&watcher, j->cloud, &j->jo->so, err, errlen) != GC_OK) {
		char why[512];
		snprintf(why, sizeof why, "%s", err);
		errbuf_set(err, errlen, "--spot: %s", why);
		return GC_EIO;
	}
	/* what the job gets: ours, without a ticket it does not have, with its GPUs */
	static const char *const no_ticket[] = {"GPUCTL_TICKET=", NULL};
	char **env = env_with(environ, t ? NULL : no_ticket, j->env->v);
	if (!env) {
		spot_watch_stop(watcher);
		errbuf_set(err, errlen, "out of memory");
		return GC_ENOMEM;
	}
	sv->env = env;
	sv->spot = watcher;
	sv->arg = j;
	sv->log = run_log;
	sv->started = run_started;
	sv->gpu_util = run_gpu_util;
	struct supervise_result *s = &res->sv;
	rc = supervise_run(sv, s);
	sv->env = NULL;
	free(env);
	if (rc != GC_OK) {
		errbuf_set(err, errlen, "cannot supervise '%s': %s", sv->argv[0], strerror(errno));
	} else {
		res->ran = s->end != SUPERVISE_END_EXEC_FAILED;
		if (s->end == SUPERVISE_END_EXEC_FAILED)
			errbuf_log(j->log, j->arg, "cannot run '%s': %s", sv->argv[0], strerror(s->exec_errno));
		/* Azure: the job has stopped, let the VM go now rather than at NotBefore */
		if (j->jo->ack && s->noticed && watcher) {
			char aerr[512];
			if (spot_watch_ack(watcher, &s->notice, aerr, sizeof aerr) != GC_OK)
				errbuf_log(j->log, j->arg, "cannot acknowledge the %s event: %s", spot_cloud_name(s->notice.cloud), aerr);
		}
		/* a plain exit or signal speaks through the status, as in a shell */
		if (s->end == SUPERVISE_END_PREEMPTED || s->end == SUPERVISE_END_HUNG || s->end == SUPERVISE_END_OOM ||
		    (s->end != SUPERVISE_END_EXEC_FAILED && s->attempts > 1))
			errbuf_log(j->log, j->arg, "run %s ended: %s (status %d) after %u attempt%s", sv->run_id, supervise_end_name(s->end),
			    s->status, s->attempts, s->attempts == 1 ? "" : "s");
	}
	spot_watch_stop(watcher);
	return rc;
}
