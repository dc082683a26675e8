#!/bin/sh
# bench/explain.sh [BUILD_DIR] — gpuctl explain's throughput on a large log.
#
# Generates BENCH_MB (default 100) MB of training-log noise with a few real
# failures at the start, middle and end (bench/gen-log.py), then times, in
# turn: wc -l (reads every byte: the floor), grep -E with one alternation of
# every literal gpuctl explain scans for (each signature's trigger, and ESC:
# one pass that only finds candidate lines), and gpuctl explain (finds,
# cleans and matches them). Median of BENCH_RUNS (default 5) runs each; the file is
# read once first so all read it from the page cache. stdout goes to a pipe,
# not /dev/null (GNU grep stops at the first match when it sees /dev/null,
# and cat then splices). Targets (issue 36): gpuctl explain at least 300 MB/s and at least 0.5x grep -E's speed. Checks
# that the failures are found at every position.
set -eu
# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"

MB=${BENCH_MB:-100}
RUNS=${BENCH_RUNS:-5}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT INT TERM
export GPUCTL_DATA_DIR="$ROOT/data"

cat >"$TMP/failures.log" <<'LOG'
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.14 GiB of which 1.19 GiB is free. Process 48213 has 77.94 GiB memory in use. Of the allocated memory 75.12 GiB is allocated by PyTorch, and 2.31 GiB is reserved by PyTorch but unallocated.
[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7541, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=600000) ran for 600043 milliseconds before timing out.
NVRM: Xid (PCI:0000:18:00): 79, pid=<unknown>, name=<unknown>, GPU has fallen off the bus.
2021-04-09 19:52:41.024315: W tensorflow/stream_executor/platform/default/dso_loader.cc:60] Could not load dynamic library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot open shared object file: No such file or directory
LOG
python3 bench/gen-log.py "$MB" "$TMP/failures.log" >"$TMP/big.log"
BYTES=$(wc -c <"$TMP/big.log")
cat "$TMP/big.log" >/dev/null

# every failure found, at the start, the middle and the end (3 lines each)
"$GPUCTL" explain --json "$TMP/big.log" >"$TMP/out.json" || die "gpuctl explain found nothing"
python3 - "$TMP/out.json" <<'PY' || die "gpuctl explain missed a failure"
import json, sys
f = {x["id"]: x["count"] for x in json.load(open(sys.argv[1]))["findings"]}
want = {"pytorch-oom": 3, "nccl-watchdog-timeout": 3, "xid": 3, "tf-cuda-libs-missing": 3}
sys.exit(0 if f == want else print("found", f, "expected", want) or 1)
PY

run() { # label, then the command
	label=$1; shift
	i=0
	: >"$TMP/t"
	while [ "$i" -lt "$RUNS" ]; do time_cmd "$@" >>"$TMP/t"; i=$((i + 1)); done
	s=$(median <"$TMP/t")
	printf '%-34s %8.3f s %9.0f MB/s\n' "$label" "$s" "$(echo "$BYTES $s" | awk '{printf "%.0f", $1 / 1048576 / $2}')"
}

printf 'gpuctl explain bench — %s cores, %s, %s, commit %s\n' "$(nproc)" \
	"$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)" "$(date +%F)" \
	"$(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown)"
printf 'input: %s MB of noise, 3 failures at the start, middle and end; median of %s runs\n\n' "$MB" "$RUNS"
run "wc -l (reads every byte: floor)" wc -l "$TMP/big.log"
# the baseline: grep -E with one alternation of every literal explain's scanner looks for (each
# signature's trigger, and ESC), so both make one pass that finds the same candidate lines
python3 - "$ROOT/data/signatures" >"$TMP/alt" <<'PY'
import glob, json, re, sys
lits = {"\x1b"}
for f in sorted(glob.glob(sys.argv[1] + "/*.json")):
    for s in json.load(open(f)).get("signatures", []):
        lits.add(s["trigger"])
sys.stdout.write("|".join(re.sub(r"([][.*+?^$(){}|\\])", r"\\\1", l) for l in sorted(lits)))
PY
NLIT=$(python3 -c 'import sys; print(len(open(sys.argv[1]).read().split("|")))' "$TMP/alt")
run "grep -E, $NLIT literals (candidates)" grep -c -E -e "$(cat "$TMP/alt")" "$TMP/big.log"
g=$(median <"$TMP/t")
run "gpuctl explain" "$GPUCTL" explain "$TMP/big.log"
s=$(median <"$TMP/t")
rate=$(echo "$BYTES $s" | awk '{printf "%.0f", $1 / 1048576 / $2}')
ratio=$(echo "$g $s" | awk '{printf "%.2f", $1 / $2}')
if [ "$rate" -ge 300 ]; then verdict=PASS; else verdict=MISS; fi
if awk -v r="$ratio" 'BEGIN { exit !(r >= 0.5) }'; then verdict2=PASS; else verdict2=MISS; fi
printf '\ngpuctl explain: %s MB/s, target >= 300 MB/s: %s\n' "$rate" "$verdict"
printf 'gpuctl explain: %sx grep -E'"'"'s speed, target >= 0.5x: %s\n' "$ratio" "$verdict2"
