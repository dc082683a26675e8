# The two commands of the README's Quick start:
#   make demo   install missing build dependencies (as root), build, show the
#               8×H100 simulated node the way `gpuctl ls` shows a real one
#   make check  the whole test suite, then again under ASan + UBSan
BUILD ?= build
SAN_BUILD ?= build-san
DEB_DEPS = gcc meson ninja-build pkg-config python3 libjansson-dev libvectorscan-dev libcmocka-dev libcurl4-openssl-dev libmicrohttpd-dev libsqlite3-dev libncurses-dev
DEMO_NODE = examples/nodes/h100-8x-sxm.json

# tests at once in each suite: most of them wait on daemons, users and timers, not the CPU,
# so twice the cores of a 2-core machine (every test holds under load: HACKING.md)
CHECK_JOBS ?= 4

FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TIMEOUT ?= 10
FUZZ_TARGETS = explain route catalog spot visible node

.PHONY: all build deps demo check check-plain check-san bench bench-check fuzz clean

all: build

deps:
	@missing=""; \
	for p in $(DEB_DEPS); do \
	  dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing build dependencies:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null || exit 1; \
	  else \
	    echo "missing build dependencies; run: sudo apt-get install -y$$missing" >&2; exit 1; \
	  fi; \
	fi

$(BUILD)/build.ninja:
	meson setup $(BUILD)

$(SAN_BUILD)/build.ninja:
	meson setup $(SAN_BUILD) -Db_sanitize=address,undefined -Db_lundef=false \
	  -Dc_args=-fno-sanitize-recover=all -Dbuildtype=debug

build: deps $(BUILD)/build.ninja
	ninja -C $(BUILD)

demo: build
	@rundir=$$(mktemp -d); \
	GPUCTL_SIM_RUNDIR=$$rundir ./$(BUILD)/sim/gpuctl-sim-hold --gpu 5 --mem 30GiB -- sleep 30 & holder=$$!; \
	sleep 0.3; \
	GPUCTL_SIM_RUNDIR=$$rundir ./$(BUILD)/src/gpuctl --sim $(DEMO_NODE) ls; rc=$$?; \
	kill $$holder 2>/dev/null; wait $$holder 2>/dev/null; rm -rf $$rundir; exit $$rc

# Both suites always run; the target fails if either failed. The tests that drive a real
# framework (suite 'framework': torch, Slurm, Prometheus, Chromium) run once, in the plain
# build, not again under the sanitizers (tests/meson.build says why). Reconfiguring
# first picks up new tests/cli/cases/*.case files (listed at configure time).
check: deps $(BUILD)/build.ninja $(SAN_BUILD)/build.ninja
	@meson setup --reconfigure $(BUILD) >/dev/null && meson setup --reconfigure $(SAN_BUILD) >/dev/null
	@rc=0; \
	ninja -C $(BUILD) && meson test -C $(BUILD) --print-errorlogs --num-processes $(CHECK_JOBS) || rc=1; \
	ninja -C $(SAN_BUILD) && \
	  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  meson test -C $(SAN_BUILD) --print-errorlogs --num-processes $(CHECK_JOBS) --no-suite framework || rc=1; \
	exit $$rc

# the hot paths' figures beside their targets and the recorded baseline (bench/baseline.json):
# run it before and after a change to query, ls, run, pick or a hand-over
bench-check: build
	python3 bench/check.py $(BUILD)

bench: build
	bench/query.sh $(BUILD)
	bench/lease.sh $(BUILD)
	bench/spot.sh $(BUILD)
	bench/explain.sh $(BUILD)
	bench/exporter.sh $(BUILD)
	bench/queue.sh $(BUILD)
	bench/python.sh $(BUILD)
	bench/top.sh $(BUILD)
	bench/attack.sh $(BUILD)

# libFuzzer on each target for FUZZ_SECONDS (default 60), with clang (installed when missing,
# as root), the whole build instrumented (-Dfuzz=true). Each runs on a copy of its in-tree
# corpus (tests/fuzz/corpus/TARGET; tests/explain for explain), which is never rewritten;
# a crash, a leak, a UBSan finding or one input running past FUZZ_TIMEOUT seconds (a hang:
# libFuzzer's own default is 20 minutes) fails the target and leaves its input in
# $(FUZZ_BUILD)/artifacts/.
fuzz: deps
	@command -v clang >/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then echo "installing clang"; apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends clang >/dev/null || exit 1; \
	  else echo "make fuzz needs clang; run: sudo apt-get install -y clang" >&2; exit 1; fi; }
	@[ -f $(FUZZ_BUILD)/build.ninja ] || CC=clang meson setup $(FUZZ_BUILD) -Dfuzz=true >/dev/null
	ninja -C $(FUZZ_BUILD) $(addprefix tests/fuzz/fuzz-,$(FUZZ_TARGETS))
	@mkdir -p $(FUZZ_BUILD)/artifacts; rc=0; \
	for t in $(FUZZ_TARGETS); do \
	  seeds=tests/fuzz/corpus/$$t; [ $$t = explain ] && seeds=tests/explain; \
	  work=$$(mktemp -d); cp -r $$seeds/. $$work/; \
	  if ./$(FUZZ_BUILD)/tests/fuzz/fuzz-$$t -max_total_time=$(FUZZ_SECONDS) -timeout=$(FUZZ_TIMEOUT) \
	       -artifact_prefix=$(FUZZ_BUILD)/artifacts/$$t- $$work > $(FUZZ_BUILD)/fuzz-$$t.log 2>&1; then \
	    echo "fuzz-$$t: $$(grep -E '^#[0-9]+.*DONE' $(FUZZ_BUILD)/fuzz-$$t.log | tail -1)"; \
	  else echo "fuzz-$$t: FAILED, see $(FUZZ_BUILD)/fuzz-$$t.log and $(FUZZ_BUILD)/artifacts/"; rc=1; fi; \
	  rm -rf $$work; \
	done; exit $$rc

clean:
	rm -rf $(BUILD) $(SAN_BUILD) $(FUZZ_BUILD)
