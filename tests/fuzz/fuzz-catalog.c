/*
 * fuzz-catalog.c — fuzz target for the price catalog's CSV reader
 * (lib/advise/catalog.c, catalog_load_buf): any bytes, with no terminating NUL,
 * must load or be refused without reading past the length given, a crash or
 * a leak. `make fuzz` runs it; tests/unit/fuzz-replay.c replays its corpus
 * (tests/fuzz/corpus/catalog) in make check.
 */
#include "advise/catalog.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* a copy of exactly `size` bytes: ASan sees any read past the end */
	char *buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	catalog c;
	memset(&c, 0, sizeof c);
	char err[512];
	(void)catalog_load_buf(&c, buf, size, "fuzz.csv", "aws", err, sizeof err);
	catalog_free(&c);
	free(buf);
	return 0;
}
