/*
 * logwriter.c — the writer between a queued job and its log (see logwriter.h).
 */
#include "logwriter.h"

#include "jobs/joblog.h"
#include "jobs/spawnreq.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CHECK_MS 1000 /* how often the log's size is looked at when nothing comes (appended by its path) */
#define JOIN_MAGIC 0x6c6f6731u /* "log1": a job's registration with a user's writer */
#define PATH_MAX_JOIN 4096     /* the longest log path a registration carries */

/* the log's writer: its log, and whether some output could not be written (the rest is dropped) */
struct lw {
	struct joblog l;
	const char *path;
	bool failed;
};

static void failed(struct lw *w, const char *what)
{
	if (!w->failed) /* stderr is the runner's: gpuctld's log */
		fprintf(stderr, "gpuctl: cannot %s the job log '%s': %s; the job's further output is dropped and the "
			"job is failed\n", what, w->path, strerror(errno));
	w->failed = true;
}

/* n bytes of buf into the log in pieces it takes, or dropped once it could not be written */
static void put(struct lw *w, const char *buf, size_t n)
{
	size_t chunk = joblog_chunk(&w->l);
	for (size_t off = 0; off < n && !w->failed;) {
		size_t k = n - off < chunk ? n - off : chunk;
		if (joblog_write(&w->l, buf + off, k) != 0)
			failed(w, "write");
		off += k;
	}
}

/* what is in the pipe now (not what comes after) into the log; *eof at its end */
static void drain(struct lw *w, int in, char *buf, size_t len, bool *eof)
{
	int left = 0;
	if (ioctl(in, FIONREAD, &left) < 0)
		left = 0;
	while (left > 0) {
		ssize_t k = read(in, buf, (size_t)left < len ? (size_t)left : len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			*eof = k == 0;
			return;
		}
		put(w, buf, (size_t)k);
		left -= (int)k;
	}
}

/* deaf to the signals a job's processes get, and not in their process group or session */
static void go_deaf(void)
{
	static const int deaf[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGPIPE, SIGUSR1, SIGUSR2, SIGTSTP, SIGTTIN,
				   SIGTTOU};
	for (size_t i = 0; i < sizeof deaf / sizeof deaf[0]; i++)
		signal(deaf[i], SIG_IGN);
	setsid(); /* not in the job's process group: what stops the job does not stop its log */
}

/*
 * The job's supervisor asks on *ctl (its end of the job, or a failure to
 * explain): what is in the pipe now goes in, then it is told how that went.
 * Its end closed: *ctl is closed and -1. False when the pipe's end was met.
 */
static bool ask(struct lw *w, int in, int *ctl, char *buf, size_t len, bool *eof)
{
	char c;
	ssize_t k = recv(*ctl, &c, 1, MSG_DONTWAIT);
	if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
		close(*ctl);
		*ctl = -1;
		return true;
	}
	if (k == 1) {
		drain(w, in, buf, len, eof);
		(void)send(*ctl, w->failed ? "e" : "d", 1, MSG_NOSIGNAL);
	}
	return !*eof;
}

__attribute__((noreturn)) static void run(int in, int log, uint64_t max, const char *path, int ctl)
{
	go_deaf();
	struct lw w = {.path = path};
	if (joblog_open(&w.l, log, max) != 0)
		failed(&w, "open");
	(void)fcntl(in, F_SETFL, fcntl(in, F_GETFL) | O_NONBLOCK);
	char buf[64 << 10];
	bool eof = false;
	for (;;) {
		struct pollfd p[2] = {{.fd = in, .events = POLLIN}, {.fd = ctl, .events = POLLIN}};
		int r = poll(p, ctl >= 0 ? 2 : 1, CHECK_MS);
		if (r < 0 && errno != EINTR)
			_exit(1);
		if (r == 0) {
			if (!w.failed && joblog_check(&w.l) != 0)
				failed(&w, "cut");
			continue;
		}
		if (r > 0 && p[0].revents) {
			ssize_t k = read(in, buf, sizeof buf);
			if (k == 0)
				_exit(0); /* the job and everything it started have closed their ends */
			if (k > 0)
				put(&w, buf, (size_t)k);
		}
		if (r > 0 && ctl >= 0 && p[1].revents && !ask(&w, in, &ctl, buf, sizeof buf, &eof))
			_exit(0); /* the pipe's end came with what it drained */
	}
}

/*
 * The job's ends: a pipe (p[0] the writer's, *out its write end, the job's
 * user's) and the handshake (sv1 the writer's, *ctl the job's), the job's
 * two above fd 9. 0, or -1 with errno and nothing left open.
 */
static int open_ends(uid_t uid, gid_t gid, int *rd, int *sv1, int *out, int *ctl)
{
	int p[2], sv[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	if (fchown(p[1], uid, gid) < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		errno = e;
		return -1;
	}
	/* well above 0-4, which the job's stdin, stdout, stderr, go pipe and this handshake take */
	int w = fcntl(p[1], F_DUPFD_CLOEXEC, 10), c = fcntl(sv[0], F_DUPFD_CLOEXEC, 10);
	int e = errno;
	close(p[1]);
	close(sv[0]);
	if (w < 0 || c < 0) {
		if (w >= 0)
			close(w);
		if (c >= 0)
			close(c);
		close(p[0]);
		close(sv[1]);
		errno = e;
		return -1;
	}
	*rd = p[0];
	*sv1 = sv[1];
	*out = w;
	*ctl = c;
	return 0;
}

int logwriter_start(int log, uint64_t max, const char *path, uid_t uid, gid_t gid, void (*retitle)(void *arg),
		    void *arg, const int *close_in_writer, int nclose, int *out, int *ctl)
{
	int rd, sv1, w, c;
	if (open_ends(uid, gid, &rd, &sv1, &w, &c) < 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		close(w);
		close(c);
		for (int i = 0; i < nclose; i++)
			if (close_in_writer[i] >= 0)
				close(close_in_writer[i]);
		if (retitle)
			retitle(arg);
		run(rd, log, max, path, sv1);
	}
	int e = errno;
	close(rd);
	close(sv1);
	if (pid < 0) {
		close(w);
		close(c);
		errno = e;
		return -1;
	}
	*out = w;
	*ctl = c;
	return 0;
}

int logwriter_drained(int ctl)
{
	if (send(ctl, "d", 1, MSG_NOSIGNAL) != 1)
		return -1; /* the writer is gone */
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		long long left = LOGWRITER_DRAIN_MS - ((now.tv_sec - t0.tv_sec) * 1000LL + (now.tv_nsec - t0.tv_nsec) / 1000000);
		struct pollfd p = {.fd = ctl, .events = POLLIN};
		if (left <= 0)
			return 0; /* still writing (a slow disk, a cut): not a loss */
		int r = poll(&p, 1, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		char c = 0;
		ssize_t k = r > 0 ? recv(ctl, &c, 1, 0) : 0;
		return r > 0 && (k != 1 || c != 'd') ? -1 : 0;
	}
}

/* ---- a user's writer: one process for all of that user's capped logs ---- */

/* a registration: this, the log's path (len bytes, no NUL), and the fds pipe, log, handshake */
struct join {
	uint32_t magic;
	uint32_t len;
	uint64_t max;
};

/* one job's log in a user's writer */
struct ent {
	struct lw w;
	int in, log, ctl;
	char *path;
};

static void ent_close(struct ent *e)
{
	close(e->in);
	close(e->log);
	if (e->ctl >= 0)
		close(e->ctl);
	free(e->path);
}

static int64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* one registration off the socket into *e: 1; 2 a malformed one, dropped; 0 none now; -1 the socket's end */
static int take_join(int sock, struct ent *e)
{
	struct join h;
	char path[PATH_MAX_JOIN + 1];
	union {
		char buf[CMSG_SPACE(3 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov[2] = {{.iov_base = &h, .iov_len = sizeof h}, {.iov_base = path, .iov_len = PATH_MAX_JOIN}};
	struct msghdr m = {.msg_iov = iov, .msg_iovlen = 2, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
	ssize_t n;
	do
		n = recvmsg(sock, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	if (n <= 0)
		return -1;
	int fds[3];
	size_t nf = spawnreq_fds(&m, fds, 3);
	if (nf != 3 || (m.msg_flags & (MSG_CTRUNC | MSG_TRUNC)) || (size_t)n < sizeof h || h.magic != JOIN_MAGIC ||
	    h.len != (size_t)n - sizeof h || h.max < JOBLOG_MIN || !(e->path = strndup(path, h.len))) {
		for (size_t i = 0; i < nf; i++)
			close(fds[i]);
		return 2; /* not a registration: dropped */
	}
	e->in = fds[0];
	e->log = fds[1];
	e->ctl = fds[2];
	e->w = (struct lw){.path = e->path};
	(void)fcntl(e->in, F_SETFL, fcntl(e->in, F_GETFL) | O_NONBLOCK);
	if (joblog_open(&e->w.l, e->log, h.max) != 0)
		failed(&e->w, "open");
	return 1;
}

/*
 * The writer's loop: registrations on sock, then each job's pipe (a read of
 * at most buf's size per job per turn, so that one job's flood holds no
 * other's output back) and handshake, each log looked at every CHECK_MS.
 * With no log to write for idle_ms it stops taking registrations
 * (a job that comes after gets a writer of its own: logwriter_join fails)
 * and ends with its last log.
 */
__attribute__((noreturn)) static void serve(int sock, int idle_ms)
{
	go_deaf();
	struct ent *ents = NULL;
	struct pollfd *p = NULL;
	size_t *who = NULL, n = 0, cap = 0;
	static char buf[64 << 10];
	int64_t idle_from = now_ms(), checked = idle_from;
	for (;;) {
		if (sock < 0 && n == 0)
			_exit(0);
		if (n == cap) { /* room for one more registration (at 0 more, they wait in the socket) */
			size_t c = cap ? cap * 2 : 16;
			struct ent *ne = realloc(ents, c * sizeof *ne);
			ents = ne ? ne : ents;
			struct pollfd *np = ne ? realloc(p, (2 * c + 1) * sizeof *np) : NULL;
			p = np ? np : p;
			size_t *nw = np ? realloc(who, (2 * c + 1) * sizeof *nw) : NULL;
			who = nw ? nw : who;
			if (nw)
				cap = c;
			else if (!cap)
				_exit(1); /* no memory at all: registrations fail, each job gets a writer of its own */
		}
		size_t np = 0, first = 0;
		if (sock >= 0 && n < cap) {
			p[np++] = (struct pollfd){.fd = sock, .events = POLLIN};
			first = 1;
		}
		for (size_t i = 0; i < n; i++) {
			p[np] = (struct pollfd){.fd = ents[i].in, .events = POLLIN};
			who[np++] = i;
			if (ents[i].ctl >= 0) {
				p[np] = (struct pollfd){.fd = ents[i].ctl, .events = POLLIN};
				who[np++] = i;
			}
		}
		int64_t t = now_ms();
		int64_t wait = checked + CHECK_MS - t;
		if (sock >= 0 && n == 0 && idle_from + idle_ms - t < wait)
			wait = idle_from + idle_ms - t;
		int r = poll(p, np, wait < 0 ? 0 : (int)wait);
		if (r < 0 && errno != EINTR)
			_exit(1);
		t = now_ms();
		if (t - checked >= CHECK_MS) {
			for (size_t i = 0; i < n; i++)
				if (!ents[i].w.failed && joblog_check(&ents[i].w.l) != 0)
					failed(&ents[i].w, "cut");
			checked = t;
		}
		/* idle: no registration from here on (a send gets EPIPE); those already sent are taken below */
		bool shut = sock >= 0 && n == 0 && t - idle_from >= idle_ms;
		if (shut)
			shutdown(sock, SHUT_RD);
		/* each job's output and end; a job whose pipe is closed is done with */
		for (size_t k = first; r > 0 && k < np; k++) {
			struct ent *e = &ents[who[k]];
			if (!p[k].revents || e->in < 0)
				continue;
			bool eof = false;
			if (p[k].fd == e->in) {
				ssize_t got = read(e->in, buf, sizeof buf);
				if (got == 0)
					eof = true;
				else if (got > 0)
					put(&e->w, buf, (size_t)got);
			} else {
				(void)ask(&e->w, e->in, &e->ctl, buf, sizeof buf, &eof);
			}
			if (eof) {
				ent_close(e);
				e->in = -1; /* dropped below */
			}
		}
		size_t kept = 0;
		for (size_t i = 0; i < n; i++)
			if (ents[i].in >= 0)
				ents[kept++] = ents[i];
		n = kept;
		if (sock >= 0 && (shut || (first && r > 0 && p[0].revents))) {
			while (n < cap) {
				int got = take_join(sock, &ents[n]);
				if (got == 1)
					n++;
				else if (got == 0 && !shut)
					break;
				else if (got <= 0) {
					close(sock); /* shut and emptied, or its end: the runner and its children are gone */
					sock = -1;
					break;
				}
			}
		}
		if (n > 0)
			idle_from = t;
	}
}

int logwriter_user_start(int idle_ms, void (*retitle)(void *arg), void *arg, int *sock)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		/* stdin, stdout, stderr (gpuctld's log) kept; the socket at 3; nothing else of the runner's */
		if (dup3(sv[1], 3, O_CLOEXEC) < 0 && sv[1] != 3)
			_exit(1);
		close_range(4, ~0u, 0);
		if (retitle)
			retitle(arg);
		serve(3, idle_ms);
	}
	int e = errno;
	close(sv[1]);
	if (pid < 0) {
		close(sv[0]);
		errno = e;
		return -1;
	}
	*sock = sv[0];
	return pid;
}

int logwriter_join(int sock, int log, uint64_t max, const char *path, uid_t uid, gid_t gid, int *out, int *ctl)
{
	size_t len = strlen(path);
	if (len > PATH_MAX_JOIN) {
		errno = ENAMETOOLONG;
		return -1;
	}
	int rd, sv1, w, c;
	if (open_ends(uid, gid, &rd, &sv1, &w, &c) < 0)
		return -1;
	struct join h = {.magic = JOIN_MAGIC, .len = (uint32_t)len, .max = max};
	int fds[3] = {rd, log, sv1};
	union {
		char buf[CMSG_SPACE(sizeof fds)];
		struct cmsghdr align;
	} u;
	struct iovec iov[2] = {{.iov_base = &h, .iov_len = sizeof h}, {.iov_base = (void *)path, .iov_len = len}};
	struct msghdr m = {.msg_iov = iov, .msg_iovlen = 2};
	(void)spawnreq_put_fds(&m, u.buf, sizeof u.buf, fds, 3); /* u is large enough */
	ssize_t k;
	do
		k = sendmsg(sock, &m, MSG_NOSIGNAL);
	while (k < 0 && errno == EINTR);
	int e = errno;
	close(rd);
	close(sv1);
	if (k != (ssize_t)(sizeof h + len)) {
		close(w);
		close(c);
		errno = k < 0 ? e : EIO;
		return -1;
	}
	*out = w;
	*ctl = c;
	return 0;
}
