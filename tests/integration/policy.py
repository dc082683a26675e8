"""What the tests of gpuctld's policies (quarantine, enforce, reclaim,
notify, usage, fairshare: issue 21) share: their command line (GPUCTLD
GPUCTL SRCDIR SIMHOLD), two real users, a work directory with a lease state
directory and a simulator run directory shared by every user (as
/run/gpuctl is), the checks and their report, gpuctld started and its log
kept, and background processes of either user that are killed at the end."""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading

import harness
import testusers

GPUCTLD, GPUCTL, SRC = os.path.realpath(sys.argv[1]), os.path.realpath(sys.argv[2]), os.path.realpath(sys.argv[3])
SIMHOLD = os.path.realpath(sys.argv[4]) if len(sys.argv) > 4 else None
NODE = os.path.join(SRC, "tests", "cli", "nodes", "idle-8x.json")
harness.verbose = True  # "ok   name" or "FAIL name" as each check is made
check = harness.check  # the tests import it from here
procs = []
log = []  # what the gpuctld of start() logged, its start-up lines first


def setup(what, users_made=False):
    """the two users (A, B), and the work directory (0777, so that jobs of both may write in it);
    users_made: a parent process made the users (testusers.made)"""
    global work, env, sock
    users = testusers.made() if users_made else testusers.create(f"the {what} test creates two users")
    work = tempfile.mkdtemp(prefix=f"gpuctl-{what}-")
    os.chmod(work, 0o777)
    sock = os.path.join(work, "q.sock")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUCTL_") or k in ("GPUCTL_SIM_LIBDIR", "GPUCTL_AUTHORITY_DIR")}
    # HOME: the user's ~/.sky/catalogs would change what gpuctl advise says (issue 32)
    env.pop("XDG_CONFIG_HOME", None)
    env.update({"GPUCTL_STATE_DIR": os.path.join(work, "state"), "GPUCTL_SIM_RUNDIR": os.path.join(work, "rd"),
                "GPUCTL_QUEUE_SOCKET": sock, "HOME": os.path.join(work, "home"),
                "PATH": os.path.dirname(GPUCTL) + ":" + os.environ.get("PATH", "/usr/bin:/bin")})
    for d in ("state", "rd", "logs", "home"):
        os.makedirs(os.path.join(work, d))
        os.chmod(os.path.join(work, d), 0o1777)
    return users


def authority():
    """authority mode for this test (docs/security.md): a directory of root's for gpuctld's socket
    and marker, the clients pointed at it; start() then needs "--authority", "--authority-dir" it"""
    global sock
    auth = os.path.join(work, "auth")
    os.mkdir(auth, 0o755)
    sock = os.path.join(auth, "gpuctld.sock")
    env["GPUCTL_AUTHORITY_DIR"] = auth
    env["GPUCTL_QUEUE_SOCKET"] = sock
    return auth


def until(cond, secs=10):
    """cond()'s value once it is true, within secs (looked at every 0.1 s); else its last value"""
    return harness.until(cond, secs, step=0.1)


def start(*args, queue=True, node=None):
    """gpuctld (0.2 s samples; its queue in the work directory unless queue=False) once it listens
    (and serves its queue): (the process, its base URL)"""
    q = ["--queue-db", os.path.join(work, "q.db"), "--queue-socket", sock, "--log-dir", os.path.join(work, "logs"),
        ] if queue else ["--no-queue"]
    d = subprocess.Popen([GPUCTLD, "--sim", node or NODE, "--listen", "127.0.0.1:0", "--interval", "0.2s", *q, *args],
                         env=env, stderr=subprocess.PIPE, text=True)
    log.clear()
    url = None
    for _ in range(50):
        line = d.stderr.readline()
        log.append(line)
        m = re.search(r"listening on (http://\S+)/", line)
        if m:
            url = m.group(1)
        if url and (not queue or "queue on" in line):
            threading.Thread(target=lambda: log.extend(iter(d.stderr.readline, "")), daemon=True).start()
            return d, url
    d.kill()
    raise SystemExit(f"FAIL: gpuctld did not start: {log!r}")


def gpuctl(*args, user=None, sim=True):
    """gpuctl (with --sim NODE unless sim=False) as user (root when None), in the work directory"""
    argv = [GPUCTL, *(["--sim", NODE] if sim else []), *args]
    cmd = testusers.as_user_cmd(user, *argv) if user else argv
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60, cwd=work)


def bg(user, *cmd):
    """cmd as user (root when None) in a session of its own, killed at the end"""
    argv = testusers.as_user_cmd(user, *cmd) if user else list(cmd)
    p = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True, cwd=work)
    procs.append(p)
    return p


def hold(user, gpu, script="exec sleep 60"):
    """a compute process of user on GPU gpu: gpuctl-sim-hold registers its pid, then execs sh"""
    return bg(user, SIMHOLD, "--gpu", str(gpu), "--mem", "1G", "--", "sh", "-c", script)


def finish(*daemons):
    """stop the gpuctlds, kill what bg() started, remove the work directory, report; exits.
    Called from a finally: an exception on its way out is a failure, not hidden by the exit."""
    for d in daemons:
        harness.stop(d)
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()
    shutil.rmtree(work, ignore_errors=True)
    harness.finish()
