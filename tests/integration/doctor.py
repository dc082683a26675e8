#!/usr/bin/env python3
"""gpuctl doctor (issue 5): each check on the simulated node, with faults
injected (driver/library mismatch, no driver, ECC, persistence off, thermal
throttling, a degraded PCIe link, memory held without a process, row
remappings pending or failed, pages pending retirement, Xid lines
in the kernel log) and the environment set (CUDA_VISIBLE_DEVICES invalid,
mixed GPU models without CUDA_DEVICE_ORDER, PYTORCH_CUDA_ALLOC_CONF unset,
NCCL async error handling off, a small /dev/shm in a container), and the
CUDA stack with fake nvcc/python executables on PATH reporting chosen
versions (PyTorch for CUDA 12.4 on a 12.2 driver, minor-version
compatibility, CUDA 13 on 12.4, CPU-only builds, a broken import, a hang). Checks
each check's status in --json and the exit code (1 when a check fails).
Usage: doctor.py GPUCTL SRCDIR
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import fail  # noqa: E402

GPUCTL, SRC = sys.argv[1], sys.argv[2]
NODES = os.path.join(SRC, "tests", "cli", "nodes")
EX = os.path.join(SRC, "examples", "nodes")
tmp = tempfile.mkdtemp(prefix="gpuctl-doctor-")
klog = os.path.join(tmp, "kmsg")
with open(klog, "w") as f:
    f.write("6,1000,100,-;NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.14\n"
            "4,1001,200,-;NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n")
quiet = os.path.join(tmp, "quiet")
with open(quiet, "w") as f:
    f.write("6,1,1,-;Linux version 6.1\n")


def fake_bin(name, python=None, nvcc=None, torch="-", torchrun=None):
    """a PATH directory with a fake python3 and/or nvcc printing chosen lines; asked by gpuctl
    launch's probe (-c with gpuctl-torch in it), the python3 says its torch is `torch`; with
    torchrun (a version), a torchrun whose #! line names a Python 3.11 with that torch
    ("3.10 1.13.0" for another Python)"""
    d = os.path.join(tmp, "bin-" + name)
    os.mkdir(d)
    probe = 'case "$2" in *gpuctl-torch*) echo "gpuctl-torch 3 11 %s"; exit 0 ;; esac\n'
    for exe, text in (("python3", python), ("nvcc", nvcc)):
        if text is not None:
            with open(os.path.join(d, exe), "w") as f:
                f.write("#!/bin/sh\n" + (probe % torch if exe == "python3" else "") + text + "\n")
            os.chmod(os.path.join(d, exe), 0o755)
    if torchrun is not None:
        pyver, _, ver = torchrun.rpartition(" ")
        lpy = os.path.join(d, "lib", "python" + (pyver or "3.11"))
        os.makedirs(os.path.dirname(lpy))
        with open(lpy, "w") as f:
            f.write("#!/bin/sh\necho 'gpuctl-torch %s %s'\n" % ((pyver or "3.11").replace(".", " "), ver))
        os.chmod(lpy, 0o755)
        with open(os.path.join(d, "torchrun"), "w") as f:
            f.write("#!%s\n# -*- coding: utf-8 -*-\nimport sys\n" % lpy)
        os.chmod(os.path.join(d, "torchrun"), 0o755)
    return d


# what the fakes need besides the shell's builtins, without the torchrun or python3 of this machine
SYS = os.path.join(tmp, "bin-sys")
os.mkdir(SYS)
os.symlink(shutil.which("sleep"), os.path.join(SYS, "sleep"))


NVCC = ("echo 'nvcc: NVIDIA (R) Cuda compiler driver'; "
        "echo 'Cuda compilation tools, release {0}, V{0}.131'")
cuda_home = os.path.join(tmp, "cuda-none")
os.mkdir(cuda_home)
default_bin = fake_bin("default", python="echo 'torch -'; echo 'tensorflow -'")


def doctor(node, extra_env=None, want_exit=None, name="", args_extra=()):
    env = {k: v for k, v in os.environ.items()
           if k not in ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "PYTORCH_CUDA_ALLOC_CONF",
                        "NCCL_ASYNC_ERROR_HANDLING", "TORCH_NCCL_ASYNC_ERROR_HANDLING")
           and (not k.startswith("GPUCTL_") or k in ("GPUCTL_SIM_LIBDIR", "GPUCTL_AUTHORITY_DIR"))}
    env.update({"GPUCTL_DATA_DIR": os.path.join(SRC, "data"), "GPUCTL_DOCTOR_KERNEL_LOG": quiet,
                "GPUCTL_DOCTOR_CONTAINER": "0", "GPUCTL_SIM_RUNDIR": tmp,
                # no nvcc or python of this machine's: only the fakes
                "PATH": default_bin + ":" + SYS, "CUDA_HOME": cuda_home})
    env.update(extra_env or {})
    args = [GPUCTL] + (["--sim", node] if node else []) + ["doctor", "--json"] + list(args_extra)
    p = subprocess.run(args, env=env, capture_output=True, text=True, timeout=60)
    try:
        out = json.loads(p.stdout)
    except ValueError:
        fail(f"{name}: not JSON: {p.stdout!r} {p.stderr!r}")
        return {}
    if want_exit is not None and p.returncode != want_exit:
        fail(f"{name}: exit {p.returncode}, expected {want_exit}")
    if out.get("schema") != "gpuctl.doctor/1":
        fail(f"{name}: schema {out.get('schema')}")
    return {c["id"]: c for c in out.get("checks", [])}


def expect(checks, cid, status, name, contains=None, fix=None):
    c = checks.get(cid)
    if not c:
        fail(f"{name}: no check {cid}")
    elif c["status"] != status:
        fail(f"{name}: {cid} is {c['status']}, expected {status}: {c['found']}")
    elif contains and contains not in c["found"]:
        fail(f"{name}: {cid}: {contains!r} not in {c['found']!r}")
    elif fix and fix not in c["fix"]:
        fail(f"{name}: {cid}: fix {fix!r} not in {c['fix']!r}")


# a healthy node with a good environment: nothing fails, exit 0 (a warning does not fail)
ok = doctor(os.path.join(EX, "t4-1x.json"), {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}, 0, "healthy")
for cid in ("driver", "env.cuda_visible_devices", "env.cuda_device_order", "env.pytorch_alloc_conf", "env.nccl",
            "health.ecc", "health.remapped_rows", "health.throttling", "health.pcie", "health.leaked_memory", "health.xid"):
    expect(ok, cid, "ok", "healthy")
expect(ok, "health.persistence", "warn", "healthy", "GPU 0")  # the T4 example runs without it
expect(ok, "env.shm", "skip", "healthy")

# one fault per GPU
f = doctor(os.path.join(NODES, "doctor-faults.json"), None, 1, "faults")
expect(f, "health.ecc", "fail", "faults", "GPU 0")
expect(f, "health.persistence", "warn", "faults", "GPU 1")
expect(f, "health.throttling", "warn", "faults", "thermal")
expect(f, "health.pcie", "warn", "faults", "GPU 3 at gen 3 x8 of gen 4 x16")
expect(f, "health.leaked_memory", "warn", "faults", "GPU 4")
# a failed row remapping (GPU 5) outranks the pending repairs of GPU 0 (rows) and 6 (V100 pages)
expect(f, "health.remapped_rows", "fail", "faults", "has failed on GPU 5 (9 rows", fix="--exclude 5")
nofail = os.path.join(tmp, "repairs-pending.json")
with open(os.path.join(NODES, "doctor-faults.json")) as src:
    node = json.load(src)
del node["gpus"][5]
with open(nofail, "w") as dst:
    json.dump(node, dst)
p = doctor(nofail, None, 1, "repairs pending")  # exit 1: GPU 0's ECC errors still fail
expect(p, "health.remapped_rows", "warn", "repairs pending", "GPU 0,5 have memory repairs pending", fix="nvidia-smi -r")
for ex in ("t4-1x.json", "h100-8x-sxm.json", "a100-4x-pcie.json"):  # pages on the T4, rows on the others
    expect(doctor(os.path.join(EX, ex), None, None, ex), "health.remapped_rows", "ok", ex, "no remapped rows")
expect(f, "env.pytorch_alloc_conf", "warn", "faults")
# a GPU in MIG mode: a warning naming it (CUDA sees only its MIG devices); none: ok; not reported: skip
expect(doctor(os.path.join(NODES, "mig.json"), None, 0, "mig"), "health.mig", "warn", "mig",
       "GPU 0 has MIG mode enabled: CUDA sees only its MIG devices, by MIG UUID", fix="-mig 0")
expect(doctor(os.path.join(EX, "h100-8x-sxm.json"), None, None, "no mig"), "health.mig", "ok", "no mig")
expect(doctor(os.path.join(NODES, "r410.json"), None, None, "mig unknown"), "health.mig", "skip", "mig unknown")

# driver problems: named, and the other checks still run
m = doctor(os.path.join(NODES, "mismatch.json"), None, 1, "mismatch")
expect(m, "driver", "fail", "mismatch", "version mismatch")
expect(m, "env.pytorch_alloc_conf", "warn", "mismatch")
n = doctor(None, {"GPUCTL_NVML_LIBRARY": "/nonexistent/libnvidia-ml.so.1"}, 1, "no driver")
expect(n, "driver", "fail", "no driver", "not found")
d = doctor(os.path.join(NODES, "nodriver.json"), None, 1, "not loaded")
expect(d, "driver", "fail", "not loaded", "not loaded")
# without a driver there are no GPUs to count or compare: skipped, and said so (not "ok, all 0 GPUs")
expect(d, "env.cuda_visible_devices", "skip", "not loaded", "without a driver")
expect(d, "env.cuda_device_order", "skip", "not loaded", "without a driver")
d = doctor(os.path.join(NODES, "nodriver.json"), {"CUDA_VISIBLE_DEVICES": "0"}, 1, "not loaded, cvd")
expect(d, "env.cuda_visible_devices", "skip", "not loaded, cvd", "CUDA_VISIBLE_DEVICES='0'")
d = doctor(os.path.join(NODES, "nodriver.json"), {"CUDA_VISIBLE_DEVICES": ""}, 1, "not loaded, cvd empty")
expect(d, "env.cuda_visible_devices", "warn", "not loaded, cvd empty", "no GPU at all")

# a lost GPU (issue 16): a failure naming it and what to do, and no check passes on its missing values
LOST = os.path.join(NODES, "doctor-lost.json")
lo = doctor(LOST, {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}, 1,
            "lost")
expect(lo, "health.lost", "fail", "lost", "GPU 0 is lost", fix="Xid 79")
expect(lo, "health.lost", "fail", "lost", fix="nvidia-smi -r -i 0")
expect(lo, "health.lost", "fail", "lost", fix="reboot")
expect(lo, "health.lost", "fail", "lost", fix="--exclude 0")
for cid in ("health.persistence", "health.ecc", "health.remapped_rows", "health.throttling", "health.pcie",
            "health.leaked_memory"):
    expect(lo, cid, "skip", "lost", "GPU 0 not checked")
lo = doctor(LOST, None, 1, "lost, order")
expect(lo, "env.cuda_device_order", "skip", "lost, order", "GPU 0's model is not known")
lo = doctor(LOST, {"CUDA_VISIBLE_DEVICES": "GPU-5e4d0000-0000-4000-8000-000000000000"}, 1, "lost, uuid")
expect(lo, "env.cuda_visible_devices", "skip", "lost, uuid", "UUID of GPU 0 is not known")
expect(doctor(os.path.join(EX, "t4-1x.json"), None, None, "not lost"), "health.lost", "ok", "not lost",
       "no GPU is lost")
# lost in the middle of the sample: the values read before still count, the GPU is still named
late = os.path.join(tmp, "lost-late.json")
with open(late, "w") as f:
    json.dump({"name": "lost-late", "gpus": [
        {"name": "NVIDIA L4", "persistence_mode": True},
        {"name": "NVIDIA L4", "persistence_mode": True, "faults": {"nvmlDeviceGetTemperature": "GPU_IS_LOST"}}]}, f)
lo = doctor(late, None, 1, "lost late")
expect(lo, "health.lost", "fail", "lost late", "GPU 1 is lost")
# values a GPU does not report at all: skipped, not passed
un = doctor(os.path.join(NODES, "doctor-unreported.json"), None, 0, "unreported")
for cid in ("health.persistence", "health.ecc", "health.remapped_rows", "health.throttling", "health.pcie",
            "health.leaked_memory"):
    expect(un, cid, "skip", "unreported", "not reported")
expect(un, "health.lost", "ok", "unreported")

# the environment
e = doctor(os.path.join(EX, "h100-8x-sxm.json"), {"CUDA_VISIBLE_DEVICES": "0,0"}, 1, "cvd duplicate")
expect(e, "env.cuda_visible_devices", "fail", "cvd duplicate", "listed twice")
e = doctor(os.path.join(EX, "h100-8x-sxm.json"), {"CUDA_VISIBLE_DEVICES": "0,9,1"}, None, "cvd range")
expect(e, "env.cuda_visible_devices", "warn", "cvd range", "entry 2")
e = doctor(os.path.join(NODES, "full-2x.json"), {"CUDA_VISIBLE_DEVICES": "1"}, None, "order")
expect(e, "env.cuda_device_order", "warn", "order", "fastest first")
e = doctor(os.path.join(NODES, "full-2x.json"), {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}, None, "order ok")
expect(e, "env.cuda_device_order", "ok", "order ok")
e = doctor(os.path.join(EX, "t4-1x.json"), {"TORCH_NCCL_ASYNC_ERROR_HANDLING": "0"}, None, "nccl")
expect(e, "env.nccl", "warn", "nccl", "TORCH_NCCL_ASYNC_ERROR_HANDLING=0")
small = os.path.join(tmp, "smallshm")
os.mkdir(small)
st = os.statvfs(small)
shm_small = st.f_blocks * st.f_frsize < (1 << 30)
e = doctor(os.path.join(EX, "t4-1x.json"), {"GPUCTL_DOCTOR_CONTAINER": "1", "GPUCTL_DOCTOR_SHM": small}, None, "shm")
expect(e, "env.shm", "warn" if shm_small else "ok", "shm")

# the kernel log: Xid 79 needs a reset
x = doctor(os.path.join(EX, "t4-1x.json"), {"GPUCTL_DOCTOR_KERNEL_LOG": klog}, 1, "xid")
expect(x, "health.xid", "fail", "xid", "Xid 79")
x = doctor(os.path.join(EX, "t4-1x.json"), {"GPUCTL_DOCTOR_KERNEL_LOG": os.path.join(tmp, "missing")}, None, "klog")
expect(x, "health.xid", "skip", "klog")

# the CUDA stack, with fake nvcc and python executables on PATH
T4, R535 = os.path.join(EX, "t4-1x.json"), os.path.join(NODES, "r535.json")  # CUDA 12.4 / 12.2 drivers
ok_stack = fake_bin("ok", python="echo 'torch 2.4.0+cu124 12.4 1 1'; echo 'tensorflow 2.16.1 12.3 1 1'",
                    nvcc=NVCC.format("12.4"))
t = doctor(T4, {"PATH": ok_stack + ":" + SYS, "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}, 0,
           "stack ok")
expect(t, "cuda.toolkit", "ok", "stack ok", "CUDA toolkit 12.4 (nvcc --version)")
expect(t, "python.torch", "ok", "stack ok", "sees 1 GPU")
expect(t, "python.tensorflow", "ok", "stack ok", "TensorFlow 2.16.1 built for CUDA 12.3")
# PyTorch for CUDA 12.4 on a 12.2 driver: the driver is named, with the version that fixes it
old = fake_bin("old", python="echo 'torch 2.4.0+cu124 12.4 0 0'; echo 'tensorflow -'", nvcc=NVCC.format("12.4"))
t = doctor(R535, {"PATH": old + ":" + SYS}, 1, "old driver")
expect(t, "python.torch", "fail", "old driver", "535.54.03 (CUDA up to 12.2)", "550.54.14")
expect(t, "cuda.toolkit", "warn", "old driver", "minor-version compatibility", "550.54.14")
expect(t, "python.tensorflow", "skip", "old driver")
# the same build working through minor-version compatibility is a warning
mc = fake_bin("minor", python="echo 'torch 2.4.0+cu124 12.4 1 1'; echo 'tensorflow -'")
t = doctor(R535, {"PATH": mc + ":" + SYS}, 0, "minor compat")
expect(t, "python.torch", "warn", "minor compat", "minor-version compatibility", "550.54.14")
expect(t, "cuda.toolkit", "skip", "minor compat", "no CUDA toolkit")
# a new major release on an old driver
new = fake_bin("new", python="echo 'torch 2.9.0+cu130 13.0 0 0'; echo 'tensorflow -'")
t = doctor(T4, {"PATH": new + ":" + SYS}, 1, "cuda 13")
expect(t, "python.torch", "fail", "cuda 13", "needs a newer driver than 550.54.14", "580.65.06")
# CPU-only wheels, a broken import, a Python that hangs, no Python
cpu = fake_bin("cpu", python="echo 'torch 2.4.0+cpu - 0 0'; echo 'tensorflow 2.16.1 - 1 0'")
t = doctor(T4, {"PATH": cpu + ":" + SYS}, 0, "cpu")
expect(t, "python.torch", "warn", "cpu", "CPU-only", "download.pytorch.org/whl/cu124")
expect(t, "python.tensorflow", "warn", "cpu", "CPU-only")
brk = fake_bin("broken", python="echo 'torch-error libcudnn.so.9: cannot open shared object file'; "
               "echo 'tensorflow -'")
t = doctor(T4, {"PATH": brk + ":" + SYS}, 0, "broken")
expect(t, "python.torch", "warn", "broken", "libcudnn.so.9")
# the driver supports the build but torch sees nothing: the environment is named
hid = fake_bin("hidden", python="echo 'torch 2.4.0+cu124 12.4 0 0'; echo 'tensorflow -'")
t = doctor(T4, {"PATH": hid + ":" + SYS}, 1, "hidden")
expect(t, "python.torch", "fail", "hidden", "is_available() is False", "CUDA_VISIBLE_DEVICES")
hang = fake_bin("hang", python="sleep 60")
t = doctor(T4, {"PATH": hang + ":" + SYS, "GPUCTL_DOCTOR_PY_TIMEOUT_MS": "500"}, 0, "hang")
expect(t, "python.torch", "warn", "hang", "time limit")
# no python3 on PATH is a skipped check; a --python that cannot run is bad input (exit 2)
nopy = os.path.join(tmp, "bin-empty")
os.mkdir(nopy)
t = doctor(T4, {"PATH": nopy}, 0, "no python")
expect(t, "python.torch", "skip", "no python", "'python3'")
expect(t, "python.tensorflow", "skip", "no python", "'python3'")
for bad, why in ((os.path.join(tmp, "no-such-python"), "No such file or directory"),
                 (tmp, "Permission denied"), (os.path.join(SRC, "README.md"), "Permission denied")):
    p = subprocess.run([GPUCTL, "--sim", T4, "doctor", "--python", bad], capture_output=True, text=True,
                       timeout=30, env=dict(os.environ, GPUCTL_SIM_RUNDIR=tmp))
    want = f"gpuctl: --python '{bad}' cannot be run ({why}): give the path of a Python interpreter"
    if p.returncode != 2 or not p.stderr.startswith(want) or p.stdout:
        fail(f"--python {bad}: exit {p.returncode}, stdout {p.stdout!r}, stderr {p.stderr!r}")
# --python picks the interpreter; the toolkit from $CUDA_HOME/version.json when nvcc is not on PATH
venv = fake_bin("venv", python="echo 'torch 2.3.1+cu121 12.1 1 1'; echo 'tensorflow -'")
home = os.path.join(tmp, "cuda-12.2")
os.mkdir(home)
with open(os.path.join(home, "version.json"), "w") as f:
    json.dump({"cuda": {"name": "CUDA SDK", "version": "12.2.2"}}, f)
t = doctor(R535, {"CUDA_HOME": home}, 0, "venv", ("--python", os.path.join(venv, "python3")))
expect(t, "python.torch", "ok", "venv", "PyTorch 2.3.1+cu121 built for CUDA 12.1")
expect(t, "cuda.toolkit", "ok", "venv", "CUDA toolkit 12.2.2 (" + home)
# a version.json that is garbage, or has no version in it, is named, not trusted
junk = os.path.join(tmp, "cuda-junk")
os.mkdir(junk)
for text, status, said in ((b"\x00\xff{{garbage", "skip", "could not be read"),
                           (b'{"cuda": {"version": "abc"}}', "warn", "'abc', which is not a version")):
    with open(os.path.join(junk, "version.json"), "wb") as f:
        f.write(text)
    t = doctor(T4, {"CUDA_HOME": junk}, None, "junk version.json")
    expect(t, "cuda.toolkit", status, "junk version.json", said)
# no driver: the stack is reported without a verdict
t = doctor(os.path.join(NODES, "nodriver.json"), {"PATH": ok_stack + ":" + SYS}, 1, "stack no driver")
expect(t, "cuda.toolkit", "skip", "stack no driver", "no driver")

# what gpuctl launch would run (issue 16): torchrun's own Python and PyTorch, from its #! line
lt = doctor(T4, {"PATH": fake_bin("lt-113", python="echo 'torch -'", torchrun="1.13.0a0") + ":" + SYS}, 0, "torchrun 1.13")
expect(lt, "launch.torchrun", "warn", "torchrun 1.13", "PyTorch 1.13.0a0 on Python 3.11",
       fix="--redirects 1 --tee 1")
expect(lt, "launch.torchrun", "warn", "torchrun 1.13", "'NoneType' object has no attribute 'get'", fix="2.0")
for name, ver, said in (("lt-310", "3.10 1.13.1", "PyTorch 1.13.1 on Python 3.10"),
                        ("lt-24", "2.4.1+cu121", "PyTorch 2.4.1+cu121 on Python 3.11")):
    lt = doctor(T4, {"PATH": fake_bin(name, python="echo 'torch -'", torchrun=ver) + ":" + SYS}, 0, name)
    expect(lt, "launch.torchrun", "ok", name, said)
lt = doctor(T4, {"PATH": fake_bin("lt-none", python="echo 'torch -'", torchrun="-") + ":" + SYS}, 0, "torchrun no torch")
expect(lt, "launch.torchrun", "warn", "torchrun no torch", "has no PyTorch")
shbin = fake_bin("lt-sh", python="echo 'torch -'")
with open(os.path.join(shbin, "torchrun"), "w") as f:
    f.write("#!/bin/sh\nexec python3 -m torch.distributed.run \"$@\"\n")
os.chmod(os.path.join(shbin, "torchrun"), 0o755)
lt = doctor(T4, {"PATH": shbin + ":" + SYS}, 0, "torchrun sh")
expect(lt, "launch.torchrun", "skip", "torchrun sh", "names no Python")
lt = doctor(T4, {"PATH": fake_bin("lt-py", python="echo 'torch -'", torch="2.4.1") + ":" + SYS}, 0, "python -m")
expect(lt, "launch.torchrun", "ok", "python -m", "-m torch.distributed.run")
expect(doctor(T4, None, 0, "no torch"), "launch.torchrun", "skip", "no torch", "not installed")

# PYTORCH_CUDA_ALLOC_CONF against the PyTorch that would read it: expandable_segments needs 2.1
EXP = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}
for ver, cuda, status in (("1.13.1+cu117", "11.7", "fail"), ("2.0.1+cu118", "11.8", "fail"),
                          ("2.1.0+cu121", "12.1", "ok"), ("1.13.1+cpu", "-", "warn")):
    b = fake_bin("ac-" + ver, python=f"echo 'torch {ver} {cuda} {0 if cuda == '-' else 1} {0 if cuda == '-' else 1}'; "
                                     "echo 'tensorflow -'")
    t = doctor(T4, dict(EXP, PATH=b + ":" + SYS), None, "alloc " + ver)
    expect(t, "env.pytorch_alloc_conf", status, "alloc " + ver,
           "Unrecognized CachingAllocator option" if status != "ok" else "expandable_segments:True",
           fix="unset PYTORCH_CUDA_ALLOC_CONF" if status != "ok" else None)
    t = doctor(T4, {"PATH": b + ":" + SYS}, None, "alloc unset " + ver)
    expect(t, "env.pytorch_alloc_conf", "ok" if ver < "2.1" else "warn", "alloc unset " + ver,
           "PyTorch 2.1" if ver < "2.1" else "unset")
t = doctor(T4, dict(EXP, PATH=fake_bin("ac-lt", python="echo 'torch -'", torchrun="1.13.0a0") + ":" + SYS), 0,
           "alloc torchrun")
expect(t, "env.pytorch_alloc_conf", "warn", "alloc torchrun", "PyTorch 1.13.0a0 (torchrun's")

# a driver that does not report its CUDA version, and a CUDA release cuda-compat.csv does not list:
# no verdict either way (it was "needs a newer driver")
nocuda = os.path.join(tmp, "no-cuda-version.json")
with open(nocuda, "w") as f:
    json.dump({"name": "no-cuda-version", "driver": {"version": "999.10.1", "cuda_version": None},
               "gpus": [{"name": "NVIDIA L4", "persistence_mode": True}]}, f)
nc = fake_bin("nocuda", python="echo 'torch 9.0.0+cu190 19.0 0 0'; echo 'tensorflow -'", nvcc=NVCC.format("19.0"))
t = doctor(nocuda, {"PATH": nc + ":" + SYS}, None, "cuda unknown")
expect(t, "cuda.toolkit", "skip", "cuda unknown", "does not report")
expect(t, "python.torch", "warn", "cuda unknown", "does not report")
nc = fake_bin("nocuda-ok", python="echo 'torch 9.0.0+cu190 19.0 1 1'; echo 'tensorflow -'")
t = doctor(nocuda, {"PATH": nc + ":" + SYS}, None, "cuda unknown, torch sees it")
expect(t, "python.torch", "ok", "cuda unknown, torch sees it", "sees 1 GPU")
# a listed release is still judged by the table
nc = fake_bin("nocuda-listed", python="echo 'torch -'; echo 'tensorflow -'", nvcc=NVCC.format("12.4"))
expect(doctor(nocuda, {"PATH": nc + ":" + SYS}, None, "cuda unknown, listed"), "cuda.toolkit", "ok",
       "cuda unknown, listed")

p = subprocess.run([GPUCTL, "doctor", "--python"], capture_output=True, text=True, timeout=30)
if p.returncode != 2 or "option '--python' needs a value (try 'gpuctl doctor --help')" not in p.stderr:
    fail(f"--python without a value: exit {p.returncode} {p.stderr!r}")

harness.finish("doctor: 0 problems")
