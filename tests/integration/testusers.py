"""Two real unprivileged users for the integration tests that need them
(gpuctld-queue.py, seams.py, the policy tests...): created on entry, removed
on exit. Each test of each build directory has users of its own, named from
a hash of the test script and its first argument (a program in the build
directory): tests run side by side, and the plain and the sanitized suite at
once, without one deleting the other's users or killing their processes. The
same test started twice from one build waits on a lock for the first. Exits
77 (skip) unless run as root with useradd."""
import atexit
import fcntl
import hashlib
import os
import pwd
import shutil
import subprocess
import sys
import time

_TAG = hashlib.sha256(("%s\0%s" % (os.path.abspath(sys.argv[0]),
                                    os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else "")).encode()
                      ).hexdigest()[:7]
USERS = ("gq%sa" % _TAG, "gq%sb" % _TAG)
GROUP = "gq%sx" % _TAG  # USERS[0] is a member


def _sh(*cmd):
    """cmd; again while it finds /etc/passwd or /etc/group locked by another test's useradd"""
    for _ in range(100):
        p = subprocess.run(list(cmd), capture_output=True, text=True)
        if p.returncode == 0 or "lock" not in p.stderr:
            return p
        time.sleep(0.1)
    return p


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
    _lock = open("/tmp/gpuctl-test-users-%s.lock" % _TAG, "w")
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
    atexit.register(cleanup)  # names differ per test and build: never leave them behind
    return USERS


def made():
    """the users a parent process of this test made with create() and removes: used, never made or
    removed here. A test that runs itself again inside a mount namespace over /etc (machine-config)
    makes them outside: useradd in there writes a copy of /etc/passwd, where they would get the uids
    of users other tests make later out here, and their cleanup's pkill -u would kill those."""
    return USERS


def as_user_cmd(user, *cmd):
    """the command line that runs cmd as user, with its groups"""
    return ["setpriv", "--reuid", user, "--regid", str(pwd.getpwnam(user).pw_gid), "--init-groups", "--",
            *[str(c) for c in cmd]]
