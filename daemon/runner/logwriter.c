/*
 * logwriter.c — the writer between a queued job and its log (see logwriter.h).
 */
#include "logwriter.h"

#include "jobs/joblog.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CHECK_MS 1000 /* how often the log's size is looked at when nothing comes (appended by its path) */

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

__attribute__((noreturn)) static void run(int in, int log, uint64_t max, const char *path, int ctl)
{
	static const int deaf[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGPIPE, SIGUSR1, SIGUSR2, SIGTSTP, SIGTTIN,
				   SIGTTOU};
	for (size_t i = 0; i < sizeof deaf / sizeof deaf[0]; i++)
		signal(deaf[i], SIG_IGN);
	setsid(); /* not in the job's process group: what stops the job does not stop its log */
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
		if (r > 0 && ctl >= 0 && p[1].revents) {
			/* the job has ended: what it wrote goes in, then its supervisor is told how that went */
			drain(&w, in, buf, sizeof buf, &eof);
			(void)send(ctl, w.failed ? "e" : "d", 1, MSG_NOSIGNAL);
			close(ctl);
			ctl = -1;
			if (eof)
				_exit(0);
		}
	}
}

int logwriter_start(int log, uint64_t max, const char *path, uid_t uid, gid_t gid, void (*retitle)(void *arg),
		    void *arg, const int *close_in_writer, int nclose, int *out, int *ctl)
{
	int p[2], sv[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	if (fchown(p[1], uid, gid) < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		errno = e;
		return -1;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		errno = e;
		return -1;
	}
	/* well above 0-4, which the job's stdin, stdout, stderr, go pipe and this handshake take */
	int w = fcntl(p[1], F_DUPFD_CLOEXEC, 10), c = fcntl(sv[0], F_DUPFD_CLOEXEC, 10);
	close(p[1]);
	close(sv[0]);
	pid_t pid = w >= 0 && c >= 0 ? fork() : -1;
	if (pid == 0) {
		close(w);
		close(c);
		for (int i = 0; i < nclose; i++)
			if (close_in_writer[i] >= 0)
				close(close_in_writer[i]);
		if (retitle)
			retitle(arg);
		run(p[0], log, max, path, sv[1]);
	}
	int e = errno;
	close(p[0]);
	close(sv[1]);
	if (pid < 0) {
		if (w >= 0)
			close(w);
		if (c >= 0)
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
