/*
 * port.c — rendezvous ports held against other launches (see port.h).
 *
 * A hold is a locked file <state>/ports/<port>. Releasing unlinks the file
 * before unlocking it; a taker that locked a file someone has just unlinked
 * sees that the path no longer names its inode and tries again, so two
 * holders of one port cannot both believe they have it.
 */
#include "port.h"
#include "errbuf.h"
#include "gpuctl/gpuctl.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

struct port_hold {
	int fd;
	char path[4200];
};

/* a port nothing listens on or is bound to now, from the kernel's ephemeral range */
static int free_port(void)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -1;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
	socklen_t len = sizeof a;
	int port = -1;
	if (bind(s, (struct sockaddr *)&a, sizeof a) == 0 &&
	    getsockname(s, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	close(s);
	return port;
}

int port_reserve(const char *statedir, int *port, struct port_hold **out, char *err, size_t errlen)
{
	*out = NULL;
	if (!statedir) {
		if ((*port = free_port()) > 0)
			return GC_OK;
		errbuf_set(err, errlen, "cannot find a free TCP port: %s", strerror(errno));
		return GC_EIO;
	}
	struct port_hold *h = calloc(1, sizeof *h);
	if (!h)
		return GC_ENOMEM;
	char dir[4096];
	snprintf(dir, sizeof dir, "%s/ports", statedir);
	struct stat st;
	if (mkdir(dir, 0700) == 0 && stat(statedir, &st) == 0)
		(void)chmod(dir, st.st_mode & 07777); /* shared like the state directory */
	for (int tries = 0; tries < 64; tries++) {
		int p = free_port();
		if (p <= 0) {
			errbuf_set(err, errlen, "cannot find a free TCP port: %s", strerror(errno));
			free(h);
			return GC_EIO;
		}
		snprintf(h->path, sizeof h->path, "%s/%d", dir, p);
		/* read-only is enough for flock, and opens another user's file */
		h->fd = open(h->path, O_RDONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (h->fd < 0 && (errno == EACCES || errno == EPERM || errno == ELOOP))
			continue; /* another user's file we may not open (umask 077, protected_regular): another port */
		if (h->fd < 0) {
			errbuf_set(err, errlen, "cannot hold port %d in '%s': %s", p, dir, strerror(errno));
			free(h);
			return GC_EIO;
		}
		struct stat own;
		if (fstat(h->fd, &own) == 0 && own.st_uid == geteuid())
			(void)fchmod(h->fd, 0644); /* whatever our umask: others must be able to open it */
		struct stat a, b;
		if (flock(h->fd, LOCK_EX | LOCK_NB) == 0 && fstat(h->fd, &a) == 0 &&
		    stat(h->path, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev) {
			*port = p;
			*out = h;
			return GC_OK;
		}
		close(h->fd); /* held by another launch, or unlinked under us */
	}
	errbuf_set(err, errlen, "no free TCP port after 64 tries (every port the kernel offered is held in '%s')", dir);
	free(h);
	return GC_EBUSY;
}

void port_release(struct port_hold *h)
{
	if (!h)
		return;
	(void)unlink(h->path); /* fails for another user's file: harmless, it is unlocked below */
	close(h->fd);
	free(h);
}
