"""What the integration test scripts share (and tests/advise, tests/abi, bench/):
checks and their report, a wait for a condition, gpuctld started and stopped,
and the per-test users (testusers.py, re-exported as harness.users).

    import harness
    from harness import check, until

    check("name", cond, detail)      # a failure is "name: detail"; returns cond
    v = until(lambda: cond(), 30)    # cond's value once true, within 30 s; else its last value
    j = until_value(get, ok, 30)     # get()'s value once ok(it), within 30 s; else its last value
    harness.finish()                 # FAIL: lines and exit 1, or the ok line and exit 0

A script outside tests/integration puts this directory first on sys.path, as
the scripts in it do for their own directory. A deadline of until() is only a
bound after which the test gives up: tests assert counts and orders, never how
long something took, so keep the bounds generous."""
import json
import re
import shutil
import socket
import subprocess
import sys
import time

import testusers

users = testusers  # the per-test users: harness.users.create(why), users.as_user_cmd(user, *cmd), users.cleanup()
errors = []     # one "name: detail" per failure
verbose = False  # True: print "ok   name" or "FAIL name" as each check is made (the policy tests, explain-exit);
                 # "detail": "ok   name: detail", "FAIL name: detail" (the dashboard)


def check(name, cond, detail=""):
    """record a failure when cond is false ("name: detail", or "name" without a detail); returns cond"""
    if verbose:
        said = f"{name}: {detail}" if verbose == "detail" and detail else name
        print(("ok   " if cond else "FAIL ") + said, flush=True)
    if not cond:
        errors.append(name if isinstance(detail, str) and detail == "" else f"{name}: {detail}")
    return cond


def fail(what):
    """record a failure found without a check (an if that decided it already); returns False"""
    return check(what, False)


def until(cond, secs, step=0.05):
    """cond()'s value once it is true, polled every step seconds within secs; else its value at the
    deadline (one last look). secs is a bound after which to give up, never a measurement."""
    end = time.monotonic() + secs
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(step)
    return cond()


def until_value(get, ok, secs, step=0.05):
    """get()'s value once ok(value) is true, polled every step seconds within secs; else the value it
    had at the deadline (for a failure's detail: the state a job was left in)"""
    last = [None]

    def looked():
        last[0] = get()
        return ok(last[0])
    until(looked, secs, step)
    return last[0]


def finish(ok="OK", work=None, on_fail=None):
    """the report, and exit: each failure as "FAIL: name: detail" and exit 1, or the ok line and exit 0.
    work: a directory removed on a pass (kept on a failure, to look at); on_fail: called after the
    failures are printed (a log's tail). Called from a finally, an exception on its way out is a
    failure too, not hidden by the exit."""
    exc = sys.exc_info()[1]
    if isinstance(exc, SystemExit):
        # start_gpuctld()'s "FAIL: gpuctld did not start: ..." is a failure, not a pass by way of this exit
        if exc.code not in (None, 0):
            errors.append(str(exc.code).removeprefix("FAIL: "))
    elif exc is not None:
        import traceback
        traceback.print_exception(type(exc), exc, exc.__traceback__)
        errors.append(f"the test raised {type(exc).__name__}: {exc}")
    if errors:
        for e in errors:
            print("FAIL:", e, flush=True)
        print(f"FAIL: {len(errors)} problem(s)" + (f"; its files are kept in {work}" if work else ""), flush=True)
        if on_fail:
            on_fail()
        sys.exit(1)
    if work:
        shutil.rmtree(work, ignore_errors=True)
    print(ok, flush=True)
    sys.exit(0)


def start_gpuctld(gpuctld, node, env, *args):
    """gpuctld on the simulated node, on a free port, without a queue (args go on its command line):
    the process and its base URL once it has printed its "listening on" line"""
    d = subprocess.Popen([gpuctld, "--sim", node, "--listen", "127.0.0.1:0", "--no-queue", *args], env=env,
                         stderr=subprocess.PIPE, text=True)
    line = d.stderr.readline()
    m = re.search(r"listening on (http://\S+)", line)
    if not m:
        d.kill()
        raise SystemExit(f"FAIL: gpuctld did not start: {line!r} {d.stderr.read()!r}")
    return d, m.group(1).rstrip("/")


def stop(p):
    """TERM, then KILL after 10 s; None and finished processes are fine"""
    if p and p.poll() is None:
        p.terminate()
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def queue_request(sock, obj, timeout=30):
    """one JSON request line to gpuctld's queue socket, its one JSON answer line"""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(timeout)
    s.connect(sock)
    s.sendall(json.dumps(obj).encode() + b"\n")
    data = b""
    while not data.endswith(b"\n"):
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    return json.loads(data)
