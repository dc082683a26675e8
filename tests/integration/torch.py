#!/usr/bin/env python3
"""gpuctl launch and doctor with a real PyTorch (issue 16): Debian's
python3-torch (CPU), installed by tests/torch/torch-up.sh when missing. Its
torch belongs to /usr/bin/python3, which need not be the python3 first on
PATH; torchrun's #! line names it.

  real bugs:  the real torchrun refuses the hyphen spellings of its options
              and, for PyTorch < 2.0 on Python >= 3.11, dies at start with its
              default --redirects/--tee: what gpuctl must work around, checked
              here against the thing itself, so the detection is checked too;
  launch:     a 2-process gloo job through `gpuctl --sim NODE launch -n 2`,
              with torchrun (the first python3 on PATH left as it is) and with
              /usr/bin/python3 -m torch.distributed.run: init_process_group,
              an all_reduce whose sum each rank checks, the rendezvous on
              gpuctl's port, the leased GPUs, the workaround said once,
              PYTORCH_CUDA_ALLOC_CONF only for PyTorch >= 2.1, GPUs released;
  doctor:     launch.torchrun names the torchrun problem and its fix.
What a real torch cannot show here (a CUDA allocation refusing
expandable_segments, other versions) is in launch.py and doctor.py with fakes.
Skips (77, with the reason) only when torch cannot be installed or imported.
Usage: torch.py GPUCTL SRCDIR
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check  # noqa: E402
from torchup import PY, torch_up, torchrun_alone  # noqa: E402

GPUCTL, SRC = os.path.realpath(sys.argv[1]), sys.argv[2]
NODE = os.path.join(SRC, "tests", "cli", "nodes", "idle-8x.json")
start = time.monotonic()
TORCH, PYVER, TORCHRUN = torch_up(SRC)
torchrun_alone()
m = re.match(r"(\d+)\.(\d+)", TORCH)
TV = (int(m.group(1)), int(m.group(2)))
STD_BUG = TV < (2, 0) and PYVER >= (3, 11)
EXPANDABLE = TV >= (2, 1)
print(f"torch {TORCH} on Python {PYVER[0]}.{PYVER[1]} ({PY}), torchrun {TORCHRUN}: "
      f"expect the --redirects/--tee workaround: {STD_BUG}, expandable_segments: {EXPANDABLE}")

work = tempfile.mkdtemp(prefix="gpuctl-torch-")
JOB = r'''
import datetime, json, os, sys
import torch
import torch.distributed as dist
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
rank, world = dist.get_rank(), dist.get_world_size()
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t)  # the sum of 1..world on every rank
want = world * (world + 1) / 2
keys = ("LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "CUDA_VISIBLE_DEVICES", "PYTORCH_CUDA_ALLOC_CONF",
        "OMP_NUM_THREADS", "GPUCTL_RUN_ID")
with open(os.path.join(sys.argv[1], "rank%d.json" % rank), "w") as f:
    json.dump({"rank": rank, "world": world, "sum": t.item(), "want": want,
               "env": {k: os.environ.get(k) for k in keys}}, f)
print("rank %d of %d: all_reduce %s" % (rank, world, t.item()), flush=True)
dist.destroy_process_group()
sys.exit(0 if t.item() == want else 3)
'''
job = os.path.join(work, "job.py")
with open(job, "w") as f:
    f.write(JOB)
env = {k: v for k, v in os.environ.items()
       if not k.startswith(("GPUCTL_", "TORCH_", "NCCL_", "PET_", "SLURM_")) or k in ("GPUCTL_SIM_LIBDIR", "GPUCTL_AUTHORITY_DIR")}
for k in ("CUDA_VISIBLE_DEVICES", "PYTORCH_CUDA_ALLOC_CONF", "OMP_NUM_THREADS", "PYTHONPATH"):
    env.pop(k, None)
# the test's own PATH first (here a pyenv python3 without torch), /usr/bin after it
env.update({"PATH": os.environ.get("PATH", "") + ":/usr/bin:/bin", "GPUCTL_STATE_DIR": os.path.join(work, "state"),
            "GPUCTL_SIM_RUNDIR": os.path.join(work, "rd"),
            # torchrun looks at its workers every 5 s by default: a 2 s job would take 5
            "PET_MONITOR_INTERVAL": "0.2"})


def leased():
    p = subprocess.run([GPUCTL, "--sim", NODE, "leases", "--json"], env=env, capture_output=True, text=True,
                       timeout=30)
    return len(json.loads(p.stdout)["leases"]) if p.returncode == 0 else -1


# ---- the real torchrun's own behaviour, which gpuctl's choices rest on
hello = os.path.join(work, "hello.py")
with open(hello, "w") as f:
    f.write("print('hello')\n")
p = subprocess.run([TORCHRUN, "--nproc-per-node=1", "--rdzv-backend=c10d", "--rdzv-endpoint=127.0.0.1:1",
                    "--rdzv-id=x", hello], env=env, capture_output=True, text=True, timeout=60)
hyphens = p.returncode == 0 or "unrecognized arguments" not in p.stderr
print(f"real torchrun takes --nproc-per-node: {hyphens} (gpuctl passes --nproc_per_node, which all take)")
check("real torchrun", TV >= (2, 0) or not hyphens, f"torch {TORCH} took hyphens? exit {p.returncode} {p.stderr[-300:]!r}")
p = subprocess.run([TORCHRUN, "--standalone", "--nproc_per_node=1", hello], env=env, capture_output=True, text=True,
                   timeout=60)
crash = p.returncode != 0 and "'NoneType' object has no attribute 'get'" in p.stderr
check("real torchrun", crash == STD_BUG,
      f"default --redirects/--tee: crash {crash}, expected {STD_BUG}: exit {p.returncode} {p.stderr[-500:]!r}")
print(f"real torchrun dies with its default --redirects/--tee: {crash} (expected {STD_BUG})")

# ---- a 2-process gloo job through gpuctl launch: torchrun, and python3 -m torch.distributed.run
for name, args, path in (("torchrun", [], env["PATH"]),
                         ("python -m", ["--launcher", "python"], "/usr/bin:/bin")):
    out = os.path.join(work, "out-" + name.replace(" ", ""))
    os.makedirs(out)
    t0 = time.monotonic()
    p = subprocess.run([GPUCTL, "--sim", NODE, "launch", "-n", "2", *args, "--", job, out],
                       env=dict(env, PATH=path), capture_output=True, text=True, timeout=120)
    took = time.monotonic() - t0
    ranks = []
    for r in range(2):
        try:
            with open(os.path.join(out, f"rank{r}.json")) as f:
                ranks.append(json.load(f))
        except OSError:
            pass
    check(name, p.returncode == 0 and len(ranks) == 2,
          f"exit {p.returncode}, {len(ranks)} ranks; stdout {p.stdout[-800:]!r} stderr {p.stderr[-1500:]!r}")
    for r in ranks:
        check(name, r["world"] == 2 and r["sum"] == 3.0 == r["want"], f"rank {r['rank']}: {r}")
    if len(ranks) == 2:
        e0, e1 = ranks[0]["env"], ranks[1]["env"]
        check(name, {e0["LOCAL_RANK"], e1["LOCAL_RANK"]} == {"0", "1"}, f"LOCAL_RANK {e0['LOCAL_RANK']} {e1['LOCAL_RANK']}")
        cvd = e0["CUDA_VISIBLE_DEVICES"] or ""
        check(name, len(cvd.split(",")) == 2 and e1["CUDA_VISIBLE_DEVICES"] == cvd, f"CUDA_VISIBLE_DEVICES {cvd!r}")
        check(name, e0["MASTER_PORT"] not in (None, "29500"), f"MASTER_PORT {e0['MASTER_PORT']}")
        check(name, e0["PYTORCH_CUDA_ALLOC_CONF"] == ("expandable_segments:True" if EXPANDABLE else None),
              f"PYTORCH_CUDA_ALLOC_CONF={e0['PYTORCH_CUDA_ALLOC_CONF']!r} for torch {TORCH}")
    note = p.stderr.count("--redirects=1 --tee=1")
    check(name, note == (1 if STD_BUG else 0), f"workaround said {note} times: {p.stderr[-800:]!r}")
    check(name, ("[default0]:rank 0 of 2: all_reduce 3.0" in p.stdout) == STD_BUG
          and "rank 1 of 2: all_reduce 3.0" in p.stdout, f"stdout {p.stdout[-800:]!r}")
    check(name, leased() == 0, "GPUs still leased after the job")
    print(f"{name}: 2-process gloo all_reduce through gpuctl launch in {took:.1f} s")

# ---- doctor names the torchrun problem and its fix
p = subprocess.run([GPUCTL, "--sim", os.path.join(SRC, "examples", "nodes", "t4-1x.json"), "doctor", "--json"],
                   env=dict(env, PATH="/usr/bin:/bin", GPUCTL_DOCTOR_CONTAINER="0"), capture_output=True, text=True,
                   timeout=120)
checks = {c["id"]: c for c in json.loads(p.stdout)["checks"]} if p.stdout.startswith("{") else {}
lt = checks.get("launch.torchrun", {})
if STD_BUG:
    check("doctor", lt.get("status") == "warn" and f"PyTorch {TORCH} on Python {PYVER[0]}.{PYVER[1]}" in lt["found"]
          and "--redirects 1 --tee 1" in lt["fix"], f"launch.torchrun {lt}")
else:
    check("doctor", lt.get("status") == "ok" and TORCH in lt.get("found", ""), f"launch.torchrun {lt}")
print(f"doctor: launch.torchrun {lt.get('status')}: {lt.get('found', '')[:100]}")

print(f"total {time.monotonic() - start:.1f} s")
harness.finish(work=work)
