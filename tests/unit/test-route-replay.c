/*
 * test-route-replay.c — runs the fuzz target of gpuctld's parsers
 * (tests/fuzz/fuzz-route.c) in make check under the sanitizers: known
 * good and bad inputs, then 20000 deterministic random and mutated ones.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t seed = 0x2545f4914f6cdd1dULL;
static uint64_t rnd(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return seed;
}

int main(void)
{
	static const char *const seeds[] = {
		"/", "/metrics", "/api/v1/gpus", "/api/v1/history", "/index.html", "", "//", "/metrics/",
		"60", "0", "2592000", "2592001", "-1", "1e3", " 5", "99999999999999999999",
		"127.0.0.1:9400", "[::1]:9400", ":9400", "0.0.0.0:0", "127.0.0.1:", "[::1]", "[::1:80",
		"[]:1", "1.2.3.4:65536", "1.2.3.4:-1", "::1:80", "localhost:80", "[fe80::1%eth0]:80",
	};
	for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++)
		LLVMFuzzerTestOneInput((const uint8_t *)seeds[i], strlen(seeds[i]));
	static const char alphabet[] = "0123456789:[]./abcdef%-+ \t\n\xff";
	uint8_t buf[512];
	for (int i = 0; i < 20000; i++) {
		size_t n = rnd() % 64;
		if (rnd() % 2) {
			const char *s = seeds[rnd() % (sizeof seeds / sizeof seeds[0])];
			size_t l = strlen(s);
			memcpy(buf, s, l);
			n = l;
			for (int k = (int)(rnd() % 4); k > 0 && n; k--)
				buf[rnd() % n] = (uint8_t)alphabet[rnd() % (sizeof alphabet - 1)];
			if (rnd() % 4 == 0)
				n = rnd() % (n + 1);
		} else {
			for (size_t k = 0; k < n; k++)
				buf[k] = rnd() % 3 ? (uint8_t)alphabet[rnd() % (sizeof alphabet - 1)] : (uint8_t)rnd();
		}
		LLVMFuzzerTestOneInput(buf, n);
	}
	puts("route: 20000 inputs, no crash");
	return 0;
}
