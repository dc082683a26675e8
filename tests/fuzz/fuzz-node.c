/*
 * fuzz-node.c — fuzz target for the simulated node's JSON (sim/node.c,
 * sim_node_load): a node file is the simulator's whole input, written by
 * hand or by tests, so any bytes must load or be refused with a message,
 * without a crash or a leak. The bytes reach it as a file (a memfd). A node
 * that loads also goes through the parsed-node cache's flattening
 * (sim/nodecache.c) and back, which must give the same node field for
 * field; and the flattened block with a byte changed must come back as a
 * node or as NULL, never a crash.
 * `make fuzz` runs it; tests/unit/fuzz-replay.c replays its corpus.
 */
#include "sim.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static int same_val(struct sim_val a, struct sim_val b)
{
	return a.ok == b.ok && a.v == b.v;
}

static int same_faults(const struct sim_faults *a, const struct sim_faults *b)
{
	if (a->n != b->n)
		return 0;
	for (size_t i = 0; i < a->n; i++)
		if (!same_str(a->v[i].fn, b->v[i].fn) || a->v[i].error != b->v[i].error ||
		    a->v[i].after != b->v[i].after)
			return 0;
	return 1;
}

#define EQ(f) (a->f == b->f)
#define EQV(f) same_val(a->f, b->f)

/* every field of two GPUs (field by field: struct padding may differ) */
static int same_gpu(const struct nvmlDevice_st *a, const struct nvmlDevice_st *b)
{
	if (!(EQ(index) && EQ(pci_ok) && EQ(domain) && EQ(bus) && EQ(device) && EQ(device_id) &&
	      EQ(subsystem_id) && EQ(mem_ok) && EQ(mem_total) && EQ(mem_reserved) && EQ(mem_used) &&
	      EQV(util_gpu) && EQV(util_mem) && EQ(vary_period_s) && EQ(vary_amplitude) && EQV(temperature) &&
	      EQV(fan) && EQV(power_draw) && EQV(power_limit) && EQV(power_enforced) && EQV(power_default) &&
	      EQV(power_min) && EQV(power_max) && EQV(throttle) && EQV(supported_throttle) &&
	      EQV(ecc_current) && EQV(ecc_pending) && EQV(persistence) && EQV(compute_mode) && EQV(pstate) &&
	      EQV(mig_current) && EQV(mig_pending) && EQV(mig_max) && EQ(nmig) && EQV(pcie_gen) &&
	      EQV(pcie_max_gen) && EQV(pcie_width) && EQV(pcie_max_width) && EQV(energy) && EQV(cc_major) &&
	      EQV(cc_minor) && EQV(retired_pending) && EQV(remap_corr) && EQV(remap_uncorr) &&
	      EQV(remap_pending) && EQV(remap_failure) && EQ(nprocs) && EQ(procs_ok) && EQ(lost)))
		return 0;
	for (int k = 0; k < 4; k++)
		if (!EQV(clock[k]) || !EQV(max_clock[k]) || !EQV(ecc_count[k / 2][k % 2]))
			return 0;
	for (int k = 0; k < SIM_TOPO_N; k++)
		if (!EQ(topo[k]))
			return 0;
	if (!same_str(a->name, b->name) || !same_str(a->uuid, b->uuid) || !same_str(a->serial, b->serial) ||
	    !same_str(a->vbios, b->vbios) || !same_faults(&a->faults, &b->faults) || !a->procs != !b->procs ||
	    !a->migs != !b->migs)
		return 0;
	for (size_t k = 0; k < a->nprocs; k++) {
		const struct sim_proc *p = &a->procs[k], *q = &b->procs[k];
		if (p->pid != q->pid || p->used_memory != q->used_memory || p->type != q->type ||
		    p->gpu_instance_id != q->gpu_instance_id || p->compute_instance_id != q->compute_instance_id ||
		    p->sm_util != q->sm_util || p->mem_util != q->mem_util || !same_str(p->user, q->user) ||
		    !same_str(p->command, q->command))
			return 0;
	}
	for (unsigned int k = 0; k < a->nmig; k++) {
		const struct sim_mig *m = &a->migs[k], *n = &b->migs[k];
		if (m->parent != a || n->parent != b || !same_str(m->uuid, n->uuid) || !same_str(m->profile, n->profile) ||
		    !same_str(m->name, n->name) || m->mem_total != n->mem_total || m->mem_used != n->mem_used ||
		    m->gpu_instance_id != n->gpu_instance_id || m->compute_instance_id != n->compute_instance_id)
			return 0;
	}
	return 1;
}

static int same_node(const struct sim_node *a, const struct sim_node *b)
{
	if (a->ngpus != b->ngpus || strcmp(a->generation, b->generation) != 0 ||
	    !same_str(a->driver_version, b->driver_version) || !same_str(a->nvml_version, b->nvml_version) ||
	    !same_val(a->cuda_version, b->cuda_version) || !same_faults(&a->faults, &b->faults))
		return 0;
	for (unsigned int i = 0; i < a->ngpus; i++)
		if (!same_gpu(&a->gpus[i], &b->gpus[i]))
			return 0;
	return 1;
}

/* the cache's way there and back; abort() on a difference, so that the fuzzer and the replay see it */
static void round_trip(const struct sim_node *n, const uint8_t *data, size_t size)
{
	size_t len;
	void *block = sim_node_flatten(n, "rd", &len);
	if (!block)
		abort();
	void *copy = malloc(len);
	if (!copy)
		abort();
	memcpy(copy, block, len);
	const char *rundir;
	struct sim_node *back = sim_node_unflatten(copy, len, &rundir);
	if (!back || !same_node(n, back) || strcmp(rundir, "rd") != 0) {
		fprintf(stderr, "fuzz-node: the node differs after the cache's round trip\n");
		abort();
	}
	sim_node_free(back);
	/* one byte changed (chosen by the input): a node or NULL, never a crash */
	if (size >= 2) {
		size_t at = ((size_t)data[0] << 8 | data[1]) % len;
		copy = malloc(len);
		if (!copy)
			abort();
		memcpy(copy, block, len);
		((uint8_t *)copy)[at] ^= (uint8_t)(data[size - 1] | 1);
		back = sim_node_unflatten(copy, len, &rundir);
		if (back)
			sim_node_free(back);
		else
			free(copy);
	}
	free(block);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("node.json", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) == (ssize_t)size) {
		char path[64], err[512];
		snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
		struct sim_node *n = sim_node_load(path, err, sizeof err);
		if (n) {
			round_trip(n, data, size);
			sim_node_free(n);
		}
	}
	close(fd);
	return 0;
}
