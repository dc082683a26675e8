#!/usr/bin/env python3
"""Docs are checked against the code (as curl does): every --query-gpu field
and alias is in gpuctl-query(1), every key of `ls --json` is in docs/json.md,
every exit code in src/cli.h is in docs/exit-codes.md and gpuctl(1), every
command has a man page, every finding id and value name of the failure
signatures is in gpuctl-explain(1), every check `gpuctl doctor` runs is in
gpuctl-doctor(1); every option a command accepts is in its --help and every
option its --help prints is in its man page; every environment variable the
code reads is documented (GPUCTL_* ones in gpuctl(1) or gpuctld(8)).
Usage: check-docs.py GPUCTL SRCDIR [GPUCTLD]"""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import harness  # noqa: E402
from harness import errors  # noqa: E402

gpuctl, src = sys.argv[1], sys.argv[2]
gpuctld = sys.argv[3] if len(sys.argv) > 3 else None  # absent in a build without the daemon


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
mig = json.loads(run("--sim", os.path.join(src, "tests/cli/nodes/mig.json"), "ls", "--json"))
for k in keys(mig["gpus"][0]["mig_devices"][0]):
    if f"`{k}`" not in doc:
        errors.append(f"docs/json.md does not document MIG device key {k!r}")

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

# 5. options: what a command accepts is in its --help, what its --help prints is in its man page.
# advise and launch declare theirs in option tables (common/opttab.h), whose --help is made from the
# table that parses: for them the man page check is the one that can fail.
# A command's options are the long options of its getopt table (its cmd-*.c, and the shared
# RUNJOB_LONG_OPTIONS and lib/jobs/job.h's JOB_GPU_OPTIONS and JOB_SUPERVISOR_OPTIONS it includes), told apart by asking the command itself: an
# option it does not know is refused as "unknown option '--x'".
def table_names(text):
    return set(re.findall(r'\{"([a-z][a-z0-9-]*)", *(?:no|required|optional)_argument', text))


def macro(text, name):
    """the body of C macro `name`: its #define line and the continued lines after it"""
    m = re.search(rf"^#define {name}\b(?:.*\\\n)*.*$", text, re.M)
    return m.group(0) if m else ""


runjob_h, job_h = read("src/runjob.h"), read("lib/jobs/job.h")
# lib/jobs/job.h holds the one table of each: the GPU request options and the supervisor options
gpu_opts, supervisor = table_names(macro(job_h, "JOB_GPU_OPTIONS")), table_names(macro(job_h, "JOB_SUPERVISOR_OPTIONS"))
if not {"spot", "restart", "checkpoint-dir", "hang-timeout"} <= supervisor or not {"gpus", "model", "ids"} <= gpu_opts:
    errors.append(f"lib/jobs/job.h's option tables were not read: {sorted(gpu_opts)} {sorted(supervisor)}")
shared = {"JOB_GPU_OPTIONS": gpu_opts,
          "RUNJOB_LONG_OPTIONS": table_names(macro(runjob_h, "RUNJOB_LONG_OPTIONS")) | gpu_opts | supervisor,
          "JOB_SUPERVISOR_OPTIONS": supervisor}
# what gpuctld's runner sets for a job (the spawn request's fields) was once gpuctl run's internal
# options: none is an option of any command now, nor in any --help or man page
internal = {"status-file", "status-slot", "placed", "go-fd"}
cmd_help = run("--help")
commands = re.findall(r"^  (\w+)\s{2,}", cmd_help, re.M)


def function(path, name):
    """the text of the C function `name` in path: its definition line to its closing brace"""
    m = re.search(rf"^(?:static )?int {name}\(.*?^}}$", read(path), re.M | re.S)
    return m.group(0) if m else ""


# the command's own option table: cmd_<verb> (and submit's body, which holds submit's)
sources = {}
for c in commands:
    f = next((f"src/{n}" for n in os.listdir(os.path.join(src, "src")) if n.startswith("cmd-") and
              re.search(rf"^int cmd_{c}\(", read(f"src/{n}"), re.M)), None)
    sources[c] = function(f, f"cmd_{c}") if f else ""
sources["submit"] += function("src/cmd-queue.c", "submit")
probe_env = dict(os.environ, GPUCTL_SIM=os.path.join(src, "examples/nodes/l4-2x.json"),
                 GPUCTL_STATE_DIR="/nonexistent/gpuctl-docs-check", GPUCTL_QUEUE_SOCKET="/nonexistent/q.sock")
for cmd in commands:
    text = sources.get(cmd, "")
    names = table_names(text)
    for macro, extra in shared.items():
        if macro in text:
            names |= extra
    if names & internal:
        errors.append(f"gpuctl {cmd} takes {sorted(names & internal)}, which only gpuctld's runner sets")
    names -= {"help"}
    helptext = subprocess.run([gpuctl, cmd, "--help"], capture_output=True, text=True, env=probe_env).stdout
    for name in sorted(internal):
        if re.search(rf"--{re.escape(name)}\b", helptext):
            errors.append(f"gpuctl {cmd} --help shows the internal option --{name}")
        if os.path.exists(os.path.join(src, "docs/man", f"gpuctl-{cmd}.1")) and \
                "\\-\\-" + name.replace("-", "\\-") in read(f"docs/man/gpuctl-{cmd}.1"):
            errors.append(f"gpuctl-{cmd}.1 documents the internal option --{name}")
    man = read(f"docs/man/gpuctl-{cmd}.1") if os.path.exists(os.path.join(src, "docs/man", f"gpuctl-{cmd}.1")) else ""
    # a command whose --help sends the reader to gpuctl-run(1) for run's options has them there
    delegated = shared["RUNJOB_LONG_OPTIONS"] if "gpuctl-run(1)" in helptext else set()
    for name in sorted(names - delegated):
        p = subprocess.run([gpuctl, cmd, f"--{name}", "--help"], capture_output=True, text=True, env=probe_env,
                           timeout=20, stdin=subprocess.DEVNULL)
        if f"unknown option '--{name}'" in p.stderr:
            continue  # another command's option in the same file
        if not re.search(rf"--{re.escape(name)}\b", helptext):
            errors.append(f"gpuctl {cmd} --help does not list --{name}")
    for name in set(re.findall(r"(?<![\w-])--([a-z][a-z0-9-]+)", helptext)) - {"help"}:
        if not re.search(rf"\\-\\-{re.escape(name).replace(chr(92) + '-', chr(92) + chr(92) + '-')}\b", man):
            errors.append(f"gpuctl-{cmd}.1 does not document --{name} (gpuctl {cmd} --help prints it)")

# 5b. gpuctld: every option of its table is in gpuctld(8), and, but for those that are no
# settings, in contrib/gpuctld.conf with its default (the keys of its configuration file)
# gpuctld's --help is made from its option table (common/opttab.h), which also parses: its option
# lines are the options it takes
gpuctld_help = subprocess.run([gpuctld, "--help"], capture_output=True, text=True, check=True).stdout if gpuctld else ""
gpuctld_opts = set(re.findall(r"^  (?:-\w, )?--([a-z][a-z0-9-]*)", gpuctld_help, re.M)) - {"help", "version"}
man8, conf = read("docs/man/gpuctld.8"), read("contrib/gpuctld.conf")
if gpuctld and not {"listen", "quarantine", "config"} <= gpuctld_opts:
    errors.append(f"gpuctld's options were not read from its --help: {sorted(gpuctld_opts)}")
for name in sorted(gpuctld_opts):
    if "\\-\\-" + name.replace("-", "\\-") not in man8:
        errors.append(f"gpuctld.8 does not document --{name}")
    if name not in ("config", "check-config") and not re.search(rf"^# {re.escape(name)} =", conf, re.M):
        errors.append(f"contrib/gpuctld.conf does not list the key {name!r}")

# 6. environment variables the code reads
code = "".join(read(os.path.relpath(os.path.join(r, f), src)) for d in ("src", "lib", "daemon")
               for r, _, fs in os.walk(os.path.join(src, d)) for f in fs if f.endswith((".c", ".h")))
docs_all = "".join(read(os.path.join("docs/man", f)) for f in os.listdir(os.path.join(src, "docs/man")))
docs_all += "".join(read(os.path.join("docs", f)) for f in os.listdir(os.path.join(src, "docs")) if f.endswith(".md"))
top = man1 + read("docs/man/gpuctld.8")
for var in sorted(set(re.findall(r'getenv\("([A-Z_0-9]+)"\)', code))):
    # set by gpuctl itself for a child (the simulator, the Slurm batch script): documented where it is made
    internal = re.search(rf'setenv\("{var}"|export {var}=', code)
    if var.startswith("GPUCTL_") and not internal and var not in top.replace("\\", ""):
        errors.append(f"gpuctl(1) ENVIRONMENT (or gpuctld(8)) does not document {var}, which the code reads")
    elif var not in docs_all.replace("\\", ""):
        errors.append(f"no page of docs/ documents {var}, which the code reads")

# 6b. environment variables the Python package reads, in docs/python.md
pycode = "".join(read(os.path.join("python", "gpuctl", f)) for f in os.listdir(os.path.join(src, "python", "gpuctl"))
                 if f.endswith(".py"))
pydoc = read("docs/python.md")
for var in sorted(set(re.findall(r'environ(?:\.get\(|\[)"([A-Z_0-9]+)"', pycode))):
    if f"`{var}`" not in pydoc:
        errors.append(f"docs/python.md does not document {var}, which python/gpuctl reads")

# 7. every finding id of the failure signatures, and the names of the values
#    their regexes and notes give, in gpuctl-explain(1)
man = read("docs/man/gpuctl-explain.1")
sigdir = os.path.join(src, "data", "signatures")
for name in sorted(os.listdir(sigdir)):
    if not name.endswith(".json"):
        continue
    for sig in json.loads(read(os.path.join("data", "signatures", name))).get("signatures", []):
        if not sig.get("note") and f"\\fB{sig['id']}\\fR" not in man:
            errors.append(f"gpuctl-explain.1 does not list finding {sig['id']!r}")
        for value in list(sig.get("values", {})) + list(sig.get("context", {})):
            if not re.search(r"[(,\s]" + re.escape(value) + r"[,)]", man):
                errors.append(f"gpuctl-explain.1 does not name value {value!r} of {sig['id']!r}")

# 8. doctor's checks, as it reports them on a node with a GPU (every check runs there)
man = read("docs/man/gpuctl-doctor.1")
p = subprocess.run([gpuctl, "--sim", os.path.join(src, "tests/cli/nodes/full-2x.json"), "doctor", "--json"],
                   capture_output=True, text=True, env=dict(os.environ, GPUCTL_DOCTOR_PY_TIMEOUT_MS="20000",
                                                           GPUCTL_SIM_RUNDIR=os.environ.get("TMPDIR", "/tmp") +
                                                           "/gpuctl-docs-check"))
ids = [c["id"] for c in json.loads(p.stdout)["checks"]]
if len(ids) < 10:
    errors.append(f"gpuctl doctor --json reported only {ids}")
for cid in ids:
    if not re.search(r"^\.B " + re.escape(cid) + r"(\\fR|$)|\\fB" + re.escape(cid) + r"(\\fR|$)", man, re.M):
        errors.append(f"gpuctl-doctor.1 does not document check {cid!r}")

# 9. the README's Layout matches the tree: every directory it names exists, every top-level one
#    (of those git tracks) is named; nothing in the repository points outside it (../shared)
readme = read("README.md")
m = re.search(r"^## Layout\n(.*?)^## ", readme, re.M | re.S)
layout = m.group(1) if m else ""
if not layout:
    errors.append("README.md has no Layout section")
for d in sorted(set(re.findall(r"`([a-z][a-z0-9_./-]*/)`", layout))):
    if not os.path.isdir(os.path.join(src, d)):
        errors.append(f"README.md's Layout names {d}, which is not a directory of the tree")
tracked = subprocess.run(["git", "-C", src, "ls-files"], capture_output=True, text=True).stdout.split()
for top in sorted({f.split("/")[0] for f in tracked if "/" in f and not f.startswith(".")}):
    if f"`{top}/" not in layout:
        errors.append(f"README.md's Layout does not name the top-level directory {top}/")
for f in tracked:
    if (f.endswith((".c", ".h", ".py", ".md", ".sh", ".build", ".1", ".8")) and f != "tests/docs/check-docs.py"
            and os.path.isfile(os.path.join(src, f))):
        if re.search(r"\.\./shared/|(?<![\w/])shared/(facts|DESIGN)", read(f)):
            errors.append(f"{f} points outside the repository (../shared, shared/facts or shared/DESIGN)")

harness.finish("ok: the docs match the code")
