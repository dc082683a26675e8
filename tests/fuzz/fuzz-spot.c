/*
 * fuzz-spot.c — fuzz target for the cloud preemption-notice parsers
 * (lib/spot/spot-aws.c, spot-gcp.c, spot-azure.c, and the time formats in
 * lib/spot/spot.c): the metadata service's body is untrusted text, given with its
 * length and no terminating NUL. The first byte picks the parser. `make fuzz`
 * runs it; tests/unit/fuzz-replay.c replays its corpus in make check.
 */
#include "spot/spot.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	uint8_t which = data[0] % 7;
	size--;
	/* the body parsers (0-4) take a length: exactly `size` bytes, so ASan sees
	 * a read of even one byte past it; the time formats (5, 6) take a C string */
	bool cstr = which >= 5;
	char *buf = malloc(size + cstr); /* malloc(0) under ASan: a pointer to no bytes at all */
	if (!buf)
		return 0;
	memcpy(buf, data + 1, size);
	if (cstr)
		buf[size] = '\0';
	struct spot_event ev, evs[8];
	enum spot_kind kind;
	size_t n;
	int64_t ms;
	switch (which) {
	case 0: (void)spot_aws_parse_action(buf, size, &ev); break;
	case 1: (void)spot_aws_parse_rebalance(buf, size, &ev); break;
	case 2: (void)spot_azure_parse(buf, size, evs, sizeof evs / sizeof evs[0], &n); break;
	case 3: (void)spot_gcp_parse_preempted(buf, size); break;
	case 4: (void)spot_gcp_parse_maintenance(buf, size, &kind); break;
	case 5: (void)spot_parse_iso8601(buf, &ms); break;
	default: (void)spot_parse_rfc1123(buf, &ms); break;
	}
	free(buf);
	return 0;
}
