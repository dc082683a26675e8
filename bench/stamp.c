/*
 * stamp.c — the job that bench/lease.sh runs under `gpuctl run` to time the
 * hand-over of a GPU from one job to the next, without a shell or date(1)
 * in the measurement.
 *
 *   stamp [-r READY] [-s MS] FILE
 *
 * Writes the current CLOCK_REALTIME in nanoseconds (decimal, newline) to
 * READY at once when -r is given, then sleeps MS milliseconds when -s is
 * given, then writes CLOCK_REALTIME ns to FILE and exits 0. Files are
 * created or truncated (mode 0644). Exits 2 on a bad argument, 1 when a file
 * cannot be written.
 *
 * Built by bench/lease.sh with `cc -O2`; not part of the main build.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int put_now(const char *path)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	char buf[32];
	int n = snprintf(buf, sizeof buf, "%lld\n", (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, buf, (size_t)n) != n || close(fd) < 0) {
		fprintf(stderr, "stamp: %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *ready = NULL;
	long ms = 0;
	int c;
	while ((c = getopt(argc, argv, "r:s:")) != -1) {
		char *end;
		switch (c) {
		case 'r':
			ready = optarg;
			break;
		case 's':
			errno = 0;
			ms = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || ms < 0) {
				fprintf(stderr, "stamp: bad -s '%s'\n", optarg);
				return 2;
			}
			break;
		default:
			fprintf(stderr, "usage: stamp [-r READY] [-s MS] FILE\n");
			return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "usage: stamp [-r READY] [-s MS] FILE\n");
		return 2;
	}
	if (ready && put_now(ready) < 0)
		return 1;
	if (ms > 0) {
		struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
		while (clock_nanosleep(CLOCK_MONOTONIC, 0, &d, &d) == EINTR)
			;
	}
	return put_now(argv[optind]) < 0 ? 1 : 0;
}
