/*
 * http.h — gpuctld's HTTP server (libmicrohttpd): read-only endpoints
 * (/, /metrics, /api/v1/gpus, /api/v1/history) served from the sampler's
 * newest frame, with bounds against slow and oversized clients.
 */
#ifndef GPUCTL_DAEMON_HTTP_H
#define GPUCTL_DAEMON_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "queue/queue.h"
#include "sampler.h"

struct http_opts {
	const char *listen;          /* --listen, borrowed */
	bool allow_remote;           /* a non-loopback --listen is allowed */
	unsigned max_connections;
	unsigned per_client;         /* connections one local user (by uid) or one remote address may hold */
	unsigned timeout_s;          /* a request not answered this long after it began is cut off */
	unsigned threads;            /* worker threads */
	struct queue *queue;         /* borrowed: its lines join /metrics; NULL: no queue */
};

struct http;

/*
 * Bind, listen and serve. *url gets "http://HOST:PORT/" with the port
 * actually bound. 0, or -1 with a one-line message in err and *usage set
 * when the mistake is the command line's (a bad or non-loopback --listen).
 */
int http_start(struct http **out, struct sampler *s, const struct http_opts *o, char *url, size_t urllen,
	       bool *usage, char *err, size_t errlen);
void http_stop(struct http *h);
#endif
