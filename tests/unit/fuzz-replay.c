/*
 * fuzz-replay.c — runs a libFuzzer target (tests/fuzz/fuzz-*.c, linked in)
 * in make check, under the sanitizers, without libFuzzer: every file of its
 * in-tree corpus (argv[1]), then deterministic mutations of them (bytes
 * flipped, cut short, spliced). `make fuzz` does the real, coverage-guided
 * fuzzing; this keeps what the corpus found from coming back.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t seed = 0x9e3779b97f4a7c15ULL;
static uint64_t rnd(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return seed;
}

#define MAX_FILES 256
#define MAX_SIZE (1u << 20)

/* as libFuzzer does: the target gets exactly m bytes, so ASan sees a read past them */
static void run(const uint8_t *p, size_t m)
{
	uint8_t *copy = malloc(m);
	if (!copy && m)
		return;
	if (m)
		memcpy(copy, p, m);
	LLVMFuzzerTestOneInput(copy, m);
	free(copy);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: fuzz-replay CORPUS-DIR MUTATIONS\n");
		return 2;
	}
	DIR *d = opendir(argv[1]);
	if (!d) {
		perror(argv[1]);
		return 1;
	}
	uint8_t *in[MAX_FILES];
	size_t len[MAX_FILES], n = 0;
	for (struct dirent *e; n < MAX_FILES && (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		char path[4200];
		snprintf(path, sizeof path, "%s/%s", argv[1], e->d_name);
		FILE *f = fopen(path, "rb");
		if (!f)
			continue;
		in[n] = malloc(MAX_SIZE);
		len[n] = in[n] ? fread(in[n], 1, MAX_SIZE, f) : 0;
		fclose(f);
		if (in[n])
			run(in[n], len[n]);
		n++;
	}
	closedir(d);
	if (n == 0) {
		fprintf(stderr, "fuzz-replay: no corpus in %s\n", argv[1]);
		return 1;
	}
	long muts = strtol(argv[2], NULL, 10);
	uint8_t *buf = malloc(MAX_SIZE);
	for (long i = 0; buf && i < muts; i++) {
		size_t k = rnd() % n, m = len[k];
		memcpy(buf, in[k], m);
		for (int f = (int)(rnd() % 8); f > 0 && m; f--)
			buf[rnd() % m] = (uint8_t)rnd();
		if (rnd() % 3 == 0 && m)
			m = rnd() % m; /* cut short */
		if (rnd() % 4 == 0) {
			/* the tail of another input */
			size_t o = rnd() % n, from = len[o] ? rnd() % len[o] : 0, add = len[o] - from;
			if (m + add <= MAX_SIZE) {
				memcpy(buf + m, in[o] + from, add);
				m += add;
			}
		}
		run(buf, m);
	}
	printf("%s: %zu corpus files and %ld mutations, no crash\n", argv[1], n, muts);
	for (size_t i = 0; i < n; i++)
		free(in[i]);
	free(buf);
	return 0;
}
