/*
 * store.c — the job queue in SQLite (see store.h).
 *
 * WAL mode with synchronous=FULL: a transition that returned is on disk,
 * so a daemon killed with SIGKILL (or a machine that loses power) comes
 * back with every job it acknowledged. Migrations are an append-only list;
 * each runs in its own transaction together with its user_version bump.
 * The daemon groups the transitions of one round (the jobs that ended, the
 * jobs dispatch starts) in one transaction: one fsync for all of them.
 */
#include "store.h"
#include "util/errbuf.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* the statements, prepared once and reset after each use */
enum stmt_key {
	ST_SUBMIT, ST_GET, ST_LIST_ALL, ST_LIST_LIVE, ST_LIST_STATE, ST_LIST_USER_ALL, ST_LIST_USER_LIVE, ST_HEAD, ST_LIVE, ST_WAITING, ST_RUNNING,
	ST_START, ST_FINISH, ST_CANCEL, ST_REQUEUE, ST_BEGIN, ST_COMMIT, ST_ROLLBACK, ST_ENDED, ST_COUNT_QUEUED, ST_FORGET, ST_STATE, ST_USAGE_ADD, ST_USAGE_SINCE,
	ST_LOAD_LIVE, ST_LOAD_RUNTIMES, ST_DIAG_SET, ST_DIAG_GET, ST_DIAG_CLEAR, ST_SET_REQUEST, ST_END_OF,
	ST_GRANT_ADD, ST_GRANT_DEL, ST_GRANT_ALL, ST_USAGE_LAST, ST_SYNC_NORMAL, ST_SYNC_FULL, ST_COUNTS, ST_OLDEST,
	NSTMT
};

struct store {
	sqlite3 *db;
	sqlite3_stmt *st[NSTMT];
};

/* statement k (always the same sql for a k), prepared on first use; NULL on error */
static sqlite3_stmt *stmt(struct store *s, enum stmt_key k, const char *sql)
{
	if (!s->st[k] && sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s->st[k], NULL) != SQLITE_OK)
		return NULL;
	return s->st[k];
}

/* after the last step: no read left open, no binding left pointing at the caller's memory */
static void done(sqlite3_stmt *st)
{
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
}

/* BEGIN IMMEDIATE, COMMIT, ROLLBACK: 0, or -1 */
static int run(struct store *s, enum stmt_key k, const char *sql)
{
	sqlite3_stmt *st = stmt(s, k, sql);
	if (!st)
		return -1;
	int rc = sqlite3_step(st);
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

static const char *const migrations[] = {
	/* 1: the jobs */
	"CREATE TABLE jobs ("
	" id INTEGER PRIMARY KEY AUTOINCREMENT,"
	" uid INTEGER NOT NULL, gid INTEGER NOT NULL, user TEXT NOT NULL,"
	" name TEXT NOT NULL DEFAULT '', priority INTEGER NOT NULL DEFAULT 0,"
	" ngpus INTEGER NOT NULL, request TEXT NOT NULL DEFAULT '{}',"
	" argv TEXT NOT NULL, env TEXT NOT NULL, cwd TEXT NOT NULL, after TEXT,"
	" state TEXT NOT NULL CHECK (state IN ('queued','running','done','failed','cancelled','lost')),"
	" submitted_ms INTEGER NOT NULL, started_ms INTEGER NOT NULL DEFAULT 0, ended_ms INTEGER NOT NULL DEFAULT 0,"
	" pid INTEGER NOT NULL DEFAULT 0, pid_start INTEGER NOT NULL DEFAULT 0, gpus TEXT NOT NULL DEFAULT '',"
	" exit_code INTEGER NOT NULL DEFAULT 0, reason TEXT NOT NULL DEFAULT '',"
	" starts INTEGER NOT NULL DEFAULT 0);"
	"CREATE INDEX jobs_state ON jobs(state, priority, id);",
	/* 2: the queued jobs in dispatch order (priority first, then FIFO) straight from the index */
	"DROP INDEX jobs_state;"
	"CREATE INDEX jobs_order ON jobs(state, priority DESC, id);"
	"CREATE INDEX jobs_waiting ON jobs(id) WHERE state = 'queued' AND after IS NOT NULL;",
	/*
	 * 3: argv and env last. SQLite keeps a row's columns in order and puts what does
	 * not fit in its page in a chain of overflow pages: a column after a 200 KB command
	 * line (state, times, GPUs) was read by walking that chain, so every dispatch round
	 * and every --after check paid for every command line. The ids go on from where they
	 * were (sqlite_sequence), so a forgotten job's id is never handed out again.
	 */
	"CREATE TABLE jobs_new ("
	" id INTEGER PRIMARY KEY AUTOINCREMENT,"
	" uid INTEGER NOT NULL, gid INTEGER NOT NULL, user TEXT NOT NULL,"
	" name TEXT NOT NULL DEFAULT '', priority INTEGER NOT NULL DEFAULT 0,"
	" ngpus INTEGER NOT NULL, request TEXT NOT NULL DEFAULT '{}',"
	" cwd TEXT NOT NULL, after TEXT,"
	" state TEXT NOT NULL CHECK (state IN ('queued','running','done','failed','cancelled','lost')),"
	" submitted_ms INTEGER NOT NULL, started_ms INTEGER NOT NULL DEFAULT 0, ended_ms INTEGER NOT NULL DEFAULT 0,"
	" pid INTEGER NOT NULL DEFAULT 0, pid_start INTEGER NOT NULL DEFAULT 0, gpus TEXT NOT NULL DEFAULT '',"
	" exit_code INTEGER NOT NULL DEFAULT 0, reason TEXT NOT NULL DEFAULT '',"
	" starts INTEGER NOT NULL DEFAULT 0,"
	" argv TEXT NOT NULL, env TEXT NOT NULL);"
	"INSERT INTO jobs_new (id, uid, gid, user, name, priority, ngpus, request, cwd, after, state, submitted_ms,"
	" started_ms, ended_ms, pid, pid_start, gpus, exit_code, reason, starts, argv, env)"
	" SELECT id, uid, gid, user, name, priority, ngpus, request, cwd, after, state, submitted_ms,"
	" started_ms, ended_ms, pid, pid_start, gpus, exit_code, reason, starts, argv, env FROM jobs;"
	"DELETE FROM sqlite_sequence WHERE name = 'jobs_new';"
	"INSERT INTO sqlite_sequence (name, seq) SELECT 'jobs_new', seq FROM sqlite_sequence WHERE name = 'jobs';"
	"DROP TABLE jobs;"
	"ALTER TABLE jobs_new RENAME TO jobs;"
	"CREATE INDEX jobs_order ON jobs(state, priority DESC, id);"
	"CREATE INDEX jobs_waiting ON jobs(id) WHERE state = 'queued' AND after IS NOT NULL;",
	/* 4: GPU time, one row per lease of one GPU once it ended (gpuctl usage, docs/policy.md) */
	"CREATE TABLE usage ("
	" id INTEGER PRIMARY KEY, uid INTEGER NOT NULL, user TEXT NOT NULL, gpu TEXT NOT NULL,"
	" gpu_index INTEGER NOT NULL, name TEXT NOT NULL DEFAULT '',"
	" start_ms INTEGER NOT NULL, end_ms INTEGER NOT NULL, idle_ms INTEGER NOT NULL DEFAULT 0);"
	"CREATE INDEX usage_end ON usage(end_ms);",
	/* 5: why a failed job failed, as gpuctl explain reads its log (issue 24); gone with its job */
	"CREATE TABLE diagnoses (job INTEGER PRIMARY KEY, json TEXT NOT NULL);"
	"CREATE TRIGGER jobs_diagnosis_gone AFTER DELETE ON jobs BEGIN DELETE FROM diagnoses WHERE job = old.id; END;",
	/* 6: authority mode's grants (grants.c), each durable before its holder hears of it, gone once
	 * its usage is recorded */
	"CREATE TABLE grants (id INTEGER PRIMARY KEY, uid INTEGER NOT NULL, gid INTEGER NOT NULL,"
	" gpus TEXT NOT NULL, port INTEGER NOT NULL DEFAULT 0, since_ms INTEGER NOT NULL, job INTEGER NOT NULL DEFAULT 0,"
	" ino INTEGER NOT NULL DEFAULT 0, info TEXT NOT NULL);",
	/*
	 * 7: a hundred thousand pending jobs (issue 35). How many jobs each user has in each
	 * state, kept by triggers beside the rows, so that a submit's per-user limit and the
	 * metrics read a count instead of counting; and the live jobs in id order straight from
	 * an index (gpuctl queue's pages, /api/v1/jobs, the oldest queued job), not sorted.
	 */
	"CREATE TABLE job_counts (uid INTEGER NOT NULL, state TEXT NOT NULL, n INTEGER NOT NULL,"
	" PRIMARY KEY (uid, state)) WITHOUT ROWID;"
	"INSERT INTO job_counts (uid, state, n) SELECT uid, state, COUNT(*) FROM jobs GROUP BY uid, state;"
	"CREATE TRIGGER jobs_count_in AFTER INSERT ON jobs BEGIN"
	" INSERT INTO job_counts (uid, state, n) VALUES (new.uid, new.state, 1)"
	" ON CONFLICT (uid, state) DO UPDATE SET n = n + 1; END;"
	"CREATE TRIGGER jobs_count_out AFTER DELETE ON jobs BEGIN"
	" UPDATE job_counts SET n = n - 1 WHERE uid = old.uid AND state = old.state; END;"
	"CREATE TRIGGER jobs_count_move AFTER UPDATE OF state ON jobs WHEN old.state != new.state BEGIN"
	" UPDATE job_counts SET n = n - 1 WHERE uid = old.uid AND state = old.state;"
	" INSERT INTO job_counts (uid, state, n) VALUES (new.uid, new.state, 1)"
	" ON CONFLICT (uid, state) DO UPDATE SET n = n + 1; END;"
	"CREATE INDEX jobs_live ON jobs(id) WHERE state IN ('queued','running');",
	/* 8: gpuctl queue --state and --user (and a user's own list) from an index, in id order */
	"CREATE INDEX jobs_state_id ON jobs(state, id);"
	"CREATE INDEX jobs_user ON jobs(uid, id);",
};
#define SCHEMA_VERSION ((int)(sizeof migrations / sizeof migrations[0]))

static const char *const state_names[] = {"queued", "running", "done", "failed", "cancelled", "lost"};

const char *store_state_name(enum store_state s)
{
	return (unsigned)s < sizeof state_names / sizeof state_names[0] ? state_names[s] : NULL;
}

bool store_state_final(enum store_state s)
{
	return s == STORE_DONE || s == STORE_FAILED || s == STORE_CANCELLED || s == STORE_LOST;
}

static enum store_state state_of(const char *name)
{
	for (size_t i = 0; i < sizeof state_names / sizeof state_names[0]; i++)
		if (name && strcmp(name, state_names[i]) == 0)
			return (enum store_state)i;
	return STORE_LOST; /* the CHECK constraint makes this unreachable */
}

const char *store_errmsg(struct store *s)
{
	return s && s->db ? sqlite3_errmsg(s->db) : "no database";
}

int store_schema_version(struct store *s)
{
	sqlite3_stmt *st;
	int v = -1;
	if (sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return v;
}

static int exec(struct store *s, const char *sql)
{
	return sqlite3_exec(s->db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
}

static int migrate(struct store *s, char *err, size_t errlen)
{
	int v = store_schema_version(s);
	if (v < 0) {
		errbuf_set(err, errlen, "cannot read the schema version: %s", store_errmsg(s));
		return -1;
	}
	if (v > SCHEMA_VERSION) {
		errbuf_set(err, errlen, "the queue database is at schema version %d, newer than this gpuctld "
			   "knows (%d): upgrade gpuctld", v, SCHEMA_VERSION);
		return -1;
	}
	while (v < SCHEMA_VERSION) {
		/* read the version again inside the write lock: another process may have migrated */
		if (exec(s, "BEGIN IMMEDIATE") < 0 || (v = store_schema_version(s)) < 0) {
			errbuf_set(err, errlen, "cannot lock the queue database to migrate it: %s", store_errmsg(s));
			exec(s, "ROLLBACK");
			return -1;
		}
		if (v >= SCHEMA_VERSION) {
			exec(s, "COMMIT");
			break;
		}
		char bump[48];
		snprintf(bump, sizeof bump, "PRAGMA user_version = %d", v + 1);
		if (exec(s, migrations[v]) < 0 || exec(s, bump) < 0 || exec(s, "COMMIT") < 0) {
			errbuf_set(err, errlen, "cannot migrate the queue database to version %d: %s", v + 1,
				   store_errmsg(s));
			exec(s, "ROLLBACK");
			return -1;
		}
		v++;
	}
	return 0;
}

int store_open(struct store **out, const char *path, char *err, size_t errlen)
{
	*out = NULL;
	struct store *s = calloc(1, sizeof *s);
	if (!s) {
		errbuf_set(err, errlen, "out of memory");
		return -1;
	}
	/* no allocation statistics: a global mutex less on every allocation (only before SQLite
	 * initialises, which the first open does; the daemon opens one store, before its threads) */
	(void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
	int rc = sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		errbuf_set(err, errlen, "cannot open the queue database '%s': %s", path,
			   s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
		store_close(s);
		return -1;
	}
	/* the queue names users and commands: only root reads it */
	(void)chmod(path, 0600);
	sqlite3_busy_timeout(s->db, 5000);
	/* switching a new file to WAL while another process does the same reports "locked" at
	 * once, without the busy handler: try again for up to 5 s */
	int wal = -1;
	for (int i = 0; i < 100 && (wal = exec(s, "PRAGMA journal_mode=WAL")) < 0; i++) {
		int e = sqlite3_errcode(s->db);
		if (e != SQLITE_BUSY && e != SQLITE_LOCKED)
			break;
		nanosleep(&(struct timespec){.tv_nsec = 50000000}, NULL);
	}
	if (wal < 0 || exec(s, "PRAGMA synchronous=FULL") < 0 ||
	    exec(s, "PRAGMA foreign_keys=ON") < 0) {
		errbuf_set(err, errlen, "cannot set up the queue database '%s': %s", path, store_errmsg(s));
		store_close(s);
		return -1;
	}
	if (migrate(s, err, errlen) < 0) {
		store_close(s);
		return -1;
	}
	*out = s;
	return 0;
}

void store_close(struct store *s)
{
	if (!s)
		return;
	for (int k = 0; k < NSTMT; k++)
		sqlite3_finalize(s->st[k]);
	sqlite3_close(s->db);
	free(s);
}

int store_submit(struct store *s, struct store_job *j, char *err, size_t errlen)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	j->submitted_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	j->state = STORE_QUEUED;
	const char *sql = "INSERT INTO jobs (uid, gid, user, name, priority, ngpus, request, argv, env, cwd, after,"
			  " state, submitted_ms) VALUES (?,?,?,?,?,?,?,?,?,?,?,'queued',?)";
	sqlite3_stmt *st = stmt(s, ST_SUBMIT, sql);
	if (!st) {
		errbuf_set(err, errlen, "cannot queue the job: %s", store_errmsg(s));
		return -1;
	}
	sqlite3_bind_int64(st, 1, j->uid);
	sqlite3_bind_int64(st, 2, j->gid);
	sqlite3_bind_text(st, 3, j->user, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, j->name, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 5, j->priority);
	sqlite3_bind_int(st, 6, (int)j->ngpus);
	sqlite3_bind_text(st, 7, j->request ? j->request : "{}", -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 8, j->argv, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 9, j->env, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 10, j->cwd, -1, SQLITE_STATIC);
	if (j->after)
		sqlite3_bind_text(st, 11, j->after, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, 11);
	sqlite3_bind_int64(st, 12, j->submitted_ms);
	int rc = sqlite3_step(st);
	done(st);
	if (rc != SQLITE_DONE) {
		errbuf_set(err, errlen, "cannot queue the job: %s", store_errmsg(s));
		return -1;
	}
	j->id = sqlite3_last_insert_rowid(s->db);
	return 0;
}

static char *dup_col(sqlite3_stmt *st, int c)
{
	const unsigned char *t = sqlite3_column_text(st, c);
	return t ? strdup((const char *)t) : NULL;
}

/* as snprintf "%s" would (cut to len - 1 bytes), without its formatting: every listed row has two */
static void copy_col(sqlite3_stmt *st, int c, char *buf, size_t len)
{
	const unsigned char *t = sqlite3_column_text(st, c);
	size_t n = t ? strnlen((const char *)t, len - 1) : 0;
	memcpy(buf, t ? (const char *)t : "", n);
	buf[n] = '\0';
}

#define HEAD "id, uid, gid, user, name, priority, ngpus, request" /* row_head reads these */
#define COLUMNS_WITH(env) HEAD ", argv, " env ", cwd, after, state," \
		" submitted_ms, started_ms, ended_ms, pid, pid_start, gpus, exit_code, reason, starts"
#define COLUMNS COLUMNS_WITH("env")
#define LISTED COLUMNS_WITH("'[]'")  /* a listing shows no environment: not read */

/* the columns of HEAD, which COLUMNS and BRIEF begin with */
static void row_head(sqlite3_stmt *st, struct store_job *j)
{
	memset(j, 0, sizeof *j);
	j->id = sqlite3_column_int64(st, 0);
	j->uid = (uid_t)sqlite3_column_int64(st, 1);
	j->gid = (gid_t)sqlite3_column_int64(st, 2);
	copy_col(st, 3, j->user, sizeof j->user);
	copy_col(st, 4, j->name, sizeof j->name);
	j->priority = sqlite3_column_int(st, 5);
	j->ngpus = (unsigned)sqlite3_column_int(st, 6);
	j->request = dup_col(st, 7);
}

/* a row of COLUMNS; -1 when out of memory */
static int row(sqlite3_stmt *st, struct store_job *j)
{
	row_head(st, j);
	j->argv = dup_col(st, 8);
	j->env = dup_col(st, 9);
	j->cwd = dup_col(st, 10);
	j->after = dup_col(st, 11);
	j->state = state_of((const char *)sqlite3_column_text(st, 12));
	j->submitted_ms = sqlite3_column_int64(st, 13);
	j->started_ms = sqlite3_column_int64(st, 14);
	j->ended_ms = sqlite3_column_int64(st, 15);
	j->pid = sqlite3_column_int(st, 16);
	j->pid_start = (uint64_t)sqlite3_column_int64(st, 17);
	copy_col(st, 18, j->gpus, sizeof j->gpus);
	j->exit_code = sqlite3_column_int(st, 19);
	copy_col(st, 20, j->reason, sizeof j->reason);
	j->starts = (unsigned)sqlite3_column_int(st, 21);
	if (!j->request || !j->argv || !j->env || !j->cwd) {
		store_job_release(j);
		return -1;
	}
	return 0;
}

void store_job_release(struct store_job *j)
{
	free(j->request);
	free(j->argv);
	free(j->env);
	free(j->cwd);
	free(j->after);
	j->request = j->argv = j->env = j->cwd = j->after = NULL;
}

int store_get(struct store *s, int64_t id, struct store_job *out)
{
	sqlite3_stmt *st = stmt(s, ST_GET, "SELECT " COLUMNS " FROM jobs WHERE id = ?");
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, id);
	int rc = sqlite3_step(st);
	int found = rc == SQLITE_ROW ? (row(st, out) == 0 ? 1 : -1) : rc == SQLITE_DONE ? 0 : -1;
	done(st);
	return found;
}

int64_t store_count_queued(struct store *s, uid_t uid)
{
	/* the count the triggers keep (migration 7), not a count of the rows */
	sqlite3_stmt *st = stmt(s, ST_COUNT_QUEUED, "SELECT n FROM job_counts WHERE uid = ? AND state = 'queued'");
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, uid);
	int rc = sqlite3_step(st);
	int64_t n = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : rc == SQLITE_DONE ? 0 : -1;
	done(st);
	return n;
}

int store_counts(struct store *s, int64_t *queued, int64_t *running, int64_t *oldest_ms)
{
	*queued = *running = *oldest_ms = 0;
	sqlite3_stmt *st = stmt(s, ST_COUNTS, "SELECT state, SUM(n) FROM job_counts WHERE state IN ('queued','running')"
					      " GROUP BY state");
	if (!st)
		return -1;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *state = (const char *)sqlite3_column_text(st, 0);
		*(state && strcmp(state, "queued") == 0 ? queued : running) = sqlite3_column_int64(st, 1);
	}
	done(st);
	if (rc != SQLITE_DONE)
		return -1;
	/* the oldest queued job is the first queued one by id in the live index (a requeued job keeps
	 * its id and submission time); the running ones before it are few (one per GPU at most) */
	st = stmt(s, ST_OLDEST, "SELECT submitted_ms FROM jobs INDEXED BY jobs_live WHERE state IN ('queued','running')"
				" AND state = 'queued' ORDER BY id LIMIT 1");
	if (!st)
		return -1;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*oldest_ms = sqlite3_column_int64(st, 0);
	done(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -1;
}

int store_plans(struct store *s, void (*fn)(void *arg, const char *sql, const char *plan), void *arg)
{
	for (int k = 0; k < NSTMT; k++) {
		const char *sql = s->st[k] ? sqlite3_sql(s->st[k]) : NULL;
		if (!sql || strncmp(sql, "BEGIN", 5) == 0 || strncmp(sql, "COMMIT", 6) == 0 ||
		    strncmp(sql, "ROLLBACK", 8) == 0 || strncmp(sql, "PRAGMA", 6) == 0)
			continue;
		char *q = sqlite3_mprintf("EXPLAIN QUERY PLAN %s", sql);
		sqlite3_stmt *e = NULL;
		int rc = q ? sqlite3_prepare_v2(s->db, q, -1, &e, NULL) : SQLITE_NOMEM;
		sqlite3_free(q);
		if (rc != SQLITE_OK)
			return -1;
		/* the plan's steps, one per line, "DETAIL" as sqlite3's .eqp prints them */
		char plan[2048] = "";
		size_t len = 0;
		while ((rc = sqlite3_step(e)) == SQLITE_ROW && len < sizeof plan - 2) {
			const char *d = (const char *)sqlite3_column_text(e, 3);
			int w = snprintf(plan + len, sizeof plan - len, "%s\n", d ? d : "");
			len += w > 0 ? (size_t)w : 0;
		}
		sqlite3_finalize(e);
		if (rc != SQLITE_DONE && rc != SQLITE_ROW)
			return -1;
		fn(arg, sql, plan);
	}
	return 0;
}

void store_list_free(struct store_job *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		store_job_release(&v[i]);
	free(v);
}

/* every row of st (reset here) through fill into *out[*n], or until the rows' argv pass `budget`
 * bytes (0: no budget): 0, or -1 with nothing kept */
static int collect_upto(sqlite3_stmt *st, int (*fill)(sqlite3_stmt *st, struct store_job *j), size_t budget,
			struct store_job **out, size_t *n)
{
	size_t cap = 0, used = 0;
	int rc;
	while ((!budget || used < budget) && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			struct store_job *p = realloc(*out, cap * sizeof *p);
			if (!p)
				break;
			*out = p;
		}
		if (*n == cap || fill(st, &(*out)[*n]) < 0)
			break;
		used += (*out)[*n].argv ? strlen((*out)[*n].argv) : 0;
		(*n)++;
	}
	done(st);
	if (budget && used >= budget)
		return 0; /* stopped early: the rest is another page */
	if (rc != SQLITE_DONE) {
		store_list_free(*out, *n);
		*out = NULL;
		*n = 0;
		return -1;
	}
	return 0;
}

static int collect(sqlite3_stmt *st, int (*fill)(sqlite3_stmt *st, struct store_job *j), struct store_job **out, size_t *n)
{
	return collect_upto(st, fill, 0, out, n);
}

int store_list(struct store *s, bool all, bool mine, uid_t uid, int state, int64_t from, size_t limit, size_t budget,
	       struct store_job **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	/* ?1 the state, ?2 mine, ?3 the uid, ?4 after this id, ?5 at most this many; each from the index
	 * that hands its rows out in id order, so that a page costs the same at any depth (SQLite would
	 * rather take jobs_order and sort) */
	static const char every[] = "SELECT " LISTED " FROM jobs WHERE (?2 = 0 OR uid = ?3) AND id > ?4 ORDER BY id LIMIT ?5";
	static const char live[] = "SELECT " LISTED " FROM jobs INDEXED BY jobs_live WHERE state IN ('queued','running')"
				   " AND (?2 = 0 OR uid = ?3) AND id > ?4 ORDER BY id LIMIT ?5";
	static const char in_state[] = "SELECT " LISTED " FROM jobs INDEXED BY jobs_state_id WHERE state = ?1"
				       " AND (?2 = 0 OR uid = ?3) AND id > ?4 ORDER BY id LIMIT ?5";
	static const char user_all[] = "SELECT " LISTED " FROM jobs INDEXED BY jobs_user WHERE uid = ?3 AND ?2 = 1"
				       " AND id > ?4 ORDER BY id LIMIT ?5";
	static const char user_live[] = "SELECT " LISTED " FROM jobs INDEXED BY jobs_user WHERE uid = ?3 AND ?2 = 1"
					" AND state IN ('queued','running') AND id > ?4 ORDER BY id LIMIT ?5";
	const char *sn = store_state_name((enum store_state)state);
	sqlite3_stmt *st = sn	  ? stmt(s, ST_LIST_STATE, in_state)
			   : mine ? (all ? stmt(s, ST_LIST_USER_ALL, user_all) : stmt(s, ST_LIST_USER_LIVE, user_live))
			   : all  ? stmt(s, ST_LIST_ALL, every)
				  : stmt(s, ST_LIST_LIVE, live);
	if (!st)
		return -1;
	sqlite3_bind_text(st, 1, sn ? sn : "", -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 2, mine);
	sqlite3_bind_int64(st, 3, uid);
	sqlite3_bind_int64(st, 4, from);
	sqlite3_bind_int64(st, 5, limit ? (sqlite3_int64)limit : -1);
	return collect_upto(st, row, budget, out, n);
}

int store_state(struct store *s, int64_t id, enum store_state *out)
{
	sqlite3_stmt *st = stmt(s, ST_STATE, "SELECT state FROM jobs WHERE id = ?");
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, id);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*out = state_of((const char *)sqlite3_column_text(st, 0));
	done(st);
	return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
}

int store_end_of(struct store *s, int64_t id, int64_t *ended_ms)
{
	sqlite3_stmt *st = stmt(s, ST_END_OF, "SELECT state, ended_ms FROM jobs WHERE id = ?");
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, id);
	int rc = sqlite3_step(st), found = 0;
	if (rc == SQLITE_ROW) {
		found = store_state_final(state_of((const char *)sqlite3_column_text(st, 0))) ? 1 : 0;
		*ended_ms = sqlite3_column_int64(st, 1);
	}
	done(st);
	return rc == SQLITE_ROW ? found : rc == SQLITE_DONE ? 2 : -1;
}

int store_forget(struct store *s, int64_t to_ms)
{
	sqlite3_stmt *st = stmt(s, ST_FORGET, "DELETE FROM jobs WHERE state IN ('done','failed','cancelled','lost')"
				" AND ended_ms <= ?");
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, to_ms);
	int rc = sqlite3_step(st);
	done(st);
	return rc == SQLITE_DONE ? sqlite3_changes(s->db) : -1;
}

int store_begin(struct store *s)
{
	return run(s, ST_BEGIN, "BEGIN IMMEDIATE");
}

void store_rollback(struct store *s)
{
	if (!sqlite3_get_autocommit(s->db))
		run(s, ST_ROLLBACK, "ROLLBACK");
}

int store_sync(struct store *s, bool full)
{
	/* twice a round in authority mode: prepared once, not parsed each time */
	return full ? run(s, ST_SYNC_FULL, "PRAGMA synchronous=FULL") : run(s, ST_SYNC_NORMAL, "PRAGMA synchronous=NORMAL");
}

int store_commit(struct store *s)
{
	if (run(s, ST_COMMIT, "COMMIT") == 0)
		return 0;
	store_rollback(s);
	return -1;
}

#define BRIEF HEAD ", after, state, submitted_ms, started_ms, gpus"

/* a row of BRIEF (argv, env and cwd left NULL); -1 when out of memory */
static int brief_row(sqlite3_stmt *st, struct store_job *j)
{
	row_head(st, j);
	j->after = dup_col(st, 8);
	j->state = state_of((const char *)sqlite3_column_text(st, 9));
	j->submitted_ms = sqlite3_column_int64(st, 10);
	j->started_ms = sqlite3_column_int64(st, 11);
	copy_col(st, 12, j->gpus, sizeof j->gpus);
	if (!j->request || (sqlite3_column_type(st, 8) != SQLITE_NULL && !j->after)) {
		store_job_release(j);
		return -1;
	}
	return 0;
}

int store_brief(struct store *s, enum store_which which, size_t limit, struct store_job **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	static const char *const sql[] = {
		[STORE_HEAD] = "SELECT " BRIEF " FROM jobs WHERE state = 'queued' ORDER BY priority DESC, id LIMIT ?",
		[STORE_LIVE] = "SELECT " BRIEF " FROM jobs INDEXED BY jobs_live WHERE state IN ('queued','running')"
			       " ORDER BY id LIMIT ?",
		[STORE_WAITING] = "SELECT " BRIEF " FROM jobs INDEXED BY jobs_waiting WHERE state = 'queued'"
				  " AND after IS NOT NULL ORDER BY id LIMIT ?",
		[STORE_RUN] = "SELECT " BRIEF " FROM jobs WHERE state = 'running' LIMIT ?",
	};
	if ((unsigned)which >= sizeof sql / sizeof sql[0])
		return -1;
	sqlite3_stmt *st = stmt(s, (enum stmt_key)(ST_HEAD + which), sql[which]);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, limit > (size_t)INT64_MAX ? INT64_MAX : (sqlite3_int64)limit);
	return collect(st, brief_row, out, n);
}

/* one conditional UPDATE: 1 when a row changed, 0 when none did, -1 on error */
static int transition(struct store *s, sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);
	done(st);
	if (rc != SQLITE_DONE)
		return -1;
	return sqlite3_changes(s->db) > 0 ? 1 : 0;
}

int store_start(struct store *s, int64_t id, int pid, uint64_t pid_start, const char *gpus, int64_t now_ms)
{
	static const char sql[] = "UPDATE jobs SET state = 'running', pid = ?, pid_start = ?, gpus = ?,"
		" started_ms = ?, starts = starts + 1, reason = '' WHERE id = ? AND state = 'queued'";
	sqlite3_stmt *st = stmt(s, ST_START, sql);
	if (!st)
		return -1;
	sqlite3_bind_int(st, 1, pid);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)pid_start);
	sqlite3_bind_text(st, 3, gpus, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, now_ms);
	sqlite3_bind_int64(st, 5, id);
	return transition(s, st);
}

int store_finish(struct store *s, int64_t id, enum store_state state, int exit_code, const char *reason,
		 int64_t now_ms)
{
	if (!store_state_final(state))
		return -1;
	static const char sql[] = "UPDATE jobs SET state = ?, exit_code = ?, reason = ?, ended_ms = ?, pid = 0"
		" WHERE id = ? AND state = 'running'";
	sqlite3_stmt *st = stmt(s, ST_FINISH, sql);
	if (!st)
		return -1;
	sqlite3_bind_text(st, 1, store_state_name(state), -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 2, exit_code);
	sqlite3_bind_text(st, 3, reason ? reason : "", -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, now_ms);
	sqlite3_bind_int64(st, 5, id);
	return transition(s, st);
}

int store_cancel(struct store *s, int64_t id, const char *reason, int64_t now_ms)
{
	static const char sql[] = "UPDATE jobs SET state = 'cancelled', reason = ?, ended_ms = ?"
		" WHERE id = ? AND state = 'queued'";
	sqlite3_stmt *st = stmt(s, ST_CANCEL, sql);
	if (!st)
		return -1;
	sqlite3_bind_text(st, 1, reason ? reason : "", -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, now_ms);
	sqlite3_bind_int64(st, 3, id);
	return transition(s, st);
}

int store_requeue(struct store *s, int64_t id, const char *reason)
{
	static const char sql[] = "UPDATE jobs SET state = 'queued', pid = 0, pid_start = 0, gpus = '',"
		" reason = ? WHERE id = ? AND state = 'running'";
	sqlite3_stmt *st = stmt(s, ST_REQUEUE, sql);
	if (!st)
		return -1;
	sqlite3_bind_text(st, 1, reason ? reason : "", -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, id);
	return transition(s, st);
}

int store_ended(struct store *s, int64_t from_ms, int64_t to_ms, void (*fn)(void *arg, int64_t id), void *arg)
{
	static const char sql[] = "SELECT id FROM jobs WHERE state IN ('done','failed','cancelled','lost')"
		" AND ended_ms > ? AND ended_ms <= ? ORDER BY id";
	sqlite3_stmt *st = stmt(s, ST_ENDED, sql);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, from_ms);
	sqlite3_bind_int64(st, 2, to_ms);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		fn(arg, sqlite3_column_int64(st, 0));
	done(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

int store_usage_add(struct store *s, const struct usage_row *r)
{
	static const char sql[] = "INSERT INTO usage (uid, user, gpu, gpu_index, name, start_ms, end_ms, idle_ms)"
		" VALUES (?, ?, ?, ?, ?, ?, ?, ?)";
	sqlite3_stmt *st = stmt(s, ST_USAGE_ADD, sql);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, r->uid);
	sqlite3_bind_text(st, 2, r->user, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, r->gpu, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 4, r->gpu_index);
	sqlite3_bind_text(st, 5, r->name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 6, r->start_ms);
	sqlite3_bind_int64(st, 7, r->end_ms);
	sqlite3_bind_int64(st, 8, r->idle_ms);
	int rc = sqlite3_step(st);
	done(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

int store_usage_since(struct store *s, int64_t since_ms, void (*fn)(void *arg, const struct usage_row *r), void *arg)
{
	static const char sql[] = "SELECT uid, user, gpu, gpu_index, name, start_ms, end_ms, idle_ms FROM usage"
		" WHERE end_ms > ? ORDER BY id";
	sqlite3_stmt *st = stmt(s, ST_USAGE_SINCE, sql);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, since_ms);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct usage_row r = {.uid = (uid_t)sqlite3_column_int64(st, 0), .gpu_index = sqlite3_column_int(st, 3),
				      .start_ms = sqlite3_column_int64(st, 5), .end_ms = sqlite3_column_int64(st, 6),
				      .idle_ms = sqlite3_column_int64(st, 7)};
		snprintf(r.user, sizeof r.user, "%s", (const char *)sqlite3_column_text(st, 1));
		snprintf(r.gpu, sizeof r.gpu, "%s", (const char *)sqlite3_column_text(st, 2));
		snprintf(r.name, sizeof r.name, "%s", (const char *)sqlite3_column_text(st, 4));
		fn(arg, &r);
	}
	done(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

int store_load(struct store *s, size_t limit, void (*job)(void *arg, bool running, unsigned ngpus, int64_t started_ms),
	       void (*runtime)(void *arg, int64_t ms), void *arg)
{
	/* running ones, then the queued ones in dispatch order, from the jobs_order index */
	static const char live[] = "SELECT state, ngpus, started_ms FROM jobs WHERE state IN ('running', 'queued')"
		" ORDER BY state = 'queued', priority DESC, id LIMIT ?";
	static const char runtimes[] = "SELECT ended_ms - started_ms FROM jobs WHERE state = 'done' AND started_ms > 0"
		" AND ended_ms >= started_ms ORDER BY id DESC LIMIT ?";
	sqlite3_stmt *st = stmt(s, ST_LOAD_LIVE, live);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)limit);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *state = (const char *)sqlite3_column_text(st, 0);
		job(arg, state && strcmp(state, "running") == 0, (unsigned)sqlite3_column_int(st, 1),
		    sqlite3_column_int64(st, 2));
	}
	done(st);
	if (rc != SQLITE_DONE)
		return -1;
	if (!(st = stmt(s, ST_LOAD_RUNTIMES, runtimes)))
		return -1;
	sqlite3_bind_int64(st, 1, 50);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		runtime(arg, sqlite3_column_int64(st, 0));
	done(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

int store_set_diagnosis(struct store *s, int64_t id, const char *json)
{
	sqlite3_stmt *st = stmt(s, ST_DIAG_SET, "INSERT OR REPLACE INTO diagnoses (job, json) VALUES (?, ?)");
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_text(st, 2, json, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	done(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

int store_clear_diagnosis(struct store *s, int64_t id)
{
	sqlite3_stmt *st = stmt(s, ST_DIAG_CLEAR, "DELETE FROM diagnoses WHERE job = ?");
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, id);
	int rc = sqlite3_step(st);
	done(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

int store_set_request(struct store *s, int64_t id, const char *json)
{
	sqlite3_stmt *st = stmt(s, ST_SET_REQUEST, "UPDATE jobs SET request = ? WHERE id = ?");
	if (!st)
		return -1;
	sqlite3_bind_text(st, 1, json, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, id);
	int rc = sqlite3_step(st);
	done(st);
	return rc == SQLITE_DONE && sqlite3_changes(s->db) == 1 ? 0 : -1;
}

char *store_get_diagnosis(struct store *s, int64_t id)
{
	sqlite3_stmt *st = stmt(s, ST_DIAG_GET, "SELECT json FROM diagnoses WHERE job = ?");
	if (!st)
		return NULL;
	sqlite3_bind_int64(st, 1, id);
	char *out = NULL;
	if (sqlite3_step(st) == SQLITE_ROW) {
		const unsigned char *t = sqlite3_column_text(st, 0);
		out = t ? strdup((const char *)t) : NULL;
	}
	done(st);
	return out;
}

int store_integrity(struct store *s)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(s->db, "PRAGMA integrity_check", -1, &st, NULL) != SQLITE_OK)
		return -1;
	int ok = -1;
	if (sqlite3_step(st) == SQLITE_ROW) {
		const unsigned char *t = sqlite3_column_text(st, 0);
		ok = t && strcmp((const char *)t, "ok") == 0;
	}
	sqlite3_finalize(st);
	return ok;
}

int store_grant_add(struct store *s, const struct grant_row *g)
{
	static const char sql[] = "INSERT INTO grants (id, uid, gid, gpus, port, since_ms, job, ino, info)"
		" VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)";
	sqlite3_stmt *st = stmt(s, ST_GRANT_ADD, sql);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)g->id);
	sqlite3_bind_int64(st, 2, g->uid);
	sqlite3_bind_int64(st, 3, g->gid);
	sqlite3_bind_text(st, 4, g->gpus, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 5, g->port);
	sqlite3_bind_int64(st, 6, g->since_ms);
	sqlite3_bind_int64(st, 7, g->job);
	sqlite3_bind_int64(st, 8, (sqlite3_int64)g->ino);
	sqlite3_bind_text(st, 9, g->info, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	done(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

int store_grant_del(struct store *s, uint64_t id)
{
	sqlite3_stmt *st = stmt(s, ST_GRANT_DEL, "DELETE FROM grants WHERE id = ?");
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)id);
	int rc = sqlite3_step(st);
	done(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

int store_grant_all(struct store *s, void (*fn)(void *arg, const struct grant_row *g), void *arg)
{
	sqlite3_stmt *st = stmt(s, ST_GRANT_ALL, "SELECT id, uid, gid, gpus, port, since_ms, job, ino, info FROM grants ORDER BY id");
	if (!st)
		return -1;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *gpus = (const char *)sqlite3_column_text(st, 3), *info = (const char *)sqlite3_column_text(st, 8);
		struct grant_row g = {.id = (uint64_t)sqlite3_column_int64(st, 0), .uid = (uid_t)sqlite3_column_int64(st, 1),
				      .gid = (gid_t)sqlite3_column_int64(st, 2), .gpus = gpus ? gpus : "",
				      .port = sqlite3_column_int(st, 4), .since_ms = sqlite3_column_int64(st, 5),
				      .job = sqlite3_column_int64(st, 6), .ino = (uint64_t)sqlite3_column_int64(st, 7),
				      .info = info ? info : "{}"};
		fn(arg, &g);
	}
	done(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

int64_t store_usage_last_end(struct store *s, const char *gpu, uid_t uid)
{
	sqlite3_stmt *st = stmt(s, ST_USAGE_LAST, "SELECT MAX(end_ms) FROM usage WHERE gpu = ? AND uid = ?");
	if (!st)
		return 0;
	sqlite3_bind_text(st, 1, gpu, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, uid);
	int64_t v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
	done(st);
	return v;
}
