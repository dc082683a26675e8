/*
 * quarantine.h — GPUs taken out of service: by gpuctld when a GPU reports a
 * hardware fault (an Xid, uncorrectable ECC errors, a pending row remap, lost
 * from the bus), or by an administrator (`gpuctl quarantine add`). pick, run
 * and gpuctld's queue give a quarantined GPU to nobody until it is cleared.
 *
 * A mark is the file quarantine.<UUID> in the lease state directory
 * (lease.h), a small JSON record. A mark is believed only when root or the
 * owner of the state directory owns it (a regular file nobody else may
 * write): in the shared /run/gpuctl, root's; so nobody but root can take a
 * GPU away from anyone, themselves included. Root and that owner set and
 * clear marks; a name another user squatted is moved aside first.
 */
#ifndef GPUCTL_LIB_QUARANTINE_H
#define GPUCTL_LIB_QUARANTINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "jobs/lease.h"

struct quarantine_info {
	char uuid[LEASE_UUID_MAX];
	int gpu;             /* the NVML index when it was marked; -1 unknown */
	char reason[16];     /* "xid", "ecc", "remap", "lost" (gpuctld) or "admin" */
	uint64_t xid;        /* with "xid": the Xid */
	char detail[200];    /* one line for people: "Xid 79 (GPU has fallen off the bus)" */
	int64_t since;       /* seconds since the epoch */
	char by[33];         /* the user who set it */
	uid_t uid;           /* read back: the mark's owner */
};

/* 1 when the GPU is quarantined (info filled when non-NULL), 0 when not, <0 GC_E*. */
int quarantine_get(struct lease_dir *d, const char *uuid, struct quarantine_info *info);
/* Which of uuids[n] (NULL entries skipped) are quarantined: marked[i]. 0, or <0 GC_E*. */
int quarantine_marked(struct lease_dir *d, const char *const *uuids, size_t n, bool *marked);
/*
 * Every believed mark, *out (free it) with *n entries. 0, or <0 GC_E*.
 */
int quarantine_list(struct lease_dir *d, struct quarantine_info **out, size_t *n);
/*
 * May this process set and clear marks for everyone who uses this state
 * directory (it owns it, or is root)? false with the reason in err.
 */
bool quarantine_may_manage(struct lease_dir *d, char *err, size_t errlen);
/* Mark info->uuid (by and uid are filled in). 0, or <0 GC_E* with err set. */
int quarantine_set(struct lease_dir *d, const struct quarantine_info *info, char *err, size_t errlen);
/* Remove the believed mark of uuid: 1 removed, 0 there was none, <0 GC_E* with err set. */
int quarantine_clear(struct lease_dir *d, const char *uuid, char *err, size_t errlen);
#endif
