#!/usr/bin/env python3
"""A gpuctld that cannot start has acted on nothing (issue 32, item 9).

User A leases GPU 3 (gpuctl run); user B's process runs on it: a violation
that `--enforce kill` signals. gpuctld is started with `--enforce kill` and
a notification hook, and must fail to start:

  port:   its --listen port is held by another socket ("cannot listen");
  queue:  another gpuctld already serves the same --queue-db and
          --queue-socket ("is served by pid N");

each time it exits non-zero with that line, B's process was not signalled,
and no event reached the hook. Then a gpuctld that does start kills B's
process: the violation was there to act on.
--check-config refuses what start refuses of --listen (exit 2).
Usage: startup.py GPUCTLD GPUCTL SRCDIR SIMHOLD
"""
import os
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import policy  # noqa: E402
from policy import GPUCTL, GPUCTLD, bg, check, finish, gpuctl, hold, log, setup, start, until  # noqa: E402

A, B = setup("startup")
events = os.path.join(policy.work, "events")
hook = os.path.join(policy.work, "hook.sh")
with open(hook, "w") as f:
    f.write(f"#!/bin/sh\n{{ cat; echo; }} >> {events}\n")
os.chmod(hook, 0o755)
ACT = ["--enforce", "kill", "--enforce-grace", "1s", "--notify-command", hook]


def refused(*args):
    """a gpuctld (0.2 s samples, enforcing, its queue in the work directory) that must not start:
    (exit code, what it said)"""
    q = ["--queue-db", os.path.join(policy.work, "q.db"), "--queue-socket", policy.sock,
         "--log-dir", os.path.join(policy.work, "logs")]
    p = subprocess.run([GPUCTLD, "--sim", policy.NODE, "--interval", "0.2s", *q, *ACT, *args], env=policy.env,
                       capture_output=True, text=True, timeout=60)
    time.sleep(0.5)  # a signal it sent would have been delivered by now
    return p.returncode, p.stderr


def untouched():
    """B's process alive, no event sent"""
    return hb.poll() is None and not os.path.exists(events)


first = None
try:
    job = bg(A, GPUCTL, "--sim", policy.NODE, "run", "--gpus", "3", "--name", "mine", "--", "sleep", "120")
    check("A leases GPU 3", until(lambda: "3 " in gpuctl("leases").stdout), gpuctl("leases").stdout)
    hb = hold(B, 3)
    check("B's process runs on GPU 3", until(lambda: str(hb.pid) in gpuctl(
        "query", "--query-compute-apps=pid", "--format=csv,noheader").stdout))

    # the listen port is taken
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    code, said = refused("--listen", f"127.0.0.1:{port}")
    check("port in use: gpuctld exits 1 with one line", code == 1 and said.count("\n") == 1 and
          "cannot listen on 127.0.0.1:" in said and "Address already in use" in said, (code, said))
    check("port in use: B's process was not signalled, no event sent", untouched(), (hb.returncode, said))
    check("port in use: nothing logged of a violation", "SIGTERM" not in said and "violat" not in said, said)
    taken.close()

    # the queue is served by another gpuctld (one that does not enforce)
    first, url = start()
    code, said = refused("--listen", "127.0.0.1:0")
    check("queue served: gpuctld exits 1 naming the first", code == 1 and said.count("\n") == 1 and
          f"is served by pid {first.pid}" in said, (code, said))
    check("queue served: B's process was not signalled, no event sent", untouched(), (hb.returncode, said))
    check("queue served: the first gpuctld still serves its queue", first.poll() is None and
          harness.queue_request(policy.sock, {"op": "list"}).get("ok") is True)
    harness.stop(first)
    first = None

    # a bad --listen is refused by --check-config as by start
    for args, frag in [(["--listen", "192.0.2.1:9400"], "add --allow-remote"),
                       (["--listen", "127.0.0.1:99999"], "invalid port"),
                       (["--listen", "localhost:9400"], "numeric IPv4 or IPv6")]:
        r = subprocess.run([GPUCTLD, *args, "--check-config"], env=policy.env, capture_output=True, text=True)
        check(f"--check-config {' '.join(args)}: exit 2, one line", r.returncode == 2 and frag in r.stderr and
              r.stderr.count("\n") == 1, r)
    r = subprocess.run([GPUCTLD, "--listen", "192.0.2.1:9400", "--allow-remote", "--check-config"], env=policy.env,
                       capture_output=True, text=True)
    check("--check-config: --allow-remote allows it", r.returncode == 0, r)

    # the violation was real: a gpuctld that starts acts on it
    d, url = start(*ACT)
    check("a gpuctld that starts kills B's process",
          until(lambda: hb.poll() is not None) and hb.returncode == -signal.SIGTERM, (hb.returncode, log))
    check("and says so through the hook", until(lambda: os.path.exists(events)))
    check("A's job lives on", job.poll() is None)
    harness.stop(d)
finally:
    finish(first)
