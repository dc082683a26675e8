/*
 * runjob.c — the life of a job shared by `gpuctl run` and `gpuctl launch`
 * (see runjob.h): lease GPUs — waiting in line with --wait — then run the
 * command, no shell in between, in its own process group, with
 * CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER=PCI_BUS_ID set; forward
 * SIGINT/SIGTERM/SIGHUP/SIGQUIT to it, and exit with its status (128+N when
 * a signal N ended it). The lease files pass to the command, so its GPUs
 * stay leased for exactly as long as any process of the job lives.
 */
#include "util/clock.h"
#include "runjob.h"
#include "runner.h"
#include <getopt.h>
#include "jobs/jobstatus.h"
#include "jobs/outtail.h"
#include "diagnose/explain.h"
#include "util/shquote.h"
#include "sigstop.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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
	j->go_fd = -1;
	j->status_slot = -1;
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

static int exec_job(struct runjob *j, const struct cli_global *g, char **cmd);

/*
 * A failed job explained from the last lines it wrote (outtail.h), after
 * them, on stderr: what failed, its numbers, the cause and the fix, as
 * gpuctl explain finds them; nothing when nothing is recognised.
 */
static void explain_failure(struct outtail *tail, int status, enum supervise_end end, char *cls, size_t clslen,
			    double *need_mib)
{
	cls[0] = '\0';
	*need_mib = 0;
	char *text = NULL;
	size_t len = outtail_text(tail, &text);
	char dir[4200], err[512];
	struct explain_db *db = NULL;
	struct explain_result r = {0};
	if (!len || cli_signatures_dir(dir, sizeof dir, true) < 0 || explain_db_load(&db, dir, err, sizeof err) != GC_OK ||
	    explain_scan_buf(db, text, len, &r) != GC_OK || r.n == 0)
		goto out;
	explain_class(&r.findings[0], cls, clslen);
	/* what an oom-too-big needed on one GPU: what PyTorch held plus what it asked for */
	for (size_t k = 0; k < r.findings[0].nvalues; k++) {
		const struct explain_value *v = &r.findings[0].values[k];
		if (v->is_num && (strcmp(v->name, "allocated_mib") == 0 || strcmp(v->name, "requested_mib") == 0))
			*need_mib += v->num;
	}
	fflush(stdout);
	char how[64];
	if (end == SUPERVISE_END_OOM)
		snprintf(how, sizeof how, "killed by the kernel's OOM killer");
	else if (status > 128)
		snprintf(how, sizeof how, "ended by signal %d", status - 128);
	else
		snprintf(how, sizeof how, "exit status %d", status);
	fprintf(stderr, "\ngpuctl: the job failed (%s); its last output shows %zu known failure%s (gpuctl explain):\n",
		how, r.n, r.n == 1 ? "" : "s");
	for (size_t i = 0; i < r.n && i < 3; i++) {
		const struct explain_finding *f = &r.findings[i];
		char fc[64];
		fprintf(stderr, "  [%s] %s\n    %.*s%s\n", explain_class(f, fc, sizeof fc), f->title, 200, f->line,
			strlen(f->line) > 200 ? "..." : "");
		if (f->nvalues) {
			fprintf(stderr, "    numbers:");
			for (size_t k = 0; k < f->nvalues; k++) {
				char b[160];
				explain_value_text(&f->values[k], b, sizeof b);
				fprintf(stderr, "%s %s", k ? "," : "", b);
			}
			fputc('\n', stderr);
		}
		fprintf(stderr, "    cause: %s\n    fix: %s\n", f->cause, f->fix);
	}
	if (r.n > 3)
		fprintf(stderr, "  (%zu more: gpuctl explain on the log shows them)\n", r.n - 3);
out:
	explain_result_free(&r);
	explain_db_free(db);
	free(text);
}

/*
 * A job of gpuctld's: its record ("ID RAN STATUS", jobstatus.h) in its
 * user's status file; RAN 0 when the command never started (its GPUs were
 * taken, it could not be found). gpuctld reads it for a job it adopted
 * after a restart, which is not its child.
 */
static int write_status(const struct runjob *j, bool ran, int rc)
{
	if (!j->status_file || j->status_slot < 1)
		return 0;
	int fd = open(j->status_file, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	int w = fd < 0 ? -1 : jobstatus_write(fd, j->status_slot, ran, rc, ran ? (int)j->end : -1);
	if (w < 0)
		cli_err("cannot write the status file '%s': %s", j->status_file, strerror(errno));
	if (fd >= 0)
		close(fd);
	return w < 0 ? -1 : 0;
}

int runjob_spawned(const struct spawnreq *r)
{
	struct cli_global g;
	cli_global_init(&g);
	int rc = cli_export_sim(&g);
	if (rc)
		return rc;
	struct runjob j;
	runjob_init(&j);
	j.r.placed_spec = r->placed;
	j.name = r->name;
	j.status_file = r->status;
	j.status_slot = r->slot > 0 && r->slot <= INT64_MAX ? (long long)r->slot : -1;
	j.go_fd = SPAWNREQ_GO_FD;
	j.log_drained = runner_log_drained;
	char err[400];
	for (size_t i = 0; i < r->nopts && rc == EXIT_OK; i++) {
		if (job_queued_option(&j.jo, r->opts[i], err, sizeof err) != GC_OK) {
			cli_err("%s", err);
			rc = EXIT_USAGE;
		}
	}
	if (rc == EXIT_OK)
		rc = runjob_exec(&j, &g, r->argv);
	runjob_release(&j);
	return rc;
}

int runjob_exec(struct runjob *j, const struct cli_global *g, char **cmd)
{
	/* what cannot be written or made is refused before anything is leased or run */
	struct stat st;
	if (j->status_file && !j->dry_run) {
		int fd = open(j->status_file, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			cli_err("cannot write the status file '%s': %s (it must exist)", j->status_file, strerror(errno));
			return EXIT_USAGE;
		}
		close(fd);
	}
	if (j->jo.sv.checkpoint_dir && stat(j->jo.sv.checkpoint_dir, &st) == 0 && !S_ISDIR(st.st_mode)) {
		cli_err("invalid --checkpoint-dir '%s': not a directory", j->jo.sv.checkpoint_dir);
		return EXIT_USAGE;
	}
	int rc = exec_job(j, g, cmd);
	if (j->no_go && !sigstop_last)
		rc = EXIT_OK; /* gpuctld went away before it said go: nothing ran, nothing failed */
	if (j->log_drained && j->log_drained() < 0 && rc == EXIT_OK)
		rc = EXIT_FAIL; /* its output was lost (a full disk): not a success; gpuctld's log says why */
	if (write_status(j, j->ran, rc) < 0 && rc == EXIT_OK)
		rc = EXIT_FAIL; /* whoever reads it would not learn how the job ended */
	return rc;
}

/* cur with opt added (a list of key:value pairs, comma-separated), into buf */
static void alloc_conf_with(const char *cur, const char *opt, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s", cur && *cur ? cur : "", cur && *cur ? "," : "", opt);
}

/*
 * After a failure of class cls: whether --retry-on asks for a retry and one
 * is left (--max-restarts), and what it changes: the allocator setting for
 * fragmentation (merged into the user's own, never replacing it; before
 * PyTorch 2.1, which refuses expandable_segments, max_split_size_mb), other
 * GPUs for the other classes (the failed ones excluded). Said on stderr.
 */
enum retry { RETRY_NO, RETRY_IN_PLACE, RETRY_ELSEWHERE };

static enum retry retry_for(struct runjob *j, const char *cls, const unsigned *chosen, unsigned retries,
			    double need_mib)
{
	struct job_request *r = &j->r;
	bool fix_conf = strcmp(cls, "alloc-conf-expandable-segments-unsupported") == 0;
	if (!fix_conf && !job_retry_listed(&j->jo, cls))
		return RETRY_NO;
	if (fix_conf && !job_retry_listed(&j->jo, "oom-fragmentation"))
		return RETRY_NO;
	if (retries >= j->jo.sv.max_restarts) {
		cli_err("not retried: %s again, and --max-restarts %u retries were spent", cls, j->jo.sv.max_restarts);
		return RETRY_NO;
	}
	char what[600];
	if (strcmp(cls, "oom-too-big") == 0) {
		/* GPUs with more free memory than it needed, when the machine has any */
		if (!j->jo.bigger) {
			cli_err("not retried: oom-too-big moves to bigger GPUs only with --bigger");
			return RETRY_NO;
		}
		if (r->jg.gpus_spec || r->placed_spec) {
			cli_err("not retried: %s names the GPUs, and oom-too-big needs bigger ones",
				r->placed_spec ? "gpuctld's placement" : "--gpus");
			return RETRY_NO;
		}
		uint64_t need = (uint64_t)(need_mib * 1048576.0) + (256ull << 20); /* and a margin for the context */
		uint64_t most = 0;
		for (size_t i = 0; i < r->snap.ngpus; i++)
			if (r->snap.gpus[i].mem_total > most)
				most = r->snap.gpus[i].mem_total;
		if (need_mib <= 0 || need <= r->jg.sel.min_free_mem || need > most) {
			cli_err("not retried: it needs about %.1f GiB on one GPU and the largest here has %.1f GiB (gpuctl "
				"advise tells what would fit)", (double)need / 1073741824.0, (double)most / 1073741824.0);
			return RETRY_NO;
		}
		r->jg.sel.min_free_mem = need;
		snprintf(what, sizeof what, "on GPUs with at least %.1f GiB free", (double)need / 1073741824.0);
	} else if (strcmp(cls, "oom-fragmentation") == 0 || fix_conf) {
		const char *cur = job_env_get(&j->env, "PYTORCH_CUDA_ALLOC_CONF");
		if (!cur)
			cur = getenv("PYTORCH_CUDA_ALLOC_CONF");
		char val[512];
		if (fix_conf) {
			/* PyTorch before 2.1: take our expandable_segments back out, keep the user's */
			char base[512] = "";
			for (const char *p = cur ? cur : ""; *p;) {
				size_t k = strcspn(p, ",");
				if (strncmp(p, "expandable_segments:", 20) != 0)
					snprintf(base + strlen(base), sizeof base - strlen(base), "%s%.*s", base[0] ? "," : "",
						 (int)k, p);
				p += k + (p[k] == ',');
			}
			if (strstr(base, "max_split_size_mb")) {
				cli_err("not retried: this PyTorch refuses expandable_segments and max_split_size_mb is set "
					"already");
				return RETRY_NO;
			}
			alloc_conf_with(base, "max_split_size_mb:128", val, sizeof val);
		} else {
			if (cur && strstr(cur, "expandable_segments")) {
				cli_err("not retried: PYTORCH_CUDA_ALLOC_CONF already sets expandable_segments (%s)", cur);
				return RETRY_NO;
			}
			alloc_conf_with(cur, "expandable_segments:True", val, sizeof val);
		}
		if (job_env_set(&j->env, "PYTORCH_CUDA_ALLOC_CONF", val) != GC_OK)
			return RETRY_NO;
		snprintf(what, sizeof what, "with PYTORCH_CUDA_ALLOC_CONF=%s", val);
	} else {
		/* on other GPUs: the ones it failed on left out */
		if (r->placed_spec) {
			cli_err("not retried here: gpuctld placed this queued job's GPUs; it queues the job again "
				"without them");
			return RETRY_NO;
		}
		if (r->jg.gpus_spec) {
			cli_err("not retried: --gpus names the GPUs, and %s needs others", cls);
			return RETRY_NO;
		}
		char list[256] = "";
		r->jg.sel.exclude = r->exclude; /* with or without --exclude's own */
		for (unsigned i = 0; i < r->jg.sel.n && chosen; i++) {
			if (chosen[i] < r->ngpus && r->exclude)
				r->exclude[chosen[i]] = true;
			snprintf(list + strlen(list), sizeof list - strlen(list), "%s%u", i ? "," : "", chosen[i]);
		}
		size_t left = 0;
		for (size_t i = 0; i < r->ngpus; i++)
			left += r->exclude && !r->exclude[i];
		if (left < r->jg.sel.n) {
			cli_err("not retried: %s, and no %u other GPUs are left here (those it failed on are left out)", cls,
				r->jg.sel.n);
			return RETRY_NO;
		}
		snprintf(what, sizeof what, "on other GPUs than %s", list);
	}
	cli_err("retrying (%u of %u, --retry-on %s): %s", retries + 1, j->jo.sv.max_restarts,
		fix_conf ? "oom-fragmentation" : cls, what);
	/* the allocator's setting changes nothing of the GPUs: the lease is kept */
	return strcmp(cls, "oom-fragmentation") == 0 || fix_conf ? RETRY_IN_PLACE : RETRY_ELSEWHERE;
}

static int exec_job(struct runjob *j, const struct cli_global *g, char **cmd)
{
	int rc;
	if (j->jo.no_explain && j->jo.retry_on) {
		cli_err("--retry-on retries by the class the failure is explained as: not with --no-explain");
		return EXIT_USAGE;
	}
	j->jo.sv.argv = cmd;
	enum spot_cloud cloud = SPOT_NONE;
	if (j->jo.spot) {
		bool autodetect = false;
		if (spot_parse_cloud(j->jo.cloud_arg, &cloud, &autodetect) < 0) {
			cli_err("invalid --cloud '%s' (expected aws, gcp, azure, none or auto)", j->jo.cloud_arg);
			return EXIT_USAGE;
		}
		if (!j->dry_run && autodetect && (cloud = spot_detect(NULL)) == SPOT_NONE) {
			cli_err("--spot: no cloud detected from /sys/class/dmi/id (use --cloud aws|gcp|azure)");
			return EXIT_USAGE;
		}
	}
	if (j->dry_run)
		return dry_run(j, g);
	j->r.server_picks = true; /* in authority mode: it leases, so gpuctld chooses */
	if ((rc = request_prepare(&j->r, g)))
		return rc;

	struct job_request *r = &j->r;
	struct lease_dir *d = NULL;
	char err[512];
	if (lease_dir_open(&d, NULL, true, err, sizeof err) != GC_OK) {
		cli_err("%s", err);
		return EXIT_FAIL;
	}
	char desc[300];
	job_request_describe(r, desc, sizeof desc);
	struct lease_info me;
	lease_info_self(&me, j->name, cmd, desc);
	me.want = r->jg.n_auto || r->jg.sel.n == 0 ? 1 : (unsigned)r->jg.sel.n;
	catch_signals();

	/* -n auto may take every GPU */
	unsigned *chosen = calloc(r->ngpus + r->jg.sel.n + 1, sizeof *chosen);
	struct lease *l = NULL;
	struct lease_ticket *t = NULL;
	if (!chosen) {
		cli_err("out of memory");
		rc = EXIT_FAIL;
		goto out_dir;
	}
	unsigned retries = 0;
	bool retry;
again:
	retry = false;
	char why[2048] = "";
	int ar = job_request_acquire(r, d, &me, j->wait, j->timeout_ms, &sigstop_last, &l, &t, chosen, why, sizeof why);
	if (r->note[0])
		cli_err("%s", r->note); /* -n auto took fewer than were free */
	if (ar == GC_EBUSY) {
		cli_err("%s not available now: %s; use --wait to wait in line", desc, why);
		rc = EXIT_FAIL;
	} else if (ar == GC_ETIMEDOUT) {
		cli_err("gave up waiting for %s after the --wait timeout: %s", desc, why);
		rc = EXIT_FAIL;
	} else if (ar == GC_ECANCELED) {
		rc = 128 + sigstop_last;
	} else if (ar != GC_OK) {
		cli_err("%s", why);
		rc = request_exit_code(ar);
	}
	if (l) {
		rc = job_ready(j, chosen, d);
		for (bool again_here = rc == EXIT_OK; again_here;) {
			again_here = false;
			struct job_run run = {
				.r = r, .chosen = chosen, .lease = l, .d = d, .ticket = &t, .jo = &j->jo,
				.cloud = cloud, .env = &j->env, .go_fd = j->go_fd, .stop = &sigstop_last,
				.open_ctx = open_ctx, .log = job_log,
			};
			/* the job's output passes through the tail keeper, so that a failure can be explained */
			struct outtail *tail = NULL;
			if (!j->jo.no_explain && !j->dry_run) {
				char terr[256];
				if (outtail_open(&tail, OUTTAIL_KEEP, terr, sizeof terr) != GC_OK)
					cli_err("%s: the job runs, but a failure will not be explained", terr);
			}
			j->jo.sv.tail = tail;
			struct job_run_result res;
			int jr = job_run(&run, &res, err, sizeof err);
			j->jo.sv.tail = NULL;
			char cls[64] = "";
			double need_mib = 0;
			if (tail && jr == GC_OK && res.ran && res.sv.status != 0 && res.sv.end != SUPERVISE_END_INTERRUPTED)
				explain_failure(tail, res.sv.status, res.sv.end, cls, sizeof cls, &need_mib);
			outtail_close(tail);
			enum retry how = cls[0] ? retry_for(j, cls, chosen, retries, need_mib) : RETRY_NO;
			if (how != RETRY_NO) {
				retries++;
				again_here = how == RETRY_IN_PLACE && !sigstop_last; /* the same GPUs, still leased */
				retry = how == RETRY_ELSEWHERE;
			}
			j->go_fd = run.go_fd; /* -1 once job_run has read it */
			j->no_go = res.no_go;
			j->ran = res.ran;
			j->end = res.sv.end;
			if (jr == GC_OK)
				rc = res.sv.status;
			else if (jr == GC_ECANCELED)
				rc = sigstop_last ? 128 + sigstop_last : EXIT_FAIL; /* not run: reported as never ran */
			else {
				cli_err("%s", err);
				rc = EXIT_FAIL;
			}
		}
		lease_release(l);
		l = NULL;
	}
	lease_queue_leave(t);
	t = NULL;
	if (retry && !sigstop_last)
		goto again;
out_dir:
	free(chosen);
	lease_dir_close(d);
	return rc;
}
