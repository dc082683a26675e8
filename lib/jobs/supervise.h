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

#include "spot/spot.h"

enum supervise_restart { SUPERVISE_RESTART_NEVER, SUPERVISE_RESTART_ON_FAILURE, SUPERVISE_RESTART_ON_PREEMPT, SUPERVISE_RESTART_ALWAYS };

enum supervise_end {
	SUPERVISE_END_EXITED,       /* exited by itself (status in supervise_result) */
	SUPERVISE_END_SIGNALED,     /* killed by a signal nobody here sent */
	SUPERVISE_END_PREEMPTED,    /* stopped because of a preemption notice */
	SUPERVISE_END_HUNG,         /* stopped by the hang watchdog */
	SUPERVISE_END_OOM,          /* killed by the kernel's OOM killer */
	SUPERVISE_END_INTERRUPTED,  /* the user interrupted gpuctl (signal forwarded) */
	SUPERVISE_END_EXEC_FAILED,  /* the command could not be run */
};

/* the least grace a notice's deadline leaves a job, even one already past: time for its handler */
#define SUPERVISE_MIN_GRACE_MS 5000

struct supervise_opts {
	char *const *argv;           /* borrowed: the command */
	enum supervise_restart restart;
	unsigned max_restarts;       /* restarts allowed after the first attempt */
	int backoff_ms;              /* first wait before a restart, doubled each time */
	int backoff_max_ms;
	int grace_ms;                /* SIGTERM → SIGKILL; < 0: the notice deadline minus margin_ms,
					at least SUPERVISE_MIN_GRACE_MS */
	int margin_ms;               /* kept before a notice deadline */
	int default_grace_ms;        /* when a notice has no deadline and grace_ms < 0 */
	const char *checkpoint_dir;  /* borrowed; NULL: none */
	int64_t hang_timeout_ms;     /* 0: no watchdog */
	const char *on_notice;       /* borrowed shell command run on a notice, or NULL */
	int warning_signal;          /* sent to the job on a SPOT_WARNING (checkpoint now); 0: a log line only */
	bool spare_leader;           /* stop the command's children, not the command: torchrun's agent,
					told to stop, SIGKILLs its workers 30 s later, whatever the grace */
	char *const *env;            /* borrowed: the job's environment, before each attempt's
					GPUCTL_RUN_ID...; NULL: ours (environ) */
	struct spot_watcher *spot;   /* borrowed; NULL: no notices */
	bool take_terminal;          /* hand the job the terminal when we are in the foreground */
	struct outtail *tail;        /* borrowed: the job's stdout and stderr pass through it (outtail.h); NULL: ours */
	/* the highest utilization (%) of the job's GPUs: 0 and *pct, or -1 when unknown */
	int (*gpu_util)(void *arg, int *pct);
	void (*log)(void *arg, const char *line);   /* one line, no newline */
	void (*started)(void *arg, pid_t pid);      /* each attempt, once the command runs */
	void *arg;
	char run_id[33];             /* stable across attempts; filled by supervise_run when empty */
};

struct supervise_result {
	enum supervise_end end;             /* of the last attempt */
	bool noticed;                /* a preemption notice stopped an attempt */
	struct spot_event notice;    /* the last such notice (for an Azure acknowledgement) */
	int status;                  /* shell-style: exit code, 128+N for signal N, 127/126 */
	int exec_errno;              /* with SUPERVISE_END_EXEC_FAILED */
	unsigned attempts;
};

const char *supervise_end_name(enum supervise_end e);
int supervise_parse_restart(const char *s, enum supervise_restart *out);

/* A new run id: 16 random hex digits. */
void supervise_new_run_id(char out[33]);
/* Run attempts until one ends for good. 0, or a negative GC_E* (setup failed). */
int supervise_run(struct supervise_opts *o, struct supervise_result *r);

/*
 * CPU time (ms, children that were waited for included) of every process in
 * process group pgid, read from /proc; -1 when none is found.
 */
int64_t supervise_group_cpu_ms(pid_t pgid);

#endif
