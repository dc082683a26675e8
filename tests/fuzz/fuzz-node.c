/*
 * fuzz-node.c — fuzz target for the simulated node's JSON (sim/node.c,
 * sim_node_load): a node file is the simulator's whole input, written by
 * hand or by tests, so any bytes must load or be refused with a message,
 * without a crash or a leak. The bytes reach it as a file (a memfd).
 * `make fuzz` runs it; tests/unit/fuzz-replay.c replays its corpus.
 */
#include "sim.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("node.json", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) == (ssize_t)size) {
		char path[64], err[512];
		snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
		struct sim_node *n = sim_node_load(path, err, sizeof err);
		if (n)
			sim_node_free(n);
	}
	close(fd);
	return 0;
}
