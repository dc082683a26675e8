#!/usr/bin/env python3
"""spot.py — measure for bench/spot.sh how fast a spot-preemption notice
reaches a job, and what watching for one costs while none comes.

    spot.py notice --label L --url BASE --cloud aws|gcp|azure --count N \
        --phase SECONDS --sigwait EXE --dir TMP --cmd 'PREFIX' \
        [--target-max MS] [--target-median MS] [--seed S]
        N samples. Each: POST BASE/_ctl/reset; start PREFIX + [EXE READY
        TERM] with a fresh GPUCTL_STATE_DIR and GPUCTL_SIM_RUNDIR; wait for
        READY (the job has blocked SIGTERM and waits for it); sleep a random
        time uniform in [0, PHASE) so that the notice lands at a random phase
        of the watcher's poll period; take CLOCK_REALTIME (the post time) and
        POST BASE/_ctl/preempt?cloud=C (on a connection opened beforehand);
        wait for the command to exit 0. Latency = the job's SIGTERM stamp in
        TERM (CLOCK_REALTIME ns) - the post time. Prints median, p90 (nearest
        rank), max, min in ms, the longest POST round trip, and PASS or MISS
        against the targets (none given: "report").

    spot.py idle --url BASE --seconds S --dir TMP \
        --cmd NAME KIND 'CMD ARGS' [--cmd ...] [--target PCT]
        POST BASE/_ctl/reset, then starts every command at once (each with a
        fresh GPUCTL_STATE_DIR and GPUCTL_SIM_RUNDIR) and waits for all.
        KIND own: the command is a gpuctl whose job is `sleep S`; its own CPU
        time (the sum over its live threads of /proc/PID/task/T/schedstat,
        ns, children excluded) is sampled 1 s after the start and 0.3 s
        before the job ends, giving "own" (from exec to the last sample) and
        "steady" (between the two samples) as % of one core, besides the
        wait4 rusage (self + reaped children, i.e. + the sleep job) over the
        whole wall time. KIND tree: only the wait4 rusage (the command and
        every child it reaped: for a shell loop, its curl and sleep
        processes). PASS or MISS: "own" (KIND own) or rusage (KIND tree)
        against --target.

Commands are split with shlex and started with os.posix_spawn (no shell),
stdout and stderr to a log file in TMP, shown when something fails. A
command that exits non-zero, a job that never gets ready or never gets
SIGTERM, or a SIGTERM stamp older than the notice is an error (exit 1). A
MISS is not an error.
"""
import argparse
import http.client
import math
import os
import random
import shlex
import shutil
import statistics
import sys
import time
import urllib.parse


def die(msg):
    sys.stdout.flush()
    sys.exit("spot.py: " + msg)


def resolve(exe, env):
    if "/" in exe:
        return exe
    found = shutil.which(exe, path=env.get("PATH", os.defpath))
    if not found:
        die("%s: not found" % exe)
    return found


class Ctl:
    """the mock's control API; post() opens the connection first, then
    stamps CLOCK_REALTIME just before sending"""

    def __init__(self, base):
        u = urllib.parse.urlsplit(base)
        self.host, self.port = u.hostname, u.port or 80

    def post(self, path):
        c = http.client.HTTPConnection(self.host, self.port, timeout=10)
        c.connect()
        t0 = time.time_ns()
        c.request("POST", path)
        r = c.getresponse()
        r.read()
        t1 = time.time_ns()
        c.close()
        if r.status != 200:
            die("mock: POST %s: HTTP %d" % (path, r.status))
        return t0, t1


def fresh_env(tmp, tag):
    env = dict(os.environ)
    for k in ("state", "run"):
        d = os.path.join(tmp, "%s-%s" % (k, tag))
        shutil.rmtree(d, ignore_errors=True)
        os.mkdir(d)
    env["GPUCTL_STATE_DIR"] = os.path.join(tmp, "state-" + tag)
    env["GPUCTL_SIM_RUNDIR"] = os.path.join(tmp, "run-" + tag)
    return env


def spawn(argv, env, logpath):
    fd = os.open(logpath, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        return os.posix_spawn(argv[0], argv, env,
                              file_actions=[(os.POSIX_SPAWN_DUP2, fd, 1), (os.POSIX_SPAWN_DUP2, fd, 2)])
    finally:
        os.close(fd)


def show_log(path):
    try:
        with open(path) as f:
            sys.stderr.write(f.read())
    except OSError:
        pass


def reap(pid, what, log, timeout=None):
    """wait for pid (at most timeout s, then SIGKILL and error); exit status 0 or die"""
    end = None if timeout is None else time.monotonic() + timeout
    while True:
        got, status, ru = os.wait4(pid, os.WNOHANG if end else 0)
        if got:
            break
        if time.monotonic() > end:
            os.kill(pid, 9)
            os.wait4(pid, 0)
            show_log(log)
            die("%s: still running after %g s" % (what, timeout))
        time.sleep(0.005)
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        show_log(log)
        die("%s failed (exit %d)" % (what, code))
    return ru


def p90(xs):
    return sorted(xs)[math.ceil(0.9 * len(xs)) - 1]


def notice(a):
    ctl = Ctl(a.url)
    rng = random.Random(a.seed)
    prefix = shlex.split(a.cmd)
    prefix[0] = resolve(prefix[0], os.environ)
    ready, term, log = (os.path.join(a.dir, x) for x in ("READY", "TERM", "log"))
    lat, posts = [], []
    for k in range(a.count):
        for f in (ready, term):
            if os.path.exists(f):
                os.unlink(f)
        ctl.post("/_ctl/reset")
        env = fresh_env(a.dir, "n")
        pid = spawn(prefix + [a.sigwait, ready, term], env, log)
        end = time.monotonic() + 10
        while not os.path.exists(ready) or os.path.getsize(ready) == 0:
            if time.monotonic() > end or os.waitpid(pid, os.WNOHANG)[0]:
                show_log(log)
                die("%s: the job did not get ready (sample %d)" % (a.label, k + 1))
            time.sleep(0.001)
        time.sleep(rng.uniform(0, a.phase))
        t0, t1 = ctl.post("/_ctl/preempt?cloud=%s" % a.cloud)
        reap(pid, a.label, log, timeout=3 * a.phase + 20)
        if not os.path.exists(term):
            show_log(log)
            die("%s: the job exited without a SIGTERM stamp (sample %d)" % (a.label, k + 1))
        with open(term) as f:
            stamp = int(f.read())
        if stamp < t0:
            show_log(log)
            die("%s: SIGTERM came before the notice (sample %d)" % (a.label, k + 1))
        lat.append((stamp - t0) / 1e6)
        posts.append((t1 - t0) / 1e6)
    med, q90, mx = statistics.median(lat), p90(lat), max(lat)
    verdicts = []
    if a.target_median is not None:
        verdicts.append("med≤%g" % a.target_median if med <= a.target_median else "med>%g" % a.target_median)
    if a.target_max is not None:
        verdicts.append("max≤%g" % a.target_max if mx <= a.target_max else "max>%g" % a.target_max)
    if verdicts:
        ok = (a.target_median is None or med <= a.target_median) and (a.target_max is None or mx <= a.target_max)
        tail = "%s %s" % (",".join(verdicts), "PASS" if ok else "MISS")
    else:
        tail = "report"
    print("%-34s %3d %8.1f %8.1f %8.1f %8.1f %6.1f  %s" % (
        a.label, len(lat), med, q90, mx, min(lat), max(posts), tail))
    if a.samples:
        print("    samples (ms): " + " ".join("%.0f" % x for x in lat))
    sys.stdout.flush()


def own_ns(pid):
    """CPU ns of pid's live threads (children excluded), from schedstat"""
    total, n = 0, 0
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return None, 0
    for t in tids:
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, t)) as f:
                total += int(f.read().split()[0])
                n += 1
        except (OSError, ValueError, IndexError):
            pass
    return total, n


def idle(a):
    Ctl(a.url).post("/_ctl/reset")
    runs = []
    t0 = time.monotonic()
    for i, (name, kind, line) in enumerate(a.cmd):
        if kind not in ("own", "tree"):
            die("--cmd %s: KIND must be own or tree" % name)
        argv = shlex.split(line)
        argv[0] = resolve(argv[0], os.environ)
        env = fresh_env(a.dir, "i%d" % i)
        log = os.path.join(a.dir, "idle-%d.log" % i)
        start = time.monotonic()
        runs.append({"name": name, "kind": kind, "log": log, "start": start,
                     "pid": spawn(argv, env, log), "s1": None, "s2": None})
    # own: sample at start+1 s and start+S-0.3 s
    for which, off in (("s1", 1.0), ("s2", a.seconds - 0.3)):
        for r in runs:
            if r["kind"] != "own":
                continue
            delay = r["start"] + off - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            ns, nthr = own_ns(r["pid"])
            r[which] = (time.monotonic(), ns, nthr)
    # reap in the order they end, so that each one's wall time is its own
    left = {r["pid"]: r for r in runs}
    end = time.monotonic() + a.seconds + 30
    while left:
        got, status, ru = os.wait4(-1, os.WNOHANG)
        if not got:
            if time.monotonic() > end:
                for pid, r in left.items():
                    os.kill(pid, 9)
                    show_log(r["log"])
                die("idle: %s still running" % ", ".join(r["name"] for r in left.values()))
            time.sleep(0.005)
            continue
        r = left.pop(got, None)
        if r is None:
            continue
        r["wall"] = time.monotonic() - r["start"]
        r["ru"] = ru.ru_utime + ru.ru_stime
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            show_log(r["log"])
            die("%s failed (exit %d)" % (r["name"], code))
    elapsed = time.monotonic() - t0
    for r in runs:
        if r["kind"] == "own":
            (m1, c1, _), (m2, c2, nthr) = r["s1"], r["s2"]
            if c1 is None or c2 is None:
                die("%s: could not read /proc/PID/task/*/schedstat" % r["name"])
            own = 100.0 * c2 / 1e9 / (m2 - r["start"])
            steady = 100.0 * (c2 - c1) / 1e9 / (m2 - m1)
            figure = own
            cols = "%8.3f %8.3f %8.3f  %6.1f ms / %5.1f s, %d threads" % (
                own, steady, 100.0 * r["ru"] / r["wall"], c2 / 1e6, m2 - r["start"], nthr)
        else:
            figure = 100.0 * r["ru"] / r["wall"]
            cols = "%8s %8s %8.3f  %6.1f ms / %5.1f s, with children" % (
                "-", "-", figure, r["ru"] * 1e3, r["wall"])
        tail = ""
        if a.target is not None and r["name"] in (a.judge or []):
            tail = "  <%g %% %s" % (a.target, "PASS" if figure < a.target else "MISS")
        print("%-34s %s%s" % (r["name"], cols, tail))
    sys.stdout.flush()
    if elapsed > a.seconds + 30:
        die("idle: took %.0f s" % elapsed)


def main():
    ap = argparse.ArgumentParser(description="spot notice latency and idle watcher CPU, for bench/spot.sh")
    sub = ap.add_subparsers(dest="mode", required=True)
    n = sub.add_parser("notice")
    n.add_argument("--label", required=True)
    n.add_argument("--url", required=True)
    n.add_argument("--cloud", required=True, choices=("aws", "gcp", "azure"))
    n.add_argument("--count", type=int, default=20)
    n.add_argument("--phase", type=float, required=True)
    n.add_argument("--sigwait", required=True)
    n.add_argument("--dir", required=True)
    n.add_argument("--cmd", required=True)
    n.add_argument("--target-max", type=float)
    n.add_argument("--target-median", type=float)
    n.add_argument("--seed", type=int)
    n.add_argument("--samples", action="store_true", help="also print every sample")
    i = sub.add_parser("idle")
    i.add_argument("--url", required=True)
    i.add_argument("--seconds", type=float, default=30)
    i.add_argument("--dir", required=True)
    i.add_argument("--cmd", nargs=3, action="append", required=True, metavar=("NAME", "KIND", "CMD"))
    i.add_argument("--target", type=float)
    i.add_argument("--judge", action="append", help="a --cmd NAME judged against --target")
    a = ap.parse_args()
    if a.mode == "notice":
        if a.count < 1:
            die("--count must be at least 1")
        notice(a)
    else:
        if a.seconds < 2:
            die("--seconds must be at least 2")
        idle(a)


if __name__ == "__main__":
    main()
