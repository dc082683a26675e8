/*
 * route.c — paths, parameters and listen addresses for gpuctld (see route.h).
 */
#include "route.h"
#include "util/errbuf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum route route_path(const char *p)
{
	if (!p)
		return ROUTE_NONE;
	if (strcmp(p, "/") == 0 || strcmp(p, "/index.html") == 0)
		return ROUTE_DASHBOARD;
	if (strcmp(p, "/metrics") == 0)
		return ROUTE_METRICS;
	if (strcmp(p, "/api/v1/gpus") == 0)
		return ROUTE_GPUS;
	if (strcmp(p, "/api/v1/history") == 0)
		return ROUTE_HISTORY;
	if (strcmp(p, "/api/v1/jobs") == 0)
		return ROUTE_JOBS;
	return ROUTE_NONE;
}

int route_seconds(const char *arg, int64_t *secs)
{
	*secs = 0;
	if (!arg)
		return 0;
	size_t n = strlen(arg);
	if (n == 0 || n > 7 || strspn(arg, "0123456789") != n)
		return -1;
	long v = strtol(arg, NULL, 10);
	if (v < 1 || v > 30L * 86400)
		return -1;
	*secs = v;
	return 0;
}

int route_listen(const char *spec, struct sockaddr_storage *ss, socklen_t *len, bool *loopback,
		 char *err, size_t errlen)
{
	char host[64];
	const char *port;
	memset(ss, 0, sizeof *ss);
	if (spec[0] == '[') {
		const char *close = strchr(spec, ']');
		if (!close || close[1] != ':' || (size_t)(close - spec - 1) >= sizeof host) {
			errbuf_set(err, errlen, "invalid --listen '%s' (expected HOST:PORT, [IPV6]:PORT or :PORT)", spec);
			return -1;
		}
		memcpy(host, spec + 1, (size_t)(close - spec - 1));
		host[close - spec - 1] = '\0';
		port = close + 2;
	} else {
		const char *colon = strrchr(spec, ':');
		if (!colon || (size_t)(colon - spec) >= sizeof host || memchr(spec, ':', (size_t)(colon - spec))) {
			errbuf_set(err, errlen, "invalid --listen '%s' (expected HOST:PORT, [IPV6]:PORT or :PORT)", spec);
			return -1;
		}
		memcpy(host, spec, (size_t)(colon - spec));
		host[colon - spec] = '\0';
		port = colon + 1;
		if (!host[0])
			snprintf(host, sizeof host, "127.0.0.1");
	}
	size_t pn = strlen(port);
	long p = pn && pn <= 5 && strspn(port, "0123456789") == pn ? strtol(port, NULL, 10) : -1;
	if (p < 0 || p > 65535) {
		errbuf_set(err, errlen, "invalid port in --listen '%s' (expected 0 to 65535)", spec);
		return -1;
	}
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
	if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)p);
		*len = sizeof *a4;
		*loopback = (ntohl(a4->sin_addr.s_addr) >> 24) == 127;
	} else if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)p);
		*len = sizeof *a6;
		*loopback = IN6_IS_ADDR_LOOPBACK(&a6->sin6_addr);
	} else {
		errbuf_set(err, errlen, "invalid address in --listen '%s' (expected a numeric IPv4 or IPv6 address, "
			   "e.g. 127.0.0.1:9400 or [::1]:9400)", spec);
		return -1;
	}
	return 0;
}
