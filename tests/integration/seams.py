#!/usr/bin/env python3
"""Trust at the seams (issue 16): what broke between verbs, between users and
between daemons, with two real unprivileged users created here.

  daemons:   a second gpuctld on the same queue database or the same socket
             refuses to start, naming the pid of the first; the first keeps
             its socket (nobody else unlinks it), and gpuctl queue still
             reaches it; an unprivileged user cannot take it over either; a
             lock file another user left in a shared socket directory does
             not keep root's gpuctld from starting; after the first dies by
             SIGKILL the next one starts.
Skips (77) unless run as root with useradd (it must create the users).
Usage: seams.py GPUCTLD GPUCTL SRCDIR
"""
import fcntl
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

import gpuctld_proc
import testusers

GPUCTLD, GPUCTL, SRC = os.path.realpath(sys.argv[1]), os.path.realpath(sys.argv[2]), sys.argv[3]
NODE = os.path.join(SRC, "tests", "cli", "nodes", "idle-8x.json")
errors = []
A, B = testusers.create("the seams test creates two users")

work = tempfile.mkdtemp(prefix="gpuctl-seams-")
os.chmod(work, 0o755)
shared = os.path.join(work, "run")  # shared by every user, as /run/gpuctl is
os.makedirs(shared)
os.chmod(shared, 0o1777)
env = {k: v for k, v in os.environ.items() if not k.startswith("GPUCTL_") or k == "GPUCTL_SIM_LIBDIR"}
env.update({"GPUCTL_STATE_DIR": shared, "GPUCTL_SIM_RUNDIR": os.path.join(work, "rd")})
os.makedirs(env["GPUCTL_SIM_RUNDIR"])
os.chmod(env["GPUCTL_SIM_RUNDIR"], 0o1777)


def check(name, cond, detail):
    if not cond:
        errors.append(f"{name}: {detail}")
    return cond


def gpuctld_cmd(db, sock, logs="logs"):
    return [GPUCTLD, "--sim", NODE, "--listen", "127.0.0.1:0", "--queue-db", db, "--queue-socket", sock,
            "--log-dir", os.path.join(work, logs), "--gpuctl", GPUCTL]


daemons = []  # stopped at the end, whatever happened


def start(db, sock):
    d = subprocess.Popen(gpuctld_cmd(db, sock), env=env, stderr=subprocess.PIPE, text=True)
    daemons.append(d)
    for _ in range(10):
        line = d.stderr.readline()
        if "queue on" in line:
            return d
    d.kill()
    raise SystemExit(f"FAIL: gpuctld did not start its queue: {line!r}")


def refused(cmd, user=None):
    """run a gpuctld that must refuse: (exit code, its stderr)"""
    if user:
        cmd = testusers.as_user_cmd(user, *cmd)
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=10)
    except subprocess.TimeoutExpired:
        return None, "it did not refuse: still running after 10 s"
    return p.returncode, p.stderr.strip()


def queue_ok(sock):
    p = subprocess.run([GPUCTL, "queue"], env=dict(env, GPUCTL_QUEUE_SOCKET=sock), capture_output=True, text=True,
                       timeout=30)
    return p.returncode == 0


try:
    # ---- daemons: one gpuctld per queue database and per socket (item 1)
    db, sock = os.path.join(work, "q.db"), os.path.join(shared, "gpuctld.sock")
    first = start(db, sock)
    for what, cmd, want in [
        ("same database and socket", gpuctld_cmd(db, sock), f"the queue at '{db}' is served by pid {first.pid}"),
        ("same database, other socket", gpuctld_cmd(db, os.path.join(shared, "other.sock")),
         f"the queue at '{db}' is served by pid {first.pid}"),
        ("other database, same socket", gpuctld_cmd(os.path.join(work, "q2.db"), sock),
         f"the queue socket '{sock}' is served by pid {first.pid}"),
    ]:
        rc, err = refused(cmd)
        check("daemons", rc == 1 and err == f"gpuctld: {want}", f"{what}: exit {rc}, {err!r}")
        check("daemons", os.path.exists(sock) and queue_ok(sock), f"{what}: the first gpuctld's socket is gone")
    check("daemons", not os.path.exists(os.path.join(shared, "other.sock")), "the refused gpuctld made its socket")
    # an unprivileged user aims a gpuctld of its own at root's socket: refused, the socket stays
    rc, err = refused(gpuctld_cmd(os.path.join(shared, "b.db"), sock, logs="run"), user=B)
    check("daemons", rc == 1 and sock in err and len(err.splitlines()) == 1, f"user's gpuctld: exit {rc}, {err!r}")
    check("daemons", os.path.exists(sock) and queue_ok(sock), "a user's gpuctld removed root's socket")
    print(f"daemons: a second gpuctld is refused naming pid {first.pid}; the socket stays and is served")

    # a user's lock file, held, in the shared socket directory: root's next gpuctld starts anyway
    hostile_sock = os.path.join(shared, "next.sock")
    holder = subprocess.Popen(testusers.as_user_cmd(B, "flock", "-x", hostile_sock + ".lock", "sleep", "60"),
                              env=env, start_new_session=True)
    for _ in range(100):
        if os.path.exists(hostile_sock + ".lock"):
            break
        time.sleep(0.05)
    time.sleep(0.2)
    second = start(os.path.join(work, "next.db"), hostile_sock)
    check("daemons", queue_ok(hostile_sock), "root's gpuctld beside a user's lock file does not serve")
    gpuctld_proc.stop(second)
    os.killpg(holder.pid, signal.SIGKILL)  # flock and its sleep
    holder.wait()

    # the kernel drops the lock when the holder dies, even by SIGKILL
    first.send_signal(signal.SIGKILL)
    first.wait()
    again = start(db, sock)
    check("daemons", queue_ok(sock), "no queue after the first gpuctld was killed")
    gpuctld_proc.stop(again)
    check("daemons", not os.path.exists(sock), "a stopped gpuctld left its socket")
    print("daemons: a user's held lock file does not block root; after SIGKILL the next gpuctld starts")
finally:
    for d in daemons:
        gpuctld_proc.stop(d)
    testusers.cleanup()

if errors:
    print("FAIL")
    for e in errors:
        print("  " + e)
    sys.exit(1)
subprocess.run(["rm", "-rf", work])
print("OK")
