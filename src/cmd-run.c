/*
 * cmd-run.c — `gpuctl run`: lease GPUs (waiting in line with --wait), then
 * run a command on them — no shell in between, in its own process group,
 * with CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER=PCI_BUS_ID set — forward
 * SIGINT/SIGTERM/SIGHUP/SIGQUIT to it, and exit with its status (128+N when
 * a signal N ended it). The lease files pass to the command, so its GPUs
 * stay leased for exactly as long as any process of the job lives.
 */
#include "request.h"
#include "spot.h"
#include "supervise.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	got_signal = sig;
}

/* while waiting in line: a signal ends the wait */
static void catch_signals(void)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		sigaction(sigs[i], &sa, NULL);
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: gpuctl run [-n N | --gpus LIST] [filters] [--wait[=TIMEOUT]] [--name NAME] -- CMD [ARGS...]\n"
		"\n"
		"Lease GPUs, run CMD on them, release them when it ends.\n"
		"  -n N                   how many GPUs (default 1)\n"
		"      --gpus=LIST        exactly these GPUs (indices, UUIDs or PCI bus ids)\n"
		"      --min-free-mem=SIZE  only GPUs with this much free memory (20G, 20GiB, 20000M)\n"
		"      --max-util=PCT     only GPUs at most this busy\n"
		"      --model=GLOB       only GPUs whose name matches (A100, '*H100*')\n"
		"      --exclude=LIST     never these GPUs\n"
		"      --shared           allow GPUs where other users' processes run\n"
		"      --ids=index|uuid   how CUDA_VISIBLE_DEVICES names the GPUs (default: index)\n"
		"      --wait[=TIMEOUT]   wait in line for busy GPUs (first come, first served)\n"
		"      --name=NAME        a name for the job, shown by gpuctl leases and ls\n"
		"\n"
		"CMD gets CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER=PCI_BUS_ID, GPUCTL_GPUS (indices),\n"
		"GPUCTL_GPU_UUIDS and GPUCTL_NUM_GPUS. gpuctl exits with CMD's status, 128+N if a\n"
		"signal N ended it, 127 if CMD was not found, 126 if it could not be run.\n");
}

static int set_env(struct request *r, const unsigned *chosen)
{
	char cvd[8192], idx[4096], uu[8192], num[16];
	if (request_render(r, chosen, cvd, sizeof cvd) < 0) {
		cli_err("cannot render CUDA_VISIBLE_DEVICES for %u GPUs", r->sel.n);
		return EXIT_FAIL;
	}
	size_t oi = 0, ou = 0;
	idx[0] = uu[0] = '\0';
	for (unsigned k = 0; k < r->sel.n; k++) {
		oi += (size_t)snprintf(idx + oi, sizeof idx - oi, "%s%u", k ? "," : "", chosen[k]);
		ou += (size_t)snprintf(uu + ou, sizeof uu - ou, "%s%s", k ? "," : "", r->uuids[chosen[k]]);
		if (oi >= sizeof idx || ou >= sizeof uu) {
			cli_err("too many GPUs for the environment");
			return EXIT_FAIL;
		}
	}
	snprintf(num, sizeof num, "%u", r->sel.n);
	if (setenv("CUDA_VISIBLE_DEVICES", cvd, 1) || setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 1) ||
	    setenv("GPUCTL_GPUS", idx, 1) || setenv("GPUCTL_GPU_UUIDS", uu, 1) ||
	    setenv("GPUCTL_NUM_GPUS", num, 1)) {
		cli_err("cannot set the environment: %s", strerror(errno));
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

/* what the supervisor's callbacks need */
struct job {
	struct request *r;
	const unsigned *chosen;
	struct lease *lease;
	struct lease_dir *d;
	struct lease_ticket **ticket;
};

static void job_log(void *arg, const char *line)
{
	(void)arg;
	cli_err("%s", line);
}

static void job_started(void *arg, pid_t pid)
{
	struct job *j = arg;
	/* out of line and unwatched once the job runs: those closes are slow on ext4 */
	lease_queue_leave(*j->ticket);
	*j->ticket = NULL;
	lease_unwatch(j->d);
	lease_set_pid(j->lease, pid, 0);
}

static int job_gpu_util(void *arg, int *pct)
{
	struct job *j = arg;
	struct request *r = j->r;
	if (gc_ctx_sample(r->ctx, &r->snap, GC_BIT(GC_V_UTIL_GPU), NULL, false) != GC_OK)
		return -1;
	int max = 0;
	for (unsigned k = 0; k < r->sel.n; k++) {
		const gc_gpu *g = &r->snap.gpus[j->chosen[k]];
		if (g->st[GC_V_UTIL_GPU] != GC_ST_OK)
			return -1;
		if ((int)g->util_gpu > max)
			max = (int)g->util_gpu;
	}
	*pct = max;
	return 0;
}

/* "1s:5m" → first and largest wait before a restart */
static int parse_backoff(const char *arg, struct sv_opts *o)
{
	char first[64];
	const char *colon = strchr(arg, ':');
	size_t n = colon ? (size_t)(colon - arg) : strlen(arg);
	if (n == 0 || n >= sizeof first) {
		cli_err("invalid --backoff '%s' (expected FIRST[:MAX], e.g. 1s:5m)", arg);
		return EXIT_USAGE;
	}
	memcpy(first, arg, n);
	first[n] = '\0';
	long long a, b = 300000;
	int rc;
	if ((rc = cli_parse_duration("--backoff", first, &a)) || (colon && (rc = cli_parse_duration("--backoff", colon + 1, &b))))
		return rc;
	if (b < a || a > INT32_MAX || b > INT32_MAX) {
		cli_err("invalid --backoff '%s': the maximum must be at least the first wait, at most 24 days", arg);
		return EXIT_USAGE;
	}
	o->backoff_ms = (int)a;
	o->backoff_max_ms = (int)b;
	return EXIT_OK;
}

int cmd_run(const struct cli_global *g, int argc, char **argv)
{
	static const struct option opts[] = {
		REQUEST_LONG_OPTIONS,
		{"wait", optional_argument, NULL, 'w'},
		{"name", required_argument, NULL, 'N'},
		{"spot", no_argument, NULL, 'S'},
		{"cloud", required_argument, NULL, 'C'},
		{"poll", required_argument, NULL, 'P'},
		{"grace", required_argument, NULL, 'G'},
		{"restart", required_argument, NULL, 'R'},
		{"max-restarts", required_argument, NULL, 'X'},
		{"backoff", required_argument, NULL, 'B'},
		{"checkpoint-dir", required_argument, NULL, 'K'},
		{"hang-timeout", required_argument, NULL, 'T'},
		{"on-notice", required_argument, NULL, 'O'},
		{"ack", no_argument, NULL, 'A'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct request r;
	request_init(&r);
	bool wait = false, spot = false, ack = false;
	long long timeout_ms = -1, ms;
	const char *name = NULL, *cloud_arg = "auto";
	struct sv_opts sv = {
		.restart = SV_RESTART_NEVER, .max_restarts = 3, .backoff_ms = 1000,
		.backoff_max_ms = 300000, .grace_ms = -1, .margin_ms = 5000,
		.default_grace_ms = 25000, .take_terminal = true,
	};
	struct spot_opts so = {0};
	int c, rc;
	long n;
	optind = 1;
	opterr = 0;
	/* '+': stop at the command, whose own options are not ours */
	while ((c = getopt_long(argc, argv, "+:n:h", opts, NULL)) != -1) {
		if ((rc = request_option(&r, c, optarg)) >= 0) {
			if (rc)
				return rc;
			continue;
		}
		switch (c) {
		case 'w':
			wait = true;
			if (optarg && (rc = cli_parse_duration("--wait", optarg, &timeout_ms)))
				return rc;
			break;
		case 'N': name = optarg; break;
		case 'S': spot = true; break;
		case 'C': cloud_arg = optarg; spot = true; break;
		case 'P':
			if ((rc = cli_parse_duration("--poll", optarg, &ms)))
				return rc;
			if (ms < 10 || ms > 3600000) {
				cli_err("invalid --poll '%s' (between 0.01 s and 1 h)", optarg);
				return EXIT_USAGE;
			}
			so.poll_ms = (int)ms;
			break;
		case 'G':
			if ((rc = cli_parse_duration("--grace", optarg, &ms)))
				return rc;
			sv.grace_ms = ms > 86400000 ? 86400000 : (int)ms;
			break;
		case 'R':
			if (sv_parse_restart(optarg, &sv.restart) < 0) {
				cli_err("invalid --restart '%s' (expected never, on-failure, on-preempt or always)", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'X': {
			char *end;
			errno = 0;
			n = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || n < 0 || n > 100000) {
				cli_err("invalid --max-restarts '%s' (expected a whole number from 0 to 100000)", optarg);
				return EXIT_USAGE;
			}
			sv.max_restarts = (unsigned)n;
			break;
		}
		case 'B':
			if ((rc = parse_backoff(optarg, &sv)))
				return rc;
			break;
		case 'K':
			if (!*optarg) {
				cli_err("empty --checkpoint-dir");
				return EXIT_USAGE;
			}
			sv.checkpoint_dir = optarg;
			break;
		case 'T':
			if ((rc = cli_parse_duration("--hang-timeout", optarg, &ms)))
				return rc;
			sv.hang_timeout_ms = ms;
			break;
		case 'O': sv.on_notice = optarg; break;
		case 'A': ack = true; break;
		case 'h': usage(stdout); return EXIT_OK;
		default:
			return cli_bad_option("run", c, argv);
		}
	}
	if (optind >= argc) {
		cli_err("run needs a command: gpuctl run [options] -- CMD [ARGS...]");
		return EXIT_USAGE;
	}
	char **cmd = argv + optind;
	sv.argv = cmd;
	enum spot_cloud cloud = SPOT_NONE;
	if (spot) {
		bool autodetect = false;
		if (spot_parse_cloud(cloud_arg, &cloud, &autodetect) < 0) {
			cli_err("invalid --cloud '%s' (expected aws, gcp, azure, none or auto)", cloud_arg);
			return EXIT_USAGE;
		}
		if (autodetect && (cloud = spot_detect(NULL)) == SPOT_NONE) {
			cli_err("--spot: no cloud detected from /sys/class/dmi/id (use --cloud aws|gcp|azure)");
			return EXIT_USAGE;
		}
	}
	if (sv.checkpoint_dir && mkdir(sv.checkpoint_dir, 0755) < 0 && errno != EEXIST) {
		cli_err("cannot create --checkpoint-dir '%s': %s", sv.checkpoint_dir, strerror(errno));
		return EXIT_FAIL;
	}
	if ((rc = request_prepare(&r, g)))
		goto out_req;

	struct lease_dir *d = NULL;
	char err[512];
	if (lease_dir_open(&d, NULL, true, err, sizeof err) != GC_OK) {
		cli_err("%s", err);
		rc = EXIT_FAIL;
		goto out_req;
	}
	char desc[300];
	request_describe(&r, desc, sizeof desc);
	struct lease_info me;
	lease_info_self(&me, name, cmd, desc);
	catch_signals();

	unsigned *chosen = calloc(r.sel.n ? r.sel.n : 1, sizeof *chosen);
	struct lease *l = NULL;
	struct lease_ticket *t = NULL;
	struct spot_watcher *watcher = NULL;
	long long deadline = timeout_ms >= 0 ? now_ms() + timeout_ms : -1;
	bool resample = false; /* request_prepare has just sampled */
	if (!chosen) {
		cli_err("out of memory");
		rc = EXIT_FAIL;
		goto out_dir;
	}
	if (wait && lease_queue_join(d, &me, &t, err, sizeof err) != GC_OK) {
		cli_err("%s", err);
		rc = EXIT_FAIL;
		goto out_dir;
	}
	for (;;) {
		char why[2048] = "";
		int head = t ? lease_queue_is_head(d, t) : 1;
		if (head < 0) {
			cli_err("cannot read the queue in '%s'", lease_dir_path(d));
			rc = EXIT_FAIL;
			break;
		}
		if (head) {
			/* only the head looks at the GPUs again: the others just wait their turn */
			if (resample && (rc = request_resample(&r)))
				break;
			resample = true;
			int tr = request_try(&r, d, &me, &l, chosen, why, sizeof why);
			if (tr == GC_OK)
				break;
			if (tr != GC_EBUSY) {
				rc = cli_exit_code(tr) == EXIT_OK ? EXIT_FAIL : cli_exit_code(tr);
				break;
			}
		} else {
			snprintf(why, sizeof why, "waiting behind earlier requests");
		}
		if (!wait) {
			cli_err("%s not available now: %s; use --wait to wait in line", desc, why);
			rc = EXIT_FAIL;
			break;
		}
		if (got_signal) {
			rc = 128 + got_signal;
			break;
		}
		long long left = deadline < 0 ? 1000 : deadline - now_ms();
		if (deadline >= 0 && left <= 0) {
			cli_err("gave up waiting for %s after the --wait timeout: %s", desc, why);
			rc = EXIT_FAIL;
			break;
		}
		/* woken at once by a release; the 1 s bound notices processes that end on their own */
		if (lease_wait(d, left < 1000 ? (int)left : 1000) < 0) {
			cli_err("cannot wait for GPUs in '%s'", lease_dir_path(d));
			rc = EXIT_FAIL;
			break;
		}
		if (got_signal) {
			rc = 128 + got_signal;
			break;
		}
	}
	if (l) {
		/* the job may want to know its place in line (the queue's arrival order) */
		/* when the lease began, read before the next waiter can take its turn */
		struct timespec began;
		clock_gettime(CLOCK_REALTIME, &began);
		char ticket[24], start[40];
		snprintf(start, sizeof start, "%lld.%09ld", (long long)began.tv_sec, began.tv_nsec);
		setenv("GPUCTL_LEASE_START", start, 1);
		if (t) {
			snprintf(ticket, sizeof ticket, "%llu", (unsigned long long)lease_ticket_number(t));
			setenv("GPUCTL_TICKET", ticket, 1);
		} else {
			unsetenv("GPUCTL_TICKET");
		}
		/* out of line at once, so the next waiter can go */
		lease_queue_withdraw(t);
		rc = set_env(&r, chosen);
		if (rc == EXIT_OK && cloud != SPOT_NONE &&
		    spot_watch_start(&watcher, cloud, &so, err, sizeof err) != GC_OK) {
			cli_err("--spot: %s", err);
			rc = EXIT_FAIL;
		}
		if (rc == EXIT_OK) {
			struct job j = {.r = &r, .chosen = chosen, .lease = l, .d = d, .ticket = &t};
			struct sv_result res;
			sv.spot = watcher;
			sv.arg = &j;
			sv.log = job_log;
			sv.started = job_started;
			sv.gpu_util = job_gpu_util;
			if (sv_run(&sv, &res) != GC_OK) {
				cli_err("cannot supervise '%s': %s", cmd[0], strerror(errno));
				rc = EXIT_FAIL;
			} else {
				rc = res.status;
				if (res.end == SV_END_EXEC_FAILED)
					cli_err("cannot run '%s': %s", cmd[0], strerror(res.exec_errno));
				/* Azure: the job has stopped, let the VM go now rather than at NotBefore */
				if (ack && res.noticed && watcher) {
					char aerr[512];
					if (spot_watch_ack(watcher, &res.notice, aerr, sizeof aerr) != GC_OK)
						cli_err("cannot acknowledge the %s event: %s",
							spot_cloud_name(res.notice.cloud), aerr);
				}
				if (res.end == SV_END_EXEC_FAILED)
					;
				else if (res.end == SV_END_PREEMPTED || res.end == SV_END_HUNG ||
					 res.end == SV_END_OOM || res.attempts > 1)
					/* a plain exit or signal speaks through the status, as in a shell */
					cli_err("run %s ended: %s (status %d) after %u attempt%s", sv.run_id,
						sv_end_name(res.end), res.status, res.attempts,
						res.attempts == 1 ? "" : "s");
			}
		}
		spot_watch_stop(watcher);
		lease_release(l);
	}
	lease_queue_leave(t);
out_dir:
	free(chosen);
	lease_dir_close(d);
out_req:
	request_release(&r);
	return rc;
}
