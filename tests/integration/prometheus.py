#!/usr/bin/env python3
"""gpuctld's /metrics against a real Prometheus (issue 8): Debian's
prometheus (installed with apt-get when missing, as root) scrapes gpuctld on
the simulated 8xH100 node every second; the test asks Prometheus's HTTP API
for DCGM_FI_DEV_GPU_UTIL and finds every GPU with the node's value.

Also: promtool check metrics exits 0 on --labels snake, and on the default
(dcgm-exporter's modelName label) finds nothing but that label's camelCase;
a value the GPU does not report is absent, not 0; a lease shows up as
gpuctl_lease_info with its user and job; every query of
contrib/grafana-dashboard.json names metrics gpuctld serves and returns data.
Skips (77) with the reason only when Prometheus cannot be installed.
Usage: prometheus.py GPUCTLD GPUCTL SRCDIR
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

import harness
from harness import check

GPUCTLD, GPUCTL, SRC = sys.argv[1], sys.argv[2], sys.argv[3]
work = tempfile.mkdtemp(prefix="gpuctl-prom-")
# the 8xH100 demo node, with GPU 3's temperature failing: an NVML error to count, a value to leave out
with open(os.path.join(SRC, "examples", "nodes", "h100-8x-sxm.json")) as f:
    node = json.load(f)
node["gpus"][3]["faults"] = {"nvmlDeviceGetTemperature": "UNKNOWN"}
NODE = os.path.join(work, "node.json")
with open(NODE, "w") as f:
    json.dump(node, f)
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
env = {k: v for k, v in os.environ.items() if not k.startswith("GPUCTL_") or k in ("GPUCTL_SIM_LIBDIR", "GPUCTL_AUTHORITY_DIR")}
env.update({"GPUCTL_STATE_DIR": os.path.join(work, "state"), "GPUCTL_SIM_RUNDIR": os.path.join(work, "rd")})


def get(url, timeout=10):
    with opener.open(url, timeout=timeout) as r:
        return r.read().decode()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def ensure_prometheus():
    if shutil.which("prometheus") and shutil.which("promtool"):
        return True
    if os.geteuid() != 0:
        return False
    cmd = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "prometheus"]
    e = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    if subprocess.run(cmd, env=e, capture_output=True).returncode != 0:
        subprocess.run(["apt-get", "update", "-qq"], env=e, capture_output=True)
        subprocess.run(cmd, env=e, capture_output=True)
    return bool(shutil.which("prometheus") and shutil.which("promtool"))


def start_daemon(*args):
    return harness.start_gpuctld(GPUCTLD, NODE, env, *args)


stop = harness.stop


if not ensure_prometheus():
    print("SKIP: Prometheus is not installed and cannot be (apt-get install prometheus needs root)")
    sys.exit(77)

daemon = prom = holder = None
try:
    # ---- promtool
    for labels, clean in (("snake", True), ("dcgm", False)):
        d, base = start_daemon("--labels", labels)
        text = get(base + "/metrics")
        stop(d)
        p = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
        out = (p.stdout + p.stderr).strip().splitlines()
        if clean:
            check("promtool", p.returncode == 0, f"--labels snake: exit {p.returncode}: {out[:5]}")
        else:
            other = [l for l in out if "label names should be written in 'snake_case' not 'camelCase'" not in l]
            check("promtool", p.returncode in (0, 3) and not other, f"--labels dcgm: exit {p.returncode}: {other[:5]}")
            check("promtool", "modelName=" in text, "no modelName label in dcgm mode")
    print("promtool: --labels snake clean (exit 0); dcgm mode flags only the camelCase modelName label")

    # ---- a lease, and absent-not-zero, on the default daemon
    daemon, base = start_daemon("--interval", "0.5s")
    holder = subprocess.Popen([GPUCTL, "--sim", NODE, "run", "--gpus", "1", "--name", "bench-job", "--", "sleep", "60"],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 10
    text = ""
    while time.time() < deadline:
        text = get(base + "/metrics")
        if "gpuctl_lease_info{" in text:
            break
        time.sleep(0.2)
    m = re.search(r'gpuctl_lease_info\{gpu="1",[^}]*user="([^"]*)",job="bench-job",pid="\d+"\} 1', text)
    check("lease", m is not None, f"no gpuctl_lease_info for GPU 1 with job bench-job ({holder.poll()})")
    check("lease", re.search(r'gpuctl_gpu_leased\{gpu="1",[^}]*\} 1', text) is not None, "GPU 1 not leased")
    snap = json.loads(get(base + "/api/v1/gpus"))
    check("api", snap["gpus"][1]["lease"] and snap["gpus"][1]["lease"]["name"] == "bench-job", "lease not in /api/v1/gpus")
    # every GPU of this node: fan speed is null (H100 SXM has no fan), so nothing like a fan metric and
    # every DCGM family present has one series per GPU whose JSON value is not null
    pairs = {"DCGM_FI_DEV_GPU_UTIL": ("utilization", "gpu"), "DCGM_FI_DEV_GPU_TEMP": ("temperature",),
             "DCGM_FI_DEV_FB_RESERVED": ("memory", "reserved"), "DCGM_FI_DEV_SM_CLOCK": ("clocks", "sm_mhz")}
    for name, path in pairs.items():
        for g in snap["gpus"]:
            v = g
            for k in path:
                v = v.get(k) if isinstance(v, dict) else None
            has = re.search(name + r'\{gpu="%d",' % g["index"], text) is not None
            check("absent", has == (v is not None), f"{name} GPU {g['index']}: series {has}, JSON {v!r}")
    check("absent", snap["gpus"][3]["temperature"] is None and
          'gpuctl_nvml_errors_total{function="nvmlDeviceGetTemperature",value="temperature.gpu",error="Unknown Error"}'
          in text, "the failing temperature of GPU 3 is not counted as an NVML error")
    print("lease: gpuctl_lease_info and /api/v1/gpus name the holder; unsupported and failing values are absent, "
          "failures counted")

    # ---- Prometheus scrapes it
    port = free_port()
    target = base.replace("http://", "")
    cfg = os.path.join(work, "prometheus.yml")
    with open(cfg, "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                f"scrape_configs:\n  - job_name: gpuctld\n    static_configs:\n      - targets: ['{target}']\n")
    prom = subprocess.Popen(["prometheus", "--config.file", cfg, "--storage.tsdb.path", os.path.join(work, "tsdb"),
                             f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "prom.log"), "w"))
    t0 = time.time()
    want = {str(g["index"]): g["utilization"]["gpu"] for g in snap["gpus"]}
    got = {}
    while time.time() - t0 < 60:
        try:
            q = urllib.parse.quote("DCGM_FI_DEV_GPU_UTIL")
            r = json.loads(get(f"http://127.0.0.1:{port}/api/v1/query?query={q}", timeout=5))
            got = {s["metric"]["gpu"]: float(s["value"][1]) for s in r["data"]["result"]}
            if len(got) == len(want):
                break
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.5)
    took = time.time() - t0
    check("prometheus", got == {k: float(v) for k, v in want.items()}, f"Prometheus has {got}, want {want}")
    r = json.loads(get(f"http://127.0.0.1:{port}/api/v1/query?query=up"))
    check("prometheus", r["data"]["result"] and r["data"]["result"][0]["value"][1] == "1", f"up: {r}")
    r = json.loads(get(f"http://127.0.0.1:{port}/api/v1/query?query=" + urllib.parse.quote(
        'DCGM_FI_DEV_GPU_UTIL{gpu="5"}')))
    labels = r["data"]["result"][0]["metric"] if r["data"]["result"] else {}
    for k in ("UUID", "pci_bus_id", "device", "modelName", "Hostname", "hostname"):
        check("labels", k in labels, f"no {k} label in Prometheus: {labels}")
    print(f"prometheus: DCGM_FI_DEV_GPU_UTIL for all {len(got)} GPUs with the node's values, "
          f"{took:.1f}s after Prometheus started")

    # ---- contrib/grafana-dashboard.json: every metric exists, every query answers
    with open(os.path.join(SRC, "contrib", "grafana-dashboard.json")) as f:
        dash = json.load(f)
    exprs = [(p["title"], t["expr"]) for p in dash["panels"] for t in p.get("targets", [])]
    scrape = get(base + "/metrics")
    for title, e in exprs:
        for name in re.findall(r"\b(?:DCGM_FI_\w+|gpuctl_\w+)", e):
            check("grafana", re.search(r"^" + name + r"[{ ]", scrape, re.M) is not None,
                  f"{title}: {name} is not in /metrics")
    time.sleep(2)  # rate() needs two samples
    empty = []
    for title, e in exprs:
        q = e.replace("$instance", ".*").replace("$gpu", ".*")
        r = json.loads(get(f"http://127.0.0.1:{port}/api/v1/query?query=" + urllib.parse.quote(q)))
        check("grafana", r.get("status") == "success", f"{title}: {q}: {r}")
        if not r["data"]["result"] and "gpuctl_nvml_errors_total" not in e:
            empty.append(title)
        if title == "Lease holders":
            jobs = {x["metric"].get("lease_job") for x in r["data"]["result"]}
            check("grafana", "bench-job" in jobs, f"lease holders table: {jobs}")
    check("grafana", not empty, f"queries with no data: {empty}")
    print(f"grafana: {len(exprs)} dashboard queries, every metric in /metrics, each answers in Prometheus")
finally:
    stop(holder)
    stop(prom)
    stop(daemon)


def prom_log():
    log = os.path.join(work, "prom.log")
    if os.path.exists(log):
        print(open(log).read()[-2000:])


harness.finish(work=work, on_fail=prom_log)
