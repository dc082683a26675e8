#!/usr/bin/env python3
"""Lease enforcement (issue 21) with two real users on a simulated node.

User A leases GPU 3 (gpuctl run). On it run, as compute processes
(gpuctl-sim-hold): a process of user B, one of root and one of A's own.
--enforce warn: B's is logged and counted
(gpuctl_policy_violations_total{user=B}), root's too, A's not; nothing is
signalled. --enforce kill: B's gets SIGTERM, and one that ignores SIGTERM
gets SIGKILL after --enforce-grace; root's and A's live on, and so does A's
job. --enforce-unleased: a process on a GPU nobody leased is one too.
Usage: enforce.py GPUCTLD GPUCTL SRCDIR SIMHOLD
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpuctld_proc  # noqa: E402
import testusers  # noqa: E402

GPUCTLD, GPUCTL, SRC = os.path.realpath(sys.argv[1]), os.path.realpath(sys.argv[2]), sys.argv[3]
SIMHOLD = os.path.realpath(sys.argv[4])
NODE = os.path.join(SRC, "tests", "cli", "nodes", "idle-8x.json")
errors = []
A, B = testusers.create("the enforcement test creates two users")

work = tempfile.mkdtemp(prefix="gpuctl-enforce-")
os.chmod(work, 0o755)
env = {k: v for k, v in os.environ.items() if not k.startswith("GPUCTL_") or k == "GPUCTL_SIM_LIBDIR"}
env.update({"GPUCTL_STATE_DIR": os.path.join(work, "state"), "GPUCTL_SIM_RUNDIR": os.path.join(work, "rd")})
for d in ("state", "rd"):
    os.makedirs(os.path.join(work, d))
    os.chmod(os.path.join(work, d), 0o1777)
procs = []


def check(name, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + name)
    if not cond:
        errors.append(f"{name}: {detail}")
    return cond


def until(cond, secs=10):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.1)
    return cond()


def bg(user, *cmd):
    argv = testusers.as_user_cmd(user, *cmd) if user else list(cmd)
    p = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    procs.append(p)
    return p


def hold(user, gpu, script="exec sleep 60"):
    """a compute process of user on GPU gpu: gpuctl-sim-hold registers its pid, then execs sh"""
    return bg(user, SIMHOLD, "--gpu", str(gpu), "--mem", "1G", "--", "sh", "-c", script)


def on_gpu(gpu):
    """the pids the simulated driver reports on GPU gpu"""
    r = subprocess.run([GPUCTL, "--sim", NODE, "query", "--query-compute-apps=gpu_uuid,pid", "--format=csv,noheader"],
                       env=env, capture_output=True, text=True)
    uuid = subprocess.run([GPUCTL, "--sim", NODE, "query", "--query-gpu=uuid", "--format=csv,noheader", "-i",
                           str(gpu)], env=env, capture_output=True, text=True).stdout.strip()
    return {int(l.split(", ")[1]) for l in r.stdout.splitlines() if l.startswith(uuid)}


def alive(p):
    return p.poll() is None


log = []


def start(*args):
    """gpuctld, once it listens; what it logs (its first sample's lines come before) goes to log"""
    d = subprocess.Popen([GPUCTLD, "--sim", NODE, "--listen", "127.0.0.1:0", "--no-queue", "--interval", "0.2s",
                          *args], env=env, stderr=subprocess.PIPE, text=True)
    log.clear()
    for _ in range(50):
        line = d.stderr.readline()
        log.append(line)
        m = re.search(r"listening on (http://\S+)/", line)
        if m:
            threading.Thread(target=lambda: log.extend(iter(d.stderr.readline, "")), daemon=True).start()
            return d, m.group(1)
    d.kill()
    raise SystemExit(f"FAIL: gpuctld did not start: {log!r}")


def violations(url):
    text = urllib.request.urlopen(url + "/metrics", timeout=10).read().decode()
    return {m.group(1): int(m.group(2)) for m in
            re.finditer(r'^gpuctl_policy_violations_total\{user="([^"]*)"\} (\d+)$', text, re.M)}


daemon = None
try:
    job = bg(A, GPUCTL, "--sim", NODE, "run", "--gpus", "3", "--name", "mine", "--", "sleep", "60")
    def holder3():
        r = subprocess.run([GPUCTL, "--sim", NODE, "leases", "--json"], env=env, capture_output=True, text=True)
        return [l["user"] for l in json.loads(r.stdout)["leases"] if l["gpu"] == 3] if r.returncode == 0 else []
    check("A leases GPU 3", until(lambda: holder3() == [A]), holder3())
    hb, hr, ha = hold(B, 3), hold(None, 3), hold(A, 3)
    check("B's, root's and A's processes run on GPU 3", until(lambda: {hb.pid, hr.pid, ha.pid} <= on_gpu(3)),
          on_gpu(3))

    # warn: logged and counted, nothing signalled
    daemon, url = start("--enforce", "warn")
    v = until(lambda: (lambda x: x if B in x and "root" in x else None)(violations(url)))
    check("warn: B's process and root's are counted, A's own is not", v and v.get(B) == 1 and v.get("root") == 1 and
          A not in v, v)
    check("warn: gpuctld's log names the GPU, its holder, the process and its user",
          any(f"GPU 3 is leased by {A}; pid {hb.pid} of {B}" in l and l.rstrip().endswith("warned") for l in log), log)
    time.sleep(1.0)
    check("warn: counted once, not once a sample", violations(url).get(B) == 1, violations(url))
    check("warn: nothing is signalled", alive(hb) and alive(hr) and alive(ha) and alive(job))
    gpuctld_proc.stop(daemon)

    # kill: SIGTERM, and SIGKILL after the grace for one that ignores it
    stubborn = hold(B, 3, "trap '' TERM; while :; do sleep 0.1; done")
    check("B's stubborn process runs on GPU 3", until(lambda: stubborn.pid in on_gpu(3)), on_gpu(3))
    daemon, url = start("--enforce", "kill", "--enforce-grace", "1s")
    t0 = time.monotonic()
    check("kill: B's process ends on SIGTERM", until(lambda: not alive(hb)) and hb.returncode == -signal.SIGTERM,
          hb.returncode)
    check("kill: the one that ignores SIGTERM gets SIGKILL after the grace",
          until(lambda: not alive(stubborn)) and stubborn.returncode == -signal.SIGKILL and
          time.monotonic() - t0 >= 0.9, (stubborn.returncode, time.monotonic() - t0))
    check("kill: both said in the log", until(lambda: any(f"pid {stubborn.pid} of {B}" in l and "SIGKILL" in l
                                                          for l in log)), log)
    check("kill: root's process is reported, never signalled",
          alive(hr) and any(f"pid {hr.pid} of root" in l and "reported only: root's" in l for l in log), log)
    check("kill: A's own process and A's job live on", alive(ha) and alive(job))
    gpuctld_proc.stop(daemon)

    # all GPU work must be leased: B on GPU 5, which nobody leased
    free5 = hold(B, 5)
    check("B's process runs on GPU 5", until(lambda: free5.pid in on_gpu(5)), on_gpu(5))
    daemon, url = start("--enforce", "warn")
    time.sleep(0.8)
    check("without --enforce-unleased, a process on a GPU nobody leased is fine",
          not any(f"pid {free5.pid}" in l for l in log), log)
    gpuctld_proc.stop(daemon)
    daemon, url = start("--enforce", "warn", "--enforce-unleased")
    check("with --enforce-unleased it is a violation", until(lambda: any(
        f"GPU 5 is not leased; pid {free5.pid} of {B}" in l for l in log)), log)
    r = subprocess.run([GPUCTLD, "--enforce", "sometimes", "--check-config"], capture_output=True, text=True)
    check("a bad --enforce: one line, exit 2", r.returncode == 2 and "expected off, warn or kill" in r.stderr and
          r.stderr.count("\n") == 1, r)
finally:
    gpuctld_proc.stop(daemon)
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()
    shutil.rmtree(work, ignore_errors=True)

for e in errors:
    print("FAIL:", e)
sys.exit(1 if errors else 0)
