#!/usr/bin/env python3
"""queue-store.py — what the queue's indexes and kept counts cost per commit
(issue 35): the same job life (submit, start, end: three transactions, WAL,
synchronous=FULL, as daemon/queue/store.c runs them) on the jobs table with
the indexes of schema 6 (jobs_order, jobs_waiting: the baseline), of schema 7
(+ job_counts and its triggers, jobs_live) and of schema 8 (+ jobs_state_id,
jobs_user). The schemas are copied from store.c's migrations (keep them in
step). Prints ms per commit and the ratio to the baseline, three rounds.
Usage: queue-store.py [JOBS] (3000); TMPDIR: where the databases go.
"""
import os
import sqlite3
import sys
import tempfile
import time
BASE = """CREATE TABLE jobs (id INTEGER PRIMARY KEY AUTOINCREMENT, uid INTEGER NOT NULL, gid INTEGER NOT NULL, user TEXT NOT NULL,
 name TEXT NOT NULL DEFAULT '', priority INTEGER NOT NULL DEFAULT 0, ngpus INTEGER NOT NULL, request TEXT NOT NULL DEFAULT '{}',
 cwd TEXT NOT NULL, after TEXT, state TEXT NOT NULL, submitted_ms INTEGER NOT NULL, started_ms INTEGER NOT NULL DEFAULT 0,
 ended_ms INTEGER NOT NULL DEFAULT 0, pid INTEGER NOT NULL DEFAULT 0, pid_start INTEGER NOT NULL DEFAULT 0, gpus TEXT NOT NULL DEFAULT '',
 exit_code INTEGER NOT NULL DEFAULT 0, reason TEXT NOT NULL DEFAULT '', starts INTEGER NOT NULL DEFAULT 0, argv TEXT NOT NULL, env TEXT NOT NULL);
CREATE INDEX jobs_order ON jobs(state, priority DESC, id);
CREATE INDEX jobs_waiting ON jobs(id) WHERE state = 'queued' AND after IS NOT NULL;"""
V7 = """CREATE TABLE job_counts (uid INTEGER NOT NULL, state TEXT NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (uid, state)) WITHOUT ROWID;
CREATE TRIGGER jobs_count_in AFTER INSERT ON jobs BEGIN INSERT INTO job_counts (uid, state, n) VALUES (new.uid, new.state, 1) ON CONFLICT (uid, state) DO UPDATE SET n = n + 1; END;
CREATE TRIGGER jobs_count_out AFTER DELETE ON jobs BEGIN UPDATE job_counts SET n = n - 1 WHERE uid = old.uid AND state = old.state; END;
CREATE TRIGGER jobs_count_move AFTER UPDATE OF state ON jobs WHEN old.state != new.state BEGIN UPDATE job_counts SET n = n - 1 WHERE uid = old.uid AND state = old.state; INSERT INTO job_counts (uid, state, n) VALUES (new.uid, new.state, 1) ON CONFLICT (uid, state) DO UPDATE SET n = n + 1; END;
CREATE INDEX jobs_live ON jobs(id) WHERE state IN ('queued','running');"""
V8 = "CREATE INDEX jobs_state_id ON jobs(state, id); CREATE INDEX jobs_user ON jobs(uid, id);"
def run(schema, n, pending=0):
    d = tempfile.mkdtemp(prefix="gpuctl-qstore-")
    db = sqlite3.connect(os.path.join(d, "q.db"), isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL"); db.execute("PRAGMA synchronous=FULL")
    db.executescript(schema)
    ins = "INSERT INTO jobs (uid,gid,user,ngpus,cwd,state,submitted_ms,argv,env) VALUES (1000,1000,'a',1,'/','queued',1,'[\"true\"]','[]')"
    db.execute("BEGIN")
    for _ in range(pending): db.execute(ins)
    db.execute("COMMIT")
    t = time.perf_counter()
    for i in range(n):
        db.execute("BEGIN IMMEDIATE"); cur = db.execute(ins); jid = cur.lastrowid; db.execute("COMMIT")
        db.execute("BEGIN IMMEDIATE"); db.execute("UPDATE jobs SET state='running', started_ms=2, starts=starts+1 WHERE id=? AND state='queued'", (jid,)); db.execute("COMMIT")
        db.execute("BEGIN IMMEDIATE"); db.execute("UPDATE jobs SET state='done', ended_ms=3 WHERE id=? AND state='running'", (jid,)); db.execute("COMMIT")
    dt = time.perf_counter() - t
    db.close()
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))
    os.rmdir(d)
    return dt / n * 1000 / 3
n = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
for rnd in range(3):
    base = run(BASE, n)
    v7, v8 = run(BASE + V7, n), run(BASE + V7 + V8, n)
    print(f"round {rnd + 1}: schema 6 {base:.3f} ms per commit (baseline); 7 {v7:.3f} ({v7 / base:.2f}x); "
          f"8 {v8:.3f} ({v8 / base:.2f}x)")
