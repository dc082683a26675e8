#!/usr/bin/env python3
"""Queued jobs' logs under a cap (issue 32, item 12), two real users, gpuctld
with --log-max-size 1M --log-user-max 3M:

  cap:     a job of user A writes 6.2 MB of numbered lines, then waits: while it
           still runs its log is at most 1 MiB (the cut is made as it writes,
           not after), and once it ended the log is the marker line
           "[gpuctl: N bytes of output cut here: log over 1 MiB]" then the
           newest lines, whole and in order, N counting exactly the bytes gone;
           gpuctl logs prints that, gpuctl show says "log cut" and show --json
           has log_cut;
  flood:   a job writing 300 MB as fast as it can: its log, looked at every few
           ms while it runs, is never over 1 MiB;
  follow:  gpuctl logs -f, started once the log of a job that writes 3 MB in
           bursts has been cut: every line it prints is whole (but one whose
           rest was cut) and later than the one before, a marker line says
           where it missed output, and it ends with the job's last line;
  user:    A's logs in all over --log-user-max: the oldest ended jobs' logs
           are removed (gpuctld's log says so, gpuctl logs says it has none),
           the newest and a running job's stay, and B's are untouched;
  writers: three held jobs of A and one of B: their logs are written by two
           writers, root's, children of the runner, one titled for each
           user's uid; each job's line is in its own log; 10 s after their
           last log the writers are gone;
  options: bad --log-max-size and --log-user-max values exit 2 with one line.
Usage: joblog.py GPUCTLD GPUCTL SRCDIR SIMHOLD
"""
import json
import os
import pwd
import re
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import policy  # noqa: E402
import testusers  # noqa: E402
from policy import GPUCTL, GPUCTLD, check, finish, gpuctl, log, setup, start, until  # noqa: E402

A, B = setup("joblog")
MiB = 1 << 20
CAP = MiB
MARGIN = 64 << 10
MARK = re.compile(r"^\[gpuctl: (\d+) bytes of output cut here: log over 1 MiB\]$")
LINE = "line %07d of the job output"  # 30 bytes and a newline


def writer(n, then="", every=0):
    """a job's command: n numbered lines (a pause of 0.1 s after every `every`), then the shell's `then`"""
    py = (f"import sys, time\nfor i in range({n}):\n    sys.stdout.write('{LINE}\\n' % i)\n" +
          (f"    if i % {every} == {every - 1}:\n        sys.stdout.flush(); time.sleep(0.1)\n" if every else ""))
    return ["sh", "-c", f"python3 -c \"$0\"{'; ' + then if then else ''}", py]


def submit(user, *cmd):
    r = gpuctl("submit", "--", *cmd, user=user)
    check(f"{user} submits a job", r.returncode == 0 and r.stdout.strip().isdigit(), r)
    return r.stdout.strip()


def state(job, user=A):
    r = gpuctl("show", job, "--json", user=user)
    return json.loads(r.stdout)["job"]["state"] if r.returncode == 0 else None


def logpath(job):
    return os.path.join(policy.work, "logs", f"{job}.log")


def size(job):
    try:
        return os.path.getsize(logpath(job))
    except OSError:
        return 0


def lines_ok(text, n_total):
    """the text after a marker: whole numbered lines in order, ending with the last: (first, last) or None"""
    nums = []
    for ln in text.splitlines():
        m = re.fullmatch(r"line (\d{7}) of the job output", ln)
        if not m:
            return None
        nums.append(int(m.group(1)))
    ok = nums and nums == list(range(nums[0], nums[0] + len(nums))) and nums[-1] == n_total - 1
    return (nums[0], nums[-1]) if ok else None


daemon = None
try:
    daemon, url = start("--log-max-size", "1M", "--log-user-max", "3M")

    # ---- cap: 200 000 lines (6.2 MB), then the job waits until told
    go = os.path.join(policy.work, "go")
    wrote = os.path.join(policy.work, "wrote")
    big = submit(A, *writer(200000, f"touch {wrote}; while [ ! -e {go} ]; do sleep 0.1; done"))
    check("cap: the job wrote its 6.2 MB", until(lambda: os.path.exists(wrote), 60))
    check("cap: while it runs, its log is under the cap", state(big) == "running" and 0 < size(big) <= CAP,
          (state(big), size(big)))
    open(go, "w").close()
    check("cap: the job ends well", until(lambda: state(big) == "done", 30), state(big))
    with open(logpath(big)) as f:
        text = f.read()
    first, _, rest = text.partition("\n")
    m = MARK.match(first)
    check("cap: the log is at most 1 MiB and starts with the marker", len(text) <= CAP and m, (len(text), first[:100]))
    span = lines_ok(rest, 200000)
    check("cap: then the newest lines, whole and in order, to the last", span, rest[:200])
    total = 200000 * 31
    check("cap: the marker counts exactly the bytes cut", m and span and int(m.group(1)) == span[0] * 31 and
          int(m.group(1)) + len(rest) == total, (m and m.group(1), span, len(rest)))
    check("cap: at least half the cap of the newest output is kept", len(rest) >= CAP // 2 - 4096, len(rest))
    r = gpuctl("logs", big, user=A)
    check("cap: gpuctl logs prints the marker and the tail", r.returncode == 0 and r.stdout == text,
          (r.returncode, r.stdout[:100], r.stderr))
    r = gpuctl("show", big, user=A)
    check("cap: gpuctl show says the log was cut",
          re.search(r"^log cut +%s bytes of output cut, the oldest first: the log is kept under 1 MiB" %
                    (m and m.group(1)), r.stdout, re.M), r.stdout)
    r = gpuctl("show", big, "--json", user=A)
    cut = json.loads(r.stdout).get("log_cut") if r.returncode == 0 else None
    check("cap: show --json has log_cut", cut == {"bytes": int(m.group(1)) if m else -1, "limit": "1 MiB"}, cut)

    # ---- flood: 300 MB as fast as it goes; the log looked at every 2 ms meanwhile
    go3 = os.path.join(policy.work, "go3")
    flood = submit(A, "sh", "-c", f"while [ ! -e {go3} ]; do sleep 0.05; done; head -c 300000000 /dev/zero; echo done")
    peak, looks, watching = [0], [0], [True]

    def watch():
        while watching[0]:
            peak[0] = max(peak[0], size(flood))
            looks[0] += 1
            time.sleep(0.002)
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    running_seen = until(lambda: state(flood) == "running", 30)
    open(go3, "w").close()
    until(lambda: state(flood) not in ("queued", "running"), 120)
    watching[0] = False
    watcher.join()
    check("flood: the job ran and ended well", running_seen and state(flood) == "done", state(flood))
    check("flood: its log was never over the cap while it wrote 300 MB", 0 < peak[0] <= CAP + MARGIN,
          (peak[0], looks[0]))
    with open(logpath(flood), "rb") as f:
        head = f.readline()
    check("flood: and says how much was cut", re.match(rb"^\[gpuctl: \d+ bytes of output cut here: log over 1 MiB\]\n",
                                                       head), head[:100])

    # ---- follow: 100 000 lines in bursts of 2 000, gpuctl logs -f reading along
    slow = submit(A, *writer(100000, every=2000))

    def cut_once():
        try:
            with open(logpath(slow), "rb") as f:
                return f.read(9) == b"[gpuctl: "
        except OSError:
            return False
    check("follow: the job's log is cut while it runs (the follower starts after)", until(cut_once, 60))
    fol = subprocess.run(testusers.as_user_cmd(A, GPUCTL, "logs", "-f", slow), env=policy.env, capture_output=True,
                         text=True, timeout=120, cwd=policy.work)
    out = fol.stdout.splitlines()
    nums, marks, bad = [], 0, []
    for k, ln in enumerate(out):
        if MARK.match(ln):
            marks += 1
            continue
        if k + 1 < len(out) and MARK.match(out[k + 1]) and (LINE % 0).startswith(ln[:5]) and len(ln) < 30:
            continue  # the start of a line whose rest was cut: the marker follows on a line of its own
        mm = re.fullmatch(r"line (\d{7}) of the job output", ln)
        if not mm:
            bad.append(ln)
        else:
            nums.append(int(mm.group(1)))
    st = state(slow)
    check("follow: gpuctl logs -f ends with the job", fol.returncode == 0 and st == "done",
          (fol.returncode, st, fol.stderr, out[-3:], gpuctl("show", slow, user=A).stdout[-600:]))
    check("follow: every line whole, each later than the one before, up to the last",
          not bad and nums and all(b > a for a, b in zip(nums, nums[1:])) and nums[-1] == 99999,
          (bad[:3], nums[:3], nums[-3:]))
    gaps = sum(1 for a, b in zip(nums, nums[1:]) if b != a + 1) + (nums[0] != 0 if nums else 0)
    check("follow: a marker line wherever it missed output", marks == gaps and marks >= 1, (marks, gaps))

    # ---- user: A's logs in all over 3M (a running job's 0.9 MB, then three more of 0.9 MB); B's job
    run_go = os.path.join(policy.work, "go2")
    running = submit(A, *writer(29000, f"while [ ! -e {run_go} ]; do sleep 0.1; done"))
    until(lambda: size(running) >= 29000 * 31, 30)
    bjob = submit(B, *writer(20000))
    small = []  # 0.9 MB each, not cut; one after the other, so that small[-1] ended last
    for _ in range(3):
        small.append(submit(A, *writer(29000)))
        until(lambda: state(small[-1]) == "done", 60)
    until(lambda: state(bjob, B) == "done", 60)

    def a_total():
        return sum(size(j) for j in [big, flood, slow, *small, running])
    check("user: A's logs come under --log-user-max", until(lambda: a_total() <= 3 * MiB, 15), a_total())
    check("user: the oldest ended jobs' logs are the ones removed",
          not os.path.exists(logpath(big)) and not os.path.exists(logpath(flood)),
          sorted(os.listdir(os.path.join(policy.work, "logs"))))
    check("user: the newest ended job's log and the running job's stay",
          os.path.exists(logpath(small[-1])) and os.path.exists(logpath(running)))
    check("user: B's log is untouched", size(bjob) == 20000 * 31, size(bjob))
    # (it says so once the logs are removed: wait for the line, not only for the files)
    check("user: gpuctld's log says so", until(lambda: any(f"of {A}'s ended jobs" in ln and "--log-user-max 3 MiB"
                                                           in ln for ln in log), 15), log[-5:])
    r = gpuctl("logs", big, user=A)
    check("user: gpuctl logs of a removed log says why", r.returncode == 1 and "--log-user-max" in r.stderr, r)
    open(run_go, "w").close()
    until(lambda: state(running) == "done")

    # ---- writers: one per user (root's, the runner's children), however many of the user's jobs run
    wgo = os.path.join(policy.work, "go4")
    held = [submit(A, "sh", "-c", f"echo A{i}; while [ ! -e {wgo} ]; do sleep 0.1; done") for i in range(3)]
    heldb = submit(B, "sh", "-c", f"echo B; while [ ! -e {wgo} ]; do sleep 0.1; done")
    check("writers: the four jobs run", until(lambda: all(state(j) == "running" for j in held) and
                                              state(heldb, B) == "running", 30),
          [state(j) for j in held] + [state(heldb, B)])

    def kids(ppid, comm):
        """ppid's children named comm: {pid: (owner uid, command line)}"""
        out = {}
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    st = f.read()
                name, rest = st[st.index("(") + 1:st.rindex(")")], st[st.rindex(")") + 2:].split()
                if name != comm or int(rest[1]) != ppid:
                    continue
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
                out[int(pid)] = (os.stat(f"/proc/{pid}").st_uid, cmd)
            except (OSError, ValueError, IndexError):
                pass
        return out
    runner = list(kids(daemon.pid, "gpuctld-runner"))
    check("writers: one runner", len(runner) == 1, runner)
    ws = kids(runner[0], "gpuctl-log") if runner else {}
    want = sorted(f"gpuctl logs of uid {pwd.getpwnam(u).pw_uid}" for u in (A, B))
    check("writers: two, root's, one for each user", sorted(c for _, c in ws.values()) == want and
          all(u == 0 for u, _ in ws.values()), (ws, want))
    open(wgo, "w").close()
    check("writers: the jobs end", until(lambda: all(state(j) == "done" for j in held) and
                                         state(heldb, B) == "done", 30))
    check("writers: each job's line in its own log",
          [open(logpath(j)).read() for j in held] + [open(logpath(heldb)).read()] == ["A0\n", "A1\n", "A2\n", "B\n"],
          [open(logpath(j)).read() for j in [*held, heldb]])
    check("writers: gone once idle", until(lambda: not kids(runner[0], "gpuctl-log"), 25) if runner else False)

    # ---- options
    for args, frag in [(["--log-max-size", "10K"], "invalid --log-max-size '10K' (a size of at least 64KiB"),
                       (["--log-max-size", "big"], "invalid --log-max-size 'big'"),
                       (["--log-user-max", "-1G"], "invalid --log-user-max '-1G' (a size of at least 64KiB")]:
        r = subprocess.run([GPUCTLD, *args, "--check-config"], env=policy.env, capture_output=True, text=True)
        check(f"options: {' '.join(args)} exits 2 with one line", r.returncode == 2 and frag in r.stderr and
              r.stderr.count("\n") == 1, r)
    r = subprocess.run([GPUCTLD, "--log-max-size", "0", "--log-user-max", "0", "--check-config"], env=policy.env,
                       capture_output=True, text=True)
    check("options: 0 turns both off", r.returncode == 0, r)
finally:
    finish(daemon)
