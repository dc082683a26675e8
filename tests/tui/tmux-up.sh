#!/bin/sh
# tmux-up.sh — make tmux usable for the terminal tests (tests/tui): install
# Debian's tmux with apt-get when it is missing. Prints "TMUX=VERSION" and
# exits 0; exits 77 (meson's "skip") when it cannot be installed here (not
# root, no apt-get, no network), with the reason on stderr.
set -eu
if ! command -v tmux >/dev/null 2>&1; then
	if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
		echo "tmux-up: tmux is missing and cannot be installed here (needs root and apt-get)" >&2
		exit 77
	fi
	echo "tmux-up: installing tmux" >&2
	if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends tmux >/dev/null 2>&1; then
		apt-get update -qq >/dev/null 2>&1 || { echo "tmux-up: apt-get update failed (no network?)" >&2; exit 77; }
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends tmux >/dev/null 2>&1 ||
			{ echo "tmux-up: apt-get install tmux failed" >&2; exit 77; }
	fi
fi
echo "TMUX=$(tmux -V | cut -d' ' -f2)"
