#!/usr/bin/env python3
"""bench/hostile.py — what a hostile local user costs the others in authority mode
(bench/hostile.sh runs it; root, two real users made for the run).

gpuctld --authority on the simulated 8-GPU example node. The victim (user A)
measures, ROUNDS times each: `gpuctl run -n 1 -- true` (wall time) and
`gpuctl submit -n 1 -- STAMP` until its job starts (submit's start to the job's
first timestamp). First unloaded, then under each attack of user B, which
runs for the whole of that row:

  fake claims   claim files of B's own on every GPU, in the state directory
  churn         2 000 live claim files rewritten in a loop
  self-block    B holds 1 GPU and waits for all 8
  waiters       B holds 1 GPU and keeps 64 requests for all 8 waiting in line
  ports         B holds its 8 ports and keeps asking for more
  connections   B keeps 32 connections open that never say anything
  listing       B lists the leases in a loop (gpuctl leases --json)
and, as a control, B's busy loop that does not touch gpuctl at all (what a
core kept busy costs on this machine: churn and the port flood are such loops).

Each row prints the medians and their ratio to the unloaded row (target
<= 2x), and both ratios to the control row: on a 2-core machine a core kept
busy by anyone costs the victim about 2x by itself, so "vs control" is what
the attack adds beyond its own CPU. Medians of ROUNDS (BENCH_ROUNDS, default 30).
Usage: hostile.py GPUCTLD GPUCTL SRCDIR STAMP
"""
import json
import os
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(sys.argv[3], "tests", "integration"))
import harness  # noqa: E402
import testusers  # noqa: E402

GPUCTLD, GPUCTL, SRC, STAMP = (os.path.realpath(a) for a in sys.argv[1:5])
NODE = os.path.join(SRC, "examples", "nodes", "h100-8x-sxm.json")
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "30"))

A, B = testusers.create("bench/hostile.py makes two users")
work = tempfile.mkdtemp(prefix="gpuctl-bench-hostile-")
os.chmod(work, 0o777)
auth = os.path.join(work, "auth")
os.mkdir(auth, 0o755)
for d in ("state", "rd", "logs", "stamps"):
    os.makedirs(os.path.join(work, d))
    os.chmod(os.path.join(work, d), 0o1777)
sock = os.path.join(auth, "gpuctld.sock")
env = {k: v for k, v in os.environ.items() if not k.startswith("GPUCTL_") or k == "GPUCTL_SIM_LIBDIR"}
env.update({"GPUCTL_STATE_DIR": os.path.join(work, "state"), "GPUCTL_SIM_RUNDIR": os.path.join(work, "rd"),
            "GPUCTL_AUTHORITY_DIR": auth, "GPUCTL_QUEUE_SOCKET": sock, "GPUCTL_SIM": NODE})
procs = []


def as_user(user, *argv, **kw):
    return testusers.as_user_cmd(user, *argv) if user else list(argv)


def bg(user, *argv):
    p = subprocess.Popen(as_user(user, *argv), env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True, cwd=work)
    procs.append(p)
    return p


def stop(ps):
    for p in ps:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()


def leases():
    return harness.queue_request(sock, {"op": "leases"})


def until(cond, secs=30):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.05)
    return False


CHURN = r"""
import fcntl, os, struct, sys, time
d, n = sys.argv[1], int(sys.argv[2]); fds = []
for i in range(n):
    p = os.path.join(d, "gpu-GPU-%08d-0000-0000-0000-000000000000.%016x" % (i, i))
    fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.fcntl(fd, 37, struct.pack("hhqqi", fcntl.F_WRLCK, 0, 0, 0, 0))
    fds.append(fd)
while True:
    for fd in fds:
        os.pwrite(fd, b'{"pid":0}', 0)
"""
PORTS = r"""
import json, socket, sys, time
held = []
while True:
    for port in range(31000, 31200):
        s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
        s.sendall(json.dumps({"op": "lease", "kind": "port", "port": port, "me": {}}).encode() + b"\n")
        a = s.makefile().readline()
        if '"granted"' in a:
            held.append(s)
        else:
            s.close()
"""
IDLE = r"""
import socket, sys, time
c = []
for _ in range(32):
    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); c.append(s)
time.sleep(3600)
"""


def attack(name):
    """start attack `name` as B; the processes to stop after the row"""
    py = sys.executable
    if name == "fake claims":
        uuids = [u for u in subprocess.run([GPUCTL, "query", "--query-gpu=uuid", "--format=csv,noheader"], env=env,
                                           capture_output=True, text=True).stdout.split()]
        coop = dict(env, GPUCTL_AUTHORITY_DIR=os.path.join(work, "none"))
        return [subprocess.Popen(as_user(B, GPUCTL, "run", "--shared", "--gpus", str(i), "--", "sleep", "3600"),
                                 env=coop, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, start_new_session=True, cwd=work)
                for i in range(len(uuids))]
    if name == "churn":
        return [bg(B, py, "-c", CHURN, os.path.join(work, "state"), "2000")]
    if name == "self-block":
        p1 = bg(B, GPUCTL, "run", "-n", "1", "--", "sleep", "3600")
        until(lambda: any(g["user"] == B for g in leases()["grants"]))
        return [p1, bg(B, GPUCTL, "run", "--wait", "-n", "8", "--", "true")]
    if name == "waiters":
        p1 = bg(B, GPUCTL, "run", "-n", "1", "--", "sleep", "3600")
        until(lambda: any(g["user"] == B for g in leases()["grants"]))
        return [p1] + [bg(B, GPUCTL, "run", "--wait", "-n", "8", "--", "true") for _ in range(64)]
    if name == "ports":
        return [bg(B, py, "-c", PORTS, sock)]
    if name == "connections":
        return [bg(B, py, "-c", IDLE, sock)]
    if name == "cpu (control)":
        return [bg(B, "sh", "-c", "while :; do :; done")]
    if name == "listing":
        return [bg(B, "sh", "-c", f"while :; do {GPUCTL} leases --json >/dev/null; done")]
    return []


def measure():
    run, start = [], []
    stamps = os.path.join(work, "stamps")
    for i in range(ROUNDS):
        t = time.perf_counter()
        r = subprocess.run(as_user(A, GPUCTL, "run", "-n", "1", "--", "true"), env=env, cwd=work,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        run.append((time.perf_counter() - t) * 1000)
        if r.returncode != 0:
            sys.exit(f"bench: the victim's gpuctl run failed: {r.stderr.strip()}; {json.dumps(leases())[:3000]}")
        f = os.path.join(stamps, f"s{len(os.listdir(stamps))}")
        t0 = time.time_ns()
        r = subprocess.run(as_user(A, GPUCTL, "submit", "-n", "1", "--", STAMP, f), env=env, cwd=work,
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"bench: the victim's submit failed: {r.stderr.strip()}")
        if not until(lambda: os.path.exists(f) and os.path.getsize(f) > 0, 60):
            sys.exit("bench: the victim's queued job did not start within 60 s")
        start.append((int(open(f).read().split()[0]) - t0) / 1e6)
    return statistics.median(run), statistics.median(start)


d = None
try:
    d = subprocess.Popen([GPUCTLD, "--sim", NODE, "--listen", "127.0.0.1:0", "--authority", "--authority-dir", auth,
                          "--queue-db", os.path.join(work, "q.db"), "--log-dir", os.path.join(work, "logs"),
                          "--config", "/dev/null"], env=env, stderr=subprocess.DEVNULL)
    if not until(lambda: os.path.exists(os.path.join(auth, "authority"))):
        sys.exit("bench: gpuctld --authority did not start")
    print(f"bench/hostile — {os.cpu_count()} cores, {ROUNDS} rounds a row, medians; victim {A}, attacker {B}")
    print(f"{'attack':<14} {'run -n 1 ms':>12} {'ratio':>7} {'submit->start ms':>17} {'ratio':>7}  target <= 2x"
          f"   {'vs control':>10}")
    base = measure()
    print(f"{'(none)':<14} {base[0]:>12.2f} {1:>7.2f} {base[1]:>17.2f} {1:>7.2f}")
    ctl = None
    for name in ("cpu (control)", "fake claims", "churn", "self-block", "waiters", "ports", "connections", "listing"):
        ps = attack(name)
        time.sleep(1)
        m = measure()
        stop(ps)
        until(lambda: not leases()["grants"] and not leases()["waiters"], 30)
        ra, rb = m[0] / base[0], m[1] / base[1]
        ok = "PASS" if ra <= 2 and rb <= 2 else "MISS"
        if ctl is None:
            ctl = m
        vs = f"{m[0] / ctl[0]:.2f} {m[1] / ctl[1]:.2f}"
        print(f"{name:<14} {m[0]:>12.2f} {ra:>7.2f} {m[1]:>17.2f} {rb:>7.2f}  {ok:<14} {vs:>10}")
finally:
    stop(procs)
    harness.stop(d)
    shutil.rmtree(work, ignore_errors=True)
    testusers.cleanup()
