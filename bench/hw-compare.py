#!/usr/bin/env python3
"""Compare gpuctl with nvidia-smi on a machine with a real NVIDIA GPU.

    python3 bench/hw-compare.py [GPUCTL] > report.md

For every --query-gpu field gpuctl supports, runs nvidia-smi and gpuctl with
the same field list (nvidia-smi, gpuctl, nvidia-smi: so a value that moves
between samples can be told from a formatting difference), compares headers
byte for byte and each cell, then the same for --query-compute-apps, and
times both tools. Prints a Markdown report for docs/hardware-validation.md.

A cell is "exact" when gpuctl printed what nvidia-smi printed; "moving" when
it differs but lies between (or equals one of) the two nvidia-smi samples
around it, for values that change by themselves (power, clocks, temperature,
utilization, memory in use); anything else is a "MISMATCH".
"""
import os
import re
import statistics
import subprocess
import sys
import time

GPUCTL = sys.argv[1] if len(sys.argv) > 1 else "build/src/gpuctl"
MOVING = re.compile(r"^(timestamp|utilization\.|temperature\.|power\.draw|clocks\.current\.|clocks\.sm|"
                    r"clocks\.mem|clocks\.gr|memory\.(used|free)|clocks_event_reasons\.|pstate|fan\.speed|"
                    r"pcie\.link\.(gen|width)\.current)")


def run(argv):
    p = subprocess.run(argv, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def number(cell):
    m = re.match(r"^\s*(-?[0-9.]+)", cell)
    return float(m.group(1)) if m else None


def main():
    rc, out, err = run([GPUCTL, "query", "--help-query-gpu"])
    if rc:
        sys.exit(f"cannot run {GPUCTL}: {err.strip()}")
    fields = [re.findall(r'"([^"]+)"', l)[0] for l in out.splitlines() if l.startswith('"')]
    q = ",".join(fields)
    a = run(["nvidia-smi", f"--query-gpu={q}", "--format=csv"])
    g = run([GPUCTL, "query", f"--query-gpu={q}", "--format=csv"])
    b = run(["nvidia-smi", f"--query-gpu={q}", "--format=csv"])
    rc, ver, _ = run(["nvidia-smi", "--query-gpu=driver_version,name", "--format=csv,noheader"])
    print(f"# gpuctl vs nvidia-smi\n\n- GPU / driver: `{(ver.strip().splitlines() or ['?'])[0]}` ({len(ver.strip().splitlines())} GPU(s))\n- gpuctl: `{GPUCTL}`\n"
          f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n")
    if a[0] or g[0] or b[0]:
        print(f"nvidia-smi exit {a[0]}/{b[0]}: {a[2].strip()}\n\ngpuctl exit {g[0]}: {g[2].strip()}\n")
    ha, hg = a[1].splitlines()[0].split(", "), g[1].splitlines()[0].split(", ")
    print("## --query-gpu, field by field\n\n| GPU | field | header | nvidia-smi | gpuctl | verdict |\n|---|---|---|---|---|---|")
    counts = {"exact": 0, "moving": 0, "MISMATCH": 0}
    rows_a = [r.split(", ") for r in a[1].splitlines()[1:]]
    rows_g = [r.split(", ") for r in g[1].splitlines()[1:]]
    rows_b = [r.split(", ") for r in b[1].splitlines()[1:]]
    for gi in range(min(len(rows_a), len(rows_g), len(rows_b))):
        for i, f in enumerate(fields):
            va, vg, vb = rows_a[gi][i], rows_g[gi][i], rows_b[gi][i]
            header = "same" if ha[i] == hg[i] else f"`{ha[i]}` vs `{hg[i]}`"
            if vg == va or vg == vb:
                verdict = "exact"
            elif MOVING.match(f) and None not in (number(va), number(vg), number(vb)) and \
                    min(number(va), number(vb)) <= number(vg) <= max(number(va), number(vb)) and \
                    re.sub(r"[0-9.]", "", vg) == re.sub(r"[0-9.]", "", va):
                verdict = "moving"
            elif f == "timestamp":
                verdict = "moving"
            else:
                verdict = "MISMATCH"
            if header != "same":
                verdict = "MISMATCH"
            counts[verdict] += 1
            print(f"| {gi} | {f} | {header} | `{va}` | `{vg}` | {verdict} |")
    print(f"\nTotals: {counts}\n")
    apps = "pid,process_name,gpu_uuid,gpu_bus_id,used_gpu_memory"
    sa = run(["nvidia-smi", f"--query-compute-apps={apps}", "--format=csv"])[1]
    sg = run([GPUCTL, "query", f"--query-compute-apps={apps}", "--format=csv"])[1]
    print("## --query-compute-apps\n\n```\n# nvidia-smi\n" + sa + "# gpuctl\n" + sg + "```\n")
    print("verdict:", "exact" if sa == sg else "DIFFERENT (processes may have changed between the calls)", "\n")
    print("## Timing (median of 30 runs, interleaved)\n\n| command | nvidia-smi ms | gpuctl ms | ratio |\n|---|---|---|---|")
    for label, args in (("query, 9 fields", ["--query-gpu=index,name,uuid,pci.bus_id,memory.used,memory.total,"
                                             "utilization.gpu,temperature.gpu,power.draw", "--format=csv"]),
                        ("query, all fields", [f"--query-gpu={q}", "--format=csv"])):
        ts, tg = [], []
        for _ in range(30):
            for cmd, acc in ((["nvidia-smi"] + args, ts), ([GPUCTL, "query"] + args, tg)):
                t0 = time.perf_counter()
                subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                acc.append((time.perf_counter() - t0) * 1000)
        ms, mg = statistics.median(ts), statistics.median(tg)
        print(f"| {label} | {ms:.2f} | {mg:.2f} | {mg / ms:.2f} |")


if __name__ == "__main__":
    main()
