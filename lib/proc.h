/*
 * proc.h — who is behind a GPU process id: user and command line from
 * /proc, with a small uid → name cache. Standalone (no NVML, no gc_ctx).
 */
#ifndef GPUCTL_LIB_PROC_H
#define GPUCTL_LIB_PROC_H

#include "gpuctl/gpuctl.h"

struct uid_cache {
	size_t n;
	struct { uid_t uid; char name[33]; } e[64];
};

/*
 * Fill p->visible, uid, user, command and argv0 for p->pid from `procfs`
 * (normally "/proc"). A pid absent from this PID namespace is marked not
 * visible, with empty user and command. Never fails.
 */
void proc_describe(gc_proc *p, const char *procfs, struct uid_cache *cache);

/* Copy at most dstlen-1 bytes, replacing control bytes with '?'. */
void proc_sanitize(char *dst, size_t dstlen, const char *src, size_t srclen);

#endif
