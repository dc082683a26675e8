/*
 * test-explain-replay.c — runs the fuzz target (tests/fuzz/fuzz-explain.c)
 * in make check, under the sanitizers: over every .log file of the directories
 * it is given (tests/explain/, its real logs, and the inputs the fuzzer found),
 * then 3000 deterministic inputs: random bytes, and corpus files cut, spliced
 * and sprinkled with NULs, escapes, CRs and long lines.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t seed = 0x9e3779b97f4a7c15ULL;
static uint64_t rnd(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return seed;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *b = malloc(1 << 20);
	*len = b ? fread(b, 1, 1 << 20, f) : 0;
	fclose(f);
	return b;
}

int main(int argc, char **argv)
{
	char *files[512];
	size_t lens[512], nf = 0;
	for (int a = 1; a < argc || a == 1; a++) {
		const char *dir = argc > 1 ? argv[a] : "tests/explain";
		DIR *d = opendir(dir);
		struct dirent *e;
		while (d && (e = readdir(d)) && nf < 512) {
			if (e->d_name[0] == '.' || !strstr(e->d_name, ".log"))
				continue;
			char p[4200];
			snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
			if ((files[nf] = slurp(p, &lens[nf])))
				LLVMFuzzerTestOneInput((const uint8_t *)files[nf], lens[nf]), nf++;
		}
		if (d)
			closedir(d);
	}
	static const char *bits[] = {"\033[31m", "\r\n", "\0", "CUDA out of memory. Tried to allocate ",
				     "Xid (PCI:", "): 79, ", "WorkNCCL(SeqNum=", "Timeout(ms)=", "GiB",
				     "\033]0;x\a", "\033", "Process 1 has ", " of which ", "CUBLAS_STATUS_", "\r",
				     "CUDA error: out of memory", "OOM when allocating tensor with shape[", "] and type float",
				     "Limit:        12", "InUse:        ", "The NVIDIA GPU 0000:3b:00.0",
				     "fallen off the bus and is not responding", "too old (found version 1",
				     "Could not load dynamic library 'libcu", "NCCL Error 2: unhandled system error",
				     ":29500 (errno: 98 - Address already in use", "NVRM: API mismatch: the client has the version "};
	size_t cap = 3 << 16;
	uint8_t *buf = malloc(cap);
	for (int i = 0; i < 3000; i++) {
		size_t n = 0;
		if (nf && rnd() % 2) {
			/* a corpus file, cut and sprinkled */
			size_t f = rnd() % nf, a = lens[f] ? rnd() % lens[f] : 0, b = lens[f] ? rnd() % lens[f] : 0;
			if (a > b) { size_t t = a; a = b; b = t; }
			memcpy(buf, files[f] + a, b - a);
			n = b - a;
			for (int k = 0; k < 8 && n + 64 < cap; k++) {
				const char *s = bits[rnd() % (sizeof bits / sizeof bits[0])];
				size_t sl = strlen(s) ? strlen(s) : 1, at = n ? rnd() % n : 0;
				memmove(buf + at + sl, buf + at, n - at);
				memcpy(buf + at, s, sl);
				n += sl;
			}
		} else {
			/* random bytes, or a line longer than the matcher keeps */
			n = rnd() % (rnd() % 8 ? 4096 : cap);
			for (size_t k = 0; k < n; k++)
				buf[k] = rnd() % 8 ? (uint8_t)rnd() : (uint8_t)"CUDAXid\n"[rnd() % 8];
		}
		LLVMFuzzerTestOneInput(buf, n);
	}
	free(buf);
	for (size_t k = 0; k < nf; k++)
		free(files[k]);
	printf("replayed %zu corpus files and 3000 generated inputs\n", nf);
	return 0;
}
