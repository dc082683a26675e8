#!/bin/sh
# bench/top.sh [BUILD_DIR] — the CPU `gpuctl top` uses at a 1 s refresh (issue 20).
#
# For 8 and 64 simulated GPUs (bench/gen-node.py), `gpuctl top -d 1` runs in a
# detached tmux terminal (200x60) for RUN_S seconds (default 30) after a 3 s
# warm-up; its CPU time (/proc/PID/schedstat: ns on a CPU) over that window, as a
# percentage of one core. Beside it, in the same run: nvtop on the same node
# when it can be pointed at the simulator (it loads libnvidia-ml.so.1 by name:
# LD_LIBRARY_PATH to a directory where that name is the simulator), and always
# `gpuctl ls --loop 1` (the same sample each second, printed to a pipe), the
# baseline the ratio is to. Target: top under 1 % of one core at 8 GPUs.
# Needs tmux (installed by tests/tui/tmux-up.sh when missing, as root).
set -eu
# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"
# not SECONDS: bash keeps that one as the seconds since it started (0 here)
RUN_S=${RUN_S:-30}
case $RUN_S in '' | *[!0-9]* | 0*) die "RUN_S='$RUN_S': expected whole seconds, 1 or more (default 30)" ;; esac
sh "$ROOT/tests/tui/tmux-up.sh" >/dev/null || die "tmux is needed (tests/tui/tmux-up.sh could not install it)"
TMP=$(mktemp -d)
SOCK=$TMP/tmux.sock
cleanup() { tmux -S "$SOCK" kill-server 2>/dev/null || :; rm -rf "$TMP"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
export GPUCTL_SIM_LIBDIR="$BUILD/sim" GPUCTL_STATE_DIR="$TMP/state" GPUCTL_SIM_RUNDIR="$TMP/rd" HOME="$TMP"
ns() { cut -d' ' -f1 "/proc/$1/schedstat"; }
# cpu PID: % of one core over RUN_S, after the warm-up
cpu() {
	sleep 3
	a=$(ns "$1")
	sleep "$RUN_S"
	b=$(ns "$1")
	awk -v a="$a" -v b="$b" -v s="$RUN_S" 'BEGIN { printf "%.3f", (b - a) / 1e9 * 100 / s }'
}
NVTOP=$(command -v nvtop || :)
mkdir -p "$TMP/nvml"
ln -s "$BUILD/sim/libnvidia-ml-sim.so" "$TMP/nvml/libnvidia-ml.so.1"
printf '%s\n' "gpuctl top bench — $(nproc) cores, $(date +%F), ${RUN_S} s per row, 1 s refresh"
printf '%-40s %12s %8s\n' "" "% of a core" "ratio"
for n in 8 64; do
	python3 "$ROOT/bench/gen-node.py" "$n" >"$TMP/node$n.json"
	# baseline: gpuctl ls --loop 1 into a pipe
	"$GPUCTL" --sim "$TMP/node$n.json" ls --loop 1 | cat >/dev/null &
	sleep 0.5
	lpid=$(pgrep -n -f "ls --loop 1" || :)
	[ -n "$lpid" ] || die "gpuctl ls --loop 1 did not start"
	base=$(cpu "$lpid")
	kill "$lpid" 2>/dev/null || :
	wait 2>/dev/null || :
	tmux -S "$SOCK" new-session -d -s "top$n" -x 200 -y 60 \
		"exec $GPUCTL --sim $TMP/node$n.json top -d 1"
	sleep 0.5
	tpid=$(tmux -S "$SOCK" list-panes -t "top$n" -F '#{pane_pid}')
	top=$(cpu "$tpid")
	tmux -S "$SOCK" kill-session -t "top$n"
	printf '%-40s %12s %8s\n' "gpuctl ls --loop 1, $n GPUs (baseline)" "$base" "1.00x"
	printf '%-40s %12s %8s\n' "gpuctl top -d 1, $n GPUs" "$top" \
		"$(awk -v a="$top" -v b="$base" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }')"
	if [ -n "$NVTOP" ]; then
		tmux -S "$SOCK" new-session -d -s "nv$n" -x 200 -y 60 \
			"exec env LD_LIBRARY_PATH=$TMP/nvml GPUCTL_SIM_NODE=$TMP/node$n.json $NVTOP -d 10"
		sleep 0.5
		npid=$(tmux -S "$SOCK" list-panes -t "nv$n" -F '#{pane_pid}')
		nv=$(cpu "$npid")
		tmux -S "$SOCK" kill-session -t "nv$n" 2>/dev/null || :
		printf '%-40s %12s %8s\n' "nvtop -d 10, $n GPUs" "$nv" \
			"$(awk -v a="$nv" -v b="$base" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }')"
	fi
	[ "$n" = 8 ] && TOP8=$top
done
[ -n "$NVTOP" ] || echo "nvtop: not installed (Debian ships it in contrib, which this machine's apt sources do not enable): not compared"
echo "summary"
awk -v t="$TOP8" 'BEGIN { printf "  gpuctl top at 8 GPUs < 1%% of a core              %6.3f %%  %s\n", t, (t < 1 ? "PASS" : "MISS") }'
