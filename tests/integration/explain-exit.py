#!/usr/bin/env python3
"""A failed job explains itself (issue 24, part 1): gpuctl run and gpuctl
launch keep the last MiB of the job's output and, when it fails, print what
gpuctl explain finds in it, once, after the job's own output, on stderr.

- run, stderr a pipe: a job printing a PyTorch OOM (fragmentation) and
  exiting 1: its stdout and stderr unchanged, then the block with the class
  (pytorch-oom), its numbers and the fix; exit status 1.
- run, output to one file (>f 2>&1): the same block, in the file after the
  job's lines, and nothing from before the job counted.
- nothing extra: a job that succeeds after printing the OOM text, a failure
  nothing recognises, --no-explain.
- what the job sees: a pipe is still a pipe, a file still a file, a
  terminal still a terminal (tmux: isatty, the window size, and a \\r
  progress bar rendered the same with and without capture).
- a reader that goes away: `gpuctl run -- yes | head -1` ends (yes gets
  SIGPIPE, 141), gpuctl is not killed by it.
- launch: a fake torchrun whose worker prints an NCCL watchdog timeout and
  exits 1: explained as nccl-timeout.
- retries (--retry-on): oom-fragmentation again with expandable_segments
  merged into the user's PYTORCH_CUDA_ALLOC_CONF (max_split_size_mb where
  PyTorch refuses it), nccl-timeout and oom-other-process on other GPUs,
  oom-too-big with --bigger
  on a GPU with the memory it needed, --max-restarts bounding it (also with
  stdout and stderr on /dev/null: the tail is kept then), a class
  not listed not retried.
Usage: explain-exit.py GPUCTL SRCDIR
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check  # noqa: E402

GPUCTL, SRC = os.path.realpath(sys.argv[1]), os.path.realpath(sys.argv[2])
NODE = os.path.join(SRC, "tests", "cli", "nodes", "idle-8x.json")
harness.verbose = True  # "ok   name" or "FAIL name" as each check is made
OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
       "79.10 GiB of which 1.50 GiB is free. Including non-PyTorch memory, this process has 77.58 GiB memory in use. "
       "Of the allocated memory 70.12 GiB is allocated by PyTorch, and 6.89 GiB is reserved by PyTorch but "
       "unallocated. If reserved but unallocated memory is large try setting "
       "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.")
NCCL = ("[rank1]:[E1122 07:41:09.123456 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600045 "
        "milliseconds before timing out.")


work = tempfile.mkdtemp(prefix="gpuctl-explain-exit-")
env = {k: v for k, v in os.environ.items() if not k.startswith("GPUCTL_") or k in ("GPUCTL_SIM_LIBDIR", "GPUCTL_AUTHORITY_DIR")}
env.pop("CUDA_VISIBLE_DEVICES", None)
env.update({"GPUCTL_STATE_DIR": os.path.join(work, "state"), "GPUCTL_SIM_RUNDIR": work,
            "PATH": os.path.join(work, "bin") + ":" + os.environ.get("PATH", "/usr/bin:/bin")})
os.makedirs(os.path.join(work, "bin"))
oomjob = os.path.join(work, "oom.sh")
with open(oomjob, "w") as f:
    f.write(f"#!/bin/sh\necho 'epoch 1 step 10 loss 2.31'\necho 'Traceback (most recent call last):' >&2\n"
            f"echo '{OOM}' >&2\nexit ${{1:-1}}\n")
os.chmod(oomjob, 0o755)


def run(*args, **kw):
    return subprocess.run([GPUCTL, "--sim", NODE, "run", *args], env=env, capture_output=True, text=True,
                          timeout=60, **kw)


try:
    # run, pipes
    r = run("--", oomjob)
    err = r.stderr
    block = err.find("gpuctl: the job failed (exit status 1)")
    check("run: exit status 1, stdout unchanged", r.returncode == 1 and r.stdout == "epoch 1 step 10 loss 2.31\n",
          (r.returncode, r.stdout))
    check("run: the job's stderr first, then the block, once", err.startswith("Traceback (most recent call last):\n"
                                                                          + OOM + "\n") and block > 0 and
          err.count("gpuctl: the job failed") == 1, err)
    check("run: the class (oom-fragmentation), its numbers, the fix", "[oom-fragmentation]" in err and "verdict=fragmentation" in err and
          "fix: set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" in err, err[block:])
    # run, one file for both
    log = os.path.join(work, "job.log")
    with open(log, "w") as f:
        f.write("an earlier run: " + OOM + "\n")
    with open(log, "a") as f:
        r = subprocess.run([GPUCTL, "--sim", NODE, "run", "--", "sh", "-c", "echo hello; exit 4"], env=env,
                           stdout=f, stderr=subprocess.STDOUT, timeout=60)
    text = open(log).read()
    check("file: what was there before the job is not the job's failure", r.returncode == 4 and
          "gpuctl: the job failed" not in text, text)
    with open(log, "a") as f:
        r = subprocess.run([GPUCTL, "--sim", NODE, "run", "--", oomjob], env=env, stdout=f, stderr=subprocess.STDOUT,
                           timeout=60)
    text = open(log).read()
    check("file: the block after the job's lines in the same file", r.returncode == 1 and
          text.rstrip().endswith("to avoid fragmentation.\n" + text.split("to avoid fragmentation.\n")[-1].rstrip())
          and text.count("gpuctl: the job failed (exit status 1)") == 1 and
          text.index("gpuctl: the job failed") > text.rindex("epoch 1 step 10"), text[-600:])
    # nothing extra
    for args, what in ((["--", oomjob, "0"], "a job that succeeds"),
                       (["--", "sh", "-c", "echo 'something odd' >&2; exit 3"], "a failure nothing recognises"),
                       (["--no-explain", "--", oomjob], "--no-explain")):
        r = run(*args)
        check(f"nothing extra: {what}", "gpuctl:" not in r.stderr, r.stderr)
    # what the job sees
    r = run("--", "sh", "-c", "test -p /dev/stdout && test -p /dev/stderr && echo pipes")
    check("a pipe stays a pipe", r.stdout == "pipes\n", (r.stdout, r.stderr))
    out = os.path.join(work, "out.txt")
    with open(out, "w") as f:
        subprocess.run([GPUCTL, "--sim", NODE, "run", "--", "sh", "-c", "test -f /proc/self/fd/1 && echo file"],
                       env=env, stdout=f, timeout=60)
    check("a file stays a file", open(out).read() == "file\n", open(out).read())
    # a reader that goes away
    p = subprocess.run(["bash", "-c", f"'{GPUCTL}' --sim '{NODE}' run -- yes | head -n 1; "
                        "echo \"gpuctl=${PIPESTATUS[0]}\""], env=env, capture_output=True, text=True, timeout=30)
    check("a reader that goes away: yes gets SIGPIPE (141), gpuctl ends with it",
          p.stdout == "y\ngpuctl=141\n", (p.stdout, p.stderr))
    # a terminal: tmux, with and without the tail kept
    if shutil.which("tmux"):
        sock = os.path.join(work, "tmux.sock")
        bar = os.path.join(work, "bar.sh")
        with open(bar, "w") as f:
            f.write("#!/bin/sh\ntest -t 1 && echo STDOUT-TTY; test -t 2 && echo STDERR-TTY; echo SIZE $(stty size)\n"
                    "for i in 10 20 30 40 50; do printf '\\rprogress %s%% |%s|' $i $(printf '%*s' $((i/10)) '' |"
                    " tr ' ' '#'); sleep 0.05; done; echo\n")
        os.chmod(bar, 0o755)
        screens = []
        for extra in ([], ["--no-explain"]):
            name = "e%d" % len(screens)
            cmd = " ".join([GPUCTL, "--sim", NODE, "run", *extra, "--", bar]) + "; echo DONE; sleep 30"
            subprocess.run(["tmux", "-S", sock, "-f", "/dev/null", "new-session", "-d", "-s", name, "-x", "97",
                            "-y", "31", "env", *[f"{k}={v}" for k, v in env.items() if k.startswith(("GPUCTL_", "PATH"))],
                            "sh", "-c", cmd], check=True, env=dict(os.environ, TMUX=""))
            screen = ""
            for _ in range(100):
                screen = subprocess.run(["tmux", "-S", sock, "capture-pane", "-p", "-t", name], capture_output=True,
                                        text=True).stdout
                if "DONE" in screen:
                    break
                time.sleep(0.1)
            screens.append(screen)
        subprocess.run(["tmux", "-S", sock, "kill-server"], capture_output=True)
        kept, plain = screens
        check("a terminal stays a terminal: isatty, its window size", "STDOUT-TTY" in kept and "STDERR-TTY" in kept and
              "SIZE 31 97" in kept, kept)
        check("the progress bar renders the same with and without the tail kept", kept == plain and
              "progress 50% |#####|" in kept, (kept, plain))
    else:
        print("skip the terminal check: no tmux")
    # retries (part 3): only the classes asked for, with what fixes them, at most --max-restarts
    frag = os.path.join(work, "frag.sh")
    with open(frag, "w") as f:
        f.write("#!/bin/sh\necho \"attempt conf=${PYTORCH_CUDA_ALLOC_CONF:-unset}\"\n"
                "case \"$PYTORCH_CUDA_ALLOC_CONF\" in *expandable_segments:True*) echo trained; exit 0;; esac\n"
                f"echo '{OOM}' >&2\nexit 1\n")
    os.chmod(frag, 0o755)
    r = subprocess.run([GPUCTL, "--sim", NODE, "run", "--retry-on", "oom-fragmentation", "--", frag], capture_output=True,
                       text=True, timeout=60, env=dict(env, PYTORCH_CUDA_ALLOC_CONF="garbage_collection_threshold:0.6"))
    check("retry oom-fragmentation: again with expandable_segments merged into the user's own value, then it succeeds",
          r.returncode == 0 and r.stdout == "attempt conf=garbage_collection_threshold:0.6\nattempt conf="
          "garbage_collection_threshold:0.6,expandable_segments:True\ntrained\n" and
          "gpuctl: retrying (1 of 3, --retry-on oom-fragmentation): with PYTORCH_CUDA_ALLOC_CONF="
          "garbage_collection_threshold:0.6,expandable_segments:True" in r.stderr, (r.returncode, r.stdout, r.stderr))
    # the output going nowhere (/dev/null): with --retry-on, the tail is kept all the same
    r = subprocess.run([GPUCTL, "--sim", NODE, "run", "--retry-on", "oom-fragmentation", "--", frag],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60, env=env)
    check("retry oom-fragmentation with stdout and stderr on /dev/null: explained, retried, then it succeeds",
          r.returncode == 0, r.returncode)
    old = os.path.join(work, "old-torch.sh")
    with open(old, "w") as f:
        f.write("#!/bin/sh\necho \"attempt conf=${PYTORCH_CUDA_ALLOC_CONF:-unset}\"\n"
                "case \"$PYTORCH_CUDA_ALLOC_CONF\" in *expandable_segments*) echo 'RuntimeError: Unrecognized "
                "CachingAllocator option: expandable_segments' >&2; exit 1;; *max_split_size_mb*) echo trained; "
                f"exit 0;; esac\necho '{OOM}' >&2\nexit 1\n")
    os.chmod(old, 0o755)
    r = run("--retry-on", "oom-fragmentation", "--", old)
    check("before PyTorch 2.1 (it refuses expandable_segments): max_split_size_mb instead",
          r.returncode == 0 and r.stdout.splitlines() == ["attempt conf=unset", "attempt conf=expandable_segments:True",
                                                          "attempt conf=max_split_size_mb:128", "trained"],
          (r.returncode, r.stdout, r.stderr[-400:]))
    nccl = os.path.join(work, "nccl.sh")
    with open(nccl, "w") as f:
        f.write(f"#!/bin/sh\necho \"attempt on $GPUCTL_GPUS\"\necho '{NCCL}' >&2\nexit 1\n")
    os.chmod(nccl, 0o755)
    r = run("-n", "2", "--retry-on", "nccl-timeout", "--max-restarts", "2", "--", nccl)
    tries = [l.split()[-1] for l in r.stdout.splitlines()]
    check("retry nccl-timeout: on other GPUs each time, --max-restarts 2 bounds it (3 attempts)",
          r.returncode == 1 and len(tries) == 3 and len(set(tries)) == 3 and
          not set(tries[0].split(",")) & set(tries[1].split(",")) and
          "not retried: nccl-timeout again, and --max-restarts 2 retries were spent" in r.stderr,
          (tries, r.stderr[-300:]))
    # oom-other-process: on a GPU without the other process
    other = os.path.join(work, "other.sh")
    with open(other, "w") as f:
        f.write("#!/bin/sh\necho \"attempt on $GPUCTL_GPUS\"\n[ -e \"$0.done\" ] && { echo trained; exit 0; }\n"
                "touch \"$0.done\"\necho 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 "
                "has a total capacity of 23.55 GiB of which 2.31 GiB is free. Process 1187 has 14.20 GiB memory in "
                "use. Including non-PyTorch memory, this process has 7.02 GiB memory in use. Of the allocated memory "
                "6.41 GiB is allocated by PyTorch, and 148.27 MiB is reserved by PyTorch but unallocated.' >&2\n"
                "exit 1\n")
    os.chmod(other, 0o755)
    r = run("--retry-on", "oom-other-process", "--", other)
    tries = [l.split()[-1] for l in r.stdout.splitlines() if l.startswith("attempt on")]
    check("retry oom-other-process: on another GPU", r.returncode == 0 and len(tries) == 2 and tries[0] != tries[1] and
          "[oom-other-process]" in r.stderr and "retrying (1 of 3, --retry-on oom-other-process): on other GPUs than "
          + tries[0] in r.stderr, (r.returncode, r.stdout, r.stderr[-300:]))
    # oom-too-big with --bigger: to a GPU with the memory it needed (an L4, then the H100 beside it)
    mixed = os.path.join(SRC, "tests", "cli", "nodes", "mixed-2x.json")
    big = os.path.join(work, "big.sh")
    with open(big, "w") as f:
        f.write("#!/bin/sh\necho \"attempt on $GPUCTL_GPUS\"\n[ \"$GPUCTL_GPUS\" = 1 ] && { echo trained; exit 0; }\n"
                "echo 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total "
                "capacity of 22.05 GiB of which 1.50 GiB is free. Of the allocated memory 20.12 GiB is allocated by "
                "PyTorch, and 0.10 GiB is reserved by PyTorch but unallocated.' >&2\nexit 1\n")
    os.chmod(big, 0o755)
    holder = subprocess.Popen([GPUCTL, "--sim", mixed, "run", "--gpus", "1", "--", "sleep", "1.5"], env=env)
    time.sleep(0.4)  # the H100 is taken: the job lands on the L4
    r = subprocess.run([GPUCTL, "--sim", mixed, "run", "--wait", "30", "--retry-on", "oom-too-big", "--bigger", "--",
                        big], env=env, capture_output=True, text=True, timeout=60)
    holder.wait()
    check("retry oom-too-big --bigger: on a GPU with the memory it needed",
          r.returncode == 0 and r.stdout == "attempt on 0\nattempt on 1\ntrained\n" and
          "on GPUs with at least 40.4 GiB free" in r.stderr, (r.returncode, r.stdout, r.stderr[-300:]))
    r = subprocess.run([GPUCTL, "--sim", mixed, "run", "--gpus", "0", "--retry-on", "oom-too-big", "--", big], env=env,
                       capture_output=True, text=True, timeout=60)
    check("oom-too-big without --bigger: not retried, said", r.returncode == 1 and r.stdout == "attempt on 0\n" and
          "only with --bigger" in r.stderr, (r.stdout, r.stderr[-300:]))
    r = run("--retry-on", "xid", "--", oomjob)
    check("a class not listed is not retried", r.returncode == 1 and r.stdout.count("epoch 1") == 1 and
          "retrying" not in r.stderr, (r.stdout, r.stderr[-300:]))
    r = run("--retry-on", "xid", "--no-explain", "--", "true")
    check("--retry-on with --no-explain: refused", r.returncode == 2 and "not with --no-explain" in r.stderr, r.stderr)
    r = run("--retry-on", "oom-fragmentation,oops", "--", "true")
    check("a bad --retry-on: one line, exit 2", r.returncode == 2 and "invalid --retry-on" in r.stderr and
          r.stderr.count("\n") == 1, r.stderr)
    # launch with a fake torchrun whose worker fails
    with open(os.path.join(work, "bin", "torchrun"), "w") as f:
        f.write(f"#!/bin/sh\necho 'starting 2 workers'\necho '{NCCL}' >&2\nexit 1\n")
    os.chmod(os.path.join(work, "bin", "torchrun"), 0o755)
    r = subprocess.run([GPUCTL, "--sim", NODE, "launch", "-n", "2", "--", "train.py"], env=env, capture_output=True,
                       text=True, timeout=60)
    check("launch: the failed torchrun explained (nccl-timeout), once, after its output",
          r.returncode == 1 and r.stderr.count("gpuctl: the job failed") == 1 and
          "[nccl-timeout]" in r.stderr and r.stderr.index(NCCL[:40]) < r.stderr.index("gpuctl: the job failed"),
          (r.returncode, r.stderr[-800:]))
finally:
    shutil.rmtree(work, ignore_errors=True)
harness.finish()
