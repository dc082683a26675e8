/*
 * port.h — a TCP port for a job's rendezvous that no other job on this host
 * is using or about to use.
 *
 * A port below the kernel's ephemeral range that nothing is bound to now
 * (the kernel hands out ports of that range to any bind(0) or connection,
 * so one named from it could be taken before the job binds it); between
 * that and the job binding it, another launch could pick the same number.
 * So each chosen port is also claimed in the lease state directory, as a GPU
 * is leased (lease_port_try), for as long as the job runs, and a port another
 * launch holds is never handed out: two concurrent `gpuctl launch` never share
 * a port, unlike the fixed 29500 everyone's scripts use.
 */
#ifndef GPUCTL_LIB_PORT_H
#define GPUCTL_LIB_PORT_H
#include <stddef.h>

struct port_hold;
struct lease_dir;

/*
 * Choose and hold a port. d (borrowed; the hold may outlive it) is the lease state
 * directory; NULL: only name a port free now and hold nothing (*out = NULL).
 * 0 with *port and *out, or a negative GC_E* with a message in err.
 */
int port_reserve(struct lease_dir *d, int *port, struct port_hold **out, char *err, size_t errlen);
/* Give the port back. NULL is fine. */
void port_release(struct port_hold *h);
#endif
