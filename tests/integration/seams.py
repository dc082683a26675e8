#!/usr/bin/env python3
"""Trust at the seams (issue 16): what broke between verbs, between users and
between daemons, with two real unprivileged users created here.

  daemons:   a second gpuctld on the same queue database or the same socket
             refuses to start, naming the pid of the first; the first keeps
             its socket (nobody else unlinks it), and gpuctl queue still
             reaches it; an unprivileged user cannot take it over either; a
             lock file another user left in a shared socket directory does
             not keep root's gpuctld from starting; after the first dies by
             SIGKILL the next one starts.
  squat:     a socket another user serves where gpuctld's goes is refused
             by gpuctl submit (root's and users'): it is not root's or one's
             own, and a job's environment is never sent to it.
  own lease: in a shell that ran `eval "$(gpuctl pick --lease --format
             env)"`, gpuctl run and gpuctl launch use those GPUs and only
             those, without leasing them again, and the lease outlives them;
             -n beyond the lease is refused; pick --release gives it back.
             Another user's lease is never taken for one's own, not even
             with a forged record that names one's shell.
  control:   job names with newlines and escape codes, given by one user to
             gpuctl run and gpuctl submit, reach root's terminal through
             leases, ls, queue and show with every control character
             replaced; the JSON outputs keep the exact string, escaped.
  crowd:     one user holding 100 idle connections to the queue socket
             (and opening them again) keeps neither another user nor root
             out: a cap per user, the last slots for root (issue 17, item 5).
  slow:      twenty connections of one user that ask for a big answer (a job
             with an 800 KB command line) and never read it do not stall the
             queue for another user (issue 17, item 4).
  bounds:    one user's queued jobs stop at --max-queued (root's do not), an
             --after list stops at 64 jobs, a job's command line and
             environment at --max-job-bytes; root lists 90 jobs of 200 KB
             each (18 MB, over the client's 16 MiB answer limit) page by
             page; an ended job is forgotten after --job-keep (issue 17,
             item 6).
  first:     in a root-owned 1777 state directory, the first user's
             `gpuctl run --wait` owns nothing the others need: root's and the
             other user's runs still work (issue 17, item 3).
  files:     one user doing everything it can to the shared state
             directory's files at once — holding .mutex, breaking seq (the
             files older versions shared), making every GPU's lease file
             first with mode 600, writing into and read-locking another
             user's live claim, forging a record, planting a ticket made
             early and locked late, and keeping a ticket in line that never
             takes its turn, making queue/ and ports/ first — while the other
             user runs, launches, waits and queues (issue 17, items 1-3).
  stale log: a new queue database over an old --log-dir that holds another
             user's 1.log: the new job 1 gets a log of its own, never the old
             output (issue 17, item 7).
Skips (77) unless run as root with useradd (it must create the users).
Usage: seams.py GPUCTLD GPUCTL SRCDIR
"""
import errno
import fcntl
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

import pwd

import harness
import testusers
from harness import check

GPUCTLD, GPUCTL, SRC = os.path.realpath(sys.argv[1]), os.path.realpath(sys.argv[2]), sys.argv[3]
NODE = os.path.join(SRC, "tests", "cli", "nodes", "idle-8x.json")
A, B = testusers.create("the seams test creates two users")

work = tempfile.mkdtemp(prefix="gpuctl-seams-")
os.chmod(work, 0o755)
shared = os.path.join(work, "run")  # shared by every user, as /run/gpuctl is
os.makedirs(shared)
os.chmod(shared, 0o1777)
env = {k: v for k, v in os.environ.items() if not k.startswith("GPUCTL_") or k in ("GPUCTL_SIM_LIBDIR", "GPUCTL_AUTHORITY_DIR")}
env.update({"GPUCTL_STATE_DIR": shared, "GPUCTL_SIM_RUNDIR": os.path.join(work, "rd")})
os.makedirs(env["GPUCTL_SIM_RUNDIR"])
os.chmod(env["GPUCTL_SIM_RUNDIR"], 0o1777)


def gpuctld_cmd(db, sock, logs="logs", *extra):
    return [GPUCTLD, "--sim", NODE, "--listen", "127.0.0.1:0", "--queue-db", db, "--queue-socket", sock,
            "--log-dir", os.path.join(work, logs), *extra]


daemons = []  # stopped at the end, whatever happened


def start(db, sock, *extra, logs="logs"):
    d = subprocess.Popen(gpuctld_cmd(db, sock, logs, *extra), env=env, stderr=subprocess.PIPE, text=True)
    daemons.append(d)
    for _ in range(10):
        line = d.stderr.readline()
        if "queue on" in line:
            return d
    d.kill()
    raise SystemExit(f"FAIL: gpuctld did not start its queue: {line!r}")


def background(user, *cmd, **kw):
    """cmd as user, in a session of its own (so kill_group() ends whatever it started), output dropped
    unless kw says otherwise"""
    kw.setdefault("stdout", subprocess.DEVNULL)
    kw.setdefault("stderr", subprocess.DEVNULL)
    return subprocess.Popen(testusers.as_user_cmd(user, *cmd), env=kw.pop("env", env), start_new_session=True,
                            **kw)


def kill_group(p):
    """SIGKILL a background() process group, and reap its leader"""
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()


def refused(cmd, user=None):
    """run a gpuctld that must refuse: (exit code, its stderr)"""
    if user:
        cmd = testusers.as_user_cmd(user, *cmd)
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=10)
    except subprocess.TimeoutExpired:
        return None, "it did not refuse: still running after 10 s"
    return p.returncode, p.stderr.strip()


def pwd_uid(user):
    return pwd.getpwnam(user).pw_uid


def queue_ok(sock):
    p = subprocess.run([GPUCTL, "queue"], env=dict(env, GPUCTL_QUEUE_SOCKET=sock), capture_output=True, text=True,
                       timeout=30)
    return p.returncode == 0


try:
    # ---- daemons: one gpuctld per queue database and per socket (item 1)
    db, sock = os.path.join(work, "q.db"), os.path.join(shared, "gpuctld.sock")
    first = start(db, sock)
    for what, cmd, want in [
        ("same database and socket", gpuctld_cmd(db, sock), f"the queue at '{db}' is served by pid {first.pid}"),
        ("same database, other socket", gpuctld_cmd(db, os.path.join(shared, "other.sock")),
         f"the queue at '{db}' is served by pid {first.pid}"),
        ("other database, same socket", gpuctld_cmd(os.path.join(work, "q2.db"), sock),
         f"the queue socket '{sock}' is served by pid {first.pid}"),
    ]:
        rc, err = refused(cmd)
        check("daemons", rc == 1 and err == f"gpuctld: {want}", f"{what}: exit {rc}, {err!r}")
        check("daemons", os.path.exists(sock) and queue_ok(sock), f"{what}: the first gpuctld's socket is gone")
    check("daemons", not os.path.exists(os.path.join(shared, "other.sock")), "the refused gpuctld made its socket")
    # an unprivileged user aims a gpuctld of its own at root's socket: refused, the socket stays
    rc, err = refused(gpuctld_cmd(os.path.join(shared, "b.db"), sock, logs="run"), user=B)
    check("daemons", rc == 1 and sock in err and len(err.splitlines()) == 1, f"user's gpuctld: exit {rc}, {err!r}")
    check("daemons", os.path.exists(sock) and queue_ok(sock), "a user's gpuctld removed root's socket")
    print(f"daemons: a second gpuctld is refused naming pid {first.pid}; the socket stays and is served")

    # a user's lock file, held, in the shared socket directory: root's next gpuctld starts anyway
    hostile_sock = os.path.join(shared, "next.sock")
    holder = background(B, "flock", "-x", hostile_sock + ".lock", "sleep", "60")
    for _ in range(100):
        if os.path.exists(hostile_sock + ".lock"):
            break
        time.sleep(0.05)
    time.sleep(0.2)
    second = start(os.path.join(work, "next.db"), hostile_sock)
    check("daemons", queue_ok(hostile_sock), "root's gpuctld beside a user's lock file does not serve")
    harness.stop(second)
    kill_group(holder)  # flock and its sleep

    # the kernel drops the lock when the holder dies, even by SIGKILL
    first.send_signal(signal.SIGKILL)
    first.wait()
    again = start(db, sock)
    check("daemons", queue_ok(sock), "no queue after the first gpuctld was killed")
    harness.stop(again)
    check("daemons", not os.path.exists(sock), "a stopped gpuctld left its socket")
    print("daemons: a user's held lock file does not block root; after SIGKILL the next gpuctld starts")

    # ---- squat: B serves a socket where gpuctld's goes; A's and root's jobs (with their environments)
    # are not sent to it
    fake = os.path.join(shared, "squat.sock")
    squat = f"""
import json, os, socket
s = socket.socket(socket.AF_UNIX)
s.bind({fake!r})
os.chmod({fake!r}, 0o777)
s.listen(8)
print("up", flush=True)
while True:
    c, _ = s.accept()
    try:
        got = c.makefile().readline()
        if got:
            open({os.path.join(shared, "squat.got")!r}, "a").write(got)
        c.sendall(b'{{"ok": true, "id": 1, "jobs": []}}\\n')
    except OSError:
        pass
    c.close()
"""
    squatter = background(B, "/usr/bin/python3", "-c", squat, stdout=subprocess.PIPE, text=True)
    squatter.stdout.readline()
    senv = dict(env, GPUCTL_QUEUE_SOCKET=fake, MY_SECRET="hunter2")
    for who in (A, None):
        cmd = [GPUCTL, "submit", "--", "true"]
        p = subprocess.run(testusers.as_user_cmd(who, *cmd) if who else cmd, env=senv, capture_output=True,
                           text=True, timeout=30, cwd="/")
        check("squat", p.returncode == 1 and "refusing the queue socket" in p.stderr,
              f"{who or 'root'}'s submit to {B}'s socket: {p.returncode} {p.stdout!r} {p.stderr!r}")
    got = os.path.join(shared, "squat.got")
    check("squat", not os.path.exists(got), f"{B}'s socket got: {open(got).read()[:200] if os.path.exists(got) else ''!r}")
    kill_group(squatter)
    print(f"squat: {A}'s and root's submits refused {B}'s socket in gpuctld's place; it got nothing")

    # ---- own lease: a run inside the shell's pick --lease (item 3)
    script = r"""
set -u
eval "$(gpuctl pick -n 2 --lease --format env)" || exit 9
echo "picked=$CUDA_VISIBLE_DEVICES"
gpuctl run -- sh -c 'echo "run=$CUDA_VISIBLE_DEVICES"'; echo "run_rc=$?"
gpuctl run -n 1 -- sh -c 'echo "one=$CUDA_VISIBLE_DEVICES"'; echo "one_rc=$?"
gpuctl launch --dry-run -- train.py | grep '^export CUDA_VISIBLE_DEVICES='; echo "launch_rc=$?"
gpuctl run -n 3 -- true 2>/dev/null; echo "three_rc=$?"
gpuctl leases --json | /usr/bin/python3 -c 'import json,sys; print("held_after=%d" % len(json.load(sys.stdin)["leases"]))'
gpuctl pick --release 2>/dev/null; echo "release_rc=$?"
gpuctl leases --json | /usr/bin/python3 -c 'import json,sys; print("held_released=%d" % len(json.load(sys.stdin)["leases"]))'
"""
    p = subprocess.run(testusers.as_user_cmd(A, "bash", "-c", script), env=dict(env, PATH=os.path.dirname(GPUCTL) + ":" + os.environ["PATH"], GPUCTL_SIM=NODE),
                       capture_output=True, text=True, timeout=60, cwd=work)
    got = dict(line.split("=", 1) for line in p.stdout.split() if "=" in line)
    picked = got.get("picked")
    want = {"run": picked, "run_rc": "0", "one_rc": "0", "launch_rc": "0", "three_rc": "2", "held_after": "2",
            "release_rc": "0", "held_released": "0"}
    for k, v in want.items():
        check("own lease", got.get(k) == v, f"{k}={got.get(k)!r}, expected {v!r} (stdout {p.stdout!r}, stderr {p.stderr!r})")
    check("own lease", got.get("one") in (picked or "").split(","), f"-n 1 ran on {got.get('one')!r}, not in {picked!r}")
    check("own lease", "CUDA_VISIBLE_DEVICES=" + str(picked) in p.stdout, f"launch used other GPUs: {p.stdout!r}")
    # the shell's last command is exec'd in its place: the lease's holder is then the command itself
    p = subprocess.run(testusers.as_user_cmd(A, "bash", "-c", 'eval "$(gpuctl pick --lease --format env)" && '
                                             'gpuctl run -- sh -c \'echo "last=$CUDA_VISIBLE_DEVICES"\''),
                       env=dict(env, PATH=os.path.dirname(GPUCTL) + ":" + os.environ["PATH"], GPUCTL_SIM=NODE),
                       capture_output=True, text=True, timeout=60, cwd=work)
    check("own lease", p.returncode == 0 and re.search(r"^last=\d+$", p.stdout, re.M),
          f"run as the shell's exec'd last command: {p.returncode} {p.stdout!r} {p.stderr!r}")
    print(f"own lease: run and launch used the shell's GPUs {picked}, the lease outlived them, --release freed it")

    # another user's lease, with a record forged to name A's shell, is not A's
    uuid = subprocess.run([GPUCTL, "--sim", NODE, "query", "--query-gpu=uuid", "--format=csv,noheader", "-i", "3"],
                          env=env, capture_output=True, text=True).stdout.strip()
    sync = os.path.join(work, "sync")
    os.makedirs(sync)
    os.chmod(sync, 0o1777)
    victim = subprocess.Popen(testusers.as_user_cmd(A, "bash", "-c", f"""
echo $$ > {sync}/shell; while [ ! -e {sync}/ready ]; do sleep 0.05; done
CUDA_VISIBLE_DEVICES=3 GPUCTL_SIM={NODE} {GPUCTL} run -- true; echo "rc=$?"
"""), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for _ in range(200):
        if os.path.exists(f"{sync}/shell") and open(f"{sync}/shell").read().strip():
            break
        time.sleep(0.05)
    shell = int(open(f"{sync}/shell").read())
    # B's own claim on GPU 3, locked, whose record says it is A's shell's (uid, user, pid)
    forge = f"""
import fcntl, json, os, time
fd = os.open("{shared}/gpu-{uuid}.00000000000000b0", os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
os.write(fd, json.dumps({{"pid": {shell}, "supervisor": {shell}, "uid": {pwd_uid(A)}, "user": "{A}", "since": 1,
                        "name": "", "command": "forged", "request": ""}}).encode())
fcntl.lockf(fd, fcntl.LOCK_EX)
open("{sync}/ready", "w").close()
time.sleep(30)
"""
    forger = background(B, "/usr/bin/python3", "-c", forge, stdout=None, stderr=None)
    out, err = victim.communicate(timeout=30)
    kill_group(forger)
    # the holder is who made the claim, whatever its record says; A's pid in it is not shown as B's
    check("own lease", "rc=1" in out and f"GPU 3 is leased by {B} (since" in err, f"forged record: {out!r} {err!r}")
    print("own lease: a record forged by another user to name the shell does not make its GPU the shell's, "
          "and names its maker")

    # ---- control: other users' names never reach a terminal raw (item 7)
    evil = "evil\nname\x1b[31mRED\x9b"
    holder = background(A, GPUCTL, "--sim", NODE, "run", "--gpus", "5", "--name", evil, "--", "sleep", "30")
    qd = start(db, sock)
    qenv = dict(env, GPUCTL_QUEUE_SOCKET=sock)
    p = subprocess.run(testusers.as_user_cmd(A, GPUCTL, "submit", "-n", "8", "--name", "q\x1b[2Jx\ny", "--",
                                             "echo", "\x1b]0;title\x07"),
                       env=qenv, capture_output=True, text=True, timeout=30, cwd="/")
    job = p.stdout.strip()
    check("control", p.returncode == 0 and job.isdigit(), f"submit: {p.returncode} {p.stderr!r}")
    for _ in range(100):
        if subprocess.run([GPUCTL, "--sim", NODE, "leases", "--json"], env=env, capture_output=True,
                          text=True).stdout.count('"gpu": 5'):
            break
        time.sleep(0.05)
    views = {}
    for args in (["leases"], ["ls"], ["queue"], ["show", job]):
        r = subprocess.run([GPUCTL, "--sim", NODE, *args], env=qenv, capture_output=True, timeout=30)
        views[" ".join(args)] = r.stdout
        bad = [c for c in r.stdout.decode("utf-8", "replace") if ord(c) < 0x20 and c != "\n" or 0x7f <= ord(c) < 0xa0]
        check("control", r.returncode == 0 and not bad, f"{args}: exit {r.returncode}, control characters {bad!r}")
    check("control", b"evil?name?[31mRED?" in views["leases"] and b"evil?name?[31mRED?" in views["ls"],
          f"the name is not shown replaced: {views['leases']!r} {views['ls']!r}")
    check("control", b"q?[2Jx?y" in views["queue"] and b"q?[2Jx?y" in views[f"show {job}"],
          f"the job name is not shown replaced: {views['queue']!r}")
    lj = json.loads(subprocess.run([GPUCTL, "--sim", NODE, "leases", "--json"], env=env, capture_output=True,
                                   text=True).stdout)
    check("control", any(le["name"] == evil for le in lj["leases"]),
          f"leases --json lost the exact name: {lj['leases']!r}")
    sj = json.loads(subprocess.run([GPUCTL, "show", job, "--json"], env=qenv, capture_output=True,
                                   text=True).stdout)
    check("control", sj["job"]["name"] == "q\x1b[2Jx\ny", f"show --json lost the exact name: {sj['job']!r}")
    kill_group(holder)
    harness.stop(qd)
    print("control: leases, ls, queue and show print other users' names with control characters replaced")

    # ---- crowd: B holds as many idle connections as it can; A and root still get answers
    crowd_sock = os.path.join(shared, "crowd.sock")
    cd = start(os.path.join(work, "crowd.db"), crowd_sock, "--max-job-bytes", "0")  # slow: a job of 800 KB
    hog = f"""
import socket, time
held = []
for _ in range(100):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect({crowd_sock!r})
        held.append(s)
    except OSError:
        pass
print(len(held), flush=True)
time.sleep(30)
"""
    hogp = background(B, "/usr/bin/python3", "-c", hog, stdout=subprocess.PIPE, text=True)
    hogp.stdout.readline()
    time.sleep(0.3)  # gpuctld has accepted (or refused) them all
    t0 = time.monotonic()
    pa = subprocess.run(testusers.as_user_cmd(A, GPUCTL, "queue"), env=dict(env, GPUCTL_QUEUE_SOCKET=crowd_sock),
                        capture_output=True, text=True, timeout=30)
    took = time.monotonic() - t0
    check("crowd", pa.returncode == 0 and took < 5, f"{A}'s queue beside {B}'s 100 connections: {pa.returncode} "
          f"{pa.stderr!r} after {took:.1f} s")
    check("crowd", queue_ok(crowd_sock), "root's queue beside 100 connections of a user")
    kill_group(hogp)
    print(f"crowd: with {B} holding its connections, {A}'s gpuctl queue answered in {took * 1000:.0f} ms, root's too")

    # ---- slow: B asks for a big answer on 20 connections and never reads
    benv = dict(env, GPUCTL_QUEUE_SOCKET=crowd_sock)
    p = subprocess.run(testusers.as_user_cmd(B, GPUCTL, "submit", "--", "true", *(["x" * 4000] * 200)), env=benv,
                       capture_output=True, text=True, timeout=30, cwd="/")
    big = p.stdout.strip()
    check("slow", p.returncode == 0 and big.isdigit(), f"submit of a big job: {p.returncode} {p.stderr!r}")
    slow = f"""
import json, socket, time
held = []
for _ in range(20):
    s = socket.socket(socket.AF_UNIX)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect({crowd_sock!r})
    s.sendall(json.dumps({{"op": "show", "id": {int(big or 0)}}}).encode() + b"\\n")
    held.append(s)
print("asked", flush=True)
time.sleep(30)
"""
    slowp = background(B, "/usr/bin/python3", "-c", slow, stdout=subprocess.PIPE, text=True)
    slowp.stdout.readline()
    time.sleep(0.3)
    t0 = time.monotonic()
    pa = subprocess.run(testusers.as_user_cmd(A, GPUCTL, "queue"), env=benv, capture_output=True, text=True,
                        timeout=60)
    took = time.monotonic() - t0
    check("slow", pa.returncode == 0 and took < 2, f"{A}'s queue while {B} does not read: {pa.returncode} "
          f"{pa.stderr!r} after {took:.1f} s")
    kill_group(slowp)
    harness.stop(cd)
    print(f"slow: with 20 of {B}'s big answers unread, {A}'s gpuctl queue answered in {took * 1000:.0f} ms")

    # ---- bounds: --max-queued for users, not root; --after at most 64 ids
    bsock = os.path.join(shared, "bounds.sock")
    bd = start(os.path.join(work, "bounds.db"), bsock, "--max-queued", "2")
    benv = dict(env, GPUCTL_QUEUE_SOCKET=bsock)

    def submit_as(user, *args):
        cmd = [GPUCTL, "submit", *args] if user is None else testusers.as_user_cmd(user, GPUCTL, "submit", *args)
        return subprocess.run(cmd, env=benv, capture_output=True, text=True, timeout=30, cwd="/")
    first = submit_as(B, "--", "sleep", "30").stdout.strip()
    got = [submit_as(B, "--after", first, "--", "true") for _ in range(3)]
    check("bounds", [g.returncode for g in got] == [0, 0, 1] and "--max-queued 2" in got[2].stderr,
          f"{B}'s third queued job: {[(g.returncode, g.stderr.strip()) for g in got]}")
    rootjobs = [submit_as(None, "--after", first, "--", "true").returncode for _ in range(3)]
    check("bounds", rootjobs == [0, 0, 0], f"root's queued jobs beyond --max-queued: {rootjobs}")
    many = ",".join([first] * 65)
    p = submit_as(A, "--after", many, "--", "true")
    check("bounds", p.returncode == 1 and "at most 64" in p.stderr, f"--after with 65 ids: {p.returncode} {p.stderr!r}")
    harness.stop(bd)
    print("bounds: a user's third queued job refused at --max-queued 2, root's not; --after stops at 64 jobs")

    # ---- bounds: a job's size, a list however long, ended jobs forgotten (item 6)
    psock = os.path.join(shared, "pages.sock")
    pd = start(os.path.join(work, "pages.db"), psock, "--job-keep", "2s")
    penv = dict(env, GPUCTL_QUEUE_SOCKET=psock)

    def submit_p(user, *args):
        cmd = [GPUCTL, "submit", *args] if user is None else testusers.as_user_cmd(user, GPUCTL, "submit", *args)
        return subprocess.run(cmd, env=penv, capture_output=True, text=True, timeout=60, cwd="/")
    big = submit_p(B, "--", "true", *["x" * 100000] * 3)
    check("bounds", big.returncode == 1 and "--max-job-bytes" in big.stderr,
          f"a 300 KB command line at --max-job-bytes 256KiB: {big.returncode} {big.stderr!r}")
    blocker = submit_p(B, "-n", "8", "--", "sleep", "60").stdout.strip()
    for _ in range(90):
        if submit_p(B, "--after", blocker, "--", "true", *["y" * 100000] * 2).returncode != 0:
            break
    t0 = time.monotonic()
    lq = subprocess.run([GPUCTL, "queue", "--all"], env=penv, capture_output=True, text=True, timeout=60)
    list_took = time.monotonic() - t0
    rows = [l for l in lq.stdout.splitlines()[1:] if l.strip()]
    check("bounds", lq.returncode == 0 and len(rows) == 91, f"root's queue --all over 90 jobs of 200 KB: "
          f"{lq.returncode} {len(rows)} rows {lq.stderr[:200]!r}")
    # a raw request with a run option gpuctl run would refuse is refused at submit, not started 5 times
    raw = f"""
import json, os, socket
s = socket.socket(socket.AF_UNIX)
s.connect({psock!r})
s.sendall(json.dumps({{"op": "submit", "gpus": 1, "priority": 0, "argv": ["true"], "env": [], "cwd": "/",
                      "run": ["--cloud="]}}).encode() + b"\\n")
print(s.makefile().readline(), end="")
"""
    r = subprocess.run(testusers.as_user_cmd(B, "/usr/bin/python3", "-c", raw), env=penv, capture_output=True,
                       text=True, timeout=30)
    ans = json.loads(r.stdout or "{}")
    check("bounds", ans.get("ok") is False and "invalid --cloud ''" in ans.get("error", ""),
          f"a raw submit with --cloud=: {r.stdout!r} {r.stderr!r}")
    # a job that ended is forgotten after --job-keep
    subprocess.run(testusers.as_user_cmd(B, GPUCTL, "cancel", blocker), env=penv, capture_output=True, timeout=30)
    done = submit_p(A, "--", "true").stdout.strip()
    subprocess.run(testusers.as_user_cmd(A, GPUCTL, "wait", done), env=penv, capture_output=True, timeout=60)
    gone = False
    for _ in range(100):
        sh = subprocess.run(testusers.as_user_cmd(A, GPUCTL, "show", done), env=penv, capture_output=True,
                            text=True, timeout=30)
        if sh.returncode == 1 and f"no job {done}" in sh.stderr:
            gone = True
            break
        time.sleep(0.1)
    check("bounds", gone, f"job {done} still shown after --job-keep 2s: {sh.stdout!r} {sh.stderr!r}")
    harness.stop(pd)
    print(f"bounds: a 300 KB job refused at --max-job-bytes; root's queue --all over 90 jobs of 200 KB "
          f"(18 MB, in pages) took {list_took * 1000:.0f} ms; a raw submit with --cloud= refused; an ended job "
          f"forgotten after --job-keep 2s")

    # ---- first: the first user to wait in line must not own the queue for everyone
    fresh_state = os.path.join(work, "run2")
    os.makedirs(fresh_state)
    os.chmod(fresh_state, 0o1777)
    fenv = dict(env, GPUCTL_STATE_DIR=fresh_state)
    runs = []
    for who in (A, None, B):
        cmd = [GPUCTL, "--sim", NODE, "run", "--wait", "--", "true"]
        cmd = testusers.as_user_cmd(who, *cmd) if who else cmd
        r = subprocess.run(cmd, env=fenv, capture_output=True, text=True, timeout=30, cwd="/")
        runs.append((who or "root", r.returncode, r.stderr.strip()))
    check("first", all(rc == 0 for _, rc, _ in runs), f"runs after {A}'s first: {runs}")
    owned = [n for n in os.listdir(fresh_state) if os.path.isdir(os.path.join(fresh_state, n))]
    check("first", not owned, f"the state directory got subdirectories: {owned}")
    print(f"first: after {A} waited in line first, root's and {B}'s runs still work")

    # ---- files: everything B can do to the shared state directory's files at once (item 2, and 1)
    fdir = os.path.join(work, "files")  # a fresh root-owned 1777 state directory, as /run/gpuctl is
    os.makedirs(fdir)
    os.chmod(fdir, 0o1777)
    fenv = dict(env, GPUCTL_STATE_DIR=fdir)
    uuids = subprocess.run([GPUCTL, "--sim", NODE, "query", "--query-gpu=uuid", "--format=csv,noheader"],
                           env=env, capture_output=True, text=True).stdout.split()
    # A leases GPU 0 first, so that B has a live claim of A's to attack
    a_hold = background(A, GPUCTL, "--sim", NODE, "run", "--gpus", "0", "--", "sleep", "60", env=fenv)
    for _ in range(100):
        if any(n.startswith(f"gpu-{uuids[0]}.") for n in os.listdir(fdir)):
            break
        time.sleep(0.05)
    attack = f"""
import fcntl, glob, json, os, time
d = "{fdir}"
uuids = {uuids!r}
keep = []
# what every user used to have to lock or write: hold it, break it
for name in (".mutex", "seq"):
    fd = os.open(os.path.join(d, name), os.O_RDWR | os.O_CREAT, 0o600)
    os.write(fd, b"18446744073709551615")
    fcntl.flock(fd, fcntl.LOCK_EX)
    keep.append(fd)
# every lease file an older gpuctl would use, and one named as a claim for each GPU, made first, mode 600
for u in uuids:
    for name in ("gpu-" + u, "gpu-" + u + ".00000000000000c0"):
        fd = os.open(os.path.join(d, name), os.O_RDWR | os.O_CREAT, 0o600)
        keep.append(fd)
# A's live claim: write into it (refused), read-lock it (no effect)
for path in [p for p in glob.glob(os.path.join(d, "gpu-{uuids[0]}.*")) if not p.endswith("c0")]:
    try:
        os.open(path, os.O_WRONLY)
        print("WROTE", path, flush=True)
    except PermissionError:
        pass
    try:
        fd = os.open(path, os.O_RDONLY)
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, bytes(32))
        keep.append(fd)
    except OSError:
        pass
# the subdirectories older versions needed, made first and closed to everyone
for sub in ("queue", "ports"):
    os.makedirs(os.path.join(d, sub), mode=0o700, exist_ok=True)
# a ticket made now, when nobody waits, and locked only once A waits
t = os.open(os.path.join(d, "ticket.00000000000000c1"), os.O_RDWR | os.O_CREAT, 0o644)
os.write(t, json.dumps({{"ticket": 1, "want": 1}}).encode())
open(os.path.join(d, "planted"), "w").close()
while not glob.glob(os.path.join(d, "a-waits")):
    time.sleep(0.02)
fcntl.lockf(t, fcntl.LOCK_EX)
# and a ticket that is in line before A's next wait and never takes its turn
u = os.open(os.path.join(d, ".new-00000000000000c2"), os.O_RDWR | os.O_CREAT, 0o600)
fcntl.lockf(u, fcntl.LOCK_EX)
os.write(u, json.dumps({{"ticket": 2, "want": 1}}).encode())
os.fchmod(u, 0o644)
os.rename(os.path.join(d, ".new-00000000000000c2"), os.path.join(d, "ticket.00000000000000c2"))
open(os.path.join(d, "locked"), "w").close()
time.sleep(60)
"""
    attacker = background(B, "/usr/bin/python3", "-c", attack, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=fenv)
    for _ in range(200):
        if os.path.exists(os.path.join(fdir, "planted")):
            break
        time.sleep(0.05)
    check("files", os.path.exists(os.path.join(fdir, "planted")), f"{B}'s attack did not get going")
    # A's holder's record is still A's, and B's writes did not get in
    lj = json.loads(subprocess.run([GPUCTL, "--sim", NODE, "leases", "--json"], env=fenv, capture_output=True,
                                   text=True).stdout or "{}")
    held = {l["gpu"]: l["user"] for l in lj.get("leases", [])}
    check("files", held == {0: A}, f"leases with {B}'s files planted: {held}")
    # A takes 3 GPUs at once, and every GPU but the one A holds
    r3 = subprocess.run(testusers.as_user_cmd(A, GPUCTL, "--sim", NODE, "run", "-n", "3", "--", "true"), env=fenv,
                        capture_output=True, text=True, timeout=30, cwd="/")
    check("files", r3.returncode == 0, f"{A}'s run -n 3 with {B}'s files planted: {r3.returncode} {r3.stderr!r}")
    r7 = subprocess.run(testusers.as_user_cmd(A, GPUCTL, "--sim", NODE, "run", "-n", "7", "--", "true"), env=fenv,
                        capture_output=True, text=True, timeout=30, cwd="/")
    check("files", r7.returncode == 0, f"{A}'s run -n 7 with {B}'s files planted: {r7.returncode} {r7.stderr!r}")
    # A launches (a stand-in torchrun): its rendezvous port is claimed with B's ports/ in the way
    fake = os.path.join(work, "fakebin")
    os.makedirs(fake, exist_ok=True)
    with open(os.path.join(fake, "torchrun"), "w") as f:
        f.write("#!/bin/sh\necho \"$@\"\n")
    os.chmod(os.path.join(fake, "torchrun"), 0o755)
    os.chmod(fake, 0o755)
    ln = subprocess.run(testusers.as_user_cmd(A, GPUCTL, "--sim", NODE, "launch", "-n", "1", "--", "train.py"),
                        env=dict(fenv, PATH=fake + ":" + os.environ["PATH"]), capture_output=True, text=True,
                        timeout=30, cwd="/")
    check("files", ln.returncode == 0 and re.search(r"127\.0\.0\.1:\d+", ln.stdout),
          f"{A}'s launch with {B}'s ports/ made first: {ln.returncode} {ln.stdout!r} {ln.stderr!r}")
    # A waits for the GPU it holds; B then locks its old ticket: A must not wait behind it
    waiter = background(A, GPUCTL, "--sim", NODE, "run", "--gpus", "0", "--wait", "--", "true", env=fenv,
                        stderr=subprocess.PIPE)
    time.sleep(0.5)
    open(os.path.join(fdir, "a-waits"), "w").close()
    for _ in range(100):
        if os.path.exists(os.path.join(fdir, "locked")):
            break
        time.sleep(0.05)
    time.sleep(0.3)
    job_pid = [l["pid"] for l in lj.get("leases", []) if l["gpu"] == 0]
    if job_pid:
        os.kill(job_pid[0], signal.SIGKILL)  # the job runs in a process group of its own
    t0 = time.monotonic()
    a_hold.wait()  # the holder sees its job end and lets GPU 0 go
    try:
        waiter.wait(timeout=8)
    except subprocess.TimeoutExpired:
        kill_group(waiter)
    late_took = time.monotonic() - t0
    check("files", waiter.returncode == 0 and late_took < 1.5,
          f"{A}'s run --wait behind a ticket {B} locked late: rc {waiter.returncode} after {late_took:.1f} s "
          f"{waiter.stderr.read()!r}")
    # B's ticket c2 was in line before this wait, and never takes its turn: A waits LEASE_IDLE_MS at most
    a_hold = background(A, GPUCTL, "--sim", NODE, "run", "-n", "8", "--", "sleep", "1", env=fenv)
    time.sleep(0.4)
    t0 = time.monotonic()
    r = subprocess.run(testusers.as_user_cmd(A, GPUCTL, "--sim", NODE, "run", "--wait", "--", "true"), env=fenv,
                       capture_output=True, text=True, timeout=60, cwd="/")
    idle_took = time.monotonic() - t0
    a_hold.wait()
    check("files", r.returncode == 0 and idle_took < 6,
          f"{A}'s run --wait behind {B}'s idle ticket: rc {r.returncode} after {idle_took:.1f} s {r.stderr!r}")
    # gpuctld (root) dispatches A's queued job with all of it in place
    msock = os.path.join(shared, "files.sock")
    md = start(os.path.join(work, "files.db"), msock)
    menv = dict(env, GPUCTL_QUEUE_SOCKET=msock)
    t0 = time.monotonic()
    job = subprocess.run(testusers.as_user_cmd(A, GPUCTL, "submit", "-n", "3", "--", "true"), env=menv,
                         capture_output=True, text=True, timeout=60, cwd="/").stdout.strip()
    w = subprocess.run(testusers.as_user_cmd(A, GPUCTL, "wait", job), env=menv, capture_output=True, text=True,
                       timeout=60)
    job_took = time.monotonic() - t0
    check("files", w.returncode == 0 and job_took < 5, f"{A}'s queued job: {w.returncode} {w.stdout!r} in "
          f"{job_took:.1f} s")
    harness.stop(md)
    kill_group(attacker)
    out = attacker.stdout.read().decode() + attacker.stderr.read().decode()
    check("files", "WROTE" not in out and "Traceback" not in out, f"{B}'s attack: {out!r}")
    print(f"files: with {B} holding .mutex, breaking seq, making every lease file first (mode 600), read-locking "
          f"{A}'s claim, planting tickets and making queue/ and ports/ first, {A}'s run -n 3 and -n 7 and a launch "
          f"worked, a wait behind a late-locked ticket "
          f"took {late_took:.2f} s, behind an idle one {idle_took:.2f} s, a queued job {job_took:.2f} s")

    # ---- no inotify left: A's own processes hold all of A's inotify instances (fs.inotify.max_user_instances);
    # A's run --wait still gets the GPU once it is released (it looks every 100 ms instead of being woken)
    hogi = background(A, "/usr/bin/python3", "-c",
                      "import ctypes, time\nc = ctypes.CDLL(None, use_errno=True)\nn = 0\n"
                      "while c.inotify_init() >= 0:\n    n += 1\nprint(n, ctypes.get_errno(), flush=True)\n"
                      "time.sleep(60)", stdout=subprocess.PIPE, text=True)
    took_all = hogi.stdout.readline().split()
    istate = os.path.join(work, "inostate")
    os.makedirs(istate)
    os.chmod(istate, 0o1777)
    ienv = dict(env, GPUCTL_STATE_DIR=istate)
    iholder = background(A, GPUCTL, "--sim", NODE, "run", "--gpus", "0", "--", "sleep", "1", env=ienv)
    time.sleep(0.5)
    iw = subprocess.run(testusers.as_user_cmd(A, GPUCTL, "--sim", NODE, "run", "--gpus", "0", "--wait", "--", "echo",
                                              "got it"), env=ienv, capture_output=True, text=True, timeout=60,
                        cwd="/")
    iholder.wait()
    kill_group(hogi)
    check("inotify", len(took_all) == 2 and took_all[1] == str(errno.EMFILE) and iw.returncode == 0 and
          iw.stdout == "got it\n", f"{A} with its {took_all} inotify instances taken: run --wait rc {iw.returncode} "
          f"{iw.stdout!r} {iw.stderr!r}")
    print(f"inotify: with all {took_all[0] if took_all else '?'} of {A}'s inotify instances taken, its run --wait "
          "still got GPU 0 once released")

    # ---- stale log: job 1 of a fresh database must not write into, or show, user A's old 1.log
    logs = os.path.join(work, "oldlogs")
    os.makedirs(logs)
    os.chmod(logs, 0o711)
    old = os.path.join(logs, "1.log")
    with open(old, "w") as f:
        f.write("A's secret output\n")
    os.chown(old, pwd.getpwnam(A).pw_uid, pwd.getpwnam(A).pw_gid)
    os.chmod(old, 0o600)
    fresh_sock = os.path.join(shared, "fresh.sock")
    fd = start(os.path.join(work, "fresh.db"), fresh_sock, logs="oldlogs")
    benv = dict(env, GPUCTL_QUEUE_SOCKET=fresh_sock)
    p = subprocess.run(testusers.as_user_cmd(B, GPUCTL, "submit", "--", "echo", "hello from B"), env=benv,
                       capture_output=True, text=True, timeout=30, cwd="/")
    check("stale log", p.returncode == 0 and p.stdout.strip() == "1", f"submit: {p.returncode} {p.stdout!r} {p.stderr!r}")
    for _ in range(200):
        w = subprocess.run(testusers.as_user_cmd(B, GPUCTL, "show", "1", "--json"), env=benv, capture_output=True,
                           text=True, timeout=30)
        if w.returncode == 0 and json.loads(w.stdout)["job"]["state"] in ("done", "failed"):
            break
        time.sleep(0.05)
    out = subprocess.run(testusers.as_user_cmd(B, GPUCTL, "logs", "1"), env=benv, capture_output=True, text=True,
                         timeout=30)
    st = os.stat(old)
    check("stale log", out.stdout == "hello from B\n" and st.st_uid == pwd.getpwnam(B).pw_uid,
          f"B's job 1 log: {out.stdout!r} {out.stderr!r}, owner uid {st.st_uid}")
    harness.stop(fd)
    print("stale log: a fresh queue's job 1 got a new log, not another user's old 1.log")
finally:
    for d in daemons:
        harness.stop(d)
    testusers.cleanup()

harness.finish(work=work)
