#!/usr/bin/env python3
"""Crash safety of `gpuctl ckpt` (issue 4): a writer saves checkpoints in a
loop (write the data, fsync, `gpuctl ckpt commit`, now and then `gpuctl ckpt
prune --keep 3`) and is killed with SIGKILL — it and any gpuctl it is
running — at random moments, ROUNDS times. After every kill, once anything
was committed:
  - DIR/latest exists and is a symlink (once a commit has made it: the very
    first, killed between its marker and latest, leaves none, and
    `gpuctl ckpt latest` finds it from the markers);
  - it names a checkpoint that is complete (has its marker) and whose data
    is intact;
  - every checkpoint marked complete has intact data (a marker never
    appears for a checkpoint cut off half-way);
  - `gpuctl ckpt latest` succeeds and names an intact checkpoint at least as
    new as the one latest names.
Usage: ckpt-crash.py GPUCTL [ROUNDS] [SEED]
"""
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, fail  # noqa: E402

GPUCTL = sys.argv[1]
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 200
SEED = int(sys.argv[3]) if len(sys.argv) > 3 else 4242
SIZE = 256 * 1024

WRITER = r'''
import os, subprocess, sys
gpuctl, d, k = sys.argv[1], sys.argv[2], int(sys.argv[3])
while True:
    name = "step-%06d" % k
    path = os.path.join(d, name)
    os.makedirs(path, exist_ok=True)
    for part in ("a", "b"):
        fd = os.open(os.path.join(path, part), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        blob = (("%s%06d" % (part, k)).encode() * (@SIZE@ // 7 + 1))[:@SIZE@]
        for off in range(0, len(blob), 65536):
            os.write(fd, blob[off:off + 65536])
        os.fsync(fd)
        os.close(fd)
    subprocess.run([gpuctl, "ckpt", "commit", d, path], check=True)
    if k % 4 == 0:
        subprocess.run([gpuctl, "ckpt", "prune", d, "--keep", "3"], check=True, stdout=subprocess.DEVNULL)
    k += 1
'''.replace("@SIZE@", str(SIZE))


def intact(d, name):
    try:
        k = int(name.split("-")[1])
        for part in ("a", "b"):
            data = open(os.path.join(d, name, part), "rb").read()
            want = (("%s%06d" % (part, k)).encode() * (SIZE // 7 + 1))[:SIZE]
            if data != want:
                return False
        return True
    except (OSError, ValueError, IndexError):
        return False


def main():
    rnd = random.Random(SEED)
    d = tempfile.mkdtemp(prefix="gpuctl-ckpt-")
    committed_ever = latest_seen = False
    next_k = 1
    kills_in_commit = 0
    for r in range(ROUNDS):
        w = subprocess.Popen([sys.executable, "-c", WRITER, GPUCTL, d, str(next_k)],
                             start_new_session=True, stderr=subprocess.DEVNULL)
        time.sleep(rnd.uniform(0.005, 0.080))
        # note whether a gpuctl was running in the writer's group at the kill
        try:
            inflight = subprocess.run(["pgrep", "-g", str(w.pid), "-f", "gpuctl ckpt"],
                                      capture_output=True).returncode == 0
        except FileNotFoundError:
            inflight = False
        os.killpg(w.pid, signal.SIGKILL)
        w.wait()
        kills_in_commit += inflight
        markers = os.path.join(d, ".gpuctl")
        complete = sorted(f[:-5] for f in os.listdir(markers) if f.endswith(".done")) \
            if os.path.isdir(markers) else []
        for name in complete:
            if os.path.exists(os.path.join(d, name)) and not intact(d, name):
                fail(f"round {r}: {name} is marked complete but its data is not intact")
        latest = os.path.join(d, "latest")
        if complete:
            committed_ever = True
        if committed_ever:
            if not os.path.islink(latest):
                # only the very first commit, killed between its marker (2.2) and latest (2.3),
                # leaves no latest; once there, rename keeps it there
                if latest_seen:
                    fail(f"round {r}: latest is missing")
            else:
                latest_seen = True
                target = os.readlink(latest)
                if target not in complete:
                    fail(f"round {r}: latest -> {target}, which is not complete")
                elif not intact(d, target):
                    fail(f"round {r}: latest -> {target}, whose data is not intact")
            out = subprocess.run([GPUCTL, "ckpt", "latest", d], capture_output=True, text=True)
            if out.returncode != 0:
                fail(f"round {r}: gpuctl ckpt latest failed: {out.stderr.strip()}")
            else:
                name = os.path.basename(out.stdout.strip())
                if not intact(d, name):
                    fail(f"round {r}: gpuctl ckpt latest names {name}, not intact")
                elif os.path.islink(latest) and name < os.readlink(latest):
                    fail(f"round {r}: gpuctl ckpt latest names {name}, older than latest")
                next_k = int(name.split("-")[1]) + 1
        if len(harness.errors) > 10:
            break
    names = sorted(os.listdir(d))
    print(f"{ROUNDS} kills ({kills_in_commit} with gpuctl ckpt running), "
          f"{len([n for n in names if n.startswith('step-')])} checkpoints left, "
          f"latest -> {os.readlink(os.path.join(d, 'latest')) if os.path.islink(os.path.join(d, 'latest')) else None}, "
          f"{len(harness.errors)} problems")
    shutil.rmtree(d, ignore_errors=True)
    check(f"something was committed in {ROUNDS} rounds", committed_ever)
    harness.finish()


if __name__ == "__main__":
    main()
