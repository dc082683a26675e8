#!/usr/bin/env python3
"""gpuctl doctor (issue 5): each check on the simulated node, with faults
injected (driver/library mismatch, no driver, ECC, persistence off, thermal
throttling, a degraded PCIe link, memory held without a process, Xid lines
in the kernel log) and the environment set (CUDA_VISIBLE_DEVICES invalid,
mixed GPU models without CUDA_DEVICE_ORDER, PYTORCH_CUDA_ALLOC_CONF unset,
NCCL async error handling off, a small /dev/shm in a container). Checks
each check's status in --json and the exit code (1 when a check fails).
Usage: doctor.py GPUCTL SRCDIR
"""
import json
import os
import subprocess
import sys
import tempfile

GPUCTL, SRC = sys.argv[1], sys.argv[2]
NODES = os.path.join(SRC, "tests", "cli", "nodes")
EX = os.path.join(SRC, "examples", "nodes")
errors = []
tmp = tempfile.mkdtemp(prefix="gpuctl-doctor-")
klog = os.path.join(tmp, "kmsg")
with open(klog, "w") as f:
    f.write("6,1000,100,-;NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.14\n"
            "4,1001,200,-;NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n")
quiet = os.path.join(tmp, "quiet")
with open(quiet, "w") as f:
    f.write("6,1,1,-;Linux version 6.1\n")


def doctor(node, extra_env=None, want_exit=None, name=""):
    env = {k: v for k, v in os.environ.items()
           if k not in ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "PYTORCH_CUDA_ALLOC_CONF",
                        "NCCL_ASYNC_ERROR_HANDLING", "TORCH_NCCL_ASYNC_ERROR_HANDLING")
           and (not k.startswith("GPUCTL_") or k == "GPUCTL_SIM_LIBDIR")}
    env.update({"GPUCTL_DATA_DIR": os.path.join(SRC, "data"), "GPUCTL_DOCTOR_KERNEL_LOG": quiet,
                "GPUCTL_DOCTOR_CONTAINER": "0", "GPUCTL_SIM_RUNDIR": tmp})
    env.update(extra_env or {})
    args = [GPUCTL] + (["--sim", node] if node else []) + ["doctor", "--json"]
    p = subprocess.run(args, env=env, capture_output=True, text=True, timeout=60)
    try:
        out = json.loads(p.stdout)
    except ValueError:
        errors.append(f"{name}: not JSON: {p.stdout!r} {p.stderr!r}")
        return {}
    if want_exit is not None and p.returncode != want_exit:
        errors.append(f"{name}: exit {p.returncode}, expected {want_exit}")
    if out.get("schema") != "gpuctl.doctor/1":
        errors.append(f"{name}: schema {out.get('schema')}")
    return {c["id"]: c for c in out.get("checks", [])}


def expect(checks, cid, status, name, contains=None):
    c = checks.get(cid)
    if not c:
        errors.append(f"{name}: no check {cid}")
    elif c["status"] != status:
        errors.append(f"{name}: {cid} is {c['status']}, expected {status}: {c['found']}")
    elif contains and contains not in c["found"]:
        errors.append(f"{name}: {cid}: {contains!r} not in {c['found']!r}")


# a healthy node with a good environment: nothing fails, exit 0 (a warning does not fail)
ok = doctor(os.path.join(EX, "t4-1x.json"), {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}, 0, "healthy")
for cid in ("driver", "env.cuda_visible_devices", "env.cuda_device_order", "env.pytorch_alloc_conf", "env.nccl",
            "health.ecc", "health.throttling", "health.pcie", "health.leaked_memory", "health.xid"):
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
expect(f, "env.pytorch_alloc_conf", "warn", "faults")

# driver problems: named, and the other checks still run
m = doctor(os.path.join(NODES, "mismatch.json"), None, 1, "mismatch")
expect(m, "driver", "fail", "mismatch", "version mismatch")
expect(m, "env.pytorch_alloc_conf", "warn", "mismatch")
n = doctor(None, {"GPUCTL_NVML_LIBRARY": "/nonexistent/libnvidia-ml.so.1"}, 1, "no driver")
expect(n, "driver", "fail", "no driver", "not found")
d = doctor(os.path.join(NODES, "nodriver.json"), None, 1, "not loaded")
expect(d, "driver", "fail", "not loaded", "not loaded")

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

for err in errors:
    print("FAIL:", err)
print(f"doctor: {len(errors)} problems")
sys.exit(1 if errors else 0)
