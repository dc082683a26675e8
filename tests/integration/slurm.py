#!/usr/bin/env python3
"""gpuctl launch --slurm against a real Slurm (issue 7): slurmctld + slurmd
on localhost, started by tests/slurm/slurm-up.sh (installed with apt-get
when missing), GRES gpu on four stand-in device files, the simulated node
standing in for NVML and a fake torchrun that records what it got.

  run:      a generated job runs; torchrun sees CUDA_VISIBLE_DEVICES=0,1 and
            --nnodes/--node_rank/--rdzv_* from the allocation; the arguments
            arrive byte for byte and placeholders are expanded on the node;
  requeue:  after `scontrol requeue` the job comes back with
            SLURM_RESTART_COUNT=1 and GPUCTL_RESUME_FROM = its checkpoint;
  signal:   TERM to the batch shell while the job runs (as --signal=B:TERM
            sends before the time limit) requeues it the same way;
  follow:   --follow streams the output and exits with the job's status;
  doctor:   gpuctl slurm doctor finds client, controller, GPU partition and
            a gres.conf with File=.
Skips (exit 77, with the reason) only when Slurm cannot be started here.
Usage: slurm.py GPUCTL SRCDIR
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
from harness import check, until, until_value  # noqa: E402

GPUCTL, SRC = os.path.realpath(sys.argv[1]), sys.argv[2]
NODE = os.path.join(SRC, "tests", "cli", "nodes", "idle-8x.json")
work = tempfile.mkdtemp(prefix="gpuctl-slurm-")
os.chmod(work, 0o755)
cluster = os.path.join(work, "cluster")
up = subprocess.run(["bash", os.path.join(SRC, "tests", "slurm", "slurm-up.sh"), cluster],
                    capture_output=True, text=True, timeout=300)
if up.returncode != 0:
    msg = up.stderr.strip().splitlines()
    print("SKIP: Slurm cannot be started here: " + (msg[0] if msg else f"slurm-up.sh exit {up.returncode}"))
    print(up.stderr[-3000:])
    sys.exit(77 if up.returncode == 77 else 1)
conf = up.stdout.strip().split("=", 1)[1]

bindir = os.path.join(work, "bin")
rec = os.path.join(work, "rec")
ck = os.path.join(work, "ck")
for d in (bindir, rec, ck):
    os.makedirs(d)
FAKE = r'''#!PYTHON
# fake torchrun: record, then behave like a job with checkpoints. Attempt 0
# commits a checkpoint and runs until it is stopped; a later attempt ends.
import json, os, signal, subprocess, sys, time
attempt = os.environ.get("SLURM_RESTART_COUNT", "0")
job = os.environ.get("SLURM_JOB_ID", "?")
out = os.path.join(os.environ["FAKE_REC"], "%s-%s.json" % (job, attempt))
with open(out + ".tmp", "w") as f:
    json.dump({"argv": sys.argv, "env": dict(os.environ)}, f)
os.rename(out + ".tmp", out)
print("fake torchrun attempt", attempt, "resume", os.environ.get("GPUCTL_RESUME_FROM", "-"), flush=True)
if os.environ.get("FAKE_MODE") == "quick":
    sys.exit(int(os.environ.get("FAKE_EXIT", "0")))
ck = os.environ["GPUCTL_CHECKPOINT_DIR"]
if attempt == "0":
    step = os.path.join(ck, "job%s-step-100" % job)
    os.makedirs(step, exist_ok=True)
    with open(os.path.join(step, "model.pt"), "w") as f:
        f.write("weights")
    subprocess.run([os.environ["FAKE_GPUCTL"], "ckpt", "commit", ck, step], check=True)
    open(out + ".committed", "w").close()
    def stop(*a):
        open(out + ".term", "w").close()  # stopped gracefully, not killed
        sys.exit(143)
    signal.signal(signal.SIGTERM, stop)
    time.sleep(300)
sys.exit(0)
'''.replace("PYTHON", sys.executable)
with open(os.path.join(bindir, "torchrun"), "w") as f:
    f.write(FAKE)
os.chmod(os.path.join(bindir, "torchrun"), 0o755)

env = {k: v for k, v in os.environ.items()
       if not k.startswith(("GPUCTL_", "SLURM_", "TORCH_")) or k in ("GPUCTL_SIM_LIBDIR", "GPUCTL_AUTHORITY_DIR")}
env.pop("CUDA_VISIBLE_DEVICES", None)
env.update({"SLURM_CONF": conf, "PATH": bindir + ":" + os.environ.get("PATH", "/usr/bin:/bin") + ":/usr/sbin:/sbin",
            "FAKE_REC": rec, "FAKE_GPUCTL": GPUCTL, "GPUCTL_SIM": NODE,
            "GPUCTL_STATE_DIR": os.path.join(work, "state"), "GPUCTL_SIM_RUNDIR": os.path.join(work, "rd")})


def gpuctl(*args, timeout=120, **kw):
    return subprocess.run([GPUCTL, *args], env=dict(env, **kw.pop("extra", {})), capture_output=True,
                          text=True, timeout=timeout, **kw)


def wait_for(path, secs):
    """whether path exists, within secs"""
    return until(lambda: os.path.exists(path), secs, step=0.2)


def job_field(job, key):
    p = subprocess.run(["scontrol", "show", "job", "-o", job], env=env, capture_output=True, text=True)
    m = re.search(r"(?:^| )" + key + r"=(\S+)", p.stdout)
    return m.group(1) if m else None


def wait_state(job, states, secs):
    """the job's state once it is one of states, within secs; else the state it was last in"""
    return until_value(lambda: job_field(job, "JobState"), lambda s: s in states, secs, step=0.3)


def load(job, attempt):
    with open(os.path.join(rec, f"{job}-{attempt}.json")) as f:
        return json.load(f)


def submit(*extra, args=("train.py",), fake=None):
    """a job with its own checkpoint directory; its id"""
    mine = tempfile.mkdtemp(dir=ck)
    p = gpuctl("launch", "--slurm", "--gpus-per-node", "2", "--checkpoint-dir", mine,
               "--output", os.path.join(work, "out-%j.log"), *extra, "--", *args, extra=fake or {})
    check("submit", p.returncode == 0 and p.stdout.strip().isdigit(), f"exit {p.returncode}: {p.stderr!r}")
    return p.stdout.strip(), mine


try:
    NASTY = ["a b", "'", '"', "$HOME", "`id`", "\\", "x\ny", "", "*", "{epoch}"]
    # ---- run + requeue
    t0 = time.monotonic()
    job, jck = submit(args=("train.py", "--bs", "{32*gpus}", "--ws={world_size}", *NASTY))
    first = os.path.join(rec, f"{job}-0.json")
    if check("run", wait_for(first + ".committed", 90), f"job {job} never started: {job_field(job, 'JobState')} "
                                                         f"{job_field(job, 'Reason')}"):
        started = time.monotonic() - t0
        r = load(job, 0)
        a = r["argv"]
        i = a.index("train.py")
        port = 10000 + int(job) % 20000
        want = ["--nnodes=1", "--nproc_per_node=2", "--node_rank=0", "--rdzv_backend=c10d",
                f"--rdzv_endpoint={os.uname().nodename}:{port}", f"--rdzv_id={job}"]
        check("run", a[1:i] == want, f"torchrun options {a[1:i]}, want {want}")
        check("run", a[i + 1:] == ["--bs", "64", "--ws=2", *NASTY], f"arguments {a[i + 1:]}")
        e = r["env"]
        check("run", e.get("CUDA_VISIBLE_DEVICES") == "0,1" and e.get("SLURM_JOB_GPUS") == "0,1",
              f"CUDA_VISIBLE_DEVICES={e.get('CUDA_VISIBLE_DEVICES')} SLURM_JOB_GPUS={e.get('SLURM_JOB_GPUS')}")
        check("run", e.get("CUDA_DEVICE_ORDER") == "PCI_BUS_ID" and e.get("TORCH_NCCL_ASYNC_ERROR_HANDLING") == "1",
              "defaults missing in the job")
        check("run", "GPUCTL_RESUME_FROM" not in e, "attempt 0 resumes from something")
        print(f"run: job {job} started in {started:.1f}s; CUDA_VISIBLE_DEVICES=0,1, rendezvous port {port}")
        t1 = time.monotonic()
        q = subprocess.run(["scontrol", "requeue", job], env=env, capture_output=True, text=True)
        check("requeue", q.returncode == 0, f"scontrol requeue: {q.stderr!r}")
        if check("requeue", wait_for(os.path.join(rec, f"{job}-1.json"), 120),
                 f"not back after requeue: {job_field(job, 'JobState')} {job_field(job, 'Reason')}"):
            back = time.monotonic() - t1
            r1 = load(job, 1)
            check("requeue", r1["env"].get("SLURM_RESTART_COUNT") == "1", f"{r1['env'].get('SLURM_RESTART_COUNT')}")
            check("requeue", r1["env"].get("GPUCTL_RESUME_FROM") == os.path.join(jck, f"job{job}-step-100"),
                  f"GPUCTL_RESUME_FROM={r1['env'].get('GPUCTL_RESUME_FROM')}")
            st = wait_state(job, ("COMPLETED", "FAILED", "CANCELLED"), 60)
            check("requeue", st == "COMPLETED", f"state {st}")
            print(f"requeue: back {back:.1f}s after scontrol requeue with SLURM_RESTART_COUNT=1, "
                  f"resumed from its checkpoint; {st}")

    # ---- TERM to the batch shell while running (the --signal=B:TERM@120 path)
    job, jck = submit()
    if check("signal", wait_for(os.path.join(rec, f"{job}-0.json.committed"), 90), f"job {job} never started"):
        t1 = time.monotonic()
        q = subprocess.run(["scancel", "--signal=TERM", "--batch", job], env=env, capture_output=True, text=True)
        check("signal", q.returncode == 0, f"scancel: {q.stderr!r}")
        if check("signal", wait_for(os.path.join(rec, f"{job}-1.json"), 120),
                 f"not requeued after TERM: {job_field(job, 'JobState')}"):
            r1 = load(job, 1)
            check("signal", r1["env"].get("SLURM_RESTART_COUNT") == "1" and
                  r1["env"].get("GPUCTL_RESUME_FROM") == os.path.join(jck, f"job{job}-step-100"),
                  f"{r1['env'].get('SLURM_RESTART_COUNT')} {r1['env'].get('GPUCTL_RESUME_FROM')}")
            check("signal", os.path.exists(os.path.join(rec, f"{job}-0.json.term")),
                  "torchrun was killed, not sent TERM to checkpoint")
            st = wait_state(job, ("COMPLETED", "FAILED", "CANCELLED"), 60)
            check("signal", st == "COMPLETED", f"state {st}")
            print(f"signal: TERM to the batch shell requeued the job; back in {time.monotonic() - t1:.1f}s; {st}")

    # ---- --follow
    p = gpuctl("launch", "--slurm", "--gpus-per-node", "1", "--output", os.path.join(work, "follow-%j.log"),
               "--follow", "--", "train.py", extra={"FAKE_MODE": "quick", "FAKE_EXIT": "3"}, timeout=180)
    check("follow", p.returncode == 3 and "fake torchrun attempt 0" in p.stdout and
          re.search(r"job \d+: FAILED", p.stderr),
          f"exit {p.returncode}, stdout {p.stdout!r}, stderr {p.stderr!r}")
    print("follow: output streamed, the job's status returned")

    # ---- gpuctl slurm doctor on this cluster
    p = gpuctl("slurm", "doctor", "--json")
    d = json.loads(p.stdout) if p.stdout.startswith("{") else {"checks": []}
    st = {c["id"]: c["status"] for c in d["checks"]}
    check("doctor", p.returncode == 0 and all(st.get(k) == "ok" for k in
          ("slurm.client", "slurm.controller", "slurm.gpu_partitions", "slurm.gres_conf")), f"{st} {p.stderr!r}")
    print("doctor: " + ", ".join(f"{k} {v}" for k, v in st.items()))
finally:
    subprocess.run(["bash", os.path.join(SRC, "tests", "slurm", "slurm-down.sh"), cluster],
                   capture_output=True, timeout=60)


def logs():
    for f in sorted(os.listdir(work)):
        if f.endswith(".log"):
            print(f"==> {f} <==")
            print(open(os.path.join(work, f), errors="replace").read()[-2000:])


harness.finish(work=work, on_fail=logs)
