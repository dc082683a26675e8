#!/bin/sh
# bench/python.sh [BUILD_DIR] — what the Python package (python/gpuctl) costs,
# next to the command it wraps, in one run (issue 19):
#   1. `import gpuctl` in a fresh interpreter (no torch), median of RUNS:
#      the import alone, timed inside the interpreter (its own start-up is
#      not gpuctl's). Target: < 50 ms.
#   2. gpuctl.devices() on 8 simulated GPUs (tests/cli/nodes/idle-8x.json),
#      the context opened once as a program would, median of RUNS calls, next
#      to the baseline `gpuctl ls --json` run as a process and its output read
#      with json.loads, median of RUNS. Target: devices() <= 1.5x the baseline.
#      The first devices() call of a process (opening the context, loading
#      the simulator) is printed too.
# Environment: RUNS (default 30), PYTHON (python3).
set -eu
# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"
RUNS=${RUNS:-30}
PY=${PYTHON:-python3}
[ -r "$BUILD/lib/libgpuctl.so.0" ] || die "$BUILD/lib/libgpuctl.so.0 not found (build first: make build)"
export LD_LIBRARY_PATH="$BUILD/lib" PYTHONPATH="$ROOT/python" GPUCTL_SIM_LIBDIR="$BUILD/sim" PYTHONDONTWRITEBYTECODE=1
unset GPUCTL_SIM GPUCTL_LIBRARY
NODE=$ROOT/tests/cli/nodes/idle-8x.json

"$PY" - "$GPUCTL" "$NODE" "$RUNS" "$PY" <<'EOF2'
import json, os, statistics, subprocess, sys, time
gpuctl_bin, node, runs, py = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
imp = []
for _ in range(runs):
    out = subprocess.run([py, "-c", "import time; t = time.perf_counter(); import gpuctl; "
                          "print(time.perf_counter() - t)"], capture_output=True, text=True, check=True)
    imp.append(float(out.stdout) * 1000)
base = []
for _ in range(runs):
    t = time.perf_counter()
    out = subprocess.run([gpuctl_bin, "--sim", node, "ls", "--json"], stdout=subprocess.PIPE, check=True).stdout
    n_ls = len(json.loads(out)["gpus"])
    base.append((time.perf_counter() - t) * 1000)
t = time.perf_counter()
import gpuctl
ctx = gpuctl.open(sim=node)
first = ctx.devices()
first_ms = (time.perf_counter() - t) * 1000
dev = []
for _ in range(runs):
    t = time.perf_counter()
    n = len(ctx.devices())
    dev.append((time.perf_counter() - t) * 1000)
assert n == n_ls == len(first) == 8, (n, n_ls)
mi, mb, md = statistics.median(imp), statistics.median(base), statistics.median(dev)
print("gpuctl Python package bench — %d runs each, %s" % (runs, py))
print("%-52s %9s" % ("", "median ms"))
print("%-52s %9.2f" % ("import gpuctl (fresh interpreter, import alone)", mi))
print("%-52s %9.2f   1.00x" % ("gpuctl ls --json | json.loads (8 GPUs, baseline)", mb))
print("%-52s %9.2f   %.2fx" % ("gpuctl.devices() (8 GPUs, context open)", md, md / mb))
print("%-52s %9.2f   %.2fx" % ("first call: import + open + devices()", first_ms, first_ms / mb))
print("summary")
print("  import gpuctl < 50 ms                               %6.2f ms  %s" % (mi, "PASS" if mi < 50 else "MISS"))
print("  devices() <= 1.5x ls --json + json.loads            %6.2fx    %s" % (md / mb, "PASS" if md <= 1.5 * mb else "MISS"))
EOF2
