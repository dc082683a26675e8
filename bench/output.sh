#!/bin/sh
# bench/output.sh [BUILD_DIR] — what keeping a job's output tail costs
# (lib/jobs/outtail.c; gpuctl run explains a failed job from it).
#
# 1. throughput: a job writes 1 GiB to stdout (head -c 1G /dev/zero) under
#    `gpuctl --sim NODE run`, with the tail kept (the default) and without
#    (--no-explain, the baseline), stdout a pipe read by cat, and a file in
#    $TMPDIR; then 256 MiB of training-log lines (bench/gen-log.py) through
#    a pipe as cat writes them from a file, and 64 MiB as Python writes them;
#    ROUNDS runs of each, interleaved; the median wall time of each and the
#    throughput ratio kept / not kept. Target: >= 0.90.
# 2. the time added at a failed job's exit: a job that prints a 1 MiB
#    training log (bench/gen-log.py) ending in a PyTorch OOM and exits 1,
#    run with and without --no-explain; the median difference is what the
#    explanation costs (read the tail, scan it, print the block).
# Environment: ROUNDS (default 7).
set -eu
# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"
ROUNDS=${ROUNDS:-7}
NODE=$ROOT/tests/cli/nodes/idle-8x.json
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
unset GPUCTL_SIM GPUCTL_SIM_NODE CUDA_VISIBLE_DEVICES
GPUCTL_SIM_LIBDIR=$BUILD/sim GPUCTL_STATE_DIR=$TMP/state GPUCTL_SIM_RUNDIR=$TMP
export GPUCTL_SIM_LIBDIR GPUCTL_STATE_DIR GPUCTL_SIM_RUNDIR
mkdir "$TMP/state"

now() { python3 -c 'import time; print(time.perf_counter())'; }
secs() { # seconds one run of the shell command $1 takes
	python3 -c 'import subprocess, sys, time
t = time.perf_counter(); subprocess.run(["sh", "-c", sys.argv[1]], check=True); print(time.perf_counter() - t)' "$1"
}

echo "gpuctl output-tail bench — $(nproc) cores, $(date +%F), commit $(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown), $ROUNDS rounds"
RUN="'$GPUCTL' --sim '$NODE' run"
JOB="head -c 1G /dev/zero"
: >"$TMP/pk" ; : >"$TMP/pn" ; : >"$TMP/fk" ; : >"$TMP/fn"
i=0
while [ $i -lt "$ROUNDS" ]; do
	secs "$RUN -- $JOB | cat >/dev/null" >>"$TMP/pk"
	secs "$RUN --no-explain -- $JOB | cat >/dev/null" >>"$TMP/pn"
	secs "$RUN -- $JOB >'$TMP/out'" >>"$TMP/fk"
	secs "$RUN --no-explain -- $JOB >'$TMP/out'" >>"$TMP/fn"
	i=$((i + 1))
done
rm -f "$TMP/out"
# a realistic writer: 256 MiB of training-log lines from Python, through a pipe
python3 "$ROOT/bench/gen-log.py" 256 >"$TMP/big"
: >"$TMP/lk" ; : >"$TMP/ln" ; : >"$TMP/gk" ; : >"$TMP/gn"
i=0
while [ $i -lt "$ROUNDS" ]; do
	secs "$RUN -- cat '$TMP/big' | cat >/dev/null" >>"$TMP/lk"
	secs "$RUN --no-explain -- cat '$TMP/big' | cat >/dev/null" >>"$TMP/ln"
	secs "$RUN -- python3 '$ROOT/bench/gen-log.py' 64 | cat >/dev/null" >>"$TMP/gk"
	secs "$RUN --no-explain -- python3 '$ROOT/bench/gen-log.py' 64 | cat >/dev/null" >>"$TMP/gn"
	i=$((i + 1))
done
rm -f "$TMP/big"
lk=$(median <"$TMP/lk"); ln=$(median <"$TMP/ln"); gk=$(median <"$TMP/gk"); gn=$(median <"$TMP/gn")
pk=$(median <"$TMP/pk"); pn=$(median <"$TMP/pn"); fk=$(median <"$TMP/fk"); fn=$(median <"$TMP/fn")
printf '%-44s %9s %9s %9s\n' "1. 1 GiB to stdout (median s)" kept "not kept" ratio
python3 - "$pk" "$pn" "$fk" "$fn" "$lk" "$ln" "$gk" "$gn" <<'PY'
import sys
pk, pn, fk, fn, lk, ln, gk, gn = map(float, sys.argv[1:])
for name, k, n in (("head -c 1G /dev/zero | cat", pk, pn), ("head -c 1G /dev/zero > file", fk, fn),
                   ("cat 256 MiB of log lines | cat", lk, ln), ("python writing 64 MiB of log | cat", gk, gn)):
    r = n / k
    print("%-44s %9.3f %9.3f %8.2fx  %s" % (name, k, n, r, ">=0.90 PASS" if r >= 0.90 else ">=0.90 MISS"))
PY

# 2. a failed job's explanation
python3 "$ROOT/bench/gen-log.py" 1 >"$TMP/log"
sed -n '/^torch.OutOfMemoryError/p' "$ROOT/tests/explain/fixtures/"*oom* 2>/dev/null | head -n 1 >"$TMP/oom"
[ -s "$TMP/oom" ] || echo "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 1.50 GiB is free. Of the allocated memory 70.12 GiB is allocated by PyTorch, and 6.89 GiB is reserved by PyTorch but unallocated." >"$TMP/oom"
cat "$TMP/oom" >>"$TMP/log"
printf '#!/bin/sh\ncat %s >&2\nexit 1\n' "$TMP/log" >"$TMP/fail.sh"
chmod +x "$TMP/fail.sh"
: >"$TMP/ek" ; : >"$TMP/en"
i=0
while [ $i -lt "$ROUNDS" ]; do
	secs "$RUN -- '$TMP/fail.sh' >/dev/null 2>'$TMP/err' || :" >>"$TMP/ek"
	secs "$RUN --no-explain -- '$TMP/fail.sh' >/dev/null 2>'$TMP/err2' || :" >>"$TMP/en"
	i=$((i + 1))
done
grep -q 'known failure' "$TMP/err" || die "the failed job was not explained: $(cat "$TMP/err")"
ek=$(median <"$TMP/ek"); en=$(median <"$TMP/en")
python3 - "$ek" "$en" "$(wc -c <"$TMP/log")" <<'PY'
import sys
ek, en, size = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
print("2. a failed job printing %d bytes (a 1 MiB log ending in an OOM): %.1f ms with the explanation, "
      "%.1f ms without: +%.1f ms at exit" % (size, ek * 1e3, en * 1e3, (ek - en) * 1e3))
PY
