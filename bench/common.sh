# bench/common.sh — what every benchmark script starts with: sourced (not
# run) after `set -eu` with the build directory as $1. Sets ROOT (the
# source tree, also the working directory), BUILD (absolute), GPUCTL and
# SIMLIB, and checks they and python3 are there. die MESSAGE stops the run;
# median reads numbers on stdin; time_cmd CMD... prints the seconds one run
# of CMD takes (its stdout to a pipe, not /dev/null).
# shellcheck shell=sh

die() { echo "bench: $*" >&2; exit 1; }

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || die "cannot enter $ROOT"
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
GPUCTL=$BUILD/src/gpuctl
SIMLIB=$BUILD/sim/libnvidia-ml-sim.so
[ -x "$GPUCTL" ] || die "$GPUCTL not found (build first: make build)"
[ -r "$SIMLIB" ] || die "$SIMLIB not found (build first: make build)"
command -v python3 >/dev/null || die "python3 not found"

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
time_cmd() { # prints seconds for one run of "$@" (stdout discarded)
	python3 -c 'import subprocess, sys, time
t = time.perf_counter(); subprocess.run(sys.argv[1:], stdout=subprocess.PIPE); print(time.perf_counter() - t)' "$@"
}
