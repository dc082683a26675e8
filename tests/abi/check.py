#!/usr/bin/env python3
"""tests/abi/check.py BUILD_DIR SOURCE_DIR — libgpuctl as a program outside
the tree sees it (issue 18):

1. `meson install --destdir` puts the shared library, its header and its
   pkg-config file in a scratch root;
2. tests/abi/abi.c is compiled with nothing but `pkg-config --cflags --libs
   gpuctl` from there, and run against a simulated node (the installed
   simulator) and a scratch state directory: it samples, picks, leases and
   releases a GPU; commits and prunes checkpoints in a scratch directory;
   explains a log line (with the installed signatures); and takes a spot
   notice from the mock metadata server (tests/mock/metadata.py); and
   advises on a job, which must be what `gpuctl advise --json` answers;
3. `nm -D` of the installed library shows only the public gc_* API: every
   defined symbol is gc_* (or the version node), and exactly the functions
   the installed header declares;
4. the Python package is installed into the interpreter's site-packages
   (issue 19), with py.typed, and imports the installed libgpuctl.so.0: it
   sees the node's GPUs and leases and releases one.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import harness  # noqa: E402
from harness import check  # noqa: E402

build, src = sys.argv[1], sys.argv[2]
harness.verbose = True  # "ok   what" or "FAIL what" as each check is made


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


for tool in ("pkg-config", "nm", "cc"):
    if not shutil.which(tool):
        print(f"skip: {tool} is not installed")
        sys.exit(77)

root = tempfile.mkdtemp(prefix="gpuctl-abi.")
try:
    r = run(["meson", "install", "-C", build, "--no-rebuild", "--quiet", "--destdir", root])
    check("meson install --destdir: " + (r.stderr.strip()[-300:] or "ok"), r.returncode == 0)
    pcs = glob.glob(os.path.join(root, "**", "pkgconfig", "gpuctl.pc"), recursive=True)
    check(f"one gpuctl.pc installed ({pcs})", len(pcs) == 1)
    if harness.errors:
        sys.exit(1)
    pcdir = os.path.dirname(pcs[0])
    libdir = os.path.dirname(pcdir)
    env = dict(os.environ, PKG_CONFIG_PATH=pcdir, PKG_CONFIG_SYSROOT_DIR=root)
    env.pop("PKG_CONFIG_LIBDIR", None)
    r = run(["pkg-config", "--cflags", "--libs", "gpuctl"], env=env)
    check("pkg-config --cflags --libs gpuctl: " + r.stdout.strip(), r.returncode == 0 and "-lgpuctl" in r.stdout)
    flags = r.stdout.split()
    hdr = glob.glob(os.path.join(root, "**", "include", "gpuctl", "gpuctl.h"), recursive=True)
    check("the header is installed as include/gpuctl/gpuctl.h", len(hdr) == 1)
    so = os.path.join(libdir, "libgpuctl.so.0")
    check("libgpuctl.so.0 (the soname) is installed in " + libdir, os.path.exists(so))

    # a sanitized build's library needs the sanitizer runtime loaded first: build the
    # program the same way (the plain build needs nothing of the kind)
    needed = run(["readelf", "-d", so]).stdout
    san = ["-fsanitize=address,undefined"] if "libasan" in needed else []
    exe = os.path.join(root, "abi")
    r = run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", *san, os.path.join(src, "tests", "abi", "abi.c"),
             "-o", exe, *flags], env=env)
    check("abi.c builds with pkg-config's flags alone: " + r.stderr.strip()[-600:], r.returncode == 0)

    if not harness.errors:
        state = os.path.join(root, "state")
        os.mkdir(state, 0o700)
        simdir = os.path.join(libdir, "gpuctl")
        # a HOME of its own: the user's ~/.sky/catalogs would change what advise says (issue 32)
        renv = {k: v for k, v in os.environ.items()
                if (not k.startswith("GPUCTL_") or k == "GPUCTL_AUTHORITY_DIR") and k not in ("CUDA_VISIBLE_DEVICES", "XDG_CONFIG_HOME")}
        renv["HOME"] = os.path.join(root, "home")
        # and a registration directory of its own, never the default /tmp/gpuctl-sim-<uid>
        simrun = os.path.join(root, "simrun")
        os.makedirs(simrun, exist_ok=True)
        renv.update(LD_LIBRARY_PATH=libdir, GPUCTL_SIM_LIBDIR=simdir, GPUCTL_SIM_RUNDIR=simrun)
        ckdir = os.path.join(root, "ckpt")
        os.mkdir(ckdir, 0o700)
        datadirs = glob.glob(os.path.join(root, "**", "share", "gpuctl", "signatures"), recursive=True)
        check("the failure signatures are installed", len(datadirs) == 1)
        if datadirs:
            renv["GPUCTL_DATA_DIR"] = os.path.dirname(datadirs[0])
        mock = subprocess.Popen([sys.executable, os.path.join(src, "tests", "mock", "metadata.py"), "0"],
                                stdout=subprocess.PIPE, text=True)
        try:
            port = mock.stdout.readline().split()[-1]
            url = "http://127.0.0.1:" + port
            urllib.request.urlopen(urllib.request.Request(url + "/_ctl/preempt?cloud=aws", method="POST"),
                                   timeout=10).read()
            node = os.path.join(src, "examples", "nodes", "l4-2x.json")
            adv = os.path.join(root, "advise.json")
            r = run([exe, node, state, ckdir, url, adv], env=renv, timeout=60)
        finally:
            mock.terminate()
            mock.wait()
        print(r.stdout + r.stderr)
        check(f"abi runs against the installed library (exit {r.returncode})", r.returncode == 0)
        out = r.stdout
        check("it sees the node's 2 GPUs", re.search(r"^gpus 2 driver \S+ cuda \d+$", out, re.M) is not None)
        check("it reads names, UUIDs, memory", re.search(r"^gpu 0 NVIDIA L4 GPU-\S+ total \d+", out, re.M) is not None)
        m = re.search(r"^leased 1 gpu (\d) visible (GPU-\S+)$", out, re.M)
        check("it leases a GPU and renders its CUDA_VISIBLE_DEVICES by UUID", m is not None)
        check("the GPU is free again once released", re.search(r"^released; pick \d$", out, re.M) is not None)
        check("the newest committed checkpoint is the latest",
              re.search(r"^ckpt latest step-2\.pt$", out, re.M) is not None)
        check("the list shows the uncommitted one as such", "ckpt list has the uncommitted one" in out)
        check("prune kept the newest and the uncommitted one: " + " ".join(sorted(os.listdir(ckdir))),
              re.search(r"^ckpt pruned 1$", out, re.M) is not None and
              sorted(f for f in os.listdir(ckdir) if f.startswith("step-")) == ["step-2.pt", "step-3.pt"])
        check("explain names the PyTorch OOM", re.search(r"^explain pytorch-oom$", out, re.M) is not None)
        check("the spot notice arrives", re.search(r"^spot preempt aws terminate$", out, re.M) is not None)
        cli = run([os.path.join(build, "src", "gpuctl"), "advise", "--model", "Llama-2-7B", "--task", "lora",
                   "--tokens=100M", "--spot", "--json"], env=renv)
        try:
            same = json.load(open(adv)) == json.loads(cli.stdout)
            plans = len(json.loads(cli.stdout)["plans"])
        except (OSError, ValueError, KeyError):
            same, plans = False, 0
        check(f"gc_advise_json answers what gpuctl advise --json does ({plans} plans)", same and plans > 0)
        check("no claim is left in the state directory: " + " ".join(os.listdir(state)),
              os.listdir(state) == [] or all(not f.startswith("gpu-") for f in os.listdir(state)))

    # the Python package, installed, on the installed library; none with -Dpython=disabled
    pkgs = glob.glob(os.path.join(root, "**", "gpuctl", "__init__.py"), recursive=True)
    if os.environ.get("GPUCTL_TEST_PYTHON") == "0":
        check("-Dpython=disabled: no Python package installed (%s)" % pkgs, not pkgs)
    else:
        check("the Python package is installed in site-packages (%s)" % pkgs,
              len(pkgs) == 1 and re.search(r"/(site|dist)-packages/gpuctl/__init__\.py$", pkgs[0] if pkgs else ""))
    if len(pkgs) == 1:
        pkgdir = os.path.dirname(pkgs[0])
        check("with py.typed", os.path.exists(os.path.join(pkgdir, "py.typed")))
        penv = {k: v for k, v in os.environ.items() if not k.startswith(("GPUCTL_", "PYTHON", "LD_"))}
        penv.update(PYTHONPATH=os.path.dirname(pkgdir), LD_LIBRARY_PATH=libdir,
                    GPUCTL_SIM_LIBDIR=os.path.join(libdir, "gpuctl"), GPUCTL_STATE_DIR=os.path.join(root, "pystate"),
                    GPUCTL_SIM_RUNDIR=simrun,
                    PYTHONDONTWRITEBYTECODE="1")
        if san:  # python has no sanitizer runtime of its own: load the library's first
            rts = [run(["cc", "-print-file-name=lib%s.so" % rt]).stdout.strip() for rt in ("asan", "ubsan")]
            penv.update(LD_PRELOAD=":".join(rts), ASAN_OPTIONS="detect_leaks=0:verify_asan_link_order=0")
        code = ("import gpuctl, os\nc = gpuctl.open(sim=%r)\nprint(gpuctl.__file__)\n"
                "print(len(c.devices()))\nwith c.lease(1) as g:\n    print(list(g))\n" %
                os.path.join(src, "examples", "nodes", "l4-2x.json"))
        r = run([sys.executable, "-c", code], env=penv, timeout=60)
        lines = r.stdout.split()
        check("the installed package imports the installed library, sees 2 GPUs, leases GPU 0: %s %s"
              % (r.stdout.strip(), r.stderr.strip()[-500:]),
              r.returncode == 0 and lines[:1] == [pkgs[0]] and lines[1:] == ["2", "[0]"])

    # nm -D: the public API and nothing else
    r = run(["nm", "-D", "--defined-only", so])
    syms = set()
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 3:
            syms.add((parts[1], parts[2].split("@")[0]))
    other = sorted(n for t, n in syms if not n.startswith("gc_") and not (t == "A" and n.startswith("GPUCTL_")))
    check("nm -D reads the library", r.returncode == 0 and syms)
    check("nm -D shows only gc_* symbols (others: " + " ".join(other[:20]) + ")", not other)
    header = open(hdr[0]).read() if hdr else ""
    declared = set(re.findall(r"\b(gc_[a-z0-9_]+)\s*\(", header))
    exported = {n for t, n in syms if n.startswith("gc_")}
    check("the exports are exactly the header's functions (exported only: %s; declared only: %s)"
          % (" ".join(sorted(exported - declared)), " ".join(sorted(declared - exported))),
          exported == declared)
finally:
    shutil.rmtree(root, ignore_errors=True)

harness.finish("0 failed")
