#!/usr/bin/env python3
"""queue-depth.py — the helper of bench/queue-depth.sh: gpuctld's queue at
1k, 10k and 100k pending jobs (issue 35).

    queue-depth.py GPUCTL GPUCTLD NODE WORKDIR DEPTHS

A gpuctld with its queue in WORKDIR (database, socket, logs) on the
simulated node NODE; one job that takes every GPU and sleeps holds them,
so every job submitted after it stays pending. The queue is filled to each
depth of DEPTHS (comma-separated, increasing) by 16 clients at once over
the socket (one request per connection, as gpuctl submit makes it); at
each depth, one line:

  depth   the pending jobs
  fill/s  submits per second while filling to it (16 clients)
  cpu/sub gpuctld's CPU (user + system, /proc/PID/stat) per submit over
          the last 1000 submits of the fill, in ms
  sock50  one submit's round trip over the socket, median of 200 made one
          after the other from another client, in ms
  cli50   `gpuctl submit -- true`'s wall time (a process: start-up, the
          request, exit), median of 30, in ms
  queue   `gpuctl queue`'s wall time, the whole list, in s, median of 5; the
          first run's first line's time after its start beside it
  idle    gpuctld's CPU over IDLE_S (30) s with nothing asked of it, in % of a
          core, every thread's schedstat (its sampler included: it samples the GPUs
          every second)
  rss     gpuctld's resident memory, in MiB

Then, at the last depth, the blocker is cancelled and DRAIN jobs (default
2000) run, 8 at a time (one GPU each, `true`): one more line,

  drain   jobs/s from the first one's start to the last one's end (gpuctld's
          records, ms)
  disp50  dispatch latency: on each GPU, a job's end to the next job's
          start there (the records), median, in ms

KILLS=N (0): each job writes its id down when it runs, and gpuctld is
SIGKILLed and restarted N times at random moments during the drain; then the
records are held to what ran: no job twice, every done job once, none lost
or failed, no queued one run (exit 1 naming any that is not so).

Prints what it measured; figures against targets are bench/queue-depth.sh's.
"""
import collections
import json
import os
import socket
import sqlite3
import statistics
import subprocess
import sys
import random
import re
import signal
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
from harness import queue_request  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
ENV = ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"]


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime (fields 14, 15)


def sched_s(pid):
    """CPU time of every thread of pid (/proc/PID/task/*/schedstat, in ns: finer than stat's ticks)"""
    total = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                total += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass  # a thread that ended meanwhile
    return total / 1e9


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


JOB_ARGV = ["true"]  # what each filling job runs (KILLS>0: it writes down that it ran)


def submit(sock, argv=None, gpus=1):
    ans = queue_request(sock, {"op": "submit", "gpus": gpus, "argv": list(argv or JOB_ARGV), "env": ENV, "cwd": "/"})
    if not ans.get("ok"):
        raise SystemExit(f"queue-depth: submit refused: {ans}")
    return ans


def fill(sock, n, clients=16):
    """n submits from `clients` threads at once"""
    left = [n]
    lock = threading.Lock()

    def work():
        while True:
            with lock:
                if left[0] <= 0:
                    return
                left[0] -= 1
            submit(sock)
    ts = [threading.Thread(target=work) for _ in range(clients)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def main():
    gpuctl, gpuctld, node, work, depths = sys.argv[1:6]
    depths = [int(d) for d in depths.split(",")]
    sock = os.path.join(work, "q.sock")
    env = dict(os.environ, GPUCTL_QUEUE_SOCKET=sock, GPUCTLD_CONFIG="/dev/null")
    kills = int(os.environ.get("KILLS", "0"))
    ran = os.path.join(work, "ran")
    if kills:
        JOB_ARGV[:] = ["sh", "-c", f'echo "$GPUCTL_JOB_ID" >> {ran}']

    def start():
        """gpuctld on the queue in work: the process and its URL, once its socket answers"""
        p = subprocess.Popen([gpuctld, "--sim", node, "--listen", "127.0.0.1:0", "--queue-db",
                              os.path.join(work, "q.db"), "--queue-socket", sock, "--log-dir",
                              os.path.join(work, "logs"), "--max-queued", "0"],
                             env=env, stderr=subprocess.PIPE, text=True)
        line = p.stderr.readline()
        m = re.search(r"listening on (http://\S+)", line)
        if not m:
            p.kill()
            raise SystemExit(f"queue-depth: gpuctld did not start: {line!r}")
        threading.Thread(target=lambda: p.stderr.read(), daemon=True).start()
        for _ in range(3000):
            try:
                c = socket.socket(socket.AF_UNIX)
                c.connect(sock)
                c.close()
                break
            except OSError:
                time.sleep(0.01)
        return p, m.group(1).rstrip("/")

    d, url = start()
    try:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        ngpus = len(json.load(open(node))["gpus"])
        blocker = submit(sock, ("sleep", "100000"), gpus=ngpus)["id"]
        for _ in range(600):
            shown = queue_request(sock, {"op": "show", "id": blocker})
            if shown.get("job", {}).get("state") == "running":
                break
            time.sleep(0.05)
        else:
            raise SystemExit("queue-depth: the blocker job did not start")
        print(f"{'depth':>7} {'fill/s':>7} {'cpu/sub':>8} {'sock50':>7} {'cli50':>7} {'queue':>7} {'first':>7} "
              f"{'idle':>6} {'rss':>6}")
        pending = 0
        for depth in depths:
            if depth - pending > 1000:
                t = time.perf_counter()
                fill(sock, depth - pending - 1000)
                fill_rate = (depth - pending - 1000) / (time.perf_counter() - t)
                pending = depth - 1000
            else:
                fill_rate = float("nan")
            c0, t0 = cpu_s(d.pid), time.perf_counter()
            fill(sock, depth - pending)
            cpu_per = (cpu_s(d.pid) - c0) / (depth - pending) * 1000
            if fill_rate != fill_rate:
                fill_rate = (depth - pending) / (time.perf_counter() - t0)
            pending = depth
            lat = []
            for _ in range(200):
                t = time.perf_counter()
                submit(sock)
                lat.append((time.perf_counter() - t) * 1000)
            pending += 200
            cli = []
            for _ in range(30):
                t = time.perf_counter()
                subprocess.run([gpuctl, "submit", "--", *JOB_ARGV], env=env, check=True, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
                cli.append((time.perf_counter() - t) * 1000)
            pending += 30
            qruns, first = [], None
            for _ in range(5):
                t = time.perf_counter()
                p = subprocess.Popen([gpuctl, "queue"], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
                lines = 0
                for _ in p.stdout:
                    if first is None:
                        first = time.perf_counter() - t
                    lines += 1
                p.wait()
                qruns.append(time.perf_counter() - t)
                if p.returncode != 0 or lines < pending:
                    raise SystemExit(f"queue-depth: gpuctl queue: exit {p.returncode}, {lines} lines for {pending} jobs")
            qs = statistics.median(qruns)
            time.sleep(1)  # the last render (at most every 0.2 s) done
            # /api/v1/jobs: the first page and the total (the blocker runs too), at any depth
            api = json.loads(opener.open(url + "/api/v1/jobs").read())
            if api["total"] != pending + 1 or len(api["jobs"]) != min(1000, pending + 1):
                raise SystemExit(f"queue-depth: /api/v1/jobs has total {api['total']} and {len(api['jobs'])} jobs "
                                 f"for {pending + 1}")
            # over IDLE_S seconds (30), from schedstat (ns; /proc/PID/stat's 10 ms ticks are 0.03 % of 30 s)
            idle_s = float(os.environ.get("IDLE_S", "30"))
            c0 = sched_s(d.pid)
            time.sleep(idle_s)
            idle = (sched_s(d.pid) - c0) / idle_s * 100
            print(f"{pending:>7} {fill_rate:>7.0f} {cpu_per:>8.3f} {statistics.median(lat):>7.2f} "
                  f"{statistics.median(cli):>7.2f} {qs:>7.3f} {first or 0:>7.3f} {idle:>5.3f}% {rss_mib(d.pid):>6.1f}",
                  flush=True)
        # the drain: the blocker cancelled, the first DRAIN jobs after it run
        drain = int(os.environ.get("DRAIN", "2000"))
        ans = queue_request(sock, {"op": "cancel", "id": blocker})
        if not ans.get("ok"):
            raise SystemExit(f"queue-depth: cannot cancel the blocker: {ans}")
        if kills:
            # exactly once under SIGKILL (issue 35 item 4): the drain goes on through KILLS kills and
            # restarts of gpuctld at random moments
            rnd = random.Random(35)
            for _ in range(kills):
                time.sleep(rnd.uniform(0.2, 1.5))
                d.send_signal(signal.SIGKILL)
                d.wait()
                d, url = start()
        db = sqlite3.connect(f"file:{os.path.join(work, 'q.db')}?mode=ro", uri=True, timeout=30)
        end = time.monotonic() + 600
        rows = []
        while time.monotonic() < end:
            rows = db.execute("SELECT started_ms, ended_ms, gpus FROM jobs WHERE id > ? AND state = 'done'"
                              " ORDER BY id LIMIT ?", (blocker, drain)).fetchall()
            if len(rows) >= drain:
                break
            time.sleep(0.5)
        db.close()
        if len(rows) < drain:
            raise SystemExit(f"queue-depth: {len(rows)} of {drain} jobs ended within 600 s")
        span = (max(e for _, e, _ in rows) - min(s for s, _, _ in rows)) / 1000
        by_gpu = {}
        for st, en, g in rows:
            by_gpu.setdefault(g, []).append((st, en))
        gaps = []
        for runs in by_gpu.values():
            runs.sort()
            gaps += [runs[i + 1][0] - runs[i][1] for i in range(len(runs) - 1)]
        if not kills:
            print(f"drain: {drain} jobs in {span:.2f} s, {drain / span:.0f} jobs/s; dispatch latency (a GPU's job "
                  f"end to its next start, records in ms) median {statistics.median(gaps):.1f} ms over {len(gaps)}",
                  flush=True)
            return
        # stop, let what runs end, then hold the records to what really ran
        d.terminate()
        d.wait(timeout=60)
        time.sleep(2)
        db = sqlite3.connect(f"file:{os.path.join(work, 'q.db')}?mode=ro", uri=True, timeout=30)
        rows = db.execute("SELECT id, state FROM jobs WHERE id > ?", (blocker,)).fetchall()
        db.close()
        with open(ran) as f:
            runs = collections.Counter(int(x) for x in f.read().split())
        by = collections.Counter(st for _, st in rows)
        bad = {"twice": [i for i, n in runs.items() if n > 1],
               "done, not once": [i for i, st in rows if st == "done" and runs.get(i, 0) != 1],
               "queued, yet ran": [i for i, st in rows if st == "queued" and runs.get(i, 0)],
               "lost or failed": [i for i, st in rows if st in ("lost", "failed")]}
        print(f"kill loop: {kills} SIGKILLs of gpuctld during the drain at {pending} pending; states "
              f"{dict(by)}; {sum(runs.values())} runs written down", flush=True)
        for what, ids in bad.items():
            if ids:
                raise SystemExit(f"queue-depth: kill loop: {what}: {len(ids)} jobs, e.g. {ids[:10]}")
        print("kill loop: every done job ran once, none twice, none lost or failed, no queued one ran", flush=True)
    finally:
        d.terminate()
        try:
            d.wait(timeout=30)
        except subprocess.TimeoutExpired:
            d.kill()
        subprocess.run(["pkill", "-f", "sleep 100000"], capture_output=True)


if __name__ == "__main__":
    main()
