#!/usr/bin/env python3
"""`gpuctl spot` against the mock metadata services (tests/mock/metadata.py).

For each cloud: a warning and a preemption notice are printed once each,
with the right action and deadline, once each posted (the latency is
printed; bench/spot.sh measures it); the
requests carry what the cloud demands (AWS token, Metadata-Flavor, Metadata).
Faults: an expired AWS token is renewed and the notice still seen; 503s are
retried; a slow answer is cut off by the request timeout; an oversized or
malformed answer is ignored and never becomes a preemption; a refused
connection leaves the watcher running (a SPOT_ERROR line at most). An idle
watcher (GCP: inside a long poll) stops at once on SIGTERM and SIGINT, exit 0.
--once exits after the first preemption; bad options and --cloud auto on a
machine that is no cloud VM are one-line errors, exit 2.
Usage: spot-watch.py GPUCTL SRCDIR
"""
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check  # noqa: E402

GPUCTL, SRC = sys.argv[1], sys.argv[2]
MOCK = os.path.join(SRC, "tests", "mock", "metadata.py")
# Bounds that only tell "seen" from "missed": a busy machine may take seconds for what takes
# milliseconds on a quiet one, so the latencies are printed here and measured by bench/spot.sh
LATENCY = 15.0    # seconds to wait for a notice to be printed once posted (a missed one never is)
STOP = 10.0       # seconds an idle watcher may take to exit on a signal (not the 60 s long poll)


class Mock:
    def __init__(self):
        self.p = subprocess.Popen([sys.executable, MOCK], stdout=subprocess.PIPE, text=True)
        line = self.p.stdout.readline()
        self.port = int(line.split()[-1])
        self.url = f"http://127.0.0.1:{self.port}"

    def ctl(self, what, **q):
        qs = "&".join(f"{k}={v}" for k, v in q.items())
        req = urllib.request.Request(f"{self.url}/_ctl/{what}?{qs}", method="POST", data=b"")
        urllib.request.urlopen(req, timeout=5).read()

    def log(self):
        return json.loads(urllib.request.urlopen(f"{self.url}/_ctl/log", timeout=5).read())

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        try:
            self.p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            harness.fail("the mock did not stop on SIGTERM")
            self.p.kill()


class Watcher:
    """gpuctl spot --json, its events read as they come."""

    def __init__(self, url, cloud, *extra):
        env = dict(os.environ, GPUCTL_METADATA_URL=url)
        self.p = subprocess.Popen([GPUCTL, "spot", "--cloud", cloud, "--poll", "0.2", "--json", *extra],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        self.q = queue.Queue()
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        for line in self.p.stdout:
            try:
                self.q.put((time.monotonic(), json.loads(line)))
            except ValueError:
                self.q.put((time.monotonic(), {"kind": "bad-line", "line": line}))
        self.q.put((time.monotonic(), None))

    def next(self, timeout):
        try:
            return self.q.get(timeout=timeout)
        except queue.Empty:
            return None, None

    def events(self, seconds):
        """everything printed within `seconds`"""
        out, end = [], time.monotonic() + seconds
        while True:
            t, ev = self.next(max(0.01, end - time.monotonic()))
            if ev is None:
                return out
            out.append(ev)
            if time.monotonic() >= end:
                return out

    def expect(self, kind, timeout, since):
        """the first event of `kind` within timeout, skipping errors; its latency"""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            t, ev = self.next(end - time.monotonic())
            if ev is None:
                break
            if ev.get("kind") == kind:
                return ev, t - since
            if ev.get("kind") != "error":
                harness.fail(f"unexpected event {ev}")
        return None, None

    def stop(self, sig=signal.SIGTERM):
        t = time.monotonic()
        self.p.send_signal(sig)
        try:
            rc = self.p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.p.kill()
            return None, None
        return rc, time.monotonic() - t


def notice(m, w, cloud, what, kind, name, timeout=LATENCY, **q):
    t, posted = time.monotonic(), time.time()
    m.ctl(what, cloud=cloud, **q)
    ev, lat = w.expect(kind, timeout, t)
    if check(f"{name}: no {kind} event within {timeout}s", ev is not None):
        print(f"  {name}: {kind} {ev['action']} after {lat * 1000:.0f} ms")
        ev["_seen"] = (posted, time.time())  # the notice was posted after the first, read before the second
    return ev


def deadline_in(ev, secs):
    """is the event's deadline secs after the notice (posted, or seen by the watcher, which comes
    between the two times notice() took), to the second? Bounds by order: a slow machine moves neither"""
    posted, read = ev["_seen"]
    return posted + secs - 1 <= ev["deadline_ms"] / 1000 <= read + secs + 1


def stopped(w, name, sig=signal.SIGTERM):
    rc, dt = w.stop(sig)
    err = w.p.stderr.read()
    check(f"{name}: exit {rc} on {signal.Signals(sig).name}, expected 0 (stderr: {err.strip()})", rc == 0)
    check(f"{name}: took {dt}s to stop on {signal.Signals(sig).name}", dt is not None and dt < STOP)
    check(f"{name}: sanitizer: {err}", "AddressSanitizer" not in err and "runtime error" not in err)


def requests_to(m, fragment):
    return [r for r in m.log() if fragment in r["path"]]


def case_aws(m):
    w = Watcher(m.url, "aws")
    started = time.monotonic()
    time.sleep(0.5)
    notice(m, w, "aws", "warning", "warning", "aws rebalance", timeout=LATENCY + 2)  # asked every 2 s
    ev = notice(m, w, "aws", "preempt", "preempt", "aws preempt", **{"in": 120})
    if ev:
        check(f"aws preempt: {ev}", ev["action"] == "terminate" and ev["cloud"] == "aws")
        check(f"aws preempt: deadline {ev['deadline']}, expected 120 s after the notice {ev['_seen']}",
              deadline_in(ev, 120))
    check("aws: a notice was reported twice", not w.events(1.0))
    # instance-action every --poll (0.2 s); the rebalance hint at most every 2 s
    elapsed = time.monotonic() - started
    actions = len(requests_to(m, "/spot/instance-action"))
    rebalances = len(requests_to(m, "/recommendations/rebalance"))
    # counts, not rates: the action asked at every --poll, the hint only every 2 s (so, fewer times)
    check(f"aws: {actions} instance-action GETs and {rebalances} rebalance GETs in {elapsed:.1f}s at --poll 0.2",
          actions >= 3 and actions > 2 * rebalances)
    check(f"aws: {rebalances} rebalance GETs in {elapsed:.1f}s, expected one per 2 s",
          1 <= rebalances <= elapsed / 2 + 1.5)
    gets = [r for r in m.log() if r["method"] == "GET"]
    check("aws: a GET without token", gets and all(r["headers"].get("X-aws-ec2-metadata-token") for r in gets))
    check("aws: a 401 without token expiry", all(r["status"] != 401 for r in gets))
    stopped(w, "aws")


def case_aws_token_expiry(m):
    w = Watcher(m.url, "aws")
    time.sleep(0.5)
    puts = len(requests_to(m, "/latest/api/token"))
    m.ctl("fault", kind="token-expire")
    time.sleep(0.5)
    notice(m, w, "aws", "preempt", "preempt", "aws after token expiry")
    check("aws: no new token after expiry", len(requests_to(m, "/latest/api/token")) > puts)
    check("aws: the expired token was never refused (mock?)", any(r["status"] == 401 for r in m.log()))
    stopped(w, "aws token expiry")


def case_gcp(m):
    w = Watcher(m.url, "gcp")
    time.sleep(0.5)
    notice(m, w, "gcp", "warning", "warning", "gcp migrate")
    ev = notice(m, w, "gcp", "preempt", "preempt", "gcp preempted")
    if ev:
        check(f"gcp preempt: deadline {ev['deadline']}, expected 30 s after the notice {ev['_seen']}",
              deadline_in(ev, 30))
    m.ctl("maintenance", value="TERMINATE_ON_HOST_MAINTENANCE")
    ev, _ = w.expect("preempt", LATENCY, time.monotonic())
    check(f"gcp: TERMINATE_ON_HOST_MAINTENANCE gave {ev}",
          ev is not None and ev["action"] == "TERMINATE_ON_HOST_MAINTENANCE")
    reqs = requests_to(m, "/computeMetadata/")
    check("gcp: no Metadata-Flavor", reqs and all(r["headers"].get("Metadata-Flavor") == "Google" for r in reqs))
    check("gcp: no long poll with last_etag",
          any("wait_for_change=true" in r["path"] and "last_etag=" in r["path"] for r in reqs))
    # idle inside a long poll: SIGTERM must interrupt it
    time.sleep(0.5)
    stopped(w, "gcp (in a long poll)")


def case_azure(m):
    w = Watcher(m.url, "azure", "--ack")
    time.sleep(0.5)
    notice(m, w, "azure", "warning", "warning", "azure freeze")
    ev = notice(m, w, "azure", "preempt", "preempt", "azure preempt", **{"in": 30})
    if ev:
        check(f"azure preempt: deadline {ev['deadline']}, expected 30 s after the notice {ev['_seen']}",
              deadline_in(ev, 30))
        check("azure preempt: no EventId", ev["id"])
        time.sleep(0.3)
        posts = [r for r in m.log() if r["method"] == "POST"]
        check("azure: --ack did not POST StartRequests for the event",
              any(ev["id"] in r["body"] and "StartRequests" in r["body"] for r in posts))
    check("azure: an event was reported twice", not w.events(1.0))
    reqs = requests_to(m, "/metadata/scheduledevents")
    check("azure: no Metadata: true", reqs and all(r["headers"].get("Metadata") == "true" for r in reqs))
    stopped(w, "azure", signal.SIGINT)


def case_faults(m, cloud):
    # each fault is set before the watcher starts, so that its first requests
    # meet it (a GCP long poll already held would only meet it afterwards)
    # 503s are retried (with backoff)
    m.ctl("fault", kind="503", count=3)
    w = Watcher(m.url, cloud)
    time.sleep(0.5)
    notice(m, w, cloud, "preempt", "preempt", f"{cloud} after 3x 503", timeout=LATENCY + 8)
    check(f"{cloud} 503: the faults were not met", sum(r["status"] == 503 for r in m.log()) == 3)
    stopped(w, f"{cloud} 503")
    m.ctl("reset")
    # a slow answer is cut off by the 2 s request timeout, then the watcher goes on
    m.ctl("fault", kind="slow", count=1, delay=30)
    w = Watcher(m.url, cloud)
    time.sleep(0.5)
    notice(m, w, cloud, "preempt", "preempt", f"{cloud} after a slow answer", timeout=LATENCY + 4)
    stopped(w, f"{cloud} slow")
    m.ctl("reset")
    # oversized and malformed answers: ignored, never a preemption
    for kind in ("oversize", "malformed"):
        m.ctl("fault", kind=kind, count=6)
        w = Watcher(m.url, cloud)
        evs = w.events(3.0)
        check(f"{cloud} {kind}: {evs}", all(e.get("kind") == "error" for e in evs))
        check(f"{cloud} {kind}: the watcher exited", w.p.poll() is None)
        check(f"{cloud} {kind}: the faults were not met", any(r["status"] == 200 for r in m.log()))
        m.ctl("reset")
        time.sleep(0.2)
        notice(m, w, cloud, "preempt", "preempt", f"{cloud} after {kind} answers", timeout=LATENCY + 5)
        stopped(w, f"{cloud} {kind}")
        m.ctl("reset")


def case_refused(cloud):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nobody listens there now
    w = Watcher(f"http://127.0.0.1:{port}", cloud)
    evs = w.events(3.0)
    check(f"{cloud} refused: the watcher exited", w.p.poll() is None, f"exit {w.p.returncode}")
    check(f"{cloud} refused: {evs}", all(e.get("kind") == "error" for e in evs))
    check(f"{cloud} refused: {len(evs)} error events, expected at most one", len(evs) <= 1)
    print(f"  {cloud} refused: {len(evs)} error event(s)")
    stopped(w, f"{cloud} refused")


def case_once(m):
    env = dict(os.environ, GPUCTL_METADATA_URL=m.url)
    p = subprocess.Popen([GPUCTL, "spot", "--cloud", "azure", "--poll", "0.2", "--once"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    time.sleep(0.5)
    m.ctl("warning", cloud="azure")
    m.ctl("preempt", cloud="azure")
    try:
        out, err = p.communicate(timeout=LATENCY + 2)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        harness.fail("--once: still running after the preemption notice")
    lines = out.splitlines()
    check(f"--once: exit {p.returncode} ({err.strip()})", p.returncode == 0)
    check(f"--once: printed {lines}",
          len(lines) == 2 and " azure warning action=Freeze " in lines[0] and
          " azure preempt action=Preempt deadline=" in lines[1])


def dmi_is_cloud():
    def rd(n):
        try:
            with open(f"/sys/class/dmi/id/{n}") as f:
                return f.read(256).strip()
        except OSError:
            return ""
    return (rd("sys_vendor") in ("Amazon EC2", "Google") or rd("bios_vendor") in ("Amazon EC2", "Google")
            or "amazon" in rd("bios_version").lower() or rd("product_name") == "Google Compute Engine"
            or rd("chassis_asset_tag") == "7783-7084-3265-9085-8269-3286-77")


def case_usage():
    cases = [
        (["--cloud", "ibm"], "invalid --cloud value 'ibm'"),
        (["--cloud", "none"], "invalid --cloud value 'none'"),
        (["--poll", "0"], "invalid --poll value '0'"),
        (["--poll", "x"], "invalid --poll value 'x'"),
        (["--bogus"], "unknown option '--bogus'"),
        (["--cloud"], "needs a value"),
        (["extra"], "unexpected argument 'extra'"),
    ]
    if not dmi_is_cloud():
        cases.append(([], "no cloud detected from /sys/class/dmi/id (use --cloud aws|gcp|azure)"))
        cases.append((["--cloud", "auto"], "no cloud detected"))
    for args, msg in cases:
        r = subprocess.run([GPUCTL, "spot", *args], capture_output=True, text=True, timeout=10)
        lines = r.stderr.splitlines()
        check(f"spot {' '.join(args)}: exit {r.returncode}, stderr {r.stderr!r}",
              r.returncode == 2 and len(lines) == 1 and lines[0].startswith("gpuctl: ") and msg in lines[0])


def main():
    r = subprocess.run([GPUCTL, "spot", "--help"], capture_output=True, text=True, timeout=10)
    if r.returncode != 0:
        print(f"SKIP: this gpuctl has no spot command yet: {r.stderr.strip()}")
        return 77
    m = Mock()
    try:
        for name, fn in [("aws", case_aws), ("aws token expiry", case_aws_token_expiry), ("gcp", case_gcp),
                         ("azure", case_azure), ("once", case_once)]:
            print(name)
            fn(m)
            m.ctl("reset")
        for cloud in ("aws", "gcp", "azure"):
            print(f"{cloud} faults")
            case_faults(m, cloud)
            m.ctl("reset")
        for cloud in ("aws", "gcp", "azure"):
            case_refused(cloud)
        case_usage()
    finally:
        m.stop()
    harness.finish("ok: 0 problem(s)")


if __name__ == "__main__":
    main()
