/*
 * route.h — what gpuctld makes of a request's path and parameters, and of
 * its --listen address. Pure functions on untrusted text (fuzzed by
 * tests/fuzz/fuzz-route.c); libmicrohttpd parses the HTTP itself.
 */
#ifndef GPUCTL_DAEMON_ROUTE_H
#define GPUCTL_DAEMON_ROUTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

enum route { ROUTE_NONE, ROUTE_DASHBOARD, ROUTE_METRICS, ROUTE_GPUS, ROUTE_HISTORY, ROUTE_JOBS };

/* The endpoint a path names ("/", "/metrics", "/api/v1/gpus", "/api/v1/history", "/api/v1/jobs";
 * "/index.html" is the dashboard too), or ROUTE_NONE. */
enum route route_path(const char *path);

/*
 * /api/v1/history's ?seconds=N: a whole number from 1 to 30 days; NULL
 * (absent) means all (*secs = 0). 0, or -1 for anything else.
 */
int route_seconds(const char *arg, int64_t *secs);

/*
 * --listen: "HOST:PORT", "[IPV6]:PORT" or ":PORT" (loopback), numeric
 * addresses only, PORT 0 to 65535 (0: any free port). Fills *ss and *len;
 * *loopback tells whether the address is 127.0.0.0/8 or ::1. 0, or -1 with
 * a message in err.
 */
int route_listen(const char *spec, struct sockaddr_storage *ss, socklen_t *len, bool *loopback,
		 char *err, size_t errlen);
#endif
