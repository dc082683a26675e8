#!/usr/bin/env python3
"""Idle reclaim (issue 21) with two real users on a simulated node.

User A's job holds GPU 0 and leaves it idle; user B waits for GPU 0
(gpuctl run --wait). gpuctld --reclaim-after 1s --reclaim-grace 1s:
lease.idle, then SIGUSR1 to A's job (which commits a checkpoint with
gpuctl ckpt commit), then SIGTERM (A's job ends), and B's job starts on the
GPU; each step an event (--notify-command), in that order, and
gpuctl_leases_reclaimed_total counts it. With --reclaim-exempt A, A's idle
lease is left alone. A queued job's lease is reclaimed the same way, and the
next queued job (B's) gets the GPUs. A's job touches its claim files all the
while (a holder that would reset its idle time by moving its record's since).
Usage: reclaim.py GPUCTLD GPUCTL SRCDIR SIMHOLD
"""
import json
import os
import re
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import policy  # noqa: E402
from policy import GPUCTL, GPUCTLD, NODE, bg, check, finish, log, setup, until  # noqa: E402

A, B = setup("reclaim")
work, env = policy.work, policy.env
trace = os.path.join(work, "trace")
with open(trace, "w"):
    pass
os.chmod(trace, 0o666)  # A's job and B's both write to it
ck = os.path.join(work, "ck")
events = os.path.join(work, "events")
hook = os.path.join(work, "hook.sh")
with open(hook, "w") as f:
    f.write(f"#!/bin/sh\n{{ printf '%s ' \"$GPUCTL_EVENT\"; cat; }} >> {events}\n")
os.chmod(hook, 0o755)
# A's job: checkpoints on SIGUSR1, ends on SIGTERM; idle otherwise, but it touches its own lease's
# claim files all the while (their ctime, the records' since, moves each second): a lease is its
# holder, and a new since must not start its idle time over
JOB = f"""
trap 'mkdir -p {ck}/step-1 && echo w > {ck}/step-1/weights && gpuctl ckpt commit {ck} {ck}/step-1 && echo usr1 >> {trace}' USR1
trap 'echo term >> {trace}; exit 143' TERM
echo started >> {trace}
while :; do sleep 0.1; touch {env["GPUCTL_STATE_DIR"]}/gpu-* 2>/dev/null; done
"""


def lines(path):
    """the whole lines of path: the hook writes an event's name and its JSON in two writes, so a line
    read between them has no end yet"""
    text = open(path).read() if os.path.exists(path) else ""
    return text[:text.rfind("\n") + 1].splitlines()


def start(*args):
    return policy.start("--notify-command", hook, *args, queue=False)


daemon = None
try:
    job = bg(A, GPUCTL, "--sim", NODE, "run", "--gpus", "0", "--name", "idle-one", "--", "sh", "-c", JOB)
    check("A's job runs on GPU 0", until(lambda: "started" in lines(trace)), lines(trace))
    waiter = bg(B, GPUCTL, "--sim", NODE, "run", "--wait", "--gpus", "0", "--", "sh", "-c", f"echo b-started >> {trace}")
    time.sleep(0.5)
    check("B waits for it", waiter.poll() is None and "b-started" not in lines(trace), lines(trace))

    # exempt: left alone
    daemon, url = start("--reclaim-after", "1s", "--reclaim-grace", "1s", "--reclaim-exempt", f"nobody,{A}")
    time.sleep(3)
    check("--reclaim-exempt: A's idle lease is left alone", job.poll() is None and lines(trace) == ["started"] and
          not any("reclaim" in l for l in log), (lines(trace), log))
    harness.stop(daemon)

    t0 = time.monotonic()
    daemon, url = start("--reclaim-after", "1s", "--reclaim-grace", "1s")
    check("B's job starts once A's lease is reclaimed", until(lambda: "b-started" in lines(trace)), lines(trace))
    took = time.monotonic() - t0
    check("in order: checkpoint signal, SIGTERM, then B", lines(trace) == ["started", "usr1", "term", "b-started"],
          lines(trace))
    check(f"after the steps, not before (idle 1 s + 2 graces of 1 s: {took:.1f} s)", took >= 2.8, took)
    r = subprocess.run([GPUCTL, "ckpt", "latest", ck], env=env, capture_output=True, text=True)
    check("A's gpuctl ckpt commit landed", r.returncode == 0 and r.stdout.strip().endswith("step-1"), r)
    check("A's gpuctl run ended with its job (143: SIGTERM)", until(lambda: job.poll() is not None) and
          job.returncode == 143, job.returncode)
    check("B's job ended well", until(lambda: waiter.poll() is not None) and waiter.returncode == 0, waiter.returncode)
    ev = until(lambda: (lambda e: e if any(n == "lease.reclaimed" for n, _ in e) else None)(
        [l.split(" ", 1) for l in lines(events)]))
    ev = [(n, j) for n, j in ev or [] if n.startswith("lease.")]
    names = [n for n, _ in ev]
    check("events: lease.idle, lease.reclaiming (checkpoint), lease.reclaiming (SIGTERM), lease.reclaimed",
          names == ["lease.idle", "lease.reclaiming", "lease.reclaiming", "lease.reclaimed"], names)
    docs = [json.loads(j) for _, j in ev]
    check("each names the GPUs, the holder and the job", docs and all(
        d["gpus"] == "0" and d["holder"] == A and d["job"] == "idle-one" for d in docs[:4]), docs[:4])
    text = urllib.request.urlopen(url + "/metrics", timeout=10).read().decode()
    check("gpuctl_leases_reclaimed_total counts it", re.search(r"^gpuctl_leases_reclaimed_total 1$", text, re.M),
          [l for l in text.splitlines() if "reclaimed" in l])
    harness.stop(daemon)

    # a queued job's lease too: A's idle 8-GPU job is reclaimed the same way, and B's queued job gets the GPUs
    open(trace, "w").close()
    open(events, "w").close()
    daemon, url = policy.start("--notify-command", hook, "--reclaim-after", "1s", "--reclaim-grace", "1s")
    ck2 = ck + "-q"
    qjob = JOB.replace(ck, ck2)
    a = policy.gpuctl("submit", "-n", "8", "--name", "idle-queued", "--", "sh", "-c", qjob, user=A).stdout.strip()
    check("A's queued job runs", until(lambda: "started" in lines(trace)), lines(trace))
    b = policy.gpuctl("submit", "-n", "8", "--name", "next", "--", "sh", "-c", f"echo b-started >> {trace}",
                      user=B).stdout.strip()
    check("B's queued job starts once A's is reclaimed", until(lambda: "b-started" in lines(trace), 20), lines(trace))
    check("queued: checkpoint signal, SIGTERM, then B's job", lines(trace) == ["started", "usr1", "term", "b-started"],
          lines(trace))
    r = subprocess.run([GPUCTL, "ckpt", "latest", ck2], env=env, capture_output=True, text=True)
    check("queued: A's gpuctl ckpt commit landed", r.returncode == 0 and r.stdout.strip().endswith("step-1"), r)
    policy.gpuctl("wait", b, user=B)
    ja = json.loads(policy.gpuctl("show", a, "--json", user=A).stdout)["job"]
    jb = json.loads(policy.gpuctl("show", b, "--json", user=B).stdout)["job"]
    check("queued: A's job ended by SIGTERM (143), B's done", ja["exit_code"] == 143 and jb["state"] == "done",
          (ja["state"], ja["exit_code"], ja["reason"], jb["state"]))
    ev = until(lambda: (lambda e: e if "lease.reclaimed" in e else None)([l.split(" ", 1)[0] for l in lines(events)]))
    docs = [json.loads(l.split(" ", 1)[1]) for l in lines(events) if l.startswith("lease.")]
    check("queued: the lease.* events name A's queued job", ev and [d["job"] for d in docs if d["holder"] == A] ==
          [f"job-{a}-idle-queued"] * 4, [(l.split(" ", 1)[0], l[-120:]) for l in lines(events)])
    for args, said in ((["--reclaim-after", "soon"], "invalid --reclaim-after"),
                       (["--reclaim-signal", "KILL"], "invalid --reclaim-signal 'KILL'"),
                       (["--reclaim-util", "150"], "a percentage, 0 to 100")):
        r = subprocess.run([GPUCTLD, *args, "--check-config"], capture_output=True, text=True)
        check(f"bad {args[0]}: one line, exit 2", r.returncode == 2 and said in r.stderr and
              r.stderr.count("\n") == 1, r)
finally:
    finish(daemon)
