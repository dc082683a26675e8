/*
 * capture.c — run a helper program and take its output (see capture.h).
 */
#include "util/clock.h"
#include "capture.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int capture_run(char *const argv[], const char *input, bool with_stderr, int timeout_ms, char **out, int *why)
{
	*out = NULL;
	*why = 0;
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		*why = errno;
		return CAPTURE_NOT_RUN;
	}
	int in = -1; /* the input, from a memory file so no write can block */
	if (input) {
		size_t len = strlen(input);
		in = memfd_create("gpuctl-input", MFD_CLOEXEC);
		if (in < 0 || write(in, input, len) != (ssize_t)len || lseek(in, 0, SEEK_SET) != 0) {
			*why = errno ? errno : EIO;
			if (in >= 0)
				close(in);
			close(p[0]);
			close(p[1]);
			return CAPTURE_NOT_RUN;
		}
	}
	int ep[2]; /* reports an exec failure */
	if (pipe2(ep, O_CLOEXEC) < 0) {
		*why = errno;
		close(p[0]);
		close(p[1]);
		if (in >= 0)
			close(in);
		return CAPTURE_NOT_RUN;
	}
	pid_t pid = fork();
	if (pid < 0) {
		*why = errno;
		close(p[0]);
		close(p[1]);
		close(ep[0]);
		close(ep[1]);
		if (in >= 0)
			close(in);
		return CAPTURE_NOT_RUN;
	}
	if (pid == 0) {
		setpgid(0, 0);
		int nul = open("/dev/null", O_RDWR);
		dup2(in >= 0 ? in : nul, 0);
		dup2(p[1], 1);
		dup2(with_stderr ? p[1] : nul, 2);
		execvp(argv[0], argv);
		int err = errno;
		(void)!write(ep[1], &err, sizeof err);
		_exit(127);
	}
	close(p[1]);
	close(ep[1]);
	if (in >= 0)
		close(in);
	int err = 0;
	bool missing = read(ep[0], &err, sizeof err) == (ssize_t)sizeof err;
	close(ep[0]);
	char *buf = malloc(CAPTURE_OUT_MAX + 1);
	size_t n = 0;
	int64_t deadline = clock_mono_ms() + timeout_ms;
	bool timeout = false;
	while (!missing && buf) {
		int64_t left = deadline - clock_mono_ms();
		if (left <= 0) {
			timeout = true;
			break;
		}
		struct pollfd pf = {.fd = p[0], .events = POLLIN};
		int pr = poll(&pf, 1, (int)left);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0)
			continue;
		char tmp[4096];
		ssize_t r = read(p[0], tmp, sizeof tmp);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		size_t take = (size_t)r < CAPTURE_OUT_MAX - n ? (size_t)r : CAPTURE_OUT_MAX - n;
		memcpy(buf + n, tmp, take);
		n += take;
	}
	close(p[0]);
	/* it may close its output and go on: the deadline holds for its exit too */
	int st = 0;
	for (;;) {
		if (timeout)
			kill(-pid, SIGKILL);
		pid_t w = waitpid(pid, &st, timeout ? 0 : WNOHANG);
		if (w == pid || (w < 0 && errno != EINTR))
			break;
		if (w == 0 && clock_mono_ms() >= deadline)
			timeout = true;
		else if (w == 0)
			poll(NULL, 0, 10);
	}
	if (missing || !buf) {
		*why = missing ? err : ENOMEM;
		free(buf);
		return CAPTURE_NOT_RUN;
	}
	buf[n] = '\0';
	*out = buf;
	if (timeout)
		return CAPTURE_TIMEOUT;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

