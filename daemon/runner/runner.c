/*
 * runner.c — gpuctld's job runner, `gpuctld-runner FD` (see runner.h).
 *
 * gpuctld starts it once (and again if it dies). It is single-threaded and
 * has loaded no GPU library when it forks: each child opens NVML (or the
 * simulator) itself, exactly as an exec'd `gpuctl run` would. A child
 * becomes the job's user with setgroups/setresgid/setresuid — safe here,
 * where no other thread shares its credentials — enters the job's
 * directory, takes the job's environment and runs job_fn. When gpuctld
 * goes away (end of file) the runner leaves; its children run on.
 */
#include "runner.h"

#include <stdarg.h>
#include <stdio.h>

#include "jobs/joblog.h"
#include "jobs/spawnreq.h"
#include "logwriter.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

void runner_err(const char *fmt, ...)
{
	va_list ap;
	fflush(stdout);
	fputs("gpuctld-runner: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* all len bytes sent (out) or read: 0, or -1 at an error or end of file */
static int full(int fd, char *buf, size_t len, bool out)
{
	size_t off = 0;
	while (off < len) {
		ssize_t n = out ? send(fd, buf + off, len - off, MSG_NOSIGNAL) : read(fd, buf + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		off += (size_t)n;
	}
	return 0;
}

static int send_rec(int fd, int kind, pid_t pid, int value)
{
	struct spawnrec r = {.kind = kind, .pid = pid, .value = value};
	return full(fd, (char *)&r, sizeof r, true);
}

static void close_fds(int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/* one request: *payload (caller frees) and its fds. 1, 0 at end of file, -1 broken */
static int recv_req(int sock, char **payload, size_t *len, int fds[SPAWNREQ_NFDS])
{
	struct spawnreq_hdr h;
	union {
		char buf[CMSG_SPACE(SPAWNREQ_NFDS * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = &h, .iov_len = sizeof h};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
	ssize_t n;
	do
		n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC | MSG_WAITALL);
	while (n < 0 && errno == EINTR);
	if (n == 0 || (n < 0 && errno == ECONNRESET))
		return 0; /* gone (a reset: it left our records unread) */
	size_t nf = n > 0 ? spawnreq_fds(&m, fds, SPAWNREQ_NFDS) : 0;
	if (n != (ssize_t)sizeof h || (m.msg_flags & MSG_CTRUNC) || nf != SPAWNREQ_NFDS || h.magic != SPAWNREQ_MAGIC ||
	    h.len > SPAWNREQ_MAX) {
		close_fds(fds, nf);
		return -1;
	}
	*len = h.len;
	if (!(*payload = malloc(h.len ? h.len : 1)) || full(sock, *payload, h.len, false) < 0) {
		free(*payload);
		*payload = NULL;
		close_fds(fds, nf);
		return -1;
	}
	return 1;
}

/* the argv and environment strings the runner was started with: each child's title */
static char *title_at;
static size_t title_len;

static void title_area(char **argv)
{
	char *end = argv[0];
	for (size_t i = 0; argv[i]; i++)
		if (argv[i] == end)
			end += strlen(end) + 1;
	for (size_t i = 0; environ[i]; i++)
		if (environ[i] == end)
			end += strlen(end) + 1;
	title_at = argv[0];
	title_len = (size_t)(end - argv[0]);
}

/* the title, words[0..n) joined by spaces, written over the runner's strings, cut to their length; comm as top shows it */
static void set_title_words(const char *const *words, size_t n, const char *comm)
{
	(void)prctl(PR_SET_NAME, comm, 0, 0, 0); /* 15 bytes: which of a job's processes this is */
	if (title_len < 2)
		return;
	size_t off = 0;
	for (size_t i = 0; off < title_len - 1 && i < n; i++) {
		if (i)
			title_at[off++] = ' ';
		size_t k = strlen(words[i]);
		if (k > title_len - 1 - off)
			k = title_len - 1 - off;
		memcpy(title_at + off, words[i], k);
		off += k;
	}
	memset(title_at + off, 0, title_len - off);
}

/*
 * What ps and pkill -f show for the child, "gpuctl job-ID[-NAME] -- CMD ARGS"
 * (its log's own writer: "gpuctl job-ID[-NAME] log"; a user's writer: "gpuctl
 * logs of uid UID"), written over the runner's own argv and environment
 * strings (no longer in use: environ points at the request). Past the end of
 * the original argv the kernel reads on up to the first NUL. top shows
 * gpuctl-job and gpuctl-log.
 */
static void set_title_of(const struct spawnreq *r, bool writer)
{
	const char *head[] = {"gpuctl", r->name, writer ? "log" : "--"};
	size_t n = 3 + (writer ? 0 : r->argc);
	const char **w = malloc(n * sizeof *w);
	if (!w) {
		set_title_words(head, 3, writer ? "gpuctl-log" : "gpuctl-job");
		return;
	}
	memcpy(w, head, sizeof head);
	for (size_t i = 3; i < n; i++)
		w[i] = r->argv[i - 3];
	set_title_words(w, n, writer ? "gpuctl-log" : "gpuctl-job");
	free(w);
}

static void set_title(const struct spawnreq *r)
{
	set_title_of(r, false);
}

static void set_writer_title(void *r)
{
	set_title_of(r, true);
}

static void set_user_writer_title(void *arg)
{
	char uid[24];
	snprintf(uid, sizeof uid, "%u", (unsigned)*(const uid_t *)arg);
	const char *w[] = {"gpuctl", "logs", "of", "uid", uid};
	set_title_words(w, sizeof w / sizeof w[0], "gpuctl-log");
}

/*
 * The users' log writers (logwriter.h), the runner's children: a job with a
 * capped log hands it to its user's, started with that user's first such
 * job. Past USER_WRITERS users at once, jobs get writers of their own.
 */
#define USER_WRITERS 64
static struct {
	uid_t uid;
	pid_t pid;
	int sock;
} writers[USER_WRITERS];
static size_t nwriters;
static int child_writer = -1; /* in a child: its user's writer's socket, or -1 */

static int user_writer(uid_t uid)
{
	for (size_t i = 0; i < nwriters; i++)
		if (writers[i].uid == uid)
			return writers[i].sock;
	if (nwriters == USER_WRITERS)
		return -1;
	int sock;
	pid_t pid = logwriter_user_start(LOGWRITER_IDLE_MS, set_user_writer_title, &uid, &sock);
	if (pid < 0) {
		runner_err("cannot start a log writer for uid %u: %s (its jobs get one each)", (unsigned)uid,
			   strerror(errno));
		return -1;
	}
	writers[nwriters].uid = uid;
	writers[nwriters].pid = pid;
	writers[nwriters].sock = sock;
	return writers[nwriters++].sock;
}

/* pid has ended: when it was a user's writer, forget it (its next job starts another) and say true */
static bool writer_ended(pid_t pid)
{
	for (size_t i = 0; i < nwriters; i++)
		if (writers[i].pid == pid) {
			close(writers[i].sock);
			writers[i] = writers[--nwriters];
			return true;
		}
	return false;
}

/* the log's writer's handshake (logwriter.h) on fd 4: whose it is, and what it said at the job's end */
static int drain_fd = -1;
static pid_t drain_pid;
static int drained = 1; /* 1: not yet; else what it said */

int runner_log_sync(void)
{
	fflush(NULL);
	if (drain_fd < 0 || getpid() != drain_pid)
		return 0; /* no writer; or a fork of the supervisor that failed to exec the job: not the job's */
	return logwriter_drained(drain_fd);
}

int runner_log_drained(void)
{
	if (drained == 1)
		drained = runner_log_sync();
	return drained;
}

int runner_log_fd(void)
{
	return drain_fd >= 0 && getpid() == drain_pid ? RUNNER_LOG_FD : -1;
}

static void drain_at_exit(void)
{
	(void)runner_log_drained();
}

/*
 * The job's log, made anew (O_EXCL): a file already there is this job's own
 * log only when it is the job's user's regular file (a job queued again goes
 * on in it). Anything else (another user's log of an older queue database in
 * the same --log-dir, a link) is removed first, and said, so that no job
 * writes into, or is handed, another user's output.
 */
static int open_log(const struct spawnreq *r)
{
	/* read too: a capped log's writer moves its newest output up when it cuts (joblog.h) */
	const int flags = O_RDWR | O_APPEND | O_NOFOLLOW | O_CLOEXEC;
	int fd = open(r->log, flags | O_CREAT | O_EXCL, 0600);
	if (fd >= 0 || errno != EEXIST)
		return fd;
	struct stat st;
	fd = open(r->log, flags | O_NONBLOCK);
	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == r->uid && st.st_nlink == 1)
		return fd;
	if (fd >= 0)
		close(fd);
	runner_err("'%s' was left by another user or is not a plain file: removed, the job gets a new log",
		r->log);
	if (unlink(r->log) < 0)
		return -1;
	return open(r->log, flags | O_CREAT | O_EXCL, 0600);
}

/*
 * A capped log, for its job's supervisor to read a failure's tail back from
 * (runner_log_fd): read-only, above fd 9 (moved to RUNNER_LOG_FD once the
 * job's fds are in place). Reopened through /proc, not by its name: the
 * file the child made. The fd, or -1.
 */
static int reopen_log(int log)
{
	char self[64];
	snprintf(self, sizeof self, "/proc/self/fd/%d", log);
	int fd = open(self, O_RDONLY | O_CLOEXEC);
	int hi = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 10) : -1;
	if (fd >= 0)
		close(fd);
	return hi;
}

/* the forked child: becomes the job's user and runs the job in-process */
__attribute__((noreturn)) static void child(const struct spawnreq *r, const int fds[SPAWNREQ_NFDS],
					    int (*job_fn)(const struct spawnreq *))
{
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	setsid();
	/*
	 * The job's log, created here as root and given to the user: not in
	 * gpuctld's one thread, where creating a file can cost more than the
	 * rest of a job's start. No log: this goes to gpuctld's stderr, and
	 * gpuctld records that the job's log could not be created.
	 */
	int log = open_log(r);
	if (log < 0 || fchown(log, r->uid, r->gid) < 0) {
		runner_err("cannot create the log '%s' for uid %u: %s", r->log, (unsigned)r->uid, strerror(errno));
		_exit(126);
	}
	/*
	 * A capped log (gpuctld --log-max-size) is written by a writer of its own,
	 * root's (its user's, or its own), through a pipe: the cap holds while the
	 * job writes. The job's end waits for it (drain_at_exit) on fd 4; a
	 * failure is explained from the log, read on RUNNER_LOG_FD.
	 */
	int out = log, ctl = -1;
	if (r->log_max >= JOBLOG_MIN) {
		const int shut[] = {fds[0], fds[1], child_writer};
		if ((child_writer < 0 ||
		     logwriter_join(child_writer, log, r->log_max, r->log, r->uid, r->gid, &out, &ctl) < 0) &&
		    logwriter_start(log, r->log_max, r->log, r->uid, r->gid, set_writer_title, (void *)r, shut, 3, &out,
				    &ctl) < 0) {
			runner_err("cannot start the writer of the log '%s': %s", r->log, strerror(errno));
			_exit(126);
		}
	}
	/* the go pipe becomes SPAWNREQ_GO_FD, where the job waits for it (the log is on 1 and 2 before) */
	int rlog = ctl >= 0 ? reopen_log(log) : -1;
	if ((ctl >= 0 && rlog < 0) || dup2(fds[0], 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0 ||
	    dup2(fds[1], SPAWNREQ_GO_FD) < 0 || (ctl >= 0 && dup3(ctl, 4, O_CLOEXEC) < 0) ||
	    (rlog >= 0 && dup3(rlog, RUNNER_LOG_FD, O_CLOEXEC) < 0)) {
		runner_err("cannot set up the job's files: %s", strerror(errno));
		_exit(126);
	}
	close_range(ctl >= 0 ? RUNNER_LOG_FD + 1 : 4, ~0u, 0); /* the received fds, the socket, the signalfd, the log */
	if (ctl >= 0) {
		drain_fd = 4;
		drain_pid = getpid();
		atexit(drain_at_exit);
	}
	if (setgroups(r->ngroups, r->groups) < 0 || setresgid(r->gid, r->gid, r->gid) < 0 ||
	    setresuid(r->uid, r->uid, r->uid) < 0 || (r->uid != 0 && setuid(0) == 0)) {
		runner_err("cannot become the job's user (uid %u, gid %u): %s", (unsigned)r->uid, (unsigned)r->gid,
			strerror(errno));
		_exit(126);
	}
	if (chdir(r->cwd) < 0) {
		runner_err("cannot enter the job's working directory '%s': %s", r->cwd, strerror(errno));
		_exit(126);
	}
	environ = r->env;
	set_title(r);
	exit(job_fn(r));
}

/*
 * Look a user up in the runner, so that its children inherit what the
 * C library learnt: nsswitch.conf read, and no nscd here (glibc then
 * leaves nscd alone for 100 s). Each child's own lookup is then a read of
 * /etc/passwd, not two failed connects first. Again every minute.
 */
static void warm_nss(void)
{
	static time_t last;
	time_t now = time(NULL);
	if (last && now - last < 60)
		return;
	last = now;
	struct passwd pw, *res;
	char buf[2048];
	(void)getpwuid_r(getuid(), &pw, buf, sizeof buf, &res);
}

/* one request: fork its child and say so. 0, or -1 when the socket is broken */
static int serve_one(int sock, int sfd, int (*job_fn)(const struct spawnreq *), int *eof)
{
	char *payload = NULL;
	size_t len = 0;
	int fds[SPAWNREQ_NFDS] = {-1, -1};
	int got = recv_req(sock, &payload, &len, fds);
	if (got <= 0) {
		*eof = got == 0;
		return got;
	}
	struct spawnreq r;
	pid_t pid = 0;
	int err = EINVAL;
	if (spawnreq_decode(payload, len, &r) == 0) {
		warm_nss();
		child_writer = r.log_max >= JOBLOG_MIN ? user_writer(r.uid) : -1;
		pid = fork();
		err = errno;
		if (pid == 0) {
			close(sock);
			close(sfd);
			child(&r, fds, job_fn);
		}
		spawnreq_release(&r);
	}
	free(payload);
	close_fds(fds, SPAWNREQ_NFDS);
	return send_rec(sock, SPAWNREC_SPAWNED, pid > 0 ? pid : 0, pid > 0 ? 0 : err);
}

static void reap(int sock)
{
	int st;
	pid_t pid;
	while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
		if (!writer_ended(pid))
			(void)send_rec(sock, SPAWNREC_EXITED, pid, st); /* gpuctld gone: it reads the status files */
}

int runner_serve(char **argv, const char *arg, int (*job_fn)(const struct spawnreq *r))
{
	char *end;
	errno = 0;
	long fd = strtol(arg, &end, 10);
	struct stat st;
	if (!*arg || *end || errno || fd < 0 || fd > 1023 || fstat((int)fd, &st) < 0 || !S_ISSOCK(st.st_mode)) {
		runner_err("invalid socket '%s' (expected the one gpuctld passes, as a file descriptor from 0 to 1023: "
			   "gpuctld-runner is gpuctld's, not for use by hand)", arg);
		return 2;
	}
	int sock = (int)fd;
	title_area(argv);
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0 || send_rec(sock, SPAWNREC_HELLO, 0, (int)SPAWNREQ_MAGIC) < 0) {
		runner_err("cannot start: %s", strerror(errno));
		return 1;
	}
	for (;;) {
		struct pollfd p[2] = {{.fd = sock, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			runner_err("poll: %s", strerror(errno));
			return 1;
		}
		if (p[1].revents) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si)
				;
			reap(sock);
		}
		if (p[0].revents) {
			int eof = 0;
			if (serve_one(sock, sfd, job_fn, &eof) < 0) {
				runner_err("gpuctld sent a broken request or went away mid-request");
				return 1;
			}
			if (eof)
				return 0; /* gpuctld is gone: the children run on without us */
		}
	}
}
