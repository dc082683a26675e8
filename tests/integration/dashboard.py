#!/usr/bin/env python3
"""gpuctld's dashboard in a real browser: starts the daemon on the simulated
8×H100 node, drives headless Chromium through chromedriver's W3C WebDriver
HTTP API (standard library only, no selenium), and checks that the page shows
one card per GPU, logs nothing at WARNING or SEVERE, follows a change of
the node (a gpuctl-sim-hold process taking 30 GiB on an idle GPU) within 3 s,
and (as root, which gpuctld needs to run jobs as their users) lists the job
queue: a running and a queued job, with their ids, users, states and GPUs,
and no command line.
Installs Debian's chromium and chromium-driver when missing and root; exit 77
(skip) when they cannot be had.
Env: GPUCTL_SIM_LIBDIR (set by meson), DASHBOARD_SCREENSHOT=PATH saves a PNG
(after DASHBOARD_SCREENSHOT_AFTER seconds, default 1).
Usage: dashboard.py GPUCTLD SRCDIR [GPUCTL]
"""
import base64
import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check  # noqa: E402

GPUCTLD, SRC = sys.argv[1], sys.argv[2]
GPUCTL = sys.argv[3] if len(sys.argv) > 3 else None  # with it (and root): the queue too
NODE = os.path.join(SRC, "examples", "nodes", "h100-8x-sxm.json")
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
NGPUS = 8
HOLD_GPU = 6            # idle on h100-8x-sxm: +30 GiB fits (GPU 2 already uses 67.5 of 79.6 GiB)
HOLD_GIB = 30
GiB = 1 << 30

harness.verbose = "detail"  # "ok   name: detail" or "FAIL name: detail" as each check is made
procs = []              # (name, Popen) to kill at the end
tmp = tempfile.mkdtemp(prefix="gpuctl-dashboard-")


def skip(why):
    print("SKIP: " + why, flush=True)
    sys.exit(77)


# ---- chromium ----
def ensure_chromium():
    if os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER):
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        skip(f"{CHROMIUM} or {CHROMEDRIVER} missing and cannot install them (not root or no apt-get)")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    install = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "chromium", "chromium-driver"]
    print("installing chromium and chromium-driver ...", flush=True)
    if subprocess.run(install, env=env, stdout=subprocess.DEVNULL).returncode != 0:
        subprocess.run(["apt-get", "update", "-qq"], env=env, stdout=subprocess.DEVNULL)
        subprocess.run(install, env=env, stdout=subprocess.DEVNULL)
    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        skip("could not install chromium and chromium-driver with apt-get")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class WebDriver:
    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}"
        self.sid = None

    def req(self, method, path, body=None, timeout=30):
        data = None if body is None else json.dumps(body).encode()
        r = urllib.request.Request(self.base + path, data=data, method=method,
                                   headers={"Content-Type": "application/json; charset=utf-8"})
        try:
            with urllib.request.urlopen(r, timeout=timeout) as res:
                doc = json.loads(res.read() or b"{}")
        except urllib.error.HTTPError as e:
            try:
                v = json.loads(e.read()).get("value", {})
                msg = f"{v.get('error')}: {v.get('message', '')}".splitlines()[0]
            except Exception:
                msg = str(e)
            raise RuntimeError(f"WebDriver {method} {path}: HTTP {e.code} {msg}") from None
        return doc.get("value")

    def s(self, method, path, body=None, timeout=30):
        return self.req(method, f"/session/{self.sid}{path}", body, timeout)

    def new_session(self):
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": CHROMIUM,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,900",
                         "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check",
                         f"--user-data-dir={os.path.join(tmp, 'chrome-profile')}"],
            },
            "goog:loggingPrefs": {"browser": "ALL"},
        }}}
        v = self.req("POST", "/session", caps, timeout=60)
        self.sid = v["sessionId"]

    def js(self, script, *args):
        return self.s("POST", "/execute/sync", {"script": script, "args": list(args)})

    def browser_log(self):
        return self.s("POST", "/se/log", {"type": "browser"}) or []


def start_chromedriver():
    port = free_port()
    log = open(os.path.join(tmp, "chromedriver.log"), "w")
    p = subprocess.Popen([CHROMEDRIVER, f"--port={port}"], stdout=log, stderr=subprocess.STDOUT,
                         start_new_session=True)
    procs.append(("chromedriver", p))
    wd = WebDriver(port)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if p.poll() is not None:
            raise RuntimeError(f"chromedriver exited with {p.returncode}")
        try:
            if (wd.req("GET", "/status", timeout=2) or {}).get("ready"):
                return wd
        except (OSError, RuntimeError):
            pass
        time.sleep(0.1)
    raise RuntimeError("chromedriver not ready within 20 s")


# ---- the daemon ----
def queue_args():
    if not GPUCTL or os.geteuid() != 0:
        return ["--no-queue"]
    return ["--queue-db", os.path.join(tmp, "q.db"), "--queue-socket", os.path.join(tmp, "q.sock"),
            "--log-dir", os.path.join(tmp, "logs")]


def start_daemon(env):
    p = subprocess.Popen([GPUCTLD, "--sim", NODE, "--listen", "127.0.0.1:0", "--interval", "0.5s", *queue_args()],
                         env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    procs.append(("gpuctld", p))
    lines, found = [], threading.Event()
    url = []

    def drain():  # keeps reading so the daemon never blocks on a full pipe
        for line in p.stderr:
            lines.append(line.rstrip("\n"))
            m = re.search(r"gpuctld: listening on (http://127\.0\.0\.1:(\d+)/)", line)
            if m and not found.is_set():
                url.append(m.group(1))
                found.set()
        found.set()
    threading.Thread(target=drain, daemon=True).start()
    found.wait(20)
    if not url:
        tail = "\n".join(lines[-20:])
        why = "within 20 s" if p.poll() is None else f"before it exited with {p.returncode}"
        raise RuntimeError(f"gpuctld printed no 'gpuctld: listening on' line {why}; stderr:\n{tail}")
    return p, url[0], lines


def api(url, path):
    with urllib.request.urlopen(url + path, timeout=10) as r:
        return json.loads(r.read())


def gib1(b):
    return f"{b / GiB:.1f} GiB"


READ_CARDS = """
return Array.from(document.querySelectorAll('.gpu-card')).map(c => ({
  index: c.getAttribute('data-gpu-index'),
  mem: (c.querySelector('.mem-used') || {}).textContent,
  util: (c.querySelector('.util') || {}).textContent,
  procs: (c.querySelector('.proc-count') || {}).textContent,
  lease: !!c.querySelector('.lease'),
}));
"""


def cards_by_index(wd):
    return {c["index"]: c for c in wd.js(READ_CARDS)}


READ_JOBS = """
const sec = document.getElementById('jobs');
return {hidden: !sec || sec.hidden, text: sec ? sec.textContent : '',
        rows: Array.from(document.querySelectorAll('#jobs-body tr.job')).map(
          tr => Array.from(tr.cells).map(td => td.textContent))};
"""


def check_jobs(wd, env):
    """the queue's table: a running job and a queued one, no command lines"""
    if "--no-queue" in queue_args():
        print("   queue table: not checked (needs root and the gpuctl binary)", flush=True)
        return
    qenv = dict(env, GPUCTL_QUEUE_SOCKET=os.path.join(tmp, "q.sock"))

    def submit(*args):
        p = subprocess.run([GPUCTL, "submit", *args], env=qenv, capture_output=True, text=True, timeout=30)
        check(f"gpuctl submit {' '.join(args)}", p.returncode == 0, p.stderr.strip())
        return p.stdout.strip()
    run_id = submit("--name", "on-the-page", "--", "sleep", "60")
    # every GPU with another user's process is kept from jobs on this node: 8 never fit, it waits
    wait_id = submit("-n", "8", "--", "sleep", "61")
    user = pwd.getpwuid(os.geteuid()).pw_name
    t0, doc, want = time.monotonic(), {}, None
    while time.monotonic() - t0 < 10:
        doc = wd.js(READ_JOBS)
        rows = {r[0]: r for r in doc["rows"]}
        if run_id in rows and rows[run_id][2] == "running" and wait_id in rows:
            want = (rows[run_id], rows[wait_id])
            break
        time.sleep(0.2)
    check("#jobs lists the running and the queued job", want is not None and not doc["hidden"],
          f"after {time.monotonic() - t0:.1f} s: {doc}")
    if want:
        r, w = want
        check("job rows: id, user, state, GPUs, name",
              r[1] == user and r[3] != "" and r[4] == "on-the-page" and w[1:5] == [user, "queued", "(8)", "-"],
              f"{r} / {w}")
        check("no command line on the page", "sleep" not in doc["text"], doc["text"])
    p = subprocess.run([GPUCTL, "cancel", run_id, wait_id], env=qenv, capture_output=True, text=True, timeout=30)
    check("both jobs cancelled", p.returncode == 0, p.stderr.strip())


def parse_gib(text):
    m = re.fullmatch(r"(\d+\.\d) GiB", text or "")
    return float(m.group(1)) if m else None


def run():
    ensure_chromium()
    libdir = os.environ.get("GPUCTL_SIM_LIBDIR") or os.path.join(
        os.path.dirname(os.path.abspath(GPUCTLD)), "..", "sim")
    hold_bin = os.path.join(libdir, "gpuctl-sim-hold")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUCTL_") or k == "GPUCTL_AUTHORITY_DIR"}
    env.update({"GPUCTL_SIM_LIBDIR": libdir,
                "GPUCTL_SIM_RUNDIR": tempfile.mkdtemp(prefix="run-", dir=tmp),
                "GPUCTL_STATE_DIR": tempfile.mkdtemp(prefix="state-", dir=tmp)})

    daemon, url, dlog = start_daemon(env)
    check("daemon listening", True, url)
    snap = api(url, "api/v1/gpus")
    before_api = snap["gpus"][HOLD_GPU]
    free = before_api["memory"]["free"]
    check(f"GPU {HOLD_GPU} has room for {HOLD_GIB} GiB", free is not None and free >= (HOLD_GIB + 1) * GiB,
          f"free {gib1(free or 0)}")

    wd = start_chromedriver()
    wd.new_session()
    try:
        t0 = time.monotonic()
        wd.s("POST", "/url", {"url": url})
        n, cards = 0, {}
        while time.monotonic() - t0 < 10:
            cards = cards_by_index(wd)
            n = len(cards)
            if n == NGPUS and all(parse_gib(c["mem"]) is not None for c in cards.values()):
                break
            time.sleep(0.1)
        check(f"{NGPUS} .gpu-card elements", n == NGPUS, f"{n} after {time.monotonic() - t0:.1f} s")
        check("data-gpu-index 0..7", sorted(cards) == [str(i) for i in range(NGPUS)], str(sorted(cards)))

        # the cards agree with the API (values of the simulated node are steady)
        snap = api(url, "api/v1/gpus")
        want = {str(g["index"]): (gib1(g["memory"]["used"]), f"{g['utilization']['gpu']} %",
                                  str(len(g["processes"]))) for g in snap["gpus"]}
        got = {i: (c["mem"], c["util"], c["procs"]) for i, c in cards.items()}
        check(".mem-used / .util / .proc-count match /api/v1/gpus", got == want,
              "" if got == want else f"page {got} api {want}")
        check("no .lease badge without leases", not any(c["lease"] for c in cards.values()))

        time.sleep(1.5)     # a few polls, so that steady-state logging shows up too
        log = [e for e in wd.browser_log() if e.get("level") in ("SEVERE", "WARNING")]
        for e in log:
            print(f"     console {e.get('level')}: {e.get('message')}", flush=True)
        check("no console entries at WARNING or SEVERE", not log, f"{len(log)} entries" if log else "")

        # change the node: a process takes HOLD_GIB GiB on HOLD_GPU
        base = cards_by_index(wd)[str(HOLD_GPU)]
        mem0, procs0 = parse_gib(base["mem"]), int(base["procs"])
        t0 = time.monotonic()
        hold = subprocess.Popen([hold_bin, "--gpu", str(HOLD_GPU), "--mem", f"{HOLD_GIB}GiB", "--", "sleep", "30"],
                                env=env, stdin=subprocess.DEVNULL, start_new_session=True)
        procs.append(("gpuctl-sim-hold", hold))
        latency, last = None, base
        while time.monotonic() - t0 < 3.0:
            last = cards_by_index(wd)[str(HOLD_GPU)]
            mem1 = parse_gib(last["mem"])
            if mem1 is not None and abs(mem1 - mem0 - HOLD_GIB) <= 0.15 and last["procs"] == str(procs0 + 1):
                latency = time.monotonic() - t0
                break
            time.sleep(0.05)
        check(f"GPU {HOLD_GPU} on the page: +{HOLD_GIB} GiB and +1 process within 3 s",
              latency is not None,
              f"{latency:.2f} s ({base['mem']} -> {last['mem']}, {procs0} -> {last['procs']} processes)"
              if latency is not None else
              f"after 3 s: {base['mem']} -> {last['mem']}, {procs0} -> {last['procs']} processes")
        if latency is not None:
            print(f"update latency: {latency * 1000:.0f} ms (daemon interval 0.5 s, page polls every 1 s)",
                  flush=True)

        check_jobs(wd, env)

        shot = os.environ.get("DASHBOARD_SCREENSHOT")
        if shot:
            # DASHBOARD_SCREENSHOT_AFTER=S: let the charts fill for S seconds first (docs/dashboard.png)
            time.sleep(float(os.environ.get("DASHBOARD_SCREENSHOT_AFTER", "1")))
            png = base64.b64decode(wd.s("GET", "/screenshot"))
            with open(shot, "wb") as f:
                f.write(png)
            check("screenshot saved", png[:8] == b"\x89PNG\r\n\x1a\n", f"{shot} ({len(png)} bytes)")

        log = [e for e in wd.browser_log() if e.get("level") in ("SEVERE", "WARNING")]
        for e in log:
            print(f"     console {e.get('level')}: {e.get('message')}", flush=True)
        check("still no console entries at WARNING or SEVERE", not log, f"{len(log)} entries" if log else "")
        check("daemon still running", daemon.poll() is None, "" if daemon.poll() is None else
              f"exit {daemon.returncode}; stderr:\n" + "\n".join(dlog[-20:]))
    finally:
        try:
            wd.req("DELETE", f"/session/{wd.sid}", timeout=10)
        except Exception as e:
            print(f"     (deleting the WebDriver session: {e})", flush=True)


def cleanup():
    for name, p in reversed(procs):
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait(5)
    shutil.rmtree(tmp, ignore_errors=True)


def main():
    try:
        run()
    except SystemExit:
        raise
    except Exception as e:
        harness.fail(f"{type(e).__name__}: {e}")
    finally:
        cleanup()
    harness.finish()


if __name__ == "__main__":
    main()
