#!/usr/bin/env python3
"""Notifications (issue 21): a webhook receiver on 127.0.0.1 and a command
hook get each event once, with the documented JSON (docs/policy.md); two
real users on a simulated node.

Events: user A's queued job starts and ends (job.started, job.ended), one
fails (job.failed), an injected Xid quarantines a GPU (gpu.quarantined),
user B's process on A's leased GPU (policy.violation, --enforce warn), A's
lease ends (gpu.freed); a queued --spot job stopped by a notice from the
mock metadata server (job.preempted). --webhook-format slack posts
{"text": ...} only. A
receiver that hangs, or is down, holds nothing up: with one that never
answers (each POST waits out --webhook-timeout, twice), jobs still start and
end at once; the dispatch latency (submit to start, on free GPUs) is printed
beside the one without a webhook, and held within 1 s of it.
Usage: notify.py GPUCTLD GPUCTL SRCDIR SIMHOLD
"""
import http.server
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import policy  # noqa: E402
from policy import GPUCTL, GPUCTLD, NODE, SIMHOLD, bg, check, finish, gpuctl, log, setup, until  # noqa: E402

A, B = setup("notify")
work = policy.work
posted = []  # (path, headers' content type, body)


class Receiver(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        posted.append((self.path, self.headers.get("Content-Type"), body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *a):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
threading.Thread(target=server.serve_forever, daemon=True).start()
HOOK = f"http://127.0.0.1:{server.server_address[1]}/hook"
# the command hook: appends its stdin and $GPUCTL_EVENT to a file
cmdlog = os.path.join(work, "cmd.log")
hook = os.path.join(work, "hook.sh")
with open(hook, "w") as f:
    f.write(f"#!/bin/sh\n{{ printf '%s ' \"$GPUCTL_EVENT\"; cat; }} >> {cmdlog}\n")
os.chmod(hook, 0o755)

def start(*args):
    global url
    d, url = policy.start(*args)
    return d


def events():
    return [json.loads(b) for p, t, b in posted]


daemon = None
try:
    daemon = start("--webhook", HOOK, "--notify-command", hook, "--enforce", "warn")
    ok = gpuctl("submit", "-n", "2", "--name", "good", "--", "true", user=A).stdout.strip()
    bad = gpuctl("submit", "--name", "bad", "--", "sh", "-c", "exit 3", user=A).stdout.strip()
    check("A submits two jobs", ok.isdigit() and bad.isdigit(), (ok, bad))
    gpuctl("wait", ok, bad, user=A)
    subprocess.run([SIMHOLD, "--gpu", "6", "--xid", "79"], env=policy.env, check=True)
    lease = bg(A, GPUCTL, "--sim", NODE, "run", "--gpus", "3", "--name", "mine", "--", "sleep", "2")
    until(lambda: re.search(r"^3 ", gpuctl("leases").stdout, re.M))
    intruder = bg(B, SIMHOLD, "--gpu", "3", "--mem", "1G", "--", "sleep", "30")
    lease.wait(timeout=30)

    want = {"job.started": 1, "job.ended": 1, "job.failed": 1, "gpu.quarantined": 1, "policy.violation": 1}
    got = until(lambda: (lambda ev: ev if all(sum(1 for e in ev if e["event"] == k) >= n for k, n in want.items())
                         and any(e["event"] == "gpu.freed" and e["gpu"]["index"] == 3 for e in ev) else None)(events()))
    time.sleep(1.0)  # nothing more may come of these
    ev = events()
    names = [e["event"] for e in ev]
    check("every event came", got is not None, names)
    started = [e for e in ev if e["event"] == "job.started"]
    check("job.started: once per job, with the job", len(started) == 2 and
          {e["job"]["name"] for e in started} == {"good", "bad"} and
          all(e["job"]["user"] == A and e["job"]["state"] == "running" for e in started), started)
    ended = [e for e in ev if e["event"] == "job.ended"]
    check("job.ended: once, done, exit code 0, its GPUs", len(ended) == 1 and ended[0]["job"]["id"] == int(ok) and
          ended[0]["job"]["state"] == "done" and ended[0]["job"]["exit_code"] == 0 and
          len(ended[0]["job"]["gpus"].split(",")) == 2, ended)
    failed = [e for e in ev if e["event"] == "job.failed"]
    check("job.failed: once, with the exit status", len(failed) == 1 and failed[0]["job"]["id"] == int(bad) and
          failed[0]["job"]["exit_code"] == 3 and "exit status 3" in failed[0]["text"], failed)
    q = [e for e in ev if e["event"] == "gpu.quarantined"]
    check("gpu.quarantined: once, GPU 6, Xid 79", len(q) == 1 and q[0]["gpu"]["index"] == 6 and q[0]["xid"] == 79 and
          q[0]["reason"] == "xid" and q[0]["gpu"]["uuid"].startswith("GPU-"), q)
    v = [e for e in ev if e["event"] == "policy.violation"]
    check("policy.violation: once, B's process on A's GPU 3", len(v) == 1 and v[0]["gpu"]["index"] == 3 and
          v[0]["holder"] == A and v[0]["process"]["user"] == B and v[0]["process"]["pid"] == intruder.pid and
          v[0]["action"] == "warned", v)
    freed = [e for e in ev if e["event"] == "gpu.freed" and e["gpu"]["index"] == 3]
    check("gpu.freed: once, when A's lease of GPU 3 ended", len(freed) == 1 and freed[0]["holder"] == A and
          freed[0]["job"] == "mine", freed)
    check("every document: schema, time, host, text",
          all(e["schema"] == "gpuctl.event/1" and re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", e["time"]) and
              e["host"] and e["text"] for e in ev), ev)
    text = urllib.request.urlopen(url + "/metrics", timeout=10).read().decode()
    sent = re.search(r'^gpuctl_notifications_total\{result="sent"\} (\d+)$', text, re.M)
    check("/metrics counts them", sent and int(sent.group(1)) == len(ev), (sent and sent.group(0), len(ev)))
    check("POSTed as application/json to the URL's path", all(p == "/hook" and t == "application/json"
                                                               for p, t, b in posted), posted[:3])
    def whole_lines():
        """the hook writes an event's name and its JSON in two writes: whole lines only, once all are there"""
        with open(cmdlog) as f:
            text = f.read()
        return text[:text.rfind("\n") + 1].splitlines()
    policy.until(lambda: len(whole_lines()) >= len(names), 10)
    lines = whole_lines()
    cmd_events = [l.split(" ", 1) for l in lines]
    check("the command got each event too, GPUCTL_EVENT its name and the JSON on stdin",
          sorted(n for n, _ in cmd_events) == sorted(names) and
          all(json.loads(j)["event"] == n for n, j in cmd_events), lines[:4])
    harness.stop(daemon)

    # slack: {"text": ...} only
    posted.clear()
    daemon = start("--webhook", HOOK, "--webhook-format", "slack")
    j = gpuctl("submit", "--name", "slack", "--", "true", user=A).stdout.strip()
    gpuctl("wait", j, user=A)
    sl = until(lambda: (lambda d: d if len(d) >= 2 else None)([json.loads(b) for p, t, b in posted]))
    check("slack: {\"text\": ...} and nothing else", sl and all(set(d) == {"text"} for d in sl) and
          any(f"job {j} 'slack' of {A} started" in d["text"] for d in sl) and
          any(f"job {j} 'slack' of {A} ended" in d["text"] for d in sl), sl)
    harness.stop(daemon)

    # a queued --spot job stopped by a preemption notice (the mock metadata server): job.preempted, once
    posted.clear()
    mock = subprocess.Popen([sys.executable, os.path.join(policy.SRC, "tests", "mock", "metadata.py"), "0"],
                            stdout=subprocess.PIPE, text=True, start_new_session=True)  # finish() kills its group
    policy.procs.append(mock)
    policy.env["GPUCTL_METADATA_URL"] = "http://127.0.0.1:%s" % mock.stdout.readline().split()[-1]
    daemon = start("--webhook", HOOK)
    ready = os.path.join(work, "spot-ready")
    j = gpuctl("submit", "--name", "spotty", "--spot", "--cloud", "aws", "--poll", "0.2", "--grace", "10s", "--",
               "sh", "-c", f"trap 'exit 0' TERM; touch {ready}; while :; do sleep 0.1; done", user=A).stdout.strip()
    check("a --spot job is submitted", j.isdigit(), j)
    until(lambda: os.path.exists(ready))
    urllib.request.urlopen(urllib.request.Request(policy.env["GPUCTL_METADATA_URL"] + "/_ctl/preempt?cloud=aws",
                                                  method="POST"), timeout=5).read()
    gpuctl("wait", j, user=A)
    pre = until(lambda: [e for e in events() if e["event"] == "job.preempted"] or None)
    time.sleep(0.5)
    ev = events()
    check("job.preempted: once, the job's, stopped by the notice (exit 0), and no job.ended beside it",
          pre and len([e for e in ev if e["event"] == "job.preempted"]) == 1 and pre[0]["job"]["id"] == int(j) and
          pre[0]["job"]["preempted"] is True and pre[0]["job"]["exit_code"] == 0 and
          "preemption notice" in pre[0]["text"] and
          not [e for e in ev if e["event"] in ("job.ended", "job.failed")], [e["event"] for e in ev])
    del policy.env["GPUCTL_METADATA_URL"]
    harness.stop(daemon)

    # a receiver that never answers, then none at all: nothing waits for it
    hang = socket.socket()
    hang.bind(("127.0.0.1", 0))
    hang.listen(1024)  # connections complete in the kernel, and nobody ever reads them
    # dispatch latency (submitted_ms -> started_ms of jobs that find free GPUs) without a webhook, then with
    # one that hangs and one that is down: a loop that waited on the receiver would add 5 s per event
    base = None
    for hook_url, what in ((None, "none"), (f"http://127.0.0.1:{hang.getsockname()[1]}/", "hangs"),
                           (f"http://127.0.0.1:{server.server_address[1] + 1}/", "is down")):
        daemon = start(*(["--webhook", hook_url, "--webhook-timeout", "5s"] if hook_url else []))
        t0 = time.monotonic()
        ids = [gpuctl("submit", "--", "true", user=A).stdout.strip() for _ in range(6)]
        r = gpuctl("wait", *ids, user=A)
        took = time.monotonic() - t0
        jobs = [json.loads(gpuctl("show", i, "--json", user=A).stdout)["job"] for i in ids]
        lat = sorted(j["started_ms"] - j["submitted_ms"] for j in jobs)
        med = (lat[2] + lat[3]) / 2
        print(f"dispatch latency, receiver {what}: median {med:.0f} ms, max {lat[-1]} ms (6 jobs)")
        if hook_url is None:
            base = med
        else:
            # each of the 12+ events waits 5 s twice on a receiver that hangs: delivered in line, 2 min
            check(f"a receiver that {what}: six jobs run and end in {took:.1f} s, not held up",
                  r.returncode == 0 and took < 30, (r, took))
            check(f"a receiver that {what}: dispatch latency {med:.0f} ms against {base:.0f} ms without one",
                  med <= base + 1000, lat)
        t0 = time.monotonic()
        harness.stop(daemon)
        check(f"a receiver that {what}: gpuctld still stops at once ({time.monotonic() - t0:.1f} s)",
              time.monotonic() - t0 < 3)
    hang.close()
    for args, said in ((["--webhook", "ftp://x/"], "expected an http:// or https:// URL"),
                       (["--webhook-format", "xml"], "expected json or slack"),
                       (["--notify-command", "hook.sh"], "expected the absolute path of an executable"),
                       (["--notify-command", "/etc"], "expected the absolute path of an executable"),
                       (["--reclaim-exempt", "nosuch-gpuctl-user"], "no such user 'nosuch-gpuctl-user'"),
                       (["--reclaim-exempt", "root,"], "expected user names separated by commas"),
                       (["--webhook-timeout", "1h"], "between 0.1s and 10m")):
        r = subprocess.run([GPUCTLD, *args, "--check-config"], capture_output=True, text=True)
        check(f"bad {args[0]}: one line, exit 2", r.returncode == 2 and said in r.stderr and
              r.stderr.count("\n") == 1, r)
finally:
    server.shutdown()
    finish(daemon)
