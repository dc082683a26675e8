#!/usr/bin/env python3
"""Make docs/top.png: gpuctl top as a real terminal shows it.

`gpuctl top` runs in tmux (120x36, UTF-8, 256 colours) against the moving
simulated node (examples/nodes/h100-8x-live.json), with a lease holder, a
waiter and a process under no lease, for SETTLE seconds so the sparklines
fill; `tmux capture-pane -e` gives the screen with its colour escapes, which
are rendered to HTML cell by cell and photographed by headless chromium.
Not a test: run by hand after a change to the screen (needs tmux and
chromium, as tests/tui/tmux-up.sh and tests/integration/dashboard.py
install them).

Usage: screenshot.py GPUCTL SRCDIR [OUT.png] [SETTLE]
"""
import html
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

GPUCTL, SRC = os.path.realpath(sys.argv[1]), os.path.realpath(sys.argv[2])
OUT = sys.argv[3] if len(sys.argv) > 3 else os.path.join(SRC, "docs", "top.png")
SETTLE = float(sys.argv[4]) if len(sys.argv) > 4 else 40
W, H = 120, 36
NODE = os.path.join(SRC, "examples", "nodes", "h100-8x-live.json")
SIMLIB = os.environ.get("GPUCTL_SIM_LIBDIR", os.path.join(os.path.dirname(os.path.dirname(GPUCTL)), "sim"))
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if not CHROMIUM:
    sys.exit("screenshot.py: chromium is needed (apt-get install chromium)")

work = tempfile.mkdtemp(prefix="gpuctl-shot-")
env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUCTL_", "TMUX")) and k != "XDG_CONFIG_HOME"}
env.update(GPUCTL_SIM_LIBDIR=SIMLIB, GPUCTL_STATE_DIR=work + "/state", GPUCTL_SIM_RUNDIR=work + "/rd", HOME=work,
           LANG="C.UTF-8", TERM="xterm-256color")
os.makedirs(work + "/rd")
sock = work + "/tmux.sock"


def tmux(*a):
    return subprocess.run(["tmux", "-S", sock] + list(a), env=env, capture_output=True, text=True, check=True).stdout


procs = [subprocess.Popen([GPUCTL, "--sim", NODE, "run", "--gpus", "6", "--name", "finetune", "--", "sleep", "600"],
                          env=env)]
time.sleep(0.5)
procs.append(subprocess.Popen([GPUCTL, "--sim", NODE, "run", "--gpus", "6", "--wait", "--name", "sweep-17", "--",
                               "true"], env=env))
procs.append(subprocess.Popen([os.path.join(SIMLIB, "gpuctl-sim-hold"), "--gpu", "1", "--mem", "6G", "--",
                               "sleep", "600"], env=env))
try:
    tmux("new-session", "-d", "-s", "shot", "-x", str(W), "-y", str(H),
         "exec %s --sim %s top -d 0.5" % (GPUCTL, NODE))
    tmux("set-option", "-t", "shot", "status", "off")
    time.sleep(SETTLE)
    screen = tmux("capture-pane", "-e", "-N", "-p", "-t", "shot")  # -N: trailing cells too
finally:
    subprocess.run(["tmux", "-S", sock, "kill-server"], capture_output=True)
    for p in procs:
        p.terminate()
        p.wait()

# ---- ANSI (SGR) to HTML, one span per run of cells with the same attributes
BASE = ["#1e1e1e", "#e06c75", "#98c379", "#e5c07b", "#61afef", "#c678dd", "#56b6c2", "#dcdfe4"]
BRIGHT = ["#5c6370", "#ff7b86", "#b5e890", "#ffd68a", "#7cc5ff", "#de9bf5", "#6fd3e0", "#ffffff"]
FG, BG = "#dcdfe4", "#1e1e1e"


def color256(n):
    if n < 8:
        return BASE[n]
    if n < 16:
        return BRIGHT[n - 8]
    if n < 232:
        n -= 16
        return "#%02x%02x%02x" % tuple((0, 95, 135, 175, 215, 255)[x] for x in (n // 36, n // 6 % 6, n % 6))
    g = 8 + (n - 232) * 10
    return "#%02x%02x%02x" % (g, g, g)


def render(text):
    rows = []
    st = {"fg": None, "bg": None, "bold": False, "rev": False}  # capture-pane -e carries it across lines
    for line in text.split("\n")[:H]:
        out = []
        for m in re.finditer(r"\x1b\[([0-9;]*)m|([^\x1b]+)", line):
            if m.group(2) is not None:
                fg, bg = st["fg"] or FG, st["bg"] or BG
                if st["rev"]:
                    fg, bg = bg, fg
                style = "color:%s;background:%s;%s" % (fg, bg, "font-weight:bold;" if st["bold"] else "")
                out.append('<span style="%s">%s</span>' % (style, html.escape(m.group(2))))
                continue
            codes = [int(c) if c else 0 for c in m.group(1).split(";")]
            k = 0
            while k < len(codes):
                c = codes[k]
                if c == 0:
                    st = {"fg": None, "bg": None, "bold": False, "rev": False}
                elif c == 1:
                    st["bold"] = True
                elif c == 22:
                    st["bold"] = False
                elif c == 7:
                    st["rev"] = True
                elif c == 27:
                    st["rev"] = False
                elif 30 <= c <= 37:
                    st["fg"] = BASE[c - 30]
                elif 90 <= c <= 97:
                    st["fg"] = BRIGHT[c - 90]
                elif 40 <= c <= 47:
                    st["bg"] = BASE[c - 40]
                elif c == 39:
                    st["fg"] = None
                elif c == 49:
                    st["bg"] = None
                elif c in (38, 48) and k + 2 < len(codes) and codes[k + 1] == 5:
                    st["fg" if c == 38 else "bg"] = color256(codes[k + 2])
                    k += 2
                k += 1
        rows.append("".join(out))
    return rows


page = work + "/top.html"
with open(page, "w") as f:
    f.write("<!doctype html><meta charset=utf-8><style>body{margin:0;background:%s}"
            "pre{margin:12px;font:15px/1.25 'DejaVu Sans Mono',monospace;color:%s}</style><pre>%s</pre>"
            % (BG, FG, "\n".join(render(screen))))
subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                "--window-size=%d,%d" % (W * 9 + 24, H * 19 + 24), "--screenshot=" + os.path.abspath(OUT),
                "file://" + page], capture_output=True, timeout=120, check=True)
shutil.rmtree(work, ignore_errors=True)
print("wrote", OUT)
