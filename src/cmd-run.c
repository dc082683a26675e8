/*
 * cmd-run.c — `gpuctl run`: lease GPUs (waiting in line with --wait), then
 * run a command on them — no shell in between, in its own process group,
 * with CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER=PCI_BUS_ID set — forward
 * SIGINT/SIGTERM/SIGHUP/SIGQUIT to it, and exit with its status (128+N when
 * a signal N ended it). The lease files pass to the command, so its GPUs
 * stay leased for exactly as long as any process of the job lives.
 */
#include "request.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	got_signal = sig;
}

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

/* SIGCHLD needs a handler (not SIG_IGN) for sigsuspend() to return on it */
static void on_child(int sig)
{
	(void)sig;
}

static void catch_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++)
		sigaction(forwarded[i], &sa, NULL);
}

/* "30", "30s", "5m", "2h", "1d" → milliseconds */
static int parse_duration(const char *arg, long long *ms)
{
	char *end;
	errno = 0;
	double v = strtod(arg, &end);
	double unit = 1000;
	if (end != arg && *end && !end[1]) {
		switch (*end) {
		case 's': unit = 1000; end++; break;
		case 'm': unit = 60e3; end++; break;
		case 'h': unit = 3600e3; end++; break;
		case 'd': unit = 86400e3; end++; break;
		}
	}
	if (errno || end == arg || *end || !(v > 0 && v * unit < 1e15)) {
		cli_err("invalid --wait timeout '%s' (expected a duration such as 90, 30s, 5m or 2h)", arg);
		return EXIT_USAGE;
	}
	*ms = (long long)(v * unit);
	return EXIT_OK;
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

/* take the terminal for the job's process group when we are in the foreground */
static bool take_terminal(pid_t pgid)
{
	if (!isatty(STDIN_FILENO) || tcgetpgrp(STDIN_FILENO) != getpgrp())
		return false;
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGTTOU);
	sigprocmask(SIG_BLOCK, &block, &old);
	bool ok = tcsetpgrp(STDIN_FILENO, pgid) == 0;
	sigprocmask(SIG_SETMASK, &old, NULL);
	return ok;
}

static void give_back_terminal(void)
{
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGTTOU);
	sigprocmask(SIG_BLOCK, &block, &old);
	(void)tcsetpgrp(STDIN_FILENO, getpgrp());
	sigprocmask(SIG_SETMASK, &old, NULL);
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

/*
 * Run the job; returns its exit status as a shell would report it. Once it
 * runs, the queue ticket and the watch are let go: their closes are slow on
 * some file systems and must not delay the job's start.
 */
static int run_job(char **argv, struct lease *l, struct lease_dir *d, struct lease_ticket **t)
{
	int ep[2];
	if (pipe2(ep, O_CLOEXEC) < 0 || lease_inherit(l) != GC_OK) {
		cli_err("cannot start '%s': %s", argv[0], strerror(errno));
		return EXIT_FAIL;
	}
	/*
	 * From the fork on, the forwarded signals and SIGCHLD stay blocked except
	 * inside sigsuspend(): one that arrives before we wait is still forwarded
	 * (checking a flag and then calling waitpid() would lose it).
	 */
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_child;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGCHLD, &sa, NULL);
	sigset_t block, orig, waitmask;
	sigemptyset(&block);
	for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++)
		sigaddset(&block, forwarded[i]);
	sigaddset(&block, SIGCHLD);
	sigprocmask(SIG_BLOCK, &block, &orig);
	waitmask = orig;
	for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++)
		sigdelset(&waitmask, forwarded[i]);
	sigdelset(&waitmask, SIGCHLD);
	fflush(NULL);
	pid_t child = fork();
	if (child < 0) {
		cli_err("cannot start '%s': %s", argv[0], strerror(errno));
		sigprocmask(SIG_SETMASK, &orig, NULL);
		close(ep[0]);
		close(ep[1]);
		return EXIT_FAIL;
	}
	if (child == 0) {
		setpgid(0, 0);
		sa.sa_handler = SIG_DFL;
		for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++)
			sigaction(forwarded[i], &sa, NULL);
		sigaction(SIGCHLD, &sa, NULL);
		sigprocmask(SIG_SETMASK, &orig, NULL);
		close(ep[0]);
		execvp(argv[0], argv);
		int e = errno;
		(void)!write(ep[1], &e, sizeof e);
		_exit(e == ENOENT ? 127 : 126);
	}
	setpgid(child, child); /* also here: no race with the child's own call */
	bool tty = take_terminal(child);
	close(ep[1]);
	int e = 0;
	ssize_t got;
	while ((got = read(ep[0], &e, sizeof e)) < 0 && errno == EINTR)
		;
	close(ep[0]);
	if (got == (ssize_t)sizeof e) {
		waitpid(child, NULL, 0);
		sigprocmask(SIG_SETMASK, &orig, NULL);
		if (tty)
			give_back_terminal();
		cli_err("cannot run '%s': %s", argv[0], strerror(e));
		return e == ENOENT ? 127 : 126;
	}
	lease_queue_leave(*t);
	*t = NULL;
	lease_unwatch(d);
	lease_set_pid(l, child, 0);
	int status = 0;
	for (;;) {
		if (got_signal) {
			kill(-child, got_signal);
			got_signal = 0;
		}
		pid_t w = waitpid(child, &status, WNOHANG);
		if (w == child)
			break;
		if (w < 0 && errno != EINTR) {
			cli_err("lost track of '%s': %s", argv[0], strerror(errno));
			status = 0;
			break;
		}
		sigsuspend(&waitmask); /* until SIGCHLD or a signal to forward */
	}
	sigprocmask(SIG_SETMASK, &orig, NULL);
	if (tty)
		give_back_terminal();
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WIFEXITED(status) ? WEXITSTATUS(status) : EXIT_FAIL;
}

int cmd_run(const struct cli_global *g, int argc, char **argv)
{
	static const struct option opts[] = {
		REQUEST_LONG_OPTIONS,
		{"wait", optional_argument, NULL, 'w'},
		{"name", required_argument, NULL, 'N'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct request r;
	request_init(&r);
	bool wait = false;
	long long timeout_ms = -1;
	const char *name = NULL;
	int c, rc;
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
			if (optarg && (rc = parse_duration(optarg, &timeout_ms)))
				return rc;
			break;
		case 'N': name = optarg; break;
		case 'h': usage(stdout); return EXIT_OK;
		case ':':
			cli_err("option '%s' needs a value (try 'gpuctl run --help')", argv[optind - 1]);
			return EXIT_USAGE;
		default:
			cli_err("unknown option '%s' for run (try 'gpuctl run --help')", argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		cli_err("run needs a command: gpuctl run [options] -- CMD [ARGS...]");
		return EXIT_USAGE;
	}
	char **cmd = argv + optind;
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
	long long deadline = timeout_ms >= 0 ? now_ms() + timeout_ms : -1;
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
		if ((rc = request_resample(&r)))
			break;
	}
	if (l) {
		/* out of line at once, so the next waiter can go */
		lease_queue_withdraw(t);
		rc = set_env(&r, chosen);
		if (rc == EXIT_OK)
			rc = run_job(cmd, l, d, &t);
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
