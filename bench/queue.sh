#!/bin/sh
# bench/queue.sh [BUILD_DIR] — what gpuctld's job queue costs per job, next to
# task-spooler and a local Slurm.
#
# Measures, in one run, for gpuctld (simulated node), task-spooler (tsp, a
# private server: TS_SOCKET, TS_SLOTS, no GPU flags) and Slurm (the one-node
# cluster of tests/slurm/slurm-up.sh: 8 CPUs, gpu:4):
#   1. throughput: JOBS trivial jobs are queued behind a blocker job that
#      holds all 8 slots (gpuctld: an 8-GPU job on an 8-GPU node; tsp: -N 8
#      with -S 8; Slurm: -c8 on 8 CPUs), the blocker is released, and the jobs
#      drain 8 at a time (gpuctld: 1 GPU each; tsp: 1 slot; Slurm: -c1, no
#      GPU request, array jobs of at most 1000 tasks). jobs/s = jobs over the
#      time from the first job's start to the last one's end; the ratio is to
#      task-spooler's. Target: gpuctld >= task-spooler (issue 18 asks 1.5x;
#      both are printed). The same jobs started 8 at a time by a small C
#      program with no queue ("floor": posix_spawn alone, and fork +
#      posix_spawn, the shape of a job with a supervisor process above it)
#      show what this machine allows at all; the summary gives each queue's
#      share of the second.
#   2. dispatch latency ("GPU freed -> next job started"): LAT_JOBS jobs
#      through ONE slot (gpuctld: a 1-GPU node, the first GPU of the same
#      node file; tsp: -S 1; Slurm: -c8, so one job fills the node), queued
#      behind a blocker the same way, so they run strictly one after the
#      other; latency(i) = start(i+1) - end(i); median and p90. For gpuctld
#      the median is also split at its own records (started_ms, ended_ms),
#      and measured again beside a webhook receiver that never answers
#      (--webhook; docs/policy.md): notifications must not slow dispatch.
#      Target: gpuctld's median <= 10 ms.
# Every job is the same small C program (built here with cc) that appends
# "START_NS END_NS ID" (CLOCK_REALTIME, taken at its start and just before
# it writes) to a file; no shell, except the one Slurm's --wrap adds.
# A MISS is reported, not an error; the exit status is non-zero only when
# something is broken (build, a daemon that does not start, a job missing).
#
# Needs root (gpuctld starts jobs as their submitter, Slurm's daemons) and
# task-spooler (Debian package task-spooler, command tsp; installed with
# apt-get when missing). Slurm is started (and installed when missing) by
# tests/slurm/slurm-up.sh; where it cannot be, its rows say so.
#
# Environment: JOBS (part 1; default 2000), JOBS_SLURM (part 1 for Slurm;
# default JOBS), LAT_JOBS (part 2; 200), LAT_JOBS_SLURM (part 2 for Slurm;
# LAT_JOBS), SLURM (0: leave Slurm out), TSP_QUEUED (tsp jobs queued before
# the release; default 900: a tsp server holds at most ~1000 connections and
# every queued job is a client process connected to it, so the rest are
# started as clients that block until the server accepts them, before the
# release), TIMEOUT (seconds a part may take per system; 900), CC (cc),
# TMPDIR (where the temp dir, and so gpuctld's SQLite database, goes: its
# file system shows in the figures; synchronous=FULL makes every commit an
# fsync), STATE_ROOT (where gpuctld's lease directory goes; default /dev/shm
# when it is a tmpfs, as /run/gpuctl is under the shipped unit).
set -eu

# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"
GPUCTLD=$BUILD/daemon/gpuctld
[ -x "$GPUCTLD" ] || die "$GPUCTLD not found (build first: make build)"
[ "$(id -u)" = 0 ] || die "needs root: gpuctld starts jobs as their submitter, and Slurm's daemons run as root"

# ---- tools ------------------------------------------------------------------
if ! command -v tsp >/dev/null; then
	if command -v apt-get >/dev/null; then
		echo "bench: installing task-spooler" >&2
		DEBIAN_FRONTEND=noninteractive apt-get -y -qq --no-install-recommends install task-spooler >/dev/null ||
			{ apt-get -qq update >/dev/null &&
				DEBIAN_FRONTEND=noninteractive apt-get -y -qq --no-install-recommends install task-spooler >/dev/null; } ||
			die "cannot install task-spooler with apt-get"
	else
		die "missing tsp: install the Debian package task-spooler (apt-get install task-spooler), then run again"
	fi
fi
TSP=$(command -v tsp) || die "tsp not found"

JOBS=${JOBS:-2000}
JOBS_SLURM=${JOBS_SLURM:-$JOBS}
LAT_JOBS=${LAT_JOBS:-200}
GPUCTLD_EXTRA=""
LAT_JOBS_SLURM=${LAT_JOBS_SLURM:-$LAT_JOBS}
SLURM=${SLURM:-1}
TSP_QUEUED=${TSP_QUEUED:-900}
TIMEOUT=${TIMEOUT:-900}
SLOTS=8
TARGET_LAT=10
NODE8=$ROOT/tests/cli/nodes/idle-8x.json
Q="python3 bench/queue.py"

TMP=$(mktemp -d)
# gpuctld's leases (GPUCTL_STATE_DIR) where the shipped unit keeps them: a tmpfs (/run/gpuctl,
# RuntimeDirectory=). STATE_ROOT=DIR puts them elsewhere (STATE_ROOT=$TMP: on the temp dir, as
# before 2026-11-29; where that is ext4 without a journal, every claim's unlink makes later file
# creations scan the recently deleted inodes).
if [ -z "${STATE_ROOT:-}" ]; then
	STATE_ROOT=$TMP
	if [ "$(df --output=fstype /dev/shm 2>/dev/null | tail -n 1)" = tmpfs ] && [ -w /dev/shm ]; then
		STATE_ROOT=/dev/shm
	fi
fi
STATE=$(mktemp -d "$STATE_ROOT/gpuctl-bench-state-XXXXXX")
PIDS=""
TSP_SOCKETS=""
SLURM_DIR=""
cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null || :; done
	for p in $PIDS; do wait "$p" 2>/dev/null || :; done
	for s in $TSP_SOCKETS; do
		if [ -S "$s" ]; then TS_SOCKET=$s "$TSP" -K >/dev/null 2>&1 || :; fi
	done
	for f in "$TMP"/*/clients; do
		[ -f "$f" ] || continue
		while read -r p; do kill "$p" 2>/dev/null || :; done <"$f"
	done
	if [ -n "$SLURM_DIR" ]; then bash "$ROOT/tests/slurm/slurm-down.sh" "$SLURM_DIR" >/dev/null 2>&1 || :; fi
	rm -rf "$TMP" "$STATE"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

unset GPUCTL_SIM GPUCTL_SIM_NODE GPUCTL_NVML_LIBRARY CUDA_VISIBLE_DEVICES GPUCTL_QUEUE_SOCKET

# the job: two timestamps and its id (the value of the variable named by $2)
cat >"$TMP/qjob.c" <<'EOF'
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
static long long now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}
int main(int argc, char **argv)
{
	long long start = now();
	if (argc < 2)
		return 2;
	const char *id = argc > 2 ? getenv(argv[2]) : NULL;
	char buf[96];
	int fd = open(argv[1], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	int n = snprintf(buf, sizeof buf, "%lld %lld %s\n", start, now(), id && *id ? id : "-");
	return fd >= 0 && write(fd, buf, (size_t)n) == n && close(fd) == 0 ? 0 : 1;
}
EOF
${CC:-cc} -O2 -std=c11 -Wall -Wextra -o "$TMP/qjob" "$TMP/qjob.c" || die "cannot build the job program"
QJOB=$TMP/qjob
"$QJOB" "$TMP/check" || die "the job program failed"
[ -s "$TMP/check" ] || die "the job program wrote nothing"

# the floor: the same jobs started by one C program, SLOTS at a time, with nothing
# else around them: posix_spawn of the job alone, or a fork that posix_spawns it and
# waits (the shape of a job with a supervisor process, which gpuctld's and tsp's both are)
cat >"$TMP/qfloor.c" <<'EOF2'
#define _GNU_SOURCE
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
extern char **environ;
int main(int argc, char **argv)
{
	if (argc != 6)
		return 2;
	long n = atol(argv[1]), slots = atol(argv[2]), started = 0, running = 0;
	int fork_first = strcmp(argv[3], "fork") == 0;
	char *job[] = {argv[4], argv[5], NULL};
	while (started < n || running) {
		while (running < slots && started < n) {
			pid_t p;
			if (fork_first) {
				if ((p = fork()) == 0) {
					pid_t c;
					int st;
					_exit(posix_spawn(&c, job[0], NULL, NULL, job, environ) || waitpid(c, &st, 0) < 0);
				}
			} else if (posix_spawn(&p, job[0], NULL, NULL, job, environ) != 0) {
				p = -1;
			}
			if (p < 0)
				return 1;
			running++;
			started++;
		}
		int st;
		if (wait(&st) < 0)
			return 1;
		running--;
	}
	return 0;
}
EOF2
${CC:-cc} -O2 -std=c11 -Wall -Wextra -o "$TMP/qfloor" "$TMP/qfloor.c" || die "cannot build the floor program"

# the blocker: says it runs (file READY), then holds its slots until GO exists
blocker() { echo "touch '$1'; while [ ! -e '$2' ]; do sleep 0.02; done"; }
# busy: the machine's CPU ticks spent so far (user, nice, system, irq, softirq, steal)
busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }
HZ=$(getconf CLK_TCK)
# cpu_per_job TICKS0 COUNT: ms of CPU (all cores) per job since TICKS0
cpu_per_job() { awk -v a="$1" -v b="$(busy)" -v n="$2" -v hz="$HZ" 'BEGIN { printf "%.2f", (b - a) * 1000 / hz / n }'; }
wait_file() { # FILE WHAT
	i=0
	until [ -e "$1" ]; do
		[ $i -lt 600 ] || die "$2: not running after 60 s"
		sleep 0.1
		i=$((i + 1))
	done
}

# ---- gpuctld ------------------------------------------------------------------
# gpuctld_part NAME NODE BLOCKER_GPUS COUNT: leaves $TMP/NAME/stamps, sets QUEUED_S
gpuctld_part() {
	d=$TMP/$1
	mkdir -p "$STATE/$1" "$d/rd" "$d/logs"
	# shellcheck disable=SC2153,SC2086 # GPUCTL comes from common.sh; GPUCTLD_EXTRA is a list of options
	GPUCTL_SIM_LIBDIR=$BUILD/sim GPUCTL_STATE_DIR=$STATE/$1 GPUCTL_SIM_RUNDIR=$d/rd \
		"$GPUCTLD" --sim "$2" --listen 127.0.0.1:0 --queue-db "$d/q.db" --queue-socket "$d/q.sock" \
		--log-dir "$d/logs" --config /dev/null $GPUCTLD_EXTRA 2>"$d/err" &
	gpid=$!
	PIDS="$PIDS $gpid"
	$Q ready "$d/q.sock" 10 || die "gpuctld ($1) did not open its queue socket: $(cat "$d/err")"
	$Q submit "$d/q.sock" 1 "$3" sh -c "$(blocker "$d/ready" "$d/GO")" >/dev/null ||
		die "gpuctld ($1): cannot submit the blocker"
	wait_file "$d/ready" "gpuctld's blocker ($1)"
	QUEUED_S=$($Q submit "$d/q.sock" "$4" 1 "$QJOB" "$d/stamps" GPUCTL_JOB_ID) ||
		die "gpuctld ($1): submit failed"
	perf_pid=""
	if [ -n "${PERF_DATA:-}" ] && [ "$1" = g8 ]; then
		perf record -a -g -o "$PERF_DATA" >/dev/null 2>"$d/perf.err" &
		perf_pid=$!
		sleep 1
	fi
	b0=$(busy)
	touch "$d/GO"
	$Q wait "$d/stamps" "$4" "$TIMEOUT" || die "gpuctld ($1): jobs missing: $($Q count "$d/q.db")"
	CPU_MS=$(cpu_per_job "$b0" "$4")
	if [ -n "$perf_pid" ]; then
		kill -INT "$perf_pid"
		wait "$perf_pid" || :
	fi
	# the last job's end is recorded just after it wrote its stamp
	i=0
	while [ "$($Q count "$d/q.db")" != "done=$(($4 + 1))" ]; do
		[ $i -lt 100 ] || die "gpuctld ($1): not all done: $($Q count "$d/q.db")"
		sleep 0.1
		i=$((i + 1))
	done
	kill "$gpid"
	wait "$gpid" 2>/dev/null || :
	PIDS=$(echo "$PIDS" | sed "s/ $gpid\$//; s/ $gpid / /")
}

# ---- task-spooler ---------------------------------------------------------------
# tsp_part NAME SLOTS COUNT: leaves $TMP/NAME/stamps, sets QUEUED_S
tsp_part() {
	d=$TMP/$1
	mkdir -p "$d"
	TSP_SOCKETS="$TSP_SOCKETS $d/sock"
	TSD=$d TSN=$2
	tspc "$TSN" sh -c "$(blocker "$d/ready" "$d/GO")" >/dev/null || die "tsp ($1): cannot queue the blocker"
	wait_file "$d/ready" "tsp's blocker ($1)"
	t0=$(date +%s.%N)
	q=$3
	[ "$q" -le "$TSP_QUEUED" ] || q=$TSP_QUEUED
	i=0
	while [ $i -lt "$q" ]; do
		tspc 1 "$QJOB" "$d/stamps" >/dev/null || die "tsp ($1): cannot queue a job"
		i=$((i + 1))
	done
	: >"$d/clients"
	while [ $i -lt "$3" ]; do
		tspc 1 "$QJOB" "$d/stamps" >/dev/null &
		echo $! >>"$d/clients"
		i=$((i + 1))
	done
	[ "$q" = "$3" ] || sleep 1 # the blocked clients reach their connect()
	QUEUED_S=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
	perf_pid=""
	if [ -n "${PERF_DATA:-}" ] && [ "$1" = t8 ]; then
		perf record -a -g -o "$PERF_DATA.tsp" >/dev/null 2>"$d/perf.err" &
		perf_pid=$!
		sleep 1
	fi
	b0=$(busy)
	touch "$d/GO"
	$Q wait "$d/stamps" "$3" "$TIMEOUT" || die "tsp ($1): jobs missing"
	CPU_MS=$(cpu_per_job "$b0" "$3")
	if [ -n "$perf_pid" ]; then
		kill -INT "$perf_pid"
		wait "$perf_pid" || :
	fi
	TS_SOCKET=$d/sock "$TSP" -K >/dev/null 2>&1 || :
}
# tspc SLOTS_NEEDED CMD...: queue CMD on the server of $TSD with $TSN slots; its
# output file (tsp's default, like gpuctld's job log) goes to $TSD
tspc() {
	n=$1
	shift
	TS_SOCKET=$TSD/sock TS_SLOTS=$TSN TMPDIR=$TSD "$TSP" -N "$n" "$@"
}

# ---- Slurm -------------------------------------------------------------------------
# slurm_part NAME CPUS_PER_JOB COUNT: leaves $TMP/NAME/stamps, sets QUEUED_S
slurm_part() {
	d=$TMP/$1
	mkdir -p "$d"
	sbatch --parsable -J blocker -c 8 -o /dev/null --wrap "$(blocker "$d/ready" "$d/GO")" >/dev/null ||
		die "Slurm ($1): cannot submit the blocker"
	wait_file "$d/ready" "Slurm's blocker ($1)"
	t0=$(date +%s.%N)
	left=$3
	while [ "$left" -gt 0 ]; do
		n=$left
		[ "$n" -le 1000 ] || n=1000 # MaxArraySize=1001
		sbatch --parsable -J "$1" --array="0-$((n - 1))" -c "$2" -o /dev/null \
			--wrap "$QJOB $d/stamps SLURM_JOB_ID" >/dev/null || die "Slurm ($1): sbatch failed"
		left=$((left - n))
	done
	QUEUED_S=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
	b0=$(busy)
	touch "$d/GO"
	$Q wait "$d/stamps" "$3" "$TIMEOUT" || die "Slurm ($1): jobs missing"
	CPU_MS=$(cpu_per_job "$b0" "$3")
	i=0
	while [ -n "$(squeue -h -o %i 2>/dev/null)" ]; do # the next part wants an empty node
		[ $i -lt 300 ] || die "Slurm ($1): jobs still listed 30 s after the last ended"
		sleep 0.1
		i=$((i + 1))
	done
}

cpu=$(sed -n 's/^model name[[:space:]]*: *//p' /proc/cpuinfo | head -n 1)
[ -n "$cpu" ] || cpu=$(uname -m)
commit=$(git -C "$ROOT" describe --always --dirty --abbrev=7 2>/dev/null || echo unknown)
fs=$(df --output=fstype "$TMP" 2>/dev/null | tail -n 1) || fs=unknown
tspv=$(dpkg-query -W -f '${Version}' task-spooler 2>/dev/null || echo "?")
echo "gpuctl queue bench — $(nproc) cores, $cpu, $(date +%F), commit $commit"
sfs=$(df --output=fstype "$STATE" 2>/dev/null | tail -n 1) || sfs=unknown
echo "temp dir (gpuctld's SQLite, synchronous=FULL, and job logs; tsp's outputs): $TMP ($fs); task-spooler $tspv"
echo "gpuctld's lease directory: $STATE ($sfs; STATE_ROOT)"

# ---- runs ----------------------------------------------------------------------------
python3 bench/queue.py node1 "$NODE8" "$TMP/node1.json"
gpuctld_part g8 "$NODE8" 8 "$JOBS"
G_QUEUED=$QUEUED_S G_CPU=$CPU_MS
gpuctld_part g1 "$TMP/node1.json" 1 "$LAT_JOBS"
# the same beside a webhook receiver that never answers (docs/policy.md): each event's POST
# waits out --webhook-timeout, twice, in gpuctld's notification thread
HANG_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(4096); time.sleep(86400)' "$HANG_PORT" &
PIDS="$PIDS $!"
GPUCTLD_EXTRA="--webhook http://127.0.0.1:$HANG_PORT/ --webhook-timeout 5s"
gpuctld_part g1h "$TMP/node1.json" 1 "$LAT_JOBS"
GPUCTLD_EXTRA=""
tsp_part t8 "$SLOTS" "$JOBS"
T_QUEUED=$QUEUED_S T_CPU=$CPU_MS
for how in spawn fork; do
	mkdir -p "$TMP/floor-$how"
	b0=$(busy)
	"$TMP/qfloor" "$JOBS" "$SLOTS" "$how" "$QJOB" "$TMP/floor-$how/stamps" || die "the floor program failed"
	eval "F_CPU_$how=\$(cpu_per_job \"\$b0\" \"\$JOBS\")"
done
tsp_part t1 1 "$LAT_JOBS"
SLURM_WHY=""
if [ "$SLURM" = 0 ]; then
	SLURM_WHY="left out (SLURM=0)"
else
	SLURM_DIR=$TMP/slurm
	if out=$(bash "$ROOT/tests/slurm/slurm-up.sh" "$SLURM_DIR" 2>"$TMP/slurm-up.err"); then
		SLURM_CONF=${out#SLURM_CONF=}
		export SLURM_CONF
		PATH=$PATH:/usr/sbin:/sbin
		slv=$(sinfo --version 2>/dev/null | sed 's/^slurm //')
		echo "Slurm ${slv:-?}: one node, 8 CPUs, gpu:4, sched/backfill (tests/slurm/slurm-up.sh)"
		slurm_part s8 1 "$JOBS_SLURM"
		S_QUEUED=$QUEUED_S S_CPU=$CPU_MS
		slurm_part s1 8 "$LAT_JOBS_SLURM"
	else
		[ $? = 77 ] || die "slurm-up.sh failed: $(cat "$TMP/slurm-up.err")"
		SLURM_WHY="not available: $(tail -n 1 "$TMP/slurm-up.err")"
		SLURM_DIR=""
	fi
fi
echo

# ---- 1. throughput --------------------------------------------------------------------
T8=$($Q throughput "$TMP/t8/stamps" "$JOBS") || die "task-spooler: bad stamps"
RATE_T=$(echo "$T8" | cut -d' ' -f3)
printf '%-38s %6s %9s %9s %8s %10s %8s\n' "1. throughput, $SLOTS at a time" jobs seconds "jobs/s" "vs tsp" "queued in" \
	"cpu/job"
trow() { # LABEL RESULT QUEUED CPU (QUEUED "-": nothing was queued)
	# shellcheck disable=SC2086 # three numbers
	set -- "$1" $2 "$3" "$4"
	q=$5
	[ "$q" = - ] || q="${q}s"
	printf '%-38s %6s %9s %9s %8s %10s %5s ms\n' "$1" "$2" "$3" "$4" \
		"$(awk -v a="$4" -v b="$RATE_T" 'BEGIN { printf "%.2fx", a / b }')" "$q" "$6"
}
G8=$($Q throughput "$TMP/g8/stamps" "$JOBS") || die "gpuctld: bad stamps"
RATE_G=$(echo "$G8" | cut -d' ' -f3)
trow "gpuctld (8 GPUs, 1 each)" "$G8" "$G_QUEUED" "$G_CPU"
trow "task-spooler (-S 8, baseline)" "$T8" "$T_QUEUED" "$T_CPU"
FS=$($Q throughput "$TMP/floor-spawn/stamps" "$JOBS") || die "floor: bad stamps"
FF=$($Q throughput "$TMP/floor-fork/stamps" "$JOBS") || die "floor: bad stamps"
RATE_FF=$(echo "$FF" | cut -d' ' -f3)
# shellcheck disable=SC2154 # set by eval above
trow "floor: posix_spawn alone" "$FS" "-" "$F_CPU_spawn"
# shellcheck disable=SC2154
trow "floor: fork + posix_spawn" "$FF" "-" "$F_CPU_fork"
if [ -z "$SLURM_WHY" ]; then
	S8=$($Q throughput "$TMP/s8/stamps" "$JOBS_SLURM") || die "Slurm: bad stamps"
	trow "Slurm (-c1 of 8 CPUs, arrays)" "$S8" "$S_QUEUED" "$S_CPU"
else
	printf '%-38s %s\n' "Slurm" "$SLURM_WHY"
fi
echo

# ---- 2. dispatch latency ------------------------------------------------------------------
printf '%-38s %7s %9s %8s %8s %8s %8s\n' "2. dispatch latency, 1 slot (ms)" samples median p90 min max "vs tsp"
G1=$($Q latency "$TMP/g1/stamps" "$LAT_JOBS") || die "gpuctld: bad stamps"
T1=$($Q latency "$TMP/t1/stamps" "$LAT_JOBS") || die "task-spooler: bad stamps"
MED_T=$(echo "$T1" | cut -d' ' -f2)
lrow() { # LABEL RESULT
	# shellcheck disable=SC2086 # six numbers
	set -- "$1" $2
	[ "$7" = 0 ] || die "$1: $7 jobs started before the one before them ended: not one slot"
	printf '%-38s %7s %9s %8s %8s %8s %8s\n' "$1" "$2" "$3" "$4" "$5" "$6" \
		"$(awk -v a="$3" -v b="$MED_T" 'BEGIN { printf "%.1fx", a / b }')"
}
lrow "gpuctld (1-GPU node)" "$G1"
G1H=$($Q latency "$TMP/g1h/stamps" "$LAT_JOBS") || die "gpuctld (hanging webhook): bad stamps"
lrow "  beside a webhook that hangs" "$G1H"
lrow "task-spooler (-S 1, baseline)" "$T1"
if [ -z "$SLURM_WHY" ]; then
	S1=$($Q latency "$TMP/s1/stamps" "$LAT_JOBS_SLURM") || die "Slurm: bad stamps"
	lrow "Slurm (-c8 of 8 CPUs, arrays)" "$S1"
else
	printf '%-38s %s\n' "Slurm" "$SLURM_WHY"
fi
SPLIT=$($Q split "$TMP/g1/q.db" "$TMP/g1/stamps") || die "gpuctld: cannot split the latency"
# shellcheck disable=SC2086 # three numbers
set -- $SPLIT
echo "   gpuctld's median, split at its records: job end -> ended_ms $1 ms;" \
	"ended_ms -> next started_ms $2 ms; started_ms -> next job's start $3 ms"
echo "   beside a webhook receiver that never answers: median $(echo "$G1H" | cut -d' ' -f2) ms," \
	"$(awk -v a="$(echo "$G1H" | cut -d' ' -f2)" -v b="$(echo "$G1" | cut -d' ' -f2)" 'BEGIN { printf "%.2fx", a / b }')" \
	"of gpuctld's without one"
echo

# ---- summary ---------------------------------------------------------------------------------
MED_G=$(echo "$G1" | cut -d' ' -f2)
verdict() { awk -v a="$1" -v t="$2" -v op="$3" 'BEGIN { ok = op == ">=" ? a >= t : a <= t; print ok ? "PASS" : "MISS" }'; }
echo "summary"
printf '  %-46s %18s  %s\n' "gpuctld jobs/s >= task-spooler's ($RATE_T/s)" "$RATE_G/s" "$(verdict "$RATE_G" "$RATE_T" '>=')"
T15=$(awk -v t="$RATE_T" 'BEGIN { printf "%.1f", t * 1.5 }')
printf '  %-46s %18s  %s\n' "gpuctld jobs/s >= 1.5x task-spooler's ($T15/s)" "$RATE_G/s" "$(verdict "$RATE_G" "$T15" '>=')"
printf '  %-46s %18s\n' "  share of the fork + posix_spawn floor" \
	"$(awk -v g="$RATE_G" -v t="$RATE_T" -v f="$RATE_FF" 'BEGIN { printf "gpuctld %.0f%%, tsp %.0f%%", 100 * g / f, 100 * t / f }')"
printf '  %-46s %18s  %s\n' "gpuctld median dispatch latency <= $TARGET_LAT ms" "$MED_G ms" "$(verdict "$MED_G" $TARGET_LAT '<=')"
echo
cat <<EOF
1. Each system gets all its jobs queued behind a blocker that holds every slot
   ("queued in" is how long that took: gpuctld, one JSON request per job over
   its socket from one python process, each committed with an fsync before
   it is answered; tsp, one tsp process per job, $TSP_QUEUED queued and
   the rest started as clients that block until the server takes them (it
   holds ~1000 connections); Slurm, sbatch --array of <= 1000 tasks). Then the
   blocker ends and the jobs drain: seconds = first job's start to last job's
   end. Slurm ran $JOBS_SLURM jobs. All three share this machine's $(nproc) cores
   with their jobs. cpu/job: the machine's busy CPU time (all cores, from
   /proc/stat: the system, its jobs, the waiting python) from the release to
   the last stamp, over the jobs; near $(nproc) x seconds / jobs, the drain
   was bound by CPU. The floor rows start the same jobs $SLOTS at a time from
   one small C program, with no queue: posix_spawn alone, and a fork that
   posix_spawns the job and waits for it (every job of gpuctld and of tsp has
   such a process above it: gpuctld's supervisor, tsp's client). No queue can
   beat the second row on this machine.
2. start(i+1) - end(i) of jobs that ran one at a time ($LAT_JOBS jobs; Slurm
   $LAT_JOBS_SLURM), all queued before the first started. It includes, after the
   job's last write: for gpuctld, the exit of the job and of its supervisor
   (gpuctl run releasing the lease), the runner's reap and its record, one
   round (the end recorded, the dispatch reading the head of the queue, the
   runner's fork of the next gpuctl run, its start recorded, one commit, the
   go byte), gpuctl run's NVML open and lease, then the spawn of the job;
   for tsp, the job's exit, its
   client telling the server, the server telling the next client, and that
   client's fork/exec; for Slurm, slurmstepd's end of job, the epilog-complete
   message, slurmctld's scheduling pass, the launch RPC, slurmstepd and the
   --wrap shell. The split uses gpuctld's own records (ms, truncated), so each
   part is +-1 ms. p90 is the nearest rank.
EOF
