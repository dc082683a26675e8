#!/usr/bin/env python3
"""Authority mode's one line under CPU load (issue 32, point 2), two real users.

4 busy loops a core run beside the test (a training box whose data loaders
keep every core busy). While a blocker holds all 8 GPUs, 200 requests join
gpuctld's line one after another, each once the one before is seen in it:
gpuctl run --wait of user A, of user B, and gpuctl submit (queued jobs),
each for all 8 GPUs. Then the blocker lets go. Each job stamps its start and
end (the monotonic clock) and the GPUs it got.

By docs/queue.md's definition (priority, fair share, arrival; fair share off,
one priority), the line is first come, first served here: a waiter that
could start only on GPUs its own user holds holds nothing, but every
request wants all 8 GPUs, so none can start while any job runs, and once
none runs no user holds any. So: the jobs start in the order they joined
(0 order violations), no two jobs' runs overlap (0 overlaps), and each got
all 8 GPUs. Then 40 requests of 1, 2 or 4 GPUs from both users and the
queue at once: no GPU is given to two at a time.
Usage: hostile-load.py GPUCTLD GPUCTL SRCDIR SIMHOLD
"""
import json
import os
import random
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import policy  # noqa: E402
import testusers  # noqa: E402
from policy import GPUCTL, check, finish, gpuctl, setup, start, until  # noqa: E402

N = 200
A, B = setup("hostile-load")
work, env = policy.work, policy.env
auth = policy.authority()
stamps = os.path.join(work, "stamps")
with open(stamps, "w"):
    pass
os.chmod(stamps, 0o666)
go = os.path.join(work, "go")

# a job: its number, when it began and ended (ns), its GPUs
JOB = ("echo \"$0 start $(date +%s.%N) $CUDA_VISIBLE_DEVICES\" >> " + stamps +
       "; echo \"$0 end $(date +%s.%N)\" >> " + stamps)


def line_len():
    ans = harness.queue_request(policy.sock, {"op": "leases"})
    return len(ans["waiters"])


def join(k, n, how):
    """request k for n GPUs: 'A' or 'B' (gpuctl run --wait) or 'Q' (gpuctl submit, as A or B)"""
    argv = ["-n", str(n), "--", "sh", "-c", JOB, str(k)]
    if how in (A, B):
        before = line_len()
        p = policy.bg(how, GPUCTL, "--sim", policy.NODE, "run", "--wait", *argv)
        ok = until(lambda: line_len() > before or p.poll() is not None, 60)
        return p, ok
    user = A if k % 2 else B
    r = gpuctl("submit", *argv, user=user)
    return None, r.returncode == 0


def parse():
    runs = {}
    for line in open(stamps):
        w = line.split()
        if len(w) >= 3:
            r = runs.setdefault(int(w[0]), {})
            r[w[1]] = float(w[2])
            if w[1] == "start":
                r["gpus"] = w[3].split(",") if len(w) > 3 else []
    return runs


loops = []
d = None
try:
    d, url = start("--authority", "--authority-dir", auth, "--config", "/dev/null")
    for _ in range(4 * os.cpu_count()):
        loops.append(subprocess.Popen(["sh", "-c", "while :; do :; done"]))
    blocker = policy.bg(None, GPUCTL, "--sim", policy.NODE, "run", "-n", "8", "--", "sh", "-c",
                        f"while [ ! -e {go} ]; do sleep 0.05; done")
    check("the blocker holds all 8 GPUs", until(lambda: len(harness.queue_request(
        policy.sock, {"op": "leases"})["grants"]) == 8, 60))
    waiters, joined = [], 0
    rnd = random.Random(32)
    for k in range(N):
        how = "Q" if k % 5 == 4 else rnd.choice((A, B))
        p, ok = join(k, 8, how)
        joined += ok
        if p:
            waiters.append(p)
        time.sleep(0.002)  # arrival is gpuctld's clock, in ms: one request a tick at most
    check(f"{N} requests joined the line", joined == N, str(joined))
    open(go, "w").close()
    for p in waiters:
        p.wait(timeout=600)
    check("every job ran", until(lambda: len(parse()) == N and all("end" in r for r in parse().values()), 600),
          str(len(parse())))
    runs = parse()
    order = sorted(runs, key=lambda k: runs[k]["start"])
    violations = sum(1 for i in range(len(order) - 1) if order[i] > order[i + 1])
    check("0 order violations (the jobs started in the order they joined)", violations == 0,
          f"{violations}: {order[:40]}")
    spans = sorted((r["start"], r["end"], k) for k, r in runs.items() if "end" in r)
    overlaps = sum(1 for i in range(len(spans) - 1) if spans[i + 1][0] < spans[i][1])
    check("0 overlaps (each job had all 8 GPUs to itself)", overlaps == 0, str(overlaps))
    check("each job got 8 GPUs", all(len(r.get("gpus", [])) == 8 for r in runs.values()))

    # ---- mixed sizes at once: no GPU given twice ----
    os.unlink(go)
    with open(stamps, "w"):
        pass
    blocker = policy.bg(None, GPUCTL, "--sim", policy.NODE, "run", "-n", "8", "--", "sh", "-c",
                        f"while [ ! -e {go} ]; do sleep 0.05; done")
    until(lambda: len(harness.queue_request(policy.sock, {"op": "leases"})["grants"]) == 8, 60)
    mixed = []
    slow = JOB.replace("; echo \"$0 end", "; sleep 0.1; echo \"$0 end")
    for k in range(40):
        n = rnd.choice((1, 2, 4))
        argv = ["-n", str(n), "--", "sh", "-c", slow, str(k)]
        if k % 5 == 4:
            gpuctl("submit", *argv, user=A if k % 2 else B)
        else:
            mixed.append(policy.bg(rnd.choice((A, B)), GPUCTL, "--sim", policy.NODE, "run", "--wait", *argv))
    open(go, "w").close()
    for p in mixed:
        p.wait(timeout=600)
    until(lambda: len(parse()) == 40 and all("end" in r for r in parse().values()), 300)
    runs = parse()
    twice = 0
    for g in range(8):
        on = sorted((r["start"], r["end"]) for r in runs.values() if "end" in r and str(g) in r.get("gpus", []))
        twice += sum(1 for i in range(len(on) - 1) if on[i + 1][0] < on[i][1])
    check("40 mixed requests all ran", len(runs) == 40, str(len(runs)))
    check("0 overlaps on any GPU with mixed sizes", twice == 0, str(twice))
finally:
    for p in loops:
        p.kill()
        p.wait()
    finish(d)
