#!/usr/bin/env python3
"""Every recipe of docs/python.md, run as it is written there (issue 19):

  see           on the simulated node, with the python3 running this test;
  tf-device     against the fake TensorFlow (tests/python/fake: TF is not in Debian);
  torch-device  with Debian's PyTorch (python3-torch, a CPU build, installed by
                tests/torch/torch-up.sh when missing; it belongs to /usr/bin/python3):
                the GPU is leased, CUDA is not there, cpu_fallback says so and runs on the CPU;
  ddp           `gpuctl launch -n 2 --spot --cloud aws --restart on-preempt --checkpoint-dir`
                with the real torchrun (gloo, 2 processes): once uninterrupted, then ROUNDS
                times with a spot notice posted by the mock metadata server when rank 0 has
                logged a random step; each preempted run must stop within the grace period,
                commit, resume from its checkpoint, and end with parameters and optimizer
                state bit for bit equal to the uninterrupted run's. The seed of the random
                steps is printed; RECIPES_SEED=N replays a run.
Exits 77 (skip) only when PyTorch cannot be installed or imported here, after the
recipes that need no PyTorch have run.
Usage: recipes.py GPUCTL SRCDIR [ROUNDS]  (LD_LIBRARY_PATH, PYTHONPATH, GPUCTL_SIM_LIBDIR: meson)
"""
import os
import random
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import harness  # noqa: E402
from harness import check, errors  # noqa: E402
import time
import urllib.request

GPUCTL, SRC = os.path.realpath(sys.argv[1]), os.path.realpath(sys.argv[2])
ROUNDS = int(sys.argv[3]) if len(sys.argv) > 3 else 3
NODE = os.path.join(SRC, "tests", "cli", "nodes", "idle-8x.json")
TORCH_PY = "/usr/bin/python3"
STEPS = 3000
work = tempfile.mkdtemp(prefix="gpuctl-recipes-")

with open(os.path.join(SRC, "docs", "python.md")) as f:
    doc = f.read()
recipes = {m.group(1): m.group(0)[len("```python\n"):-len("```")]
           for m in re.finditer(r"```python\n# recipe: ([\w-]+)\n.*?```", doc, re.S)}
want = {"see", "torch-device", "tf-device", "ddp"}
if set(recipes) != want:
    print("FAIL: docs/python.md's recipes are %s, expected %s" % (sorted(recipes), sorted(want)))
    sys.exit(1)
for name, code in recipes.items():
    with open(os.path.join(work, name + ".py"), "w") as f:
        f.write(code)

base_env = {k: v for k, v in os.environ.items()
            if not k.startswith(("GPUCTL_", "TORCH_", "NCCL_", "PET_", "SLURM_")) or k in ("GPUCTL_SIM_LIBDIR", "GPUCTL_AUTHORITY_DIR")}
for k in ("CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS"):
    base_env.pop(k, None)
base_env.update({"GPUCTL_SIM": NODE, "GPUCTL_STATE_DIR": os.path.join(work, "state"),
                 "GPUCTL_SIM_RUNDIR": os.path.join(work, "rd"), "PATH": os.environ.get("PATH", "") + ":/usr/bin:/bin"})


def run(name, argv, env=None, timeout=120):
    p = subprocess.run(argv, env=env or base_env, capture_output=True, text=True, timeout=timeout)
    check(name, p.returncode == 0, "exit %d\nstdout: %s\nstderr: %s" % (p.returncode, p.stdout[-2000:],
                                                                       p.stderr[-2000:]))
    return p


# ---- see, tf-device: no PyTorch needed
p = run("see", [sys.executable, os.path.join(work, "see.py")])
lines = p.stdout.splitlines()
picked = run("see", [GPUCTL, "pick", "-n", "1"]).stdout.strip()
check("see", len(lines) == 9 and lines[0].startswith("0 NVIDIA") and lines[-1] == "free now: [%s]" % picked,
      repr(p.stdout))
env = dict(base_env, PYTHONPATH=os.path.join(SRC, "tests", "python", "fake") + os.pathsep + os.environ["PYTHONPATH"])
p = run("tf-device", [sys.executable, os.path.join(work, "tf-device.py")], env=env)
check("tf-device", p.stdout.strip() == "TensorFlow GPUs: ['/physical_device:GPU:0']", repr(p.stdout))
print("see, tf-device: %s" % ("ok" if not errors else "FAILED"))
n_errors = len(errors)

# ---- PyTorch
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
from torchup import torchrun_alone  # noqa: E402
torchrun_alone()
up = subprocess.run(["bash", os.path.join(SRC, "tests", "torch", "torch-up.sh"), TORCH_PY], capture_output=True,
                    text=True, timeout=900)
if up.returncode != 0:
    if errors:
        harness.finish()
    msg = up.stderr.strip().splitlines()
    print("SKIP: " + (msg[-1] if msg else "torch-up.sh exit %d" % up.returncode))
    sys.exit(77 if up.returncode == 77 else 1)
print(up.stdout.strip())

p = run("torch-device", [TORCH_PY, os.path.join(work, "torch-device.py")])
check("torch-device", p.stdout.splitlines()[-1:] == ["cpu torch.Size([2, 4])"], repr(p.stdout))
check("torch-device", "CPU-only build" in p.stdout and "using the CPU, as cpu_fallback=True asks" in p.stdout,
      "the fallback is not said: %r" % p.stdout)
print("torch-device: %s" % ("ok" if len(errors) == n_errors else "FAILED"))

# ---- ddp: uninterrupted, then preempted at random steps
mock = subprocess.Popen([sys.executable, os.path.join(SRC, "tests", "mock", "metadata.py"), "0"],
                        stdout=subprocess.PIPE, text=True)
port = int(mock.stdout.readline().split()[-1])
URL = "http://127.0.0.1:%d" % port


def ctl(path):
    urllib.request.urlopen(urllib.request.Request(URL + path, method="POST"), timeout=10).read()


COMPARE = r'''
import sys, torch
a, b = torch.load(sys.argv[1]), torch.load(sys.argv[2])
def same(x, y):
    if isinstance(x, torch.Tensor):
        return isinstance(y, torch.Tensor) and x.dtype == y.dtype and x.shape == y.shape and torch.equal(x, y)
    if isinstance(x, dict):
        return isinstance(y, dict) and x.keys() == y.keys() and all(same(x[k], y[k]) for k in x)
    if isinstance(x, (list, tuple)):
        return isinstance(y, (list, tuple)) and len(x) == len(y) and all(same(p, q) for p, q in zip(x, y))
    return x == y
print("same" if same(a, b) else "differ: %r vs %r" % (a["model"], b["model"]))

'''
with open(os.path.join(work, "compare.py"), "w") as f:
    f.write(COMPARE)


def launch(tag, notice_at=None):
    """the ddp recipe through gpuctl launch; with notice_at, a spot notice once rank 0 logs that step"""
    ck = os.path.join(work, "ckpt-" + tag)
    env = dict(base_env, GPUCTL_METADATA_URL=URL, STEPS=str(STEPS), PET_MONITOR_INTERVAL="0.2",
               PYTHONPATH=os.environ["PYTHONPATH"])
    argv = [GPUCTL, "launch", "-n", "2", "--spot", "--cloud", "aws", "--poll", "0.2", "--grace", "30",
            "--restart", "on-preempt", "--backoff", "1s", "--checkpoint-dir", ck, "--", os.path.join(work, "ddp.py")]
    ctl("/_ctl/reset")
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = []
    posted = stop_s = None
    for line in proc.stdout:
        out.append(line)
        m = re.search(r"step (\d+) loss", line)
        if notice_at is not None and posted is None and m and int(m.group(1)) >= notice_at:
            ctl("/_ctl/preempt?cloud=aws&in=60")
            posted = time.monotonic()
        # the first attempt has stopped once its checkpoint is committed: the notice has done its work
        if posted and stop_s is None and os.path.exists(os.path.join(ck, "latest")):
            stop_s = time.monotonic() - posted
            ctl("/_ctl/reset")
    err = proc.stderr.read()
    rc = proc.wait(timeout=300)
    return rc, "".join(out), err, ck, time.monotonic() - t0, stop_s


def final(ck):
    return os.path.join(ck, "ckpt-%09d.pt" % (STEPS - 1))


rc, out, err, ck_ref, secs, _ = launch("ref")
if check("ddp uninterrupted", rc == 0 and os.path.exists(final(ck_ref)),
         "exit %d, final checkpoint %s: %s" % (rc, os.path.exists(final(ck_ref)), err[-3000:])):
    print("ddp uninterrupted: %d steps in %.1f s" % (STEPS, secs))

# the training never fits exactly: a resume from the wrong state could not end the same
losses = [float(m.group(1)) for m in re.finditer(r"loss ([0-9.]+)", out)]
check("control", losses and min(losses[-100:]) > 0, "the training fits exactly, so any resume would end the same")

seed = int(os.environ.get("RECIPES_SEED", str(int(time.time()))))
print("ddp preemption steps drawn with seed %d (RECIPES_SEED=%d replays them)" % (seed, seed), flush=True)
rng = random.Random(seed)
for r in range(ROUNDS):
    at = rng.randrange(100, STEPS // 2)
    rc, out, err, ck, secs, stop_s = launch("pre%d" % r, notice_at=at)
    name = "ddp preempted at step >= %d" % at
    stops = [int(m.group(1)) for m in re.finditer(r"ckpt-(\d+)\.pt", " ".join(os.listdir(ck)))] if os.path.isdir(ck) else []
    ok = check(name, rc == 0, "exit %d: %s" % (rc, err[-3000:]))
    ok = ok and check(name, "ended: preempted" in err or "preempted" in err, "no preemption said: %s" % err[-2000:])
    ok = ok and check(name, os.path.exists(final(ck)), "no final checkpoint: %s" % os.listdir(ck))
    # one stop, at or after the notice's step, within the grace period, committed; then one resume
    # from exactly the next step: every step logged once, in order
    stop = [n for n in stops if n != STEPS - 1]
    steps = [int(m.group(1)) for m in re.finditer(r"step (\d+) loss", out)]
    ok = ok and check(name, "the job preempted" in err and "after 2 attempts" in err,
                      "expected one preemption and one restart: %s" % err[-2000:])
    ok = ok and check(name, len(stop) == 1 and stop[0] >= at, "stop checkpoints %s, notice at step %d" % (stop, at))
    ok = ok and check(name, steps == list(range(STEPS)), "steps logged are not 0..%d once each in order (%d lines)"
                      % (STEPS - 1, len(steps)))
    ok = ok and check(name, stop_s is not None and stop_s <= 30, "stop committed %s s after the notice" % stop_s)
    if ok:
        resumed_at = stop[0] + 1
        p = subprocess.run([TORCH_PY, os.path.join(work, "compare.py"), final(ck_ref), final(ck)],
                           capture_output=True, text=True, timeout=120)
        # a control: the comparison tells states apart (the stop checkpoint against the end)
        c = subprocess.run([TORCH_PY, os.path.join(work, "compare.py"), final(ck_ref),
                            os.path.join(ck, "ckpt-%09d.pt" % stop[0])], capture_output=True, text=True, timeout=120)
        check(name, c.stdout.startswith("differ"), "the stop checkpoint compares equal to the end: %r" % c.stdout)
        if check(name, p.stdout.strip() == "same", "final state: %s %s" % (p.stdout[-2000:], p.stderr[-2000:])):
            print("ddp preempted (notice at step %d, stopped and committed %.2f s later, resumed at step %d, "
                  "%.1f s in all): final parameters and optimizer state bit for bit equal" % (at, stop_s, resumed_at,
                                                                                                 secs))

mock.terminate()
mock.wait(10)
harness.finish("PASS", work=work, on_fail=lambda: print("seed %d: RECIPES_SEED=%d replays it" % (seed, seed)))
