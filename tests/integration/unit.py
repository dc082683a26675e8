#!/usr/bin/env python3
"""contrib/gpuctld.service runs the queue (issue 17, item 10), tested without
systemd (this machine's PID 1 is not): gpuctld is started under the unit's
own settings, reproduced in a private mount namespace (unshare -m) from the
unit file itself, so the test fails when the unit regresses:

  ProtectSystem=   full: /usr, /boot, /etc read-only; strict: every
                   top-level directory but /dev, /proc, /sys read-only
  ProtectHome=     yes: /home, /root, /run/user empty and closed (tmpfs 000);
                   read-only: read-only
  PrivateTmp=      yes: /tmp and /var/tmp private and empty
  NoNewPrivileges=yes, CapabilityBoundingSet=, ProtectKernelModules=yes (its
                   bounding set): setpriv --nnp / --bounding-set on gpuctld
  StateDirectory=, RuntimeDirectory=, LogsDirectory=, ReadWritePaths=:
                   writable, made with their modes (temporary directories
                   stand in for /var/lib/gpuctl and /run/gpuctl, bound over
                   them inside the namespace only)
  ExecStart=       as written, with this build's gpuctld and the simulated
                   node added

A real user (created here) then submits a job from a directory under /home
that reads a file the user left in the machine's /tmp and writes a file
there; it must run, write the file, its output must be in `gpuctl logs`, and
it must have what the user's shell has: NoNewPrivs 0 and the machine's
capability bounding set (a setuid helper such as nvidia-modprobe works).
With the unit of 1ec17da (ProtectSystem=strict, ProtectHome=yes, PrivateTmp,
NoNewPrivileges) gpuctld exits at start: it cannot make /var/lib/gpuctl
(or, where that exists, its logs directory).
Also checked, as settings (their effect needs systemd): KillMode=process
(restarting gpuctld must leave its jobs running, for the next one to adopt),
RuntimeDirectoryMode=1777 with RuntimeDirectoryPreserve=yes (the lease
directory every user shares is never removed while leases may live in it),
and none of the settings in NOTICED, which jobs would notice.
Skips (77) unless root with useradd, unshare, mount and setpriv.
Usage: unit.py GPUCTLD GPUCTL SRCDIR [UNIT-FILE]
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

import harness
import testusers
from harness import check

GPUCTLD, GPUCTL, SRC = os.path.realpath(sys.argv[1]), os.path.realpath(sys.argv[2]), sys.argv[3]
UNIT = sys.argv[4] if len(sys.argv) > 4 else os.path.join(SRC, "contrib", "gpuctld.service")
NODE = os.path.join(SRC, "tests", "cli", "nodes", "idle-8x.json")
if os.geteuid() != 0 or not all(shutil.which(c) for c in ("unshare", "mount", "setpriv")):
    print("SKIP: the unit test needs root, unshare, mount and setpriv")
    sys.exit(77)


def parse_unit(path):
    """[Service] settings: name -> list of values (in order)"""
    out, section = {}, None
    for line in open(path):
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        if section == "Service" and "=" in line:
            k, v = line.split("=", 1)
            out.setdefault(k.strip(), []).append(v.strip())
    return out


svc = parse_unit(UNIT)


def last(key, default=""):
    return svc.get(key, [default])[-1]


def on(key):
    return last(key, "no").lower() in ("yes", "true", "on", "1")


# settings a job would notice that a mount namespace cannot reproduce: the unit must not set them
NOTICED = {
    "User": "gpuctld must be root to start jobs as their users",
    "PrivateDevices": "NVML and the jobs need /dev/nvidia*",
    "DevicePolicy": "NVML and the jobs need /dev/nvidia*",
    "DeviceAllow": "NVML and the jobs need /dev/nvidia*",
    "ProtectClock": "it closes the device policy: NVML and the jobs need /dev/nvidia*",
    "PrivateNetwork": "NCCL and multi-node jobs need the network",
    "RestrictAddressFamilies": "NCCL and InfiniBand verbs use netlink",
    "SystemCallFilter": "jobs run any program",
    "MemoryDenyWriteExecute": "JIT compilers a job runs (numba, Java, PyPy) make the code they write executable",
    "RestrictNamespaces": "a job may start a container (Apptainer, bubblewrap)",
    "PrivateUsers": "jobs run as their real users",
}


A, B = testusers.create("the unit test creates two users")
work = tempfile.mkdtemp(prefix="gpuctl-unit-")
os.chmod(work, 0o755)
home = tempfile.mkdtemp(prefix="gpuctl-unit-", dir="/home") if os.path.isdir("/home") else None
d = utmp = None
try:
    # ---- what the unit says, before it runs
    check("unit", last("KillMode") == "process", f"KillMode={last('KillMode')!r}: a restart would kill every job")
    check("unit", last("RuntimeDirectoryMode") == "1777" and last("RuntimeDirectoryPreserve") == "yes",
          "the lease directory must be 1777 and preserved: "
          f"RuntimeDirectoryMode={last('RuntimeDirectoryMode')!r} Preserve={last('RuntimeDirectoryPreserve')!r}")

    for key, why in NOTICED.items():
        v = last(key, "")
        check("unit", v in ("", "no", "false", "root", "auto"), f"{key}={v}: {why}")

    # ---- the namespace: the unit's file system settings, then ExecStart. /var/lib and /run are
    # stand-ins (temporary directories bound over them inside the namespace only), so that the
    # host's are never touched; what systemd would make (StateDirectory=, RuntimeDirectory=, ...)
    # is made in them, and what ProtectSystem= makes read-only is read-only there too.
    protect = last("ProtectSystem", "no")
    ro = []
    if protect in ("yes", "full"):
        ro = ["/usr", "/boot", "/efi"] + (["/etc"] if protect == "full" else [])
    elif protect == "strict":
        ro = ["/" + n for n in sorted(os.listdir("/")) if n not in ("dev", "proc", "sys")]
    roots = {"/var/lib": os.path.join(work, "var-lib"), "/run": os.path.join(work, "run"),
             "/var/log": os.path.join(work, "var-log"), "/var/cache": os.path.join(work, "var-cache")}
    for r in roots.values():
        os.makedirs(r)
        os.chmod(r, 0o755)
    writable = []
    for key, base in (("StateDirectory", "/var/lib"), ("RuntimeDirectory", "/run"), ("LogsDirectory", "/var/log"),
                      ("CacheDirectory", "/var/cache")):
        for v in svc.get(key, []):
            for name in v.split():
                made = os.path.join(roots[base], name)
                os.makedirs(made, exist_ok=True)
                os.chmod(made, int(last(key + "Mode", "0755"), 8))
                writable.append(os.path.join(base, name))
    writable += [p for v in svc.get("ReadWritePaths", []) for p in v.split()]
    state_dir, run_dir = os.path.join(roots["/var/lib"], "gpuctl"), os.path.join(roots["/run"], "gpuctl")
    sh = ["set -e", "mount --make-rprivate /"]
    for real, stand_in in roots.items():
        sh.append(f"mount --bind {shlex.quote(stand_in)} {real}")
        if any(real == p or real.startswith(p + "/") for p in ro):
            sh.append(f"mount -o remount,bind,ro {real}")
    if protect == "strict":
        for w in writable:
            sh.append(f"mount --bind {shlex.quote(w)} {shlex.quote(w)} && mount -o remount,bind,rw {shlex.quote(w)}")
    for p in ro:
        if p in ("/run",) or not os.path.isdir(p) or os.path.islink(p):
            continue
        sh.append(f"mount --rbind {p} {p} && mount -o remount,bind,ro {p}")
    ph = last("ProtectHome", "no")
    for p in ("/home", "/root", "/run/user"):
        if ph in ("yes", "tmpfs"):
            sh.append(f"if [ -d {p} ]; then mount -t tmpfs -o mode={'0755' if ph == 'tmpfs' else '0000'} tmpfs {p}; fi")
        elif ph == "read-only":
            sh.append(f"if [ -d {p} ]; then mount --rbind {p} {p} && mount -o remount,bind,ro {p}; fi")
    if last("PrivateTmp", "no") in ("yes", "true"):
        sh += ["mount -t tmpfs -o mode=1777 tmpfs /tmp", "mount -t tmpfs -o mode=1777 tmpfs /var/tmp"]
    # the users' side shares /run/gpuctl with gpuctld (its socket, and the leases): if the unit
    # does not make it, gpuctld makes it (as before), but the users need its path now
    os.makedirs(run_dir, exist_ok=True)
    if "/run/gpuctl" not in writable:
        os.chmod(run_dir, 0o1777)
    argv = shlex.split(last("ExecStart"))
    check("unit", argv and os.path.basename(argv[0]) == "gpuctld", f"ExecStart runs {argv[:1]}, not gpuctld")
    argv = [GPUCTLD] + argv[1:] + ["--sim", NODE, "--listen", "127.0.0.1:0"]
    # what the unit does to the credentials gpuctld (and so every job) inherits
    caps = [c.lower().removeprefix("cap_") for v in svc.get("CapabilityBoundingSet", []) for c in v.lstrip("~").split()]
    keep_only = any(not v.startswith("~") for v in svc.get("CapabilityBoundingSet", []))
    bset = ["-all"] + [f"+{c}" for c in caps] if keep_only else [f"-{c}" for c in caps]
    if on("ProtectKernelModules"):
        bset.append("-sys_module")
    if bset or on("NoNewPrivileges"):
        argv = ["setpriv"] + (["--nnp"] if on("NoNewPrivileges") else []) + \
            (["--bounding-set", ",".join(bset)] if bset else []) + ["--"] + argv
    sh.append("exec " + " ".join(shlex.quote(a) for a in argv))
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUCTL_") or k in ("GPUCTL_SIM_LIBDIR", "GPUCTL_AUTHORITY_DIR")}
    env["GPUCTL_SIM_RUNDIR"] = os.path.join(work, "rd")
    os.makedirs(env["GPUCTL_SIM_RUNDIR"])
    os.chmod(env["GPUCTL_SIM_RUNDIR"], 0o1777)
    d = subprocess.Popen(["unshare", "-m", "--", "sh", "-c", "\n".join(sh)], env=env, stderr=subprocess.PIPE,
                         text=True)
    queue_up, said = False, []
    t0 = time.monotonic()
    while time.monotonic() - t0 < 20:
        line = d.stderr.readline()
        if not line:
            break
        said.append(line.strip())
        if "queue on" in line:
            queue_up = True
            break
    if not queue_up:
        try:
            d.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
    check("start", queue_up, f"gpuctld under the unit's settings did not start its queue: {said[-3:]} "
          f"(exit {d.poll()})")

    # ---- a user's job from a directory under /home, writing there
    if queue_up and home:
        wdir = os.path.join(home, "work")
        os.makedirs(wdir)
        shutil.chown(home, A)
        shutil.chown(wdir, A)
        os.chmod(home, 0o755)
        # a file the user left in the machine's /tmp, for the job to read (PrivateTmp= would hide it)
        utmp = tempfile.mkdtemp(prefix="gpuctl-unit-")
        shutil.chown(utmp, A)
        with open(os.path.join(utmp, "in"), "w") as f:
            f.write("done\n")
        # authority mode (--authority in ExecStart): gpuctld's socket is in /run/gpuctld
        authority = "--authority" in argv
        qsock = os.path.join(roots["/run"], "gpuctld", "gpuctld.sock") if authority else \
            os.path.join(run_dir, "gpuctld.sock")
        uenv = dict(env, GPUCTL_QUEUE_SOCKET=qsock, GPUCTL_STATE_DIR=run_dir,
                    GPUCTL_AUTHORITY_DIR=os.path.join(roots["/run"], "gpuctld"))
        p = subprocess.run(testusers.as_user_cmd(A, GPUCTL, "submit", "--", "sh", "-c",
                                                 "echo hello from $(pwd); grep -E '^(NoNewPrivs|CapBnd):' "
                                                 f"/proc/self/status; cat {utmp}/in > result"),
                           env=uenv, capture_output=True, text=True, timeout=30, cwd=wdir)
        job = p.stdout.strip()
        check("job", p.returncode == 0 and job.isdigit(), f"submit from {wdir}: {p.returncode} {p.stderr!r}")
        w = subprocess.run(testusers.as_user_cmd(A, GPUCTL, "wait", job), env=uenv, capture_output=True,
                           text=True, timeout=60)
        check("job", w.returncode == 0, f"job {job} from {wdir}: {w.returncode} {w.stdout!r} {w.stderr!r}")
        res = os.path.join(wdir, "result")
        check("job", os.path.exists(res) and open(res).read() == "done\n",
              f"the job did not write {res}")
        # the log's path is /var/lib/gpuctl/logs/...: read it with /var/lib as gpuctld sees it (on a
        # real machine StateDirectory= is the host's own /var/lib/gpuctl)
        view = "mount --make-rprivate / && mount --bind " + shlex.quote(roots["/var/lib"]) + " /var/lib && exec " + \
            " ".join(shlex.quote(a) for a in testusers.as_user_cmd(A, GPUCTL, "logs", job))
        lg = subprocess.run(["unshare", "-m", "--", "sh", "-c", view], env=uenv, capture_output=True, text=True,
                            timeout=30)
        check("job", f"hello from {wdir}" in lg.stdout, f"gpuctl logs {job}: {lg.stdout!r} {lg.stderr!r}")
        # the job's credentials are what this test's own are (a user's shell on this machine): NoNewPrivs
        # 0 and the full bounding set, so that setuid helpers work in jobs as they do for their users
        def creds(text):
            return dict(ln.split(":\t", 1) for ln in text.splitlines() if ln.startswith(("NoNewPrivs:", "CapBnd:")))
        mine, got = creds(open("/proc/self/status").read()), creds(lg.stdout)
        check("job", got.get("NoNewPrivs") == mine["NoNewPrivs"], f"job {job} has NoNewPrivs "
              f"{got.get('NoNewPrivs')!r}: a setuid helper it runs (sudo, fusermount, nvidia-modprobe) "
              "would not gain privileges")
        check("job", got.get("CapBnd") == mine["CapBnd"], f"job {job}'s capability bounding set is "
              f"{got.get('CapBnd')!r}, not the machine's {mine['CapBnd']}: a setuid helper (nvidia-modprobe "
              "loading nvidia_uvm) would lack some")
        if not any(e.startswith("job:") for e in harness.errors):
            print(f"job: {A}'s job ran in {wdir} under the unit's settings, read /tmp, wrote its file, "
                  "had its user's privileges, and its log says so")
    elif not home:
        print("SKIP part: no /home on this machine")
finally:
    harness.stop(d)
    subprocess.run(["rm", "-rf", work])
    if utmp:
        subprocess.run(["rm", "-rf", utmp])
    if home:
        subprocess.run(["rm", "-rf", home])
    testusers.cleanup()

print(f"unit: {UNIT}: " + " ".join(f"{k}={last(k)}" for k in ("ProtectSystem", "ProtectHome", "PrivateTmp",
                                                                   "NoNewPrivileges", "ProtectKernelModules",
                                                                   "KillMode", "StateDirectory", "RuntimeDirectory")))
harness.finish()
