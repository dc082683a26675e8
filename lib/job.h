/*
 * job.h — a job's GPUs: choose among those free now (select.c) and lease
 * them (lease.c), choosing again when another process leased one between
 * the look and the lease. The public gc_pick / gc_lease_* are this.
 */
#ifndef GPUCTL_LIB_JOB_H
#define GPUCTL_LIB_JOB_H

#include "gpu.h"
#include "lease.h"
#include "select.h"

/*
 * Choose r->n GPUs of s not leased in d (NULL: no state directory, so none
 * is leased) into chosen[r->n] (NVML indices, ascending) and, when out is
 * non-NULL, lease them for `me`. A GPU leased by someone else between the
 * look and the lease makes it look and choose again (a few times).
 * 0; GC_ENOTNOW when fewer than r->n are free now; GC_EBUSY when others
 * kept taking the chosen ones; another GC_E* with err set.
 */
int job_acquire(const gc_snapshot *s, const struct select_request *r, struct lease_dir *d,
		const struct lease_info *me, unsigned *chosen, struct lease **out, char *err, size_t errlen);

#endif
