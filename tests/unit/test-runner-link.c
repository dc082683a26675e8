/*
 * test-runner-link.c — gpuctld's side of its job runner (daemon/queue/runner-link.c):
 * a round's requests are all sent before the first answer is taken, the
 * answers are matched to them in order, and a runner that dies in the middle
 * of a round is replaced, each request it left unanswered sent again with a
 * go pipe of its own.
 *
 * The runner here is this program again (runner_link starts `RUNNER 3`):
 * a fake that answers each request with pid INCARNATION * 100 + SLOT, and
 * whose first incarnation leaves, unanswering, at its request FAKE_DIE_AT.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "jobs/spawnreq.h"
#include "queue/queue-int.h"
#include "tmpdir.h"

static char self[PATH_MAX];

/* ---- the fake runner ------------------------------------------------------------ */

static int put(int fd, int kind, int pid, int value)
{
	struct spawnrec r = {.kind = kind, .pid = pid, .value = value};
	return send(fd, &r, sizeof r, MSG_NOSIGNAL) == (ssize_t)sizeof r ? 0 : -1;
}

/* its incarnation: one more than the count in FAKE_DIR/starts, which it bumps */
static int incarnation(void)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/starts", getenv("FAKE_DIR"));
	int n = 0;
	FILE *f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%d", &n) != 1)
			n = 0;
		fclose(f);
	}
	if (!(f = fopen(path, "w")))
		return -1;
	fprintf(f, "%d\n", ++n);
	fclose(f);
	return n;
}

static int fake_runner(void)
{
	const int sock = 3;
	int me = incarnation();
	const char *d = getenv("FAKE_DIE_AT");
	int die_at = d ? atoi(d) : 0;
	if (me < 0 || put(sock, SPAWNREC_HELLO, 0, (int)SPAWNREQ_MAGIC) < 0)
		return 1;
	for (int n = 1;; n++) {
		struct spawnreq_hdr h;
		union {
			char buf[CMSG_SPACE(SPAWNREQ_NFDS * sizeof(int))];
			struct cmsghdr align;
		} u;
		struct iovec iov = {.iov_base = &h, .iov_len = sizeof h};
		struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
		if (recvmsg(sock, &m, MSG_WAITALL) != (ssize_t)sizeof h)
			return 0;
		int fds[SPAWNREQ_NFDS];
		size_t nf = spawnreq_fds(&m, fds, SPAWNREQ_NFDS);
		char *payload = malloc(h.len);
		if (!payload || recv(sock, payload, h.len, MSG_WAITALL) != (ssize_t)h.len)
			return 1;
		struct spawnreq r;
		if (spawnreq_decode(payload, h.len, &r) != 0 || nf != SPAWNREQ_NFDS)
			return 1;
		/* the child, as the real runner's would: it waits on its go pipe and says what came, in
		 * FAKE_DIR/go-INCARNATION-SLOT ("x": go; "eof": the pipe closed without a go byte) */
		pid_t c = fork();
		if (c == 0) {
			close(sock);
			char b, path[PATH_MAX];
			ssize_t k = read(fds[1], &b, 1);
			snprintf(path, sizeof path, "%s/go-%d-%llu", getenv("FAKE_DIR"), me, (unsigned long long)r.slot);
			FILE *f = fopen(path, "w");
			if (f) {
				fputs(k == 1 ? "x" : "eof", f);
				fclose(f);
			}
			_exit(0);
		}
		if (me == 1 && n == die_at)
			return 0; /* gone, this request unanswered (its child forked) */
		if (put(sock, SPAWNREC_SPAWNED, me * 100 + (int)r.slot, 0) < 0)
			return 1;
		spawnreq_release(&r);
		free(payload);
		for (size_t i = 0; i < nf; i++)
			close(fds[i]);
	}
}

/* ---- the tests ---------------------------------------------------------------------- */

static struct spawnreq request(uint64_t slot, char **argv, char **env)
{
	return (struct spawnreq){.uid = 0, .gid = 0, .cwd = "/", .log = "/dev/null", .placed = "0=GPU-x", .name = "job",
				 .status = "/dev/null", .slot = slot, .argc = 1, .argv = argv, .envc = 0, .env = env};
}

static int nruns;
static void on_down(void *arg)
{
	(void)arg;
	nruns++;
}

static int starts(const char *dir)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/starts", dir);
	FILE *f = fopen(path, "r");
	int n = 0;
	if (f) {
		if (fscanf(f, "%d", &n) != 1)
			n = -1;
		fclose(f);
	}
	return n;
}

/* what the child for slot of runner incarnation `inc` read on its go pipe (waits up to 10 s for it) */
static const char *said(const char *dir, int inc, int slot)
{
	static char buf[16];
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/go-%d-%d", dir, inc, slot);
	for (int i = 0; i < 1000; i++) {
		FILE *f = fopen(path, "r");
		if (f) {
			size_t n = fread(buf, 1, sizeof buf - 1, f);
			fclose(f);
			buf[n] = '\0';
			if (n)
				return buf;
		}
		usleep(10000);
	}
	return "(nothing)";
}

/* n requests sent, then their answers taken: the pids */
static void round_of(struct runner_link *l, size_t n, pid_t *pids, char why[][256])
{
	char *argv[] = {(char *)"true", NULL}, *env[] = {NULL};
	struct runner_pending p[8];
	for (size_t i = 0; i < n; i++) {
		struct spawnreq r = request(i + 1, argv, env);
		assert_int_equal(runner_link_submit(l, &r, &p[i], why[i], 256), 0);
	}
	for (size_t i = 0; i < n; i++) {
		why[i][0] = '\0';
		pids[i] = runner_link_collect(l, &p[i], why[i], 256);
		/* the go byte's end is open for the caller exactly when the child was forked */
		if (pids[i] > 0) {
			assert_true(p[i].go[1] >= 0);
			assert_int_equal(write(p[i].go[1], "x", 1), 1);
			close(p[i].go[1]);
		} else {
			assert_int_equal(p[i].go[1], -1);
		}
		assert_null(p[i].buf);
	}
}

static void test_round_in_order(void **state)
{
	(void)state;
	char dir[64];
	assert_int_equal(tmpdir_make(dir, sizeof dir, "runner-link"), 0);
	setenv("FAKE_DIR", dir, 1);
	unsetenv("FAKE_DIE_AT");
	int nullfd = open("/dev/null", O_RDWR | O_CLOEXEC);
	struct runner_link l;
	runner_link_init(&l, self, nullfd, on_down, NULL);
	pid_t pids[5];
	char why[5][256];
	round_of(&l, 5, pids, why);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(pids[i], 100 + i + 1);
		assert_string_equal(said(dir, 1, i + 1), "x");
	}
	assert_int_equal(starts(dir), 1);
	/* a second round on the same runner */
	round_of(&l, 2, pids, why);
	assert_int_equal(pids[0], 101);
	assert_int_equal(pids[1], 102);
	assert_int_equal(starts(dir), 1);
	runner_link_free(&l);
	close(nullfd);
	assert_int_equal(tmpdir_remove(dir), 0);
}

static void test_runner_dies_mid_round(void **state)
{
	(void)state;
	char dir[64];
	assert_int_equal(tmpdir_make(dir, sizeof dir, "runner-link"), 0);
	setenv("FAKE_DIR", dir, 1);
	setenv("FAKE_DIE_AT", "2", 1);
	int nullfd = open("/dev/null", O_RDWR | O_CLOEXEC);
	struct runner_link l;
	nruns = 0;
	runner_link_init(&l, self, nullfd, on_down, NULL);
	pid_t pids[4];
	char why[4][256];
	round_of(&l, 4, pids, why);
	/* the first answered by the first runner; the rest sent again to its successor, in order */
	assert_int_equal(pids[0], 101);
	assert_int_equal(pids[1], 202);
	assert_int_equal(pids[2], 203);
	assert_int_equal(pids[3], 204);
	assert_int_equal(starts(dir), 2);
	assert_int_equal(nruns, 1); /* stopped once: its children adopted */
	/* slot 2's child of the first runner, forked before it died, sees its pipe closed without a go
	 * byte (it would leave without running anything); the go bytes reach the second runner's */
	assert_string_equal(said(dir, 1, 1), "x");
	assert_string_equal(said(dir, 1, 2), "eof");
	for (int slot = 2; slot <= 4; slot++)
		assert_string_equal(said(dir, 2, slot), "x");
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/go-1-3", dir);
	assert_int_equal(access(path, F_OK), -1);
	runner_link_free(&l);
	close(nullfd);
	unsetenv("FAKE_DIE_AT");
	assert_int_equal(tmpdir_remove(dir), 0);
}

static void test_no_runner(void **state)
{
	(void)state;
	int nullfd = open("/dev/null", O_RDWR | O_CLOEXEC);
	struct runner_link l;
	runner_link_init(&l, "/nonexistent/gpuctld-runner", nullfd, on_down, NULL);
	pid_t pids[2];
	char why[2][256];
	round_of(&l, 2, pids, why);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(pids[i], -1);
		assert_non_null(strstr(why[i], "cannot start the job runner '/nonexistent/gpuctld-runner'"));
	}
	runner_link_free(&l);
	close(nullfd);
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "3") == 0)
		return fake_runner();
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0)
		return 1;
	self[n] = '\0';
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_in_order),
		cmocka_unit_test(test_runner_dies_mid_round),
		cmocka_unit_test(test_no_runner),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
