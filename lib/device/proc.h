/*
 * proc.h — who is behind a GPU process id: user and command line from
 * /proc, with a small uid → name cache. Standalone (no NVML, no gc_ctx).
 */
#ifndef GPUCTL_LIB_PROC_H
#define GPUCTL_LIB_PROC_H

#include "device/gpu.h"

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

/*
 * The name of user uid (safe for a terminal), or the number when it has none;
 * through cache when non-NULL.
 */
void proc_user_name(uid_t uid, char *out, size_t outlen, struct uid_cache *cache);

/* The fields of /proc/PID/stat gpuctl reads (proc(5) numbers them). */
struct proc_statf {
	char state;                     /* 3: 'R', 'S', 'D', 'Z' for a zombie, ... */
	pid_t ppid, pgrp, session;      /* 4, 5, 6 */
	int tty_nr;                     /* 7: the controlling terminal, 0 if none */
	unsigned long long utime, stime; /* 14, 15: clock ticks */
	long long cutime, cstime;       /* 16, 17: clock ticks, of waited-for children */
	unsigned long long starttime;   /* 22: clock ticks since boot */
	long long rss;                  /* 24: resident pages */
};

/*
 * The one parser of /proc/PID/stat: read procfs/PID/stat (procfs NULL: /proc)
 * into *f; the fields start after the last ')', as the command may hold
 * anything. 0, or -1 when there is no such process or the line is not one.
 */
int proc_stat_read(const char *procfs, pid_t pid, struct proc_statf *f);

/*
 * From /proc/PID/stat: its state letter ('R', 'S', 'Z' for a zombie, ...), its
 * parent and when it started (field 22, clock ticks since boot), each when
 * non-NULL. 0, or -1 when there is no such process (or no /proc).
 */
int proc_stat(pid_t pid, char *state, pid_t *ppid, unsigned long long *start);

/*
 * sig to the process that was pid when it was seen, started at `start` (as
 * proc_stat says) and owned by uid: through a pidfd opened now and checked
 * against both, so a pid that ended and was reused meanwhile is never hit.
 * 0, or -1 (it is gone, or is another process now).
 */
int proc_signal(pid_t pid, unsigned long long start, uid_t uid, int sig);

/* The owner of process pid (its /proc entry's), or (uid_t)-1 when there is none. */
uid_t proc_owner(pid_t pid);
/* Is anc pid itself or one of its ancestors (at most 256 generations up)? Never for anc <= 1. */
bool proc_is_ancestor(pid_t anc, pid_t pid);

/*
 * Copy at most dstlen-1 bytes of text that came from another user or process,
 * safe for a terminal: control characters (C0, DEL, the C1 range U+0080-U+009F)
 * and bytes that are not valid UTF-8 become '?'; valid UTF-8 is kept whole.
 * Stops at a NUL.
 */
void proc_sanitize(char *dst, size_t dstlen, const char *src, size_t srclen);

#endif
