/*
 * store.h — the job queue's persistent state: SQLite in WAL mode, every
 * state change inside one transaction (several may share one, committed
 * together), the schema versioned (PRAGMA user_version) with migrations
 * applied in order at open.
 *
 * Transitions are conditional (UPDATE ... WHERE state = the expected one),
 * so after a crash and a restart a job is started at most once and ends at
 * most once: a second start of the same job finds it no longer queued.
 */
#ifndef GPUCTL_DAEMON_STORE_H
#define GPUCTL_DAEMON_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum store_state {
	STORE_QUEUED,      /* waiting for GPUs (and for the jobs it runs --after) */
	STORE_RUNNING,     /* started: pid and pid_start say which process */
	STORE_DONE,        /* exited 0 */
	STORE_FAILED,      /* exited non-zero, was killed, or could not be started */
	STORE_CANCELLED,   /* cancelled by its user or an admin */
	STORE_LOST,        /* running when the daemon died, gone when it came back */
};

/* "queued", "running", ...; NULL for a value out of range */
const char *store_state_name(enum store_state s);
bool store_state_final(enum store_state s);

struct store_job {
	int64_t id;
	uid_t uid;
	gid_t gid;
	char user[33];
	char name[64];
	int priority;            /* higher first */
	unsigned ngpus;
	char *request;           /* owned: the filters as JSON text ("{}" for none) */
	char *argv;              /* owned: JSON array of strings */
	char *env;               /* owned: JSON array of "NAME=value" */
	char *cwd;               /* owned */
	char *after;             /* owned: "12,13" (ids it waits for), or NULL */
	enum store_state state;
	int64_t submitted_ms, started_ms, ended_ms;   /* 0: not yet */
	int pid;                 /* the job's supervisor while running; 0 otherwise */
	uint64_t pid_start;      /* its start time (clock ticks after boot, /proc/PID/stat field 22) */
	char gpus[128];          /* "0,3" while running or after */
	int exit_code;           /* shell-style, when ended */
	char reason[160];        /* why it failed, was cancelled or lost; "" otherwise */
	unsigned starts;         /* times it was started (a lost job requeued starts again) */
};

struct store;

/* one GPU's lease, ended (migration 4's usage table) */
struct usage_row {
	uid_t uid;
	char user[33];
	char gpu[96];            /* its UUID */
	int gpu_index;           /* -1: unknown */
	char name[64];           /* the lease's --name ("" none) */
	int64_t start_ms, end_ms, idle_ms;
};
/* Record one. 0, or -1 (store_errmsg). */
int store_usage_add(struct store *s, const struct usage_row *r);
/* When the last recorded lease of uid on GPU gpu ended (ms), 0 when none. */
int64_t store_usage_last_end(struct store *s, const char *gpu, uid_t uid);
/* fn for each row that ended after since_ms, oldest first. 0, or -1. */
int store_usage_since(struct store *s, int64_t since_ms, void (*fn)(void *arg, const struct usage_row *r), void *arg);
/*
 * The queue's load, with nothing of whose it is: each running job, then each
 * queued one in dispatch order (at most limit in all), to job(); the runtimes
 * of the last 50 jobs that ended well, newest first, to runtime(). 0, or -1.
 */
/* Job id's diagnosis (a JSON array, diagnose.c), kept until the job is deleted: 0, or -1. */
int store_set_diagnosis(struct store *s, int64_t id, const char *json);
/* It, or NULL when none (free()). */
char *store_get_diagnosis(struct store *s, int64_t id);
/* Job id's diagnosis gone (it runs again, or succeeded): 0, or -1. */
int store_clear_diagnosis(struct store *s, int64_t id);
/* Job id's request (its filters as JSON) replaced: 0, or -1. */
int store_set_request(struct store *s, int64_t id, const char *json);
int store_load(struct store *s, size_t limit, void (*job)(void *arg, bool running, unsigned ngpus, int64_t started_ms),
	       void (*runtime)(void *arg, int64_t ms), void *arg);

/* one grant of authority mode (grants.c), as kept until its usage is recorded (migration 6) */
struct grant_row {
	uint64_t id;
	uid_t uid;
	gid_t gid;
	const char *gpus;        /* borrowed: UUIDs, comma-separated ("" for a port) */
	int port;                /* 0: GPUs */
	int64_t since_ms;
	int64_t job;             /* the queued job it is for; 0: none */
	uint64_t ino;            /* the holder's end of the connection (its socket's inode) */
	const char *info;        /* borrowed: the holder's record, JSON */
};
int store_grant_add(struct store *s, const struct grant_row *g);
int store_grant_del(struct store *s, uint64_t id);
/* fn for each kept grant, oldest first (its strings live during the call). 0, or -1. */
int store_grant_all(struct store *s, void (*fn)(void *arg, const struct grant_row *g), void *arg);

/* Open (creating, migrating) the database at path. 0, or -1 with err. */
int store_open(struct store **out, const char *path, char *err, size_t errlen);
void store_close(struct store *s);
/* The schema version the open database is at (after migrations). */
int store_schema_version(struct store *s);

/* Add a job (j->id and j->submitted_ms are set; state becomes queued). 0 or -1 with err. */
int store_submit(struct store *s, struct store_job *j, char *err, size_t errlen);
/* One job: 1 found (out filled; store_job_release it), 0 no such job, -1 error. */
int store_get(struct store *s, int64_t id, struct store_job *out);
/* How many of uid's jobs are queued (a kept count, not a count of rows); -1 on error. */
int64_t store_count_queued(struct store *s, uid_t uid);
/* The queued and running jobs of every user, and the submission time of the oldest queued one
 * (0: none), each read from a kept count or an index whatever the queue's depth. 0, or -1. */
int store_counts(struct store *s, int64_t *queued, int64_t *running, int64_t *oldest_ms);
/* fn for each statement prepared so far, with SQLite's plan for it (EXPLAIN QUERY PLAN, a step
 * a line): how tests hold the hot paths to their indexes. 0, or -1. */
int store_plans(struct store *s, void (*fn)(void *arg, const char *sql, const char *plan), void *arg);
/*
 * Jobs in id order: queued and running ones, and with `all` ended ones too;
 * only those in `state` when it is one (an enum store_state; -1: as `all`
 * says); only uid's when `mine`; only those after id `from`, at most `limit`
 * (0: no limit), and no more once their command lines (argv) reach `budget`
 * bytes (0: no budget; the row that passes it is the last). Each from an index
 * in id order. Their environments are not read (env is "[]"). *out is freed
 * with store_list_free.
 */
int store_list(struct store *s, bool all, bool mine, uid_t uid, int state, int64_t from, size_t limit, size_t budget,
	       struct store_job **out, size_t *n);
/* A job's state alone (its command line is not read): 1 found, 0 no such job, -1 error. */
int store_state(struct store *s, int64_t id, enum store_state *out);
/* Whether job id has ended (done, failed, cancelled, lost): 1 with *ended_ms, 0 when not (queued,
 * running), 2 when there is no such job, -1 on error. */
int store_end_of(struct store *s, int64_t id, int64_t *ended_ms);
/* Delete the jobs that ended at to_ms or before: how many, or -1. */
int store_forget(struct store *s, int64_t to_ms);
void store_list_free(struct store_job *v, size_t n);

/*
 * Brief rows (argv, env and cwd left NULL; store_get has them), at most
 * `limit`, freed with store_list_free:
 *   HEAD     queued jobs in dispatch order: priority (higher first), then id
 *   LIVE     queued and running jobs, by id
 *   WAITING  queued jobs that wait for others (--after), by id
 *   RUN      running jobs, in no order
 */
enum store_which { STORE_HEAD, STORE_LIVE, STORE_WAITING, STORE_RUN };
int store_brief(struct store *s, enum store_which which, size_t limit, struct store_job **out, size_t *n);

/*
 * One transaction around several transitions (BEGIN IMMEDIATE ... COMMIT):
 * begin and commit 0 or -1; a failed commit is rolled back.
 */
int store_begin(struct store *s);
/*
 * Whether a commit waits for the disk (FULL, the default: a job's state survives a
 * power loss) or only for the write (NORMAL: it survives a crash of gpuctld, not of
 * the machine; for grants, whose holders a power loss ends anyway). Outside a
 * transaction only. 0, or -1.
 */
int store_sync(struct store *s, bool full);
int store_commit(struct store *s);
void store_rollback(struct store *s);
void store_job_release(struct store_job *j);

/*
 * Transitions. Each returns 1 when it happened, 0 when the job was not in
 * the state it needs (someone else moved it), -1 on error.
 *   start:   queued -> running (pid, pid_start, gpus; starts + 1)
 *   finish:  running -> done/failed/lost with exit code and reason
 *   cancel:  queued -> cancelled (a running job is cancelled by signalling
 *            it; its finish then records cancelled)
 *   requeue: running -> queued (a lost job whose policy is to run again)
 */
int store_start(struct store *s, int64_t id, int pid, uint64_t pid_start, const char *gpus, int64_t now_ms);
int store_finish(struct store *s, int64_t id, enum store_state st, int exit_code, const char *reason, int64_t now_ms);
int store_cancel(struct store *s, int64_t id, const char *reason, int64_t now_ms);
int store_requeue(struct store *s, int64_t id, const char *reason);

/*
 * fn(arg, id) for each job that ended (done, failed, cancelled, lost) after
 * from_ms and at or before to_ms, in id order; fn must not use the store.
 * 0, or -1 (fn may have been called for some).
 */
int store_ended(struct store *s, int64_t from_ms, int64_t to_ms, void (*fn)(void *arg, int64_t id), void *arg);

/* PRAGMA integrity_check: 1 when the database is sound, 0 when not, -1 on error. */
int store_integrity(struct store *s);

/* The last SQLite message, for logs. */
const char *store_errmsg(struct store *s);
#endif
