/*
 * supervise.h — run a job, stop it cleanly when the machine is about to go
 * away or the job hangs, say why it ended, restart it by policy.
 *
 * The job runs in its own process group; SIGINT/TERM/HUP/QUIT sent to us are
 * forwarded to the group. On a preemption notice (spot.h) or a hang, the
 * group gets SIGTERM, then SIGKILL after the grace time. Each attempt gets
 * GPUCTL_RUN_ID, GPUCTL_RESTART_COUNT, GPUCTL_CHECKPOINT_DIR and, when the
 * checkpoint directory holds a complete checkpoint, GPUCTL_RESUME_FROM.
 * Never prints: lines for the user go through the log callback.
 */
#ifndef GPUCTL_LIB_SUPERVISE_H
#define GPUCTL_LIB_SUPERVISE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "spot.h"

enum sv_restart { SV_RESTART_NEVER, SV_RESTART_ON_FAILURE, SV_RESTART_ON_PREEMPT, SV_RESTART_ALWAYS };

enum sv_end {
	SV_END_EXITED,       /* exited by itself (status in sv_result) */
	SV_END_SIGNALED,     /* killed by a signal nobody here sent */
	SV_END_PREEMPTED,    /* stopped because of a preemption notice */
	SV_END_HUNG,         /* stopped by the hang watchdog */
	SV_END_OOM,          /* killed by the kernel's OOM killer */
	SV_END_INTERRUPTED,  /* the user interrupted gpuctl (signal forwarded) */
	SV_END_EXEC_FAILED,  /* the command could not be run */
};

/* the least grace a notice's deadline leaves a job, even one already past: time for its handler */
#define SV_MIN_GRACE_MS 5000

struct sv_opts {
	char *const *argv;           /* borrowed: the command */
	enum sv_restart restart;
	unsigned max_restarts;       /* restarts allowed after the first attempt */
	int backoff_ms;              /* first wait before a restart, doubled each time */
	int backoff_max_ms;
	int grace_ms;                /* SIGTERM → SIGKILL; < 0: the notice deadline minus margin_ms,
					at least SV_MIN_GRACE_MS */
	int margin_ms;               /* kept before a notice deadline */
	int default_grace_ms;        /* when a notice has no deadline and grace_ms < 0 */
	const char *checkpoint_dir;  /* borrowed; NULL: none */
	int64_t hang_timeout_ms;     /* 0: no watchdog */
	const char *on_notice;       /* borrowed shell command run on a notice, or NULL */
	struct spot_watcher *spot;   /* borrowed; NULL: no notices */
	bool take_terminal;          /* hand the job the terminal when we are in the foreground */
	/* the highest utilization (%) of the job's GPUs: 0 and *pct, or -1 when unknown */
	int (*gpu_util)(void *arg, int *pct);
	void (*log)(void *arg, const char *line);   /* one line, no newline */
	void (*started)(void *arg, pid_t pid);      /* each attempt, once the command runs */
	void *arg;
	char run_id[33];             /* stable across attempts; filled by sv_run when empty */
};

struct sv_result {
	enum sv_end end;             /* of the last attempt */
	bool noticed;                /* a preemption notice stopped an attempt */
	struct spot_event notice;    /* the last such notice (for an Azure acknowledgement) */
	int status;                  /* shell-style: exit code, 128+N for signal N, 127/126 */
	int exec_errno;              /* with SV_END_EXEC_FAILED */
	unsigned attempts;
};

const char *sv_end_name(enum sv_end e);
int sv_parse_restart(const char *s, enum sv_restart *out);

/* A new run id: 16 random hex digits. */
void sv_new_run_id(char out[33]);
/* Run attempts until one ends for good. 0, or a negative GC_E* (setup failed). */
int sv_run(struct sv_opts *o, struct sv_result *r);

/*
 * CPU time (ms, children that were waited for included) of every process in
 * process group pgid, read from /proc; -1 when none is found.
 */
int64_t sv_group_cpu_ms(pid_t pgid);

#endif
