#!/usr/bin/env python3
"""Health quarantine (issue 21) with two real users on a simulated 8-GPU node.

gpuctld (root) watches Xid events. An injected Xid 79 on GPU 3
(gpuctl-sim-hold --xid) quarantines it: gpuctl quarantine lists it, ls
marks it, /metrics has gpuctl_gpu_quarantined and DCGM_FI_DEV_XID_ERRORS,
/api/v1/gpus has it; user A's run --gpus 3 is refused with the reason,
pick and run -n 7 avoid it, pick -n 8 cannot be met, and A's queued -n 8
job waits. Xid 13 (an application's fault) quarantines nothing. User B can
neither clear root's mark, nor remove its file, nor fool anyone with a mark
of its own. root's 'gpuctl quarantine clear 3' returns the GPU: A's queued
job starts and ends; the old Xid does not mark it again. An administrator's
'quarantine add --reason' is shown to those it stops. With 'quarantine =
off' in a --config file, an Xid is counted and marks nothing.
Usage: quarantine.py GPUCTLD GPUCTL SRCDIR SIMHOLD
"""
import json
import os
import re
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import policy  # noqa: E402
import testusers  # noqa: E402
from policy import GPUCTL, GPUCTLD, SIMHOLD, SRC, check, finish, gpuctl, log, setup, start, until  # noqa: E402

A, B = setup("quarantine")
work, env, STATE = policy.work, policy.env, os.path.join(policy.work, "state")


def marks(user=None):
    p = gpuctl("quarantine", "--json", user=user)
    return {q["gpu"]: q for q in json.loads(p.stdout)["quarantined"]} if p.returncode == 0 else None


def metric(url, name, gpu):
    text = urllib.request.urlopen(url + "/metrics", timeout=10).read().decode()
    m = re.search(r'^%s\{gpu="%d",[^}]*\} (\S+)$' % (name, gpu), text, re.M)
    return m.group(1) if m else None


def xid(gpu, code):
    subprocess.run([SIMHOLD, "--gpu", str(gpu), "--xid", str(code)], env=env, check=True)


daemon, url = start()
try:
    r = gpuctl("quarantine", user=A)
    check("nothing is quarantined at first", r.returncode == 0 and "no GPU is quarantined" in r.stdout, r)

    xid(3, 79)
    xid(2, 13)
    m = until(lambda: (marks(A) or {}).get(3))
    check("an injected Xid 79 quarantines GPU 3, as everyone sees it", m is not None and m["reason"] == "xid" and
          m["xid"] == 79 and "fallen off the bus" in m["detail"] and m["by"] == "root", m)
    time.sleep(0.5)
    check("Xid 13, an application's fault, quarantines nothing", set(marks(A) or {}) == {3}, marks(A))
    check("gpuctld says so in its log", until(lambda: any("GPU 3" in l and "quarantined: Xid 79" in l for l in log)),
          log)
    check("/metrics: gpuctl_gpu_quarantined", until(lambda: metric(url, "gpuctl_gpu_quarantined", 3) == "1") and
          metric(url, "gpuctl_gpu_quarantined", 2) == "0", metric(url, "gpuctl_gpu_quarantined", 3))
    check("/metrics: DCGM_FI_DEV_XID_ERRORS, the last Xid of each GPU",
          metric(url, "DCGM_FI_DEV_XID_ERRORS", 3) == "79" and metric(url, "DCGM_FI_DEV_XID_ERRORS", 2) == "13" and
          metric(url, "DCGM_FI_DEV_XID_ERRORS", 0) == "0")
    text = urllib.request.urlopen(url + "/metrics", timeout=10).read().decode()
    check("/metrics: a quarantined GPU is not free", re.search(r"^gpuctl_gpus_free\{[^}]*\} 7$", text, re.M), text)
    api = json.loads(urllib.request.urlopen(url + "/api/v1/gpus", timeout=10).read())
    g3 = api["gpus"][3]
    check("/api/v1/gpus: the mark and the last Xid", g3["quarantine"] and g3["quarantine"]["reason"] == "xid" and
          g3["last_xid"] == 79 and api["gpus"][0]["quarantine"] is None, g3)
    r = gpuctl("ls", user=A)
    line3 = [l for l in r.stdout.splitlines() if l.startswith("[3]")]
    check("ls marks it", line3 and "QUARANTINED (xid 79)" in line3[0], r.stdout)

    r = gpuctl("run", "--gpus", "3", "--", "true", user=A)
    check("A's run --gpus 3 is refused, with the reason", r.returncode == 1 and "GPU 3 is quarantined: Xid 79" in
          r.stderr and "gpuctl quarantine clear 3" in r.stderr, r)
    r = gpuctl("pick", "-n", "8", user=A)
    check("pick -n 8 cannot be met", r.returncode == 1 and "quarantined" in r.stderr, r)
    r = gpuctl("pick", "-n", "7", user=A)
    check("pick -n 7 leaves GPU 3 out", r.returncode == 0 and r.stdout.strip() == "0,1,2,4,5,6,7", r)
    r = gpuctl("run", "-n", "7", "--", "sh", "-c", "echo $GPUCTL_GPUS", user=A)
    check("run -n 7 leaves GPU 3 out", r.returncode == 0 and r.stdout.strip() == "0,1,2,4,5,6,7", r)

    r = subprocess.run(testusers.as_user_cmd(A, GPUCTL, "submit", "-n", "8", "--", "true"), env=env,
                       capture_output=True, text=True, cwd=work, timeout=30)
    job = r.stdout.strip()
    check("A submits a job for all 8 GPUs", r.returncode == 0 and job.isdigit(), r)
    time.sleep(1.0)
    s = json.loads(gpuctl("show", job, "--json").stdout)["job"]
    check("the queue does not start it on the quarantined GPU", s["state"] == "queued" and
          "quarantine" in s.get("pending_reason", ""), s)

    # B, hostile: no clearing, no removing, no marks of its own that count
    r = gpuctl("quarantine", "clear", "3", user=B)
    check("B cannot clear root's mark", r.returncode == 1 and "only root" in r.stderr, r)
    r = gpuctl("quarantine", "add", "0", user=B)
    check("B cannot quarantine a GPU", r.returncode == 1 and "only root" in r.stderr, r)
    uuid3 = gpuctl("query", "--query-gpu=uuid", "--format=csv,noheader", "-i", "3").stdout.strip()
    uuid0 = gpuctl("query", "--query-gpu=uuid", "--format=csv,noheader", "-i", "0").stdout.strip()
    r = subprocess.run(testusers.as_user_cmd(B, "rm", "-f", os.path.join(STATE, "quarantine." + uuid3)),
                       capture_output=True, text=True)
    check("B cannot remove the mark's file", os.path.exists(os.path.join(STATE, "quarantine." + uuid3)), r)
    r = subprocess.run(testusers.as_user_cmd(B, "sh", "-c", "echo '{\"reason\":\"xid\"}' > %s" %
                                             os.path.join(STATE, "quarantine." + uuid0)), capture_output=True, text=True)
    check("B plants a mark of its own for GPU 0", r.returncode == 0, r)
    check("it fools nobody: not listed for A", marks(A) is not None and 0 not in marks(A), marks(A))
    r = gpuctl("pick", "--gpus", "0", user=A)
    check("nor in A's way", r.returncode == 0 and r.stdout.strip() == "0", r)
    r = gpuctl("run", "--gpus", "0", "--", "true", user=B)
    check("nor B itself: marks in root's directory are root's", r.returncode == 0 and 0 not in marks(B), r)

    # root returns GPU 3
    r = gpuctl("quarantine", "clear", "3")
    check("root clears it", r.returncode == 0 and "GPU 3 back in service" in r.stdout, r)
    s = until(lambda: (lambda j: j if j["state"] in ("done", "failed") else None)(
        json.loads(gpuctl("show", job, "--json").stdout)["job"]), 20)
    check("A's queued job then runs on all 8 and ends", s and s["state"] == "done", s)
    time.sleep(0.6)
    check("the old Xid does not mark it again", marks(A) == {}, marks(A))
    check("/metrics follows", until(lambda: metric(url, "gpuctl_gpu_quarantined", 3) == "0"))
    r = gpuctl("quarantine", "clear", "3")
    check("clearing a GPU that is not quarantined says so", r.returncode == 1 and "GPU 3 is not quarantined" in
          r.stderr, r)
    r = gpuctl("quarantine", "add", "5", "--reason", "fan noise, RMA 1234")
    check("root quarantines GPU 5 by hand", r.returncode == 0 and "GPU 5 quarantined" in r.stdout, r)
    r = gpuctl("run", "--gpus", "5", "--", "true", user=A)
    check("A is told why", r.returncode == 1 and "fan noise, RMA 1234" in r.stderr, r)
    r = gpuctl("quarantine", "clear", "all")
    check("clear all", r.returncode == 0 and "GPU 5 back in service" in r.stdout and marks(A) == {}, r)
    r = gpuctl("quarantine", "frobnicate")
    check("a bad action: one line, exit 2", r.returncode == 2 and "expected list, add or clear" in r.stderr and
          r.stderr.count("\n") == 1, r)
    r = gpuctl("quarantine", "clear", "12")
    check("a GPU that does not exist: exit 2", r.returncode == 2 and "12" in r.stderr, r)

    # a job that fails on a GPU an Xid takes out meanwhile: queued again elsewhere with --requeue
    jw = os.path.join(work, "jobs")
    os.mkdir(jw)
    os.chmod(jw, 0o777)
    script = (f"if [ -e {jw}/second ]; then exit 0; fi; touch {jw}/second; "
              f"while [ ! -e {jw}/fail ]; do sleep 0.05; done; exit 1")
    r = subprocess.run(testusers.as_user_cmd(A, GPUCTL, "submit", "--requeue", "--name", "xidjob", "--", "sh", "-c",
                                             script), env=env, capture_output=True, text=True, cwd=work, timeout=30)
    xj = r.stdout.strip()
    show = lambda: json.loads(gpuctl("show", xj, "--json").stdout)["job"]  # noqa: E731
    s1 = until(lambda: (lambda j: j if j["state"] == "running" and os.path.exists(f"{jw}/second") else None)(show()))
    first_gpu = int(str(s1["gpus"][0] if isinstance(s1["gpus"], list) else s1["gpus"]).split(",")[0]) if s1 else -1
    check("a --requeue job runs", s1 is not None and first_gpu >= 0, s1)
    xid(first_gpu, 48)
    until(lambda: first_gpu in (marks(A) or {}))
    open(f"{jw}/fail", "w").close()
    s2 = until(lambda: (lambda j: j if j["state"] == "done" else None)(show()), 20)
    second_gpu = int(str(s2["gpus"][0] if isinstance(s2["gpus"], list) else s2["gpus"]).split(",")[0]) if s2 else -1
    check("it fails after the Xid on its GPU, is queued again, and ends well on another GPU",
          s2 is not None and s2.get("starts") == 2 and second_gpu not in (-1, first_gpu), (s1, s2))
    check("gpuctld says why", any(f"job {xj} failed after Xid 48" in l and f"on GPU {first_gpu}" in l for l in log), log)
    gpuctl("quarantine", "clear", "all")

    # the configuration file: contrib/gpuctld.conf with every key set to its default is good;
    # a bad line is one error naming the file and the line
    allconf = os.path.join(work, "all.conf")
    with open(os.path.join(SRC, "contrib", "gpuctld.conf")) as f, open(allconf, "w") as o:
        for l in f:
            m = re.match(r"^# ([a-z-]+ = [^ #]+)", l)
            if m:
                o.write(m.group(1) + "\n")
    r = subprocess.run([GPUCTLD, "--config", allconf, "--check-config"], capture_output=True, text=True)
    check("contrib/gpuctld.conf's defaults are a good configuration", r.returncode == 0 and
          "configuration OK" in r.stdout and open(allconf).read().count("\n") >= 20, r)
    bad = os.path.join(work, "bad.conf")
    for text, said in (("interval = 1s\nquarantine = xid,bogus\n", ":2: invalid --quarantine 'xid,bogus'"),
                       ("frobnicate = 1\n", ":1: unknown key 'frobnicate'"),
                       ("listen\n", ":1: expected 'key = value'"),
                       ("allow-remote = maybe\n", ":1: invalid allow-remote 'maybe' (expected yes or no)")):
        with open(bad, "w") as f:
            f.write(text)
        r = subprocess.run([GPUCTLD, "--config", bad, "--check-config"], capture_output=True, text=True)
        check(f"a bad configuration line: {said}", r.returncode == 2 and r.stderr.count("\n") == 1 and
              (bad + said) in r.stderr, r)
    r = subprocess.run([GPUCTLD, "--config", os.path.join(work, "none.conf"), "--check-config"],
                       capture_output=True, text=True)
    check("a --config file that is not there", r.returncode == 2 and "cannot read the configuration file" in r.stderr, r)
    with open(bad, "w") as f:
        f.write("#" * (2 << 20))
    for what, path, said in (("over 1 MiB", bad, "larger than 1 MiB"), ("a directory", work, "is a directory")):
        r = subprocess.run([GPUCTLD, "--config", path, "--check-config"], capture_output=True, text=True)
        check(f"a --config {what}: one line, exit 2", r.returncode == 2 and said in r.stderr and
              r.stderr.count("\n") == 1, r)
    open(bad, "w").close()
    r = subprocess.run([GPUCTLD, "--config", bad, "--check-config"], capture_output=True, text=True)
    check("an empty --config is the defaults", r.returncode == 0, r)
    with open(bad, "w") as f:
        f.write("history = 100h\n")  # 360000 samples at 1 s: too many
    r = subprocess.run([GPUCTLD, "--config", bad, "--check-config"], capture_output=True, text=True)
    r2 = subprocess.run([GPUCTLD, "--config", bad, "--history", "1h", "--check-config"], capture_output=True, text=True)
    check("the command line wins over the file", r.returncode == 2 and "at most 100000 samples" in r.stderr and
          r2.returncode == 0, (r, r2))

    # off by configuration: an Xid is counted, nothing is marked
    harness.stop(daemon)
    conf = os.path.join(work, "gpuctld.conf")
    with open(conf, "w") as f:
        f.write("# health quarantine off\nquarantine = off\ninterval = 0.2s\n")
    daemon, url = start("--config", conf)
    xid(4, 79)
    check("with quarantine = off the Xid is counted", until(lambda: metric(url, "DCGM_FI_DEV_XID_ERRORS", 4) == "79"))
    time.sleep(0.5)
    check("and marks nothing", marks(A) == {}, marks(A))
finally:
    finish(daemon)
