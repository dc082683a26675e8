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
};

struct http;

/*
 * --check-config's look at --listen, and http_open's first step: the
 * address parses (numeric, port 0 to 65535) and is loopback unless
 * allow_remote. 0, or -1 with a one-line message in err.
 */
int http_check_listen(const struct http_opts *o, char *err, size_t errlen);

/*
 * Bind and listen, serving nothing yet: gpuctld holds its address before any
 * policy runs (docs/daemon.md, "Start-up"). *url gets "http://HOST:PORT/"
 * with the port actually bound. 0, or -1 with a one-line message in err and
 * *usage set when the mistake is the command line's (a bad or non-loopback
 * --listen). Stop it with http_stop.
 */
int http_open(struct http **out, const struct http_opts *o, char *url, size_t urllen, bool *usage, char *err,
	      size_t errlen);

/*
 * Serve what h listens on from the sampler s (borrowed) and the queue q
 * (borrowed: its lines join /metrics; NULL: no queue). 0, or -1 with err;
 * http_stop releases h either way.
 */
int http_serve(struct http *h, struct sampler *s, struct queue *q, char *err, size_t errlen);
void http_stop(struct http *h);
#endif
