#!/usr/bin/env python3
"""Concurrency test for gpuctl run (issue 3): JOBS concurrent `gpuctl run
--wait -n 1|2` on an idle 8-GPU simulated node, arriving one after another.

Each job records, from inside its lease, its GPU set and start/end times.
Checked:
  - no two intervals on one GPU overlap (exactly: the records lie inside
    the leases);
  - every job that was not killed ran, with the GPU count it asked for;
  - among equal requests, service follows arrival order: the moments the
    leases began (GPUCTL_LEASE_START, read by gpuctl before the next waiter
    may go) are in ticket order (GPUCTL_TICKET, the queue's arrival order:
    when the ticket appeared, by the file system's clock), exactly, except
    between tickets of one clock tick; job start times would add scheduling
    delays under load;
  - jobs SIGKILLed mid-run (supervisor and job together) free their GPUs
    for the next waiter: the run after them completes, and they hold no
    lease afterwards.
Usage: concurrency.py GPUCTL SRCDIR [JOBS]
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import fail  # noqa: E402

GPUCTL, SRC = sys.argv[1], sys.argv[2]
JOBS = int(sys.argv[3]) if len(sys.argv) > 3 else 120
NODE = os.path.join(SRC, "tests", "cli", "nodes", "idle-8x.json")
HOLD = 0.15        # seconds a job holds its GPUs (plus a little per job)
GAP = 0.02         # between arrivals
VICTIMS = {17, 53, 90}  # jobs killed with SIGKILL mid-run

work = tempfile.mkdtemp(prefix="gpuctl-conc-")
env = {k: v for k, v in os.environ.items() if not k.startswith("GPUCTL_") or k in ("GPUCTL_SIM_LIBDIR", "GPUCTL_AUTHORITY_DIR")}
env.pop("CUDA_VISIBLE_DEVICES", None)
env.update({"GPUCTL_STATE_DIR": os.path.join(work, "state"), "GPUCTL_SIM_RUNDIR": os.path.join(work, "rd")})
rec = os.path.join(work, "rec")
os.mkdir(rec)

JOB = r'''
id=$1 hold=$2 victim=$3 rec=$4
s=$(date +%s.%N)
if [ "$victim" = 1 ]; then echo $$ > "$rec/$id.pgid"; sleep 30; fi
sleep "$hold"
e=$(date +%s.%N)
echo "$GPUCTL_GPUS $s $e $GPUCTL_TICKET $GPUCTL_LEASE_START" > "$rec/$id.tmp" && mv "$rec/$id.tmp" "$rec/$id"
'''


def main():
    procs = {}
    want = {}
    t0 = time.monotonic()
    for i in range(JOBS):
        n = 2 if i % 3 == 0 else 1
        want[i] = n
        hold = f"{HOLD + (i % 5) * 0.01:.2f}"
        argv = [GPUCTL, "--sim", NODE, "run", "--wait", "-n", str(n), "--name", f"job{i}", "--",
                "sh", "-c", JOB, "job", str(i), hold, "1" if i in VICTIMS else "0", rec]
        procs[i] = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL)
        time.sleep(GAP)
    # kill the victims once they run: gpuctl and the job's process group, both with SIGKILL
    killed = set()
    deadline = time.monotonic() + 120
    while len(killed) < len(VICTIMS) and time.monotonic() < deadline:
        for v in VICTIMS - killed:
            f = os.path.join(rec, f"{v}.pgid")
            if os.path.exists(f) and open(f).read().strip():
                pgid = int(open(f).read())
                os.kill(procs[v].pid, signal.SIGKILL)
                os.killpg(pgid, signal.SIGKILL)
                killed.add(v)
        time.sleep(0.01)
    for i, p in procs.items():
        try:
            rc = p.wait(timeout=max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            fail(f"job {i} never finished (a lease or ticket was not freed?)")
            p.kill()
            continue
        if i in VICTIMS:
            if rc != -signal.SIGKILL:
                fail(f"victim {i} exited {rc}, expected to be killed")
        elif rc != 0:
            fail(f"job {i} exited {rc}")
    elapsed = time.monotonic() - t0

    runs = {}
    for i in range(JOBS):
        if i in VICTIMS:
            continue
        path = os.path.join(rec, str(i))
        if not os.path.exists(path):
            fail(f"job {i} left no record")
            continue
        gpus, s, e, ticket, leased = open(path).read().split()
        runs[i] = ([int(g) for g in gpus.split(",")], float(s), float(e), int(ticket), float(leased))
        if len(runs[i][0]) != want[i]:
            fail(f"job {i} got GPUs {gpus}, asked for {want[i]}")
    # no overlap on any GPU
    per_gpu = {}
    for i, (gpus, s, e, _, _) in runs.items():
        for g in gpus:
            per_gpu.setdefault(g, []).append((s, e, i))
    overlaps = 0
    for g, iv in per_gpu.items():
        iv.sort()
        for (s1, e1, a), (s2, e2, b) in zip(iv, iv[1:]):
            if s2 < e1:
                overlaps += 1
                fail(f"GPU {g}: job {a} [{s1:.3f},{e1:.3f}] overlaps job {b} [{s2:.3f},{e2:.3f}]")
    # FIFO among equal requests, in arrival order: the ticket each one got
    # (under load a later-launched gpuctl can reach the queue first)
    fifo_violations = 0
    for n in (1, 2):
        order = sorted((i for i in runs if want[i] == n), key=lambda i: runs[i][3])
        for a, b in zip(order, order[1:]):
            # equal tickets: joined in one tick of the file system's clock, served in either order
            if runs[b][3] > runs[a][3] and runs[b][4] < runs[a][4]:
                fifo_violations += 1
                fail(f"-n {n}: job {b} (ticket {runs[b][3]}) got its GPUs {runs[a][4] - runs[b][4]:.3f}s "
                              f"before job {a} (ticket {runs[a][3]}), which arrived first")
    # killed jobs hold nothing now
    out = subprocess.run([GPUCTL, "--sim", NODE, "run", "-n", "8", "--", "true"], env=env,
                         capture_output=True, text=True)
    if out.returncode != 0:
        fail(f"after all jobs, 8 GPUs are not free: {out.stderr.strip()}")
    print(f"{JOBS} jobs ({len(VICTIMS)} killed with SIGKILL) on 8 GPUs in {elapsed:.1f}s: "
          f"{len(runs)} ran, {overlaps} overlaps, {fifo_violations} FIFO violations")
    shutil.rmtree(work, ignore_errors=True)
    harness.finish()


if __name__ == "__main__":
    main()
