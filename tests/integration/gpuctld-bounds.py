#!/usr/bin/env python3
"""gpuctld against bad and slow clients, and bad command lines (issue 8):

  slow:      a client that connects and sends nothing, or trickles a header
             (a byte every 0.3 s), is closed --timeout after it connected,
             and others are served meanwhile;
  cap:       with --max-connections 4 and four idle connections open, a
             fifth waits unserved until they time out;
  oversized: a 64 KiB header gets 431, a 20 KiB URL 414 (or a close), a body
             413, POST 405; unknown paths 404, ?seconds=abc 400;
  listen:    a non-loopback --listen is refused (exit 2) without
             --allow-remote; malformed --listen, --interval, --labels exit 2
             with one line naming the input.
Usage: gpuctld-bounds.py GPUCTLD SRCDIR
"""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import gpuctld_proc

GPUCTLD, SRC = sys.argv[1], sys.argv[2]
NODE = os.path.join(SRC, "examples", "nodes", "l4-2x.json")
work = tempfile.mkdtemp(prefix="gpuctld-bounds-")
env = {k: v for k, v in os.environ.items() if not k.startswith("GPUCTL_") or k == "GPUCTL_SIM_LIBDIR"}
env.update({"GPUCTL_STATE_DIR": os.path.join(work, "state"), "GPUCTL_SIM_RUNDIR": os.path.join(work, "rd")})
errors = []


def check(name, cond, detail):
    if not cond:
        errors.append(f"{name}: {detail}")
    return cond


def start(*args):
    d, base = gpuctld_proc.start(GPUCTLD, NODE, env, *args)
    return d, int(base.rsplit(":", 1)[1])


def request(port, raw, timeout=5):
    """send raw bytes, return the status code (None when closed without an answer)"""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(raw)
        data = b""
        while b"\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    except (ConnectionResetError, BrokenPipeError):
        data = b""
    finally:
        s.close()
    m = re.match(rb"HTTP/1\.[01] (\d+)", data)
    return int(m.group(1)) if m else None


def get(port, path="/metrics"):
    return request(port, f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())


def closed_within(s, secs):
    """seconds until the server closes s (None if it stays open)"""
    t0 = time.monotonic()
    s.settimeout(secs)
    try:
        while True:
            if not s.recv(4096):
                return time.monotonic() - t0
    except socket.timeout:
        return None
    except ConnectionResetError:
        return time.monotonic() - t0


d, port = start("--timeout", "1s", "--max-connections", "4", "--threads", "1")
try:
    # ---- status codes
    check("codes", get(port) == 200, "GET /metrics")
    check("codes", get(port, "/nope") == 404, "unknown path")
    check("codes", get(port, "/api/v1/history?seconds=abc") == 400, "bad seconds")
    # a %00 does not cut a path or a value short (issue 17, low)
    check("codes", get(port, "/metrics%00.html") == 404, "/metrics%00.html was served")
    check("codes", get(port, "/api/v1/history?seconds=5%00x") == 400, "seconds=5%00x was taken as 5")
    check("codes", get(port, "/api/v1/history?seconds=5") == 200, "good seconds")
    check("codes", request(port, b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n") == 405,
          "POST")
    # refused on the headers, before any body is read: the client sends none and still gets its answer
    t1 = time.monotonic()
    early = (request(port, b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n"),
             request(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n"),
             request(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"))
    check("codes", early == (405, 413, 413) and time.monotonic() - t1 < 2,
          f"bodies not refused at once: {early} in {time.monotonic() - t1:.1f}s")
    body = b"x" * 1000
    check("codes", request(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\nConnection: close\r\n\r\n" + body)
          == 413, "GET with a body")
    big = request(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 65536 + b"\r\nConnection: close\r\n\r\n")
    check("oversized", big in (431, None), f"64 KiB header: {big}")
    many = "&".join(f"a{i}=1" for i in range(300)).encode()
    args = request(port, b"GET /api/v1/history?" + many + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    check("oversized", args == 414, f"300 query arguments: {args}")
    long_url = request(port, b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    check("oversized", long_url in (414, 431, None), f"20 KiB URL: {long_url}")
    check("oversized", get(port) == 200, "not served after the oversized requests")
    print(f"codes: 404, 400, 405, 413; 64 KiB header -> {big}, 20 KiB URL -> {long_url}, 300 arguments -> {args}")

    # ---- slow clients: silent, and trickling a header byte by byte
    silent = socket.create_connection(("127.0.0.1", port))
    trickle = socket.create_connection(("127.0.0.1", port))
    trickle.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
    t0 = time.monotonic()
    served = get(port) == 200
    # a byte every 0.3 s: each resets an inactivity timer, but the request's deadline (--timeout 1s
    # from its start) holds whatever it sends
    cut = None
    for ch in b"X-Slow: abcdefghijklmnopqrstuvwxyz":
        try:
            trickle.sendall(bytes([ch]))
        except OSError:
            cut = time.monotonic() - t0
            break
        time.sleep(0.3)
    a = closed_within(silent, 5)
    b = cut if cut is not None else closed_within(trickle, 20)
    check("slow", served, "others not served while a slow client was connected")
    check("slow", a is not None and time.monotonic() - t0 < 6, f"silent client not closed (after {a})")
    check("slow", b is not None and (cut is None or cut < 2.5),
          f"trickling client not cut off at its deadline: {b} s after connecting")
    silent.close()
    trickle.close()
    print(f"slow: silent and trickling clients closed {time.monotonic() - t0:.1f}s after connecting "
          "(--timeout 1s); others served meanwhile")

    # ---- the connection cap
    time.sleep(1.5)
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(4)]
    time.sleep(0.2)
    # libmicrohttpd stops accepting at the cap: the fifth waits in the backlog, not served,
    # until the idle ones time out (--timeout 1s)
    t1 = time.monotonic()
    fifth = get(port)
    waited = time.monotonic() - t1
    closed = [closed_within(s, 0.1) is not None for s in idle]
    check("cap", fifth == 200 and waited >= 0.5 and all(closed),
          f"fifth connection: {fifth} after {waited:.2f}s, idle ones closed: {closed}")
    for s in idle:
        s.close()
    check("cap", get(port) == 200, "not served once the idle connections timed out")
    print(f"cap: the fifth connection waited {waited:.1f}s, until the idle ones timed out")
    check("alive", d.poll() is None, "gpuctld died")
finally:
    d.terminate()
    d.wait(timeout=10)

# ---- command lines
for args, code, frag in [
    (["--listen", "0.0.0.0:0"], 2, "not a loopback address"),
    (["--listen", "192.0.2.1:9400"], 2, "--allow-remote"),
    (["--listen", "localhost:9400"], 2, "numeric IPv4 or IPv6"),
    (["--listen", "127.0.0.1:99999"], 2, "invalid port"),
    (["--listen", "127.0.0.1"], 2, "invalid --listen"),
    (["--interval", "0"], 2, "invalid --interval"),
    (["--interval", "10ms"], 2, "invalid --interval"),
    (["--labels", "camel"], 2, "invalid --labels 'camel'"),
    (["--max-connections", "0"], 2, "invalid --max-connections"),
    (["--history", "30d", "--interval", "1s"], 2, "at most 100000 samples"),
    (["--bogus"], 2, "unknown option '--bogus' for gpuctld (try 'gpuctld --help')"),
]:
    p = subprocess.run([GPUCTLD, "--sim", NODE, "--no-queue", *args], env=env, capture_output=True, text=True, timeout=20)
    lines = p.stderr.strip().splitlines()
    check("cmdline", p.returncode == code and len(lines) == 1 and frag in lines[0] and lines[0].startswith("gpuctld: "),
          f"{args}: exit {p.returncode}, {p.stderr!r}")
d2 = subprocess.Popen([GPUCTLD, "--sim", NODE, "--listen", "0.0.0.0:0", "--allow-remote", "--no-queue"], env=env,
                      stderr=subprocess.PIPE, text=True)
line = d2.stderr.readline()
check("cmdline", "listening on http://0.0.0.0:" in line, f"--allow-remote: {line!r}")
d2.terminate()
d2.wait(timeout=10)
p = subprocess.run([GPUCTLD, "--sim", "/nonexistent.json", "--no-queue"], env=env, capture_output=True, text=True, timeout=20)
check("cmdline", p.returncode != 0 and "nonexistent.json" in p.stderr, f"missing node: {p.returncode} {p.stderr!r}")
print("cmdline: non-loopback refused without --allow-remote; bad values exit 2 with one line")

# ---- a queue configuration that cannot work is refused at start-up, creating nothing (issue 16, item 9)
qdir = os.path.join(work, "q")
os.makedirs(qdir)
afile = os.path.join(qdir, "afile")
open(afile, "w").close()
good = {"--queue-db": os.path.join(qdir, "q.db"), "--queue-socket": os.path.join(qdir, "q.sock"),
        "--log-dir": os.path.join(qdir, "logs"), "--gpuctl": "/bin/true"}
for over, code, frag in [
    ({"--log-dir": afile}, 1, f"invalid --log-dir '{afile}': not a directory"),
    ({"--gpuctl": qdir}, 1, f"cannot run '{qdir}' for jobs: not a regular file"),
    ({"--gpuctl": afile}, 1, f"cannot run '{afile}' for jobs: Permission denied"),
    ({"--queue-db": os.path.join(qdir, "no", "such", "q.db")}, 2,
     f"invalid --queue-db '{qdir}/no/such/q.db': its directory '{qdir}/no/such' does not exist"),
    ({"--queue-db": qdir}, 1, f"invalid --queue-db '{qdir}': not a regular file"),
    ({"--queue-socket": os.path.join(afile, "s")}, 2, "is not a directory"),
    ({"--log-dir": os.path.join(qdir, "no", "logs")}, 2, f"its directory '{qdir}/no' does not exist"),
]:
    args = [a for k, v in dict(good, **over).items() for a in (k, v)]
    p = subprocess.run([GPUCTLD, "--sim", NODE, "--listen", "127.0.0.1:0", *args], env=env, capture_output=True,
                       text=True, timeout=20)
    lines = p.stderr.strip().splitlines()
    check("config", p.returncode == code and len(lines) == 1 and frag in lines[0],
          f"{over}: exit {p.returncode}, {p.stderr!r}")
check("config", not os.path.exists(os.path.join(qdir, "no")), "a parent directory was created")
print("config: an unusable --log-dir, --gpuctl, --queue-db or --queue-socket is refused at start with one line")

if errors:
    print("FAIL")
    for e in errors:
        print("  " + e)
    sys.exit(1)
shutil.rmtree(work, ignore_errors=True)
print("OK")
