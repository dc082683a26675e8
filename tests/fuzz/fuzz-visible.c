/*
 * fuzz-visible.c — fuzz target for CUDA_VISIBLE_DEVICES (lib/jobs/visible.c):
 * whatever a user or a parent process set must parse, against a machine of
 * 8 GPUs, into a list that names only those GPUs, without a crash. `make
 * fuzz` runs it; tests/unit/fuzz-replay.c replays its corpus in make check.
 */
#include "jobs/visible.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const uuids[8] = {
	"GPU-5e4d0000-0000-4000-8000-000000000000", "GPU-5e4d0000-0000-4000-8000-000000000001",
	"GPU-5e4d0000-0000-4000-8000-000000000002", "GPU-5e4d0000-0000-4000-8000-000000000003",
	"GPU-5e4d0000-0000-4000-8000-000000000004", "GPU-5e4d0000-0000-4000-8000-000000000005",
	"GPU-5e4d0000-0000-4000-8000-000000000006", "GPU-5e4d0000-0000-4000-8000-000000000007",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0'; /* an environment variable is a C string: it ends at the first NUL */
	struct visible v;
	visible_parse(s, uuids, 8, &v);
	if (v.n > VISIBLE_MAX)
		abort();
	for (size_t i = 0; i < v.n; i++)
		if (v.e[i].gpu < -1 || v.e[i].gpu >= 8)
			abort();
	free(s);
	return 0;
}
