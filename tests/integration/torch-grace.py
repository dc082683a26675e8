#!/usr/bin/env python3
"""torchrun's workers get the whole grace period under gpuctl launch (issue 23),
with Debian's real torchrun (python3-torch, installed by tests/torch/torch-up.sh
when missing; skip 77 when it cannot be).

A worker that, on SIGTERM, takes 45 s to write its checkpoint:
  control: torchrun alone, SIGTERM to torchrun (what a plain `kill` or a
           supervisor signalling its process group does): its agent forwards it
           and SIGKILLs the workers 30 s later (torch elastic's PContext.close
           timeout): no checkpoint. This is the bug, shown on the real thing;
  gpuctl:  `gpuctl launch -n 2 --cloud aws` under a mock AWS metadata service
           that posts a notice two minutes ahead: both workers write their
           checkpoints (45 s after the notice), gpuctl says it signalled the
           workers, not the launcher. Before the notice, a rebalance
           recommendation with --on-warning USR1 reaches the workers and leaves
           torchrun (whose agent a SIGUSR1 would kill) running.
Takes about 90 s. Usage: torch-grace.py GPUCTL SRCDIR
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, until  # noqa: E402
from torchup import PY, torch_up, torchrun_alone  # noqa: E402

GPUCTL, SRC = os.path.realpath(sys.argv[1]), sys.argv[2]
NODE = os.path.join(SRC, "tests", "cli", "nodes", "idle-8x.json")
SAVE_S = 45

TORCH, PYVER, TORCHRUN = torch_up(SRC)
torchrun_alone()
if not TORCHRUN:
    print("FAIL: python3-torch is installed but /usr/bin/torchrun is not")
    sys.exit(1)
# PyTorch < 2.0 on Python >= 3.11 needs --redirects/--tee (tests/integration/torch.py)
STD = ["--redirects=1", "--tee=1"] if tuple(int(x) for x in TORCH.split(".")[:2]) < (2, 0) and PYVER >= (3, 11) else []

WORKER = r'''
import os, signal, sys, time
out, save = sys.argv[1], float(sys.argv[2])
rank = os.environ.get("RANK", "?")
stop = []
signal.signal(signal.SIGTERM, lambda *_: stop.append(time.monotonic()))
signal.signal(signal.SIGUSR1, lambda *_: open(os.path.join(out, "warned-" + rank), "w").close())
open(os.path.join(out, "ready-" + rank), "w").close()
while not stop:
    time.sleep(0.05)
time.sleep(save)                        # the checkpoint: written after `save` seconds
with open(os.path.join(out, "committed-" + rank), "w") as f:
    f.write("%.1f" % (time.monotonic() - stop[0]))
'''

def wait_for(paths, timeout):
    """whether all the paths exist, within timeout seconds"""
    return until(lambda: all(os.path.exists(p) for p in paths), timeout)


def main():
    work = tempfile.mkdtemp(prefix="gpuctl-grace-")
    script = os.path.join(work, "worker.py")
    with open(script, "w") as f:
        f.write(WORKER)
    mock = None
    try:
        # control: the real torchrun, SIGTERM to torchrun
        out = os.path.join(work, "control")
        os.mkdir(out)
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPUCTL_") or k == "GPUCTL_AUTHORITY_DIR"}
        t = subprocess.Popen([TORCHRUN, "--nnodes=1", "--nproc_per_node=2", "--rdzv_backend=c10d",
                              "--rdzv_endpoint=127.0.0.1:0", *STD, script, out, str(SAVE_S)],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             start_new_session=True)
        check("control: workers not up", wait_for([os.path.join(out, "ready-0"), os.path.join(out, "ready-1")], 60))
        t0 = time.monotonic()
        os.kill(t.pid, signal.SIGTERM)
        try:
            tout = t.communicate(timeout=SAVE_S + 30)[0]
        except subprocess.TimeoutExpired:
            os.killpg(t.pid, signal.SIGKILL)
            tout = t.communicate()[0]
        took = time.monotonic() - t0
        committed = [n for n in os.listdir(out) if n.startswith("committed-")]
        print(f"control: torch {TORCH}, torchrun ended {took:.1f} s after its SIGTERM; checkpoints written: "
              f"{len(committed)} of 2")
        check("control: expected torchrun to SIGKILL the workers before their "
              f"{SAVE_S} s checkpoint (it did not: {committed}, {took:.1f} s); the test's premise is gone",
              not committed and took < SAVE_S)

        # gpuctl launch, a notice two minutes ahead from the mock metadata service
        mock = subprocess.Popen([sys.executable, os.path.join(SRC, "tests", "mock", "metadata.py"), "0"],
                                stdout=subprocess.PIPE, text=True)
        base = "http://127.0.0.1:%d" % int(mock.stdout.readline().split()[-1])
        out = os.path.join(work, "gpuctl")
        os.mkdir(out)
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPUCTL_") or k in ("GPUCTL_SIM_LIBDIR", "GPUCTL_AUTHORITY_DIR")}
        env.pop("CUDA_VISIBLE_DEVICES", None)
        env.update({"GPUCTL_STATE_DIR": os.path.join(work, "state"), "GPUCTL_SIM_RUNDIR": os.path.join(work, "rd"),
                    "GPUCTL_METADATA_URL": base, "PATH": "/usr/bin:/bin"})
        g = subprocess.Popen([GPUCTL, "--sim", NODE, "launch", "-n", "2", "--cloud", "aws", "--poll", "0.2",
                              "--on-warning", "USR1", "--", script, out, str(SAVE_S)], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        check("gpuctl: workers not up", wait_for([os.path.join(out, "ready-0"), os.path.join(out, "ready-1")], 60))
        # first a rebalance recommendation: the workers get SIGUSR1, torchrun (which would die of it) nothing
        urllib.request.urlopen(urllib.request.Request(base + "/_ctl/warning?cloud=aws", method="POST"),
                               timeout=5).read()
        check("gpuctl: the workers did not get --on-warning's SIGUSR1",
              wait_for([os.path.join(out, "warned-0"), os.path.join(out, "warned-1")], 20))
        time.sleep(1)
        check("gpuctl launch ended after a warning: %r" % (g.poll(),), g.poll() is None)
        urllib.request.urlopen(urllib.request.Request(base + "/_ctl/preempt?cloud=aws&in=120", method="POST"),
                               timeout=5).read()
        t0 = time.monotonic()
        try:
            gout, gerr = g.communicate(timeout=110)
        except subprocess.TimeoutExpired:
            g.kill()
            gout, gerr = g.communicate()
            harness.fail("gpuctl launch did not end within 110 s of the notice")
        took = time.monotonic() - t0
        committed = sorted(n for n in os.listdir(out) if n.startswith("committed-"))
        print(f"gpuctl launch: ended {took:.1f} s after the notice; checkpoints written: {committed}")
        check(f"gpuctl: checkpoints {committed}, expected both (stderr: {gerr[-600:]!r})",
              committed == ["committed-0", "committed-1"])
        check(f"gpuctl: ended {took:.1f} s after the notice, before the {SAVE_S} s checkpoint", took >= SAVE_S - 1)
        check(f"gpuctl did not say it signalled the workers: {gerr[-600:]!r}", "not to its launcher" in gerr)
    finally:
        if mock:
            mock.terminate()
            mock.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)
    harness.finish("ok")


if __name__ == "__main__":
    main()
