#!/usr/bin/env python3
"""timeit.py — time commands for bench/query.sh and bench/lease.sh.

    timeit.py pair --label L --target 1.3 --runs N \
        [--a-env K=V ...] --a 'CMD ARGS' [--b-env K=V ...] --b 'CMD ARGS'
        Runs A and B N times each, interleaved (A B A B ...) after a few
        untimed warm-up runs, stdout to /dev/null. Prints the median and the
        minimum wall time of each, the ratio of the medians A/B and PASS or
        MISS against the target ratio.

    timeit.py calls [--target R] LABEL GPUCTL.callgrind FLOOR.callgrind
        Compares the NVML entry points called (and how often) in two
        callgrind profiles; prints the totals and every difference; then the
        instructions each executed (callgrind's "totals:" line), their ratio
        and, with --target, PASS or MISS against it.

    timeit.py cpu --label L --target 1.0 [--env K=V ...] --cmd 'CMD ARGS'
        Runs CMD once, stdout to /dev/null; prints its CPU time (user + sys
        from the child's rusage) over its wall time as "% of one core", and
        PASS or MISS against the target percentage.

    timeit.py multi --runs N --cmd NAME 'CMD ARGS' [--cmd NAME 'CMD' ...] \
        [--diff TEXT A B [TARGET_MS] ...]
        Runs every command N times, interleaved (A B C A B C ...) after a few
        untimed warm-up rounds; prints each one's median and minimum wall
        time, then for each --diff the difference median(A) - median(B) (and
        of the minima) in ms, with PASS or MISS when TARGET_MS is given.

    timeit.py handover --label L --target MS --count N --stamp STAMP \
        --dir TMP --holder 'PREFIX' --waiter 'PREFIX' \
        (--queue DIR | --locks) [--sleep-ms 100] [--min-slack-ms 5] \
        [--max-retries K]
        Hand-over latency: N times, starts the holder, PREFIX + [STAMP -r
        READY -s SLEEP A], waits for READY (the holder has its lock), starts
        the waiter, PREFIX + [STAMP B], and polls until the waiter is queued:
        with --queue, a ticket.<16 hex> in DIR naming the waiter; with --locks,
        a blocked ("->") entry of the waiter's pid in /proc/locks. A sample
        counts only when the waiter was seen queued at least MIN-SLACK ms
        before the holder's A timestamp (so it was asleep, waiting, when the
        holder's job ended); otherwise it is retried (at most K times in
        all). Latency = B - A
        (CLOCK_REALTIME ns written by STAMP). Prints median, p90, max, min,
        the least slack (A - moment the waiter was seen queued) and PASS or
        MISS for the median against the target.

Commands are split with shlex and started with os.posix_spawn (no shell);
os.wait4 gives each child's rusage. The environment is the caller's plus the
--*-env additions. A command that exits non-zero is an error (exit 1): a
benchmark of a failing command measures nothing. A MISS is not an error.
"""
import argparse
import math
import json
import os
import shlex
import shutil
import statistics
import sys
import time

WARMUP = 5


def make_env(pairs):
    env = dict(os.environ)
    for p in pairs or []:
        k, sep, v = p.partition("=")
        if not sep or not k:
            sys.exit("timeit.py: bad --env '%s' (expected K=V)" % p)
        env[k] = v
    return env


def resolve(argv, env):
    """absolute path of argv[0] (posix_spawn does not search PATH)"""
    exe = argv[0]
    if "/" in exe:
        return exe
    found = shutil.which(exe, path=env.get("PATH", os.defpath))
    if not found:
        sys.exit("timeit.py: %s: not found" % exe)
    return found


class Cmd:
    def __init__(self, line, envpairs):
        self.argv = shlex.split(line)
        if not self.argv:
            sys.exit("timeit.py: empty command")
        self.env = make_env(envpairs)
        self.exe = resolve(self.argv, self.env)
        self.line = line
        self.null = os.open(os.devnull, os.O_WRONLY)
        self.actions = [(os.POSIX_SPAWN_DUP2, self.null, 1)]

    def run(self):
        """one run: (wall seconds, cpu seconds)"""
        t0 = time.perf_counter()
        pid = os.posix_spawn(self.exe, self.argv, self.env, file_actions=self.actions)
        _, status, ru = os.wait4(pid, 0)
        wall = time.perf_counter() - t0
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            sys.stderr.write("timeit.py: command failed (exit %d): %s\n" % (code, self.line))
            sys.exit(1)
        return wall, ru.ru_utime + ru.ru_stime


def pair(args):
    a = Cmd(args.a, args.a_env)
    b = Cmd(args.b, args.b_env)
    for _ in range(WARMUP):
        a.run()
        b.run()
    wa, wb, ca, cb = [], [], [], []
    for _ in range(args.runs):
        w, c = a.run()
        wa.append(w)
        ca.append(c)
        w, c = b.run()
        wb.append(w)
        cb.append(c)
    ma, mb = statistics.median(wa), statistics.median(wb)
    ratio = ma / mb
    verdict = "PASS" if ratio <= args.target else "MISS"
    print("%-26s %9.2f %9.2f %6.2f  %6.2f %6.2f  %6.2f  ≤%.2f %s" % (
        args.label, ma * 1e3, mb * 1e3, ratio, min(wa) * 1e3, min(wb) * 1e3,
        statistics.median(ca) / max(statistics.median(cb), 1e-9), args.target, verdict))
    sys.stdout.flush()


def cpu(args):
    c = Cmd(args.cmd, args.env)
    wall, cpus = c.run()
    pct = 100.0 * cpus / wall
    verdict = "PASS" if pct < args.target else "MISS"
    print("%-26s cpu %5.2f %% of one core (%.3f s cpu / %.2f s wall)   <%g %%  %s" % (
        args.label, pct, cpus, wall, args.target, verdict))
    sys.stdout.flush()


def multi(args):
    cmds = [(name, Cmd(line, None)) for name, line in args.cmd]
    names = [n for n, _ in cmds]
    if len(set(names)) != len(names):
        sys.exit("timeit.py: two --cmd with the same name")
    for d in args.diff or []:
        if len(d) not in (3, 4) or d[1] not in names or d[2] not in names:
            sys.exit("timeit.py: bad --diff %s (expected TEXT A B [TARGET_MS], A and B --cmd names)" % d)
    for _ in range(WARMUP):
        for _, c in cmds:
            c.run()
    wall = {n: [] for n in names}
    for _ in range(args.runs):
        for n, c in cmds:
            wall[n].append(c.run()[0])
    med = {n: statistics.median(w) * 1e3 for n, w in wall.items()}
    low = {n: min(w) * 1e3 for n, w in wall.items()}
    for n, _ in cmds:
        print("%-34s %9.3f %9.3f" % (n, med[n], low[n]))
    if args.diff:
        print()
        print("%-34s %9s %9s  %s" % ("difference", "median", "min", "target"))
    for d in args.diff or []:
        text, a, b = d[0], d[1], d[2]
        dm, dl = med[a] - med[b], low[a] - low[b]
        tail = ""
        if len(d) == 4:
            t = float(d[3])
            tail = "≤%g ms %s" % (t, "PASS" if dm <= t else "MISS")
        print("%-34s %+9.3f %+9.3f  %s" % (text, dm, dl, tail))
    sys.stdout.flush()


def read_ns(path):
    with open(path) as f:
        return int(f.read().strip())


def queued_ticket(qdir, pid):
    """a ticket.<16 hex> in qdir whose record names pid as its supervisor"""
    try:
        names = [n for n in os.listdir(qdir) if n.startswith("ticket.")]
    except OSError:
        return False
    for n in names:
        try:
            with open(os.path.join(qdir, n)) as f:
                if json.loads(f.read() or "{}").get("supervisor") == pid:
                    return True
        except (OSError, ValueError):
            pass
    return False


def queued_grant(sock, pid):
    """gpuctld's line (authority mode) holds a request of pid's"""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
    from harness import queue_request
    try:
        return any(w.get("supervisor") == pid for w in queue_request(sock, {"op": "leases"}).get("waiters", []))
    except (OSError, ValueError):
        return False


def queued_lock(pid):
    """the waiter blocks in flock(): a '->' line of its pid in /proc/locks"""
    with open("/proc/locks") as f:
        for line in f:
            w = line.split()
            if len(w) > 5 and w[1] == "->" and w[5] == str(pid):
                return True
    return False


def spawn(argv, env, null):
    return os.posix_spawn(argv[0], argv, env, file_actions=[(os.POSIX_SPAWN_DUP2, null, 1)])


def reap(pid, what):
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.stderr.write("timeit.py: %s failed (exit %d)\n" % (what, code))
        sys.exit(1)


def handover(args):
    env = dict(os.environ)
    hold = shlex.split(args.holder)
    wait = shlex.split(args.waiter)
    hold[0] = resolve(hold, env)
    wait[0] = resolve(wait, env)
    null = os.open(os.devnull, os.O_WRONLY)
    fa, fb, fr = (os.path.join(args.dir, x) for x in ("A", "B", "READY"))
    lat, slack = [], []
    retries = 0
    while len(lat) < args.count:
        for f in (fa, fb, fr):
            if os.path.exists(f):
                os.unlink(f)
        holder = spawn(hold + [args.stamp, "-r", fr, "-s", str(args.sleep_ms), fa], env, null)
        t_end = time.monotonic() + 10
        while not os.path.exists(fr):
            if time.monotonic() > t_end:
                sys.exit("timeit.py: the holder did not start its job within 10 s")
            if os.waitpid(holder, os.WNOHANG)[0]:
                sys.exit("timeit.py: the holder ended before its job started: %s" % args.holder)
            time.sleep(0.0002)
        waiter = spawn(wait + [args.stamp, fb], env, null)
        seen = None
        while True:
            q = queued_ticket(args.queue, waiter) if args.queue else \
                queued_grant(args.authority, waiter) if args.authority else queued_lock(waiter)
            if q:
                seen = time.time_ns()
                break
            if os.path.exists(fa) or os.waitpid(waiter, os.WNOHANG)[0]:
                break
            time.sleep(0.0002)
        reap(holder, "the holder")
        reap(waiter, "the waiter")
        a = read_ns(fa)
        # queued early enough that the waiter was asleep when the holder's job ended
        if seen is None or (a - seen) / 1e6 < args.min_slack_ms:
            retries += 1
            if retries > args.max_retries:
                sys.exit("timeit.py: the waiter was not seen queued %g ms before the holder's "
                         "job ended, %d times; try a longer --sleep-ms" % (args.min_slack_ms, retries))
            continue
        b = read_ns(fb)
        lat.append((b - a) / 1e6)
        slack.append((a - seen) / 1e6)
    lat.sort()
    p90 = lat[math.ceil(0.9 * len(lat)) - 1]  # nearest rank
    med = statistics.median(lat)
    print("%-34s %8.3f %8.3f %8.3f %8.3f %8.1f  %d  <%g ms %s" % (
        args.label, med, p90, lat[-1], lat[0], min(slack), retries, args.target,
        "PASS" if med < args.target else "MISS"))
    sys.stdout.flush()


def nvml_calls(path):
    """{NVML function: calls} made from outside NVML, from a callgrind profile"""
    import collections
    import re
    names, count = {}, collections.Counter()
    fn = cfn = ""
    api = re.compile(r"nvml[A-Z]")
    with open(path) as f:
        for line in f:
            m = re.match(r"(c?fn)=\((\d+)\)(?: (.*))?", line)
            if m:
                kind, ident, name = m.groups()
                if name:
                    names[ident] = name.strip()
                if kind == "fn":
                    fn = names.get(ident, "")
                else:
                    cfn = names.get(ident, "")
                continue
            m = re.match(r"calls=(\d+)", line)
            if m and api.match(cfn) and not api.match(fn):
                count[cfn] += int(m.group(1))
    return count


def instructions(path):
    """instructions executed in a callgrind profile (its "totals:" line)"""
    with open(path) as f:
        for line in f:
            if line.startswith("totals:"):
                return int(line.split()[1])
    sys.exit("timeit.py: no totals line in %s" % path)


def calls(args):
    a, b = nvml_calls(args.gpuctl), nvml_calls(args.floor)
    print("%-26s NVML calls: gpuctl %d, floor %d" % (args.label, sum(a.values()), sum(b.values())))
    for k in sorted(set(a) | set(b)):
        if a[k] != b[k]:
            print("%-26s   %s: gpuctl %d, floor %d" % ("", k, a[k], b[k]))
    ia, ib = instructions(args.gpuctl), instructions(args.floor)
    ratio = ia / ib
    verdict = ""
    if args.target is not None:
        verdict = "  target %.2f %s" % (args.target, "PASS" if ratio <= args.target else "MISS")
    print("%-26s instructions: gpuctl %d, floor %d, ratio %.2f%s" % ("", ia, ib, ratio, verdict))


def main():
    ap = argparse.ArgumentParser(description="time commands for bench/query.sh")
    sub = ap.add_subparsers(dest="mode", required=True)
    p = sub.add_parser("pair")
    p.add_argument("--label", required=True)
    p.add_argument("--target", type=float, required=True)
    p.add_argument("--runs", type=int, default=200)
    p.add_argument("--a", required=True)
    p.add_argument("--a-env", action="append")
    p.add_argument("--b", required=True)
    p.add_argument("--b-env", action="append")
    c = sub.add_parser("cpu")
    c.add_argument("--label", required=True)
    c.add_argument("--target", type=float, required=True)
    c.add_argument("--cmd", required=True)
    c.add_argument("--env", action="append")
    m = sub.add_parser("multi")
    m.add_argument("--runs", type=int, default=200)
    m.add_argument("--cmd", nargs=2, action="append", required=True, metavar=("NAME", "CMD"))
    m.add_argument("--diff", nargs="+", action="append", metavar="TEXT A B [TARGET_MS]")
    h = sub.add_parser("handover")
    h.add_argument("--label", required=True)
    h.add_argument("--target", type=float, required=True)
    h.add_argument("--count", type=int, default=30)
    h.add_argument("--sleep-ms", type=int, default=100)
    h.add_argument("--max-retries", type=int, default=10)
    h.add_argument("--min-slack-ms", type=float, default=5)
    h.add_argument("--stamp", required=True)
    h.add_argument("--dir", required=True)
    h.add_argument("--holder", required=True)
    h.add_argument("--waiter", required=True)
    hq = h.add_mutually_exclusive_group(required=True)
    hq.add_argument("--queue")
    hq.add_argument("--locks", action="store_true")
    hq.add_argument("--authority", metavar="SOCK")
    k = sub.add_parser("calls")
    k.add_argument("--target", type=float)
    k.add_argument("label")
    k.add_argument("gpuctl")
    k.add_argument("floor")
    args = ap.parse_args()
    if args.mode == "calls":
        calls(args)
    elif args.mode == "multi":
        if args.runs < 1:
            sys.exit("timeit.py: --runs must be at least 1")
        multi(args)
    elif args.mode == "handover":
        if args.count < 1:
            sys.exit("timeit.py: --count must be at least 1")
        handover(args)
    elif args.mode == "pair":
        if args.runs < 1:
            sys.exit("timeit.py: --runs must be at least 1")
        pair(args)
    else:
        cpu(args)


if __name__ == "__main__":
    main()
