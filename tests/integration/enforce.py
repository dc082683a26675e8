#!/usr/bin/env python3
"""Lease enforcement (issue 21) with two real users on a simulated node.

User A leases GPU 3 (gpuctl run). On it run, as compute processes
(gpuctl-sim-hold): a process of user B, one of root and one of A's own.
--enforce warn: B's is logged and counted
(gpuctl_policy_violations_total{user=B}), root's too, A's not; nothing is
signalled. --enforce kill: B's gets SIGTERM, and one that ignores SIGTERM
gets SIGKILL after --enforce-grace; root's and A's live on, and so does A's
job. --enforce-unleased: a process on a GPU nobody leased is one too. The
offender and the holder are told on their terminals (pseudo-terminals the
test makes), except on one closed to messages or not the user's own.
Usage: enforce.py GPUCTLD GPUCTL SRCDIR SIMHOLD
"""
import fcntl
import grp
import json
import os
import pwd
import re
import signal
import subprocess
import sys
import termios
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import testusers  # noqa: E402
import policy  # noqa: E402
from policy import GPUCTL, GPUCTLD, bg, check, finish, gpuctl, hold, log, setup, start, until  # noqa: E402

A, B = setup("enforce")


def on_gpu(gpu):
    """the pids the simulated driver reports on GPU gpu"""
    apps = gpuctl("query", "--query-compute-apps=gpu_uuid,pid", "--format=csv,noheader").stdout
    uuid = gpuctl("query", "--query-gpu=uuid", "--format=csv,noheader", "-i", str(gpu)).stdout.strip()
    return {int(l.split(", ")[1]) for l in apps.splitlines() if l.startswith(uuid)}


def alive(p):
    return p.poll() is None


def on_tty(user, mode, *cmd, owner=None):
    """cmd as user in a session of its own whose controlling terminal is a new pseudo-terminal, owned by
    owner (user by default) with mode (0o620: open to messages, 0o600: mesg n): (the process, the master)"""
    master, slave = os.openpty()
    os.fchown(slave, pwd.getpwnam(owner or user).pw_uid, grp.getgrnam("tty").gr_gid)
    os.fchmod(slave, mode)

    def ctty():
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    p = subprocess.Popen(testusers.as_user_cmd(user, *cmd), env=policy.env, stdin=slave, stdout=slave,
                         stderr=slave, preexec_fn=ctty, cwd=policy.work)
    os.close(slave)
    os.set_blocking(master, False)
    policy.procs.append(p)
    return p, master


def screen(master, got=b""):
    """what was written on the terminal so far"""
    try:
        while True:
            b = os.read(master, 4096)
            if not b:
                break
            got += b
    except (BlockingIOError, OSError):
        pass
    return got


def violations(url):
    text = urllib.request.urlopen(url + "/metrics", timeout=10).read().decode()
    return {m.group(1): int(m.group(2)) for m in
            re.finditer(r'^gpuctl_policy_violations_total\{user="([^"]*)"\} (\d+)$', text, re.M)}


daemon = None
try:
    job = bg(A, GPUCTL, "--sim", policy.NODE, "run", "--gpus", "3", "--name", "mine", "--", "sleep", "60")

    def holder3():
        r = gpuctl("leases", "--json")
        return [l["user"] for l in json.loads(r.stdout)["leases"] if l["gpu"] == 3] if r.returncode == 0 else []

    check("A leases GPU 3", until(lambda: holder3() == [A]), holder3())
    hb, hr, ha = hold(B, 3), hold(None, 3), hold(A, 3)
    check("B's, root's and A's processes run on GPU 3", until(lambda: {hb.pid, hr.pid, ha.pid} <= on_gpu(3)),
          on_gpu(3))

    # warn: logged and counted, nothing signalled
    daemon, url = start("--enforce", "warn", queue=False)
    v = until(lambda: (lambda x: x if B in x and "root" in x else None)(violations(url)))
    check("warn: B's process and root's are counted, A's own is not", v and v.get(B) == 1 and v.get("root") == 1 and
          A not in v, v)
    check("warn: gpuctld's log names the GPU, its holder, the process and its user",
          any(f"GPU 3 is leased by {A}; pid {hb.pid} of {B}" in l and l.rstrip().endswith("warned") for l in log), log)
    time.sleep(1.0)
    check("warn: counted once, not once a sample", violations(url).get(B) == 1, violations(url))
    check("warn: nothing is signalled", alive(hb) and alive(hr) and alive(ha) and alive(job))
    harness.stop(daemon)

    # kill: SIGTERM, and SIGKILL after the grace for one that ignores it
    stubborn = hold(B, 3, "trap '' TERM; while :; do sleep 0.1; done")
    check("B's stubborn process runs on GPU 3", until(lambda: stubborn.pid in on_gpu(3)), on_gpu(3))
    daemon, url = start("--enforce", "kill", "--enforce-grace", "1s", queue=False)
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
    harness.stop(daemon)

    # all GPU work must be leased: B on GPU 5, which nobody leased
    free5 = hold(B, 5)
    check("B's process runs on GPU 5", until(lambda: free5.pid in on_gpu(5)), on_gpu(5))
    daemon, url = start("--enforce", "warn", queue=False)
    time.sleep(0.8)
    check("without --enforce-unleased, a process on a GPU nobody leased is fine",
          not any(f"pid {free5.pid}" in l for l in log), log)
    harness.stop(daemon)
    daemon, url = start("--enforce", "warn", "--enforce-unleased", queue=False)
    check("with --enforce-unleased it is a violation", until(lambda: any(
        f"GPU 5 is not leased; pid {free5.pid} of {B}" in l for l in log)), log)
    harness.stop(daemon)

    # the people concerned are told on their terminals: B on B's (open to messages), A on the lease's;
    # not on a terminal closed to messages (mesg n), nor on one that is not the process's user's
    lease6, ta = on_tty(A, 0o620, GPUCTL, "--sim", policy.NODE, "run", "--gpus", "6", "--name", "six", "--",
                        "sleep", "60")
    check("A leases GPU 6 from a terminal", until(lambda: re.search(r"^6 ", gpuctl("leases").stdout, re.M)))
    hold_cmd = [policy.SIMHOLD, "--gpu", "6", "--mem", "1G", "--", "sleep", "60"]
    b1, tb1 = on_tty(B, 0o620, *hold_cmd)
    b2, tb2 = on_tty(B, 0o600, *hold_cmd)
    b3, tb3 = on_tty(B, 0o620, *hold_cmd, owner=A)
    check("B's three processes run on GPU 6", until(lambda: {b1.pid, b2.pid, b3.pid} <= on_gpu(6)), on_gpu(6))
    events = os.path.join(policy.work, "events")
    hook = os.path.join(policy.work, "hook.sh")
    with open(hook, "w") as f:
        f.write(f"#!/bin/sh\n{{ cat; echo; }} >> {events}\n")
    os.chmod(hook, 0o755)

    def hook_events():
        try:
            with open(events) as f:
                return [json.loads(l) for l in f if l.strip()]
        except OSError:
            return []
    daemon, url = start("--enforce", "warn", "--notify-command", hook, queue=False)
    check("three violations on GPU 6", until(lambda: sum(f"GPU 6 is leased by {A}; pid" in l for l in log) == 3), log)
    time.sleep(0.5)
    s1, s2, s3, sa = (screen(t).decode(errors="replace") for t in (tb1, tb2, tb3, ta))
    check("B is told on B's terminal: the process, the GPU, its holder, what to do",
          f"gpuctld: your process {b1.pid} (" in s1 and f"uses GPU 6, which is leased by {A}: lease GPUs with "
          "gpuctl run" in s1, s1)
    check("not on a terminal closed to messages (mesg n)", "gpuctld" not in s2, s2)
    check("not on a terminal that is not the process's user's", "gpuctld" not in s3, s3)
    check("A is told on the lease's terminal, once per violation",
          all(f"gpuctld: pid {b.pid} of {B} (" in sa for b in (b1, b2, b3)) and
          sa.count("which you lease for six: warned") == 3, sa)
    ev = until(lambda: (lambda v: v if len(v) == 3 else None)([e for e in hook_events() if e["gpu"]["index"] == 6]))
    told = {e["process"]["pid"]: sorted(e["told"]) for e in ev or []}
    check("the event says who was told", told == {b1.pid: sorted([A, B]), b2.pid: [A], b3.pid: [A]}, told)
    r = subprocess.run([GPUCTLD, "--enforce", "sometimes", "--check-config"], capture_output=True, text=True)
    check("a bad --enforce: one line, exit 2", r.returncode == 2 and "expected off, warn or kill" in r.stderr and
          r.stderr.count("\n") == 1, r)
finally:
    finish(daemon)
