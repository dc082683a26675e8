#!/usr/bin/env python3
"""gpuctld against bad and slow clients, and bad command lines (issue 8):

  slow:      a client that connects and sends nothing, or trickles a header
             (a byte every 0.3 s), is closed --timeout after it connected,
             and others are served meanwhile;
  cap:       with --max-connections 4 and four idle connections open, a
             fifth waits unserved until they time out;
  share:     with --max-per-client 8, a ninth connection from the same user
             (from another loopback address) is answered 503;
  flood:     300 connections from 250 loopback addresses trickle a header byte
             a second, reopened as soon as they are closed, with the share
             lifted (as 300 users or remote addresses could): each is cut
             within about two deadlines of its request line (a wait in the
             backlog, then its own), and /metrics scrapes all succeed meanwhile.
             The median scrape latency unloaded and under the flood, and their
             ratio, are printed; only a sanity bound is asserted;
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
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import harness
from harness import check

GPUCTLD, SRC = sys.argv[1], sys.argv[2]
NODE = os.path.join(SRC, "examples", "nodes", "l4-2x.json")
work = tempfile.mkdtemp(prefix="gpuctld-bounds-")
env = {k: v for k, v in os.environ.items() if not k.startswith("GPUCTL_") or k in ("GPUCTL_SIM_LIBDIR", "GPUCTL_AUTHORITY_DIR")}
env.update({"GPUCTL_STATE_DIR": os.path.join(work, "state"), "GPUCTL_SIM_RUNDIR": os.path.join(work, "rd")})


def start(*args):
    d, base = harness.start_gpuctld(GPUCTLD, NODE, env, *args)
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

# ---- the share: one client (here, this test's uid, whatever loopback address it uses) holds at
# most --max-per-client connections; one more is answered 503 at once, and closed
d, port = start("--timeout", "5s", "--max-per-client", "8")
try:
    held = []
    for i in range(8):
        s = socket.socket()
        s.bind((f"127.0.0.{2 + i}", 0))
        s.connect(("127.0.0.1", port))
        held.append(s)
    time.sleep(0.3)
    extra = socket.socket()
    extra.bind(("127.0.0.99", 0))
    extra.settimeout(3)
    extra.connect(("127.0.0.1", port))
    try:
        answer = extra.recv(200)
    except (socket.timeout, ConnectionResetError):
        answer = b""
    extra.close()
    check("share", answer.startswith(b"HTTP/1.1 503"), f"a ninth connection from another address: {answer[:40]!r}")
    for s in held:
        s.close()
    time.sleep(0.3)
    check("share", get(port) == 200, "not served once the share was given back")
    print("share: with --max-per-client 8, a ninth connection (from another loopback address) got 503")
finally:
    harness.stop(d)


# ---- a flood of tricklers (issue 17, item 8): 300 connections from 250 loopback addresses, each
# sending a header byte a second and reopened as soon as it is closed, while /metrics is scraped.
# --max-per-client is lifted so that this one test user can take every slot, as 300 users or
# remote addresses could: only the deadline frees them.
FLOOD, FLOOD_S, DEADLINE = 300, 10, 2.0
LINE = b"GET /metrics HTTP/1.1\r\nHost: x\r\n"


class Flood(threading.Thread):
    """FLOOD trickling connections, each reopened when closed; lifetimes counted from the request line"""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.port, self.go = port, True
        self.cut = []          # seconds each closed connection lived
        self.refused = 0       # answered (503) rather than cut
        self.opened = 0
        self.oldest = 0.0      # the oldest connection still open at the end

    def open_one(self, i):
        s = socket.socket()
        s.setblocking(False)
        s.bind((f"127.0.0.{2 + i % 250}", 0))
        s.connect_ex(("127.0.0.1", self.port))
        return {"s": s, "sent": None, "last": 0.0}

    def run(self):
        conns = [self.open_one(i) for i in range(FLOOD)]
        while self.go:
            now = time.monotonic()
            for i, c in enumerate(conns):
                s, gone = c["s"], False
                try:
                    if c["sent"] is None:
                        s.send(LINE)
                        c["sent"] = c["last"] = now
                        self.opened += 1
                        continue
                    data = s.recv(4096)
                    if data.startswith(b"HTTP/"):
                        self.refused += 1
                    else:
                        self.cut.append(now - c["sent"])
                    gone = True
                except BlockingIOError:
                    if c["sent"] is not None and now - c["last"] >= 1.0:
                        try:
                            s.send(b"X")  # one byte of a header that never ends
                            c["last"] = now
                        except BlockingIOError:
                            pass
                        except OSError:
                            self.cut.append(now - c["sent"])
                            gone = True
                except OSError:
                    if c["sent"] is not None:
                        self.cut.append(now - c["sent"])
                    gone = True
                if gone:
                    s.close()
                    conns[i] = self.open_one(i)
            time.sleep(0.1)
        now = time.monotonic()
        self.oldest = max((now - c["sent"] for c in conns if c["sent"] is not None), default=0.0)
        for c in conns:
            c["s"].close()


def scrape_ms(port, timeout=15):
    t = time.monotonic()
    code = request(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", timeout=timeout)
    return code, (time.monotonic() - t) * 1000


d, port = start("--timeout", "2s", "--max-per-client", "1000")
try:
    calm = [ms for code, ms in (scrape_ms(port) for _ in range(30)) if code == 200]
    check("flood", len(calm) == 30, f"only {len(calm)} of 30 unloaded scrapes answered 200")
    flood = Flood(port)
    flood.start()
    time.sleep(1)
    hot, failed, t0 = [], [], time.monotonic()
    while time.monotonic() - t0 < FLOOD_S - 1:
        try:
            code, ms = scrape_ms(port)
        except OSError as e:
            code, ms = repr(e), 0
        (hot if code == 200 else failed).append(ms if code == 200 else code)
        time.sleep(0.05)
    flood.go = False
    flood.join()
    longest = max(flood.cut, default=0.0)
    # a trickler waits in the backlog for a slot (up to a deadline, as every slot is freed by one),
    # then has its own deadline; polled every 0.1 s, reaped every 0.25 s
    bound = 2 * DEADLINE + 1.5
    check("flood", len(flood.cut) >= FLOOD, f"only {len(flood.cut)} trickling connections were cut in {FLOOD_S} s")
    check("flood", longest < bound and flood.oldest < bound,
          f"a trickling connection lived {max(longest, flood.oldest):.1f} s (--timeout 2s; at most {bound:.1f} s)")
    check("flood", not failed and len(hot) >= 5, f"scrapes under the flood: {len(hot)} answered, failed: {failed[:5]}")
    med_calm = statistics.median(calm) if calm else float("nan")
    med_hot = statistics.median(hot) if hot else float("nan")
    # only a sanity bound: a scrape may wait in the backlog behind the flood, at most about a deadline
    check("flood", med_hot < 2 * DEADLINE * 1000 + 1000, f"median scrape under the flood {med_hot:.0f} ms")
    check("alive", d.poll() is None, "gpuctld died under the flood")
    print(f"flood: {FLOOD} trickling connections from 250 loopback addresses for {FLOOD_S} s (--timeout 2s, "
          f"--max-per-client 1000): {flood.opened} opened, {len(flood.cut)} cut (longest {longest:.1f} s after "
          f"its request line), {flood.refused} answered; {len(hot)} scrapes answered, {len(failed)} failed")
    print(f"flood: median GET /metrics {med_calm:.1f} ms unloaded ({len(calm)}), {med_hot:.1f} ms under the flood "
          f"({len(hot)}, max {max(hot, default=0):.0f} ms), ratio {med_hot / med_calm:.1f}")
finally:
    harness.stop(d)

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
        "--log-dir": os.path.join(qdir, "logs")}
for over, code, frag in [
    ({"--log-dir": afile}, 1, f"invalid --log-dir '{afile}': not a directory"),
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
# gpuctld without its job runner beside it (nor installed): refused at start, naming it
lone = os.path.join(qdir, "bin")
os.makedirs(lone)
shutil.copy(GPUCTLD, os.path.join(lone, "gpuctld"))
if not any(os.path.exists(f"{p}/libexec/gpuctl/gpuctld-runner") for p in ("/usr", "/usr/local")):
    args = [a for k, v in good.items() for a in (k, v)]
    p = subprocess.run([os.path.join(lone, "gpuctld"), "--sim", NODE, "--listen", "127.0.0.1:0", *args], env=env,
                       capture_output=True, text=True, timeout=20)
    lines = p.stderr.strip().splitlines()
    check("config", p.returncode == 1 and len(lines) == 1 and "cannot run the job runner '" in lines[0]
          and "gpuctld-runner': No such file or directory" in lines[0], f"no runner: exit {p.returncode}, {p.stderr!r}")
# the runner is gpuctld's, never a user's tool: by hand it says so in one line
for args in ([], ["1"], ["x"], ["3", "4"]):
    p = subprocess.run([os.path.join(os.path.dirname(GPUCTLD), "gpuctld-runner"), *args], env=env,
                       capture_output=True, text=True, timeout=20)
    lines = p.stderr.strip().splitlines()
    check("config", p.returncode == 2 and len(lines) == 1 and lines[0].startswith("gpuctld-runner: ")
          and "not for use by hand" in lines[0], f"gpuctld-runner {args}: exit {p.returncode}, {p.stderr!r}")
print("config: an unusable --log-dir, --queue-db or --queue-socket, or no job runner, is refused at start with one line")

harness.finish(work=work)
