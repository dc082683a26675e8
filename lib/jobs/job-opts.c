/*
 * job-opts.c — a job's options (job.h): its GPU request (-n, --gpus, the
 * filters), parsed alike for `gpuctl run`, `pick`, `launch` and `submit`;
 * and its supervisor options, the one table of them, shared by `gpuctl
 * run` and `gpuctl launch` (getopt), `gpuctl submit` and gpuctld (a queued
 * job's "--NAME=VALUE" strings) and gpuctld's runner (which applies them).
 * Never prints: a refusal is GC_EINVAL with the reason in err, as `gpuctl
 * run` words it.
 */
#include "jobs/job.h"

#include "util/errbuf.h"
#include "util/units.h"

#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void job_gpus_init(struct job_gpus *g)
{
	memset(g, 0, sizeof *g);
	g->sel.n = 1;
	g->sel.max_util = -1;
	g->sel.uid = getuid();
}

int job_gpu_option(struct job_gpus *g, int c, const char *arg, char *err, size_t errlen)
{
	char why[160];
	long n;
	int rc;
	const char *nn = g->n_name ? g->n_name : "-n";
	switch (c) {
	case 'n':
		if (g->allow_auto && strcmp(arg, "auto") == 0) {
			g->n_auto = g->n_given = true;
			g->sel.n = 1;
			return GC_OK;
		}
		g->n_auto = false;
		if (g->allow_auto && (strtol(arg, NULL, 10) < 1 || strspn(arg, "0123456789") != strlen(arg))) {
			errbuf_set(err, errlen, "invalid %s value '%s' (expected a positive whole number or auto)", nn, arg);
			return GC_EINVAL;
		}
		if ((rc = units_parse_count(nn, arg, &n, err, errlen)))
			return rc;
		if (n > 4096) {
			errbuf_set(err, errlen, "invalid %s value '%s' (at most 4096 GPUs)", nn, arg);
			return GC_EINVAL;
		}
		g->sel.n = (unsigned)n;
		g->n_given = g->choice_given = true;
		return GC_OK;
	case 'g': g->gpus_spec = arg; g->choice_given = true; return GC_OK;
	case 'x': g->exclude_spec = arg; g->choice_given = true; return GC_OK;
	case 'm':
		/* NVML's names are at most 96 bytes with their NUL: a longer glob names nothing */
		if (!*arg || strlen(arg) > 95) {
			errbuf_set(err, errlen, "invalid --model '%.100s' (expected a GPU name or glob of 1 to 95 bytes, "
						"e.g. A100 or '*H100*')", arg);
			return GC_EINVAL;
		}
		g->sel.model = arg;
		g->choice_given = true;
		return GC_OK;
	case 's': g->sel.shared = g->choice_given = true; return GC_OK;
	case 'M':
		if (units_parse_size(arg, &g->sel.min_free_mem, why, sizeof why) < 0) {
			errbuf_set(err, errlen, "invalid --min-free-mem '%s': %s", arg, why);
			return GC_EINVAL;
		}
		g->choice_given = true;
		return GC_OK;
	case 'U':
		if (units_parse_percent(arg, &g->sel.max_util, why, sizeof why) < 0) {
			errbuf_set(err, errlen, "invalid --max-util '%s': %s", arg, why);
			return GC_EINVAL;
		}
		g->choice_given = true;
		return GC_OK;
	case 'I':
		if (strcmp(arg, "uuid") == 0)
			g->ids_uuid = true;
		else if (strcmp(arg, "index") == 0)
			g->ids_uuid = false;
		else {
			errbuf_set(err, errlen, "invalid --ids '%s' (expected index or uuid)", arg);
			return GC_EINVAL;
		}
		return GC_OK;
	default:
		return GC_ENOTFOUND;
	}
}

static const struct option supervisor_options[] = {JOB_SUPERVISOR_OPTIONS};
#define N_SUPERVISOR (sizeof supervisor_options / sizeof supervisor_options[0])

void job_opts_init(struct job_opts *o)
{
	*o = (struct job_opts){
		.cloud_arg = "auto",
		.sv = {.restart = SUPERVISE_RESTART_NEVER, .max_restarts = 3, .backoff_ms = 1000,
		       .backoff_max_ms = 300000, .grace_ms = -1, .margin_ms = 5000, .default_grace_ms = 25000,
		       .take_terminal = true},
	};
}

bool job_is_supervisor_option(int c)
{
	for (size_t i = 0; c > 0 && i < N_SUPERVISOR; i++)
		if (supervisor_options[i].val == c)
			return true;
	return false;
}

/* "1s:5m" → first and largest wait before a restart */
static int parse_backoff(const char *arg, struct supervise_opts *o, char *err, size_t errlen)
{
	char first[64];
	const char *colon = strchr(arg, ':');
	size_t n = colon ? (size_t)(colon - arg) : strlen(arg);
	if (n == 0 || n >= sizeof first) {
		errbuf_set(err, errlen, "invalid --backoff '%s' (expected FIRST[:MAX], e.g. 1s:5m)", arg);
		return GC_EINVAL;
	}
	memcpy(first, arg, n);
	first[n] = '\0';
	long long a, b = 300000;
	int rc;
	if ((rc = units_parse_duration("--backoff", first, &a, err, errlen)) ||
	    (colon && (rc = units_parse_duration("--backoff", colon + 1, &b, err, errlen))))
		return rc;
	if (b < a || a > INT32_MAX || b > INT32_MAX) {
		errbuf_set(err, errlen,
			   "invalid --backoff '%s': the maximum must be at least the first wait, at most 24 days", arg);
		return GC_EINVAL;
	}
	o->backoff_ms = (int)a;
	o->backoff_max_ms = (int)b;
	return GC_OK;
}

int job_option(struct job_opts *o, int c, const char *arg, char *err, size_t errlen)
{
	long long ms;
	int rc;
	switch (c) {
	case 'S': o->spot = true; return GC_OK;
	case 'C': {
		enum spot_cloud cloud;
		bool autodetect;
		if (spot_parse_cloud(arg, &cloud, &autodetect) < 0) {
			errbuf_set(err, errlen, "invalid --cloud '%s' (expected aws, gcp, azure, none or auto)", arg);
			return GC_EINVAL;
		}
		o->cloud_arg = arg;
		o->spot = true;
		return GC_OK;
	}
	case 'P':
		if ((rc = units_parse_duration("--poll", arg, &ms, err, errlen)))
			return rc;
		if (ms < 10 || ms > 3600000) {
			errbuf_set(err, errlen, "invalid --poll '%s' (between 0.01 s and 1 h)", arg);
			return GC_EINVAL;
		}
		o->so.poll_ms = (int)ms;
		return GC_OK;
	case 'G':
		if ((rc = units_parse_duration("--grace", arg, &ms, err, errlen)))
			return rc;
		o->sv.grace_ms = ms > 86400000 ? 86400000 : (int)ms;
		return GC_OK;
	case 'R':
		if (supervise_parse_restart(arg, &o->sv.restart) < 0) {
			errbuf_set(err, errlen, "invalid --restart '%s' (expected never, on-failure, on-preempt or always)",
				   arg);
			return GC_EINVAL;
		}
		return GC_OK;
	case 'X': {
		char *end;
		errno = 0;
		long n = strtol(arg, &end, 10);
		if (errno || end == arg || *end || n < 0 || n > 100000) {
			errbuf_set(err, errlen, "invalid --max-restarts '%s' (expected a whole number from 0 to 100000)",
				   arg);
			return GC_EINVAL;
		}
		o->sv.max_restarts = (unsigned)n;
		return GC_OK;
	}
	case 'B':
		return parse_backoff(arg, &o->sv, err, errlen);
	case 'K':
		if (!*arg) {
			errbuf_set(err, errlen, "empty --checkpoint-dir");
			return GC_EINVAL;
		}
		o->sv.checkpoint_dir = arg;
		return GC_OK;
	case 'T':
		if ((rc = units_parse_duration("--hang-timeout", arg, &ms, err, errlen)))
			return rc;
		o->sv.hang_timeout_ms = ms;
		return GC_OK;
	case 'O': o->sv.on_notice = arg; return GC_OK;
	case 'W':
		/* a warning only comes from the spot watcher: it implies --spot */
		if ((rc = units_parse_signal("--on-warning", arg, &o->sv.warning_signal, err, errlen)))
			return rc;
		o->spot = true;
		return GC_OK;
	case 'A': o->ack = true; return GC_OK;
	case 'E': o->no_explain = true; return GC_OK;
	case 'Z': o->bigger = true; return GC_OK;
	case 'Y': {
		/* each a class a retry can fix: a typo would never retry */
		static const char *const known[] = {"oom-fragmentation", "oom-other-process", "oom-transient",
						    "oom-too-big", "nccl-timeout", "xid", "gpu-lost"};
		bool ok = *arg != '\0';
		for (const char *p = arg; ok && *p;) {
			size_t k = strcspn(p, ",");
			bool found = false;
			for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
				found |= strlen(known[i]) == k && strncmp(known[i], p, k) == 0;
			ok = found;
			p += k;
			if (*p == ',' && !*++p)
				ok = false;
		}
		if (!ok) {
			errbuf_set(err, errlen, "invalid --retry-on '%.100s' (expected classes separated by commas: "
				   JOB_RETRY_CLASSES ")", arg);
			return GC_EINVAL;
		}
		o->retry_on = arg;
		return GC_OK;
	}
	default:
		return GC_ENOTFOUND;
	}
}

bool job_retry_listed(const struct job_opts *o, const char *cls)
{
	size_t l = strlen(cls);
	for (const char *p = o->retry_on; p && *p;) {
		size_t k = strcspn(p, ",");
		if (k == l && strncmp(p, cls, k) == 0)
			return true;
		p += k + (p[k] == ',');
	}
	return false;
}

int job_queued_option(struct job_opts *o, const char *opt, char *err, size_t errlen)
{
	const char *eq = strchr(opt, '=');
	size_t len = eq ? (size_t)(eq - opt) : strlen(opt);
	for (size_t i = 0; opt[0] == '-' && opt[1] == '-' && i < N_SUPERVISOR; i++) {
		const struct option *so = &supervisor_options[i];
		if (strlen(so->name) != len - 2 || strncmp(so->name, opt + 2, len - 2) != 0)
			continue;
		if ((so->has_arg == required_argument) != (eq != NULL))
			break;
		return job_option(o, so->val, eq ? eq + 1 : NULL, err, errlen);
	}
	char names[400];
	size_t off = 0;
	for (size_t i = 0; i < N_SUPERVISOR && off < sizeof names; i++)
		off += (size_t)snprintf(names + off, sizeof names - off, "%s--%s", i ? ", " : "", supervisor_options[i].name);
	errbuf_set(err, errlen, "'%.64s' is not a gpuctl run option a queued job may take (%s)", opt, names);
	return GC_EINVAL;
}

int job_opts_resolve(const struct job_opts *o, bool detect, enum spot_cloud *cloud, char *err, size_t errlen)
{
	*cloud = SPOT_NONE;
	if (o->no_explain && o->retry_on) {
		errbuf_set(err, errlen, "--retry-on retries by the class the failure is explained as: not with --no-explain");
		return GC_EINVAL;
	}
	struct stat st;
	if (o->sv.checkpoint_dir && stat(o->sv.checkpoint_dir, &st) == 0 && !S_ISDIR(st.st_mode)) {
		errbuf_set(err, errlen, "invalid --checkpoint-dir '%s': not a directory", o->sv.checkpoint_dir);
		return GC_EINVAL;
	}
	if (!o->spot)
		return GC_OK;
	bool autodetect = false;
	if (spot_parse_cloud(o->cloud_arg, cloud, &autodetect) < 0) {
		errbuf_set(err, errlen, "invalid --cloud '%s' (expected aws, gcp, azure, none or auto)", o->cloud_arg);
		return GC_EINVAL;
	}
	if (detect && autodetect && (*cloud = spot_detect(NULL)) == SPOT_NONE) {
		errbuf_set(err, errlen, "--spot: no cloud detected from /sys/class/dmi/id (use --cloud aws|gcp|azure)");
		return GC_EINVAL;
	}
	return GC_OK;
}
