#!/usr/bin/env python3
"""timeit.py — time commands for bench/query.sh and print one table row.

    timeit.py pair --label L --target 1.3 --runs N \
        [--a-env K=V ...] --a 'CMD ARGS' [--b-env K=V ...] --b 'CMD ARGS'
        Runs A and B N times each, interleaved (A B A B ...) after a few
        untimed warm-up runs, stdout to /dev/null. Prints the median and the
        minimum wall time of each, the ratio of the medians A/B and PASS or
        MISS against the target ratio.

    timeit.py calls LABEL GPUCTL.callgrind FLOOR.callgrind
        Compares the NVML entry points called (and how often) in two
        callgrind profiles; prints the totals and every difference.

    timeit.py cpu --label L --target 1.0 [--env K=V ...] --cmd 'CMD ARGS'
        Runs CMD once, stdout to /dev/null; prints its CPU time (user + sys
        from the child's rusage) over its wall time as "% of one core", and
        PASS or MISS against the target percentage.

Commands are split with shlex and started with os.posix_spawn (no shell);
os.wait4 gives each child's rusage. The environment is the caller's plus the
--*-env additions. A command that exits non-zero is an error (exit 1): a
benchmark of a failing command measures nothing. A MISS is not an error.
"""
import argparse
import os
import shlex
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
    for d in env.get("PATH", os.defpath).split(os.pathsep):
        cand = os.path.join(d or ".", exe)
        if os.access(cand, os.X_OK):
            return cand
    sys.exit("timeit.py: %s: not found" % exe)


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


def calls(args):
    a, b = nvml_calls(args.gpuctl), nvml_calls(args.floor)
    print("%-26s NVML calls: gpuctl %d, floor %d" % (args.label, sum(a.values()), sum(b.values())))
    for k in sorted(set(a) | set(b)):
        if a[k] != b[k]:
            print("%-26s   %s: gpuctl %d, floor %d" % ("", k, a[k], b[k]))


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
    k = sub.add_parser("calls")
    k.add_argument("label")
    k.add_argument("gpuctl")
    k.add_argument("floor")
    args = ap.parse_args()
    if args.mode == "calls":
        calls(args)
    elif args.mode == "pair":
        if args.runs < 1:
            sys.exit("timeit.py: --runs must be at least 1")
        pair(args)
    else:
        cpu(args)


if __name__ == "__main__":
    main()
