#!/bin/sh
# bench/queue-depth.sh [BUILD_DIR] — gpuctld's queue at depth (issue 35): at
# 1k, 10k and 100k pending jobs (DEPTHS, comma-separated), what a submit
# costs (over the socket and as a gpuctl submit process), gpuctld's CPU per
# submit, `gpuctl queue`'s time, gpuctld's idle CPU and its memory; one line
# per depth (bench/queue-depth.py says what each column is). Targets
# (issue 35): sock50 <= 2 ms and cpu/sub <= 1 ms at every depth, their
# 100k/1k ratio <= 1.5; gpuctl queue <= 3 s at 100k; idle < 0.1 %; RSS at
# 100k <= 64 MiB. Then, at the last depth, the blocker is cancelled and
# DRAIN jobs (2000) drain: jobs/s (target >= 500) and the dispatch latency
# from gpuctld's records (target median <= 10 ms). Not yet here: Slurm's
# sbatch and squeue beside it.
#
# Needs root (gpuctld starts the blocker job as its submitter). TMPDIR is
# where the database goes (synchronous=FULL: every submit is an fsync, so
# the file system shows in the figures).
set -eu
# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"
GPUCTLD=$BUILD/daemon/gpuctld
[ -x "$GPUCTLD" ] || die "$GPUCTLD not found (build first: make build)"
[ "$(id -u)" = 0 ] || die "needs root: gpuctld starts the blocker job as its submitter"
DEPTHS=${DEPTHS:-1000,10000,100000}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpuctl-qdepth-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
echo "gpuctld's queue at depth: $DEPTHS pending, a blocker holding every GPU ($(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) CPUs)"
GPUCTL_SIM_LIBDIR=$BUILD/sim python3 "$ROOT/bench/queue-depth.py" "$GPUCTL" "$GPUCTLD" \
	"$ROOT/tests/cli/nodes/idle-8x.json" "$WORK" "$DEPTHS"
