/*
 * explain.h — read a training or serving log and name the known failures
 * in it, with the numbers they carry, the likely cause and the fix.
 *
 * Signatures are data (the JSON files of data/signatures/); the scan is linear in the
 * input: one pass of Vectorscan (Hyperscan's portable fork) over whole blocks
 * finds every signature's trigger at once, and only the lines holding one
 * are cleaned (ANSI codes) and matched, each against the signatures whose
 * triggers it holds (a line with escape codes is scanned again once they are
 * gone: they may split a trigger). A carriage
 * return ends a piece of a line as a newline does (tqdm's progress bars are
 * one line of thousands of \r-separated pieces, often with the error glued
 * to the last), and a piece longer than the matcher's window is matched in
 * overlapping windows to its end, so no line is too long to be scanned.
 */
#ifndef GPUCTL_LIB_EXPLAIN_H
#define GPUCTL_LIB_EXPLAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct explain_db;

/*
 * Where a log line came from, read off its start (explain-origin.c): the
 * rank whose output it is (torch's "[rank3]:", torchrun's "[default3]:",
 * srun -l's "3: ", OpenMPI's "[1,3]<stderr>:", else a "[Rank 3]" in its
 * text; -1: not said) and the time it carries, behind any Kubernetes,
 * journald, syslog or host prefix. Times compare only within one kind.
 */
enum explain_time_kind {
	EXPLAIN_TIME_NONE,
	EXPLAIN_TIME_CIVIL,   /* a date and a time: seconds since 1970 (ISO 8601, Python logging, dmesg -T) */
	EXPLAIN_TIME_GLOG,    /* glog's and c10's month, day and time, no year */
	EXPLAIN_TIME_SYSLOG,  /* syslog's and journald's month, day and time, no year */
	EXPLAIN_TIME_BOOT,    /* the kernel's seconds since boot */
};
struct explain_origin {
	int rank;
	enum explain_time_kind time_kind;
	double time;          /* seconds, on its kind's clock */
};
void explain_origin(const char *line, struct explain_origin *o);

#define EXPLAIN_MAX_VALUES 12

struct explain_value {
	char name[32];
	bool is_num;
	double num;
	char str[96];
};

struct explain_finding {
	char id[48];
	char title[160];
	char key[48];             /* distinguishes findings of one id: an Xid's code and GPU, an OOM's GPU */
	unsigned count;           /* matching lines (a line counts once) */
	uint64_t first_line;      /* 1-based */
	uint64_t last_line;       /* the last line counted */
	char line[400];           /* the first matching line, cleaned, truncated */
	size_t nvalues;
	struct explain_value values[EXPLAIN_MAX_VALUES];
	char cause[600];
	char fix[600];
	int rank;                 /* the rank its first line came from (explain_origin); -1 not said */
	uint64_t ranks[4];        /* every rank 0-255 its lines came from: bit r of ranks[r / 64] */
	bool ranks_over;          /* ... and one above 255 */
	enum explain_time_kind time_kind; /* the time its first line carries */
	double time;
};

struct explain_result {
	struct explain_finding *findings;  /* owned; in order of first appearance */
	size_t n;
	/*
	 * The root cause, findings[root] (0 when n is 0): the first hardware
	 * Xid (one whose table entry needs a reset: the GPU's fault explains
	 * the rest); else the first finding that is not a consequence of
	 * another rank's failure (an NCCL timeout, NCCL's word that a remote
	 * peer went away): the one from the rank torchrun's "Root Cause (first
	 * observed failure)" names, else the earliest by the times the lines
	 * carry (when the first such finding's line has one; times of one kind
	 * only), else the first in the file; else the first.
	 */
	size_t root;
	int torchrun_rank;            /* the rank torchrun's Root Cause block names; -1 none */
	uint64_t lines;               /* lines read */
	uint64_t bytes;
	bool binary;                  /* NUL bytes seen */
};

/*
 * A finding's failure class, the name a retry policy and a metric use:
 * "oom-" and the verdict for an out-of-memory finding that has one
 * (oom-fragmentation, oom-other-process, oom-transient, oom-too-big, oom-size-bug,
 * oom-host-memory), nccl-timeout (NCCL's watchdog), gpu-lost (fallen off
 * the bus), else the signature's id (xid, nccl-system-error, ...).
 */
const char *explain_class(const struct explain_finding *f, char *buf, size_t len);

/* Load every *.json of dir. 0, or a GC_E* with a message in err. */
int explain_db_load(struct explain_db **out, const char *dir, char *err, size_t errlen);
void explain_db_free(struct explain_db *db);
size_t explain_db_count(const struct explain_db *db);
/* Whether its scans use Vectorscan (libhs.so.5 loaded and this CPU able to run it): else every line is tried. */
bool explain_db_fast(const struct explain_db *db);
/* What Xid `code` means, from xid.json; NULL unknown. */
const char *explain_xid_meaning(const struct explain_db *db, int code);

/* Scan fd to its end. 0, or GC_EIO (message in err). */
int explain_scan_fd(const struct explain_db *db, int fd, struct explain_result *r, char *err, size_t errlen);
/* Scan a buffer (for tests and the fuzz target). */
int explain_scan_buf(const struct explain_db *db, const char *buf, size_t len, struct explain_result *r);
/*
 * The same, without the scanner: every line tried against every signature,
 * as on a CPU Vectorscan cannot run on (the tests' reference: both must find
 * the same).
 */
int explain_scan_buf_slow(const struct explain_db *db, const char *buf, size_t len, struct explain_result *r);
void explain_result_free(struct explain_result *r);

/*
 * The result as `gpuctl explain --json` prints it (schema gpuctl.explain/1),
 * source naming the input; a string the caller frees, or NULL when out of
 * memory (explain-json.c).
 */
char *explain_result_json(const char *source, const struct explain_result *r);
/* a number explain shows without decimals */
bool explain_whole(double x);
/* "name=value" as explain shows it: numbers to two decimals (MiB to the hundredth, as PyTorch
 * prints them), whole ones without any */
void explain_value_text(const struct explain_value *v, char *buf, size_t len);

/*
 * A failed job's few findings (explain-summary.c): the first max of r as
 * lines told after its output ("gpuctl: the job failed (HOW); ...", each
 * finding's class, line, numbers, cause and fix), a string the caller
 * frees (NULL: out of memory); and as the JSON array the queue keeps with
 * the job ([{class, id, title, numbers, cause, fix}], NULL: out of memory).
 */
char *explain_summary_text(const struct explain_result *r, const char *how, size_t max);
struct json_t;
struct json_t *explain_summary_json(const struct explain_result *r, size_t max);
/* the ranks f came from as a list ("0,2,4-7"; "" none said), and as the text and summaries say it after the
 * title (" (rank 3)", " (ranks 0-7; first rank 3)", "" none said) */
void explain_ranks_text(const struct explain_finding *f, char *buf, size_t len);
void explain_ranks_said(const struct explain_finding *f, char *buf, size_t len);
/* What an out-of-memory finding needed on one GPU, MiB: what PyTorch held plus what it asked for; 0 unknown */
double explain_need_mib(const struct explain_finding *f);


/* Remove ANSI escape sequences and CRs from s[len] into out (outlen >= len + 1). */
size_t explain_clean_line(const char *s, size_t len, char *out);

#endif
