"""Two real unprivileged users for the integration tests that need them
(gpuctld-queue.py, seams.py): created on entry, removed on exit. Their
names are fixed, so a second test run on the machine (another build
directory, another clone) waits on a lock for the first instead of deleting
its users mid-run. Exits 77 (skip) unless run as root with useradd."""
import fcntl
import os
import pwd
import shutil
import subprocess
import sys

USERS = ("gpuctlqa", "gpuctlqb")
GROUP = "gpuctlqx"  # USERS[0] is a member


def _sh(*cmd):
    return subprocess.run(list(cmd), capture_output=True, text=True)


def cleanup():
    for u in USERS:
        _sh("pkill", "-KILL", "-u", u)  # what a test left running as them
        _sh("userdel", "-f", u)
    _sh("groupdel", GROUP)


def create(why):
    """lock, then create the users; `why` says what needs them, for the skip line"""
    if os.geteuid() != 0 or not shutil.which("useradd"):
        print(f"SKIP: {why}: it needs root and useradd")
        sys.exit(77)
    global _lock
    _lock = open("/tmp/gpuctl-queue-test-users.lock", "w")
    fcntl.flock(_lock, fcntl.LOCK_EX)
    cleanup()
    _sh("groupadd", GROUP)
    for u in USERS:
        p = _sh("useradd", "-M", "-N", "-s", "/bin/sh", "-d", "/nonexistent", u)
        if p.returncode != 0:
            cleanup()
            print(f"SKIP: cannot create user {u}: {p.stderr.strip()}")
            sys.exit(77)
    _sh("usermod", "-a", "-G", GROUP, USERS[0])
    return USERS


def as_user_cmd(user, *cmd):
    """the command line that runs cmd as user, with its groups"""
    return ["setpriv", "--reuid", user, "--regid", str(pwd.getpwnam(user).pw_gid), "--init-groups", "--",
            *[str(c) for c in cmd]]
