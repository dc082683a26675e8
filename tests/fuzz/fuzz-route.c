/*
 * fuzz-route.c — fuzz target for gpuctld's parsing of untrusted text
 * (daemon/route.c): request paths, the ?seconds= parameter and --listen
 * addresses must never crash, overflow or leak, and what they accept must
 * be consistent (a port in range, a route only for the known paths).
 *   libFuzzer:  make fuzz (or CC=clang meson setup build-fuzz -Dfuzz=true), then
 *               build-fuzz/tests/fuzz/fuzz-route /tmp/fz-route
 *   make check: tests/unit/test-route-replay runs it on deterministic
 *               random and mutated inputs under ASan.
 */
#include "route.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	enum route r = route_path(s);
	if (r != ROUTE_NONE && s[0] != '/')
		abort();
	int64_t secs;
	if (route_seconds(s, &secs) == 0 && (secs < 1 || secs > 30LL * 86400))
		abort();
	struct sockaddr_storage ss;
	socklen_t len;
	bool loop;
	char err[256];
	if (route_listen(s, &ss, &len, &loop, err, sizeof err) == 0) {
		if (ss.ss_family != AF_INET && ss.ss_family != AF_INET6)
			abort();
	} else if (!memchr(err, '\0', sizeof err) || !err[0]) {
		abort();
	}
	free(s);
	return 0;
}
