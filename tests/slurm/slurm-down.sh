#!/bin/bash
# slurm-down.sh DIR
#
# Stop the test Slurm cluster that tests/slurm/slurm-up.sh started in DIR:
# cancel its jobs, then SIGTERM (and after a few seconds SIGKILL) the
# daemons listed in DIR/pids together with any job step daemons
# (slurmstepd) of this cluster and the job processes under them.
# Idempotent: safe to run when nothing is running; always exits 0.

# Pid lists below are whitespace-separated strings of digits, split on
# purpose (no glob characters can occur in them).
# shellcheck disable=SC2086,SC2046
set -u

if [ "$#" -ne 1 ] || [ -z "$1" ]; then
    echo "usage: $0 DIR" >&2
    exit 2
fi
[ -d "$1" ] || exit 0
dir=$(cd "$1" && pwd) || exit 0
conf="$dir/slurm.conf"
PATH=$PATH:/usr/sbin:/sbin
export PATH

# Pids of this cluster's slurmstepd processes.  slurmstepd overwrites its
# argv/environ (setproctitle), so recognise it by its open files instead:
# it keeps slurmd's log and a socket under DIR open.
stepds() {
    local p f
    for p in /proc/[0-9]*; do
        p=${p#/proc/}
        [ "$(cat "/proc/$p/comm" 2>/dev/null)" = slurmstepd ] || continue
        for f in /proc/"$p"/fd/*; do
            case "$(readlink "$f" 2>/dev/null)" in
                "$dir"/*) echo "$p"; break ;;
            esac
        done
    done
}

# All descendants of the given pids (not the pids themselves).
descendants() {
    local all kids p
    all=$(ps -e -o pid= -o ppid= 2>/dev/null) || return 0
    kids=$*
    while [ -n "$kids" ]; do
        set -- $kids
        kids=
        for p in "$@"; do
            for c in $(echo "$all" | awk -v pp="$p" '$2 == pp { print $1 }'); do
                echo "$c"
                kids="$kids $c"
            done
        done
    done
}

# The given pids that still exist and are not zombies (nor this shell).
alive() {
    local p st
    for p in "$@"; do
        [ "$p" = "$$" ] && continue
        kill -0 "$p" 2>/dev/null || continue
        st=$(ps -o stat= -p "$p" 2>/dev/null) || continue
        case "$st" in Z*|"") continue ;; esac
        echo "$p"
    done
}

daemons=
[ -f "$dir/pids" ] && daemons=$(cat "$dir/pids")

# 1. Cancel jobs while the controller still answers (bounded).
if [ -n "$(alive $daemons)" ] && [ -f "$conf" ]; then
    jobs=$(SLURM_CONF=$conf timeout 5 squeue -h -o %i 2>/dev/null) || jobs=
    if [ -n "$jobs" ]; then
        SLURM_CONF=$conf timeout 5 scancel $jobs >/dev/null 2>&1 || true
        for _ in 1 2 3 4 5 6; do
            [ -z "$(stepds)" ] && break
            sleep 0.5
        done
    fi
fi

# 2. Kill daemons, step daemons and everything below them.
steps=$(stepds)
targets=$(alive $daemons $steps $(descendants $daemons $steps))
if [ -n "$targets" ]; then
    kill -TERM $targets 2>/dev/null
    for _ in $(seq 1 10); do
        [ -z "$(alive $targets)" ] && break
        sleep 0.5
    done
    left=$(alive $targets)
    if [ -n "$left" ]; then
        kill -KILL $left 2>/dev/null
        sleep 0.5
    fi
fi

rm -f "$dir/pids"
exit 0
