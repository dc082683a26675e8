#!/usr/bin/env python3
"""bench/check.py BUILD_DIR — the hot paths' figures, each beside its target
and its value at the recorded baseline (bench/baseline.json): `make bench-check`.

Runs bench/query.sh and bench/lease.sh (fewer runs than by hand: BENCH_RUNS,
default 200, BENCH_HANDOVERS, default 30), reads their figures, and prints one
table. A figure worse than its baseline by more than the noise margin
(BENCH_MARGIN, default 10 %) is marked "worse": a regression shows in the change
that causes it, not months later. Like every bench, it reports; it exits
non-zero only when a bench could not run (a MISS or "worse" is not an error).

The baseline is a measurement of another commit on a named machine; where this
machine differs, re-record it: BENCH_RECORD=COMMIT bench/check.py BUILD_DIR
checks that commit out into a temporary worktree, builds it, runs its own
benches there, and writes bench/baseline.json (figures that commit's benches do
not print, such as authority mode before it existed, stay "-").
"""
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASELINE = os.path.join(ROOT, "bench", "baseline.json")

# figure: (bench, how to read it, target, unit, lower is better)
FIGURES = [
    ("query, 8 GPUs / floor", "query", r"^query, 8 GPUs\s+\S+\s+\S+\s+(\S+)", 1.2, "x"),
    ("query, 256 GPUs / floor", "query", r"^query, 256 GPUs\s+\S+\s+\S+\s+(\S+)", 1.1, "x"),
    ("ls --json, 8 GPUs / floor", "query", r"^ls --json, 8 GPUs\s+\S+\s+\S+\s+(\S+)", 1.2, "x"),
    ("ls --json, 256 GPUs / floor", "query", r"^ls --json, 256 GPUs\s+\S+\s+\S+\s+(\S+)", 1.1, "x"),
    ("run - flock (cooperative)", "lease", r"^gpuctl run - floor\s+(\S+)", 1.0, "ms"),
    ("run - flock (authority)", "lease3", r"^gpuctl run - floor\s+(\S+)", 1.0, "ms"),
    ("hand-over median (cooperative)", "lease", r"^gpuctl run --gpus 0 \[--wait\]\s+(\S+)", 2.0, "ms"),
    ("hand-over p90 (cooperative)", "lease", r"^gpuctl run --gpus 0 \[--wait\]\s+\S+\s+(\S+)", 5.0, "ms"),
    ("hand-over median (authority)", "lease3", r"^authority: run --gpus 0 \[--wait\]\s+(\S+)", 5.0, "ms"),
    ("hand-over p90 (authority)", "lease3", r"^authority: run --gpus 0 \[--wait\]\s+\S+\s+(\S+)", 10.0, "ms"),
    ("gpuctl --version / true", "version", None, 1.3, "x"),
]


def run_bench(root, build, script):
    env = dict(os.environ)
    env.setdefault("BENCH_RUNS", "200")
    env.setdefault("BENCH_HANDOVERS", "30")
    r = subprocess.run(["sh", os.path.join(root, "bench", script), build], cwd=root, env=env,
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("bench/check.py: bench/%s failed in %s:\n%s%s" % (script, root, r.stdout[-2000:], r.stderr[-2000:]))
    return r.stdout


def figures(root, build):
    """{figure name: value} from one run of each bench in root (a checkout) against build"""
    out = {"query": run_bench(root, build, "query.sh")}
    lease = run_bench(root, build, "lease.sh")
    head, _, part3 = lease.partition("3. authority mode")
    out["lease"], out["lease3"] = head, part3
    got = {}
    for name, where, rx, _, _ in FIGURES:
        if where == "version":
            med = {}
            for label in ("true", "gpuctl --version"):
                m = re.search(r"^%s\s+(\S+)" % re.escape(label), head, re.M)
                if m:
                    med[label] = float(m.group(1))
            if len(med) == 2 and med["true"] > 0:
                got[name] = med["gpuctl --version"] / med["true"]
            continue
        m = re.search(rx, out[where], re.M)
        if m:
            got[name] = float(m.group(1))
    return got


def record(commit):
    tmp = tempfile.mkdtemp(prefix="gpuctl-baseline.")
    tree = os.path.join(tmp, "tree")
    subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", tree, commit], check=True,
                   capture_output=True)
    try:
        subprocess.run(["meson", "setup", "build"], cwd=tree, check=True, capture_output=True)
        subprocess.run(["ninja", "-C", "build"], cwd=tree, check=True, capture_output=True)
        # that commit's own benches on its own build (its node files are what its simulator reads;
        # it may have no authority mode): the figures they print under the same names
        got = figures(tree, os.path.join(tree, "build"))
    finally:
        subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", tree], capture_output=True)
    cpu = ""
    with open("/proc/cpuinfo") as f:
        m = re.search(r"^model name\s*:\s*(.*)$", f.read(), re.M)
        cpu = m.group(1) if m else ""
    doc = {"commit": subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", commit], capture_output=True,
                                    text=True).stdout.strip(),
           "machine": "%d cores, %s" % (os.cpu_count(), cpu), "figures": {k: round(v, 3) for k, v in got.items()}}
    with open(BASELINE, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    print("recorded %s's figures in %s" % (doc["commit"], BASELINE))


def busiest():
    """what keeps a core busy now (a process above 20 % of one over half a second), or None"""
    def ticks():
        out = {}
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % pid) as f:
                    st = f.read()
            except OSError:
                continue
            name = st[st.find("(") + 1:st.rfind(")")]
            f = st[st.rfind(")") + 2:].split()
            out[pid] = (name, int(f[11]) + int(f[12]))  # utime + stime
        return out
    import time
    a = ticks()
    time.sleep(0.5)
    b = ticks()
    hz = os.sysconf("SC_CLK_TCK")
    hot = sorted(((b[p][1] - a[p][1]) / (0.5 * hz), b[p][0], p) for p in b if p in a and p != str(os.getpid()))
    hot = [h for h in hot if h[0] > 0.2]
    return ", ".join("%s (pid %s) at %d %% of a core" % (n, p, 100 * c) for c, n, p in reversed(hot)) or None


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: bench/check.py BUILD_DIR")
    build = os.path.abspath(sys.argv[1])
    if os.environ.get("BENCH_RECORD"):
        record(os.environ["BENCH_RECORD"])
        return
    try:
        with open(BASELINE) as f:
            base = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit("bench/check.py: cannot read %s: %s (BENCH_RECORD=COMMIT records one)" % (BASELINE, e))
    margin = float(os.environ.get("BENCH_MARGIN", "10")) / 100
    commit = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty", "--abbrev=7"],
                            capture_output=True, text=True).stdout.strip()
    busy = busiest()
    got = figures(ROOT, build)
    print("bench-check — commit %s, baseline %s (%s)" % (commit, base.get("commit", "?"), base.get("machine", "?")))
    if busy:
        print("warning: the machine was not quiet: %s; the figures below are worse for it" % busy)
    print("%-32s %9s %9s %9s  %s" % ("figure", "now", "target", "baseline", "verdict"))
    for name, _, _, target, unit in FIGURES:
        now = got.get(name)
        was = base.get("figures", {}).get(name)
        fmt = (lambda v: "%+.2f" % v) if unit == "ms" and name.startswith("run") else (lambda v: "%.2f" % v)
        if now is None:
            print("%-32s %9s %9s %9s  %s" % (name, "-", "%.2f%s" % (target, unit), "-", "not measured"))
            continue
        verdict = "PASS" if now <= target else "MISS"
        if was is not None and now > was * (1 + margin) + (0.05 if unit == "ms" else 0):
            verdict += ", worse than the baseline"
        print("%-32s %9s %9s %9s  %s" % (name, fmt(now) + ("x" if unit == "x" else ""),
                                         "%.2f%s" % (target, unit), fmt(was) if was is not None else "-", verdict))
    print("targets: issues 32 and 34; ms figures are medians over the floor (flock -x FILE true) or the")
    print("hand-over's p50/p90; x figures are ratios of medians. BENCH_MARGIN=%g %% of noise allowed." %
          (margin * 100))


if __name__ == "__main__":
    main()
