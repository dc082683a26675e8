#!/usr/bin/env python3
"""Run data-driven CLI cases: args + node file -> expected stdout, stderr, exit code.
Usage: run.py GPUCTL SRCDIR BUILDDIR CASE...  (every case, each apart; exit 1 if one failed,
naming it)

A case file (tests/cli/cases/*.case) holds, in this order:

    # comment lines (what the case checks)
    args: --sim {nodes}/l4-2x.json query --query-gpu=index --format=csv
    env: NAME=VALUE            (optional, repeatable; {placeholders} expand)
    hold: GPUCTL ARGS          (optional) a gpuctl command started first, in the
                               background, e.g. `--sim F run --gpus 0 -- sleep 30`;
                               the case runs once it holds a lease, and it is
                               killed after: a holder that is not an ancestor
    needs: tui                 (optional, repeatable) a build with gpuctl top
                               (-Dtui); `needs: no-tui`, one without it.
                               tests/cli/meson.build leaves out the cases the
                               build does not fit
    exit: 0
    stdout:                    exact expected output, line by line
    ...
    stderr:                    exact expected stderr (may be empty)
    ...

`stdout-re:` / `stderr-re:` instead of `stdout:` / `stderr:` make every
following line a regular expression that must match the whole line.
Placeholders, in args, env and expected output alike: {nodes} =
tests/cli/nodes, {examples} = examples/nodes, {build} = the build directory, {src} = the
source tree (a build directory may be anywhere). Each case gets a fresh, empty simulator
runtime directory (GPUCTL_SIM_RUNDIR) and lease directory (GPUCTL_STATE_DIR),
so nothing leaks between cases.
"""
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time


def parse(path):
    case = {"args": None, "env": [], "hold": None, "exit": None, "stdout": None, "stderr": None,
            "stdout_re": False, "stderr_re": False}
    section = None
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for line in lines:
        if section is None:
            if line.startswith("#") or not line.strip():
                continue
            key, _, val = line.partition(":")
            key = key.strip()
            if key == "args":
                case["args"] = val.strip()
            elif key == "env":
                case["env"].append(val.strip())
            elif key == "hold":
                case["hold"] = val.strip()
            elif key == "needs":
                pass  # which builds run the case: tests/cli/meson.build's choice
            elif key == "exit":
                case["exit"] = int(val)
            elif key in ("stdout", "stdout-re", "stderr", "stderr-re"):
                section = key
                name = key.split("-")[0]
                case[name] = []
                case[name + "_re"] = key.endswith("-re")
            else:
                raise SystemExit(f"{path}: unknown line {line!r}")
        else:
            if line in ("stdout:", "stdout-re:", "stderr:", "stderr-re:"):
                section = line[:-1]
                name = section.split("-")[0]
                case[name] = []
                case[name + "_re"] = section.endswith("-re")
                continue
            case[section.split("-")[0]].append(line)
    if case["args"] is None or case["exit"] is None:
        raise SystemExit(f"{path}: needs 'args:' and 'exit:'")
    return case


def compare(what, want, got, regex):
    got_lines = got.split("\n")
    if got_lines and got_lines[-1] == "":
        got_lines.pop()
    else:
        if got:
            return [f"{what}: output does not end with a newline"]
    errs = []
    if len(want) != len(got_lines):
        errs.append(f"{what}: expected {len(want)} lines, got {len(got_lines)}")
    for i, (w, g) in enumerate(zip(want, got_lines)):
        ok = re.fullmatch(w, g) is not None if regex else w == g
        if not ok:
            errs.append(f"{what} line {i + 1}:\n  want {w!r}\n  got  {g!r}")
    return errs


def main():
    gpuctl, srcdir, builddir, *paths = sys.argv[1:]
    srcdir, builddir = os.path.realpath(srcdir), os.path.realpath(builddir)
    failed = [p for p in paths if run_case(gpuctl, srcdir, builddir, p)]
    print(f"{len(paths) - len(failed)} of {len(paths)} cases passed" +
          (": failed " + ", ".join(os.path.basename(p) for p in failed) if failed else ""))
    return 1 if failed or not paths else 0


def run_case(gpuctl, srcdir, builddir, path):
    """one case, in a simulator runtime and lease directory of its own: 0, or 1 after saying what differs"""
    case = parse(path)
    subst = {
        "nodes": os.path.join(srcdir, "tests", "cli", "nodes"),
        "examples": os.path.join(srcdir, "examples", "nodes"),
        "build": builddir,
        "src": srcdir,
    }

    def expand(s):
        return re.sub(r"\{(\w+)\}", lambda m: subst.get(m.group(1), m.group(0)), s)

    with tempfile.TemporaryDirectory() as rundir:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("GPUCTL_") or k in ("GPUCTL_SIM_LIBDIR", "GPUCTL_AUTHORITY_DIR")}
        # a HOME of its own: the user's ~/.config/gpuctl/top.conf or ~/.sky/catalogs never change a case
        env.update({"GPUCTL_SIM_RUNDIR": rundir, "GPUCTL_STATE_DIR": os.path.join(rundir, "state"),
                    "LC_ALL": "C", "TZ": "UTC", "NO_COLOR": "", "HOME": os.path.join(rundir, "home")})
        env.pop("CUDA_VISIBLE_DEVICES", None)
        env.pop("XDG_CONFIG_HOME", None)
        for e in case["env"]:
            k, _, v = expand(e).partition("=")
            env[k] = v
        argv = [gpuctl] + shlex.split(expand(case["args"]))
        holder = None
        if case["hold"]:
            holder = subprocess.Popen([gpuctl] + shlex.split(expand(case["hold"])), env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
            state = env["GPUCTL_STATE_DIR"]
            for _ in range(500):
                if os.path.isdir(state) and any(n.startswith("gpu-") for n in os.listdir(state)):
                    time.sleep(0.05)  # the record follows the lock
                    break
                time.sleep(0.01)
        try:
            p = subprocess.run(argv, env=env, capture_output=True, timeout=60)
        finally:
            if holder:
                try:
                    os.killpg(holder.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass  # it has ended (and may have left an orphan, on purpose)
                holder.wait()
    out = p.stdout.decode("utf-8", "replace")
    err = p.stderr.decode("utf-8", "replace")
    errs = []
    if p.returncode != case["exit"]:
        errs.append(f"exit code: expected {case['exit']}, got {p.returncode}")
    for what, got in (("stdout", out), ("stderr", err)):
        if case[what] is None:
            continue
        regex = case[what + "_re"]
        # placeholders in expectations too, so no case depends on where the tree is
        sub = (lambda s: re.sub(r"\{(\w+)\}", lambda m: re.escape(subst[m.group(1)])
                               if m.group(1) in subst else m.group(0), s)) if regex else expand
        errs += compare(what, [sub(l) for l in case[what]], got, regex)
    if errs:
        print(f"FAIL {os.path.basename(path)}: {' '.join(argv[1:])}")
        for e in errs:
            print(e)
        print("---- stdout ----\n" + out + "---- stderr ----\n" + err)
        return 1
    print(f"ok   {os.path.basename(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
