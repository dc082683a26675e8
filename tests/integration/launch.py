#!/usr/bin/env python3
"""gpuctl launch on one node (issue 7), with a fake torchrun on PATH that
records its argv and environment (and binds its rendezvous port, as the
real one does):

  ports:        concurrent launches never share a rendezvous port;
  placeholders: {gpus}, {world_size}, {32*gpus} expand, {epoch} and '{"a": 1}'
                do not, --no-placeholders keeps every brace;
  bytes:        every argument reaches the script byte for byte;
  defaults:     the fail-fast variables are set, but never over the user's own;
  auto:         -n auto takes the free GPUs (a power of two, saying so when that
                leaves some) and leaves leased ones alone;
  launcher:     python3 -m torch.distributed.run when torchrun is not on PATH;
  release:      the GPUs are free again when torchrun exits, is killed, or
                when gpuctl itself is killed and then the job ends;
  step:         --slurm-step takes the node count, rank and job id from Slurm;
  script:       the --slurm --dry-run batch script, run by bash with fake srun
                and scontrol, hands the arguments to the step byte for byte,
                and requeues on TERM only while the job runs.
Usage: launch.py GPUCTL SRCDIR
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check  # noqa: E402

GPUCTL, SRC = sys.argv[1], sys.argv[2]
NODE = os.path.join(SRC, "tests", "cli", "nodes", "idle-8x.json")
work = tempfile.mkdtemp(prefix="gpuctl-launch-")
bindir = os.path.join(work, "bin")
os.makedirs(bindir)
rec = os.path.join(work, "rec")
os.makedirs(rec)

FAKE = r'''#!PYTHON
# fake torchrun: record argv and environment, hold the rendezvous port like
# the real c10d store, then sleep FAKE_SLEEP seconds and exit FAKE_EXIT.
# Like torchrun before 2.0 it knows only the underscore spellings of its
# options (--nproc_per_node, --rdzv_endpoint, ...), which later ones still accept.
import json, os, socket, sys, time
if sys.argv[1:2] == ["-c"]:  # as python3: gpuctl asking which PyTorch it has
    os.execv(sys.executable, [sys.executable] + sys.argv[1:])
port = None
opts = sys.argv[1:]
if "-m" in opts[:1]:
    opts = opts[2:]
bad = []
for a in opts:
    if not a.startswith("--"):
        break
    if "-" in a.split("=", 1)[0][2:]:
        bad.append(a)
    if a.startswith("--rdzv_endpoint="):
        port = int(a.rsplit(":", 1)[1])
if bad:
    sys.exit("torchrun: error: unrecognized arguments: " + " ".join(bad))
# torch < 2.0 on Python >= 3.11: the default --redirects 0 --tee 0 parse to None
if os.environ.get("FAKE_STD_BUG") == "1" and not ("--redirects=1" in opts and "--tee=1" in opts):
    sys.exit("AttributeError: 'NoneType' object has no attribute 'get'")
s = None
if port and os.environ.get("FAKE_BIND") == "1":
    s = socket.socket()
    s.bind(("0.0.0.0", port))
    s.listen()
out = os.path.join(os.environ["FAKE_REC"], "%d.json" % os.getpid())
with open(out + ".tmp", "w") as f:
    json.dump({"argv": sys.argv, "env": dict(os.environ)}, f)
os.rename(out + ".tmp", out)
time.sleep(float(os.environ.get("FAKE_SLEEP", "0")))
sys.exit(int(os.environ.get("FAKE_EXIT", "0")))
'''.replace("PYTHON", sys.executable)


def install(name, text=FAKE):
    p = os.path.join(bindir, name)
    with open(p, "w") as f:
        f.write(text)
    os.chmod(p, 0o755)
    return p


install("torchrun")
base_env = {k: v for k, v in os.environ.items()
            if not k.startswith(("GPUCTL_", "TORCH_", "NCCL_", "SLURM_")) or k in ("GPUCTL_SIM_LIBDIR", "GPUCTL_AUTHORITY_DIR")}
for k in ("CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS", "PYTORCH_CUDA_ALLOC_CONF"):
    base_env.pop(k, None)
base_env.update({"PATH": bindir + ":/usr/bin:/bin", "FAKE_REC": rec,
                 "GPUCTL_STATE_DIR": os.path.join(work, "state"),
                 "GPUCTL_SIM_RUNDIR": os.path.join(work, "rd")})


def records():
    out = []
    for n in sorted(os.listdir(rec)):
        if n.endswith(".json"):
            with open(os.path.join(rec, n)) as f:
                out.append(json.load(f))
            os.unlink(os.path.join(rec, n))
    return out


def launch(args, env=None, timeout=60, **kw):
    e = dict(base_env)
    e.update(env or {})
    return subprocess.run([GPUCTL, "--sim", NODE, "launch", *args], env=e, capture_output=True,
                          timeout=timeout, **kw)


def leased():
    p = subprocess.run([GPUCTL, "--sim", NODE, "leases", "--json"], env=base_env, capture_output=True,
                       text=True, timeout=30)
    return len(json.loads(p.stdout)["leases"]) if p.returncode == 0 else -1


def opt(argv, name):
    for a in argv:
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None


def tail(argv):
    """what follows the script in torchrun's argv"""
    i = argv.index("train.py")
    return argv[i + 1:]


# ---- ports: 8 concurrent launches of 1 GPU each, every one holding its port
procs = [subprocess.Popen([GPUCTL, "--sim", NODE, "launch", "-n", "1", "--", "train.py"],
                          env=dict(base_env, FAKE_SLEEP="2", FAKE_BIND="1"),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(8)]
outs = [p.communicate(timeout=60) for p in procs]
rs = records()
ports = [opt(r["argv"], "--rdzv_endpoint") for r in rs]
check("ports", all(p.returncode == 0 for p in procs),
      f"exits {[p.returncode for p in procs]}, stderr {[o[1][-200:] for o in outs]}")
check("ports", len(rs) == 8 and len(set(ports)) == 8, f"ports {ports}")
check("ports", all(p and p.startswith("127.0.0.1:") and p != "127.0.0.1:29500" for p in ports), f"{ports}")
check("ports", len({r["env"]["CUDA_VISIBLE_DEVICES"] for r in rs}) == 8,
      f"GPUs {[r['env']['CUDA_VISIBLE_DEVICES'] for r in rs]}")
print(f"ports: 8 concurrent launches got 8 different ports and 8 different GPUs")

# ---- the torchrun command line
p = launch(["-n", "2", "--", "train.py", "--bs", "{32*gpus}", "--ws={world_size}", "{gpus}x{nodes}",
            "{ 2 * gpus * 3 }", "{epoch}", "{0}", '{"lr": 1}', "{gpus", "{}", "{*gpus}", "{gpus*}"])
r = records()
check("argv", p.returncode == 0 and len(r) == 1, f"exit {p.returncode}, {p.stderr!r}")
if r:
    a = r[0]["argv"]
    i = a.index("train.py")
    check("argv", a[1:i] == ["--nnodes=1", "--nproc_per_node=2", "--rdzv_backend=c10d",
                            opt(a, "--rdzv_endpoint") and "--rdzv_endpoint=" + opt(a, "--rdzv_endpoint"),
                            "--rdzv_id=" + r[0]["env"]["GPUCTL_RUN_ID"]], f"options {a[1:i]}")
    check("placeholders", tail(a) == ["--bs", "64", "--ws=2", "2x1", "12", "{epoch}", "{0}", '{"lr": 1}',
                                      "{gpus", "{}", "{*gpus}", "{gpus*}"], f"{tail(a)}")
p = launch(["--gpus", "2,5", "--", "train.py", "{gpus}"])
r = records()
check("argv", p.returncode == 0 and r and r[0]["env"]["CUDA_VISIBLE_DEVICES"] == "2,5" and tail(r[0]["argv"]) == ["2"],
      f"--gpus 2,5: exit {p.returncode} {p.stderr!r}")
p = launch(["-n", "2", "--no-placeholders", "--", "train.py", "{32*gpus}", "{gpus}"])
r = records()
check("placeholders", p.returncode == 0 and r and tail(r[0]["argv"]) == ["{32*gpus}", "{gpus}"],
      f"--no-placeholders: {r and tail(r[0]['argv'])}")
p = launch(["-n", "1", "--", "train.py", "{99999999999*99999999999*gpus}"])
check("placeholders", p.returncode == 2 and b"too large" in p.stderr and not records(),
      f"overflow: exit {p.returncode} {p.stderr!r}")
print("placeholders: expanded after leasing, other braces untouched")

# ---- bytes
NASTY = ["a b", "'", '"', "$HOME", "`id`", "$(id)", "\\", "line1\nline2", "", " ", "*", "~", "\t",
         "-n", "--", "{", "é ü 漢字", "x=y", ";", "&&", "|", "#c", "!"]
p = launch(["-n", "1", "--", "train.py", *NASTY])
r = records()
check("bytes", p.returncode == 0 and r and tail(r[0]["argv"]) == NASTY,
      f"exit {p.returncode}: {r and tail(r[0]['argv'])}")
raw = [b"\xff\xfe", b"caf\xe9"]  # not UTF-8: still passed as they are
p = subprocess.run([GPUCTL.encode(), b"--sim", NODE.encode(), b"launch", b"-n", b"1", b"--", b"train.py", *raw],
                   env=base_env, capture_output=True, timeout=60)
r = records()
check("bytes", p.returncode == 0 and r and [os.fsencode(x) for x in tail(r[0]["argv"])] == raw,
      f"non-UTF-8: {r and tail(r[0]['argv'])}")
print(f"bytes: {len(NASTY) + len(raw)} awkward arguments arrived unchanged")



def fake_torch(version):
    """a PYTHONPATH directory with a torch package of this version that must not be imported"""
    d = os.path.join(work, "torch-" + version)
    os.makedirs(os.path.join(d, "torch"), exist_ok=True)
    with open(os.path.join(d, "torch", "__init__.py"), "w") as f:
        f.write("import os\nopen(os.path.join(os.environ['FAKE_REC'], 'imported'), 'w').close()\n"
                "raise SystemExit('torch imported')\n")
    with open(os.path.join(d, "torch", "version.py"), "w") as f:
        f.write(f"from typing import Optional\n__version__ = '{version}'\ndebug = False\n")
    return d


# ---- defaults
p = launch(["-n", "2", "--", "train.py"], env={"PYTHONPATH": fake_torch("2.4.1+cu121")})
r = records()
env = r[0]["env"] if r else {}
ncpu = len(os.sched_getaffinity(0))
want = {"TORCH_NCCL_ASYNC_ERROR_HANDLING": "1", "TORCH_NCCL_ENABLE_MONITORING": "1",
        "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC": "300", "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
        "OMP_NUM_THREADS": str(max(1, ncpu // 2)), "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
check("defaults", all(env.get(k) == v for k, v in want.items()),
      f"{ {k: env.get(k) for k in want} }")
mine = {"TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC": "1800", "PYTORCH_CUDA_ALLOC_CONF": "",
        "OMP_NUM_THREADS": "7", "NCCL_ASYNC_ERROR_HANDLING": "0", "TORCH_NCCL_ENABLE_MONITORING": "0"}
p = launch(["-n", "2", "--", "train.py"], env=mine)
r = records()
env = r[0]["env"] if r else {}
check("defaults", all(env.get(k) == v for k, v in mine.items()) and "TORCH_NCCL_ASYNC_ERROR_HANDLING" not in env,
      f"user settings overridden: { {k: env.get(k) for k in list(mine) + ['TORCH_NCCL_ASYNC_ERROR_HANDLING']} }")
p = launch(["--dry-run", "-n", "2", "--", "train.py", "a b"], env=mine)
check("defaults", p.returncode == 0 and b"OMP_NUM_THREADS" not in p.stdout and
      b"export CUDA_VISIBLE_DEVICES=" in p.stdout and p.stdout.rstrip().endswith(b"train.py 'a b'")
      and not records(), f"dry run: {p.stdout!r}")
print("defaults: set when absent, the user's own kept (even an empty one)")

# ---- the job's PyTorch, read from its files by the launcher's own Python (the fake's #! line), not imported
py311 = sys.version_info >= (3, 11)
for version, bug, expandable in (("1.13.0a0", py311, False), ("1.13.1+cu117", py311, False),
                                 ("2.0.1+cu118", False, False), ("2.1.0", False, True), ("2.4.1+cu121", False, True),
                                 (None, False, False)):
    e = {"FAKE_STD_BUG": "1" if bug else "0"}
    if version:
        e["PYTHONPATH"] = fake_torch(version)
    for launcher in ("torchrun", "python"):
        if launcher == "python":
            install("python3")
        name = f"torch {version} ({launcher})"
        p = launch(["-n", "2", "--launcher", launcher, "--", "train.py"], env=dict(e, PATH=bindir))
        r = records()
        if launcher == "python":
            os.unlink(os.path.join(bindir, "python3"))
        argv = r[0]["argv"] if r else []
        check(name, p.returncode == 0 and r, f"exit {p.returncode} {p.stderr!r}")
        check(name, ("--redirects=1" in argv and "--tee=1" in argv) == bug, f"argv {argv}")
        note = p.stderr.count(b"--redirects=1 --tee=1")
        check(name, note == (1 if bug else 0) and (not bug or f"PyTorch {version} on Python".encode() in p.stderr),
              f"stderr {p.stderr!r}")
        conf = r[0]["env"].get("PYTORCH_CUDA_ALLOC_CONF") if r else None
        check(name, conf == ("expandable_segments:True" if expandable else None), f"PYTORCH_CUDA_ALLOC_CONF={conf}")
        check(name, not os.path.exists(os.path.join(rec, "imported")), "the launcher imported torch")
# a restart runs the same command: the note is still said once
p = launch(["-n", "1", "--restart", "on-failure", "--max-restarts", "1", "--backoff", "1s", "--", "train.py"],
           env={"PYTHONPATH": fake_torch("1.13.0a0"), "FAKE_EXIT": "1", "FAKE_STD_BUG": "1" if py311 else "0"})
r = records()
check("torch restart", len(r) == 2 and p.stderr.count(b"--redirects=1 --tee=1") == (1 if py311 else 0),
      f"{len(r)} runs, stderr {p.stderr!r}")
print(f"torch: --redirects/--tee only for torch < 2.0 on Python >= 3.11 (here {py311}), said once; "
      "expandable_segments only from 2.1")

# ---- auto: one GPU is held by another job; of the 7 others auto takes 4, a power of two,
# and says so; with 4 held, the 4 others, silently
def hold(gpus, n):
    """another job's gpuctl run on these n GPUs, once it holds them"""
    h = subprocess.Popen([GPUCTL, "--sim", NODE, "run", "--gpus", gpus, "--", "sleep", "30"], env=base_env)
    for _ in range(100):
        if leased() == n:
            break
        time.sleep(0.05)
    return h


holder = hold("3", 1)
p = launch(["--", "train.py", "{gpus}"])
r = records()
gpus = r[0]["env"]["CUDA_VISIBLE_DEVICES"].split(",") if r else []
check("auto", p.returncode == 0 and len(gpus) == 4 and "3" not in gpus
      and tail(r[0]["argv"]) == ["4"] and opt(r[0]["argv"], "--nproc_per_node") == "4"
      and "-n auto: 7 GPUs are free; taking 4, a power of two" in p.stderr.decode(),
      f"exit {p.returncode}: {r and (r[0]['env']['CUDA_VISIBLE_DEVICES'], r[0]['argv'])} {p.stderr!r}")
holder.terminate()
holder.wait(timeout=30)
holder = hold("0,2,4,6", 4)
p = launch(["--", "train.py", "{gpus}"])
r = records()
check("auto", p.returncode == 0 and r and r[0]["env"]["CUDA_VISIBLE_DEVICES"] == "1,3,5,7"
      and b"power of two" not in p.stderr, f"exit {p.returncode}: {r and r[0]['env']['CUDA_VISIBLE_DEVICES']} {p.stderr!r}")
holder.terminate()
holder.wait(timeout=30)
print("auto: the free GPUs, none of the leased, as a power of two")

# ---- launcher fallback and status
os.unlink(os.path.join(bindir, "torchrun"))
install("python3")
# PATH without /usr/bin: a real torchrun there (python3-torch) must not be the one found
p = launch(["-n", "1", "--", "train.py"], env={"FAKE_EXIT": "3", "PATH": bindir})
r = records()
check("launcher", p.returncode == 3 and r and r[0]["argv"][1:3] == ["-m", "torch.distributed.run"],
      f"exit {p.returncode}: {r and r[0]['argv'][:4]}")
p = launch(["-n", "1", "--launcher", "torchrun", "--", "train.py"], env={"PATH": bindir})  # no real one either
check("launcher", p.returncode == 127 and b"cannot run 'torchrun'" in p.stderr, f"{p.returncode} {p.stderr!r}")
os.unlink(os.path.join(bindir, "python3"))
p = launch(["-n", "1", "--", "train.py"], env={"PATH": bindir})
check("launcher", p.returncode == 1 and b"python3 nor python is on PATH" in p.stderr, f"{p.returncode} {p.stderr!r}")
install("torchrun")
print("launcher: torchrun, else python3 -m torch.distributed.run; status passed through")
check("release", leased() == 0, "GPUs still leased after the launches ended")

# ---- release when torchrun is killed, and when gpuctl is killed
def start():
    """a 4-GPU launch whose torchrun sleeps, once torchrun has started"""
    p = subprocess.Popen([GPUCTL, "--sim", NODE, "launch", "-n", "4", "--", "train.py"],
                         env=dict(base_env, FAKE_SLEEP="30"), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    for _ in range(200):
        if any(n.endswith(".json") for n in os.listdir(rec)):
            break
        time.sleep(0.05)
    records()
    return p


def kill_torchrun():
    out = subprocess.run(["pgrep", "-f", bindir + "/torchrun"], capture_output=True, text=True).stdout
    for pid in out.split():
        os.kill(int(pid), signal.SIGKILL)


p = start()
check("release", leased() == 4, f"{leased()} GPUs leased while the job runs")
kill_torchrun()
p.wait(timeout=30)
check("release", p.returncode == 137, f"torchrun killed: exit {p.returncode}")
check("release", leased() == 0, "GPUs leased after torchrun was killed")
p = start()
p.send_signal(signal.SIGTERM)
p.wait(timeout=30)
check("release", p.returncode == 143 and leased() == 0, f"gpuctl TERM: exit {p.returncode}, {leased()} leased")
p = start()
p.kill()  # the job goes on and keeps its GPUs until it ends
p.wait(timeout=30)
n = leased()
check("release", n == 4, f"{n} leased while the orphaned job runs ({subprocess.run(['pgrep', '-af', 'torchrun'], capture_output=True, text=True).stdout!r})")
kill_torchrun()
for _ in range(100):
    if leased() == 0:
        break
    time.sleep(0.05)
check("release", leased() == 0, "GPUs leased after the orphaned job ended")
print("release: on exit, on kill, and after gpuctl itself was killed")

# ---- --slurm-step
p = launch(["--slurm-step", "--rdzv-endpoint=node1:12345", "-n", "2", "--", "train.py", "{world_size}"],
           env={"SLURM_JOB_ID": "4242", "SLURM_NNODES": "3", "SLURM_NODEID": "2"})
r = records()
check("step", p.returncode == 0 and r, f"exit {p.returncode} {p.stderr!r}")
if r:
    a = r[0]["argv"]
    check("step", a[1:a.index("train.py")] == ["--nnodes=3", "--nproc_per_node=2", "--node_rank=2",
                                                "--rdzv_backend=c10d", "--rdzv_endpoint=node1:12345",
                                                "--rdzv_id=4242"], f"{a}")
    check("step", tail(a) == ["6"] and r[0]["env"]["GPUCTL_RUN_ID"] == "slurm-4242", f"{tail(a)}")
p = launch(["--slurm-step", "--rdzv-endpoint=node1:12345", "-n", "2", "--", "train.py"])
check("step", p.returncode == 2 and b"SLURM_JOB_ID is not set" in p.stderr, f"{p.returncode} {p.stderr!r}")
print("step: nodes, rank and job id from Slurm")

# ---- the batch script, run by bash with a fake srun and scontrol
FAKE_SRUN = r'''#!PYTHON
import json, os, signal, sys, time
with open(os.path.join(os.environ["FAKE_REC"], "srun.json"), "w") as f:
    json.dump({"argv": sys.argv, "env": dict(os.environ)}, f)
signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))
time.sleep(float(os.environ.get("FAKE_SLEEP", "0")))
'''.replace("PYTHON", sys.executable)
FAKE_SCONTROL = r'''#!/bin/sh
echo "$@" >> "$FAKE_REC/scontrol.log"
case "$1 $2" in
"show hostnames") printf 'gpu-a\ngpu-b\n' ;;
"show job") echo "JobId=$3 JobName=x JobState=${FAKE_STATE:-RUNNING} Reason=None" ;;
esac
'''
FAKE_SCANCEL = r'''#!/bin/sh
echo "scancel $@" >> "$FAKE_REC/scontrol.log"
pkill -TERM -f "$(dirname "$0")/srun"
'''
install("srun", FAKE_SRUN)
install("scontrol", FAKE_SCONTROL)
install("scancel", FAKE_SCANCEL)
p = launch(["--slurm", "--dry-run", "--nodes", "2", "--gpus-per-node", "4", "--partition", "gpu",
            "--time", "1:00:00", "--checkpoint-dir", "/ck dir", "--", "train.py", *NASTY])
check("script", p.returncode == 0 and p.stdout.startswith(b"#!/bin/bash\n"), f"{p.returncode} {p.stderr!r}")
script = os.path.join(work, "job.sh")
with open(script, "wb") as f:
    f.write(p.stdout)
for line in (b"#SBATCH --nodes=2", b"#SBATCH --gpus-per-node=4", b"#SBATCH --requeue",
             b"#SBATCH --signal=B:TERM@120", b"#SBATCH --partition=gpu", b"#SBATCH --time=1:00:00",
             b"export CUDA_DEVICE_ORDER=PCI_BUS_ID"):
    check("script", line + b"\n" in p.stdout, f"no {line!r} line")
senv = dict(base_env, SLURM_JOB_ID="777", SLURM_JOB_NODELIST="gpu-[a-b]")
q = subprocess.run(["bash", script], env=senv, capture_output=True, timeout=60)
with open(os.path.join(rec, "srun.json")) as f:
    s = json.load(f)
os.unlink(os.path.join(rec, "srun.json"))
a = s["argv"]
i = a.index("--")
check("script", q.returncode == 0, f"script exit {q.returncode} {q.stderr!r}")
check("script", a[i + 1:] == ["train.py", *NASTY], f"step got {a[i + 1:]}")
check("script", a[1:i] == ["--ntasks-per-node=1", "--kill-on-bad-exit=1", os.path.realpath(GPUCTL), "launch",
                           "--slurm-step", "--rdzv-endpoint=gpu-a:10777", "--checkpoint-dir=/ck dir", "-n", "4"],
      f"srun argv {a[1:i]}")
check("script", s["env"].get("CUDA_DEVICE_ORDER") == "PCI_BUS_ID", "CUDA_DEVICE_ORDER not exported")
os.unlink(os.path.join(rec, "scontrol.log"))


def term_script(extra, slurm_kills=False):
    """TERM to the batch shell while the fake srun sleeps; with slurm_kills,
    also TERM to srun, as Slurm does when it cancels or requeues a job"""
    sp = subprocess.Popen(["bash", script], env=dict(senv, FAKE_SLEEP="30", **extra),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    for _ in range(200):
        if os.path.exists(os.path.join(rec, "srun.json")):
            break
        time.sleep(0.05)
    os.unlink(os.path.join(rec, "srun.json"))
    sp.send_signal(signal.SIGTERM)
    if slurm_kills:
        time.sleep(0.3)
        subprocess.run(["pkill", "-TERM", "-f", bindir + "/srun"])
    sp.communicate(timeout=30)
    with open(os.path.join(rec, "scontrol.log")) as f:
        log = f.read()
    os.unlink(os.path.join(rec, "scontrol.log"))
    return sp.returncode, log


rc, log = term_script({})
check("script", "scancel --signal=TERM 777" in log and "requeue 777" in log and rc == 143,
      f"TERM while running: exit {rc}, scontrol {log!r}")
rc, log = term_script({"FAKE_STATE": "CANCELLED"}, slurm_kills=True)
check("script", "requeue" not in log and "scancel" not in log, f"TERM after scancel requeued or signalled: {log!r}")
rc, log = term_script({"SLURM_RESTART_COUNT": "3"})
check("script", "requeue" not in log, f"requeued past --max-restarts: {log!r}")
print("script: arguments byte for byte through bash and srun; requeue on TERM only while running")

harness.finish(work=work)
