#!/usr/bin/env python3
"""Accounting (issue 21): gpuctl usage's GPU-hours hold the jobs' known
durations, two real users on a simulated node.

User A runs an interactive `gpuctl run -n 2` job, user B a queued
`gpuctl submit -n 1` job; each job stamps its own start and end. gpuctld
(which sees every lease through the lease directory) then reports, per user,
per GPU and in total, GPU-hours between 2 x A's duration and 1 x B's (a lease
holds its job) and the time the test saw each command take (a lease ends
before its command returns): bounds by order, which a loaded machine cannot
move; bench/ measures how close. Also the idle hours (the simulated GPUs idle: all of it), and the cost at
--gpu-hour-price; the records outlive a gpuctld restart. Bad input exits 2;
no gpuctld, 1.
Usage: usage.py GPUCTLD GPUCTL SRCDIR SIMHOLD
"""
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import policy  # noqa: E402
from policy import NODE, check, finish, gpuctl, setup  # noqa: E402

A, B = setup("usage")
work = policy.work
STAMP = "date +%s.%N > {0}.start; sleep {1}; date +%s.%N > {0}.end"


def start():
    return policy.start("--gpu-hour-price", "2.5")[0]


def as_user(user, *args):
    return gpuctl(*args, user=user, sim=False)


def usage(*args, user=A):
    r = as_user(user, "usage", "--json", *args)
    return json.loads(r.stdout) if r.returncode == 0 else r


def took(path):
    return float(open(path + ".end").read()) - float(open(path + ".start").read())


daemon = start()
try:
    a = os.path.join(work, "a")
    t_a = time.time()
    r = as_user(A, "--sim", NODE, "run", "-n", "2", "--name", "interactive", "--", "sh", "-c", STAMP.format(a, 2))
    check("A's interactive job ran on 2 GPUs", r.returncode == 0, r)
    b = os.path.join(work, "b")
    t_b = time.time()
    job = as_user(B, "submit", "-n", "1", "--name", "queued", "--", "sh", "-c", STAMP.format(b, 1.5)).stdout.strip()
    w = as_user(B, "wait", job)
    check("B's queued job ran", w.returncode == 0, w)
    da, db = took(a), took(b)
    SLACK = 0.002  # s: the records keep milliseconds

    # each lease's end is recorded once gpuctld has seen it (at once on a quiet machine): ask until both are
    def recorded():
        global u, rows
        u = usage()
        rows = {x["key"]: x for x in u["rows"]} if isinstance(u, dict) else {}
        return A in rows and B in rows and rows[A]["gpu_hours"] * 3600 >= 2 * da - SLACK and \
            rows[B]["gpu_hours"] * 3600 >= db - SLACK
    u, rows = None, {}
    policy.until(recorded, 30)
    asked = time.time()
    outer_a, outer_b = asked - t_a, asked - t_b  # a record ends before the answer that holds it

    def holds(got_h, job_s, outer_s):
        """at least the job's own time (its lease held it), at most what the command took around it"""
        return job_s - SLACK <= got_h * 3600 <= outer_s + SLACK

    def seen(got_h, job_s, outer_s):
        return f"{got_h * 3600:.3f} s for a job of {job_s:.3f} s, within {outer_s:.3f} s"

    check(f"A's GPU-hours hold 2 x its job and fit in 2 x the time from its run to the answer "
          f"({seen(rows[A]['gpu_hours'], 2 * da, 2 * outer_a) if A in rows else '-'})",
          A in rows and holds(rows[A]["gpu_hours"], 2 * da, 2 * outer_a), (rows.get(A), da, outer_a))
    check(f"B's GPU-hours hold its job and fit in the time from its submit to the answer "
          f"({seen(rows[B]['gpu_hours'], db, outer_b) if B in rows else '-'})",
          B in rows and holds(rows[B]["gpu_hours"], db, outer_b), (rows.get(B), db, outer_b))
    check("the total too", isinstance(u, dict) and holds(u["total"]["gpu_hours"], 2 * da + db, 2 * outer_a + outer_b),
          u)
    check("idle GPU-hours held: the simulated GPUs stay at 0 %, so about all of it",
          isinstance(u, dict) and u["total"]["idle_gpu_hours"] >= 0.5 * u["total"]["gpu_hours"] and
          u["total"]["idle_gpu_hours"] <= u["total"]["gpu_hours"] + 1e-9, u)
    check("cost at --gpu-hour-price", isinstance(u, dict) and abs(u["total"]["cost"] - 2.5 * u["total"]["gpu_hours"])
          < 1e-9 and u["price_per_gpu_hour"] == 2.5 and u["schema"] == "gpuctl.usage/1", u)
    g = usage("--by", "gpu")
    check("--by gpu: three GPUs, the same total", isinstance(g, dict) and len(g["rows"]) == 3 and
          holds(sum(x["gpu_hours"] for x in g["rows"]), 2 * da + db, 2 * outer_a + outer_b), g)
    day = usage("--by", "day")
    check("--by day: today (UTC)", isinstance(day, dict) and [x["key"] for x in day["rows"]] ==
          [time.strftime("%Y-%m-%d", time.gmtime())], day)
    r = as_user(B, "usage")
    check("the table, for anyone", r.returncode == 0 and re.search(rf"^{A} +\d+\.\d{{3}} +\d+\.\d{{3}} +\d+\.\d\d$",
                                                                   r.stdout, re.M) and "total" in r.stdout, r)
    harness.stop(daemon)
    daemon = start()
    u2 = usage()
    check("the records outlive a gpuctld restart", isinstance(u2, dict) and isinstance(u, dict) and
          abs(u2["total"]["gpu_hours"] - u["total"]["gpu_hours"]) < 1e-6, (u2, u))
    # a lease whose claim file's ctime moves while its job runs (the record is rewritten at the job's
    # start; here the job touches its own claim three times, 1.1 s apart, so its since moves on each
    # time) is one lease, counted once: keyed by its since, it was closed at the next look and opened
    # again from the touch, the overlap counted twice
    before = usage(user=B)
    e = os.path.join(work, "e")
    state = policy.env["GPUCTL_STATE_DIR"]
    touch = f"touch {state}/gpu-* 2>/dev/null"
    t_e = time.time()
    r = as_user(B, "--sim", NODE, "run", "-n", "1", "--", "sh", "-c",
                f"date +%s.%N > {e}.start; for i in 1 2 3; do sleep 1.1; {touch}; done; sleep 0.3; "
                f"date +%s.%N > {e}.end")
    check("B's touching job ran", r.returncode == 0, r)

    def grew():
        global after
        after = usage(user=B)
        return isinstance(after, dict) and isinstance(before, dict) and \
            (after["total"]["gpu_hours"] - before["total"]["gpu_hours"]) * 3600 >= took(e) - SLACK
    after = None
    policy.until(grew, 30)
    outer_e = time.time() - t_e
    got = (after["total"]["gpu_hours"] - before["total"]["gpu_hours"]) if isinstance(after, dict) else -1
    check(f"a lease whose since moves is counted once ({seen(got, took(e), outer_e)})",
          holds(got, took(e), outer_e), (before, after))
    # a lease across a restart (cooperative mode): recorded up to the stop, then from there on, not
    # again from its start (issue 32: +40 % and +54 % before)
    before = usage(user=B)
    c = os.path.join(work, "c")
    lease = policy.bg(B, policy.GPUCTL, "--sim", NODE, "run", "-n", "1", "--", "sh", "-c", STAMP.format(c, 4))
    policy.until(lambda: os.path.exists(c + ".start"))
    time.sleep(2.5)
    harness.stop(daemon)
    daemon = start()
    lease.wait()
    time.sleep(0.3)
    after = usage(user=B)
    got = (after["total"]["gpu_hours"] - before["total"]["gpu_hours"]) * 3600 if isinstance(after, dict) else -1
    check(f"a lease across a restart is counted once ({got:.3f} s for {took(c):.3f} s)",
          abs(got - took(c)) <= 0.02 * took(c) + 0.05, (before, after))
    r = as_user(A, "usage", "--since", "1s")
    check("--since 1s: nothing that old", r.returncode == 0 and re.search(r"^total +0\.000", r.stdout, re.M), r)
    for args, said in ((["--by", "week"], "expected user, gpu or day"), (["--since", "soon"], "--since")):
        r = as_user(A, "usage", *args)
        check(f"bad {args[0]}: one line, exit 2", r.returncode == 2 and said in r.stderr and
              r.stderr.count("\n") == 1, r)
    harness.stop(daemon)
    # the price of this cloud instance: its type from the metadata service (the mock's AWS says
    # p4d.24xlarge), its on-demand price from gpuctl advise's snapshot, over its 8 GPUs
    md = subprocess.Popen([sys.executable, os.path.join(policy.SRC, "tests", "mock", "metadata.py"), "0"],
                          stdout=subprocess.PIPE, text=True)
    policy.env["GPUCTL_METADATA_URL"] = "http://127.0.0.1:%s" % md.stdout.readline().split()[2]
    try:
        daemon = policy.start("--gpu-hour-price", "aws")[0]
        u3 = usage()
        want = min(float(l.split(",")[5]) for l in open(os.path.join(policy.SRC, "data", "catalog", "aws.csv"))
                   if l.startswith("p4d.24xlarge,")) / 8
        check(f"--gpu-hour-price aws: p4d.24xlarge's ${want:.4f} a GPU-hour", isinstance(u3, dict) and
              abs(u3.get("price_per_gpu_hour", 0) - want) < 1e-9 and "p4d.24xlarge" in u3.get("price_source", "") and
              abs(u3["total"]["cost"] - want * u3["total"]["gpu_hours"]) < 1e-9, u3)
        harness.stop(daemon)
        daemon = policy.start("--gpu-hour-price", "auto")[0]
        # on a machine of no cloud (by its DMI data), said in the log and no cost; on a cloud's VM,
        # that cloud's type (from the mock) and its price
        off = any("not on AWS, GCP or Azure" in l for l in policy.log)
        on = any("a GPU-hour costs" in l for l in policy.log)
        check("--gpu-hour-price auto: the cloud this machine is on, or none (said in the log, no cost)",
              (off and "cost" not in usage()["total"]) or (on and "cost" in usage()["total"]), policy.log)
    finally:
        md.terminate()
        md.wait()
        del policy.env["GPUCTL_METADATA_URL"]
    harness.stop(daemon)
    daemon = None
    r = as_user(A, "usage")
    check("no gpuctld: exit 1, one line", r.returncode == 1 and r.stderr.count("\n") == 1, r)
finally:
    finish(daemon)
