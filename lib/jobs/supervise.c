/*
 * supervise.c — the job supervisor (see supervise.h).
 *
 * One loop per attempt polls a signalfd (SIGCHLD and the signals to
 * forward, blocked everywhere else so none is lost between a check and a
 * wait), the preemption watcher's fd, and two clocks: the SIGKILL deadline
 * of a stop in progress and the next hang check. A hang is the NCCL case:
 * the job is alive, its GPUs sit at 0 % and its processes gain no CPU time
 * for --hang-timeout.
 */
#include "util/clock.h"
#include "jobs/supervise.h"
#include "util/errbuf.h"
#include "jobs/ckpt.h"
#include "jobs/outtail.h"
#include "util/env.h"
#include "spot/spot.h"
#include "device/gpu.h"
#include "device/proc.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
#define NFWD (sizeof forwarded / sizeof forwarded[0])

const char *supervise_end_name(enum supervise_end e)
{
	switch (e) {
	case SUPERVISE_END_EXITED: return "exited";
	case SUPERVISE_END_SIGNALED: return "killed by a signal";
	case SUPERVISE_END_PREEMPTED: return "preempted";
	case SUPERVISE_END_HUNG: return "hung";
	case SUPERVISE_END_OOM: return "killed by the kernel's OOM killer";
	case SUPERVISE_END_INTERRUPTED: return "interrupted";
	case SUPERVISE_END_EXEC_FAILED: return "could not be run";
	}
	return "unknown";
}

int supervise_parse_restart(const char *s, enum supervise_restart *out)
{
	static const struct { const char *name; enum supervise_restart v; } t[] = {
		{"never", SUPERVISE_RESTART_NEVER}, {"on-failure", SUPERVISE_RESTART_ON_FAILURE},
		{"on-preempt", SUPERVISE_RESTART_ON_PREEMPT}, {"always", SUPERVISE_RESTART_ALWAYS},
	};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		if (strcmp(s, t[i].name) == 0) {
			*out = t[i].v;
			return 0;
		}
	return -1;
}

static void clock_text(int64_t ms, char *buf, size_t len)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, len, "%H:%M:%SZ", &tm);
}

int64_t supervise_group_cpu_ms(pid_t pgid)
{
	DIR *d = opendir("/proc");
	if (!d)
		return -1;
	long tick = sysconf(_SC_CLK_TCK);
	if (tick <= 0)
		tick = 100;
	int64_t total = 0;
	bool found = false;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		struct proc_statf f;
		if (proc_stat_read(NULL, (pid_t)atoi(e->d_name), &f) < 0 || f.pgrp != pgid)
			continue;
		found = true;
		total += (int64_t)(f.utime + f.stime) + (f.cutime > 0 ? f.cutime : 0) + (f.cstime > 0 ? f.cstime : 0);
	}
	closedir(d);
	return found ? total * 1000 / tick : -1;
}

/* The kernel's count of OOM kills in our cgroup (v2), or -1 when unknown. */
static long long oom_kills(void)
{
	char line[4096], path[4200];
	FILE *f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return -1;
	bool ok = false;
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, "0::", 3) == 0) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(path, sizeof path, "/sys/fs/cgroup%s/memory.events", line + 3);
			ok = true;
			break;
		}
	}
	fclose(f);
	if (!ok || !(f = fopen(path, "re")))
		return -1;
	long long v = -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "oom_kill %lld", &v) == 1)
			break;
	fclose(f);
	return v;
}

static bool take_tty(pid_t pgid)
{
	if (!isatty(STDIN_FILENO) || tcgetpgrp(STDIN_FILENO) != getpgrp())
		return false;
	sigset_t b, old;
	sigemptyset(&b);
	sigaddset(&b, SIGTTOU);
	sigprocmask(SIG_BLOCK, &b, &old);
	bool ok = tcsetpgrp(STDIN_FILENO, pgid) == 0;
	sigprocmask(SIG_SETMASK, &old, NULL);
	return ok;
}

static void give_back_tty(void)
{
	sigset_t b, old;
	sigemptyset(&b);
	sigaddset(&b, SIGTTOU);
	sigprocmask(SIG_BLOCK, &b, &old);
	(void)tcsetpgrp(STDIN_FILENO, getpgrp());
	sigprocmask(SIG_SETMASK, &old, NULL);
}

/*
 * One attempt's environment: the job's (o->env, or the caller's), with GPUCTL_RUN_ID,
 * GPUCTL_RESTART_COUNT, GPUCTL_CHECKPOINT_DIR and GPUCTL_RESUME_FROM (the
 * newest complete checkpoint) as this attempt has them. Built for the
 * child, never set in ours: a library does not touch its caller's
 * environment. Freed with env_free; NULL when out of memory.
 */
struct env {
	char **v;              /* NULL-terminated, for posix_spawn */
	char *own[4];          /* the strings made here */
};

static const char *const attempt_vars[] = {"GPUCTL_RUN_ID=", "GPUCTL_RESTART_COUNT=", "GPUCTL_CHECKPOINT_DIR=",
					   "GPUCTL_RESUME_FROM=", NULL};

static void env_free(struct env *e)
{
	for (size_t i = 0; i < 4; i++)
		free(e->own[i]);
	free(e->v);
	memset(e, 0, sizeof *e);
}

/* "NAME=value" (name with its '='), or NULL when out of memory */
static char *var(const char *name, const char *value)
{
	size_t n = strlen(name) + strlen(value) + 1;
	char *v = malloc(n);
	if (v)
		snprintf(v, n, "%s%s", name, value);
	return v;
}

static int attempt_env(const struct supervise_opts *o, unsigned attempt, struct env *e)
{
	memset(e, 0, sizeof *e);
	char latest[8192], err[512], num[16];
	bool resume = o->checkpoint_dir && ckpt_latest(o->checkpoint_dir, latest, sizeof latest, err, sizeof err) == GC_OK;
	snprintf(num, sizeof num, "%u", attempt);
	e->own[0] = var(attempt_vars[0], o->run_id);
	e->own[1] = var(attempt_vars[1], num);
	e->own[2] = o->checkpoint_dir ? var(attempt_vars[2], o->checkpoint_dir) : NULL;
	e->own[3] = resume ? var(attempt_vars[3], latest) : NULL;
	if (!e->own[0] || !e->own[1] || (o->checkpoint_dir && !e->own[2]) || (resume && !e->own[3])) {
		env_free(e);
		return GC_ENOMEM;
	}
	/* the four as this attempt has them: one the caller's environment has but this attempt
	 * has not (GPUCTL_RESUME_FROM before the first checkpoint) is left out */
	char *set[5];
	size_t k = 0;
	for (size_t i = 0; i < 4; i++)
		if (e->own[i])
			set[k++] = e->own[i];
	set[k] = NULL;
	if (!(e->v = env_with(o->env ? o->env : environ, attempt_vars, set))) {
		env_free(e);
		return GC_ENOMEM;
	}
	return GC_OK;
}

/* Run the --on-notice hook, with the attempt's environment, without waiting for it (it is reaped on SIGCHLD). */
static pid_t run_hook(const char *cmd, const sigset_t *orig, char **env)
{
	pid_t p = fork();
	if (p == 0) {
		sigprocmask(SIG_SETMASK, orig, NULL);
		char *argv[] = {(char *)"sh", (char *)"-c", (char *)cmd, NULL};
		execve("/bin/sh", argv, env ? env : environ);
		_exit(127);
	}
	return p;
}

#define SUPERVISE_MAX_WORKERS 256

struct attempt {
	pid_t pid;
	pid_t workers[SUPERVISE_MAX_WORKERS]; /* spare_leader: the children signalled, when stopping */
	unsigned long long worker_start[SUPERVISE_MAX_WORKERS]; /* their start times: no reused pid is hit */
	size_t nworkers;
	bool stopping;
	int64_t kill_at;         /* mono ms of the SIGKILL, when stopping */
	bool killed;
	enum supervise_end reason;      /* PREEMPTED / HUNG when we stopped it */
	bool interrupted;
	int64_t last_cpu, last_progress, next_check;
	char **env;              /* the attempt's environment (run_hook's too) */
};

/* pid's children (from /proc) and their start times, at most max: how many */
static size_t children_of(pid_t pid, pid_t *out, unsigned long long *starts, size_t max)
{
	DIR *d = opendir("/proc");
	size_t n = 0;
	struct dirent *e;
	while (d && n < max && (e = readdir(d))) {
		char *end;
		long v = strtol(e->d_name, &end, 10);
		char state;
		pid_t ppid;
		unsigned long long start;
		if (*end || v <= 0 || proc_stat((pid_t)v, &state, &ppid, &start) != 0 || ppid != pid || state == 'Z')
			continue;
		starts[n] = start;
		out[n++] = (pid_t)v;
	}
	if (d)
		closedir(d);
	return n;
}

/* sig to a worker still the one that started at `start`: its own process group when it leads one
   (torch >= 2.2 starts each worker in a session of its own) */
static void signal_worker(pid_t w, unsigned long long start, int sig)
{
	char state;
	pid_t ppid;
	unsigned long long now_start;
	if (proc_stat(w, &state, &ppid, &now_start) != 0 || now_start != start)
		return;
	if (getpgid(w) == w)
		killpg(w, sig);
	else
		kill(w, sig);
}

static void stop_job(struct supervise_opts *o, struct attempt *a, enum supervise_end why, int64_t deadline_real_ms)
{
	if (a->stopping)
		return;
	int grace = o->grace_ms;
	if (grace < 0) {
		grace = o->default_grace_ms;
		if (deadline_real_ms > 0) {
			/* a notice whose time has passed (or nearly, or a clock that is off) still
			 * leaves the job its SIGTERM handler: SUPERVISE_MIN_GRACE_MS at least */
			int64_t left = deadline_real_ms - clock_real_ms() - o->margin_ms;
			grace = left > SUPERVISE_MIN_GRACE_MS ? (int)(left < 86400000 ? left : 86400000) : SUPERVISE_MIN_GRACE_MS;
		}
	}
	a->stopping = true;
	a->reason = why;
	a->kill_at = clock_mono_ms() + grace;
	/*
	 * torchrun's agent, on SIGTERM, forwards it to its workers and SIGKILLs
	 * them 30 s later (PContext.close's fixed timeout): a checkpoint that
	 * takes longer dies. So the workers get SIGTERM and the agent nothing; it
	 * sees them finish and exits. Without children, the whole group.
	 */
	a->nworkers = o->spare_leader ? children_of(a->pid, a->workers, a->worker_start, SUPERVISE_MAX_WORKERS) : 0;
	if (a->nworkers) {
		for (size_t i = 0; i < a->nworkers; i++)
			signal_worker(a->workers[i], a->worker_start[i], SIGTERM);
		errbuf_log(o->log, o->arg, "sent SIGTERM to the job's %zu worker%s, not to its launcher (which would "
			   "SIGKILL them after 30 s); SIGKILL in %.1f s if it is still running", a->nworkers,
			   a->nworkers == 1 ? "" : "s", grace / 1000.0);
		return;
	}
	kill(-a->pid, SIGTERM);
	errbuf_log(o->log, o->arg, "sent SIGTERM to the job (process group %d); SIGKILL in %.1f s if it is still running",
	      (int)a->pid, grace / 1000.0);
}

static void on_notice(struct supervise_opts *o, struct attempt *a, const struct spot_event *ev, const sigset_t *orig,
		      struct supervise_result *r)
{
	char when[32], dl[32] = "unknown";
	clock_text(ev->notice_ms, when, sizeof when);
	if (ev->deadline_ms > 0)
		clock_text(ev->deadline_ms, dl, sizeof dl);
	if (ev->kind != SPOT_PREEMPT) {
		errbuf_log(o->log, o->arg, "%s %s from %s at %s: %s%s%s", spot_cloud_name(ev->cloud), spot_kind_name(ev->kind),
		      spot_cloud_name(ev->cloud), when, ev->action, ev->detail[0] ? " " : "", ev->detail);
		/* not a preemption: the job goes on, told to checkpoint now if it asked to be; under
		   gpuctl launch its workers only (torchrun's agent would die of a SIGUSR1) */
		if (ev->kind == SPOT_WARNING && o->warning_signal > 0 && a->pid > 0 && !a->stopping) {
			pid_t w[SUPERVISE_MAX_WORKERS];
			unsigned long long ws[SUPERVISE_MAX_WORKERS];
			size_t nw = o->spare_leader ? children_of(a->pid, w, ws, SUPERVISE_MAX_WORKERS) : 0;
			for (size_t i = 0; i < nw; i++)
				signal_worker(w[i], ws[i], o->warning_signal);
			if (nw)
				errbuf_log(o->log, o->arg, "sent %s to the job's %zu worker%s: checkpoint now; it keeps running",
				      strsignal(o->warning_signal), nw, nw == 1 ? "" : "s");
			else if (kill(-a->pid, o->warning_signal) == 0)
				errbuf_log(o->log, o->arg, "sent %s to the job (process group %d): checkpoint now; it keeps running",
				      strsignal(o->warning_signal), (int)a->pid);
			else
				errbuf_log(o->log, o->arg, "cannot signal the job: %s", strerror(errno));
		}
		return;
	}
	errbuf_log(o->log, o->arg, "preemption notice from %s at %s (action %s, deadline %s): stopping the job",
	      spot_cloud_name(ev->cloud), when, ev->action[0] ? ev->action : "?", dl);
	r->noticed = true;
	r->notice = *ev;
	if (o->on_notice && run_hook(o->on_notice, orig, a->env) < 0)
		errbuf_log(o->log, o->arg, "cannot run --on-notice: %s", strerror(errno));
	stop_job(o, a, SUPERVISE_END_PREEMPTED, ev->deadline_ms);
}

/*
 * A command the kernel will not exec (no #! line, no ELF header) runs as a
 * shell script, as execvp and a shell run it: /bin/sh FILE ARGS, FILE
 * found on $PATH as posix_spawnp found it. The posix_spawn error.
 */
static int spawn_script(pid_t *pid, char *const *argv, const posix_spawn_file_actions_t *fa,
			const posix_spawnattr_t *at, char *const *env)
{
	char found[PATH_MAX];
	const char *file = argv[0];
	if (!strchr(file, '/')) {
		const char *path = getenv("PATH");
		file = NULL;
		for (const char *p = path && *path ? path : "/bin:/usr/bin"; p && !file;) {
			size_t n = strcspn(p, ":");
			int w = snprintf(found, sizeof found, "%.*s%s%s", (int)n, n ? p : ".", "/", argv[0]);
			struct stat st;
			if (w > 0 && (size_t)w < sizeof found && stat(found, &st) == 0 && S_ISREG(st.st_mode) &&
			    access(found, X_OK) == 0)
				file = found;
			p = p[n] ? p + n + 1 : NULL;
		}
		if (!file)
			return ENOEXEC;
	}
	size_t n = 0;
	while (argv[n])
		n++;
	char **sh = calloc(n + 2, sizeof *sh);
	if (!sh)
		return ENOMEM;
	sh[0] = (char *)"/bin/sh";
	sh[1] = (char *)file;
	for (size_t i = 1; i < n; i++)
		sh[i + 1] = argv[i];
	int e = posix_spawn(pid, "/bin/sh", fa, at, sh, env);
	free(sh);
	return e;
}

/* hang watchdog: no GPU utilization and no CPU time for hang_timeout_ms */
static void check_hang(struct supervise_opts *o, struct attempt *a, int64_t now)
{
	int64_t cpu = supervise_group_cpu_ms(a->pid);
	int util = -1;
	bool util_known = o->gpu_util && o->gpu_util(o->arg, &util) == 0;
	int64_t window = o->hang_timeout_ms;
	/* progress: the GPUs work, or the processes gain CPU time (beyond a trickle) */
	int64_t eps = window / 200 > 10 ? window / 200 : 10;
	bool progress = !util_known || util > 0 || cpu < 0 || a->last_cpu < 0 || cpu - a->last_cpu > eps;
	if (progress) {
		a->last_cpu = cpu;
		a->last_progress = now;
	} else if (now - a->last_progress >= window && !a->stopping) {
		errbuf_log(o->log, o->arg, "the job looks hung: its GPUs at 0 %% and no CPU time for %.1f s; stopping it",
		      (now - a->last_progress) / 1000.0);
		stop_job(o, a, SUPERVISE_END_HUNG, 0);
	}
	int64_t step = window / 4;
	if (step < 100)
		step = 100;
	if (step > 5000)
		step = 5000;
	a->next_check = now + step;
}

static int run_attempt(struct supervise_opts *o, int sfd, const sigset_t *orig, unsigned attempt,
		       struct supervise_result *r)
{
	struct env env;
	if (attempt_env(o, attempt, &env) != GC_OK)
		return GC_ENOMEM;
	long long oom_before = oom_kills();
	fflush(NULL);
	/*
	 * posix_spawn (vfork-like: no copy of our page tables, no copy-on-write
	 * faults) into its own process group, the forwarded signals at their
	 * defaults, the caller's signal mask; an exec failure comes back as the
	 * return value.
	 */
	posix_spawnattr_t at;
	sigset_t dfl;
	sigemptyset(&dfl);
	for (size_t i = 0; i < NFWD; i++)
		sigaddset(&dfl, forwarded[i]);
	sigaddset(&dfl, SIGCHLD);
	if (posix_spawnattr_init(&at) != 0) {
		env_free(&env);
		return GC_EIO;
	}
	pid_t pid = -1;
	/* the job's stdout and stderr through the tail keeper, when there is one */
	posix_spawn_file_actions_t fa, *fap = NULL;
	int fd1 = -1, fd2 = -1;
	if (o->tail)
		outtail_child_fds(o->tail, &fd1, &fd2);
	if ((fd1 >= 0 || fd2 >= 0) && posix_spawn_file_actions_init(&fa) == 0) {
		fap = &fa;
		if (fd1 >= 0)
			posix_spawn_file_actions_adddup2(&fa, fd1, STDOUT_FILENO);
		if (fd2 >= 0)
			posix_spawn_file_actions_adddup2(&fa, fd2, STDERR_FILENO);
	}
	int e = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
	if (!e)
		e = posix_spawnattr_setpgroup(&at, 0);
	if (!e)
		e = posix_spawnattr_setsigdefault(&at, &dfl);
	if (!e)
		e = posix_spawnattr_setsigmask(&at, orig);
	if (!e)
		e = posix_spawnp(&pid, o->argv[0], fap, &at, o->argv, env.v);
	if (e == ENOEXEC)
		e = spawn_script(&pid, o->argv, fap, &at, env.v);
	posix_spawnattr_destroy(&at);
	if (fap)
		posix_spawn_file_actions_destroy(fap);
	if (e) {
		if (pid > 0)
			waitpid(pid, NULL, 0);
		env_free(&env);
		r->end = SUPERVISE_END_EXEC_FAILED;
		r->exec_errno = e;
		r->status = e == ENOENT ? 127 : 126;
		return GC_OK;
	}
	(void)setpgid(pid, pid); /* done by the child already: EACCES once it has exec'ed */
	bool tty = o->take_terminal && take_tty(pid);
	if (o->started)
		o->started(o->arg, pid);

	struct attempt a = {.pid = pid, .last_cpu = -1, .env = env.v};
	int64_t now = clock_mono_ms();
	a.last_progress = now;
	a.next_check = o->hang_timeout_ms > 0 ? now : -1;
	int status = 0;
	bool done = false;
	while (!done) {
		now = clock_mono_ms();
		int64_t wake = -1;
		if (a.stopping && !a.killed)
			wake = a.kill_at;
		if (a.next_check >= 0 && (wake < 0 || a.next_check < wake))
			wake = a.next_check;
		int timeout = wake < 0 ? -1 : (int)(wake > now ? wake - now : 0);
		/* a terminal's new window size is passed on to the job's within 250 ms */
		if (o->tail && outtail_has_tty(o->tail) && (timeout < 0 || timeout > 250))
			timeout = 250;
		int held = o->tail ? outtail_timeout_ms(o->tail) : -1;
		if (held >= 0 && (timeout < 0 || timeout > held))
			timeout = held;
		struct pollfd p[4] = {{.fd = sfd, .events = POLLIN}, {.fd = -1, .events = POLLIN}};
		if (o->spot)
			p[1].fd = spot_watch_fd(o->spot);
		size_t np = 2 + (o->tail ? outtail_pollfds(o->tail, p + 2, 2) : 0);
		int n = poll(p, np, timeout);
		if (n > 0 && np > 2)
			outtail_pump(o->tail, p + 2, np - 2);
		if (o->tail && outtail_has_tty(o->tail))
			outtail_winsize(o->tail);
		if (n < 0 && errno != EINTR)
			break;
		if (n > 0 && (p[0].revents & POLLIN)) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
				if ((int)si.ssi_signo == SIGCHLD)
					continue;
				a.interrupted = true;
				kill(-pid, (int)si.ssi_signo);
			}
			/* reap: the job, and any --on-notice hooks that finished */
			pid_t w;
			int st;
			while ((w = waitpid(-1, &st, WNOHANG)) > 0) {
				if (w == pid) {
					status = st;
					done = true;
				}
			}
		}
		if (n > 0 && o->spot && (p[1].revents & POLLIN)) {
			struct spot_event ev;
			while (spot_watch_next(o->spot, &ev) == 1)
				if (!done)
					on_notice(o, &a, &ev, orig, r);
		}
		now = clock_mono_ms();
		if (!done && a.stopping && !a.killed && now >= a.kill_at) {
			errbuf_log(o->log, o->arg, "the job did not stop within the grace time: SIGKILL");
			kill(-pid, SIGKILL);
			for (size_t i = 0; i < a.nworkers; i++)
				signal_worker(a.workers[i], a.worker_start[i], SIGKILL);
			a.killed = true;
		}
		if (!done && a.next_check >= 0 && now >= a.next_check)
			check_hang(o, &a, now);
	}
	if (o->tail)
		outtail_drain(o->tail);
	if (tty)
		give_back_tty();
	r->status = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WIFEXITED(status) ? WEXITSTATUS(status) : 1;
	if (a.stopping)
		r->end = a.reason;
	else if (a.interrupted)
		r->end = SUPERVISE_END_INTERRUPTED;
	else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && oom_before >= 0 &&
		 oom_kills() > oom_before)
		r->end = SUPERVISE_END_OOM;
	else
		r->end = WIFSIGNALED(status) ? SUPERVISE_END_SIGNALED : SUPERVISE_END_EXITED;
	env_free(&env);
	return GC_OK;
}

static bool wants_restart(const struct supervise_opts *o, const struct supervise_result *r)
{
	switch (r->end) {
	case SUPERVISE_END_INTERRUPTED:
	case SUPERVISE_END_EXEC_FAILED:
		return false;
	default:
		break;
	}
	switch (o->restart) {
	case SUPERVISE_RESTART_NEVER: return false;
	case SUPERVISE_RESTART_ALWAYS: return true;
	case SUPERVISE_RESTART_ON_PREEMPT: return r->end == SUPERVISE_END_PREEMPTED || r->end == SUPERVISE_END_HUNG;
	case SUPERVISE_RESTART_ON_FAILURE: return r->end != SUPERVISE_END_EXITED || r->status != 0;
	}
	return false;
}

void supervise_new_run_id(char out[33])
{
	unsigned char b[8];
	if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) {
		int64_t t = clock_real_ms() ^ getpid();
		memcpy(b, &t, sizeof b);
	}
	for (size_t i = 0; i < sizeof b; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
}

int supervise_run(struct supervise_opts *o, struct supervise_result *r)
{
	memset(r, 0, sizeof *r);
	if (!o->run_id[0])
		supervise_new_run_id(o->run_id);
	sigset_t block, orig;
	sigemptyset(&block);
	for (size_t i = 0; i < NFWD; i++)
		sigaddset(&block, forwarded[i]);
	sigaddset(&block, SIGCHLD);
	sigprocmask(SIG_BLOCK, &block, &orig);
	int sfd = signalfd(-1, &block, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0) {
		sigprocmask(SIG_SETMASK, &orig, NULL);
		return GC_EIO;
	}
	int rc = GC_OK;
	for (unsigned attempt = 0;; attempt++) {
		r->attempts = attempt + 1;
		if ((rc = run_attempt(o, sfd, &orig, attempt, r)) != GC_OK)
			break;
		bool again = wants_restart(o, r);
		if (again && attempt >= o->max_restarts) {
			errbuf_log(o->log, o->arg, "the job %s (status %d); not restarting: --max-restarts %u reached",
			      supervise_end_name(r->end), r->status, o->max_restarts);
			break;
		}
		if (!again)
			break;
		/* exponential backoff, interruptible by a signal */
		int64_t wait = o->backoff_ms;
		for (unsigned k = 0; k < attempt && wait < o->backoff_max_ms; k++)
			wait *= 2;
		if (wait > o->backoff_max_ms)
			wait = o->backoff_max_ms;
		errbuf_log(o->log, o->arg, "the job %s (status %d); restarting in %.1f s (restart %u of at most %u)",
		      supervise_end_name(r->end), r->status, wait / 1000.0, attempt + 1, o->max_restarts);
		struct pollfd p = {.fd = sfd, .events = POLLIN};
		int64_t until = clock_mono_ms() + wait;
		bool stop = false;
		for (int64_t left = wait; left > 0 && !stop; left = until - clock_mono_ms()) {
			if (poll(&p, 1, (int)left) > 0) {
				struct signalfd_siginfo si;
				while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si)
					if ((int)si.ssi_signo != SIGCHLD)
						stop = true;
				while (waitpid(-1, NULL, WNOHANG) > 0)
					;
			}
		}
		if (stop) {
			r->end = SUPERVISE_END_INTERRUPTED;
			break;
		}
	}
	close(sfd);
	sigprocmask(SIG_SETMASK, &orig, NULL);
	return rc;
}
