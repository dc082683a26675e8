/*
 * port.c — rendezvous ports held against other launches (see port.h).
 *
 * A hold is a claim in the lease state directory, made and checked exactly as
 * a GPU's lease is (lib/jobs/lease.c): a file of the launch's own, locked for as
 * long as the job runs, that no other user can hold, break or forge. (It was
 * a shared file in a shared ports/ subdirectory: whoever made that directory
 * first owned it, and could close it to everyone.)
 */
#include "jobs/port.h"
#include "util/errbuf.h"
#include "jobs/lease.h"
#include "device/gpu.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct port_hold {
	struct lease *claim;
};

/* bind to port (0: the kernel's choice) and let go: the port it got, or -1 when taken */
static int try_bind(int port)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -1;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				.sin_addr.s_addr = htonl(INADDR_ANY)};
	socklen_t len = sizeof a;
	int got = -1;
	if (bind(s, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(s, (struct sockaddr *)&a, &len) == 0)
		got = ntohs(a.sin_port);
	close(s);
	return got;
}

/*
 * A port nothing is bound to now, below the kernel's ephemeral range
 * (ip_local_port_range): a port from that range (a bind to port 0) is the
 * kernel's to hand out again, to any socket's bind(0) or outgoing connection,
 * between the moment it is named here and the job's bind (seen: a test's
 * torchrun found its rendezvous port taken); one below it is only ever taken
 * by a program that names it. Not torch's default 29500, which scripts name.
 * Falls back on the kernel's choice when the range leaves nothing below it.
 */
static int free_port(void)
{
	unsigned lo = 32768, hi = 60999;
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "re");
	if (f) {
		if (fscanf(f, "%u %u", &lo, &hi) != 2)
			lo = 32768;
		fclose(f);
	}
	const unsigned first = 15000;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	unsigned seed = (unsigned)ts.tv_nsec ^ (unsigned)getpid() << 16;
	for (int tries = 0; lo > first + 100 && lo <= 65536 && tries < 64; tries++) {
		int p = (int)(first + rand_r(&seed) % (lo - first));
		if (p != 29500 && try_bind(p) == p)
			return p;
	}
	return try_bind(0);
}

int port_reserve(struct lease_dir *d, int *port, struct port_hold **out, char *err, size_t errlen)
{
	*out = NULL;
	if (!d) {
		if ((*port = free_port()) > 0)
			return GC_OK;
		errbuf_set(err, errlen, "cannot find a free TCP port: %s", strerror(errno));
		return GC_EIO;
	}
	struct port_hold *h = calloc(1, sizeof *h);
	if (!h)
		return GC_ENOMEM;
	struct lease_info me = {.pid = getpid(), .supervisor = getpid(), .uid = getuid(), .since = time(NULL)};
	snprintf(me.name, sizeof me.name, "rendezvous port");
	for (int tries = 0; tries < 64; tries++) {
		int p = free_port();
		if (p <= 0) {
			errbuf_set(err, errlen, "cannot find a free TCP port: %s", strerror(errno));
			free(h);
			return GC_EIO;
		}
		int rc = lease_port_try(d, p, &me, &h->claim, err, errlen);
		if (rc == GC_OK) {
			*port = p;
			*out = h;
			return GC_OK;
		}
		if (rc != GC_EBUSY) {
			free(h);
			return rc;
		}
	}
	errbuf_set(err, errlen, "no free TCP port after 64 tries (every port the kernel offered is held in '%s')",
		   lease_dir_path(d));
	free(h);
	return GC_EBUSY;
}

void port_release(struct port_hold *h)
{
	if (!h)
		return;
	lease_release(h->claim);
	free(h);
}
