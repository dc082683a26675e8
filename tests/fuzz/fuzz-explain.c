/*
 * fuzz-explain.c — fuzz target for the signature matcher (lib/diagnose/explain.c):
 * any bytes must scan without a crash, an overflow or a leak.
 *   libFuzzer:  make fuzz (or CC=clang meson setup build-fuzz -Dfuzz=true), then
 *               mkdir -p /tmp/fz && build-fuzz/tests/fuzz/fuzz-explain /tmp/fz tests/explain
 *               (libFuzzer writes new inputs into the first directory only)
 *   make check: tests/unit/test-explain-replay feeds it the corpus and
 *               deterministic random and mutated inputs under ASan.
 * $GPUCTL_DATA_DIR names the data directory (default: the source tree's).
 */
#include "config.h"
#include "diagnose/explain.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct explain_db *db;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!db) {
		char dir[4200], err[512];
		const char *env = getenv("GPUCTL_DATA_DIR");
		snprintf(dir, sizeof dir, "%s/signatures", env ? env : GPUCTL_SRC_DATADIR);
		if (explain_db_load(&db, dir, err, sizeof err) != 0) {
			fprintf(stderr, "fuzz-explain: %s\n", err);
			abort();
		}
	}
	struct explain_result r;
	explain_scan_buf(db, (const char *)data, size, &r);
	explain_result_free(&r);
	return 0;
}
