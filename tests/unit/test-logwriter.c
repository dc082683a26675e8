/*
 * test-logwriter.c — daemon/runner/logwriter.c, the writers between queued
 * jobs and their capped logs: a user's writer takes three jobs' logs at once
 * and puts each job's output in its own log, whole and in order, by the time
 * the job's end asks (the handshake); a flood of 1 MiB into a 64 KiB cap
 * leaves the log under it with the marker; a registration that is not one
 * (no fds, a bad header) is dropped and the next is served; once idle it
 * takes no more (the join fails with EPIPE, the caller's cue to start a
 * writer of its own) and ends; a job's own writer (logwriter_start) does the
 * same for one log.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "jobs/joblog.h"
#include "runner/logwriter.h"
#include "tmpdir.h"

#define CAP (64u << 10)

static char dir[64];

static int setup(void **state)
{
	(void)state;
	signal(SIGPIPE, SIG_IGN);
	return tmpdir_make(dir, sizeof dir, "logwriter");
}

static int teardown(void **state)
{
	(void)state;
	return tmpdir_remove(dir);
}

/* a new log DIR/NAME, open as the runner's child opens it */
static int new_log(const char *name, char *path, size_t len)
{
	snprintf(path, len, "%s/%s", dir, name);
	return open(path, O_RDWR | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
}

static void write_all(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t k = write(fd, s, n);
		assert_true(k > 0);
		s += k;
		n -= (size_t)k;
	}
}

/* the file's whole text (at most len - 1 bytes) into buf: its length */
static size_t slurp(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	size_t got = 0;
	ssize_t k;
	while (got < len - 1 && (k = read(fd, buf + got, len - 1 - got)) > 0)
		got += (size_t)k;
	close(fd);
	buf[got] = '\0';
	return got;
}

/* waitpid within about 5 s: true when pid has ended */
static bool ended(pid_t pid)
{
	for (int i = 0; i < 500; i++) {
		int st;
		if (waitpid(pid, &st, WNOHANG) == pid)
			return true;
		nanosleep(&(struct timespec){.tv_nsec = 10000000}, NULL);
	}
	return false;
}

static void test_user_writer(void **state)
{
	(void)state;
	int sock;
	pid_t pid = logwriter_user_start(60000, NULL, NULL, &sock);
	assert_true(pid > 0);

	/* three jobs at once, their writes interleaved */
	enum { JOBS = 3, LINES = 2000 };
	char path[JOBS][128];
	int out[JOBS], ctl[JOBS];
	for (int j = 0; j < JOBS; j++) {
		char name[16];
		snprintf(name, sizeof name, "%d.log", j);
		int log = new_log(name, path[j], sizeof path[j]);
		assert_true(log >= 0);
		assert_int_equal(logwriter_join(sock, log, CAP * 16, path[j], getuid(), getgid(), &out[j], &ctl[j]), 0);
		assert_true(out[j] > 9 && ctl[j] > 9);
		close(log);
	}
	for (int i = 0; i < LINES; i++)
		for (int j = 0; j < JOBS; j++) {
			char line[64];
			int n = snprintf(line, sizeof line, "job %d line %05d\n", j, i);
			write_all(out[j], line, (size_t)n);
		}
	/* each job's end: all it wrote is in its log once the writer answers, and only its own */
	for (int j = 0; j < JOBS; j++) {
		assert_int_equal(logwriter_drained(ctl[j]), 0);
		static char text[LINES * 32];
		size_t len = slurp(path[j], text, sizeof text);
		assert_int_equal(len, (size_t)LINES * 17);
		char want[64];
		snprintf(want, sizeof want, "job %d line %05d\n", j, LINES - 1);
		assert_memory_equal(text + len - 17, want, 17);
		snprintf(want, sizeof want, "job %d line %05d\n", j, 0);
		assert_memory_equal(text, want, 17);
		close(out[j]);
		close(ctl[j]);
	}

	/* a flood under the smallest cap: never over it, the marker first */
	int log = new_log("flood.log", path[0], sizeof path[0]);
	int o, c;
	assert_int_equal(logwriter_join(sock, log, CAP, path[0], getuid(), getgid(), &o, &c), 0);
	close(log);
	static char chunk[4096];
	memset(chunk, 'x', sizeof chunk);
	chunk[sizeof chunk - 1] = '\n';
	for (int i = 0; i < 256; i++)
		write_all(o, chunk, sizeof chunk);
	assert_int_equal(logwriter_drained(c), 0);
	static char text[2 * CAP];
	size_t len = slurp(path[0], text, sizeof text);
	assert_true(len > 0 && len <= CAP);
	assert_memory_equal(text, "[gpuctl: ", 9);
	close(o);
	close(c);

	/* not registrations: no fds; a bad header with fds. Dropped, and the writer serves the next */
	assert_int_equal(send(sock, "junk", 4, 0), 4);
	int p[2];
	assert_int_equal(pipe(p), 0);
	union {
		char buf[CMSG_SPACE(3 * sizeof(int))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof u);
	char bad[16] = "not a header";
	struct iovec iov = {.iov_base = bad, .iov_len = sizeof bad};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(3 * sizeof(int));
	int three[3] = {p[0], p[0], p[0]};
	memcpy(CMSG_DATA(cm), three, sizeof three);
	assert_true(sendmsg(sock, &m, 0) == (ssize_t)sizeof bad);
	close(p[0]);
	log = new_log("after.log", path[1], sizeof path[1]);
	assert_int_equal(logwriter_join(sock, log, CAP, path[1], getuid(), getgid(), &o, &c), 0);
	close(log);
	write_all(o, "served\n", 7);
	assert_int_equal(logwriter_drained(c), 0);
	assert_int_equal(slurp(path[1], text, sizeof text), 7);
	assert_string_equal(text, "served\n");
	/* the dropped one's pipe was closed by the writer: its write end sees no reader */
	assert_true(write(p[1], "x", 1) < 0 && errno == EPIPE);
	close(p[1]);
	close(o);
	close(c);

	/* every other end of the socket closed and no log left: it ends */
	close(sock);
	assert_true(ended(pid));
}

static void test_user_writer_idle(void **state)
{
	(void)state;
	int sock;
	pid_t pid = logwriter_user_start(200, NULL, NULL, &sock);
	assert_true(pid > 0);
	char path[128];
	int log = new_log("idle.log", path, sizeof path);
	int o, c;
	/* a job that runs past the idle time keeps its writer */
	assert_int_equal(logwriter_join(sock, log, CAP, path, getuid(), getgid(), &o, &c), 0);
	nanosleep(&(struct timespec){.tv_nsec = 400000000}, NULL);
	write_all(o, "still\n", 6);
	assert_int_equal(logwriter_drained(c), 0);
	close(o);
	close(c);
	/* then, with no log, it stops taking jobs (the caller then starts a writer of its own) and ends */
	assert_true(ended(pid));
	int o2 = -1, c2 = -1;
	errno = 0;
	assert_int_equal(logwriter_join(sock, log, CAP, path, getuid(), getgid(), &o2, &c2), -1);
	assert_true(errno == EPIPE || errno == ECONNREFUSED || errno == ECONNRESET);
	assert_int_equal(o2, -1);
	char text[64];
	assert_int_equal(slurp(path, text, sizeof text), 6);
	assert_string_equal(text, "still\n");
	close(log);
	close(sock);
}

static void test_job_writer(void **state)
{
	(void)state;
	char path[128];
	int log = new_log("own.log", path, sizeof path);
	int o, c;
	assert_int_equal(logwriter_start(log, CAP, path, getuid(), getgid(), NULL, NULL, NULL, 0, &o, &c), 0);
	close(log);
	write_all(o, "one job\n", 8);
	assert_int_equal(logwriter_drained(c), 0);
	char text[64];
	assert_int_equal(slurp(path, text, sizeof text), 8);
	assert_string_equal(text, "one job\n");
	close(o);
	close(c);
	/* the writer, our child, ends once the pipe's last write end is closed */
	pid_t w = 0;
	int st;
	for (int i = 0; i < 500 && (w = waitpid(-1, &st, WNOHANG)) <= 0; i++)
		nanosleep(&(struct timespec){.tv_nsec = 10000000}, NULL);
	assert_true(w > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_user_writer),
		cmocka_unit_test(test_user_writer_idle),
		cmocka_unit_test(test_job_writer),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
