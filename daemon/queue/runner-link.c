/*
 * runner-link.c — the queue's job runner (queue-int.h): `gpuctld-runner 3`
 * (daemon/runner/), one process spawned once (and again if it dies) and spoken to
 * over a socket pair (lib/jobs/spawnreq.h). For each job it forks a child that
 * becomes the user and runs the job in-process (the library's job_exec: the GPUs
 * dispatch chose, the job's options and command, as fields, never a
 * command line); it says which pid it forked and, later, how it ended.
 * A runner that stops answering is killed: its children run on, adopted.
 */
#include "queue-int.h"

#include "util/clock.h"
#include "config.h"
#include "util/env.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

void runner_link_init(struct runner_link *l, const char *runner, int nullfd, void (*on_down)(void *), void *arg)
{
	*l = (struct runner_link){.runner = runner, .nullfd = nullfd, .rfd = -1, .on_down = on_down, .arg = arg};
}

/* read what the runner sent into rbuf: 0, or -1 when it is gone */
int runner_link_read(struct runner_link *l)
{
	for (;;) {
		if (l->rcap - l->rlen < 4096) {
			size_t cap = l->rcap ? l->rcap * 2 : 8192;
			char *b = realloc(l->rbuf, cap);
			if (!b)
				return 0; /* read later */
			l->rbuf = b;
			l->rcap = cap;
		}
		ssize_t n = read(l->rfd, l->rbuf + l->rlen, l->rcap - l->rlen);
		if (n > 0) {
			l->rlen += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		return n < 0 && errno == EAGAIN ? 0 : -1;
	}
}

/* take the first record of this kind out of rbuf: 1, or 0 when none is there yet */
static int runner_take(struct runner_link *l, int kind, struct spawnrec *out)
{
	for (size_t off = 0; off + sizeof *out <= l->rlen; off += sizeof *out) {
		memcpy(out, l->rbuf + off, sizeof *out);
		if (out->kind == kind) {
			memmove(l->rbuf + off, l->rbuf + off + sizeof *out, l->rlen - off - sizeof *out);
			l->rlen -= sizeof *out;
			return 1;
		}
	}
	return 0;
}

/* wait (at most RUNNER_TIMEOUT_MS) for the runner's next record of this kind: 0, or -1 */
static int runner_wait(struct runner_link *l, int kind, struct spawnrec *out)
{
	long long deadline = clock_mono_ms() + RUNNER_TIMEOUT_MS;
	while (!runner_take(l, kind, out)) {
		long long left = deadline - clock_mono_ms();
		struct pollfd p = {.fd = l->rfd, .events = POLLIN};
		if (left <= 0 || (poll(&p, 1, (int)left) < 0 && errno != EINTR) || runner_link_read(l) < 0)
			return -1;
	}
	return 0;
}

/*
 * The runner is gone, or no longer to be trusted: kill it (its children run
 * on) and adopt its children, whose ends are then seen through their pidfds.
 */
void runner_link_down(struct runner_link *l, const char *why)
{
	if (l->rfd < 0)
		return;
	close(l->rfd);
	l->rfd = -1;
	kill(l->rpid, SIGKILL);
	int st;
	while (waitpid(l->rpid, &st, 0) < 0 && errno == EINTR)
		;
	l->rpid = 0;
	l->rlen = 0;
	if (l->on_down)
		l->on_down(l->arg);
	if (why)
		queue_log("job runner stopped: %s", why);
}

/* start the runner unless it runs: 0, or -1 with why */
static int runner_up(struct runner_link *l, char *why, size_t len)
{
	if (l->rfd >= 0)
		return 0;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		snprintf(why, len, "cannot make a socket pair for the job runner: %s", strerror(errno));
		return -1;
	}
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, l->nullfd, 0);
	posix_spawn_file_actions_adddup2(&fa, sv[1], 3);
	posix_spawnattr_init(&at);
	sigset_t all, none;
	sigfillset(&all);
	sigemptyset(&none);
	posix_spawnattr_setsigdefault(&at, &all); /* SIGPIPE is ignored here; not in jobs */
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSID);
	char *argv[] = {(char *)"gpuctld-runner", (char *)"3", NULL};
	/*
	 * LD_BIND_NOW: the runner binds every symbol of its libraries once, at its
	 * start, and each child it forks inherits that, instead of binding the
	 * ones it calls itself (jansson's, for one) job after job. The jobs do not
	 * get it: a child's environment is its job's own.
	 */
	extern char **environ;
	char *bind_now[] = {(char *)"LD_BIND_NOW=1", NULL};
	char **env = env_with(environ, NULL, bind_now);
	int e = posix_spawn(&l->rpid, l->runner, &fa, &at, argv, env ? env : environ);
	free(env);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close(sv[1]);
	if (e) {
		close(sv[0]);
		l->rpid = 0;
		snprintf(why, len, "cannot start the job runner '%s': %s", l->runner, strerror(e));
		return -1;
	}
	l->rfd = sv[0];
	l->gen++;
	fcntl(l->rfd, F_SETFL, fcntl(l->rfd, F_GETFL) | O_NONBLOCK);
	l->rlen = 0;
	struct spawnrec hello;
	if (runner_wait(l, SPAWNREC_HELLO, &hello) < 0 || hello.value != (int32_t)SPAWNREQ_MAGIC) {
		runner_link_down(l, NULL);
		snprintf(why, len, "the job runner '%s' did not answer (is it gpuctld's version, %s?)",
			 l->runner, GPUCTL_VERSION);
		return -1;
	}
	return 0;
}

/* send all of buf, the fds with its first byte: 0, or -1 */
static int runner_send(struct runner_link *l, const char *buf, size_t len, const int *fds)
{
	union {
		char b[CMSG_SPACE(SPAWNREQ_NFDS * sizeof(int))];
		struct cmsghdr align;
	} u;
	long long deadline = clock_mono_ms() + RUNNER_TIMEOUT_MS;
	size_t off = 0;
	while (off < len) {
		struct iovec iov = {.iov_base = (char *)buf + off, .iov_len = len - off};
		struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
		if (off == 0)
			(void)spawnreq_put_fds(&m, u.b, sizeof u.b, fds, SPAWNREQ_NFDS); /* u is large enough */
		ssize_t n = sendmsg(l->rfd, &m, MSG_NOSIGNAL);
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		long long left = deadline - clock_mono_ms();
		struct pollfd p = {.fd = l->rfd, .events = POLLOUT};
		if (n == 0 || errno != EAGAIN || left <= 0 || (poll(&p, 1, (int)left) < 0 && errno != EINTR))
			return -1;
	}
	return 0;
}

/*
 * p's request to the runner (started when down), its go pipe's read end with it: 0 sent (p->gen says to
 * which runner), 1 when no runner could be started, -1 when the runner did not take it (it is stopped);
 * why says which.
 */
static int send_pending(struct runner_link *l, struct runner_pending *p, char *why, size_t len)
{
	if (runner_up(l, why, len) < 0)
		return 1;
	const int fds[SPAWNREQ_NFDS] = {l->nullfd, p->go[0]};
	if (runner_send(l, p->buf, p->len, fds) < 0) {
		snprintf(why, len, "the job runner went away");
		runner_link_down(l, "it did not take a job; starting a new one");
		return -1;
	}
	p->gen = l->gen;
	return 0;
}

int runner_link_submit(struct runner_link *l, const struct spawnreq *r, struct runner_pending *p, char *why,
		       size_t len)
{
	*p = (struct runner_pending){.go = {-1, -1}};
	struct spawnreq rq = *r;
	rq.log_max = l->log_max; /* the runner-wide cap, whoever built the request */
	if (spawnreq_encode(&rq, &p->buf, &p->len) < 0) {
		snprintf(why, len, "the job's command line and environment are larger than %u bytes", SPAWNREQ_MAX);
		return -1;
	}
	if (pipe2(p->go, O_CLOEXEC) < 0) {
		snprintf(why, len, "cannot make a pipe: %s", strerror(errno));
		free(p->buf);
		p->buf = NULL;
		return -1;
	}
	/* not sent now (no runner, or it fails): runner_link_collect sends it and says why not */
	(void)send_pending(l, p, why, len);
	return 0;
}

pid_t runner_link_collect(struct runner_link *l, struct runner_pending *p, char *why, size_t len)
{
	pid_t pid = -1;
	for (int attempt = 0; attempt < 2 && pid < 0; attempt++) {
		if (!p->gen || p->gen != l->gen || l->rfd < 0) {
			if (p->gen) {
				/* sent to a runner now gone: a child it forked may hold the old pipe, and leaves
				 * without running anything at its end of file; this request gets a new one */
				close(p->go[0]);
				close(p->go[1]);
				p->gen = 0;
				if (pipe2(p->go, O_CLOEXEC) < 0) {
					p->go[0] = p->go[1] = -1;
					snprintf(why, len, "cannot make a pipe: %s", strerror(errno));
					break;
				}
			}
			int sent = send_pending(l, p, why, len);
			if (sent > 0)
				break;
			if (sent < 0)
				continue;
		}
		struct spawnrec rec;
		if (runner_wait(l, SPAWNREC_SPAWNED, &rec) < 0) {
			snprintf(why, len, "the job runner went away");
			runner_link_down(l, "it did not take a job; starting a new one");
			continue;
		}
		if (rec.pid > 0)
			pid = rec.pid;
		else
			snprintf(why, len, "cannot start a process: %s", strerror(rec.value));
		break;
	}
	free(p->buf);
	p->buf = NULL;
	if (p->go[0] >= 0)
		close(p->go[0]);
	p->go[0] = -1;
	if (pid < 0 && p->go[1] >= 0) {
		close(p->go[1]);
		p->go[1] = -1;
	}
	return pid;
}

int runner_link_next_exit(struct runner_link *l, pid_t *pid, int *status)
{
	struct spawnrec rec;
	if (runner_take(l, SPAWNREC_EXITED, &rec)) {
		*pid = rec.pid;
		*status = rec.value;
		return 1;
	}
	/* no other record is due between requests: drop any, keep a partial one */
	size_t whole = l->rlen - l->rlen % sizeof rec;
	if (whole) {
		memmove(l->rbuf, l->rbuf + whole, l->rlen - whole);
		l->rlen -= whole;
	}
	return 0;
}

void runner_link_free(struct runner_link *l)
{
	runner_link_down(l, NULL); /* the jobs it started run on */
	free(l->rbuf);
	l->rbuf = NULL;
	l->rlen = l->rcap = 0;
}
