#!/usr/bin/env python3
"""queue.py — the helper of bench/queue.sh.

    queue.py node1 SRC DST
        Writes node file SRC with only its first GPU to DST.
    queue.py ready SOCK [TIMEOUT_S]
        Waits until gpuctld's queue socket accepts a connection.
    queue.py submit SOCK COUNT GPUS ARGV...
        Submits COUNT jobs of GPUS GPUs running ARGV to gpuctld's queue,
        speaking its socket protocol (one JSON line each way); environment
        PATH only, cwd /. Prints the seconds it took.
    queue.py wait FILE COUNT TIMEOUT_S
        Waits until FILE (the jobs' stamps, one line each) has COUNT lines;
        exit 1 on time-out.
    queue.py throughput FILE COUNT
        Prints: jobs, seconds from the first job's start to the last job's
        end, jobs/s.
    queue.py latency FILE COUNT
        The jobs ran one at a time: sorted by start, latency(i) = start(i+1)
        - end(i). Prints: samples, median, p90, min, max (ms), and how many
        jobs overlapped the one before (should be 0).
    queue.py split DB FILE
        gpuctld only: splits each latency sample at the daemon's records
        (ms since the epoch in the jobs table) into the job's exit -> ended_ms
        of it (supervisor exit, pidfd wake-up, reap), ended_ms -> started_ms
        of the next (dispatch and the spawn of gpuctl run, in the same round),
        and started_ms -> the next job's start (the round's commit, the go
        byte, gpuctl run's start-up and lease, the job's spawn). Prints the
        three medians (ms; the records have ms resolution).
    queue.py count DB
        Prints the number of jobs per state.

The stamp files hold "START_NS END_NS ID" lines written by the job itself
(CLOCK_REALTIME). p90 is the nearest rank.
"""
import json
import os
import socket
import sqlite3
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
from harness import queue_request  # noqa: E402 (the path first)


def pct(v, p):
    s = sorted(v)
    return s[max(0, -(-len(s) * p // 100) - 1)]


def stamps(path):
    out = []
    with open(path) as f:
        for line in f:
            a, b, i = line.split()
            out.append((int(a), int(b), i))
    return sorted(out)


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "node1":
        with open(args[0]) as f:
            node = json.load(f)
        node["gpus"] = node["gpus"][:1]
        node["name"] = node.get("name", "node") + "-first-gpu"
        with open(args[1], "w") as f:
            json.dump(node, f, indent=1)
    elif cmd == "ready":
        end = time.monotonic() + (float(args[1]) if len(args) > 1 else 10)
        while time.monotonic() < end:
            try:
                s = socket.socket(socket.AF_UNIX)
                s.connect(args[0])
                s.close()
                return 0
            except OSError:
                time.sleep(0.02)
        return 1
    elif cmd == "submit":
        sock, count, gpus, argv = args[0], int(args[1]), int(args[2]), args[3:]
        req = {"op": "submit", "gpus": gpus, "argv": argv, "env": ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"], "cwd": "/"}
        t = time.perf_counter()
        for _ in range(count):
            ans = queue_request(sock, req)
            if not ans.get("ok"):
                print(f"submit refused: {ans}", file=sys.stderr)
                return 1
        print(f"{time.perf_counter() - t:.2f}")
    elif cmd == "wait":
        path, count, end = args[0], int(args[1]), time.monotonic() + float(args[2])
        n = 0
        while time.monotonic() < end:
            try:
                with open(path, "rb") as f:
                    n = f.read().count(b"\n")
            except FileNotFoundError:
                n = 0
            if n >= count:
                return 0
            time.sleep(0.05)
        print(f"{n} of {count} jobs ended within {args[2]} s", file=sys.stderr)
        return 1
    elif cmd == "throughput":
        v = stamps(args[0])
        if len(v) != int(args[1]):
            print(f"{len(v)} stamps, {args[1]} expected", file=sys.stderr)
            return 1
        span = (max(b for _, b, _ in v) - v[0][0]) / 1e9
        print(f"{len(v)} {span:.3f} {len(v) / span:.1f}")
    elif cmd == "latency":
        v = stamps(args[0])
        if len(v) != int(args[1]):
            print(f"{len(v)} stamps, {args[1]} expected", file=sys.stderr)
            return 1
        lat = [(v[i + 1][0] - v[i][1]) / 1e6 for i in range(len(v) - 1)]
        overlap = sum(x < 0 for x in lat)
        print(f"{len(lat)} {statistics.median(lat):.2f} {pct(lat, 90):.2f} {min(lat):.2f} {max(lat):.2f} {overlap}")
    elif cmd == "split":
        c = sqlite3.connect(args[0], timeout=10)
        rec = {str(i): (s, e) for i, s, e in c.execute("SELECT id, started_ms, ended_ms FROM jobs")}
        c.close()
        v = stamps(args[1])
        reap, disp, launch = [], [], []
        for i in range(len(v) - 1):
            a, b = v[i], v[i + 1]
            if a[2] not in rec or b[2] not in rec:
                print(f"job {a[2]} or {b[2]} not in the database", file=sys.stderr)
                return 1
            end_ms, start_ms = rec[a[2]][1], rec[b[2]][0]
            reap.append(end_ms - a[1] / 1e6)
            disp.append(start_ms - end_ms)
            launch.append(b[0] / 1e6 - start_ms)
        print(f"{statistics.median(reap):.2f} {statistics.median(disp):.2f} {statistics.median(launch):.2f}")
    elif cmd == "count":
        c = sqlite3.connect(args[0], timeout=10)
        rows = c.execute("SELECT state, count(*) FROM jobs GROUP BY state ORDER BY state").fetchall()
        c.close()
        print(" ".join(f"{s}={n}" for s, n in rows))
    else:
        print(f"queue.py: unknown command {cmd}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
