/*
 * test-queue.c — the job queue's store (daemon/queue/store.c) and dispatch policy
 * (daemon/queue/dispatch.c): migrations, conditional transitions (a job starts and
 * ends at most once), persistence, survival of SIGKILL in the middle of
 * writes (no acknowledged job lost, the database sound), and the policy:
 * priorities, FIFO, filters, and a 4-GPU job not starved by a stream of
 * 1-GPU jobs on 8 GPUs.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "queue/dispatch.h"
#include "queue/store.h"
#include "tmpdir.h"

static struct store_job make(const char *name, unsigned ngpus, int priority)
{
	struct store_job j;
	memset(&j, 0, sizeof j);
	j.uid = 1000;
	j.gid = 1000;
	snprintf(j.user, sizeof j.user, "alice");
	snprintf(j.name, sizeof j.name, "%s", name);
	j.ngpus = ngpus;
	j.priority = priority;
	j.argv = (char *)"[\"sleep\",\"1\"]";
	j.env = (char *)"[\"PATH=/usr/bin\"]";
	j.cwd = (char *)"/tmp";
	return j;
}

/* a new store in a new directory dir (removed by the test): path and err for the test's own use */
static struct store *fresh_store(char *dir, size_t dlen, char *path, size_t plen, char *err, size_t elen)
{
	struct store *s;
	assert_int_equal(tmpdir_make(dir, dlen, "queue"), 0);
	snprintf(path, plen, "%s/queue.db", dir);
	assert_int_equal(store_open(&s, path, err, elen), 0);
	return s;
}

static void test_store(void **state)
{
	(void)state;
	char dir[64], path[128], err[256];
	struct store *s = fresh_store(dir, sizeof dir, path, sizeof path, err, sizeof err);
	assert_int_equal(store_schema_version(s), 8);
	struct store_job a = make("a", 1, 0), b = make("b", 4, 5), c = make("c", 2, 0);
	c.uid = 1001;
	c.after = (char *)"1";
	assert_int_equal(store_submit(s, &a, err, sizeof err), 0);
	assert_int_equal(store_submit(s, &b, err, sizeof err), 0);
	assert_int_equal(store_submit(s, &c, err, sizeof err), 0);
	assert_true(a.id < b.id && b.id < c.id);
	/* at most once */
	assert_int_equal(store_start(s, a.id, 4242, 99, "0", 10), 1);
	assert_int_equal(store_start(s, a.id, 4343, 98, "1", 11), 0);
	assert_int_equal(store_cancel(s, a.id, "no", 12), 0);     /* running: signalled, not cancelled here */
	assert_int_equal(store_finish(s, a.id, STORE_DONE, 0, "", 20), 1);
	assert_int_equal(store_finish(s, a.id, STORE_FAILED, 1, "again", 21), 0);
	assert_int_equal(store_finish(s, b.id, STORE_DONE, 0, "", 21), 0);  /* never started */
	assert_int_equal(store_finish(s, b.id, STORE_QUEUED, 0, "", 21), -1); /* not a final state */
	assert_int_equal(store_cancel(s, b.id, "by alice", 22), 1);
	/* lost and requeued: it starts again, counted */
	assert_int_equal(store_start(s, c.id, 7, 70, "2,3", 30), 1);
	assert_int_equal(store_requeue(s, c.id, "lost with gpuctld"), 1);
	assert_int_equal(store_start(s, c.id, 8, 80, "4,5", 31), 1);
	store_close(s);
	/* reopened: all there */
	assert_int_equal(store_open(&s, path, err, sizeof err), 0);
	struct store_job g;
	assert_int_equal(store_get(s, a.id, &g), 1);
	assert_int_equal(g.state, STORE_DONE);
	assert_int_equal(g.pid, 0);
	assert_string_equal(g.gpus, "0");
	assert_int_equal(g.starts, 1);
	assert_int_equal(g.started_ms, 10);
	assert_int_equal(g.ended_ms, 20);
	assert_string_equal(g.argv, "[\"sleep\",\"1\"]");
	store_job_release(&g);
	assert_int_equal(store_get(s, c.id, &g), 1);
	assert_int_equal(g.state, STORE_RUNNING);
	assert_int_equal(g.starts, 2);
	assert_int_equal(g.pid, 8);
	assert_int_equal(g.pid_start, 80);
	assert_string_equal(g.after, "1");
	assert_int_equal(g.uid, 1001);
	store_job_release(&g);
	assert_int_equal(store_get(s, 999, &g), 0);
	struct store_job *v;
	size_t n;
	assert_int_equal(store_list(s, false, false, 0, -1, 0, 0, 0, &v, &n), 0);
	assert_int_equal(n, 1); /* c runs; a done, b cancelled */
	store_list_free(v, n);
	assert_int_equal(store_list(s, true, false, 0, -1, 0, 0, 0, &v, &n), 0);
	assert_int_equal(n, 3);
	assert_string_equal(store_state_name(v[1].state), "cancelled");
	assert_string_equal(v[1].reason, "by alice");
	store_list_free(v, n);
	assert_int_equal(store_list(s, true, true, 1000, -1, 0, 0, 0, &v, &n), 0);
	assert_int_equal(n, 2);
	store_list_free(v, n);
	/* a page: after the first job, one at most; no environment read */
	assert_int_equal(store_list(s, true, false, 0, -1, a.id, 1, 0, &v, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(v[0].id, b.id);
	assert_string_equal(v[0].env, "[]");
	store_list_free(v, n);
	/* a byte budget: the row that reaches it is the last */
	assert_int_equal(store_list(s, true, false, 0, -1, 0, 0, 1, &v, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(v[0].id, a.id);
	store_list_free(v, n);
	/* forgetting ended jobs: a and b ended, c runs and stays */
	assert_int_equal(store_forget(s, 0), 0);
	assert_int_equal(store_forget(s, INT64_MAX), 2);
	assert_int_equal(store_list(s, true, false, 0, -1, 0, 0, 0, &v, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(v[0].id, c.id);
	store_list_free(v, n);
	assert_int_equal(store_integrity(s), 1);
	store_close(s);
	/* WAL, and only root may read it */
	char wal[160];
	snprintf(wal, sizeof wal, "%s-wal", path);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(tmpdir_remove(dir), 0);
}

/* four processes open one new database at once: each migrates it or finds it migrated */
static void test_store_concurrent_open(void **state)
{
	(void)state;
	for (int round = 0; round < 20; round++) {
		char dir[64], path[128], err[256];
		assert_int_equal(tmpdir_make(dir, sizeof dir, "queue"), 0);
		snprintf(path, sizeof path, "%s/queue.db", dir);
		pid_t kids[4];
		for (int k = 0; k < 4; k++) {
			kids[k] = fork();
			if (kids[k] == 0) {
				struct store *s;
				int rc = store_open(&s, path, err, sizeof err);
				if (rc == 0)
					store_close(s);
				else
					fprintf(stderr, "open: %s\n", err);
				_exit(rc == 0 ? 0 : 1);
			}
		}
		for (int k = 0; k < 4; k++) {
			int st;
			waitpid(kids[k], &st, 0);
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
				fail_msg("round %d: a concurrent open failed", round);
		}
		assert_int_equal(tmpdir_remove(dir), 0);
	}
}

static void test_store_refuses_newer_schema(void **state)
{
	(void)state;
	char dir[64], path[128], err[256] = "";
	assert_int_equal(tmpdir_make(dir, sizeof dir, "queue"), 0);
	snprintf(path, sizeof path, "%s/queue.db", dir);
	char cmd[256];
	snprintf(cmd, sizeof cmd, "python3 -c \"import sqlite3; c=sqlite3.connect('%s'); c.execute('PRAGMA user_version=99'); c.commit()\"", path);
	assert_int_equal(system(cmd), 0);
	struct store *s;
	assert_int_equal(store_open(&s, path, err, sizeof err), -1);
	assert_non_null(strstr(err, "schema version 99"));
	assert_int_equal(tmpdir_remove(dir), 0);
}

/* a writer killed at random moments: every job it was told was queued is there, the file is sound */
static void test_store_sigkill(void **state)
{
	(void)state;
	char dir[64], path[128], err[256];
	assert_int_equal(tmpdir_make(dir, sizeof dir, "queue"), 0);
	snprintf(path, sizeof path, "%s/queue.db", dir);
	int64_t acked[20000];
	size_t nacked = 0;
	srand(7);
	for (int round = 0; round < 12; round++) {
		int p[2];
		assert_int_equal(pipe(p), 0);
		pid_t child = fork();
		assert_true(child >= 0);
		if (child == 0) {
			close(p[0]);
			struct store *s;
			if (store_open(&s, path, err, sizeof err) < 0)
				_exit(2);
			for (int i = 0;; i++) {
				struct store_job j = make("k", 1 + i % 3, i % 2);
				if (store_submit(s, &j, err, sizeof err) < 0)
					_exit(3);
				if (write(p[1], &j.id, sizeof j.id) != sizeof j.id)
					_exit(4);
				if (i % 2 && store_start(s, j.id, 100 + i, 1, "0", i) < 0)
					_exit(5);
				if (i % 4 == 1 && store_finish(s, j.id, STORE_DONE, 0, "", i) < 0)
					_exit(6);
			}
		}
		close(p[1]);
		usleep(20000 + rand() % 80000);
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		int64_t id;
		while (nacked < 20000 && read(p[0], &id, sizeof id) == sizeof id)
			acked[nacked++] = id;
		close(p[0]);
	}
	struct store *s;
	assert_int_equal(store_open(&s, path, err, sizeof err), 0);
	assert_int_equal(store_integrity(s), 1);
	assert_true(nacked > 12);
	for (size_t i = 0; i < nacked; i++) {
		struct store_job j;
		if (store_get(s, acked[i], &j) != 1)
			fail_msg("job %lld was acknowledged but is gone", (long long)acked[i]);
		/* a consistent state: done jobs were started once, queued ones never */
		if ((j.state == STORE_DONE || j.state == STORE_RUNNING) != (j.starts == 1) ||
		    (j.state == STORE_DONE && j.ended_ms == 0))
			fail_msg("job %lld: %s with %u starts", (long long)j.id, store_state_name(j.state), j.starts);
		store_job_release(&j);
	}
	store_close(s);
	printf("store: %zu acknowledged jobs over 12 SIGKILLs, all there, database sound\n", nacked);
	assert_int_equal(tmpdir_remove(dir), 0);
}

struct seen_rows {
	size_t n;
	struct usage_row last;
};

static void count_rows(void *arg, const struct usage_row *r)
{
	struct seen_rows *s = arg;
	s->n++;
	s->last = *r;
}

/* a database at schema 1 (as gpuctld 1 left it) is migrated, its jobs kept */
static void test_store_migrates_v1(void **state)
{
	(void)state;
	char dir[64], path[128], err[256];
	assert_int_equal(tmpdir_make(dir, sizeof dir, "queue"), 0);
	snprintf(path, sizeof path, "%s/queue.db", dir);
	sqlite3 *db;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db,
		"PRAGMA journal_mode=WAL;"
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
		"CREATE INDEX jobs_state ON jobs(state, priority, id);"
		"INSERT INTO jobs (uid, gid, user, ngpus, argv, env, cwd, after, state, submitted_ms)"
		" VALUES (1000, 1000, 'alice', 2, '[\"true\"]', '[]', '/', '7', 'queued', 5);"
		"UPDATE sqlite_sequence SET seq = 41 WHERE name = 'jobs';" /* jobs 2-41 were forgotten */
		"PRAGMA user_version = 1;", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	struct store *s;
	assert_int_equal(store_open(&s, path, err, sizeof err), 0);
	assert_int_equal(store_schema_version(s), 8);
	/* migration 7: the counts start from the rows there */
	assert_int_equal(store_count_queued(s, 1000), 1);
	struct store_job *v;
	size_t n;
	assert_int_equal(store_brief(s, STORE_WAITING, SIZE_MAX, &v, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(v[0].after, "7");
	assert_int_equal(v[0].ngpus, 2);
	assert_null(v[0].argv); /* brief */
	store_list_free(v, n);
	struct store_job g;
	assert_int_equal(store_get(s, 1, &g), 1);
	assert_string_equal(g.argv, "[\"true\"]");
	assert_string_equal(g.cwd, "/");
	store_job_release(&g);
	/* ids go on after the forgotten ones */
	struct store_job j = {.uid = 1000, .gid = 1000, .ngpus = 1, .request = "{}", .argv = "[\"x\"]", .env = "[]",
			.cwd = "/"};
	snprintf(j.user, sizeof j.user, "alice");
	assert_int_equal(store_submit(s, &j, err, sizeof err), 0);
	assert_int_equal(j.id, 42);
	/* migration 4: the usage records, kept and read back by when they ended */
	struct usage_row r = {.uid = 1000, .gpu_index = 3, .start_ms = 1000, .end_ms = 5000, .idle_ms = 250};
	snprintf(r.user, sizeof r.user, "alice");
	snprintf(r.gpu, sizeof r.gpu, "GPU-x");
	assert_int_equal(store_usage_add(s, &r), 0);
	r.start_ms = 6000;
	r.end_ms = 9000;
	assert_int_equal(store_usage_add(s, &r), 0);
	struct seen_rows seen = {0};
	assert_int_equal(store_usage_since(s, 5000, count_rows, &seen), 0);
	assert_int_equal(seen.n, 1);
	assert_int_equal(seen.last.end_ms, 9000);
	assert_int_equal(seen.last.idle_ms, 250);
	assert_string_equal(seen.last.user, "alice");
	/* migration 5: a failed job's diagnosis, kept with it and gone with it */
	assert_null(store_get_diagnosis(s, 42));
	assert_int_equal(store_set_diagnosis(s, 42, "[{\"class\":\"oom-too-big\"}]"), 0);
	char *d = store_get_diagnosis(s, 42);
	assert_non_null(d);
	assert_string_equal(d, "[{\"class\":\"oom-too-big\"}]");
	free(d);
	assert_int_equal(store_start(s, 42, 0, 0, "0", 500), 1);
	assert_int_equal(store_finish(s, 42, STORE_FAILED, 1, "exit status 1", 1000), 1);
	assert_true(store_forget(s, 2000) >= 1);
	assert_null(store_get_diagnosis(s, 42));
	assert_int_equal(store_integrity(s), 1);
	store_close(s);
	assert_int_equal(tmpdir_remove(dir), 0);
}

/* the kept counts against the rows themselves, after every kind of transition */
static void counts_match(struct store *s, uid_t uids[2])
{
	struct store_job *v;
	size_t n;
	int64_t q[2] = {0, 0}, queued = 0, running = 0, oldest = 0, cq, cr, co;
	assert_int_equal(store_list(s, false, false, 0, -1, 0, 0, 0, &v, &n), 0);
	for (size_t i = 0; i < n; i++) {
		bool isq = v[i].state == STORE_QUEUED;
		queued += isq;
		running += v[i].state == STORE_RUNNING;
		q[v[i].uid == uids[1]] += isq;
		if (isq && (!oldest || v[i].submitted_ms < oldest))
			oldest = v[i].submitted_ms;
	}
	store_list_free(v, n);
	assert_int_equal(store_count_queued(s, uids[0]), q[0]);
	assert_int_equal(store_count_queued(s, uids[1]), q[1]);
	assert_int_equal(store_count_queued(s, 4242), 0); /* a user who never submitted */
	assert_int_equal(store_counts(s, &cq, &cr, &co), 0);
	assert_int_equal(cq, queued);
	assert_int_equal(cr, running);
	assert_int_equal(co, oldest);
}

struct plans {
	int checked, bad;
};

/* a hot statement on the jobs table never sorts into a temporary B-tree, never scans the table,
 * and scans an index of it only for a page (LIMIT); the small tables beside it (job_counts: a row
 * per user and state) may */
static void plan_of(void *arg, const char *sql, const char *plan)
{
	struct plans *p = arg;
	p->checked++;
	bool page = strstr(sql, "LIMIT ?") != NULL || strstr(sql, "LIMIT 1") != NULL;
	bool bad = strstr(sql, "FROM jobs ") && strstr(plan, "TEMP B-TREE") != NULL;
	for (const char *l = plan; *l; l = strchr(l, '\n') + 1) {
		if (!strncmp(l, "SCAN jobs\n", 10) || (!strncmp(l, "SCAN jobs USING", 15) && !page))
			bad = true;
		if (!strchr(l, '\n'))
			break;
	}
	if (bad) {
		p->bad++;
		print_error("a hot statement's plan sorts or scans:\n  %s\n%s", sql, plan);
	}
}

static void test_store_counts_and_plans(void **state)
{
	(void)state;
	char dir[64], path[128], err[256];
	struct store *s = fresh_store(dir, sizeof dir, path, sizeof path, err, sizeof err);
	uid_t uids[2] = {1000, 1001};
	int64_t id[40];
	for (int i = 0; i < 40; i++) {
		struct store_job j = make("j", 1, i % 3);
		j.uid = uids[i % 2];
		assert_int_equal(store_submit(s, &j, err, sizeof err), 0);
		id[i] = j.id;
	}
	counts_match(s, uids);
	/* start, end, fail, requeue, cancel: each moves one count to another */
	for (int i = 0; i < 10; i++)
		assert_int_equal(store_start(s, id[i], 100 + i, 1, "0", 1000 + i), 1);
	counts_match(s, uids);
	assert_int_equal(store_finish(s, id[0], STORE_DONE, 0, "", 2000), 1);
	assert_int_equal(store_finish(s, id[1], STORE_FAILED, 1, "x", 2001), 1);
	assert_int_equal(store_requeue(s, id[2], "lost"), 1);
	assert_int_equal(store_cancel(s, id[20], "by alice", 2002), 1);
	assert_int_equal(store_cancel(s, id[21], "by bob", 2003), 1);
	counts_match(s, uids);
	/* the oldest queued job: the first queued one by id, whatever started before it */
	int64_t q, r, oldest;
	struct store_job g;
	assert_int_equal(store_counts(s, &q, &r, &oldest), 0);
	assert_int_equal(store_get(s, id[2], &g), 1); /* requeued: the oldest queued now */
	assert_int_equal(oldest, g.submitted_ms);
	store_job_release(&g);
	/* forgetting ended jobs takes them from the counts too */
	assert_int_equal(store_forget(s, INT64_MAX), 4);
	counts_match(s, uids);
	/* pages of the live jobs, and the brief lists, as the views and dispatch read them */
	struct store_job *v;
	size_t n;
	assert_int_equal(store_list(s, false, true, uids[0], -1, id[5], 3, 0, &v, &n), 0);
	assert_int_equal(n, 3);
	assert_true(v[0].id > id[5] && v[0].uid == uids[0]);
	store_list_free(v, n);
	/* --state and --user: only those, in id order */
	int64_t cq, cr, co;
	assert_int_equal(store_counts(s, &cq, &cr, &co), 0);
	assert_int_equal(store_list(s, false, false, 0, STORE_RUNNING, 0, 100, 0, &v, &n), 0);
	assert_int_equal((int64_t)n, cr);
	for (size_t i = 0; i < n; i++)
		assert_true(v[i].state == STORE_RUNNING && (i == 0 || v[i - 1].id < v[i].id));
	store_list_free(v, n);
	assert_int_equal(store_list(s, true, false, 0, STORE_QUEUED, id[30], 100, 0, &v, &n), 0);
	assert_int_equal(n, 9); /* id[31..39], all queued */
	store_list_free(v, n);
	assert_int_equal(store_list(s, true, true, uids[1], -1, 0, 100, 0, &v, &n), 0);
	assert_int_equal(n, 18); /* bob's 20, less the failed and cancelled ones forgotten */
	for (size_t i = 0; i < n; i++)
		assert_true(v[i].uid == uids[1] && (i == 0 || v[i - 1].id < v[i].id));
	store_list_free(v, n);
	assert_int_equal(store_list(s, false, true, uids[1], STORE_RUNNING, 0, 100, 0, &v, &n), 0);
	for (size_t i = 0; i < n; i++)
		assert_true(v[i].uid == uids[1] && v[i].state == STORE_RUNNING);
	assert_int_equal(n, 4); /* ids 3, 5, 7, 9 run (1 failed, forgotten) */
	store_list_free(v, n);
	for (enum store_which w = STORE_HEAD; w <= STORE_RUN; w++) {
		assert_int_equal(store_brief(s, w, 5, &v, &n), 0);
		store_list_free(v, n);
	}
	enum store_state stt;
	assert_int_equal(store_state(s, id[3], &stt), 1);
	int64_t ended;
	assert_int_equal(store_end_of(s, id[3], &ended), 0);
	/* every statement used above, planned: none sorts or scans the whole table */
	struct plans p = {0};
	assert_int_equal(store_plans(s, plan_of, &p), 0);
	assert_true(p.checked >= 12);
	assert_int_equal(p.bad, 0);
	assert_int_equal(store_integrity(s), 1);
	store_close(s);
	assert_int_equal(tmpdir_remove(dir), 0);
}

/* brief lists: the head in dispatch order, a limit; one transaction around several transitions */
static void test_store_head_and_rounds(void **state)
{
	(void)state;
	char dir[64], path[128], err[256];
	struct store *s = fresh_store(dir, sizeof dir, path, sizeof path, err, sizeof err);
	int prio[] = {0, 5, 0, -3, 5, 0};
	int64_t id[6];
	for (int i = 0; i < 6; i++) {
		struct store_job j = make("h", 1, prio[i]);
		if (i == 2)
			j.after = (char *)"1";
		assert_int_equal(store_submit(s, &j, err, sizeof err), 0);
		id[i] = j.id;
	}
	struct store_job *v;
	size_t n;
	assert_int_equal(store_brief(s, STORE_HEAD, SIZE_MAX, &v, &n), 0);
	int64_t want[] = {id[1], id[4], id[0], id[2], id[5], id[3]};
	assert_int_equal(n, 6);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(v[i].id, want[i]);
	assert_string_equal(v[3].after, "1");
	assert_null(v[0].after);
	store_list_free(v, n);
	assert_int_equal(store_brief(s, STORE_HEAD, 2, &v, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(v[1].id, id[4]);
	store_list_free(v, n);
	/* a round that is rolled back leaves nothing; a committed one all */
	assert_int_equal(store_begin(s), 0);
	assert_int_equal(store_start(s, id[1], 11, 1, "0", 100), 1);
	assert_int_equal(store_start(s, id[4], 12, 1, "1", 100), 1);
	store_rollback(s);
	assert_int_equal(store_brief(s, STORE_HEAD, SIZE_MAX, &v, &n), 0);
	assert_int_equal(n, 6);
	store_list_free(v, n);
	assert_int_equal(store_begin(s), 0);
	assert_int_equal(store_start(s, id[1], 11, 1, "0", 100), 1);
	assert_int_equal(store_start(s, id[4], 12, 1, "1", 100), 1);
	assert_int_equal(store_finish(s, id[1], STORE_DONE, 0, "", 101), 1);
	assert_int_equal(store_commit(s), 0);
	assert_int_equal(store_brief(s, STORE_LIVE, SIZE_MAX, &v, &n), 0);
	assert_int_equal(n, 5); /* id[1] done; id[4] running */
	assert_int_equal(v[3].id, id[4]);
	assert_int_equal(v[3].state, STORE_RUNNING);
	assert_string_equal(v[3].gpus, "1");
	store_list_free(v, n);
	assert_int_equal(store_brief(s, STORE_WAITING, SIZE_MAX, &v, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(v[0].id, id[2]);
	store_list_free(v, n);
	store_close(s);
	assert_int_equal(tmpdir_remove(dir), 0);
}

/* fair share: among equal priorities, less recent GPU time first, then FIFO; priority still first */
static void test_sched_fair_share(void **state)
{
	(void)state;
	bool free[2] = {true, true};
	struct dispatch_job jobs[] = {
		{.id = 1, .ngpus = 1, .share = 500.0},  /* a heavy user, first in line */
		{.id = 2, .ngpus = 1, .share = 500.0},
		{.id = 3, .ngpus = 1, .share = 0.0},    /* a user with none */
		{.id = 4, .ngpus = 1, .share = 20.0, .priority = 1},
	};
	struct dispatch_start out[4];
	size_t k = dispatch_plan(jobs, 4, free, 2, NULL, NULL, out, 4, NULL);
	assert_int_equal(k, 2);
	assert_int_equal(out[0].id, 4);
	assert_int_equal(out[1].id, 3);
	/* all shares equal (fair share off): first come, first served */
	for (size_t i = 0; i < 4; i++)
		jobs[i].share = 0;
	jobs[3].priority = 0;
	k = dispatch_plan(jobs, 4, free, 2, NULL, NULL, out, 4, NULL);
	assert_int_equal(out[0].id, 1);
	assert_int_equal(out[1].id, 2);
}

static void test_sched_order_and_filters(void **state)
{
	(void)state;
	bool free[8] = {true, true, true, true, false, false, false, false};
	bool only67[8] = {false, false, false, false, false, false, true, true};
	struct dispatch_job jobs[] = {
		{.id = 3, .priority = 0, .ngpus = 1},
		{.id = 1, .priority = 0, .ngpus = 2},
		{.id = 2, .priority = 5, .ngpus = 1},
		{.id = 4, .priority = 0, .ngpus = 9},               /* never fits: ignored, blocks nothing */
	};
	struct dispatch_start out[8];
	size_t k = dispatch_plan(jobs, 4, free, 8, NULL, NULL, out, 8, NULL);
	assert_int_equal(k, 3);
	assert_int_equal(out[0].id, 2); /* priority first */
	assert_int_equal(out[0].gpus[0], 0);
	assert_int_equal(out[1].id, 1); /* then FIFO */
	assert_int_equal(out[1].n, 2);
	assert_int_equal(out[1].gpus[0], 1);
	assert_int_equal(out[1].gpus[1], 2);
	assert_int_equal(out[2].id, 3);
	assert_int_equal(out[2].gpus[0], 3);
	/*
	 * a blocked 4-GPU job (GPUs 0-5 allowed, only 0 and 1 free) holds 0 and 1:
	 * later jobs start only on GPUs it cannot use (6 and 7)
	 */
	bool free2[8] = {true, true, false, false, false, false, true, true};
	bool only0to5[8] = {true, true, true, true, true, true, false, false};
	struct dispatch_job blocked[] = {
		{.id = 10, .ngpus = 4, .eligible = only0to5},
		{.id = 11, .ngpus = 1},
		{.id = 12, .ngpus = 1, .eligible = only67},
		{.id = 13, .ngpus = 1},
	};
	size_t left;
	k = dispatch_plan(blocked, 4, free2, 8, NULL, NULL, out, 8, &left);
	assert_int_equal(left, 0); /* 0 and 1 held for job 10, 6 and 7 taken */
	assert_int_equal(k, 2);
	assert_int_equal(out[0].id, 11);
	assert_int_equal(out[0].gpus[0], 6);
	assert_int_equal(out[1].id, 12);
	assert_int_equal(out[1].gpus[0], 7);
	assert_int_equal(dispatch_plan(blocked, 4, free2, 8, NULL, NULL, out, 0, NULL), 0);
}

/* a placement that takes the highest usable GPUs; "bad" names GPU 0 twice */
static int choose_high(void *arg, const struct dispatch_job *j, const bool *usable, size_t ngpu, unsigned *gpus)
{
	if (arg) {
		for (unsigned k = 0; k < j->ngpus; k++)
			gpus[k] = 0;
		return 0;
	}
	unsigned n = 0;
	for (size_t g = ngpu; g-- > 0 && n < j->ngpus;)
		if (usable[g])
			gpus[n++] = (unsigned)g;
	return 0;
}

/* dispatch places a start where choose says, in ascending order, and never on a GPU it was not offered */
static void test_sched_choose(void **state)
{
	(void)state;
	bool free[6] = {true, true, false, true, true, true};
	bool not5[6] = {true, true, true, true, true, false};
	struct dispatch_job jobs[] = {
		{.id = 1, .ngpus = 2, .eligible = not5},
		{.id = 2, .ngpus = 1},
	};
	struct dispatch_start out[4];
	size_t left;
	size_t k = dispatch_plan(jobs, 2, free, 6, choose_high, NULL, out, 4, &left);
	assert_int_equal(k, 2);
	assert_int_equal(out[0].n, 2);
	assert_int_equal(out[0].gpus[0], 3); /* 5 is not its to use, 2 is not free */
	assert_int_equal(out[0].gpus[1], 4);
	assert_int_equal(out[1].gpus[0], 5);
	assert_int_equal(left, 2);
	/* a chooser that names one GPU twice: the lowest free indices instead */
	int bad = 1;
	k = dispatch_plan(jobs, 2, free, 6, choose_high, &bad, out, 4, NULL);
	assert_int_equal(k, 2);
	assert_int_equal(out[0].gpus[0], 0);
	assert_int_equal(out[0].gpus[1], 1);
	assert_int_equal(out[1].n, 1);
	assert_int_equal(out[1].gpus[0], 3); /* job 2: 0 and 1 are taken; a bad 0 falls back to 3 */
}

static int by_order(const void *a, const void *b)
{
	const struct dispatch_job *x = a, *y = b;
	if (x->priority != y->priority)
		return x->priority > y->priority ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/*
 * gpuctld plans only the head of its queue and reads further while GPUs are
 * left: for random queues (priorities, 1-4 GPUs, filters) the growing
 * prefixes give exactly the plan of the whole queue.
 */
static void test_sched_prefix(void **state)
{
	(void)state;
	enum { NG = 8, NJ = 60 };
	srand(11);
	for (int round = 0; round < 500; round++) {
		static bool elig[NJ][NG];
		struct dispatch_job q[NJ];
		bool free[NG];
		for (int g = 0; g < NG; g++)
			free[g] = rand() % 3 != 0;
		for (int i = 0; i < NJ; i++) {
			bool filtered = rand() % 4 == 0;
			for (int g = 0; g < NG; g++)
				elig[i][g] = rand() % 2;
			q[i] = (struct dispatch_job){.id = i + 1, .priority = rand() % 3 - 1,
						  .ngpus = 1 + (unsigned)(rand() % (rand() % 5 ? 2 : 9)),
						  .eligible = filtered ? elig[i] : NULL};
		}
		qsort(q, NJ, sizeof q[0], by_order);
		struct dispatch_start all[NG], part[NG];
		size_t ka = dispatch_plan(q, NJ, free, NG, NULL, NULL, all, NG, NULL), kp = 0, left = 0;
		for (size_t limit = 1;; limit *= 2) {
			size_t m = limit < NJ ? limit : NJ;
			kp = dispatch_plan(q, m, free, NG, NULL, NULL, part, NG, &left);
			if (left == 0 || m == NJ)
				break;
		}
		if (kp != ka)
			fail_msg("round %d: %zu starts from the prefixes, %zu from the whole queue", round, kp, ka);
		for (size_t s = 0; s < ka; s++) {
			assert_int_equal(part[s].id, all[s].id);
			assert_int_equal(part[s].n, all[s].n);
			assert_memory_equal(part[s].gpus, all[s].gpus, all[s].n * sizeof all[s].gpus[0]);
		}
	}
}

/*
 * 8 GPUs, a stream of 1-GPU jobs (one second to four seconds each, a new one
 * every second), a 4-GPU job submitted at t=20: it must start within the
 * longest 1-GPU job (4 s), not wait for the stream to end.
 */
static void test_sched_no_starvation(void **state)
{
	(void)state;
	enum { NG = 8, MAXJ = 400 };
	struct { int64_t id; unsigned ngpus; int dur; int start; int gpus[4]; } q[MAXJ];
	size_t nq = 0;
	int busy_until[NG] = {0};
	int64_t next_id = 1, big = 0;
	int big_start = -1;
	srand(3);
	for (int t = 0; t < 200; t++) {
		if (nq < MAXJ - 2) {
			q[nq] = (typeof(q[0])){.id = next_id++, .ngpus = 1, .dur = 1 + rand() % 4, .start = -1};
			nq++;
			q[nq] = (typeof(q[0])){.id = next_id++, .ngpus = 1, .dur = 1 + rand() % 4, .start = -1};
			nq++;
		}
		if (t == 20) {
			q[nq] = (typeof(q[0])){.id = next_id++, .ngpus = 4, .dur = 5, .start = -1};
			big = q[nq].id;
			nq++;
		}
		bool free[NG];
		for (int g = 0; g < NG; g++)
			free[g] = busy_until[g] <= t;
		struct dispatch_job sj[MAXJ];
		size_t ns = 0;
		for (size_t i = 0; i < nq; i++)
			if (q[i].start < 0)
				sj[ns++] = (struct dispatch_job){.id = q[i].id, .ngpus = q[i].ngpus};
		struct dispatch_start out[NG];
		size_t k = dispatch_plan(sj, ns, free, NG, NULL, NULL, out, NG, NULL);
		for (size_t s = 0; s < k; s++)
			for (size_t i = 0; i < nq; i++)
				if (q[i].id == out[s].id) {
					q[i].start = t;
					for (unsigned g = 0; g < out[s].n; g++)
						busy_until[out[s].gpus[g]] = t + q[i].dur;
					if (q[i].id == big)
						big_start = t;
				}
	}
	assert_true(big_start >= 20);
	if (big_start - 20 > 4)
		fail_msg("the 4-GPU job waited %d s behind 1-GPU jobs of at most 4 s", big_start - 20);
	printf("sched: the 4-GPU job started %d s after submission (bound 4 s)\n", big_start - 20);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_store),
		cmocka_unit_test(test_store_refuses_newer_schema),
		cmocka_unit_test(test_store_concurrent_open),
		cmocka_unit_test(test_store_sigkill),
		cmocka_unit_test(test_store_migrates_v1),
		cmocka_unit_test(test_store_head_and_rounds),
		cmocka_unit_test(test_store_counts_and_plans),
		cmocka_unit_test(test_sched_order_and_filters),
		cmocka_unit_test(test_sched_choose),
		cmocka_unit_test(test_sched_fair_share),
		cmocka_unit_test(test_sched_prefix),
		cmocka_unit_test(test_sched_no_starvation),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
