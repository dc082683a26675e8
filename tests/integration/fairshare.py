#!/usr/bin/env python3
"""Fair share (issue 21): with --fair-share-half-life, among queued jobs of
equal priority the user with less recent GPU time goes first, and nobody is
starved; without it, first come first served. Two real users on a simulated
8-GPU node.

User A first runs a heavy job (8 GPUs, 2 s: 16 GPU-s of history); user B
has none. While a blocker of root's holds all 8 GPUs, A submits three
8-GPU jobs, then B three. Once the blocker ends: B's three start first
(each adds 1.6 GPU-s to B's 4.8 at most, less than A's 16), then A's three;
all six end. With fair share off the same submissions run in submission
order: A's first. Nobody is starved: while B keeps a stream of 1-GPU jobs
flowing, A's 8-GPU job still starts (the reservation rule holds the GPUs
for it once it leads, and B's share grows past A's as B's jobs run).
Usage: fairshare.py GPUCTLD GPUCTL SRCDIR SIMHOLD
"""
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import policy  # noqa: E402
from policy import GPUCTLD, NODE, check, finish, gpuctl, setup, start  # noqa: E402

A, B = setup("fairshare")


def run(tag, *gpuctld_args):
    """A's history (the same database each time: with fair share off it does not matter), the
    blocker, A's three then B's three: the order the six started in"""
    d, _ = start(*gpuctld_args)

    def as_user(user, *args):
        return gpuctl(*args, user=user, sim=False)

    try:
        as_user(A, "--sim", NODE, "run", "-n", "8", "--", "sleep", "2")
        go = os.path.join(policy.work, tag + ".go")
        blocker = as_user(None, "submit", "-n", "8", "--", "sh", "-c", f"while [ ! -e {go} ]; do sleep 0.05; done")
        bid = blocker.stdout.strip()
        for _ in range(100):
            if json.loads(as_user(None, "show", bid, "--json").stdout)["job"]["state"] == "running":
                break
            time.sleep(0.05)
        ids = [as_user(u, "submit", "-n", "8", "--name", f"{u}-{i}", "--", "sleep", "0.2").stdout.strip()
               for u in (A, B) for i in range(3)]
        open(go, "w").close()
        w = as_user(None, "wait", bid, *ids)
        jobs = [json.loads(as_user(None, "show", j, "--json").stdout)["job"] for j in ids]
        order = [j["name"] for j in sorted(jobs, key=lambda j: j["started_ms"])]
        return w.returncode, [j["state"] for j in jobs], order
    finally:
        harness.stop(d)


rc, states, order = run("fair", "--fair-share-half-life", "1h")
check("fair share: all six jobs end", rc == 0 and states == ["done"] * 6, (rc, states))
check("fair share: B (no history) goes first, then A, each in its order",
      order == [f"{B}-0", f"{B}-1", f"{B}-2", f"{A}-0", f"{A}-1", f"{A}-2"], order)
def stream(limit_s=40):
    """B keeps GPUs busy with a stream of 1-GPU jobs (1 s each, ~8 submitted a second) while A, with the
    heavier history, queues one 8-GPU job: A's job must start while B's stream still flows (the
    reservation rule, and B's share growing past A's as B's jobs run). Seconds A's job waited, or None."""
    d, _ = start("--fair-share-half-life", "1h")
    stop = []

    def feed():
        while not stop:
            gpuctl("submit", "--name", "stream", "--", "sleep", "1", user=B, sim=False)
            time.sleep(0.12)
    t = threading.Thread(target=feed, daemon=True)
    try:
        t.start()
        time.sleep(2)
        t0 = time.monotonic()
        a = gpuctl("submit", "-n", "8", "--name", "A-big", "--", "true", user=A, sim=False).stdout.strip()
        while time.monotonic() - t0 < limit_s:
            if json.loads(gpuctl("show", a, "--json", user=A, sim=False).stdout)["job"]["state"] != "queued":
                return time.monotonic() - t0
            time.sleep(0.2)
        return None
    finally:
        stop.append(1)
        t.join()
        harness.stop(d)


waited = stream()
print("A's 8-GPU job under B's stream of 1-GPU jobs: " + ("started after %.1f s" % waited if waited else "never started"))
check("fair share starves nobody: A's 8-GPU job starts while B keeps submitting", waited is not None, waited)
rc, states, order = run("fifo")
check("off (the default): all six end", rc == 0 and states == ["done"] * 6, (rc, states))
check("off: first come, first served", order == [f"{A}-0", f"{A}-1", f"{A}-2", f"{B}-0", f"{B}-1", f"{B}-2"], order)
r = subprocess.run([GPUCTLD, "--fair-share-half-life", "often", "--check-config"], capture_output=True, text=True)
check("a bad --fair-share-half-life: one line, exit 2", r.returncode == 2 and r.stderr.count("\n") == 1, r)
r = subprocess.run([GPUCTLD, "--no-queue", "--fair-share-half-life", "1h", "--check-config"], capture_output=True,
                   text=True)
check("--fair-share-half-life with --no-queue: said to do nothing, not silently dropped",
      r.returncode == 0 and "--fair-share-half-life has no effect with --no-queue" in r.stderr, r)
finish()
