#!/bin/sh
# bench/compare.sh BEFORE AFTER [BENCH...] — the same benchmarks on two trees in
# one run: each tree's own bench/NAME.sh against its own build directory
# (TREE/build, or the BUILD_DIR variable), before then after for each bench,
# so that what the machine does meanwhile falls on both alike. Default
# benches: query lease queue. Make a tree of an older commit with
# `git worktree add ../before COMMIT` and build it (`make -C ../before build`).
# Each bench prints its own ratios against its own baseline; compare those
# lines between the two trees.
set -eu
[ $# -ge 2 ] || { echo "usage: bench/compare.sh BEFORE_TREE AFTER_TREE [BENCH...]" >&2; exit 2; }
before=$(cd "$1" && pwd)
after=$(cd "$2" && pwd)
shift 2
[ $# -gt 0 ] || set -- query lease queue
for b in "$@"; do
	for t in "$before" "$after"; do
		[ -x "$t/bench/$b.sh" ] || [ -f "$t/bench/$b.sh" ] || { echo "bench/compare.sh: no bench/$b.sh in $t" >&2; exit 2; }
		echo "=== $b: $t ($(git -C "$t" rev-parse --short HEAD 2>/dev/null || echo '?'))"
		(cd "$t" && sh "bench/$b.sh" "${BUILD_DIR:-build}")
	done
done
