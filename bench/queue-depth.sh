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
# from gpuctld's records (target median <= 10 ms). KILLS=N: the kill loop
# (bench/queue-depth.py). Then Slurm beside it (below; SLURM=0 leaves it out):
# sbatch and squeue -r at 1k and 10k pending (target: gpuctld ahead on both).
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

# ---- Slurm beside it (issue 35 item 2): the project's one-node Slurm (tests/slurm/slurm-up.sh) with
# MaxJobCount raised, a blocker holding its 8 CPUs, filled to 1k and 10k pending (SLURM_DEPTHS) with
# job arrays of 1000, and at each depth: one `sbatch --wrap true`'s wall time (median of 30, the
# comparison for gpuctl submit's cli50) and `squeue -r`'s, the whole list, median of 5 (for gpuctl
# queue's).
# SLURM=0 leaves it out.
[ "${SLURM:-1}" != 0 ] || exit 0
SLURM_DEPTHS=${SLURM_DEPTHS:-1000,10000}
SDIR=$WORK/slurm
if ! out=$(SLURM_MAX_JOBS=30000 bash "$ROOT/tests/slurm/slurm-up.sh" "$SDIR" 2>"$WORK/slurm-up.err"); then
	echo "Slurm: not available: $(tail -n 1 "$WORK/slurm-up.err")"
	exit 0
fi
export "$out"
trap 'bash "$ROOT/tests/slurm/slurm-down.sh" "$SDIR" >/dev/null 2>&1 || :; rm -rf "$WORK"' EXIT
echo "Slurm $(sinfo --version 2>/dev/null | sed 's/^slurm //'): one node, 8 CPUs, MaxJobCount 30000"
sbatch --parsable -J blocker -c 8 -o /dev/null --wrap "sleep 100000" >/dev/null || die "Slurm: cannot submit the blocker"
printf '%7s %9s %9s\n' depth sbatch50 squeue
pending=0
for depth in $(echo "$SLURM_DEPTHS" | tr , ' '); do
	left=$((depth - pending))
	while [ "$left" -gt 0 ]; do
		n=$left
		[ "$n" -le 1000 ] || n=1000
		sbatch --parsable -J fill --array="0-$((n - 1))" -c 1 -o /dev/null --wrap true >/dev/null ||
			die "Slurm: sbatch of an array failed"
		left=$((left - n))
	done
	pending=$depth
	s50=$(for i in $(seq 30); do time_cmd sbatch --parsable -c 1 -o /dev/null --wrap true; done | median)
	pending=$((pending + 30))
	lines=$(squeue -r -h | wc -l)
	sq=$(for i in 1 2 3 4 5; do time_cmd squeue -r; done | median)
	[ "$lines" -ge "$pending" ] || die "Slurm: squeue -r lists $lines jobs for $pending"
	awk -v d="$pending" -v a="$s50" -v b="$sq" 'BEGIN { printf "%7d %7.2f ms %7.3f s\n", d, a * 1000, b }'
done
