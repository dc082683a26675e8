/*
 * sigwait.c — the job that bench/spot.sh runs under `gpuctl run --cloud C`
 * (and under bench/classic-watch.sh) to time how long a preemption notice
 * takes to reach the job as SIGTERM, without a shell or a signal handler's
 * scheduling in the measurement.
 *
 *   sigwait READY FILE
 *
 * Blocks SIGTERM, writes its pid to READY (created or truncated), then
 * waits in sigwaitinfo() for SIGTERM; when it comes, writes the current
 * CLOCK_REALTIME in nanoseconds (decimal, newline) to FILE and exits 0.
 * READY is written only once SIGTERM is blocked, so a notice posted after
 * READY exists cannot kill the job before it takes its stamp. Exits 2 on a
 * bad argument, 1 when a file cannot be written or sigwaitinfo() fails.
 *
 * Built by bench/spot.sh with `cc -O2`; not part of the main build.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int put(const char *path, long long v)
{
	char buf[32];
	int n = snprintf(buf, sizeof buf, "%lld\n", v);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, buf, (size_t)n) != n || close(fd) < 0) {
		fprintf(stderr, "sigwait: %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: sigwait READY FILE\n");
		return 2;
	}
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	if (sigprocmask(SIG_BLOCK, &set, NULL) != 0) {
		perror("sigwait: sigprocmask");
		return 1;
	}
	if (put(argv[1], (long long)getpid()) != 0)
		return 1;
	siginfo_t si;
	int s;
	do
		s = sigwaitinfo(&set, &si);
	while (s < 0 && errno == EINTR);
	if (s != SIGTERM) {
		perror("sigwait: sigwaitinfo");
		return 1;
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return put(argv[2], (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec) ? 1 : 0;
}
