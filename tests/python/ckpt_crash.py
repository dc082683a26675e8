#!/usr/bin/env python3
"""Torn checkpoints never load (issue 19): a writer saving real torch.save
checkpoints through gpuctl.Checkpointer(keep=3) is SIGKILLed at random
moments, KILLS times (default 200); after each kill, load_latest() must
return a checkpoint torch.load reads whole (its tensor matches its step),
and the newest committed one: the last step whose save() returned, or the
one after it when the kill came between the commit and the report. Stale
temporary files of killed writers are removed by the next Checkpointer.
And gpuctl.torch.setup_device on Debian's CPU-only PyTorch: the clear error,
an ordinal past what CUDA sees, the CPU fallback when asked.

Runs with Debian's python3-torch (/usr/bin/python3), installed by
tests/torch/torch-up.sh when missing; exits 77 (skip) when it cannot be.
Usage: ckpt_crash.py SRCDIR [KILLS]  (LD_LIBRARY_PATH, PYTHONPATH: meson)
"""
import os
import subprocess
import sys

TORCH_PY = "/usr/bin/python3"

WORKER = r'''
import os, random, signal, sys, time, torch, gpuctl
d, kills, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed)
errors, steps_seen = [], []
torch.set_num_threads(1)
for k in range(kills):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the writer: save, report, next step, until killed
        os.close(r)
        c = gpuctl.Checkpointer(d, keep=3, spot=None, signals=())
        last = c.load_latest()
        step = last["step"] + 1 if last else 0
        os.write(w, b"R\n")
        while True:
            c.save({"step": step, "w": torch.full((64, 1024), float(step))}, step=step)
            os.write(w, b"%d\n" % step)
            step += 1
    os.close(w)
    f = os.fdopen(r, "rb", buffering=0)
    assert f.readline() == b"R\n"
    time.sleep(rng.uniform(0, 0.04))
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    reported = [int(x) for x in f.read().split()]
    f.close()
    c = gpuctl.Checkpointer(d, keep=3, spot=None, signals=())
    path = c.latest()
    try:
        st = c.load_latest()
    except Exception as e:
        errors.append("kill %d: load_latest failed on %s: %r" % (k, path, e))
        continue
    if st is None:
        if reported or steps_seen:
            errors.append("kill %d: no checkpoint after step %s was committed" % (k, reported[-1:] or steps_seen[-1:]))
        continue
    s = st["step"]
    if not torch.equal(st["w"], torch.full((64, 1024), float(s))):
        errors.append("kill %d: checkpoint %s of step %d holds other data" % (k, path, s))
    newest = reported[-1] if reported else (steps_seen[-1] if steps_seen else -1)
    if s not in (newest, newest + 1):
        errors.append("kill %d: latest is step %d, but step %d was the newest committed" % (k, s, newest))
    steps_seen.append(s)
    # opening pruned what killed writers and prunes left: keep=3 complete (and whatever `latest`
    # names, which lags when kills came between commits' markers and their `latest`), at most one
    # uncommitted (the kill came between its rename and its commit), no prune's trash
    kept = [n for n in os.listdir(d) if n.startswith("ckpt-")]
    done = [e["name"] for e in c.list() if e.get("complete")]
    trash = [n for n in os.listdir(d) if n.startswith(".gpuctl-pruned.")]
    lag = os.path.exists(os.path.join(d, "latest")) and os.readlink(os.path.join(d, "latest")) not in sorted(done)[-3:]
    if len(done) > 3 + lag or len(kept) > len(done) + 1 or trash:
        errors.append("kill %d: more than keep=3 after opening: %s (complete: %s), trash %s"
                      % (k, sorted(kept), sorted(done), trash))
    c.close()
tmp = [n for n in os.listdir(d) if ".tmp-" in n]
if tmp:
    errors.append("temporary files of killed writers left behind: %s" % tmp)
print("%d kills, %d checkpoints committed in all, the last of step %d" % (kills, len(set(steps_seen)),
      steps_seen[-1] if steps_seen else -1))
print("\n".join(errors) if errors else "ok")
sys.exit(1 if errors else 0)
'''

DEVICE = r'''
import os, sys, torch, gpuctl, gpuctl.torch as gt
msgs = []
try:
    gt.setup_device(0, log=msgs.append)
    print("no error")
except gt.NoCuda as e:
    print("NoCuda:", e)
try:
    gt.setup_device(3, lease=False, log=msgs.append)
except gt.NoCuda as e:
    print("NoCuda again:", e)
dev = gt.setup_device(0, cpu_fallback=True, log=msgs.append)
print("device:", dev, "|", msgs[-1])
gt.release()
'''


def main():
    src = sys.argv[1]
    kills = sys.argv[2] if len(sys.argv) > 2 else "200"
    up = subprocess.run(["bash", os.path.join(src, "tests", "torch", "torch-up.sh"), TORCH_PY], capture_output=True,
                        text=True, timeout=900)
    if up.returncode != 0:
        msg = up.stderr.strip().splitlines()
        print("SKIP: " + (msg[-1] if msg else "torch-up.sh exit %d" % up.returncode))
        sys.exit(77 if up.returncode == 77 else 1)
    import tempfile
    work = tempfile.mkdtemp(prefix="gpuctl-ckpt-crash-")
    env = dict(os.environ, GPUCTL_STATE_DIR=os.path.join(work, "state"),
               GPUCTL_SIM=os.path.join(src, "examples", "nodes", "l4-2x.json"))
    env.pop("CUDA_VISIBLE_DEVICES", None)
    env.pop("GPUCTL_GPUS", None)
    failed = False
    p = subprocess.run([TORCH_PY, "-c", DEVICE], env=env, capture_output=True, text=True, timeout=300)
    out = p.stdout
    print(out.strip())
    want = ["NoCuda: PyTorch", "CPU-only build (torch.version.cuda is None); install a CUDA build of PyTorch, or pass "
            "cpu_fallback=True", "device: cpu | gpuctl:", "using the CPU, as cpu_fallback=True asks"]
    if p.returncode != 0 or any(w not in out for w in want) or "no error" in out:
        print("FAIL: setup_device: exit %d\n%s\n%s" % (p.returncode, out, p.stderr[-2000:]))
        failed = True
    d = os.path.join(work, "ckpt")
    os.makedirs(d)
    seed = int(os.environ.get("CKPT_CRASH_SEED", str(os.getpid())))
    p = subprocess.run([TORCH_PY, "-c", WORKER, d, kills, str(seed)], env=env, capture_output=True, text=True,
                       timeout=1200)
    print(p.stdout.strip())
    if p.returncode != 0:
        print("FAIL: torn checkpoints (seed %d): exit %d\n%s" % (seed, p.returncode, p.stderr[-3000:]))
        failed = True
    import shutil
    shutil.rmtree(work, ignore_errors=True)
    sys.exit(1 if failed else 0)


main()
