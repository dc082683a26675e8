/*
 * health.h — gpuctld's health quarantine (docs/policy.md): a GPU that
 * reports a hardware fault is taken out of service (a mark, quarantine.h)
 * so that pick, run and the queue give it to nobody until an administrator
 * clears it (`gpuctl quarantine clear`). Faults:
 *   xid    an Xid the driver reports as an event (NVML's event API), among
 *          the configured ones (by default those NVIDIA's catalogue says need
 *          a GPU reset, data/signatures/xid.json);
 *   ecc    the count of uncorrectable ECC errors rises;
 *   remap  rows wait to be remapped at the next reset (lifted by itself
 *          once they no longer wait);
 *   lost   the GPU fell off the bus or needs a reset.
 * Each is a new event: a fault already there when the GPU was cleared does
 * not mark it again; a new one does.
 */
#ifndef GPUCTL_DAEMON_HEALTH_H
#define GPUCTL_DAEMON_HEALTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "device/gpu.h"
#include "jobs/quarantine.h"

enum {
	HEALTH_XID = 1 << 0,
	HEALTH_ECC = 1 << 1,
	HEALTH_REMAP = 1 << 2,
	HEALTH_LOST = 1 << 3,
	HEALTH_ALL = HEALTH_XID | HEALTH_ECC | HEALTH_REMAP | HEALTH_LOST,
};

#define HEALTH_MAX_XIDS 64

struct health_opts {
	unsigned faults;                   /* HEALTH_*: which quarantine; 0: none */
	bool xid_all;                      /* every Xid quarantines, not only xids[] */
	uint64_t xids[HEALTH_MAX_XIDS];
	size_t nxids;
	const char *sim;                   /* borrowed: the simulated node, or NULL */
	const char *signatures;            /* borrowed: the directory of xid.json, or NULL */
	struct notify *notify;             /* borrowed: gpu.quarantined events, or NULL */
};

/* The default Xids: those data/signatures/xid.json says need a GPU reset. */
extern const char HEALTH_DEFAULT_XIDS[];

/*
 * Parse --quarantine's value ("xid,ecc,remap,lost", "all", "off") into
 * o->faults, and --quarantine-xids' ("reset" for the default, "all", or
 * "48,79,...") into o->xids. 0, or -1 with a message in err.
 */
int health_parse_faults(const char *arg, struct health_opts *o, char *err, size_t errlen);
int health_parse_xids(const char *arg, struct health_opts *o, char *err, size_t errlen);

struct health;

/*
 * Start watching: opens its own driver context for Xid events, waited for
 * in a thread whatever o->faults (the last Xid is a metric). A driver
 * without the event API is logged, not an error. 0, or <0 GC_E* with err
 * set.
 */
int health_start(struct health **out, const struct health_opts *o, char *err, size_t errlen);
void health_stop(struct health *h);

/*
 * After each sample (the sampler's thread): quarantine what this sample
 * shows (ecc, remap, lost), lift what it shows lifted, and fill, for the
 * sample's GPUs, marks[ngpus] (the GPU's mark, by root or gpuctld's user;
 * uuid "" when it has none) and last_xid[ngpus] (the last Xid since gpuctld
 * started, 0 none).
 */
void health_sample(struct health *h, const gc_snapshot *snap, struct quarantine_info *marks, uint64_t *last_xid);

/* Quarantines gpuctld has made since it started (all reasons). */
uint64_t health_quarantines(struct health *h);
#endif
