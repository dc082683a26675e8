#!/bin/sh
# bench/hostile.sh [BUILD_DIR] — what a hostile local user costs the others in
# authority mode (issue 32): the victim's `gpuctl run -n 1 -- true` and its
# queued job's submit -> start, unloaded and under each attack of another
# user, side by side (target: each at most 2x unloaded). Needs root (gpuctld
# --authority, and two users it makes and removes: tests/integration/testusers.py).
# BENCH_ROUNDS: measurements a row (default 30). bench/hostile.py says more.
set -eu

# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"
[ "$(id -u)" = 0 ] || die "needs root (gpuctld --authority; two test users)"
[ -x "$BUILD/daemon/gpuctld" ] || die "$BUILD/daemon/gpuctld not found (build first: make build)"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT INT TERM
${CC:-cc} -O2 -std=c11 -Wall -Wextra -o "$TMP/stamp" bench/stamp.c || die "cannot build bench/stamp.c"
chmod 755 "$TMP"
GPUCTL_SIM_LIBDIR=$BUILD/sim python3 bench/hostile.py "$BUILD/daemon/gpuctld" "$GPUCTL" "$ROOT" "$TMP/stamp"
