#!/usr/bin/env python3
"""Score gpuctl explain on the corpus of real logs (tests/explain/real/,
issue 36): each log was pasted in a public issue thread or forum, and its
manifest line names its source and the family of its root cause.

For each log `gpuctl explain --json` runs; what it names is the family of the
finding it calls the root cause ("root": true), or "none". A failure of the GPU stack is
right when that is its label; a healthy run or a failure outside the GPU
stack (labels healthy, non-gpu-failure) is right when it is "none", and any
finding there is a false alarm.

A log is in the held-out part when the first hex digit of the SHA-1 of its
source is 0-4 (about 30 %): rules are written from the rest, and the
held-out part is scored apart, only as counts (no log's name or finding is
printed for it, so that reading this output does not leak it).

Usage: explain-score.py GPUCTL DATADIR CORPUS [--check] [--table] [--misses]
  --check   fail (exit 1) when a part scores below the counts in CORPUS/score.json
            (a ratchet: raise them as the rules get better), or any false alarm
            is found beyond score.json's allowance
  --table   the per-family table of docs/explain.md (markdown)
  --misses  the training part's misses, one per line
"""
import collections
import hashlib
import json
import os
import subprocess
import sys

# explain's finding ids -> the corpus's families (LABELS.md); a verdict refines the OOMs
FAMILY = {
    "pytorch-oom": "gpu-oom", "cuda-error-oom": "gpu-oom", "tf-oom": "gpu-oom",
    "nccl-watchdog-timeout": "nccl-timeout",
    "nccl-system-error": "nccl-error", "nccl-internal-error": "nccl-error",
    "xid": "xid", "gpu-fallen-off-bus": "gpu-lost",
    "illegal-memory-access": "illegal-memory-access", "device-side-assert": "device-side-assert",
    "invalid-device-ordinal": "invalid-device-ordinal", "no-cuda-device": "no-cuda-device",
    "cuda-driver-insufficient": "driver-too-old", "cuda-driver-insufficient-cpu-fallback": "driver-too-old",
    "nvml-driver-mismatch": "driver-mismatch", "tf-cuda-libs-missing": "missing-cuda-library",
    "cudnn-error": "cudnn-error", "cublas-error": "cublas-error", "shm-bus-error": "shm-bus-error",
    "rendezvous-port-in-use": "port-in-use", "dataloader-worker-killed": "host-oom",
    "tensors-on-different-devices": "tensors-on-different-devices",
    "alloc-conf-expandable-segments-unsupported": "other-gpu-failure",
}
NO_FAILURE = ("healthy", "non-gpu-failure")


def family(f):
    if f["values"].get("verdict") == "host-memory":
        return "host-oom"
    return FAMILY.get(f["id"], f["id"])


def held_out(source):
    return hashlib.sha1(source.encode()).hexdigest()[0] in "01234"


def predict(gpuctl, data, path):
    env = dict(os.environ, GPUCTL_DATA_DIR=data)
    p = subprocess.run([gpuctl, "explain", "--json", path], capture_output=True, env=env, timeout=120)
    if p.returncode not in (0, 1):
        raise SystemExit(f"FAIL: gpuctl explain {path}: exit {p.returncode}: {p.stderr.decode(errors='replace')}")
    found = json.loads(p.stdout)["findings"]
    if not found:
        return "none"
    return family(next(f for f in found if f["root"]))


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    flags = {a for a in sys.argv[1:] if a.startswith("--")}
    if len(args) != 3 or flags - {"--check", "--table", "--misses"}:
        raise SystemExit(__doc__)
    gpuctl, data, corpus = args
    rows = [json.loads(line) for line in open(os.path.join(corpus, "manifest.jsonl")) if line.strip()]
    score = {"train": [0, 0], "held-out": [0, 0]}
    alarms = {"train": 0, "held-out": 0}
    by_family = collections.defaultdict(lambda: [0, 0, 0, 0])  # train right, train n, held right, held n
    misses = []
    for r in rows:
        part = "held-out" if held_out(r["source"]) else "train"
        got = predict(gpuctl, data, os.path.join(corpus, r["file"]))
        want = "none" if r["label"] in NO_FAILURE else r["label"]
        ok = got == want
        score[part][0] += ok
        score[part][1] += 1
        if r["label"] in NO_FAILURE and got != "none":
            alarms[part] += 1
        k = 0 if part == "train" else 2
        by_family[r["label"]][k] += ok
        by_family[r["label"]][k + 1] += 1
        if not ok and part == "train":
            misses.append(f"  {r['file']}: {r['label']}, explain says {got}")
    for part in ("train", "held-out"):
        right, n = score[part]
        print(f"{part}: {right} of {n} right ({100 * right / max(n, 1):.1f} %), "
              f"{alarms[part]} false alarms on healthy or non-GPU logs")
    if "--misses" in flags:
        print("training part's misses:")
        print("\n".join(misses) if misses else "  none")
    if "--table" in flags:
        print("\n| family | training part | held-out part |\n|---|---|---|")
        for fam in sorted(by_family):
            a, b, c, d = by_family[fam]
            print(f"| {fam} | {a} of {b} | {c} of {d} |")
    if "--check" in flags:
        want = json.load(open(os.path.join(corpus, "score.json")))
        bad = []
        for part, key in (("train", "train_right"), ("held-out", "held_out_right")):
            if score[part][0] < want[key]:
                bad.append(f"{part}: {score[part][0]} right, at least {want[key]} expected")
        if sum(alarms.values()) > want["false_alarms_max"]:
            bad.append(f"{sum(alarms.values())} false alarms, at most {want['false_alarms_max']} expected")
        for b in bad:
            print(f"FAIL: {b}")
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
