/*
 * runner-job.c — one job through gpuctld's job runner, without gpuctld:
 * the test's way to the paths only the runner reaches (the GPUs placed by
 * the caller, the go pipe, the status record), now that `gpuctl run` has
 * no options for them.
 *
 *   runner-job RUNNER LOG STATUS SLOT PLACED GO_FD -- CMD [ARG...]
 *
 * Starts `RUNNER 3` (gpuctld-runner) over a socket pair, waits for its HELLO and
 * sends one request (lib/jobs/spawnreq.h): this process's uid, gid,
 * groups, working directory and environment; LOG, PLACED ("INDEX=UUID,…"),
 * the name "runner-job", STATUS and SLOT; CMD. The job's go pipe is this
 * process's GO_FD, a pipe's read end (the caller keeps the write end: a
 * byte lets the job run, end of file stops it before it runs). Prints "spawned PID" once the
 * runner has forked the job and "exited CODE" (128 + signal for a signal)
 * when it ends; exit 0, or 1 with a message when the runner fails.
 */
#include "jobs/spawnreq.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int die(const char *what)
{
	fprintf(stderr, "runner-job: %s: %s\n", what, strerror(errno));
	return 1;
}

/* the runner's next record */
static int next(int fd, struct spawnrec *r)
{
	size_t off = 0;
	while (off < sizeof *r) {
		ssize_t n = read(fd, (char *)r + off, sizeof *r - off);
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			return -1;
		}
		off += (size_t)n;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 9 || strcmp(argv[7], "--") != 0) {
		fprintf(stderr, "usage: runner-job RUNNER LOG STATUS SLOT PLACED GO_FD -- CMD [ARG...]\n");
		return 2;
	}
	int go = atoi(argv[6]);
	if (go < 3 || fcntl(go, F_GETFD) < 0)
		return die("GO_FD (the go pipe) is not open");
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return die("socketpair");
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, sv[1], 3);
	/* the runner must not hold the go pipe: only the job, once the request has passed it */
	fcntl(go, F_SETFD, FD_CLOEXEC);
	char *rargv[] = {argv[1], (char *)"3", NULL};
	pid_t runner;
	int e = posix_spawn(&runner, argv[1], &fa, NULL, rargv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(sv[1]);
	if (e) {
		errno = e;
		return die("cannot start the runner");
	}
	struct spawnrec rec;
	if (next(sv[0], &rec) < 0 || rec.kind != SPAWNREC_HELLO || rec.value != (int32_t)SPAWNREQ_MAGIC)
		return die("no HELLO from the runner");
	gid_t groups[256];
	int ngroups = getgroups(256, groups);
	char cwd[PATH_MAX];
	if (ngroups < 0 || !getcwd(cwd, sizeof cwd))
		return die("getgroups or getcwd");
	size_t envc = 0;
	while (environ[envc])
		envc++;
	struct spawnreq r = {.uid = getuid(), .gid = getgid(), .ngroups = (size_t)ngroups, .groups = groups, .cwd = cwd,
			     .log = argv[2], .placed = argv[5], .name = "runner-job", .status = argv[3],
			     .slot = strtoull(argv[4], NULL, 10), .argc = (size_t)(argc - 8), .argv = argv + 8,
			     .envc = envc, .env = environ};
	char *buf;
	size_t len;
	if (spawnreq_encode(&r, &buf, &len) != 0)
		return die("cannot encode the request");
	int fds[SPAWNREQ_NFDS] = {open("/dev/null", O_RDONLY | O_CLOEXEC), go};
	union {
		char b[CMSG_SPACE(SPAWNREQ_NFDS * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	if (fds[0] < 0 || spawnreq_put_fds(&m, u.b, sizeof u.b, fds, SPAWNREQ_NFDS) < 0 ||
	    sendmsg(sv[0], &m, MSG_NOSIGNAL) != (ssize_t)len)
		return die("cannot send the request");
	free(buf);
	close(go); /* the job holds the read end now */
	if (next(sv[0], &rec) < 0 || rec.kind != SPAWNREC_SPAWNED || rec.pid <= 0)
		return die("the runner did not fork the job");
	printf("spawned %d\n", (int)rec.pid);
	fflush(stdout);
	pid_t job = rec.pid;
	do
		if (next(sv[0], &rec) < 0)
			return die("the runner went away before the job ended");
	while (rec.kind != SPAWNREC_EXITED || rec.pid != job);
	int st = rec.value;
	printf("exited %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1);
	close(sv[0]); /* end of file: the runner leaves */
	waitpid(runner, &st, 0);
	return 0;
}
