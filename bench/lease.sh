#!/bin/sh
# bench/lease.sh [BUILD_DIR] — what a GPU lease costs.
#
# Times, in one run:
#   1. `gpuctl run -n 1 -- true` on the 8-GPU example node, uncontended,
#      interleaved with plain `true` (baseline), `flock -x FILE true` (the
#      floor: take a lock, run the command), `gpuctl --version` (process
#      start) and `gpuctl query --query-gpu=index --format=csv` (start + NVML
#      open + sample, no lease), so the difference splits into where it goes.
#      Target: gpuctl run within 1 ms of the floor (median), as in authority
#      mode (part 3).
#   2. the hand-over latency: a job under `gpuctl run --gpus 0` ends; how
#      long until the job of a `gpuctl run --gpus 0 --wait` queued behind it
#      starts. Measured with bench/stamp.c (CLOCK_REALTIME ns written by the
#      ending job and by the starting one), with `flock -x` in both roles as
#      the floor. Target: median < 20 ms.
# A MISS is reported, not an error; the exit status is non-zero only when
# something is broken (build, a failing command).
#
# Environment: BENCH_RUNS (rounds of part 1; default 200), BENCH_HANDOVERS
# (samples of part 2; default 30), CC (default cc), TMPDIR (where the temp
# dir, and so the state dir, goes: its file system shows in the figures;
# gpuctl's default /run/gpuctl is usually tmpfs).
set -eu

# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"
FLOCK=$(command -v flock) || die "flock (util-linux) not found"
TRUE=$(command -v true) || die "true not found"
case $TRUE in /*) ;; *) TRUE=/bin/true ;; esac # a shell builtin answers 'true'

RUNS=${BENCH_RUNS:-200}
HANDOVERS=${BENCH_HANDOVERS:-30}
NODE=$ROOT/examples/nodes/h100-8x-sxm.json

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT INT TERM

# a fresh state dir and registration dir, the build's simulator, no GPU limits
unset GPUCTL_SIM GPUCTL_SIM_NODE GPUCTL_NVML_LIBRARY CUDA_VISIBLE_DEVICES
mkdir "$TMP/state" "$TMP/run" "$TMP/ho"
GPUCTL_STATE_DIR=$TMP/state
GPUCTL_SIM_RUNDIR=$TMP/run
GPUCTL_SIM_LIBDIR=$BUILD/sim
export GPUCTL_STATE_DIR GPUCTL_SIM_RUNDIR GPUCTL_SIM_LIBDIR
: >"$TMP/lock"
: >"$TMP/lock2"

${CC:-cc} -O2 -std=c11 -Wall -Wextra -o "$TMP/stamp" bench/stamp.c || die "cannot build bench/stamp.c"
STAMP=$TMP/stamp

cpu=$(sed -n 's/^model name[[:space:]]*: *//p' /proc/cpuinfo | head -n 1)
[ -n "$cpu" ] || cpu=$(uname -m)
commit=$(git -C "$ROOT" describe --always --dirty --abbrev=7 2>/dev/null || echo unknown)
echo "gpuctl lease bench — $(nproc) cores, $cpu, $(date +%F), commit $commit"

# ---- checks: the commands work and the job really gets a GPU --------------
# shellcheck disable=SC2016 # expanded by the job's shell, not here
"$GPUCTL" --sim "$NODE" run -n 1 -- sh -c 'test -n "$CUDA_VISIBLE_DEVICES"' ||
	die "gpuctl run -n 1 failed or gave the job no CUDA_VISIBLE_DEVICES"
"$GPUCTL" --sim "$NODE" query --query-gpu=index --format=csv >/dev/null || die "gpuctl query failed"
"$FLOCK" -x "$TMP/lock" "$TRUE" || die "flock -x FILE true failed"
"$GPUCTL" --sim "$NODE" run --gpus 0 -- "$STAMP" -s 1 "$TMP/ho/check" ||
	die "gpuctl run --gpus 0 -- stamp failed"
[ -s "$TMP/ho/check" ] || die "stamp wrote nothing"
# waiters' tickets (ticket.<16 hex>) live in the state directory itself
[ -z "$(ls "$GPUCTL_STATE_DIR" | grep -E '^ticket\.')" ] || die "queue not empty before the hand-over test"
fs=$(df --output=fstype "$GPUCTL_STATE_DIR" 2>/dev/null | tail -n 1) || fs=unknown
echo "state dir: $GPUCTL_STATE_DIR ($fs; set TMPDIR to move it, e.g. TMPDIR=/dev/shm for tmpfs like /run)"
echo "runs: $RUNS rounds of 5 commands, interleaved, after 5 warm-up rounds; $HANDOVERS hand-overs"
echo

T=bench/timeit.py
# ---- 1. uncontended run ---------------------------------------------------
printf '%-34s %9s %9s\n' "1. uncontended (wall time)" "median ms" "min ms"
python3 $T multi --runs "$RUNS" \
	--cmd "true" "'$TRUE'" \
	--cmd "flock -x FILE true (floor)" "'$FLOCK' -x '$TMP/lock' '$TRUE'" \
	--cmd "gpuctl --version" "'$GPUCTL' --version" \
	--cmd "gpuctl query index (no lease)" "'$GPUCTL' --sim '$NODE' query --query-gpu=index --format=csv" \
	--cmd "gpuctl run -n 1 -- true" "'$GPUCTL' --sim '$NODE' run -n 1 -- '$TRUE'" \
	--diff "gpuctl run - floor" "gpuctl run -n 1 -- true" "flock -x FILE true (floor)" 1 \
	--diff "gpuctl run - true" "gpuctl run -n 1 -- true" "true" \
	--diff "  floor - true (lock + child)" "flock -x FILE true (floor)" "true" \
	--diff "  split: process start (--version)" "gpuctl --version" "true" \
	--diff "  split: NVML open + sample" "gpuctl query index (no lease)" "gpuctl --version" \
	--diff "  split: lease + child (run-query)" "gpuctl run -n 1 -- true" "gpuctl query index (no lease)"
echo

# ---- 2. hand-over ---------------------------------------------------------
printf '%-34s %8s %8s %8s %8s %8s  %s\n' "2. hand-over (exit -> next start)" \
	"median" p90 max min slack "retries target"
python3 $T handover --label "gpuctl run --gpus 0 [--wait]" --target 20 --count "$HANDOVERS" \
	--stamp "$STAMP" --dir "$TMP/ho" --queue "$GPUCTL_STATE_DIR" \
	--holder "'$GPUCTL' --sim '$NODE' run --gpus 0 --" \
	--waiter "'$GPUCTL' --sim '$NODE' run --gpus 0 --wait --"
python3 $T handover --label "flock -x FILE (floor)" --target 20 --count "$HANDOVERS" \
	--stamp "$STAMP" --dir "$TMP/ho" --locks \
	--holder "'$FLOCK' -x '$TMP/lock2'" \
	--waiter "'$FLOCK' -x '$TMP/lock2'"
echo

# ---- 3. authority mode: the same, with gpuctld granting every lease -------
if [ "$(id -u)" = 0 ] && [ -x "$BUILD/daemon/gpuctld" ]; then
	mkdir -m 0755 "$TMP/auth"
	"$BUILD/daemon/gpuctld" --sim "$NODE" --listen 127.0.0.1:0 --authority --authority-dir "$TMP/auth" \
		--queue-db "$TMP/q.db" --log-dir "$TMP/logs" --config /dev/null 2>"$TMP/gpuctld.log" &
	gpid=$!
	i=0
	while [ ! -e "$TMP/auth/authority" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
	[ -e "$TMP/auth/authority" ] || die "gpuctld --authority did not start: $(cat "$TMP/gpuctld.log")"
	GPUCTL_AUTHORITY_DIR=$TMP/auth
	export GPUCTL_AUTHORITY_DIR
	"$GPUCTL" --sim "$NODE" run -n 1 -- sh -c 'test -n "$CUDA_VISIBLE_DEVICES"' ||
		die "gpuctl run -n 1 failed in authority mode"
	printf '%-34s %9s %9s\n' "3. authority mode (wall time)" "median ms" "min ms"
	python3 $T multi --runs "$RUNS" \
		--cmd "true" "'$TRUE'" \
		--cmd "flock -x FILE true (floor)" "'$FLOCK' -x '$TMP/lock' '$TRUE'" \
		--cmd "gpuctl run -n 1 -- true" "'$GPUCTL' --sim '$NODE' run -n 1 -- '$TRUE'" \
		--diff "gpuctl run - floor" "gpuctl run -n 1 -- true" "flock -x FILE true (floor)" 1
	python3 $T handover --label "authority: run --gpus 0 [--wait]" --target 5 --count "$HANDOVERS" \
		--stamp "$STAMP" --dir "$TMP/ho" --authority "$TMP/auth/gpuctld.sock" \
		--holder "'$GPUCTL' --sim '$NODE' run --gpus 0 --" \
		--waiter "'$GPUCTL' --sim '$NODE' run --gpus 0 --wait --"
	unset GPUCTL_AUTHORITY_DIR
	kill "$gpid" 2>/dev/null || true
	wait "$gpid" 2>/dev/null || true
	echo
else
	echo "3. authority mode: skipped (needs root, to run gpuctld --authority)"
fi
cat <<'EOF'
1. Wall time from posix_spawn to wait4, stdout to /dev/null, no shell; the five
   commands run in turn (A B C D E A B ...). "gpuctl run - floor" is what gpuctl
   costs beyond the least a lease can cost (one process that takes a lock and
   runs the command); target ≤ 1 ms. The split: process start = gpuctl
   --version - true (exec, dynamic linking); NVML open + sample = query -
   --version (dlopen of the simulator, one sample; query also prints a small
   CSV); lease + child = run - query (state dir, claim file, lock, record, rename, look for rivals, fork/exec/wait
   of true), to be compared with floor - true (flock(1)'s lock + its child).
2. ms from the moment the holder's job wrote its last timestamp (just before
   it exits) to the moment the waiter's job wrote its first: the job's exit,
   the holder's release, the waiter's wake-up, re-sampling, taking the lease
   and starting the job. The holder's job sleeps 100 ms; the waiter is
   started once that job runs and a sample counts only if the waiter was seen
   queued (its ticket in the state directory; for flock a blocked entry in /proc/locks) at
   least 5 ms before the holder's job ended, else it is retried; slack = the
   least such margin (ms), retries = samples thrown away. p90 is the nearest
   rank. Target: median < 20 ms. A MISS is not a failure.
3. The same in authority mode (gpuctld --authority on the same node, its
   grants stored in its database before the holder hears of them): run's
   overhead over the floor (target ≤ 1 ms) and the hand-over (target median
   ≤ 5 ms), the waiter seen queued in gpuctld's line. There run opens no NVML:
   gpuctld's answer names the GPUs (docs/security.md); in cooperative mode
   (part 1) it must, and on the simulated node that is dlopen + parsing the
   node file (query − --version above).
EOF
