#!/usr/bin/env python3
"""gpuctld's queue under SIGKILL (issue 9): 1 000 jobs are queued, then
gpuctld is killed with SIGKILL at random moments and restarted, again and
again, until every job has ended. Each job appends its id to a shared file,
so the file tells how many times each really ran.

Must hold: every job ends; every job that ended "done" ran exactly once;
none ran twice; none is lost (a job the daemon started but whose runner
never got going is queued again, not run twice); the database is sound.
Usage: gpuctld-queue-crash.py GPUCTLD GPUCTL SRCDIR [JOBS]
"""
import collections
import os
import random
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time

import harness
from harness import fail

GPUCTLD, GPUCTL, SRC = os.path.realpath(sys.argv[1]), os.path.realpath(sys.argv[2]), sys.argv[3]
JOBS = int(sys.argv[4]) if len(sys.argv) > 4 else 1000
NODE = os.path.join(SRC, "tests", "cli", "nodes", "idle-8x.json")
if os.geteuid() != 0:
    print("SKIP: gpuctld's queue starts jobs as their users: it needs root")
    sys.exit(77)
work = tempfile.mkdtemp(prefix="gpuctl-qcrash-")
sock, db, out = os.path.join(work, "q.sock"), os.path.join(work, "q.db"), os.path.join(work, "ran")
env = {k: v for k, v in os.environ.items() if not k.startswith("GPUCTL_") or k in ("GPUCTL_SIM_LIBDIR", "GPUCTL_AUTHORITY_DIR")}
env.update({"GPUCTL_STATE_DIR": os.path.join(work, "state"), "GPUCTL_SIM_RUNDIR": os.path.join(work, "rd")})
random.seed(11)


def start():
    d = subprocess.Popen([GPUCTLD, "--sim", NODE, "--listen", "127.0.0.1:0", "--queue-db", db, "--queue-socket", sock,
                          "--log-dir", os.path.join(work, "logs")],
                         env=env, stderr=subprocess.DEVNULL)
    for _ in range(200):
        if os.path.exists(sock):
            try:
                s = socket.socket(socket.AF_UNIX)
                s.connect(sock)
                s.close()
                return d
            except OSError:
                pass
        time.sleep(0.01)
    raise SystemExit("FAIL: gpuctld did not start")


def request(obj):
    return harness.queue_request(sock, obj, timeout=10)


def states():
    c = sqlite3.connect(db, timeout=10)
    rows = c.execute("SELECT id, state, starts FROM jobs").fetchall()
    c.close()
    return rows


daemon = start()
t0 = time.time()
script = f'echo "$GPUCTL_JOB_ID" >> {out}; sleep 0.1'
envlist = [f"{k}={v}" for k, v in env.items() if k in ("PATH", "HOME")]
for i in range(JOBS):
    a = request({"op": "submit", "gpus": 1 + (i % 7 == 0), "argv": ["sh", "-c", script], "env": envlist, "cwd": work})
    if not a.get("ok"):
        fail(f"submit {i}: {a}")
        break
submitted = time.time() - t0
kills = 0
deadline = time.time() + 600
while time.time() < deadline:
    time.sleep(random.uniform(0.05, 1.0))
    daemon.send_signal(signal.SIGKILL)
    daemon.wait()
    kills += 1
    daemon = start()
    if all(s not in ("queued", "running") for _, s, _ in states()):
        break
# let the last incarnation finish whatever it adopted
for _ in range(300):
    if all(s not in ("queued", "running") for _, s, _ in states()):
        break
    time.sleep(0.1)
daemon.terminate()
daemon.wait(timeout=10)
took = time.time() - t0

rows = states()
ran = collections.Counter(open(out).read().split()) if os.path.exists(out) else collections.Counter()
by = collections.Counter(s for _, s, _ in rows)
twice = [i for i, n in ran.items() if n > 1]
done_not_once = [i for i, s, _ in rows if s == "done" and ran.get(str(i), 0) != 1]
ran_not_done = [i for i, s, _ in rows if s != "done" and ran.get(str(i), 0) > 0]
c = sqlite3.connect(db)
integrity = c.execute("PRAGMA integrity_check").fetchone()[0]
c.close()
if not harness.errors:
    if len(rows) != JOBS:
        fail(f"{len(rows)} jobs in the database, {JOBS} submitted")
    if twice:
        fail(f"ran twice: {twice[:10]}")
    if done_not_once:
        fail(f"done but ran {[(i, ran.get(str(i), 0)) for i in done_not_once[:10]]} times")
    if ran_not_done:
        fail(f"ran but recorded as not done: {ran_not_done[:10]}")
    if by.get("queued") or by.get("running"):
        fail(f"not ended after {took:.0f}s: {dict(by)}")
    if by.get("lost") or by.get("failed"):
        fail(f"lost or failed: {dict(by)}")
    if integrity != "ok":
        fail(f"integrity_check: {integrity}")
print(f"crash: {JOBS} jobs queued in {submitted:.1f}s, gpuctld SIGKILLed {kills} times; "
      f"states {dict(by)}; each done job ran once, none twice; {took:.0f}s in all")
harness.finish(work=work)
