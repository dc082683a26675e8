/*
 * pidlock.c — an exclusive flock on a file that names its holder (see
 * pidlock.h). gpuctld takes one beside its queue database and one beside its
 * queue socket, so that a second gpuctld refuses to start instead of taking
 * over the socket of the first.
 */
#include "util/pidlock.h"
#include "util/errbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* the holder writes its pid right after it locks: give it a moment to */
static pid_t read_holder(int fd)
{
	for (int i = 0; i < 20; i++) {
		char buf[24];
		ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
		if (n > 0) {
			buf[n] = '\0';
			char *end;
			errno = 0;
			long v = strtol(buf, &end, 10);
			if (errno == 0 && end != buf && *end == '\n' && v > 0 && v <= 4194304)
				return (pid_t)v;
		}
		nanosleep(&(struct timespec){.tv_nsec = 5000000}, NULL);
	}
	return 0;
}

int pidlock_take(const char *path, uid_t owner, pid_t *holder, char *err, size_t errlen)
{
	*holder = 0;
	int fd = -1;
	for (int tries = 0; fd < 0; tries++) {
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
		if (fd < 0) {
			int e = errno;
			/* a link someone else left there: removed below like any foreign file */
			if (e == ELOOP && tries == 0 && unlink(path) == 0)
				continue;
			errbuf_set(err, errlen, "cannot open the lock file '%s': %s", path, strerror(e));
			return -e;
		}
		struct stat st;
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (owner == (uid_t)-1 || st.st_uid == owner))
			break;
		close(fd);
		fd = -1;
		/* someone else put it there (a shared directory such as /run/gpuctl): their lock
		 * must not keep us from starting, so it goes, once */
		if (tries > 0 || unlink(path) < 0) {
			errbuf_set(err, errlen, "refusing the lock file '%s': not a regular file of uid %ld", path,
				   (long)owner);
			return -EPERM;
		}
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno;
		if (e == EWOULDBLOCK)
			*holder = read_holder(fd);
		else
			errbuf_set(err, errlen, "cannot lock '%s': %s", path, strerror(e));
		close(fd);
		return e == EWOULDBLOCK ? -EWOULDBLOCK : -e;
	}
	char buf[24];
	int n = snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, (size_t)n, 0) != n) {
		int e = errno;
		errbuf_set(err, errlen, "cannot write the lock file '%s': %s", path, strerror(e));
		close(fd);
		return -e;
	}
	return fd;
}
