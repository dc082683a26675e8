#!/usr/bin/env python3
"""End to end, per cloud (issue 4): `gpuctl run --cloud C --restart
on-preempt --checkpoint-dir D` runs a job that saves and commits a checkpoint
after every step. Once it is a few steps in, the mock metadata server posts a
preemption notice. Checked: the job gets SIGTERM, commits the step it was on
and exits; gpuctl restarts it with GPUCTL_RESUME_FROM naming that checkpoint;
it finishes. Every step is completed exactly once (none lost, none redone),
there are exactly 2 attempts, gpuctl exits 0; on Azure, with --ack, the event
is acknowledged (StartRequests) once. Last, an AWS notice whose time has
already passed: the job still gets its SIGTERM and time to commit.
Usage: spot-e2e.py GPUCTL SRCDIR
"""
import json
import os
import shutil
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import fail  # noqa: E402
from mockjob import case_env, ctl, run_until, start_mock  # noqa: E402

GPUCTL, SRC = sys.argv[1], sys.argv[2]
NODE = os.path.join(SRC, "tests", "cli", "nodes", "idle-8x.json")
STEPS = 30

JOB = r'''
import os, signal, subprocess, sys, time
gpuctl, log = sys.argv[1], sys.argv[2]
d = os.environ["GPUCTL_CHECKPOINT_DIR"]
attempt = os.environ["GPUCTL_RESTART_COUNT"]
stop = []
signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
start = 0
if "GPUCTL_RESUME_FROM" in os.environ:
    start = int(open(os.path.join(os.environ["GPUCTL_RESUME_FROM"], "step")).read()) + 1
for k in range(start, @STEPS@):
    time.sleep(0.1)                                   # the step's work
    path = os.path.join(d, "step-%04d" % k)
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "step"), "w") as f:
        f.write(str(k))
    # gpuctl signals the job's whole process group: the commit runs in its own
    # session, as an in-process save would, so a notice cannot kill it halfway
    subprocess.run([gpuctl, "ckpt", "commit", d, path], check=True, start_new_session=True)
    with open(log, "a") as f:
        f.write("%s %d %s\n" % (attempt, k, "term" if stop else ""))
    if stop:
        sys.exit(0)                                   # checkpoint committed: leave in time
'''.replace("@STEPS@", str(STEPS))


def main():
    work = tempfile.mkdtemp(prefix="gpuctl-e2e-")
    mock, base = start_mock(SRC)
    try:
        # the last: an AWS notice whose time has already passed still leaves the job its
        # SIGTERM handler (the minimum grace; issue 17, low)
        for cloud, when in (("aws", "30"), ("gcp", "30"), ("azure", "30"), ("aws", "-60")):
            ctl(base, "/_ctl/reset")
            case = cloud if when == "30" else f"{cloud}-past"
            ck = os.path.join(work, case, "ck")
            log = os.path.join(work, case, "steps.log")
            os.makedirs(os.path.dirname(log))
            env = case_env(work, case, base)
            p, out, err = run_until([GPUCTL, "--sim", NODE, "run", "--cloud", cloud, "--poll", "0.2", "--ack",
                                     "--restart", "on-preempt", "--max-restarts", "3", "--backoff", "0.2s",
                                     "--checkpoint-dir", ck, "--", sys.executable, "-c", JOB, GPUCTL, log],
                                    env, log, 5, base, f"/_ctl/preempt?cloud={cloud}&in={when}", case)
            lines = [l.split() for l in open(log).read().splitlines()] if os.path.exists(log) else []
            steps = [int(l[1]) for l in lines]
            attempts = sorted({l[0] for l in lines})
            terms = [l for l in lines if len(l) > 2]
            if p.returncode != 0:
                fail(f"{case}: gpuctl exited {p.returncode}: {err.strip()}")
            if steps != list(range(STEPS)):
                fail(f"{case}: steps completed {steps}, expected each of 0..{STEPS - 1} once, in order")
            if attempts != ["0", "1"]:
                fail(f"{case}: attempts {attempts}, expected exactly 2")
            if len(terms) != 1 or terms[0][0] != "0":
                fail(f"{case}: SIGTERM seen {terms}, expected once, in the first attempt")
            if cloud == "azure":
                log_req = json.loads(urllib.request.urlopen(base + "/_ctl/log", timeout=5).read())
                acks = [q for q in log_req if q.get("method") == "POST" and "StartRequests" in (q.get("body") or "")]
                if len(acks) != 1:
                    fail(f"azure: expected one StartRequests acknowledgement, saw {len(acks)}")
            if "preemption notice from " + cloud not in err:
                fail(f"{case}: the notice was not logged: {err!r}")
            print(f"{case}: notice after step {terms[0][1] if terms else '?'}, "
                  f"{len(steps)} steps in {len(attempts)} attempts, exit {p.returncode}")
    finally:
        mock.terminate()
        mock.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)
    harness.finish()


if __name__ == "__main__":
    main()
