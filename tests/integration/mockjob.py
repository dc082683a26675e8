"""What spot-e2e.py and spot-warning.py share: the mock metadata server, a
case's environment of its own, and a job run under gpuctl until its log has
some lines, then a notice posted to the mock, then the job's end."""
import os
import subprocess
import sys
import urllib.request

from harness import fail, until


def ctl(base, path):
    """POST to the mock's control API"""
    urllib.request.urlopen(urllib.request.Request(base + path, method="POST"), timeout=5).read()


def start_mock(src):
    """tests/mock/metadata.py on a free port: (the process, its base URL)"""
    mock = subprocess.Popen([sys.executable, os.path.join(src, "tests", "mock", "metadata.py"), "0"],
                            stdout=subprocess.PIPE, text=True)
    port = int(mock.stdout.readline().split()[-1])
    return mock, f"http://127.0.0.1:{port}"


def case_env(work, case, base):
    """our environment without GPUCTL_* (but the simulator's), a state of the case's own, the mock"""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUCTL_") or k in ("GPUCTL_SIM_LIBDIR", "GPUCTL_AUTHORITY_DIR")}
    env.pop("CUDA_VISIBLE_DEVICES", None)
    env.update({"GPUCTL_STATE_DIR": os.path.join(work, case, "state"),
                "GPUCTL_SIM_RUNDIR": os.path.join(work, case, "rd"), "GPUCTL_METADATA_URL": base})
    return env


def run_until(argv, env, log, lines, base, post, case):
    """argv under env until log has `lines` lines (at most 30 s), then POST post to the mock; the
    process and its output once it ended (killed after 60 s, a failure)"""
    p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    until(lambda: os.path.exists(log) and len(open(log).read().splitlines()) >= lines, 30, step=0.02)
    ctl(base, post)
    try:
        out, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        fail(f"{case}: gpuctl did not finish")
    return p, out, err
