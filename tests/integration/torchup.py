"""Debian's PyTorch for the tests that run it (torch.py, torch-grace.py), with
/usr/bin/python3, the interpreter it belongs to: installed by
tests/torch/torch-up.sh when missing. When it cannot be, says why and exits
(77: skip, as that script says; else 1)."""
import os
import shutil
import subprocess
import sys

PY = "/usr/bin/python3"


def torch_up(src):
    """(PyTorch's version, Python's (major, minor), /usr/bin/torchrun or None)"""
    up = subprocess.run(["bash", os.path.join(src, "tests", "torch", "torch-up.sh"), PY], capture_output=True,
                        text=True, timeout=600)
    if up.returncode != 0:
        msg = up.stderr.strip().splitlines()
        print("SKIP: " + (msg[-1] if msg else f"torch-up.sh exit {up.returncode}"))
        sys.exit(77 if up.returncode == 77 else 1)
    version = up.stdout.strip().split("=", 1)[1]
    pyver = tuple(int(x) for x in subprocess.run([PY, "-c", "import sys; print(*sys.version_info[:2])"],
                                                 capture_output=True, text=True, check=True).stdout.split())
    return version, pyver, shutil.which("torchrun", path="/usr/bin")


_alone = None


def torchrun_alone():
    """hold, until this test exits, the lock the tests that run the real torchrun share: they run one at a
    time (torchrun picks free ports and closes them, and its workers bind them later: two at once have
    taken each other's), and beside every other test of the suite"""
    global _alone
    import fcntl
    _alone = open("/tmp/gpuctl-test-torchrun.lock", "w")
    fcntl.flock(_alone, fcntl.LOCK_EX)
