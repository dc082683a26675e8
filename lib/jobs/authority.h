/*
 * authority.h — authority mode: on a shared machine gpuctld alone grants
 * leases, ports and places in line (docs/security.md). This is the client's
 * side of it, and the one hook by which gpuctld serves its own grant table
 * to the library's lease functions.
 *
 * The mode is in force when the authority directory ($GPUCTL_AUTHORITY_DIR,
 * else /run/gpuctld) is root's, writable by nobody else, and holds root's
 * marker file `authority` (gpuctld --authority writes it and leaves it when
 * it stops or restarts: clients then wait for it, never fall back to claim
 * files). The socket, `gpuctld.sock` in that directory, is accepted only
 * when the process listening on it is root's (SO_PEERCRED). What a client
 * gets is a connection: the grant lives while a process holds it (the job
 * inherits it), and ends when gpuctld alone says so or the last holder
 * lets go. lease.c turns every lease function into a request when the mode
 * is in force; nothing else needs to know. The socket's parts (authority_dial,
 * authority_send_text, authority_recv_at_most) are also gpuctld-ask.c's, for
 * the queue socket, which accepts a server of the caller's own as well.
 */
#ifndef GPUCTL_LIB_AUTHORITY_H
#define GPUCTL_LIB_AUTHORITY_H

#include "gpuctl/gpuctl.h"
#include "jobs/lease.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define AUTHORITY_DIR "/run/gpuctld"
#define AUTHORITY_MARKER "authority"
#define AUTHORITY_SOCKET "gpuctld.sock"
/* how long a client waits for gpuctld to come back (a restart) when its caller gave no limit */
#define AUTHORITY_CONNECT_MS 30000

/*
 * Is authority mode in force? 1 with the socket's path in sock, 0 (cooperative
 * mode: claim files), or GC_EINVAL with err when the marker is there but the
 * directory or marker is not root's alone (refused: never fall back quietly).
 */
int authority_find(char *sock, size_t socklen, char *err, size_t errlen);
/* The directory looked at ($GPUCTL_AUTHORITY_DIR, else AUTHORITY_DIR). */
const char *authority_dir(void);

/*
 * One try at the Unix socket sock, no waiting and no check of who serves it: the
 * descriptor (close-on-exec) with the server's uid in *peer ((uid_t)-1 when not
 * known). timeout_ms > 0 bounds the connect and each later send and read on it
 * (SO_SNDTIMEO, SO_RCVTIMEO). Else a GC_E* with err: GC_EINVAL (the path is too
 * long), GC_EIO (no socket, or the connect failed: its errno in *why, else 0).
 */
int authority_dial(const char *sock, int timeout_ms, uid_t *peer, int *why, char *err, size_t errlen);
/*
 * Connect to gpuctld at sock, waiting (every 100 ms) while it is down, for at
 * most timeout_ms (-1: AUTHORITY_CONNECT_MS); *stop (NULL: none) ends the wait.
 * The server must be root's. The descriptor (close-on-exec), or a GC_E* with
 * err: GC_ETIMEDOUT when gpuctld did not answer in time, GC_ECANCELED.
 */
int authority_connect(const char *sock, long long timeout_ms, const volatile int *stop, char *err, size_t errlen);
/*
 * A front end's way to say that it waits for gpuctld (the library never prints):
 * fn(arg, sock) is called once per connect that has to wait. NULL: nothing said.
 */
void authority_on_wait(void (*fn)(void *arg, const char *sock), void *arg);
/* Send one request line (takes req). 0, or GC_EIO with err. */
int authority_send(int fd, json_t *req, char *err, size_t errlen);
/* Send text (json_dumps's: taken, and its NUL overwritten) as one line. 0, or GC_EIO with err. */
int authority_send_text(int fd, char *text, char *err, size_t errlen);
/*
 * Read one answer line, waiting at most timeout_ms (-1: no limit); *stop ends
 * the wait (GC_ECANCELED). 0 with *ans (caller frees), GC_ETIMEDOUT, or GC_EIO
 * with err (gpuctld went away).
 */
int authority_recv(int fd, long long timeout_ms, const volatile int *stop, json_t **ans, char *err, size_t errlen);
/*
 * authority_recv for an answer line of at most max bytes (authority_recv's: 4 MiB);
 * with each, timeout_ms bounds the wait for each part of it, as SO_RCVTIMEO would,
 * rather than for the whole.
 */
int authority_recv_at_most(int fd, long long timeout_ms, bool each, size_t max, const volatile int *stop, json_t **ans,
			   char *err, size_t errlen);
/* connect, send, receive, close: one request (takes req). */
int authority_call(const char *sock, json_t *req, json_t **ans, char *err, size_t errlen);
/* an answer's {"ok": false, "error": ...}: GC_OK when ok, else GC_EBUSY / GC_EINVAL / GC_EIO by its "code", err set */
int authority_answer_rc(const json_t *ans, char *err, size_t errlen);

/*
 * Authority mode: a context on gpuctld's table of the GPUs (gputable.h), for a request
 * gpuctld will choose for, made without opening NVML (o: how to open it should a
 * sample need more). 1 with *ctx set; 0 when not in authority mode, or gpuctld does not
 * answer at once, or its sample is older than AUTHORITY_TABLE_FRESH_MS (the caller opens
 * NVML as usual); -1 out of memory.
 */
#define AUTHORITY_TABLE_MS 2000        /* for gpuctld's answer */
#define AUTHORITY_TABLE_FRESH_MS 10000 /* age of its sample */
int authority_gpu_ctx(gc_ctx **ctx, const gc_open_opts *o);

/* A lease record on the wire: what gpuctld says of a grant or a waiter. */
json_t *authority_info_json(const struct lease_info *i);
void authority_info_read(const json_t *o, struct lease_info *i);

/*
 * Inside gpuctld: this process is the authority. Every lease directory opened
 * from now on lists, and revokes, through src (borrowed; it must outlive them).
 */
struct lease_source {
	/* every grant on a GPU (one entry each), as lease_list */
	int (*list)(void *arg, struct lease_entry **out, size_t *n);
	/* the requests waiting in line, in its order, as lease_queue_list */
	int (*waiters)(void *arg, struct lease_waiter **out, size_t *n);
	/* end grant id now, as gpuctld's reclaim or enforcement decides; why for the log. 0, or GC_ENOTFOUND */
	int (*revoke)(void *arg, uint64_t grant, const char *why);
	void *arg;
};
void lease_serve(const struct lease_source *src);
const struct lease_source *lease_served(void);

#endif
