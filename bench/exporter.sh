#!/bin/sh
# bench/exporter.sh [BUILD_DIR] — what gpuctld's /metrics and sampler cost.
#
# Measures, in one run:
#   1. scrape throughput: wrk -t2 -c64 -d10s --latency against /metrics of
#      gpuctld on the 8-GPU example node, gpuctld on a generated 64-GPU node
#      and, as the baseline, prometheus-node-exporter (a small, fast
#      collector set; its own go_/process_/promhttp_ metrics kept). Prints
#      scrapes/s, p50/p99 latency, the body and on-the-wire bytes of one
#      response, errors, and the ratio of scrapes/s to node-exporter's.
#      Target: >= 5000 scrapes/s at 8 GPUs on 2 cores.
#   2. the sampler's CPU cost: gpuctld at --interval 1s, nothing scraping it,
#      on both nodes (node-exporter idle beside them as a reference): CPU
#      time (utime + stime from /proc/PID/stat) over wall time, as % of one
#      core. Target: < 0.5 % of a core. The same with the policies of
#      docs/policy.md on (quarantine of every fault, --enforce warn
#      --enforce-unleased, --reclaim-after, the queue with its accounting
#      and fair share) beside them: < 0.5 % at 8 GPUs, < 1 % at 64; and what
#      the policies alone cost (on minus off, every thread's schedstat).
# A MISS is reported, not an error; the exit status is non-zero only when
# something is broken (build, a server that does not start or answer).
#
# Needs wrk and prometheus-node-exporter (Debian packages of those names;
# installed with apt-get when missing and running as root).
#
# Environment: DURATION (wrk run per server per round; default 10s), THREADS
# (wrk threads; 2), CONNECTIONS (wrk connections; 64), ROUNDS (rounds of the
# three wrk runs, interleaved; medians are printed; 1), WARMUP (an untimed
# wrk run per server first; 2s, 0 for none), GPUCTLD_THREADS (gpuctld
# --threads, and node-exporter's GOMAXPROCS; 2), IDLE (seconds of part 2;
# 20), NODE_EXPORTER_ARGS (its collector flags; default: only loadavg, time
# and uname), PIN (auto: on 4+ cores, servers on CPUs 0-1 and wrk on the
# rest, with taskset; 0: never).
set -eu

# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"
GPUCTLD=$BUILD/daemon/gpuctld
[ -x "$GPUCTLD" ] || die "$GPUCTLD not found (build first: make build)"

# ---- tools ------------------------------------------------------------------
need=""
command -v wrk >/dev/null || need="$need wrk"
command -v prometheus-node-exporter >/dev/null || need="$need prometheus-node-exporter"
if [ -n "$need" ]; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "bench: installing$need" >&2
		# shellcheck disable=SC2086 # a list of package names
		DEBIAN_FRONTEND=noninteractive apt-get -y -qq --no-install-recommends install $need >/dev/null ||
			{ apt-get -qq update >/dev/null &&
				DEBIAN_FRONTEND=noninteractive apt-get -y -qq --no-install-recommends install $need >/dev/null; } ||
			die "cannot install$need with apt-get"
	else
		die "missing$need: install the Debian package(s)$need (apt-get install$need), then run again"
	fi
fi
WRK=$(command -v wrk) || die "wrk not found"
NODE_EXPORTER=$(command -v prometheus-node-exporter) || die "prometheus-node-exporter not found"

DURATION=${DURATION:-10s}
THREADS=${THREADS:-2}
CONNECTIONS=${CONNECTIONS:-64}
ROUNDS=${ROUNDS:-1}
WARMUP=${WARMUP:-2s}
GPUCTLD_THREADS=${GPUCTLD_THREADS:-2}
IDLE=${IDLE:-20}
NODE_EXPORTER_ARGS=${NODE_EXPORTER_ARGS:---collector.disable-defaults --collector.loadavg --collector.time --collector.uname}
PIN=${PIN:-auto}
TARGET_RPS=5000
TARGET_IDLE=0.5
TARGET_POLICY64=1
NODE8=$ROOT/examples/nodes/h100-8x-sxm.json

TMP=$(mktemp -d)
PIDS=""
cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null || :; done
	for p in $PIDS; do wait "$p" 2>/dev/null || :; done
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# the build's simulator, a fresh state dir (no leases) and registration dir
unset GPUCTL_SIM GPUCTL_SIM_NODE GPUCTL_NVML_LIBRARY CUDA_VISIBLE_DEVICES
mkdir "$TMP/state" "$TMP/run"
GPUCTL_STATE_DIR=$TMP/state
GPUCTL_SIM_RUNDIR=$TMP/run
GPUCTL_SIM_LIBDIR=$BUILD/sim
export GPUCTL_STATE_DIR GPUCTL_SIM_RUNDIR GPUCTL_SIM_LIBDIR
# a state dir as a node where gpuctl is in use has it (nothing leased now)
# shellcheck disable=SC2153 # GPUCTL comes from common.sh
"$GPUCTL" --sim "$NODE8" run -n 1 -- true || die "gpuctl run -n 1 -- true failed"
python3 bench/gen-node.py 64 >"$TMP/node64.json" || die "gen-node.py failed"
NODE64=$TMP/node64.json

# wrk prints one machine-readable line at the end: RESULT requests duration_us
# bytes p50_us p99_us errors(connect read write status timeout)
cat >"$TMP/report.lua" <<'EOF'
done = function(s, lat, req)
	local e = s.errors
	io.write(string.format("RESULT %d %d %d %d %d %d %d %d %d %d\n", s.requests, s.duration,
		s.bytes, lat:percentile(50), lat:percentile(99),
		e.connect, e.read, e.write, e.status, e.timeout))
end
EOF

ncpu=$(nproc)
PIN_SERVER=""
PIN_CLIENT=""
pinning="not pinned"
if [ "$PIN" != 0 ] && [ "$ncpu" -ge 4 ] && command -v taskset >/dev/null; then
	PIN_SERVER="taskset -c 0,1"
	PIN_CLIENT="taskset -c 2-$((ncpu - 1))"
	pinning="servers on CPUs 0-1, wrk on CPUs 2-$((ncpu - 1))"
elif [ "$ncpu" -le 2 ]; then
	pinning="not pinned: $ncpu cores, wrk shares them with the server"
fi

# ---- helpers ------------------------------------------------------------------
forget() { # PID: drop from the list killed on exit
	rest=""
	for p in $PIDS; do [ "$p" = "$1" ] || rest="$rest $p"; done
	PIDS=$rest
}
stop() { # PID
	kill "$1" 2>/dev/null || :
	wait "$1" 2>/dev/null || :
	forget "$1"
}
free_port() {
	python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
fetch() { # URL FILE: the body of a GET (no proxy), non-zero unless 200
	python3 -c 'import sys, urllib.request
o = urllib.request.build_opener(urllib.request.ProxyHandler({}))
with o.open(sys.argv[1], timeout=5) as r:
    if r.status != 200:
        sys.exit(1)
    open(sys.argv[2], "wb").write(r.read())' "$1" "$2" 2>/dev/null
}
start_gpuctld() { # NAME NODE [OPTION...]: sets PID and PORT
	name=$1 node=$2
	shift 2
	# shellcheck disable=SC2086 # PIN_SERVER is a command prefix or nothing
	# wrk is one local user: its CONNECTIONS must fit that user's share (--max-per-client, default 32),
	# or the rest are refused and counted as errors
	$PIN_SERVER "$GPUCTLD" --sim "$node" --listen 127.0.0.1:0 --interval 1s \
		--threads "$GPUCTLD_THREADS" --max-per-client "${CONNECTIONS:-64}" --config /dev/null "$@" \
		2>"$TMP/$name.err" &
	PID=$!
	PIDS="$PIDS $PID"
	PORT=""
	i=0
	while [ $i -lt 100 ]; do
		PORT=$(sed -n 's#^gpuctld: listening on http://127\.0\.0\.1:\([0-9][0-9]*\)/.*#\1#p' "$TMP/$name.err")
		[ -n "$PORT" ] && break
		kill -0 "$PID" 2>/dev/null || die "gpuctld ($name) exited: $(cat "$TMP/$name.err")"
		sleep 0.1
		i=$((i + 1))
	done
	[ -n "$PORT" ] || die "gpuctld ($name) did not say where it listens within 10 s: $(cat "$TMP/$name.err")"
	# the first sample may come just after the listening line (503 until then)
	i=0
	until fetch "http://127.0.0.1:$PORT/metrics" "$TMP/$name.metrics"; do
		[ $i -lt 50 ] || die "gpuctld ($name) does not answer /metrics: $(cat "$TMP/$name.err")"
		sleep 0.1
		i=$((i + 1))
	done
}
start_node_exporter() { # NAME: sets PID and PORT
	PORT=$(free_port)
	# shellcheck disable=SC2086 # PIN_SERVER, NODE_EXPORTER_ARGS: word lists
	$PIN_SERVER "$NODE_EXPORTER" --web.listen-address="127.0.0.1:$PORT" --log.level=warn \
		--runtime.gomaxprocs="$GPUCTLD_THREADS" --web.max-requests=0 $NODE_EXPORTER_ARGS \
		2>"$TMP/$1.err" &
	PID=$!
	PIDS="$PIDS $PID"
	i=0
	until fetch "http://127.0.0.1:$PORT/metrics" "$TMP/$1.metrics"; do
		kill -0 "$PID" 2>/dev/null || die "node-exporter exited: $(cat "$TMP/$1.err")"
		[ $i -lt 100 ] || die "node-exporter does not answer on 127.0.0.1:$PORT within 10 s: $(cat "$TMP/$1.err")"
		sleep 0.1
		i=$((i + 1))
	done
}
run_wrk() { # NAME PORT DURATION: appends wrk's RESULT line to $TMP/NAME.res
	# shellcheck disable=SC2086 # PIN_CLIENT is a command prefix or nothing
	# in the background, so that a signal stops the run at once (wait returns)
	$PIN_CLIENT "$WRK" -t"$THREADS" -c"$CONNECTIONS" -d"$3" --latency -s "$TMP/report.lua" \
		"http://127.0.0.1:$2/metrics" >"$TMP/wrk.out" 2>&1 &
	wpid=$!
	PIDS="$PIDS $wpid"
	wait "$wpid" || die "wrk against $1 failed: $(tail -n 5 "$TMP/wrk.out")"
	forget "$wpid"
	grep '^RESULT ' "$TMP/wrk.out" >>"$TMP/$1.res" || die "wrk against $1 printed no result: $(cat "$TMP/wrk.out")"
}
cpu_ticks() { # PID: utime + stime (clock ticks); comm may hold spaces, so cut at ") "
	sed 's/^.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'
}
cpu_ns() { # PID: time on CPU of every thread (ns, schedstat), 0 if unknown
	cat "/proc/$1/task/"*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%.0f\n", s}'
}
series() { # FILE NAME: how many samples of metric NAME
	grep -c "^$2[{ ]" "$1" || :
}

cpu=$(sed -n 's/^model name[[:space:]]*: *//p' /proc/cpuinfo | head -n 1)
[ -n "$cpu" ] || cpu=$(uname -m)
commit=$(git -C "$ROOT" describe --always --dirty --abbrev=7 2>/dev/null || echo unknown)
nev=$("$NODE_EXPORTER" --version 2>&1 | sed -n 's/^node_exporter, version \([^ ]*\).*/\1/p')
wrkv=$("$WRK" -v 2>&1 | sed -n '1s/^wrk \([^ ]*\).*/\1/p')
echo "gpuctl exporter bench — $ncpu cores, $cpu, $(date +%F), commit $commit"
echo "gpuctld --threads $GPUCTLD_THREADS --interval 1s; node-exporter ${nev:-?} GOMAXPROCS=$GPUCTLD_THREADS" \
	"--web.max-requests=0 $NODE_EXPORTER_ARGS"
echo "wrk ${wrkv:-?} -t$THREADS -c$CONNECTIONS -d$DURATION --latency, $ROUNDS round(s) after a $WARMUP warm-up;" \
	"$pinning"
echo

# ---- 1. scrape throughput ----------------------------------------------------
start_gpuctld g8 "$NODE8" --no-queue
G8_PID=$PID G8_PORT=$PORT
start_gpuctld g64 "$NODE64" --no-queue
G64_PID=$PID G64_PORT=$PORT
start_node_exporter ne
NE_PID=$PID NE_PORT=$PORT

# checks: every server answers what it should
[ "$(series "$TMP/g8.metrics" DCGM_FI_DEV_GPU_UTIL)" = 8 ] || die "gpuctld (8 GPUs): not 8 DCGM_FI_DEV_GPU_UTIL series"
[ "$(series "$TMP/g64.metrics" DCGM_FI_DEV_GPU_UTIL)" = 64 ] || die "gpuctld (64 GPUs): not 64 DCGM_FI_DEV_GPU_UTIL series"
[ "$(series "$TMP/ne.metrics" process_cpu_seconds_total)" = 1 ] ||
	die "node-exporter: no process_cpu_seconds_total (its own metrics) in /metrics"

if [ "$WARMUP" != 0 ]; then
	for s in "g8 $G8_PORT" "g64 $G64_PORT" "ne $NE_PORT"; do
		run_wrk "warmup" "${s#* }" "$WARMUP"
	done
fi
r=0
while [ $r -lt "$ROUNDS" ]; do
	for s in "g8 $G8_PORT" "g64 $G64_PORT" "ne $NE_PORT"; do
		run_wrk "${s% *}" "${s#* }" "$DURATION"
	done
	r=$((r + 1))
done
stop "$G8_PID"
stop "$G64_PID"
stop "$NE_PID"

# per server: median scrapes/s, p50 ms, p99 ms, wire bytes/response, errors (sum)
summarize() { # NAME
	# RESULT requests duration_us bytes p50_us p99_us connect read write status timeout
	awk '{ rps[NR] = $3 ? $2 / ($3 / 1e6) : 0; p50[NR] = $5 / 1000; p99[NR] = $6 / 1000
	       wire[NR] = $2 ? $4 / $2 : 0; err += $7 + $8 + $9 + $10 + $11 }
	function med(a, n,   i, j, t) {
		for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
		return a[int((n + 1) / 2)]
	}
	END { printf "%.0f %.2f %.2f %.0f %d\n", med(rps, NR), med(p50, NR), med(p99, NR), med(wire, NR), err }' \
		"$TMP/$1.res"
}
S_G8=$(summarize g8)
S_G64=$(summarize g64)
S_NE=$(summarize ne)
RPS_NE=${S_NE%% *}

printf '%-30s %10s %8s %8s %9s %11s %7s %9s\n' "1. scrape /metrics (wrk)" \
	"scrapes/s" "p50 ms" "p99 ms" "body B" "wire B/resp" errors "vs n-e"
row() { # LABEL NAME SUMMARY
	# shellcheck disable=SC2086 # SUMMARY: five numbers
	set -- "$1" "$2" $3
	body=$(wc -c <"$TMP/$2.metrics")
	ratio=$(awk -v a="$3" -v b="$RPS_NE" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }')
	printf '%-30s %10s %8s %8s %9s %11s %7s %9s\n' "$1" "$3" "$4" "$5" "$body" "$6" "$7" "$ratio"
}
row "gpuctld, 8 GPUs" g8 "$S_G8"
row "gpuctld, 64 GPUs" g64 "$S_G64"
row "node-exporter (baseline)" ne "$S_NE"
echo

# ---- 2. sampler CPU, idle -----------------------------------------------------
# all three start together, settle 2 s (start-up excluded), then IDLE seconds
# with nothing scraping them
# the policies of docs/policy.md off (and no queue), and on: quarantine of every fault,
# enforcement in warn mode on every GPU (the sample's processes checked against its leases each
# second), idle reclaim, and the queue with its accounting (the lease directory read each
# second) and fair share
OFF="--quarantine off --enforce off --no-queue"
ON="--quarantine all --enforce warn --enforce-unleased --reclaim-after 1h --fair-share-half-life 7d"
onq() { # NAME: the queue's places for the policies-on gpuctld NAME
	mkdir -p "$TMP/$1.logs"
	echo "--queue-db $TMP/$1.db --queue-socket $TMP/$1.sock --log-dir $TMP/$1.logs"
}
# shellcheck disable=SC2086 # OFF and ON are option lists
start_gpuctld i8 "$NODE8" $OFF
I8_PID=$PID I8_PORT=$PORT
# shellcheck disable=SC2086
start_gpuctld i64 "$NODE64" $OFF
I64_PID=$PID I64_PORT=$PORT
# shellcheck disable=SC2086,SC2046 # option lists, split on purpose
start_gpuctld p8 "$NODE8" $ON $(onq p8)
P8_PID=$PID
# shellcheck disable=SC2086,SC2046 # option lists, split on purpose
start_gpuctld p64 "$NODE64" $ON $(onq p64)
P64_PID=$PID
start_node_exporter ine
INE_PID=$PID
sleep 2
t0=$(date +%s.%N)
a8=$(cpu_ticks "$I8_PID") a64=$(cpu_ticks "$I64_PID") ane=$(cpu_ticks "$INE_PID")
n8=$(cpu_ns "$I8_PID") n64=$(cpu_ns "$I64_PID") nne=$(cpu_ns "$INE_PID")
ap8=$(cpu_ticks "$P8_PID") ap64=$(cpu_ticks "$P64_PID") np8=$(cpu_ns "$P8_PID") np64=$(cpu_ns "$P64_PID")
fetch "http://127.0.0.1:$I8_PORT/metrics" "$TMP/i8.before" || die "gpuctld (8 GPUs) stopped answering"
sleep "$IDLE" &
spid=$!
PIDS="$PIDS $spid"
wait "$spid"
forget "$spid"
b8=$(cpu_ticks "$I8_PID") b64=$(cpu_ticks "$I64_PID") bne=$(cpu_ticks "$INE_PID")
m8=$(cpu_ns "$I8_PID") m64=$(cpu_ns "$I64_PID") mne=$(cpu_ns "$INE_PID")
bp8=$(cpu_ticks "$P8_PID") bp64=$(cpu_ticks "$P64_PID") mp8=$(cpu_ns "$P8_PID") mp64=$(cpu_ns "$P64_PID")
t1=$(date +%s.%N)
fetch "http://127.0.0.1:$I8_PORT/metrics" "$TMP/i8.after" || die "gpuctld (8 GPUs) stopped answering"
fetch "http://127.0.0.1:$I64_PORT/metrics" "$TMP/i64.after" || die "gpuctld (64 GPUs) stopped answering"
stop "$I8_PID"
stop "$I64_PID"
stop "$P8_PID"
stop "$P64_PID"
stop "$INE_PID"
samples() { sed -n 's/^gpuctl_sampler_samples_total \([0-9]*\)$/\1/p' "$1"; }
took=$(($(samples "$TMP/i8.after") - $(samples "$TMP/i8.before")))
dur() { sed -n 's/^gpuctl_sampler_last_duration_seconds \(.*\)$/\1/p' "$1"; }
HZ=$(getconf CLK_TCK)
wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')

printf '%-30s %8s %10s %14s %8s\n' "2. idle CPU, ${wall} s, no scrapes" "CPU ms" "% of core" "schedstat %" target
idle_row() { # LABEL TICKS_BEFORE TICKS_AFTER NS_BEFORE NS_AFTER TARGET
	awk -v l="$1" -v a="$2" -v b="$3" -v na="$4" -v nb="$5" -v hz="$HZ" -v w="$wall" -v t="$6" 'BEGIN {
		pct = (b - a) / hz / w * 100
		spct = (nb > 0 && na > 0) ? sprintf("%.3f", (nb - na) / 1e9 / w * 100) : "-"
		v = t == "" ? "" : pct < t ? "PASS" : "MISS"
		printf "%-30s %8.0f %10.3f %14s %8s\n", l, (b - a) / hz * 1000, pct, spct, v }'
}
idle_row "gpuctld, 8 GPUs" "$a8" "$b8" "$n8" "$m8" "$TARGET_IDLE"
idle_row "gpuctld, 64 GPUs" "$a64" "$b64" "$n64" "$m64" "$TARGET_IDLE"
idle_row "  policies on, 8 GPUs" "$ap8" "$bp8" "$np8" "$mp8" "$TARGET_IDLE"
idle_row "  policies on, 64 GPUs" "$ap64" "$bp64" "$np64" "$mp64" "$TARGET_POLICY64"
idle_row "node-exporter (idle, ref.)" "$ane" "$bne" "$nne" "$mne" ""
P8=$(awk -v a="$a8" -v b="$b8" -v hz="$HZ" -v w="$wall" 'BEGIN { printf "%.3f", (b - a) / hz / w * 100 }')
P64=$(awk -v a="$a64" -v b="$b64" -v hz="$HZ" -v w="$wall" 'BEGIN { printf "%.3f", (b - a) / hz / w * 100 }')
# the policies' own cost: schedstat (ns, every thread) on minus off, same node, same window
PD8=$(awk -v a="$np8" -v b="$mp8" -v c="$n8" -v d="$m8" -v w="$wall" 'BEGIN { printf "%.3f", ((b - a) - (d - c)) / 1e9 / w * 100 }')
PD64=$(awk -v a="$np64" -v b="$mp64" -v c="$n64" -v d="$m64" -v w="$wall" 'BEGIN { printf "%.3f", ((b - a) - (d - c)) / 1e9 / w * 100 }')
PON8=$(awk -v a="$np8" -v b="$mp8" -v w="$wall" 'BEGIN { printf "%.3f", (b - a) / 1e9 / w * 100 }')
PON64=$(awk -v a="$np64" -v b="$mp64" -v w="$wall" 'BEGIN { printf "%.3f", (b - a) / 1e9 / w * 100 }')
echo "   ($took samples taken in the window at 8 GPUs; last sample took $(dur "$TMP/i8.after") s at 8 GPUs," \
	"$(dur "$TMP/i64.after") s at 64)"
echo

# ---- summary --------------------------------------------------------------------
verdict() { awk -v a="$1" -v t="$2" -v op="$3" 'BEGIN { ok = op == ">=" ? a >= t : a < t; print ok ? "PASS" : "MISS" }'; }
RPS8=${S_G8%% *}
RPS64=${S_G64%% *}
echo "summary"
printf '  %-44s %14s  %s\n' ">= $TARGET_RPS scrapes/s, 8 GPUs, 2 cores" "$RPS8/s" "$(verdict "$RPS8" $TARGET_RPS '>=')"
printf '  %-44s %14s  %s\n' "  (64 GPUs, for reference)" "$RPS64/s" "$(verdict "$RPS64" $TARGET_RPS '>=')"
printf '  %-44s %14s  %s\n' "sampler < $TARGET_IDLE % of a core, 8 GPUs" "$P8 %" "$(verdict "$P8" $TARGET_IDLE '<')"
printf '  %-44s %14s  %s\n' "sampler < $TARGET_IDLE % of a core, 64 GPUs" "$P64 %" "$(verdict "$P64" $TARGET_IDLE '<')"
printf '  %-44s %14s  %s\n' "policies on < $TARGET_IDLE % of a core, 8 GPUs" "$PON8 %" "$(verdict "$PON8" $TARGET_IDLE '<')"
printf '  %-44s %14s  %s\n' "policies on < $TARGET_POLICY64 % of a core, 64 GPUs" "$PON64 %" "$(verdict "$PON64" $TARGET_POLICY64 '<')"
printf '  %-44s %14s\n' "  the policies alone (on - off), 8 GPUs" "$PD8 %"
printf '  %-44s %14s\n' "  the policies alone (on - off), 64 GPUs" "$PD64 %"
echo
cat <<EOF
1. wrk's requests/s over each run (median of $ROUNDS round(s)), the three servers
   taking turns; p50/p99 are wrk's latency percentiles; body B is one response's
   body (no compression: wrk sends no Accept-Encoding); wire B/resp is wrk's
   bytes read per response, headers included. "vs n-e" = scrapes/s over
   node-exporter's. node-exporter runs with GOMAXPROCS equal to gpuctld's
   threads and no in-flight limit (its default of 40 answers 503 to the rest
   of 64 connections); its default collectors read much of /proc and /sys per
   scrape, so only cheap ones run: it stands for a fast Go/promhttp exporter.
   errors = socket errors + non-2xx answers (should be 0).
2. CPU time of the whole process (sampler and idle HTTP threads) from
   /proc/PID/stat utime + stime ($HZ ticks/s: one tick over ${wall} s is
   $(awk -v hz="$HZ" -v w="$wall" 'BEGIN { printf "%.3f", 100 / hz / w }') %), and the same from every thread's schedstat (ns).
EOF
