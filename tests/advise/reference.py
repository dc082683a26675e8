#!/usr/bin/env python3
"""advise against measured reality (issue 22): every row of reference.csv is
a figure someone measured and published, with the exact setup as `gpuctl
advise` arguments. advise's figure for that setup must lie within the row's
tolerance of the measurement (20 %; 25 % where the source does not say how it
measured). The table in docs/advise.md is this file's --markdown output,
checked here too, so the documentation shows what the test checks.

What is compared:
  memory, measured_by=allocated or reserved (torch.cuda.max_memory_allocated /
      _reserved: the caching allocator's bytes, no CUDA context): advise's
      single-GPU total less its overhead (the context);
  memory, measured_by=device (nvidia-smi, NVML: the process's whole
      footprint): advise's single-GPU total;
  gpu_hours: the cheapest plan's hours x its GPUs;
  fits_under: a published bound ("fine-tuned on one 48 GB GPU"), not a measurement:
      advise's single-GPU total must not exceed it (checked, not counted).
A row with counted=no is shown, with why, but not checked (an ambiguous setup).

Usage: reference.py GPUCTL SRCDIR [--markdown]
"""
import atexit
import csv
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

UNITS = {"GB": 1e9, "GiB": 2.0**30, "MiB": 2.0**20, "MB": 1e6, "gpu-hours": 1.0}


def load(src):
    with open(os.path.join(src, "tests/advise/reference.csv"), newline="") as f:
        rows = [r for r in csv.DictReader(line for line in f if not line.startswith("#"))]
    sources = {}
    with open(os.path.join(src, "tests/advise/sources.csv"), newline="") as f:
        for r in csv.DictReader(line for line in f if not line.startswith("#")):
            sources[r["key"]] = r
    return rows, sources


def advise(gpuctl, src, row):
    args = shlex.split(row["args"].replace("$SRC", src))
    p = subprocess.run([gpuctl, "advise", *args, "--json"], capture_output=True, text=True, timeout=60)
    if p.returncode not in (0, 1):
        raise RuntimeError("gpuctl advise %s: exit %d: %s" % (row["args"], p.returncode, p.stderr.strip()))
    doc = json.loads(p.stdout)
    if row["quantity"] == "gpu_hours":
        if not doc["plans"]:
            raise RuntimeError("gpuctl advise %s: no plan fits" % row["args"])
        plan = doc["plans"][0]
        return plan["hours"] * plan["gpus"], doc
    mem = doc["single_gpu_memory"]
    if row["measured_by"] in ("allocated", "reserved"):
        return mem["total"] - mem["overhead"], doc
    return mem["total"], doc


def fmt(v, unit):
    if unit == "gpu-hours":
        return "%.3gM GPU-h" % (v / 1e6) if v >= 1e6 else "%.0f GPU-h" % v
    return "%.1f %s" % (v, unit)


def main():
    gpuctl, src = sys.argv[1], sys.argv[2]
    # SkyPilot's catalogs in the user's ~/.sky would change the prices: a HOME of its own (issue 32)
    home = tempfile.mkdtemp(prefix="gpuctl-reference-home-")
    atexit.register(shutil.rmtree, home, True)
    os.environ["HOME"] = home
    markdown = "--markdown" in sys.argv[3:]
    rows, sources = load(src)
    out, errors, counted, used = [], [], 0, set()
    out.append("| # | source | setup | measured | by | advise | ratio | checked |")
    out.append("|---|---|---|---|---|---|---|---|")
    for row in rows:
        if row["source"] not in sources:
            errors.append("%s: unknown source %r" % (row["id"], row["source"]))
            continue
        unit = row["unit"]
        measured = float(row["measured"])
        try:
            got, _ = advise(gpuctl, src, row)
        except (RuntimeError, ValueError, KeyError, subprocess.TimeoutExpired) as e:
            errors.append("%s: %s" % (row["id"], e))
            continue
        got_u = got / UNITS[unit]
        ratio = got_u / measured
        tol = float(row["tolerance"]) / 100
        check = row["counted"] == "yes"
        if row["quantity"] == "fits_under":
            if got_u > measured:
                errors.append("%s (%s): advise %s, more than the %s it ran in" % (row["id"], row["setup"],
                              fmt(got_u, unit), fmt(measured, unit)))
            out.append("| %s | %s | %s; `gpuctl advise %s` | ran in %s | %s | %s | %.2f | at most %s |" % (
                row["id"], row["source"], row["setup"], row["args"], fmt(measured, unit), row["measured_by"],
                fmt(got_u, unit), ratio, fmt(measured, unit)))
            continue
        if check:
            counted += 1
            used.add(sources[row["source"]]["independent_of"] or row["source"])
            if not (1 - tol <= ratio <= 1 + tol):
                errors.append("%s (%s): advise %s against %s measured: ratio %.2f outside ±%d %%"
                              % (row["id"], row["setup"], fmt(got_u, unit), fmt(measured, unit), ratio,
                                 round(tol * 100)))
        out.append("| %s | %s | %s; `gpuctl advise %s` | %s | %s | %s | %.2f | %s |" % (
            row["id"], row["source"], row["setup"], row["args"].replace("$SRC/", ""), fmt(measured, unit),
            row["measured_by"], fmt(got_u, unit), ratio,
            "±%s %%" % row["tolerance"] if check else "no: " + row["why"]))
    table = "\n".join(out) + "\n"
    if markdown:
        sys.stdout.write(table)
        return 0
    print(table)
    if counted < 15:
        errors.append("only %d checked reference points (at least 15)" % counted)
    if len(used) < 6:
        errors.append("only %d independent sources among the checked points (at least 6): %s"
                      % (len(used), sorted(used)))
    with open(os.path.join(src, "docs/advise.md")) as f:
        if table not in f.read():
            errors.append("docs/advise.md does not hold the table as reference.py --markdown prints it")
    print("%d reference points checked, from %d independent sources" % (counted, len(used)))
    print("\n".join("FAIL: " + e for e in errors) if errors else "ok")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
