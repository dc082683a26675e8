/*
 * top.h — what `gpuctl top` shows, apart from how (top-data.c): one sample
 * of the GPUs with a few minutes of history, their processes with host CPU
 * and memory from /proc, who holds each GPU's lease and who waits in line,
 * and the rows of the process table sorted, filtered or as a tree. No
 * curses here: cmd-top.c draws it, tests/unit/test-top.c checks it.
 */
#ifndef GPUCTL_TOP_H
#define GPUCTL_TOP_H

#include "device/gpu.h"
#include "jobs/lease.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define TOP_HIST 600 /* samples of history kept per GPU (10 minutes at 1 s, 1 at -d 0.1) */

/* the process table's columns, in the order shown */
enum top_col { TOP_PID, TOP_USER, TOP_GPU, TOP_GMEM, TOP_SM, TOP_CPU, TOP_RSS, TOP_CMD, TOP__NCOL };

struct top_proc {
	unsigned gpu;               /* NVML index */
	uint32_t pid;
	pid_t ppid;                 /* 0 when not visible here */
	bool visible;               /* /proc/<pid> is in this PID namespace */
	uid_t uid;
	char user[33];              /* sanitized */
	char command[256];          /* sanitized */
	bool mem_known;
	uint64_t gpu_mem;           /* bytes */
	int sm_util;                /* %, -1 unknown */
	double cpu;                 /* % of one core since the previous sample; < 0 unknown */
	uint64_t rss;               /* bytes; 0 unknown */
	bool unleased;              /* a user who holds no lease on this GPU while others use leases */
	size_t job;                 /* 1 + the index in top_data.leases of the lease whose job it is part of
	                             * (its GPU's, and of the holder's user: not unleased); 0 none */
	int depth;                  /* in the tree view: 1 under its job's row, 2 under its parent, ... */
};

struct top_holder {
	bool held;
	struct lease_info info;     /* sanitized */
	size_t lease;               /* with held: its index in top_data.leases */
	bool quarantined;           /* out of service (gpuctl quarantine) */
	char qreason[16];           /* its reason: "xid", "ecc", ... (sanitized) */
	uint64_t qxid;              /* with "xid" */
};

/* a lease as one job: what one gpuctl run (or pick --lease) holds, on one GPU or several */
struct top_lease {
	struct lease_info info;     /* sanitized (its first GPU's record) */
	char gpus[128];             /* its GPUs' indices, "2,3" (",..." at the end when they do not fit) */
	unsigned ngpus;
};

struct top_gpu {
	float util[TOP_HIST], mem[TOP_HIST]; /* %, oldest first; < 0: no sample */
	size_t nhist;
};

/* a job of gpuctld's queue that has not ended */
struct top_job {
	long long id;
	char user[33];
	char state[16];             /* "queued", "running", ... */
	long long gpus;             /* asked for */
	char where[96];             /* its GPUs ("0,1") or why it waits, sanitized */
	char name[64];              /* sanitized; "" none */
};

struct top_cpu_seen {
	uint32_t pid;
	unsigned long long ticks;   /* utime + stime */
};

struct top_data {
	gc_ctx *ctx;                /* borrowed */
	gc_snapshot *snap;
	size_t ngpus;
	struct top_gpu *hist;       /* [ngpus] */
	struct top_holder *holder;  /* [ngpus] */
	struct top_lease *leases;   /* the leases held, by their first GPU */
	size_t nleases;
	struct lease_waiter *waiters;
	size_t nwaiters;
	struct top_proc *procs;
	size_t nprocs, proc_cap;
	struct top_cpu_seen *seen, *seen_next;
	size_t nseen, seen_cap;
	int64_t last_ms;            /* monotonic time of the previous sample */
	const char *state_dir;      /* NULL: as gpuctl run finds it */
	bool queue_up;              /* gpuctld answered on its queue socket */
	struct top_job *jobs;
	size_t njobs;
	char err[256];              /* what the last sample could not do ("" when all went well) */
};

int top_data_init(struct top_data *d, gc_ctx *ctx, const char *state_dir);
void top_data_free(struct top_data *d);
/* One sample: GPUs, processes, /proc, leases, gpuctld's queue. GC_OK, or a sampling error (GPUs) with d->err. */
int top_data_sample(struct top_data *d);

/* How the process table is shown. */
struct top_view {
	enum top_col sort;
	bool reverse;               /* largest first for the numeric columns when false */
	bool tree;                  /* processes under a row for their job (lease), by parent within it */
	char filter[64];            /* text in the user or command; "" none */
};

/*
 * The rows to show (rows[], the caller's, at least top_rows_max(d)): indices
 * into d->procs, filtered, then sorted. In the tree, job rows too (see
 * top_row_kind): one per lease, ordered by where its first process comes in
 * the sort (a lease none of whose processes is listed after those, by when it
 * started), then "(no lease)" for the processes that are part of no lease's
 * job; under each, its processes in the sort's order, each child right after
 * its parent when that is listed in the same job (depth set). With a filter,
 * a job's row stays while one of its processes is listed, and a job whose
 * user, name or command matches keeps all its processes; "(no lease)" only
 * shows with a process under it. Returns how many.
 */
size_t top_rows(struct top_data *d, const struct top_view *v, size_t *rows);
/* how many rows top_rows may return */
size_t top_rows_max(const struct top_data *d);
/* what a row of top_rows is: d->procs[row]; the job row of d->leases[row - d->nprocs]; "(no lease)" */
enum top_row_kind { TOP_ROW_PROC, TOP_ROW_JOB, TOP_ROW_NOLEASE };
enum top_row_kind top_row_kind(const struct top_data *d, size_t row);
/* the same lease (its job, holder, owner and start), as seen in two samples */
bool top_lease_same(const struct lease_info *a, const struct lease_info *b);
/* the column's name in the header and in top.conf ("PID", "GPU-MEM", ...) */
const char *top_col_name(enum top_col c);
/* a column by its name (case-insensitive); -1 when none */
int top_col_parse(const char *s);

/*
 * ~/.config/gpuctl/top.conf: "sort=COLUMN", "reverse=0|1", "tree=0|1", one a
 * line; what is not one of these (comments, unknown keys or columns) is
 * skipped and leaves v as it was.
 */
void top_conf_read(struct top_view *v, FILE *f);
void top_conf_write(const struct top_view *v, FILE *f);

/*
 * The n samples of v (oldest first; < 0 where none) in at most w cells for a
 * sparkline, oldest first in out[]: each cell the largest known sample of
 * its run of ceil(n / w) consecutive ones, counted from the newest (< 0 when
 * it has none). Returns the cells filled (n when n <= w).
 */
size_t top_spark(const float *v, size_t n, size_t w, float *out);

/* 80-column abbreviation of a GPU's name: "NVIDIA H100 80GB HBM3" -> "H100 80GB HBM3" */
void top_short_name(const char *name, char *buf, size_t len, size_t max);

#endif
