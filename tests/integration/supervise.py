#!/usr/bin/env python3
"""Supervisor tests for gpuctl run (issue 4): the hang watchdog, restart
policies and the environment of each attempt, on an idle simulated node
(its GPUs report 0 % utilization, so CPU time alone tells progress).

  hang:   a job that stops making progress (sleeps) is stopped within the
          timeout and restarted; the second attempt finishes;
  busy:   a job that burns CPU the whole time is left alone;
  slow:   a job that works in short bursts (slow but busy) is left alone;
  policy: on-failure restarts a failing job --max-restarts times, with
          GPUCTL_RUN_ID stable and GPUCTL_RESTART_COUNT counting; never
          does not restart; a committed checkpoint comes back as
          GPUCTL_RESUME_FROM.
Usage: supervise.py GPUCTL SRCDIR
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check  # noqa: E402

GPUCTL, SRC = sys.argv[1], sys.argv[2]
NODE = os.path.join(SRC, "tests", "cli", "nodes", "idle-8x.json")
work = tempfile.mkdtemp(prefix="gpuctl-sv-")
env = {k: v for k, v in os.environ.items() if not k.startswith("GPUCTL_") or k in ("GPUCTL_SIM_LIBDIR", "GPUCTL_AUTHORITY_DIR")}
env.pop("CUDA_VISIBLE_DEVICES", None)
env.update({"GPUCTL_STATE_DIR": os.path.join(work, "state"), "GPUCTL_SIM_RUNDIR": os.path.join(work, "rd")})


def run(opts, script, timeout=60):
    t0 = time.monotonic()
    p = subprocess.run([GPUCTL, "--sim", NODE, "run", *opts, "--", sys.executable, "-c", script],
                       env=env, capture_output=True, text=True, timeout=timeout)
    return p, time.monotonic() - t0


# hang: attempt 0 sleeps (alive, no CPU, GPUs at 0 %); attempt 1 finishes at once
HANG = r'''
import os, time
if os.environ["GPUCTL_RESTART_COUNT"] == "0":
    time.sleep(60)
print("attempt", os.environ["GPUCTL_RESTART_COUNT"], "done")
'''
p, took = run(["--hang-timeout", "1s", "--restart", "on-failure", "--backoff", "0.1s", "--grace", "1s"], HANG)
check("hang", p.returncode == 0, f"exit {p.returncode}, stderr {p.stderr!r}")
check("hang", "looks hung" in p.stderr, f"no hang reported: {p.stderr!r}")
check("hang", "attempt 1 done" in p.stdout, f"not restarted: {p.stdout!r}")
check("hang", took < 30, f"took {took:.1f}s for a 1 s hang timeout (the hung attempt sleeps 60 s)")
print(f"hang: detected and restarted in {took:.2f}s (timeout 1 s)")

# busy: burns CPU for 3 s with a 1 s hang timeout
BUSY = r'''
import time
t = time.time()
while time.time() - t < 3:
    sum(range(10000))
print("busy done")
'''
p, took = run(["--hang-timeout", "1s", "--restart", "on-failure"], BUSY)
check("busy", p.returncode == 0 and "busy done" in p.stdout and "hung" not in p.stderr,
      f"exit {p.returncode}, stderr {p.stderr!r}")
print(f"busy: left alone ({took:.2f}s)")

# slow but busy: 30 ms of work every 200 ms for 3 s
SLOW = r'''
import time
t = time.time()
while time.time() - t < 3:
    s = time.time()
    while time.time() - s < 0.03:
        sum(range(1000))
    time.sleep(0.17)
print("slow done")
'''
p, took = run(["--hang-timeout", "1s", "--restart", "on-failure"], SLOW)
check("slow", p.returncode == 0 and "slow done" in p.stdout and "hung" not in p.stderr,
      f"exit {p.returncode}, stderr {p.stderr!r}")
print(f"slow but busy: left alone ({took:.2f}s)")

# policy: on-failure, a job that always fails: 1 + 2 attempts, stable run id
FAIL = r'''
import os
print(os.environ["GPUCTL_RUN_ID"], os.environ["GPUCTL_RESTART_COUNT"])
raise SystemExit(3)
'''
p, _ = run(["--restart", "on-failure", "--max-restarts", "2", "--backoff", "0.05s:0.1s"], FAIL)
lines = [l.split() for l in p.stdout.splitlines()]
check("on-failure", p.returncode == 3, f"exit {p.returncode}")
check("on-failure", [l[1] for l in lines] == ["0", "1", "2"], f"attempts {lines}")
check("on-failure", len({l[0] for l in lines}) == 1 and re.fullmatch(r"[0-9a-f]{16}", lines[0][0] if lines else ""),
      f"run ids {lines}")
check("on-failure", "--max-restarts 2 reached" in p.stderr, f"stderr {p.stderr!r}")
p, _ = run(["--restart", "never"], FAIL)
check("never", p.returncode == 3 and len(p.stdout.splitlines()) == 1, f"exit {p.returncode}, {p.stdout!r}")
p, _ = run(["--restart", "on-failure", "--max-restarts", "2"], "print('ok')")
check("success", p.returncode == 0 and p.stdout.count("ok") == 1, f"a successful job was restarted: {p.stdout!r}")

# resume: attempt 0 commits a checkpoint and fails; attempt 1 sees GPUCTL_RESUME_FROM
RESUME = r'''
import os, subprocess, sys
d = os.environ["GPUCTL_CHECKPOINT_DIR"]
if os.environ["GPUCTL_RESTART_COUNT"] == "0":
    assert "GPUCTL_RESUME_FROM" not in os.environ
    os.makedirs(os.path.join(d, "step-7"))
    open(os.path.join(d, "step-7", "w"), "w").write("7")
    subprocess.run([sys.argv[1], "ckpt", "commit", d, os.path.join(d, "step-7")], check=True)
    raise SystemExit(1)
print("resume", os.path.basename(os.environ["GPUCTL_RESUME_FROM"]))
'''
ck = os.path.join(work, "ck")
p = subprocess.run([GPUCTL, "--sim", NODE, "run", "--restart", "on-failure", "--backoff", "0.05s",
                    "--checkpoint-dir", ck, "--", sys.executable, "-c", RESUME, GPUCTL],
                   env=env, capture_output=True, text=True, timeout=60)
check("resume", p.returncode == 0 and "resume step-7" in p.stdout, f"exit {p.returncode}, {p.stdout!r} {p.stderr!r}")


# orphan: gpuctl killed with SIGKILL; the job goes on and keeps its GPUs until it ends
def leased():
    q = subprocess.run([GPUCTL, "--sim", NODE, "leases", "--json"], env=env, capture_output=True, text=True)
    return len(json.loads(q.stdout)["leases"]) if q.returncode == 0 else -1


flag = os.path.join(work, "orphan-started")
sup = subprocess.Popen([GPUCTL, "--sim", NODE, "run", "-n", "2", "--", sys.executable, "-c",
                        f"import time; open({flag!r}, 'w').close(); time.sleep(3)"], env=env)
for _ in range(200):
    if os.path.exists(flag):
        break
    time.sleep(0.05)
sup.kill()
sup.wait()
check("orphan", leased() == 2, f"{leased()} GPUs leased while the job of a killed gpuctl runs")
for _ in range(100):
    if leased() == 0:
        break
    time.sleep(0.1)
check("orphan", leased() == 0, "GPUs still leased after the orphaned job ended")
print("orphan: the job keeps its GPUs after gpuctl is killed, and frees them when it ends")

shutil.rmtree(work, ignore_errors=True)
harness.finish()
