#!/usr/bin/env python3
"""One corpus case of gpuctl explain: run `gpuctl explain --json LOG` and
compare with LOG's .expect file: the exit code, the finding ids in order of
first appearance, each count, and the values the file lists (numbers within
0.5 %, strings exactly), and where it says them, whether a finding is the
root cause, its first rank and its ranks. Every number in the output must be rounded: whole
ones are integers, others have at most two decimals.
Usage: explain-run.py GPUCTL DATADIR LOG"""
import json
import os
import subprocess
import sys


def main():
    gpuctl, data, log = sys.argv[1:4]
    want = json.load(open(os.path.splitext(log)[0] + ".expect"))
    env = dict(os.environ, GPUCTL_DATA_DIR=data)
    p = subprocess.run([gpuctl, "explain", "--json", log], capture_output=True, env=env, timeout=60)
    errors = []
    if p.returncode != want["exit"]:
        errors.append(f"exit {p.returncode}, expected {want['exit']}: {p.stderr.decode(errors='replace')}")
    try:
        got = json.loads(p.stdout)["findings"]
    except (ValueError, KeyError) as e:
        print(f"FAIL {os.path.basename(log)}: output is not the JSON schema: {e}")
        return 1
    ids = [(f["id"], f["values"].get("code")) for f in got]
    wid = [(f["id"], f.get("values", {}).get("code")) for f in want["findings"]]
    if [i for i, _ in ids] != [i for i, _ in wid]:
        errors.append(f"findings {[i for i, _ in ids]}, expected {[i for i, _ in wid]}")
    for g in got:
        for k, v in g["values"].items():
            if isinstance(v, float) and abs(v) < 2 ** 53 and (
                    v == int(v) or len(repr(v).partition(".")[2]) > 2):
                errors.append(f"{g['id']}: {k} = {v!r} is not rounded")
    for w, g in zip(want["findings"], got):
        if w["id"] != g["id"]:
            continue
        if "count" in w and w["count"] != g["count"]:
            errors.append(f"{w['id']}: count {g['count']}, expected {w['count']}")
        for k in ("root", "rank", "ranks"):
            if k in w and g.get(k) != w[k]:
                errors.append(f"{w['id']}: {k} {g.get(k)!r}, expected {w[k]!r}")
        for k, v in w.get("values", {}).items():
            gv = g["values"].get(k)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                if not isinstance(gv, (int, float)) or abs(gv - v) > max(0.005 * abs(v), 1e-9):
                    errors.append(f"{w['id']}: {k} = {gv}, expected {v}")
            elif gv != v:
                errors.append(f"{w['id']}: {k} = {gv!r}, expected {v!r}")
    if errors:
        print(f"FAIL {os.path.basename(log)}")
        for e in errors:
            print("  " + e)
        print(p.stdout.decode(errors="replace")[:4000])
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
