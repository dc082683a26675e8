#!/bin/sh
# bench/query.sh [BUILD_DIR] — how far gpuctl is from the least possible work.
#
# Times, in one run and interleaved with its baseline:
#   - `gpuctl query --format=csv --query-gpu=<9 fields>` against bench/floor.c
#     in "query" mode (same library, same NVML calls, same CSV, checked byte
#     for byte), on the 8-GPU example node and a generated 256-GPU node;
#   - `gpuctl ls --json` against the floor in "full" mode (every NVML call
#     ls --json makes, plain-text output), on the same nodes;
#   - the CPU cost of `--loop 0.1 --count 50` for query and ls, 8 GPUs.
# Both open the node through the simulator, and so through its parsed-node
# cache (docs/sim.md): neither pays for a JSON parse, as neither would pay
# for one on a real driver. GPUCTL_SIM_CACHE=off makes every process parse
# the node file, as before the cache (commit cc1cb9c), which adds the same
# cost to both sides and so brings each ratio closer to 1.
# Targets: ratio ≤ 1.30 at 8 GPUs, ≤ 1.20 at 256; loops < 1 % of one core.
# A MISS is reported, not an error; the exit status is non-zero only when
# something is broken (build, output mismatch, a failing command).
#
# Environment: BENCH_RUNS (runs per command; default 200 at 8 GPUs, 50 at
# 256), CC (default cc), BENCH_CALLGRIND=1 (also compare, under valgrind's
# callgrind, which NVML functions gpuctl and the floor call on the 8-GPU node,
# and how many instructions each runs: target ≤ 1.3× the floor's; counts, so
# they hold on a loaded machine or a VM without hardware counters).
set -eu

# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"

RUNS8=${BENCH_RUNS:-200}
RUNS256=${BENCH_RUNS:-50}
FIELDS=index,name,uuid,pci.bus_id,memory.used,memory.total,utilization.gpu,temperature.gpu,power.draw
NODE8=$ROOT/examples/nodes/h100-8x-sxm.json

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT INT TERM

# same simulator library and an empty registration dir for every run
unset GPUCTL_SIM GPUCTL_SIM_NODE GPUCTL_NVML_LIBRARY
mkdir "$TMP/run"
GPUCTL_SIM_RUNDIR=$TMP/run
GPUCTL_SIM_LIBDIR=$BUILD/sim
export GPUCTL_SIM_RUNDIR GPUCTL_SIM_LIBDIR

${CC:-cc} -O2 -std=c11 -Wall -Wextra -I "$ROOT/lib" -o "$TMP/floor" bench/floor.c -ldl ||
	die "cannot build bench/floor.c"
FLOOR=$TMP/floor
python3 bench/gen-node.py 256 >"$TMP/node256.json" || die "gen-node.py failed"
NODE256=$TMP/node256.json
# The simulator keeps a parsed node file only once its last change is over a
# second old (docs/sim.md, "Parsed-node cache"): let the fresh one age, so that
# every timed run, gpuctl's and the floor's, reads the node the same way.
sleep 1.2

cpu=$(sed -n 's/^model name[[:space:]]*: *//p' /proc/cpuinfo | head -n 1)
[ -n "$cpu" ] || cpu=$(uname -m)
commit=$(git -C "$ROOT" describe --always --dirty --abbrev=7 2>/dev/null || echo unknown)
echo "gpuctl bench — $(nproc) cores, $cpu, $(date +%F), commit $commit"

# ---- checks: the floor does the same work and gets the same answer ----------
calls=""
for spec in "8 $NODE8" "256 $NODE256"; do
	n=${spec%% *}
	node=${spec#* }
	"$GPUCTL" --sim "$node" query --query-gpu=$FIELDS --format=csv >"$TMP/q-gpuctl" ||
		die "gpuctl query failed on the $n-GPU node"
	GPUCTL_SIM_NODE=$node "$FLOOR" query "$SIMLIB" >"$TMP/q-floor" ||
		die "floor query failed on the $n-GPU node"
	if ! cmp -s "$TMP/q-gpuctl" "$TMP/q-floor"; then
		echo "bench: gpuctl query and the floor print different CSV on the $n-GPU node:" >&2
		diff "$TMP/q-gpuctl" "$TMP/q-floor" | head -n 20 >&2
		exit 1
	fi
	[ "$(wc -l <"$TMP/q-floor")" -eq $((n + 1)) ] || die "query printed the wrong number of rows ($n GPUs)"

	"$GPUCTL" --sim "$node" ls --json >"$TMP/ls-gpuctl" || die "gpuctl ls --json failed on the $n-GPU node"
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
if len(d["gpus"]) != n:
    sys.exit("gpuctl ls --json lists %d GPUs, expected %d" % (len(d["gpus"]), n))
' "$TMP/ls-gpuctl" "$n" || die "gpuctl ls --json is not the expected JSON ($n GPUs)"
	GPUCTL_SIM_NODE=$node "$FLOOR" full "$SIMLIB" >"$TMP/ls-floor" || die "floor full failed on the $n-GPU node"
	[ "$(wc -l <"$TMP/ls-floor")" -eq $((n + 2)) ] || die "floor full printed the wrong number of lines ($n GPUs)"
	c=$(sed -n 's/^nvml-calls //p' "$TMP/ls-floor")
	[ -n "$c" ] || die "floor full did not report its NVML call count"
	calls="$calls${calls:+, }$c at $n GPUs"
done
echo "checks: query CSV identical to the floor's (8 and 256 GPUs); ls --json valid;"
echo "        floor full mode: NVML calls made: $calls"
if [ "${BENCH_CALLGRIND:-0}" = 1 ]; then
	command -v valgrind >/dev/null || die "BENCH_CALLGRIND=1 needs valgrind"
	cg() { # OUT CMD...: callgrind profile of one run
		out=$1
		shift
		valgrind --tool=callgrind --callgrind-out-file="$out" "$@" >/dev/null 2>"$TMP/vg.log" ||
			{ cat "$TMP/vg.log" >&2; die "valgrind failed: $*"; }
	}
	cg "$TMP/cg.q.g" "$GPUCTL" --sim "$NODE8" query --query-gpu=$FIELDS --format=csv
	GPUCTL_SIM_NODE=$NODE8 cg "$TMP/cg.q.f" "$FLOOR" query "$SIMLIB"
	cg "$TMP/cg.l.g" "$GPUCTL" --sim "$NODE8" ls --json
	GPUCTL_SIM_NODE=$NODE8 cg "$TMP/cg.l.f" "$FLOOR" full "$SIMLIB"
	python3 bench/timeit.py calls --target 1.3 "query, 8 GPUs" "$TMP/cg.q.g" "$TMP/cg.q.f"
	python3 bench/timeit.py calls --target 1.3 "ls --json, 8 GPUs" "$TMP/cg.l.g" "$TMP/cg.l.f"
fi
echo "runs: $RUNS8 per command at 8 GPUs, $RUNS256 at 256 (interleaved; medians, min)"
echo

# ---- timings -------------------------------------------------------------
printf '%-26s %9s %9s %6s  %6s %6s  %6s  %s\n' case "gpuctl ms" "floor ms" ratio \
	"min g" "min f" "cpu r" target
T=bench/timeit.py
python3 $T pair --label "query, 8 GPUs" --target 1.3 --runs "$RUNS8" \
	--a "'$GPUCTL' --sim '$NODE8' query --query-gpu=$FIELDS --format=csv" \
	--b-env "GPUCTL_SIM_NODE=$NODE8" --b "'$FLOOR' query '$SIMLIB'"
python3 $T pair --label "query, 256 GPUs" --target 1.2 --runs "$RUNS256" \
	--a "'$GPUCTL' --sim '$NODE256' query --query-gpu=$FIELDS --format=csv" \
	--b-env "GPUCTL_SIM_NODE=$NODE256" --b "'$FLOOR' query '$SIMLIB'"
python3 $T pair --label "ls --json, 8 GPUs" --target 1.3 --runs "$RUNS8" \
	--a "'$GPUCTL' --sim '$NODE8' ls --json" \
	--b-env "GPUCTL_SIM_NODE=$NODE8" --b "'$FLOOR' full '$SIMLIB'"
python3 $T pair --label "ls --json, 256 GPUs" --target 1.2 --runs "$RUNS256" \
	--a "'$GPUCTL' --sim '$NODE256' ls --json" \
	--b-env "GPUCTL_SIM_NODE=$NODE256" --b "'$FLOOR' full '$SIMLIB'"
python3 $T cpu --label "loop 0.1 s, query, 8 GPUs" --target 1 \
	--cmd "'$GPUCTL' --sim '$NODE8' query --query-gpu=$FIELDS --format=csv --loop 0.1 --count 50"
python3 $T cpu --label "loop 0.1 s, ls, 8 GPUs" --target 1 \
	--cmd "'$GPUCTL' --sim '$NODE8' ls --loop 0.1 --count 50"
echo
echo "ratio = median gpuctl / median floor wall time; min g/f = fastest runs (ms);"
echo "cpu r = ratio of median CPU time (user+sys). A MISS is not a failure."
