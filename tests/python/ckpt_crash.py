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

And the in-process spot watcher under torch.distributed: 2 ranks (gloo, CPU,
RANK/LOCAL_RANK as torchrun sets them) each with Checkpointer(spot="aws")
on the mock metadata server; rank 0 posts a preemption notice mid-run. Only
rank 0 watches (LOCAL_RANK 0) and commits; both ranks must read
should_stop True first at the same step, after the notice; rank 1's save()
returns None and writes nothing; the directory holds exactly one complete
checkpoint per save of rank 0.

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

# one rank of a 2-process gloo job: a step every 20 ms, should_stop read by every rank every step (one
# all_reduce), a save every 7 steps and at the stop; rank 0 posts the notice at step POST_AT
SPOT_RANK = r'''
import json, os, sys, time, urllib.request, torch, torch.distributed as dist, gpuctl
d, store, url, out, log = sys.argv[1:6]
rank = int(os.environ["RANK"])
torch.set_num_threads(1)
dist.init_process_group("gloo", init_method="file://" + store, rank=rank, world_size=2)

def save(state, path):
    with open(log, "a") as f:  # who wrote what: a write by rank 1 shows here whatever the file holds
        f.write("rank %d step %d\n" % (rank, state["step"]))
    torch.save(state, path)

c = gpuctl.Checkpointer(d, keep=1000, spot="aws", save=save, load=torch.load, suffix=".pt", signals=())
rec = {"rank": c.rank, "watcher": bool(c._spot), "stops": [], "saves": []}
POST_AT, EVERY, STEPS = int(sys.argv[6]), 7, 1500
for step in range(STEPS):
    time.sleep(0.02)
    if rank == 0 and step == POST_AT:
        urllib.request.urlopen(urllib.request.Request(url + "/_ctl/preempt?cloud=aws&in=120", method="POST"),
                               timeout=10).read()
    stop = c.should_stop
    rec["stops"].append(stop)
    if step % EVERY == 0 or stop:
        rec["saves"].append([step, c.save({"step": step, "rank": rank}, step=step)])
    if stop:
        break
rec["why"] = c.why
dist.barrier()
c.close()
dist.destroy_process_group()
with open(out, "w") as f:
    json.dump(rec, f)
'''


def spot_ranks(src, work, env):
    """SPOT_RANK on 2 ranks against the mock metadata server; the list of what went wrong"""
    import json
    import pickle
    import gpuctl
    post_at = 20
    d = os.path.join(work, "spot-ckpt")
    log = os.path.join(work, "spot-writes.log")
    mock = subprocess.Popen([sys.executable, os.path.join(src, "tests", "mock", "metadata.py"), "0"],
                            stdout=subprocess.PIPE, text=True)
    procs = []
    try:
        url = "http://127.0.0.1:%d" % int(mock.stdout.readline().split()[-1])
        for rank in (0, 1):
            e = dict(env, GPUCTL_METADATA_URL=url, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2",
                     LOCAL_WORLD_SIZE="2")
            procs.append(subprocess.Popen([TORCH_PY, "-c", SPOT_RANK, d, os.path.join(work, "spot-store"), url,
                                           os.path.join(work, "spot-rank%d.json" % rank), log, str(post_at)],
                                          env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        outs = [p.communicate(timeout=300) for p in procs]
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
        return ["the 2 ranks did not end within 300 s (one stopped, the other did not?)"]
    finally:
        mock.terminate()
        mock.wait(10)
        mock.stdout.close()
    errors = []
    for rank, (p, (out, err)) in enumerate(zip(procs, outs)):
        if p.returncode != 0:
            errors.append("rank %d: exit %d\n%s" % (rank, p.returncode, err[-3000:]))
    if errors:
        return errors
    recs = []
    for rank in (0, 1):
        with open(os.path.join(work, "spot-rank%d.json" % rank)) as f:
            recs.append(json.load(f))
    r0, r1 = recs
    if [r0["rank"], r1["rank"]] != [0, 1] or [r0["watcher"], r1["watcher"]] != [True, False]:
        errors.append("ranks %s, watchers %s: expected ranks 0 and 1, the spot watcher on rank 0 only"
                      % ([r0["rank"], r1["rank"]], [r0["watcher"], r1["watcher"]]))
    # both read should_stop the same number of times: False until one step, True there, on both
    first = [r["stops"].index(True) if True in r["stops"] else None for r in recs]
    if first[0] is None or first != [len(r0["stops"]) - 1, len(r1["stops"]) - 1] or r0["stops"] != r1["stops"]:
        errors.append("should_stop first True at steps %s of %s read (rank 0, rank 1): not together"
                      % (first, [len(r["stops"]) for r in recs]))
        return errors
    stop = first[0]
    if stop <= post_at:
        errors.append("stopped at step %d, not after the notice posted at step %d" % (stop, post_at))
    if not r0["why"].startswith("spot notice (aws") or r1["why"] != "another rank was asked to stop":
        errors.append("why: rank 0 %r, rank 1 %r" % (r0["why"], r1["why"]))
    saved = [s for s in range(stop + 1) if s % 7 == 0 or s == stop]
    names = ["ckpt-%09d.pt" % s for s in saved]
    if [s for s, _ in r1["saves"]] != saved or any(path is not None for _, path in r1["saves"]):
        errors.append("rank 1's save() returned %s: expected None for steps %s" % (r1["saves"], saved))
    if r0["saves"] != [[s, os.path.join(d, n)] for s, n in zip(saved, names)]:
        errors.append("rank 0's save() returned %s: expected the paths of steps %s" % (r0["saves"], saved))
    with open(log) as f:
        writes = f.read().split("\n")[:-1]
    if writes != ["rank 0 step %d" % s for s in saved]:
        errors.append("the serializer ran %s: expected rank 0 once for each of steps %s" % (writes, saved))
    # exactly one commit per save: every entry complete, none twice, nothing else (no temporary file)
    c = gpuctl.Checkpointer(d, keep=1000, spot=None, signals=(), save=pickle.dump, load=pickle.load, suffix=".pt")
    entries = c.list()
    complete = sorted(e["name"] for e in entries if e.get("complete"))
    if complete != names or len(entries) != len(names):
        errors.append("the directory's entries %s: expected %s, each complete once"
                      % ([(e["name"], e.get("complete")) for e in entries], names))
    if sorted(os.listdir(d)) != sorted(names + [".gpuctl", "latest"]):
        errors.append("the directory holds %s" % sorted(os.listdir(d)))
    if c.latest() != os.path.join(d, names[-1]):
        errors.append("latest is %s, not the stop's %s" % (c.latest(), names[-1]))
    c.close()
    if not errors:
        print("spot notice under torch.distributed: posted at step %d; both ranks stopped at step %d; rank 0 "
              "committed %d checkpoints, one per save; rank 1 none" % (post_at, stop, len(names)))
    return errors


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
    errors = spot_ranks(src, work, env)
    if errors:
        print("FAIL: the spot notice under torch.distributed:\n" + "\n".join(errors))
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
