#!/usr/bin/env python3
"""lease() from Python and `gpuctl run` from the command line, at once, never
share a GPU (issue 19; the Python variant of tests/integration/concurrency.py).

JOBS requests arrive one after another on an idle 8-GPU simulated node,
alternating between `gpuctl run --wait -n N -- sh JOB` and a Python process
doing `with gpuctl.lease(n=N, wait=True):`, N 1 or 2. Each records, from
inside its lease, its GPUs (GPUCTL_GPUS; the lease's indices) and the
interval it held them. Checked: no two intervals on one GPU overlap; every
request ran, with the count it asked for; a Python holder SIGKILLed while it
holds its GPUs frees them for the next waiter.
Usage: concurrency.py GPUCTL SRCDIR [JOBS]  (LD_LIBRARY_PATH, PYTHONPATH: meson)
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

GPUCTL, SRC = os.path.realpath(sys.argv[1]), os.path.realpath(sys.argv[2])
JOBS = int(sys.argv[3]) if len(sys.argv) > 3 else 80
NODE = os.path.join(SRC, "tests", "cli", "nodes", "idle-8x.json")
HOLD = 0.15
GAP = 0.02
VICTIMS = {21, 45}  # Python holders SIGKILLed while they hold

work = tempfile.mkdtemp(prefix="gpuctl-pyconc-")
env = {k: v for k, v in os.environ.items() if not k.startswith("GPUCTL_") or k in ("GPUCTL_SIM_LIBDIR", "GPUCTL_AUTHORITY_DIR")}
env.pop("CUDA_VISIBLE_DEVICES", None)
env.update({"GPUCTL_STATE_DIR": os.path.join(work, "state"), "GPUCTL_SIM_RUNDIR": os.path.join(work, "rd"),
            "GPUCTL_SIM": NODE})
rec = os.path.join(work, "rec")
os.mkdir(rec)

SH_JOB = r'''
id=$1 hold=$2 rec=$3
s=$(date +%s.%N)
sleep "$hold"
e=$(date +%s.%N)
echo "$GPUCTL_GPUS $s $e" > "$rec/$id.tmp" && mv "$rec/$id.tmp" "$rec/$id"
'''

PY_JOB = r'''
import os, sys, time
import gpuctl
i, n, hold, rec, victim = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5] == "1"
with gpuctl.lease(n=n, wait=True, timeout=120, name="py-" + i) as g:
    s = time.time()
    if victim:
        with open(os.path.join(rec, i + ".held"), "w") as f:
            f.write(",".join(map(str, g)))
        time.sleep(60)
    time.sleep(hold)
    e = time.time()
    with open(os.path.join(rec, i + ".tmp"), "w") as f:
        f.write("%s %.9f %.9f\n" % (",".join(map(str, g)), s, e))
    os.rename(os.path.join(rec, i + ".tmp"), os.path.join(rec, i))
'''


def main():
    procs, want, kind = {}, {}, {}
    t0 = time.monotonic()
    for i in range(JOBS):
        n = 2 if i % 3 == 0 else 1
        want[i] = n
        hold = "%.2f" % (HOLD + (i % 5) * 0.01)
        if i % 2 == 0:
            kind[i] = "cli"
            argv = [GPUCTL, "run", "--wait", "-n", str(n), "--", "sh", "-c", SH_JOB, "job", str(i), hold, rec]
        else:
            kind[i] = "python"
            argv = [sys.executable, "-c", PY_JOB, str(i), str(n), hold, rec, "1" if i in VICTIMS else "0"]
        procs[i] = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(GAP)
    errors = []
    # the victims: SIGKILL once they hold their GPUs
    for v in VICTIMS:
        held = os.path.join(rec, "%d.held" % v)
        deadline = time.monotonic() + 120
        while not os.path.exists(held) and time.monotonic() < deadline:
            time.sleep(0.02)
        if not os.path.exists(held):
            errors.append("victim %d never got its GPUs" % v)
        procs[v].send_signal(signal.SIGKILL)
    for i, p in procs.items():
        try:
            _, err = p.communicate(timeout=180)
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate()
            errors.append("job %d (%s) did not finish" % (i, kind[i]))
            continue
        if i in VICTIMS:
            continue
        if p.returncode != 0:
            errors.append("job %d (%s) exit %d: %s" % (i, kind[i], p.returncode, err.strip()[-300:]))
    elapsed = time.monotonic() - t0
    spans = {}
    for i in range(JOBS):
        if i in VICTIMS:
            continue
        try:
            with open(os.path.join(rec, str(i))) as f:
                gpus, s, e = f.read().split()
        except (OSError, ValueError):
            errors.append("job %d (%s) left no record" % (i, kind[i]))
            continue
        g = [int(x) for x in gpus.split(",")]
        if len(g) != want[i]:
            errors.append("job %d (%s) got %d GPUs, asked %d" % (i, kind[i], len(g), want[i]))
        for x in g:
            spans.setdefault(x, []).append((float(s), float(e), i))
    overlaps = 0
    for gpu, iv in spans.items():
        iv.sort()
        for (s1, e1, a), (s2, e2, b) in zip(iv, iv[1:]):
            if s2 < e1:
                overlaps += 1
                errors.append("GPU %d: job %d (%s) and job %d (%s) overlap" % (gpu, a, kind[a], b, kind[b]))
    left = subprocess.run([GPUCTL, "leases", "--json"], env=env, capture_output=True, text=True, timeout=30).stdout
    try:
        v = json.loads(left)
        if v["leases"] or v["queue"]:
            errors.append("leases or waiters left behind: %s" % left[:500])
    except (ValueError, KeyError):
        errors.append("gpuctl leases --json: %r" % left[:300])
    mixed = sum(1 for iv in spans.values() for (_, _, a), (_, _, b) in zip(iv, iv[1:]) if kind[a] != kind[b])
    print("%d requests (%d gpuctl run, %d Python lease), %d killed while holding; %.1f s; %d hand-overs between a "
          "CLI job and a Python lease; %d overlaps" % (JOBS, sum(1 for k in kind.values() if k == "cli"),
                                                       sum(1 for k in kind.values() if k == "python"), len(VICTIMS),
                                                       elapsed, mixed, overlaps))
    if mixed == 0:
        errors.append("no GPU passed between a CLI job and a Python lease: the test shows nothing")
    if errors:
        print("FAIL:\n" + "\n".join(errors[:40]))
        sys.exit(1)
    shutil.rmtree(work, ignore_errors=True)
    print("PASS")


main()
