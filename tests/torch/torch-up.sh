#!/bin/bash
# torch-up.sh [PYTHON]
#
# Make Debian's PyTorch (the python3-torch package, CPU only) usable for
# gpuctl's integration tests: install it with apt-get when it is missing,
# then check that PYTHON (default /usr/bin/python3, the interpreter Debian's
# package belongs to; not whatever python3 is first on PATH) imports it.
#
# On success prints exactly one line on stdout, "TORCH=VERSION", and exits
# 0. Exits 77 (meson's "skip") when torch cannot be installed or imported
# here (not root, no apt-get, no network, a Python the package does not
# support), with the reason on stderr. Other failures exit 1.
set -eu
set -o pipefail

SKIP=77

skip() {
    echo "torch-up: $*" >&2
    exit "$SKIP"
}

if [ "$#" -gt 1 ]; then
    echo "usage: $0 [PYTHON]" >&2
    exit 2
fi
py=${1:-/usr/bin/python3}
[ -x "$py" ] || skip "$py is not an executable Python interpreter"

probe() {
    # the version string only: no GPU, no threads started beyond the import
    "$py" -c 'import torch, sys; sys.stdout.write(torch.__version__)' 2>"$log"
}

log=$(mktemp "${TMPDIR:-/tmp}/torch-up.XXXXXX")
trap 'rm -f "$log"' EXIT

if ! ver=$(probe); then
    if dpkg-query -W -f='${Status}' python3-torch 2>/dev/null | grep -q 'install ok installed'; then
        skip "python3-torch is installed but $py cannot import torch: $(tail -n 1 "$log")"
    fi
    if [ "$(id -u)" -ne 0 ]; then
        skip "python3-torch is not installed and we are not root to install it (sudo apt-get install python3-torch)"
    fi
    command -v apt-get >/dev/null 2>&1 || skip "python3-torch is not installed and apt-get is not available"
    # another test may be installing its own packages: wait for dpkg's lock rather than fail
    apt_install() {
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            -o DPkg::Lock::Timeout=120 python3-torch >>"$log" 2>&1
    }
    if ! apt_install; then
        apt-get update -qq -o DPkg::Lock::Timeout=120 >>"$log" 2>&1 || true
        apt_install || skip "apt-get install python3-torch failed: $(grep -E '^(E|W):' "$log" | tail -n 1)"
    fi
    ver=$(probe) || skip "python3-torch installed, but $py cannot import torch: $(tail -n 1 "$log")"
fi
echo "TORCH=$ver"
