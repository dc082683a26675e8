#!/usr/bin/env python3
"""Warnings are not preemptions (issue 23): an AWS rebalance recommendation,
a GCP maintenance event that migrates the VM and an Azure Freeze, posted by
the mock metadata server while `gpuctl run --cloud C --on-warning USR1` runs
a job, give the job one SIGUSR1 (checkpoint now) and leave it running: it
completes every step in one attempt, gpuctl exits 0 and logs the warning.
Without --on-warning the warning is a log line only (the job, whose SIGUSR1
would kill it, completes). Usage: spot-warning.py GPUCTL SRCDIR
"""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import fail  # noqa: E402
from mockjob import case_env, ctl, run_until, start_mock  # noqa: E402

GPUCTL, SRC = sys.argv[1], sys.argv[2]
NODE = os.path.join(SRC, "tests", "cli", "nodes", "idle-8x.json")
STEPS = 50  # 5 s: an AWS rebalance hint is asked every 2 s

JOB = r'''
import os, signal, sys, time
log, trap = sys.argv[1], sys.argv[2] == "trap"
k = [0]
if trap:
    signal.signal(signal.SIGUSR1, lambda *_: open(log, "a").write("usr1 %d\n" % k[0]))
for i in range(@STEPS@):
    k[0] = i
    time.sleep(0.1)
    with open(log, "a") as f:
        f.write("step %d\n" % i)
'''.replace("@STEPS@", str(STEPS))


def main():
    work = tempfile.mkdtemp(prefix="gpuctl-warn-")
    mock, base = start_mock(SRC)
    try:
        for cloud, opt in (("aws", True), ("gcp", True), ("azure", True), ("aws", False)):
            ctl(base, "/_ctl/reset")
            case = cloud + ("" if opt else "-no-option")
            log = os.path.join(work, case, "job.log")
            os.makedirs(os.path.dirname(log))
            env = case_env(work, case, base)
            args = [GPUCTL, "--sim", NODE, "run", "--cloud", cloud, "--poll", "0.2"]
            if opt:
                args += ["--on-warning", "USR1"]
            p, out, err = run_until(args + ["--", sys.executable, "-c", JOB, log, "trap" if opt else "default"], env,
                                    log, 5, base, f"/_ctl/warning?cloud={cloud}", case)
            lines = open(log).read().splitlines() if os.path.exists(log) else []
            steps = [int(l.split()[1]) for l in lines if l.startswith("step ")]
            usr1 = [l for l in lines if l.startswith("usr1 ")]
            if p.returncode != 0:
                fail(f"{case}: gpuctl exited {p.returncode}: {err.strip()}")
            if steps != list(range(STEPS)):
                fail(f"{case}: steps {steps}: the job did not run to its end")
            if len(usr1) != (1 if opt else 0):
                fail(f"{case}: SIGUSR1 seen {len(usr1)} times, expected {1 if opt else 0}")
            if f"{cloud} warning from {cloud}" not in err:
                fail(f"{case}: the warning was not logged: {err!r}")
            if opt != ("checkpoint now" in err):
                fail(f"{case}: 'checkpoint now' {'missing from' if opt else 'in'} the log: {err!r}")
            if "preemption notice" in err:
                fail(f"{case}: a warning was taken for a preemption: {err!r}")
            print(f"{case}: {len(steps)} steps, SIGUSR1 {len(usr1)}x, exit {p.returncode}")
    finally:
        mock.terminate()
        mock.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)
    harness.finish()


if __name__ == "__main__":
    main()
