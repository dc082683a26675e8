#!/usr/bin/env python3
"""gpuctld's job queue with two real unprivileged users, created here and
removed at the end (issue 9):

  identity:  a job runs with its submitter's uid, gid and groups, in its
             directory, with its environment; its log is its own (0600);
  isolation: the other user cannot see, show, cancel or read the job;
             root sees both;
  dispatch:  FIFO behind a blocked 8-GPU job; cancel of queued and running
             jobs; --after waits for success and cancels on failure;
  bad input: a command that does not exist fails the job (127) and the
             daemon lives; a huge environment is refused; a client that
             disconnects mid-request is dropped; unknown job ids;
  runner:    the job runner (gpuctld-runner) killed while a job runs: the
             job is adopted and ends done; the next job gets a new runner;
  restart:   gpuctld killed with SIGKILL while a job runs and others wait:
             after a restart nothing queued is lost, the running job is
             adopted, and every job ends exactly once.
Skips (77) unless run as root with useradd (it must create the users).
  handshake: a job the runner forks (through tests/integration/runner-job.c)
             runs only after a byte on its go pipe, and records how it
             ended; gpuctl run takes no option for any of that.
Usage: gpuctld-queue.py GPUCTLD GPUCTL SRCDIR RUNNER_JOB
"""
import json
import os
import pwd
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import harness
import testusers
from harness import check, until_value

GPUCTLD, GPUCTL, SRC = os.path.realpath(sys.argv[1]), os.path.realpath(sys.argv[2]), sys.argv[3]
RUNNER_JOB = os.path.realpath(sys.argv[4])
RUNNER = os.path.join(os.path.dirname(GPUCTLD), "gpuctld-runner")
NODE = os.path.join(SRC, "tests", "cli", "nodes", "idle-8x.json")
GROUP = testusers.GROUP
A, B = testusers.create("the queue test creates two users")

work = tempfile.mkdtemp(prefix="gpuctl-queue-")
os.chmod(work, 0o755)
sock = os.path.join(work, "q.sock")
base_env = {k: v for k, v in os.environ.items() if not k.startswith("GPUCTL_") or k in ("GPUCTL_SIM_LIBDIR", "GPUCTL_AUTHORITY_DIR")}
base_env.update({"GPUCTL_STATE_DIR": os.path.join(work, "state"), "GPUCTL_SIM_RUNDIR": os.path.join(work, "rd"),
                 "GPUCTL_QUEUE_SOCKET": sock})
# shared by every user, as /run/gpuctl is
for d in ("state", "rd"):
    os.makedirs(os.path.join(work, d))
    os.chmod(os.path.join(work, d), 0o1777)


def sh(*cmd, **kw):
    return subprocess.run(list(cmd), capture_output=True, text=True, **kw)


daemon_log = []  # gpuctld's stderr after its start-up lines


def start():
    d = subprocess.Popen([GPUCTLD, "--sim", NODE, "--listen", "127.0.0.1:0", "--queue-db", os.path.join(work, "q.db"),
                          "--queue-socket", sock, "--log-dir", os.path.join(work, "logs")],
                         env=base_env, stderr=subprocess.PIPE, text=True)
    global url
    for _ in range(50):  # recovery lines ("adopted") may come first
        line = d.stderr.readline()
        m = re.search(r"listening on (http://\S+)/", line)
        if m:
            url = m.group(1)
        if "queue on" in line:
            # keep reading what it logs, so that a full pipe never blocks it
            threading.Thread(target=lambda: daemon_log.extend(iter(d.stderr.readline, "")), daemon=True).start()
            return d
    d.kill()
    raise SystemExit(f"FAIL: gpuctld did not start its queue: {line!r}")


def as_user(user, *args, env=None, cwd=None):
    e = dict(base_env, **(env or {}))
    cmd = testusers.as_user_cmd(user, GPUCTL, *args)
    return subprocess.run(cmd, env=e, capture_output=True, text=True, cwd=cwd or work, timeout=30)


def root(*args, env=None):
    return subprocess.run([GPUCTL, *args], env=dict(base_env, **(env or {})), capture_output=True, text=True,
                          timeout=30)


def job_runs(daemon_pid, jobs, whole=False):
    """the pids of the gpuctl runs (titled "gpuctl job-ID --") of these jobs among the daemon's descendants:
    only this test's, on a machine running tests side by side; whole: and the processes under them"""
    kids, todo, found = {}, [daemon_pid], []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        kids.setdefault(ppid, []).append(int(pid))
    while todo:
        p = todo.pop()
        for k in kids.get(p, []):
            todo.append(k)
            try:
                with open(f"/proc/{k}/cmdline", "rb") as f:
                    cmd = f.read()
            except OSError:
                continue
            if any(cmd.startswith(f"gpuctl job-{j} --".encode()) for j in jobs):
                found.append(k)
    for p in list(found) if whole else []:
        under = [p]
        while under:
            for k in kids.get(under.pop(), []):
                found.append(k)
                under.append(k)
    return found


def state(job, who=None):
    p = as_user(who, "show", str(job), "--json") if who else root("show", str(job), "--json")
    return json.loads(p.stdout)["job"] if p.returncode == 0 else None


def wait_state(job, states, secs=20):
    """the job once it is in one of states, within secs; else as it was last seen (None: not readable)"""
    return until_value(lambda: state(job), lambda j: j and j["state"] in states, secs, step=0.1)


daemon = start()
try:
    # ---- the handshake of a job the runner forks: the go pipe and the status record, through
    # the runner itself (tests/integration/runner-job.c), as gpuctld drives it
    uuid0 = subprocess.run([GPUCTL, "--sim", NODE, "query", "--query-gpu=uuid", "--format=csv,noheader", "-i", "0"],
                           env=base_env, capture_output=True, text=True).stdout.strip()

    def record(path, slot):
        """job slot's record in a status file: "ID RAN STATUS END RETRIES" """
        with open(path, "rb") as f:
            f.seek(slot * 32)
            return f.read(32).split(b"\0")[0].decode().strip()

    def runner_job(tag, go, term=False, placed=None, cmd=None):
        """a job (touch FLAG) through the runner with go (bytes) on its go pipe; SIGTERM first when term"""
        r, w = os.pipe()
        flag, status, log = (os.path.join(work, f"{x}-{tag}") for x in ("ran", "status", "log"))
        open(status, "w").close()
        p = subprocess.Popen([RUNNER_JOB, RUNNER, log, status, "1", placed or f"0={uuid0}", str(r), "--"] +
                             (cmd or ["touch", flag]),
                             env=base_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             pass_fds=(r,))
        os.close(r)
        spawned = p.stdout.readline().split()
        leased = False
        if term and len(spawned) != 2:
            p.wait(timeout=30)
            return ["not", "spawned"], False, "", False, p.stderr.read()
        if term:
            for _ in range(200):  # until its lease is taken
                leased = "runner-job" in root("leases").stdout
                if leased:
                    break
                time.sleep(0.02)
            os.kill(int(spawned[1]), signal.SIGTERM)
            time.sleep(0.2)
        try:
            os.write(w, go)  # too late after a SIGTERM: it has gone (the pipe may be closed)
        except BrokenPipeError:
            pass
        os.close(w)
        out, err = p.communicate(timeout=30)
        return out.split(), os.path.exists(flag), record(status, 1), leased, err

    for go, want_ran in ((b"", False), (b"x", True)):
        ended, ran, left, _, err = runner_job(f"go-{want_ran}", go)
        check("go pipe", ended == ["exited", "0"] and ran == want_ran and left == ("1 1 0 0 0" if want_ran else "1 0 0 -1 0"),
              f"go pipe with {go!r}: {ended}, ran {ran}, status record {left!r}, {err!r}")
    # SIGTERM (a cancel) while it holds its GPUs and waits for the byte: the command never starts
    ended, ran, left, leased, err = runner_job("term", b"x", term=True)
    check("go pipe", leased and ended == ["exited", "143"] and not ran and left == "1 0 143 -1 0",
          f"SIGTERM before the byte: leased {leased}, {ended}, ran {ran}, status record {left!r}, {err!r}")
    print("go pipe: end of file runs nothing and records '0 0'; a byte runs the command; "
          "SIGTERM while it waits runs nothing")
    # the placed GPUs, leased as given (no look at NVML), named in index order in the job's environment
    uuids = subprocess.run([GPUCTL, "--sim", NODE, "query", "--query-gpu=uuid", "--format=csv,noheader"],
                           env=base_env, capture_output=True, text=True).stdout.split()
    envf = os.path.join(work, "placed-env")
    ended, _, left, _, err = runner_job("placed", b"x", placed=f"6={uuids[6]},1={uuids[1]}",
                                        cmd=["sh", "-c", f"echo $CUDA_VISIBLE_DEVICES $GPUCTL_GPUS $GPUCTL_GPU_UUIDS "
                                             f"$GPUCTL_NUM_GPUS > {envf}"])
    seen = open(envf).read().split() if os.path.exists(envf) else []
    check("placed", ended == ["exited", "0"] and seen == ["1,6", "1,6", f"{uuids[1]},{uuids[6]}", "2"],
          f"placed 6,1: {ended}, environment {seen}, record {left!r}, {err!r}")
    # a placement naming a GPU twice (never one of gpuctld's): refused before anything runs
    ended, ran, left, _, err = runner_job("twice", b"x", placed=f"1={uuids[1]},1={uuids[2]}")
    logtext = open(os.path.join(work, "log-twice")).read() if os.path.exists(os.path.join(work, "log-twice")) else ""
    check("placed", ended == ["exited", "2"] and not ran and "GPU 1 twice" in logtext,
          f"placed 1 twice: {ended}, ran {ran}, record {left!r}, log {logtext!r}")
    # gpuctl run itself takes none of the runner's fields as options
    for opt in ("--placed=0=" + uuid0, "--go-fd=3", "--status-file=/dev/null", "--status-slot=1"):
        p = subprocess.run([GPUCTL, "--sim", NODE, "run", opt, "--", "true"], env=base_env, capture_output=True,
                           text=True)
        check("no internal option", p.returncode == 2 and "unknown option" in p.stderr,
              f"gpuctl run {opt}: rc {p.returncode}, {p.stderr!r}")

    # ---- identity
    adir = os.path.join(work, "adir")
    os.makedirs(adir)
    os.chown(adir, pwd.getpwnam(A).pw_uid, pwd.getpwnam(A).pw_gid)
    p = as_user(A, "submit", "--name", "whoami", "--", "sh", "-c",
                'echo "uid=$(id -u) gid=$(id -g) groups=$(id -Gn) pwd=$(pwd) secret=$MY_SECRET gpus=$CUDA_VISIBLE_DEVICES"',
                env={"MY_SECRET": "s3cr3t"}, cwd=adir)
    if not check("identity", p.returncode == 0 and p.stdout.strip().isdigit(), f"submit as {A}: {p.returncode} {p.stderr!r}"):
        raise SystemExit("FAIL: " + harness.errors[-1])
    job = int(p.stdout.strip()) if p.stdout.strip().isdigit() else 0
    j = wait_state(job, ("done", "failed"))
    log = os.path.join(work, "logs", f"{job}.log")
    text = open(log).read() if os.path.exists(log) else ""
    ua = pwd.getpwnam(A)
    check("identity", j and j["state"] == "done", f"job {job}: {j}")
    check("identity", f"uid={ua.pw_uid} gid={ua.pw_gid}" in text and GROUP in text and f"pwd={adir}" in text
          and "secret=s3cr3t" in text and j is not None and len(j.get("gpus", [])) == 1
          and f"gpus={j['gpus'][0]}\n" in text, f"log: {text!r}, job: {j}")
    st = os.stat(log) if os.path.exists(log) else None
    check("identity", st and st.st_uid == ua.pw_uid and (st.st_mode & 0o777) == 0o600, f"log owner/mode: {st}")
    lg = as_user(A, "logs", str(job))
    check("logs", lg.returncode == 0 and lg.stdout == text, f"gpuctl logs as {A}: {lg.returncode} {lg.stdout!r}")
    print(f"identity: job {job} ran as {A} (uid {ua.pw_uid}, groups incl. {GROUP}) in its directory with its env")

    # ---- isolation
    check("isolation", as_user(B, "show", str(job)).returncode == 1, f"{B} can show {A}'s job")
    check("isolation", as_user(B, "logs", str(job)).returncode == 1, f"{B} can read {A}'s job's log")
    q = as_user(B, "queue", "--all", "--json")
    check("isolation", q.returncode == 0 and json.loads(q.stdout)["jobs"] == [], f"{B} sees: {q.stdout!r}")
    r = as_user(B, "submit", "--", "sh", "-c", "cat " + log)
    bj = int(r.stdout.strip())
    jb = wait_state(bj, ("done", "failed"))
    btext = open(os.path.join(work, "logs", f"{bj}.log")).read()
    check("isolation", jb and jb["state"] == "failed" and "s3cr3t" not in btext and "Permission denied" in btext,
          f"{B} read {A}'s log: {btext!r}")
    long_a = int(as_user(A, "submit", "--", "sleep", "30").stdout.strip())
    wait_state(long_a, ("running",))
    c = as_user(B, "cancel", str(long_a))
    check("isolation", c.returncode == 1 and "no job" in c.stderr, f"{B} cancelled {A}'s job: {c.stdout!r} {c.stderr!r}")
    allq = json.loads(root("queue", "--all", "--json").stdout)["jobs"]
    check("isolation", {x["user"] for x in allq} == {A, B}, f"root sees {[x['user'] for x in allq]}")
    print(f"isolation: {B} cannot show, list, cancel or read {A}'s job; root sees both")
    # --user and --state (issue 35): root asks for one user's, or one state's; a user asking for
    # another's gets nothing
    ua_ids = {x["id"] for x in allq if x["user"] == A}
    byuser = json.loads(root("queue", "--all", "--user", A, "--json").stdout)["jobs"]
    check("filters", {x["id"] for x in byuser} == ua_ids and [x["id"] for x in byuser] == sorted(ua_ids),
          f"--user {A}: {[x['id'] for x in byuser]}, expected {sorted(ua_ids)}")
    running = json.loads(root("queue", "--state", "running", "--json").stdout)["jobs"]
    check("filters", long_a in [x["id"] for x in running] and all(x["state"] == "running" for x in running),
          f"--state running: {[(x['id'], x['state']) for x in running]}")
    failed = json.loads(root("queue", "--state", "failed", "--user", B, "--json").stdout)["jobs"]
    check("filters", [x["id"] for x in failed] == [bj], f"--state failed --user {B}: {failed}")
    peek = as_user(B, "queue", "--all", "--user", A, "--json")
    check("filters", peek.returncode == 0 and json.loads(peek.stdout)["jobs"] == [], f"{B} --user {A}: {peek.stdout!r}")
    none = root("queue", "--state", "lost")
    check("filters", none.returncode == 0 and none.stdout.strip() == "no job matches", f"--state lost: {none.stdout!r}")
    print("filters: --user and --state list only those, in id order; another user's are not for a user to see")

    # ---- cancel, FIFO behind a blocked job, --after
    c = as_user(A, "cancel", str(long_a))
    ja = wait_state(long_a, ("cancelled", "failed", "done"))
    check("cancel", c.returncode == 0 and ja and ja["state"] == "cancelled", f"running cancel: {ja}")
    hold = int(root("submit", "-n", "2", "--", "sleep", "3").stdout.strip())
    wait_state(hold, ("running",))
    big = int(root("submit", "-n", "8", "--", "true").stdout.strip())
    small = int(root("submit", "-n", "1", "--", "true").stdout.strip())
    time.sleep(0.5)
    check("fifo", state(small)["state"] == "queued" and state(big)["state"] == "queued",
          "a 1-GPU job jumped ahead of the waiting 8-GPU job")
    # why they wait, as squeue's REASON column (issue 16, item 10)
    sb, ss = state(big), state(small)
    check("reason", sb.get("pending") == "Resources" and "8 GPUs requested" in sb.get("pending_reason", "") and
          ss.get("pending") == "Priority", f"pending reasons: {sb.get('pending_reason')!r} {ss.get('pending_reason')!r}")
    qtext = root("queue").stdout
    check("reason", re.search(rf"^{big} .*\(Resources\)", qtext, re.M), f"queue shows no reason: {qtext!r}")
    stext = root("show", str(big)).stdout
    check("reason", re.search(r"^submitted +\d\d:\d\d:\d\d, waited \d+s so far$", stext, re.M) and
          "_ms" not in stext and "pending_reason 8 GPUs requested" in stext,
          f"show: {stext!r}")
    # --after a job that does not exist, or that another user's is: refused at submit
    p = root("submit", "--after", "999999", "--", "true")
    check("after", p.returncode == 1 and "no job 999999" in p.stderr and not p.stdout, f"--after 999999: {p.stderr!r}")
    p = as_user(B, "submit", "--after", str(big), "--", "true")
    check("after", p.returncode == 1 and f"no job {big}" in p.stderr, f"{B} --after root's job: {p.stderr!r}")
    dep_ok = int(root("submit", "--after", str(big), "--", "true").stdout.strip())
    check("reason", state(dep_ok).get("pending") == "Dependency", f"--after job: {state(dep_ok)}")
    failing = int(root("submit", "--", "sh", "-c", "exit 5").stdout.strip())
    dep_bad = int(root("submit", "--after", str(failing), "--", "true").stdout.strip())
    queued = int(root("submit", "-n", "8", "--", "true").stdout.strip())
    check("cancel", root("cancel", str(queued)).returncode == 0 and state(queued)["state"] == "cancelled",
          "queued cancel")
    for jid, want in ((big, "done"), (small, "done"), (dep_ok, "done"), (failing, "failed"), (dep_bad, "cancelled")):
        jj = wait_state(jid, ("done", "failed", "cancelled", "lost"), 30)
        check("dispatch", jj and jj["state"] == want, f"job {jid}: {jj and jj['state']}, want {want}")
    w = root("wait", str(failing))
    check("wait", w.returncode == 5 and w.stdout.strip() == f"{failing} failed 5", f"wait: {w.returncode} {w.stdout!r}")
    fj = int(root("submit", "--", "sh", "-c", "for i in 1 2 3; do echo line $i; sleep 0.3; done").stdout.strip())
    f = root("logs", "-f", str(fj))
    check("logs", f.returncode == 0 and f.stdout == "line 1\nline 2\nline 3\n", f"logs -f: {f.returncode} {f.stdout!r}")
    print("dispatch: FIFO behind a blocked 8-GPU job; cancel of queued and running jobs; --after both ways; "
          "wait returns the job's status; logs -f follows a job to its end")

    # ---- filters: --model, --min-free-mem (30 GiB taken on GPU 0 by a registered process)
    hold = subprocess.Popen([os.path.join(os.environ["GPUCTL_SIM_LIBDIR"], "gpuctl-sim-hold"), "--gpu", "0",
                             "--mem", "30GiB", "--", "sleep", "20"], env=base_env)
    time.sleep(1.5)  # a sample sees it
    p = root("submit", "--model", "A100", "--", "true")
    check("filters", p.returncode == 1 and "could ever match" in p.stderr, f"--model A100: {p.stderr!r}")
    p = root("submit", "--min-free-mem", "100G", "--", "true")
    check("filters", p.returncode == 1 and "could ever match" in p.stderr, f"--min-free-mem 100G: {p.stderr!r}")
    p = root("submit", "--min-free-mem", "abc", "--", "true")
    check("filters", p.returncode == 2 and "invalid --min-free-mem 'abc'" in p.stderr, f"{p.stderr!r}")
    roomy = int(root("submit", "--model", "*H100*", "--min-free-mem", "60G", "--", "true").stdout.strip())
    jr = wait_state(roomy, ("done", "failed"))
    check("filters", jr and jr["state"] == "done" and jr["gpus"] and 0 not in jr["gpus"] and jr.get("filters", {}).get("model") == "*H100*",
          f"a job asking for 60 GiB free ran on GPU {jr and jr['gpus']} (GPU 0 has 30 GiB taken): {jr}")
    other = int(as_user(A, "submit", "--", "true").stdout.strip())
    jo = wait_state(other, ("done", "failed"))
    check("filters", jo and jo["state"] == "done" and jo["gpus"] and 0 not in jo["gpus"],
          f"{A}'s job ran on GPU {jo and jo['gpus']}, where root's process runs: {jo}")
    hold.terminate()
    hold.wait()
    print(f"filters: --model and --min-free-mem choose the GPUs (ran on GPU {jr and jr['gpus']}); "
          f"{A}'s job kept off GPU 0 where root's process runs; impossible requests refused at submit")

    # ---- gpuctl run's supervisor options, passed through submit
    ck = os.path.join(work, "ck")
    ro = int(root("submit", "--restart", "on-failure", "--max-restarts", "1", "--backoff", "0.1",
                  "--checkpoint-dir", ck, "--", "sh", "-c",
                  'echo "try=$GPUCTL_RESTART_COUNT ck=$GPUCTL_CHECKPOINT_DIR"; exit 3').stdout.strip())
    jro = wait_state(ro, ("failed", "done"))
    log = root("logs", str(ro)).stdout
    check("run-options", jro and jro["state"] == "failed" and jro.get("exit_code") == 3 and "try=0" in log
          and "try=1" in log and f"ck={ck}" in log and jro.get("run_options") == [
              "--restart=on-failure", "--max-restarts=1", "--backoff=0.1", f"--checkpoint-dir={ck}"],
          f"--restart/--checkpoint-dir through submit: {jro} log {log!r}")
    p = root("submit", "--restart", "bogus", "--", "true")
    check("run-options", p.returncode == 2 and "--restart" in p.stderr, f"submit --restart bogus: {p.stderr!r}")
    p = root("submit", "--cloud", "mars", "--", "true")
    check("run-options", p.returncode == 2 and "invalid --cloud 'mars'" in p.stderr, f"submit --cloud mars: {p.stderr!r}")
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    s.sendall(json.dumps({"op": "submit", "gpus": 1, "argv": ["true"], "env": [], "cwd": "/",
                          "run": ["--gpus=7"]}).encode() + b"\n")
    ans = json.loads(s.makefile().readline())
    s.close()
    check("run-options", not ans["ok"] and "not a gpuctl run option" in ans["error"], f"run ['--gpus=7']: {ans}")
    print("run options: --restart, --max-restarts, --backoff and --checkpoint-dir reach gpuctl run; "
          "bad values refused at submit; other gpuctl run options refused by the daemon")

    # ---- pages (issue 35): gpuctl queue's table comes from gpuctld as rows of text, 4096 to an
    # answer. More than a page of jobs, one named to forge a field and a row, is listed whole, in
    # id order, as --json lists it, each job on one line.
    keep = int(root("submit", "--name", "keep", "--", "sleep", "120").stdout.strip())
    wait_state(keep, ("running",))
    paged = []
    for i in range(4100):
        ans = harness.queue_request(sock, {"op": "submit", "gpus": 1, "argv": ["echo", f"p{i}"], "env": [], "cwd": "/",
                                           "after": str(keep), "name": "tab\there\nrow" if i == 7 else f"pg{i}"})
        if not check("pages", ans.get("ok"), f"submit {i}: {ans}"):
            break
        paged.append(ans["id"])
    text = root("queue").stdout.splitlines()
    listed = json.loads(root("queue", "--json").stdout)["jobs"]
    rows = {int(line.split()[0]): line for line in text[1:] if line.split() and line.split()[0].isdigit()}
    check("pages", [int(line.split()[0]) for line in text[1:]] == [j["id"] for j in listed] and
          set(paged) <= set(rows) and len(text) == len(listed) + 1,
          f"{len(text) - 1} rows, {len(listed)} jobs in --json, {len(set(paged) - set(rows))} of {len(paged)} missing")
    check("pages", all(re.search(rf"^{j} +root +queued +1 +\(Dependency\) +pg\d+ +echo p\d+$", rows.get(j, ""))
                       for j in paged if j != paged[7]), f"a row of a waiting job: {rows.get(paged[0])!r}")
    check("pages", re.search(rf"^{paged[7]} +root +queued .* tab\?here\?row +echo p7$", rows.get(paged[7], "")),
          f"the row of the job named with a tab and a newline: {rows.get(paged[7])!r}")
    root("cancel", str(keep))
    last = wait_state(paged[-1], ("cancelled", "failed", "done"), secs=60)
    check("pages", last and last["state"] == "cancelled", f"the jobs after a cancelled one: {last}")
    print("pages: gpuctl queue lists 4100 waiting jobs whole (two pages of rows), in id order, as --json does; "
          "a name with a tab and a newline stays in its field")

    # ---- bad input
    nx = int(root("submit", "--", "/nonexistent/cmd").stdout.strip())
    jj = wait_state(nx, ("failed", "done"))
    check("bad", jj and jj["state"] == "failed" and jj.get("exit_code") == 127, f"nonexistent command: {jj}")
    huge = root("submit", "--", "true", env={f"HUGE{i}": "x" * 100000 for i in range(12)})
    check("bad", huge.returncode == 1 and "larger than" in huge.stderr, f"huge env: {huge.returncode} {huge.stderr!r}")
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    s.sendall(b'{"op": "submit", "argv": ["tr')
    s.close()
    for args, frag in ((["show", "999999"], "no job 999999"), (["cancel", "999999"], "no job 999999")):
        p = root(*args)
        check("bad", p.returncode == 1 and frag in p.stderr, f"{args}: {p.returncode} {p.stderr!r}")
    p = root("show", "x1")
    check("bad", p.returncode == 2 and "invalid job id 'x1'" in p.stderr, f"show x1: {p.stderr!r}")
    check("bad", daemon.poll() is None and root("queue").returncode == 0, "gpuctld died on bad input")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    held = int(root("submit", "--name", "on-page", "--", "sleep", "2").stdout.strip())
    wait_state(held, ("running",))
    for _ in range(40):  # the page is rendered at most every 0.2 s
        jobs = json.loads(opener.open(url + "/api/v1/jobs").read())
        mine = [x for x in jobs["jobs"] if x["id"] == held]
        if mine and mine[0]["state"] == "running":
            break
        time.sleep(0.05)
    check("api", jobs["queue"] and mine and mine[0]["state"] == "running" and mine[0]["name"] == "on-page"
          and not any("argv" in x or "env" in x or "cwd" in x for x in jobs["jobs"]),
          f"/api/v1/jobs: {jobs}")
    # the total is the kept count: as many as the page lists while it is short (issue 35)
    check("api", jobs["total"] == len(jobs["jobs"]) and jobs["truncated"] is False,
          f"/api/v1/jobs total {jobs.get('total')} truncated {jobs.get('truncated')}, {len(jobs['jobs'])} listed")
    text = opener.open(url + "/metrics").read().decode()
    started = re.search(r"^gpuctl_queue_started_total (\d+)$", text, re.M)
    check("metrics", started and int(started.group(1)) >= 10 and 'gpuctl_queue_jobs{state="queued"}' in text,
          f"queue metrics: {started and started.group(0)}")
    # a log that cannot be created (a directory in its place): the job fails with that reason
    first = int(root("submit", "--", "sleep", "0.5").stdout.strip())
    nolog = int(root("submit", "--after", str(first), "--", "true").stdout.strip())
    os.mkdir(os.path.join(work, "logs", f"{nolog}.log"))
    e = wait_state(nolog, ("done", "failed", "cancelled", "lost"), 30)
    check("bad input", e and e["state"] == "failed" and "log could not be created" in e["reason"],
          f"a job whose log cannot be created: {e}")
    check("bad input", root("queue").returncode == 0, "gpuctld died after a job's log could not be created")
    print("bad input: failed cleanly (127), huge env refused, half a request dropped, unknown ids, "
          "a log that cannot be created; daemon alive")

    # ---- the runner killed: its running job is adopted, the next one gets a new runner
    def runners():
        return sh("pgrep", "-P", str(daemon.pid), "-x", "gpuctld-runner").stdout.split()
    held = int(root("submit", "--", "sleep", "1.5").stdout.strip())
    wait_state(held, ("running",))
    first = runners()
    check("runner", len(first) == 1, f"gpuctld's runner processes: {first}")
    os.kill(int(first[0]), signal.SIGKILL)
    nxt = int(root("submit", "--", "true").stdout.strip())
    e_held = wait_state(held, ("done", "failed", "cancelled", "lost"), 30)
    e_nxt = wait_state(nxt, ("done", "failed", "cancelled", "lost"), 30)
    check("runner", e_held and e_held["state"] == "done" and e_held["starts"] == 1,
          f"the job whose runner was killed (adopted; its status from its record): {e_held}")
    check("runner", e_nxt and e_nxt["state"] == "done", f"the job after the runner was killed: {e_nxt}")
    second = runners()
    check("runner", len(second) == 1 and second != first, f"runner before {first}, after {second}")
    check("runner", any("job runner stopped" in line for line in daemon_log),
          f"gpuctld did not log the runner's end: {daemon_log[-5:]}")
    print("runner: killed while a job ran; the job was adopted and ended done, the next job got a new runner")

    # ---- a full disk for the logs: a second gpuctld whose --log-dir is a 64 KiB tmpfs
    tfs = os.path.join(work, "tfs")
    os.makedirs(tfs)
    if sh("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", tfs).returncode != 0:
        print("disk full: SKIPPED (cannot mount a small tmpfs here)")
    else:
        try:
            sock2 = os.path.join(work, "q2.sock")
            d2 = subprocess.Popen([GPUCTLD, "--sim", NODE, "--listen", "127.0.0.1:0", "--queue-db",
                                   os.path.join(work, "q2.db"), "--queue-socket", sock2, "--log-dir", tfs,
                                  ], env=base_env, stderr=subprocess.DEVNULL)
            for _ in range(200):
                if os.path.exists(sock2):
                    break
                time.sleep(0.02)
            e2 = {"GPUCTL_QUEUE_SOCKET": sock2}
            big = int(root("submit", "--", "sh", "-c", "head -c 200000 /dev/zero; echo unreachable", env=e2).stdout.strip())
            jj = None
            for _ in range(200):
                p = root("show", str(big), "--json", env=e2)
                jj = json.loads(p.stdout)["job"] if p.returncode == 0 else None
                if jj and jj["state"] not in ("queued", "running"):
                    break
                time.sleep(0.05)
            check("disk", jj and jj["state"] == "failed", f"a job whose log fills the disk: {jj}")
            # the disk stays full: the next job fails the same way, and gpuctld goes on
            nxt = int(root("submit", "--", "true", env=e2).stdout.strip())
            time.sleep(1)
            check("disk", d2.poll() is None and root("queue", env=e2).returncode == 0,
                  f"gpuctld died with a full log disk (job {nxt})")
            print(f"disk full: the job failed cleanly ({jj and jj['reason']}); gpuctld lives")
        finally:
            harness.stop(d2)
            sh("umount", tfs)

    # ---- --log-keep: a third gpuctld that removes logs 1 s after their job ended
    sock3, logs3 = os.path.join(work, "q3.sock"), os.path.join(work, "logs3")
    d3 = subprocess.Popen([GPUCTLD, "--sim", NODE, "--listen", "127.0.0.1:0", "--queue-db", os.path.join(work, "q3.db"),
                           "--queue-socket", sock3, "--log-dir", logs3, "--log-keep", "1s"],
                          env=base_env, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            if os.path.exists(sock3):
                break
            time.sleep(0.02)
        e3 = {"GPUCTL_QUEUE_SOCKET": sock3}
        kept = int(root("submit", "--", "echo", "kept a while", env=e3).stdout.strip())
        w = root("wait", str(kept), env=e3)
        log3 = os.path.join(logs3, f"{kept}.log")
        first = root("logs", str(kept), env=e3)
        check("log-keep", w.returncode == 0 and first.returncode == 0 and first.stdout == "kept a while\n",
              f"the log right after the job: {first.returncode} {first.stdout!r} {first.stderr!r}")
        for _ in range(60):
            if not os.path.exists(log3):
                break
            time.sleep(0.1)
        later = root("logs", str(kept), env=e3)
        check("log-keep", not os.path.exists(log3) and later.returncode == 1 and "removed its log" in later.stderr
              and root("show", str(kept), env=e3).returncode == 0,
              f"the log 1 s after: exists {os.path.exists(log3)}, logs {later.returncode} {later.stderr!r}")
        bad = subprocess.run([GPUCTLD, "--log-keep", "soon"], capture_output=True, text=True, timeout=10)
        check("log-keep", bad.returncode == 2 and "--log-keep" in bad.stderr, f"--log-keep soon: {bad.stderr!r}")
        print("log-keep: a log is removed once its job has ended --log-keep ago; logs says so, show still works")
    finally:
        harness.stop(d3)

    # ---- SIGKILL and restart
    running = int(root("submit", "-n", "8", "--", "sleep", "2").stdout.strip())
    wait_state(running, ("running",))
    waiting = [int(root("submit", "--", "true").stdout.strip()) for _ in range(20)]
    daemon.send_signal(signal.SIGKILL)
    daemon.wait()
    daemon = start()
    ends = [wait_state(j, ("done", "failed", "cancelled", "lost"), 30) for j in [running] + waiting]
    check("restart", all(e and e["state"] == "done" and e["starts"] == 1 for e in ends[1:]),
          f"queued jobs after the restart: {[(e['id'], e['state'], e['starts']) for e in ends[1:] if e]}")
    check("restart", ends[0] and ends[0]["starts"] == 1 and ends[0]["state"] == "done",
          f"the adopted job (its status comes from gpuctl run --status-file): {ends[0]}")
    print(f"restart: after SIGKILL, {len(waiting)} queued jobs each ran once; the running one was adopted "
          f"and ended ({ends[0] and ends[0]['state']}: {ends[0] and ends[0]['reason']})")

    # ---- lost: gpuctld and the job's gpuctl run both SIGKILLed; --requeue queues it again
    runs = os.path.join(work, "requeue-runs")
    # the first runs outlast the kills however slow the machine (the second run of rq ends at once):
    # a job that ended before its runner was killed is no test of losing it
    rq = int(root("submit", "--requeue", "--", "sh", "-c",
                  f"echo run >> {runs}; [ $(grep -c run {runs}) -ge 2 ] || sleep 600").stdout.strip())
    lo = int(root("submit", "--", "sleep", "600").stdout.strip())
    wait_state(rq, ("running",))
    wait_state(lo, ("running",))
    # their sleeps too, once both have started (running is recorded before the go byte reaches the job):
    # nothing outlives the test (a sleep left behind would hold its log writer, and so the test's output, open)
    for _ in range(200):
        doomed = job_runs(daemon.pid, (rq, lo), whole=True)
        sleeps = 0
        for pid in doomed:
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    sleeps += f.read() == b"sleep\x00600\x00"
            except OSError:
                pass
        if sleeps == 2:
            break
        time.sleep(0.05)
    daemon.send_signal(signal.SIGKILL)
    daemon.wait()
    for pid in doomed:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    daemon = start()
    jrq = wait_state(rq, ("done", "failed", "lost"), 30)
    jlo = wait_state(lo, ("done", "failed", "lost"), 30)
    with open(runs) as f:
        nruns = f.read().count("run")
    check("lost", jrq and jrq["state"] == "done" and jrq["starts"] == 2 and jrq["requeue"] and nruns == 2,
          f"--requeue job after its runner was killed: {jrq}, ran {nruns} times")
    check("lost", jlo and jlo["state"] == "lost" and jlo["starts"] == 1 and not jlo["requeue"],
          f"job without --requeue after its runner was killed: {jlo}")
    print("lost: with gpuctld and the jobs' gpuctl runs SIGKILLed, the --requeue job ran again (2 starts), the other is lost")
finally:
    harness.stop(daemon)
    subprocess.run(["pkill", "-u", A], capture_output=True)
    subprocess.run(["pkill", "-u", B], capture_output=True)
    testusers.cleanup()

harness.finish(work=work)
