#!/usr/bin/env python3
"""gpuctl top driven in tmux (issue 20): send-keys, capture-pane.

On the simulated 8xH100 node, with this test's own state directory,
simulator run directory and HOME:
  screen:   the 8 GPUs, the node's processes with users and SM%, the
            throttled GPU, a lease holder (a gpuctl run --name holdjob) under
            the GPU gpuctl leases says it holds, a
            waiter behind it, a process of nobody's lease marked U, and
            gpuctld's queue: a running job and a waiting one with its reason;
            on a node of its own, a process of another PID namespace on a
            GPU nobody leases marked U, and a GPU whose power and clocks
            cannot be read showing N/A for them;
  keys:     sorting (> and r; remembered in HOME/.config/gpuctl/top.conf and
            used by the next top), the filter, the tree (a gpuctl run --name
            ddp on GPUs 2 and 3 is one job row with its two workers, whose
            parent is on no GPU, under it; alice's processes on those GPUs
            and the process of no lease under "(no lease)", last; a child
            under its parent; k on a job row refused), the help screen;
  signals:  k on a test process of the same user kills it; not the process
            that got its pid after the question (ns_last_pid); refused for
            another user's (top run by a second real user, who kills a
            process of their own through it) and with --readonly;
  layout:   a resize from 200x60 to 80x24 (one line per GPU) and back; 16
            GPUs in 80x24, with three waiters and three queued jobs under the
            process table's header and first row; a GPU that falls off the
            bus mid-run is shown lost while the other's load keeps changing;
  history:  the sparkline of a GPU sampled every 0.1 s for 16 s or more
            shows the low and the high of a 20 s swing (40 cells of 0.1 s
            would not);
  colour:   none with --color=never in the C locale (ASCII sparklines),
            none with NO_COLOR (block sparklines);
  restore:  after q and after SIGTERM the shell works again: a command runs,
            and the terminal is back in canonical mode with echo.
Usage: top.py GPUCTL SRCDIR
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import harness  # noqa: E402
from harness import check  # noqa: E402

GPUCTL, SRC = os.path.realpath(sys.argv[1]), os.path.realpath(sys.argv[2])
SIMLIB = os.environ.get("GPUCTL_SIM_LIBDIR", os.path.join(os.path.dirname(os.path.dirname(GPUCTL)), "sim"))
HOLD = os.path.join(SIMLIB, "gpuctl-sim-hold")
H100 = os.path.join(SRC, "examples", "nodes", "h100-8x-sxm.json")

up = subprocess.run(["sh", os.path.join(SRC, "tests", "tui", "tmux-up.sh")], capture_output=True, text=True)
if up.returncode != 0:
    print("SKIP: " + (up.stderr.strip().splitlines() or ["tmux-up.sh exit %d" % up.returncode])[-1])
    sys.exit(77 if up.returncode == 77 else 1)

work = tempfile.mkdtemp(prefix="gpuctl-top-")
os.chmod(work, 0o755)
STATE, RUNDIR, HOME = (os.path.join(work, d) for d in ("state", "rundir", "home"))
for d in (STATE, RUNDIR, HOME):
    os.makedirs(d)
os.chmod(RUNDIR, 0o1777)
SOCK = os.path.join(work, "tmux.sock")
env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUCTL_", "TMUX")) and
       k not in ("CUDA_VISIBLE_DEVICES", "XDG_CONFIG_HOME")}  # top.conf in HOME below, never the user's
# all set before the tmux server starts: its sessions get the server's environment
QSOCK = os.path.join(work, "q.sock")
env.update(GPUCTL_SIM_LIBDIR=SIMLIB, GPUCTL_SIM_RUNDIR=RUNDIR, GPUCTL_STATE_DIR=STATE, HOME=HOME,
           LANG="C.UTF-8", TERM="xterm-256color", GPUCTL_QUEUE_SOCKET=QSOCK)
procs = []
harness.verbose = True  # "ok   WHAT" or "FAIL WHAT" as each check is made


def tmux(*args, check=True):
    r = subprocess.run(["tmux", "-S", SOCK] + list(args), capture_output=True, text=True, env=env, timeout=30)
    if check and r.returncode != 0:
        raise RuntimeError("tmux %s: %s" % (" ".join(args), r.stderr))
    return r.stdout


class Term:
    """a shell in a tmux session of its own"""

    def __init__(self, name, w, h):
        self.name = name
        tmux("new-session", "-d", "-s", name, "-x", str(w), "-y", str(h), "env PS1='PROMPT$ ' bash --norc --noprofile")
        tmux("set-option", "-t", name, "status", "off")
        self.wait(r"PROMPT\$")

    def keys(self, *k, literal=False):
        tmux("send-keys", "-t", self.name, *(("-l",) if literal else ()), *k)

    def line(self, text):
        self.keys(text, literal=True)
        self.keys("Enter")

    def screen(self):
        return tmux("capture-pane", "-p", "-t", self.name)

    def wait(self, pattern, timeout=10.0, gone=False):
        end = time.monotonic() + timeout
        while True:
            s = self.screen()
            found = re.search(pattern, s, re.M) is not None
            if found != gone:
                return s
            if time.monotonic() > end:
                return None
            time.sleep(0.1)

    def until(self, cond, timeout=10.0):
        """(True, screen) once cond(screen) holds, (False, last screen) after timeout: a screen
        captured while top redraws may be half old, half new"""
        end = time.monotonic() + timeout
        while True:
            s = self.screen()
            if cond(s):
                return True, s
            if time.monotonic() > end:
                return False, s
            time.sleep(0.1)

    def k_on(self, what):
        """filter top's processes to `what`, go to the first, and press k"""
        self.keys("/")
        self.keys(what, literal=True)
        self.keys("Enter")
        self.keys("Home")
        self.keys("k")

    def resize(self, w, h):
        tmux("resize-window", "-t", self.name, "-x", str(w), "-y", str(h))

    def close(self):
        # what the pane's shell ran is killed too: a top still exiting when the session goes (under
        # ASan its leak check at exit) was once left behind at 100 % of a core, and every bench
        # after the suite ran beside it
        # (found before the session goes: then the shell dies and what it ran is reparented)
        pane = [int(p) for p in tmux("list-panes", "-t", self.name, "-F", "#{pane_pid}", check=False).split()]
        tree = [p for pid in pane for p in descendants(pid)]
        tmux("kill-session", "-t", self.name, check=False)
        for p in tree:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass


def descendants(pid):
    """pid's children, theirs, and so on (from /proc/PID/task/*/children)"""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            tasks = os.listdir("/proc/%d/task" % p)
        except OSError:
            continue
        for t in tasks:
            try:
                with open("/proc/%d/task/%s/children" % (p, t)) as f:
                    kids = [int(k) for k in f.read().split()]
            except OSError:
                kids = []
            out += kids
            todo += kids
    return out



# a session that lives as long as the test: closing the last session ends the tmux server,
# and a new-session racing that exit fails ("server exited unexpectedly")
tmux("new-session", "-d", "-s", "keep", "-x", "80", "-y", "24", "sleep 3600")


def top_cmd(node=H100, extra=""):
    return "%s --sim %s top -d 0.3 %s" % (GPUCTL, node, extra)


def start(argv, **kw):
    p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)
    procs.append(p)
    return p


try:
    # a lease holder, a waiter behind it, a process on GPU 6 under no lease, a parent and its child
    holder = start([GPUCTL, "--sim", H100, "run", "--gpus", "1", "--name", "holdjob", "--", "sleep", "120"])
    time.sleep(0.5)
    waiter = start([GPUCTL, "--sim", H100, "run", "--gpus", "1", "--wait", "--name", "waitjob", "--", "true"])
    # (2G: more than the tree's 1.5G on GPU 0, so that gpuctld, ranking GPUs as gpuctl run does, most memory
    # free first, puts qrun, below, on GPU 0 and leaves the stray's GPU under no lease)
    stray = start([HOLD, "--gpu", "6", "--mem", "2G", "--", "sleep", "120"])
    tree = start([HOLD, "--gpu", "0", "--mem", "1G", "--", "sh", "-c",
                  "%s --gpu 0 --mem 512M -- sleep 120; true" % HOLD])
    # a job of two workers, one on each of its two GPUs (which alice uses too), under a shell on none
    ddp = start([GPUCTL, "--sim", H100, "run", "--gpus", "2,3", "--shared", "--name", "ddp", "--", "sh", "-c",
                 "g=$GPUCTL_GPUS; %s --gpu ${g%%%%,*} --mem 1G -- sleep 122 & %s --gpu ${g##*,} --mem 1G -- sleep 122 & "
                 "wait" % (HOLD, HOLD)])

    # gpuctld with its queue: a job that runs, and one that waits for every GPU
    GPUCTLD = os.path.join(os.path.dirname(os.path.dirname(GPUCTL)), "daemon", "gpuctld")
    daemon = start([GPUCTLD, "--sim", H100, "--listen", "127.0.0.1:0", "--queue-db", os.path.join(work, "q.db"),
                    "--queue-socket", QSOCK, "--log-dir", os.path.join(work, "logs")])
    for _ in range(100):
        if os.path.exists(QSOCK):
            break
        time.sleep(0.1)
    sub = [subprocess.run([GPUCTL, "submit", "--name", "qrun", "-n", "1", "--", "sleep", "120"], env=env,
                          capture_output=True, text=True, timeout=30),
           subprocess.run([GPUCTL, "submit", "--name", "qwait", "-n", "8", "--", "true"], env=env,
                          capture_output=True, text=True, timeout=30)]
    check("two jobs submitted to gpuctld", all(r.returncode == 0 for r in sub), [r.stderr for r in sub])

    # history over more than the sparkline's 40 cells: one GPU whose load swings between 0 and 100 %
    # over 20 s, sampled every 0.1 s, started now and looked at near the end (gone 16 s or more)
    swing = os.path.join(work, "swing.json")
    with open(swing, "w") as f:
        json.dump({"name": "swing", "gpus": [{"name": "NVIDIA L4", "utilization": {"gpu": 50, "memory": 10},
                                              "vary": {"period_s": 20, "amplitude": 60}}]}, f)
    spark = Term("spark", 200, 20)
    spark.line("%s --sim %s top -d 0.1" % (GPUCTL, swing))
    spark_t0 = time.monotonic()

    t = Term("main", 200, 60)
    t.line(top_cmd())
    s = t.wait(r"PID USER")
    check("top starts in a 200x60 terminal", s is not None, t.screen())
    s = t.wait(r"sleep 120") or t.screen()
    gpus = re.findall(r"^ ?(\d) +H100 80GB HBM3", s, re.M)
    check("the 8 GPUs are shown, two lines each", gpus == [str(i) for i in range(8)] and s.count("util ") >= 8, s)
    check("the node's processes, with users and SM%",
          re.search(r"4000003 alice +4 +74\.0G +99 ", s) is not None and "bob" in s and "carol" in s, s)
    check("the throttled GPU says why", re.search(r"^ 4 .*THROTTLED: sw_power_cap", s, re.M) is not None, s)
    clk = re.search(r"^ 0 +H100.* (\d+)/(\d+)MHz", s, re.M)
    check("the SM and the memory clock", clk is not None and int(clk.group(2)) > 0, s)
    ls = subprocess.run([GPUCTL, "--sim", H100, "leases", "--json"], env=env, capture_output=True, text=True)
    held = [l["gpu"] for l in json.loads(ls.stdout or "{}").get("leases", []) if l.get("name") == "holdjob"]
    lines = s.splitlines()
    row = [i for i, l in enumerate(lines) if held and re.match(r"^ ?%d +H100" % held[0], l)]
    check("the lease holder is named under its GPU (the one gpuctl leases says it holds)",
          bool(row) and row[0] + 1 < len(lines) and
          re.search(r"leased: root 'holdjob' since \d\d:\d\d", lines[row[0] + 1]) is not None and
          sum("'holdjob'" in l for l in lines) == 1, (held, s))
    check("the waiter is listed", re.search(r"#1 root wants GPU 1: waitjob", s) is not None, s)
    s = t.wait(r"gpuctld queue: 1 running, 1 waiting") or t.screen()
    check("gpuctld's queue: the running job and the waiting one with its reason",
          re.search(r"job \d+ 'qrun' root running, 1 GPU: \d", s) is not None and
          re.search(r"job \d+ 'qwait' root queued, 8 GPUs: \S", s) is not None, s)
    stray_row = [l for l in s.splitlines() if "sleep 120" in l and re.search(r"^ +%d " % stray.pid, l)]
    check("a process under no lease is marked U", bool(stray_row) and stray_row[0].rstrip().endswith(" U"), s)
    gpu6 = [l for l in s.splitlines() if re.match(r"^ 6 +H100", l)]
    gpu1 = [l for l in s.splitlines() if re.match(r"^ 1 +H100", l)]
    check("and so is its GPU, not one whose users lease it", bool(gpu6) and gpu6[0].rstrip().endswith(" U") and
          bool(gpu1) and not gpu1[0].rstrip().endswith(" U"), s)

    # sorting, remembered
    def sm_column(s):
        return [int(m.group(1)) for l in s.splitlines() for m in [re.match(r"^ +\d+ +\S+ +\d+ +\S+ +(\d+) ", l)] if m]

    t.keys(">")
    ok, s = t.until(lambda s: "SM%v" in s and sm_column(s) == sorted(sm_column(s), reverse=True) and
                    len(sm_column(s)) >= 6)
    check("> sorts by SM%, largest first", ok, s)
    t.keys("r")
    ok, s = t.until(lambda s: "SM%^" in s and sm_column(s) == sorted(sm_column(s)) and len(sm_column(s)) >= 6)
    check("r reverses it", ok, s)
    conf = os.path.join(HOME, ".config", "gpuctl", "top.conf")
    text = open(conf).read() if os.path.exists(conf) else ""
    check("the sort is saved in ~/.config/gpuctl/top.conf", "sort=SM%" in text and "reverse=1" in text, text)
    again = Term("again", 200, 60)
    again.line(top_cmd())
    ok, s2 = again.until(lambda s: "SM%^" in s and len(sm_column(s)) >= 6 and sm_column(s) == sorted(sm_column(s)))
    check("a top started again sorts as saved", ok, s2)
    again.keys("q")
    again.close()

    # the filter
    t.keys("/")
    t.keys("bob", literal=True)
    t.keys("Enter")
    def users(s):
        return {m.group(1) for l in s.splitlines() for m in [re.match(r"^ +\d+ (\S+) ", l)] if m}

    ok, s = t.until(lambda s: re.search(r"^ +4000004 bob", s, re.M) is not None and users(s) == {"bob"})
    check("/bob shows only bob's processes", ok, s)
    t.keys("/")
    t.keys("Escape")
    s = t.wait(r"alice")
    check("Esc clears the filter", s is not None, t.screen())

    # the tree: a row for each job (lease), its processes under it, then "(no lease)"
    t.keys("t")
    job_re = re.compile(r"^ +\S+ +job '")
    nolease_re = re.compile(r"^ +\(no lease\)")

    def group_of(lines, i):
        """the job or "(no lease)" row above row i, up to the previous such row"""
        while i >= 0 and not (job_re.match(lines[i]) or nolease_re.match(lines[i])):
            i -= 1
        return lines[i] if i >= 0 else ""

    def jobs_tree(s):
        lines = s.splitlines()
        ddp_rows = [i for i, l in enumerate(lines) if re.match(r"^ +root +job 'ddp' on GPUs 2,3 since \d\d:\d\d", l)]
        workers = [l for i, l in enumerate(lines) if re.search(r"`- sleep 122", l) and
                   group_of(lines, i).find("job 'ddp'") >= 0]
        nolease = [i for i, l in enumerate(lines) if nolease_re.match(l)]
        stray_at = [i for i, l in enumerate(lines) if re.match(r"^ +%d root +6 " % stray.pid, l)]
        alice = [i for i, l in enumerate(lines) if re.match(r"^ +400000[12] alice +[23] ", l)]
        last_job = max([i for i, l in enumerate(lines) if job_re.match(l)] or [-1])
        return (len(ddp_rows) == 1 and len(workers) == 2 and
                sorted(re.match(r"^ +\d+ root +(\d) ", l).group(1) for l in workers) == ["2", "3"] and
                len(nolease) == 1 and nolease[0] > last_job and bool(stray_at) and stray_at[0] > nolease[0] and
                len(alice) == 2 and min(alice) > nolease[0])

    ok, s = t.until(jobs_tree)
    check("t: one job row for ddp (root, GPUs 2,3) with both its workers under it; the process of no lease "
          "and alice's on ddp's GPUs under (no lease), last", ok, s)

    def child_under_parent(s):
        lines = s.splitlines()
        sh = [i for i, l in enumerate(lines) if re.search(r"`- sh -c ", l)]
        if not sh or sh[0] + 1 >= len(lines):
            return False
        child = lines[sh[0] + 1]
        return "`- sleep 120" in child and child.index("`- ") > lines[sh[0]].index("`- ")

    ok, s = t.until(child_under_parent)
    check("t shows a child under its parent, inside its group", ok, s)
    t.k_on("ddp")
    s = t.wait(r"job 'ddp' is a row for its processes: k signals one process")
    check("k on a job row signals nothing and says so", s is not None and "signal to pid" not in s, t.screen())
    t.keys("/")
    t.keys("Escape")
    t.keys("t")

    # help
    t.keys("h")
    # the whole help, not its first line only: tmux may show the screen half drawn
    s = t.wait(r"gpuctl top - keys(.|\n)*sort by the column")
    check("h shows the keys", s is not None, t.screen())
    t.keys("x")
    check("any key closes the help", t.wait(r"PID USER") is not None, t.screen())

    # a signal to our own process: the stray sleep
    t.k_on("sleep 120")
    s = t.wait(r"signal to pid \d+")
    check("k asks which signal", s is not None, t.screen())
    t.keys("t")
    check("then asks to confirm", t.wait(r"send SIGTERM to pid \d+\? \[y/N\]") is not None, t.screen())
    target = int(re.search(r"send SIGTERM to pid (\d+)", t.screen()).group(1))
    t.keys("y")
    s = t.wait(r"sent SIGTERM to pid %d" % target)
    gone = False
    for _ in range(30):  # a child of this test stays a zombie until reaped: that is dead too
        try:
            with open("/proc/%d/stat" % target) as f:
                gone = f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
        except OSError:
            gone = True
        if gone:
            break
        time.sleep(0.1)
    check("y sends it, and the process of the same user dies", s is not None and gone, t.screen())
    t.keys("/")
    t.keys("Escape")

    # the pid asked about is reused before the answer: the process ends, another one (of the same
    # user, on a GPU too) gets its pid (ns_last_pid), top lists it; y must not hit the newcomer
    victim = start([HOLD, "--gpu", "3", "--mem", "1G", "--", "sleep", "131"])
    t.wait(r"^ +%d .*sleep 131" % victim.pid)
    t.k_on("sleep 131")
    t.wait(r"signal to pid %d" % victim.pid)
    t.keys("t")
    asked = t.wait(r"send SIGTERM to pid %d\? \[y/N\]" % victim.pid) is not None
    victim.kill()
    victim.wait()
    newcomer = None
    for _ in range(50):
        try:
            with open("/proc/sys/kernel/ns_last_pid", "w") as f:
                f.write(str(victim.pid - 1))
        except OSError:
            break
        p = start([HOLD, "--gpu", "3", "--mem", "1G", "--", "sleep", "131"])
        if p.pid == victim.pid:
            newcomer = p
            break
        p.kill()
        p.wait()
    if check("a new process got the pid asked about", newcomer is not None and asked,
             "needs root (ns_last_pid); asked: %s" % asked):
        listed = t.wait(r"^ +%d .*sleep 131" % victim.pid)
        time.sleep(0.7)  # a sample or two after it
        t.keys("y")
        s = t.wait(r"pid %d has ended \(or is another process now\): nothing sent" % victim.pid)
        time.sleep(0.3)
        check("y then sends nothing: the newcomer lives", listed is not None and s is not None and
              newcomer.poll() is None, t.screen())
        newcomer.terminate()
    t.keys("/")
    t.keys("Escape")

    # resize to 80x24: one line per GPU, all 8 shown, and back
    t.resize(80, 24)
    s = t.wait(r"^ 7 +H100 ")
    lines = (s or "").splitlines()
    compact = [l for l in lines if re.match(r"^ \d +H100 ", l)]
    check("in 80x24 each GPU gets one line, all 8 shown", len(compact) == 8 and "util " not in (s or ""), s)
    check("the lease holder fits the compact line", s is not None and "root 'holdjob'" in s, s)
    t.resize(200, 60)
    s = t.wait(r"util ")
    check("back in 200x60 the history lines return", s is not None, t.screen())

    # a quarantined GPU (gpuctl quarantine) says so on its line, until it is cleared
    r = subprocess.run([GPUCTL, "--sim", H100, "quarantine", "add", "5", "--reason", "fan"], env=env,
                       capture_output=True, text=True)
    s = t.wait(r"^ 5 .*QUARANTINED: admin")
    check("a quarantined GPU says so", r.returncode == 0 and s is not None, (r, t.screen()))
    subprocess.run([GPUCTL, "--sim", H100, "quarantine", "clear", "5"], env=env, capture_output=True)
    check("and no longer once cleared", t.wait(r"QUARANTINED", gone=True) is not None, t.screen())

    # q, SIGTERM, a crash (SIGSEGV, as a fault in the NVML layer would be): each time the shell is
    # itself again, a command runs, in canonical mode with echo
    def restored(word, n):
        t.wait(r"PROMPT\$\s*$")
        t.line("echo %s-$((40+%d)); stty -a | tr ' ;' '\\n\\n' | grep -cx -e icanon -e echo" % (word, n))
        return t.wait(r"^%s-%d\n2$" % (word, 40 + n))

    def top_pid():
        return subprocess.run(["pgrep", "-n", "-f", "gpuctl --sim %s top" % re.escape(H100)], capture_output=True,
                              text=True).stdout.strip()

    t.keys("q")
    check("after q the shell runs commands, in canonical mode with echo", restored("restored", 2) is not None,
          t.screen())
    for sig, word, n, what in ((signal.SIGTERM, "again", 3, "SIGTERM"), (signal.SIGSEGV, "crashed", 4, "a crash")):
        t.line(top_cmd())
        t.wait(r"PID USER")
        pid = top_pid()
        if pid:
            os.kill(int(pid), sig)
        check("after %s too" % what, bool(pid) and restored(word, n) is not None, t.screen())

    # monochrome and a plain ASCII locale: no colour escapes, ASCII sparklines
    t.line("LANG=C LC_ALL=C " + top_cmd(extra="--color=never"))
    t.wait(r"PID USER")
    time.sleep(1)
    raw = tmux("capture-pane", "-e", "-p", "-t", t.name)
    colours = re.findall(r"\x1b\[(?:[0-9;]*;)?(?:3[0-8]|4[0-8]|9[0-7])(?:;[0-9;]*)?m", raw)
    check("--color=never in the C locale: no colours, and the sparklines are ASCII",
          not colours and "\u2581" not in raw and re.search(r"util +[ .:\-=+*#]+", raw) is not None,
          "%d colour escapes; %r" % (len(colours), raw[:600]))
    t.keys("q")

    # NO_COLOR (set, not empty) turns the colours off as --color=never does; the blocks stay
    t.line("NO_COLOR=1 " + top_cmd())
    t.wait(r"PID USER")
    time.sleep(1)
    raw = tmux("capture-pane", "-e", "-p", "-t", t.name)
    colours = re.findall(r"\x1b\[(?:[0-9;]*;)?(?:3[0-8]|4[0-8]|9[0-7])(?:;[0-9;]*)?m", raw)
    check("NO_COLOR: no colours, the sparklines still in blocks (UTF-8)",
          not colours and re.search(r"util +[\u2581-\u2588]+", raw) is not None,
          "%d colour escapes; %r" % (len(colours), raw[:600]))
    t.keys("q")

    # --readonly: no signal
    t.line(top_cmd(extra="--readonly"))
    t.wait(r"PID USER")
    t.keys("k")
    s = t.wait(r"read-only \(--readonly\): no signals are sent")
    check("--readonly refuses k", s is not None, t.screen())
    t.keys("q")
    t.close()

    # another user's process: top run by a second real user refuses to signal root's
    sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
    import testusers  # noqa: E402
    if os.geteuid() == 0 and shutil.which("useradd") and shutil.which("runuser"):
        testusers.create("gpuctl top's signal refusal")
        try:
            u = testusers.USERS[0]
            # a HOME of its own: a top.conf left in a shared one (tree=1) would change what k selects
            home2 = os.path.join(work, "home2")
            os.makedirs(home2)
            shutil.chown(home2, user=u)
            t = Term("other", 200, 60)
            t.line("runuser -u %s -- env HOME=%s GPUCTL_SIM_LIBDIR=%s GPUCTL_SIM_RUNDIR=%s GPUCTL_STATE_DIR=%s %s"
                   % (u, home2, SIMLIB, RUNDIR, STATE, top_cmd()))
            t.wait(r"PID USER")
            t.keys("/")
            t.keys("holdjob", literal=True)  # no such command: filter by what root's job runs
            t.keys("Escape")
            t.k_on("sleep 120")
            s = t.wait(r"is root's: only your own processes can be signalled")
            check("another user's process is refused", s is not None, t.screen())
            # and their own one goes: a process of theirs on GPU 2, signalled through their top
            start(["runuser", "-u", u, "--", "env", "GPUCTL_SIM_RUNDIR=" + RUNDIR, HOLD, "--gpu", "2", "--mem", "1G",
                   "--", "sleep", "141"])
            mine = []
            for _ in range(50):
                mine = subprocess.run(["pgrep", "-u", u, "-x", "sleep"], capture_output=True, text=True).stdout.split()
                if mine:
                    break
                time.sleep(0.1)
            t.keys("/")
            t.keys("Escape")
            t.wait(r"^ +%s .*sleep 141" % (mine[0] if mine else "x"))
            t.k_on("sleep 141")
            t.wait(r"signal to pid \d+")
            t.keys("t")
            t.wait(r"send SIGTERM to pid \d+\? \[y/N\]")
            t.keys("y")
            s = t.wait(r"sent SIGTERM to pid %s\b" % (mine[0] if mine else "x"))
            gone = False
            for _ in range(30):
                gone = bool(mine) and not os.path.exists("/proc/%s" % mine[0])
                if gone:
                    break
                time.sleep(0.1)
            check("a second user kills their own process through top", s is not None and gone, t.screen())
            t.keys("q")
            t.close()
        finally:
            testusers.cleanup()
    else:
        check("another user's process is refused", False, "needs root, useradd and runuser")

    # 16 GPUs in 80x24, with three waiters in line and three queued jobs: the bottom panel
    # shrinks to the room left under the GPUs and the process table's header and first row
    for i in (2, 3):
        start([GPUCTL, "--sim", H100, "run", "--gpus", "1", "--wait", "--name", "waitjob%d" % i, "--", "true"])
        r = subprocess.run([GPUCTL, "submit", "--name", "qwait%d" % i, "-n", "8", "--", "true"], env=env,
                           capture_output=True, text=True, timeout=30)
        check("a queued job submitted", r.returncode == 0, r.stderr)
    node16 = os.path.join(work, "node16.json")
    with open(node16, "w") as f:
        subprocess.run([sys.executable, os.path.join(SRC, "bench", "gen-node.py"), "16"], stdout=f, check=True)
    t = Term("sixteen", 80, 24)
    t.line(top_cmd(node16))
    ok, s = t.until(lambda s: "first come first served: 3" in s and "1 running, 3 waiting" in s)
    check("three waiters and three queued jobs", ok, s)
    lines = s.splitlines()
    idx = [m.group(1) for l in lines[1:17] for m in [re.match(r"^ ?(\d+) +H100", l)] if m]
    check("16 GPUs fit 80x24, one line each", idx == [str(i) for i in range(16)], s)
    check("under them the process table's header and a row, then the waiters and the queue",
          len(lines) >= 23 and lines[17].startswith("     PID USER") and re.match(r"^ +\d+ \S+ +\d+ ", lines[18]) and
          lines[19].startswith("waiting for GPUs") and lines[21].startswith("gpuctld queue:"), s)
    t.keys("q")
    t.close()

    # a node of three GPUs: on GPU 0 a process of another PID namespace (a container: the node
    # file gives it no user), on a GPU nobody leases, while this test leases one of the others
    mix = os.path.join(work, "mix.json")
    with open(mix, "w") as f:
        json.dump({"name": "mix", "gpus": [
            {"name": "NVIDIA A100-SXM4-80GB",
             "processes": [{"pid": 4000010, "used_memory": 1 << 30, "sm_util": 30}]},
            {"name": "NVIDIA A100-SXM4-80GB", "utilization": {"gpu": 40, "memory": 10},
             "faults": {"nvmlDeviceGetPowerUsage": "UNKNOWN", "nvmlDeviceGetClockInfo": "NOT_SUPPORTED"}},
            {"name": "NVIDIA A100-SXM4-80GB", "utilization": {"gpu": 50, "memory": 10}}]}, f)
    start([GPUCTL, "--sim", mix, "run", "--gpus", "1", "--name", "mixjob", "--", "sleep", "120"])
    t = Term("mix", 120, 30)
    t.line(top_cmd(mix))

    def marked(s):
        """the container's row and GPU 0's line, each whole and marked U (tmux may show a half-drawn screen)"""
        row = [l for l in s.splitlines() if re.match(r"^ +4000010 ", l)]
        gpu0 = [l for l in s.splitlines() if re.match(r"^ 0 +A100", l)]
        return ("leased: root 'mixjob'" in s and bool(row) and "(not in this PID namespace)" in row[0] and
                row[0].rstrip().endswith(" U") and bool(gpu0) and gpu0[0].rstrip().endswith(" U"))
    ok, s = t.until(marked)
    check("a container's process on a GPU nobody leases is marked U, and so is its GPU", ok, s)
    # GPU 1's power and clocks cannot be read: N/A where they go, GPU 2's are shown
    check("a power draw and a clock that fail show as N/A, the others' as numbers",
          re.search(r"^ 1 +A100.* \d+C +N/A +N/A", s, re.M) is not None and
          re.search(r"^ 2 +A100.* \d+C +\d+/\d+W +\d+/\d+MHz", s, re.M) is not None, s)
    t.keys("q")
    t.close()

    # the history: 40 samples are 4 s, a fifth of the swing, which never goes from under 7 % to over
    # 93 % (a sparkline's lowest and highest block) within 5 s; the whole history shows both
    def util_spark(s):
        m = re.search(r"^ +util (.*?) +mem ", s, re.M)
        return m.group(1) if m else ""

    time.sleep(max(0.0, 16 - (time.monotonic() - spark_t0)))
    ok, s = spark.until(lambda s: "\u2581" in util_spark(s) and "\u2588" in util_spark(s), timeout=10)
    check("the sparkline holds the history of more than its width: the swing's low and high both",
          ok and len(util_spark(s)) == 40, s)
    spark.keys("q")
    spark.close()

    # a GPU lost mid-run: GPU 1 falls off after its second temperature read (as in
    # tests/cli/nodes/lost.json), while GPU 0's load swings over 4 s
    lost = os.path.join(work, "lost.json")
    with open(lost, "w") as f:
        json.dump({"name": "lostvary", "gpus": [
            {"name": "NVIDIA L4", "temperature": 40, "utilization": {"gpu": 50, "memory": 0},
             "vary": {"period_s": 4, "amplitude": 40}},
            {"name": "NVIDIA L4", "temperature": 41, "utilization": {"gpu": 5, "memory": 1},
             "faults": {"nvmlDeviceGetTemperature": {"error": "GPU_IS_LOST", "after": 2}}}]}, f)
    t = Term("lost", 120, 30)
    t.line(top_cmd(lost))
    s = t.wait(r"GPU LOST", timeout=10)
    loads = set()
    end = time.monotonic() + 2.5
    while time.monotonic() < end:
        sc = t.screen()
        m = re.search(r"^ 0 +L4 .*?(\d+)%", sc, re.M)
        if m and re.search(r"^ 1 +L4 +GPU LOST", sc, re.M):
            loads.add(m.group(1))
        time.sleep(0.2)
    check("a lost GPU is shown as such, the other still updating (its load changes)",
          s is not None and len(loads) >= 2, (loads, t.screen()))
    t.keys("q")
    t.close()

    # the terminal goes away (an ssh session or tmux ends): top leaves, 128+SIGHUP, instead of redrawing
    # for nobody in a busy loop (it did: found running at 100 % of a core after the suite)
    master, slave = os.openpty()
    hup = subprocess.Popen([GPUCTL, "--sim", os.path.join(SRC, "examples", "nodes", "h100-8x-sxm.json"), "top",
                            "-d", "0.3"], stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
                           env=dict(os.environ, TERM="xterm", GPUCTL_SIM_LIBDIR=SIMLIB, GPUCTL_SIM_RUNDIR=RUNDIR,
                                    GPUCTL_STATE_DIR=STATE, HOME=HOME))
    procs.append(hup)
    os.close(slave)
    time.sleep(1.0)
    os.close(master)
    try:
        rc = hup.wait(timeout=5)
    except subprocess.TimeoutExpired:
        rc = None
    check("its terminal closed, top ends (129) instead of spinning", rc == 129, rc)
finally:
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
    subprocess.run(["tmux", "-S", SOCK, "kill-server"], capture_output=True)
    subprocess.run(["pkill", "-f", RUNDIR], capture_output=True)

shutil.rmtree(work, ignore_errors=True)
harness.finish("PASS")
