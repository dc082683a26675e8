#!/usr/bin/env python3
"""Docs are checked against the code (as curl does): every --query-gpu field
and alias is in gpuctl-query(1), every key of `ls --json` is in docs/json.md,
every exit code in src/cli.h is in docs/exit-codes.md and gpuctl(1), every
command has a man page. Usage: check-docs.py GPUCTL SRCDIR"""
import json
import os
import re
import subprocess
import sys

gpuctl, src = sys.argv[1], sys.argv[2]
errors = []


def read(rel):
    with open(os.path.join(src, rel), encoding="utf-8") as f:
        return f.read()


def run(*args):
    env = dict(os.environ, GPUCTL_SIM_RUNDIR=os.environ.get("TMPDIR", "/tmp") + "/gpuctl-docs-check")
    return subprocess.run([gpuctl, *args], capture_output=True, text=True, env=env, check=True).stdout


# 1. query fields and aliases
man = read("docs/man/gpuctl-query.1")
for line in run("query", "--help-query-gpu").splitlines():
    for name in re.findall(r'"([^"]+)"', line):
        if not re.search(r"(^\.B |[ ,])" + re.escape(name) + r"($|[,;\n])", man, re.M):
            errors.append(f"gpuctl-query.1 does not document field {name!r}")

# 2. JSON keys
doc = read("docs/json.md")
snap = json.loads(run("--sim", os.path.join(src, "tests/cli/nodes/full-2x.json"), "ls", "--json"))


def keys(obj, prefix=""):
    for k, v in obj.items():
        path = prefix + k
        if isinstance(v, dict) and k != "errors":
            yield from keys(v, path + ".")
        else:
            yield path


for k in keys(snap):
    if k not in ("gpus",) and f"`{k}`" not in doc:
        errors.append(f"docs/json.md does not document top-level key {k!r}")
gpu = snap["gpus"][0]
for k in keys(gpu):
    if f"`{k}`" not in doc and not any(f"`{k}`" in cell for cell in re.findall(r"`[^`]+`", doc)):
        errors.append(f"docs/json.md does not document GPU key {k!r}")
for k in gpu["processes"][0]:
    if f"`{k}`" not in doc:
        errors.append(f"docs/json.md does not document process key {k!r}")

# 3. exit codes
codes = re.findall(r"EXIT_\w+ = (\d+),", read("src/cli.h"))
ec, man1 = read("docs/exit-codes.md"), read("docs/man/gpuctl.1")
for c in codes:
    if not re.search(rf"^\| {c} \|", ec, re.M):
        errors.append(f"docs/exit-codes.md does not list exit code {c}")
    if not re.search(rf"^\.B {c}$", man1, re.M):
        errors.append(f"gpuctl(1) does not list exit code {c}")

# 4. one man page per command
for cmd in re.findall(r"^  (\w+)\s{2,}", run("--help"), re.M):
    if not os.path.exists(os.path.join(src, "docs", "man", f"gpuctl-{cmd}.1")):
        errors.append(f"command {cmd!r} has no docs/man/gpuctl-{cmd}.1")
    if f".B {cmd}\n" not in man1:
        errors.append(f"gpuctl(1) does not list command {cmd!r}")

for e in errors:
    print(e)
print(f"{'FAIL' if errors else 'ok'}: {len(errors)} problem(s)")
sys.exit(1 if errors else 0)
