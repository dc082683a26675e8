#!/usr/bin/env python3
"""The suite never reads the machine's or the user's configuration (issue 32, item 11).

In a mount namespace of its own, /etc overlaid by a tmpfs (the machine's
/etc is never written), the test plants /etc/gpuctl/gpuctld.conf with a
webhook to a receiver it runs and a notify command that writes a file: any
gpuctld that reads it reports every job and freed GPU there. A gpuctld
started without the suite's environment does read it (the plant works);
every gpuctld started the suite's ways (tests/integration/policy.py with
its queue, harness.py's start_gpuctld without, a bare --check-config) reads an empty
configuration instead (meson's default test setup sets GPUCTLD_CONFIG to
/dev/null; docs/daemon.md), and nothing reaches the receiver or the hook
while jobs run and leases end.

The user's side: a HOME whose ~/.sky/catalogs/v8/aws/vms.csv is garbage
makes gpuctl advise fail; tests/advise/reference.py, run with that HOME,
passes all the same (it gives advise a HOME of its own).

Run by meson (it needs the suite's environment). Usage: machine-config.py
GPUCTLD GPUCTL SRCDIR SIMHOLD
"""
import http.server
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

NS = "MACHINE_CONFIG_TEST_NS"
if not os.environ.get(NS):
    # again, in a mount namespace of its own, where /etc can be overlaid; the directory its tmpfs
    # is mounted on in there is an empty one out here, removed after
    if os.geteuid() != 0 or not shutil.which("unshare"):
        print("SKIP: machine-config: it needs root and unshare (a mount namespace over /etc)")
        sys.exit(77)
    # the users are made (and removed, at exit) out here, with the machine's /etc/passwd (testusers.made)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import testusers  # noqa: E402
    testusers.create("the machine-config test creates two users")
    ov = tempfile.mkdtemp(prefix="gpuctl-etc-")
    try:
        rc = subprocess.run(["unshare", "--mount", "--propagation", "private", "--", sys.executable, *sys.argv],
                            env=dict(os.environ, **{NS: ov})).returncode
    finally:
        shutil.rmtree(ov, ignore_errors=True)
    sys.exit(rc)

ov = os.environ.pop(NS)
r = subprocess.run(f"mount -t tmpfs tmpfs {ov} && mkdir {ov}/up {ov}/wk && "
                   f"mount -t overlay overlay -o lowerdir=/etc,upperdir={ov}/up,workdir={ov}/wk /etc",
                   shell=True, capture_output=True, text=True)
if r.returncode != 0:
    print(f"SKIP: machine-config: cannot overlay /etc in a mount namespace: {r.stderr.strip()}")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import policy  # noqa: E402
from policy import GPUCTL, GPUCTLD, NODE, SRC, check, finish, gpuctl, until  # noqa: E402

A, B = policy.setup("machine-config", users_made=True)
work = policy.work
posted = []


class Receiver(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        posted.append(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *a):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
threading.Thread(target=server.serve_forever, daemon=True).start()
hooked = os.path.join(work, "hooked")
hook = os.path.join(work, "hook.sh")
with open(hook, "w") as f:
    f.write(f"#!/bin/sh\n{{ cat; echo; }} >> {hooked}\n")
os.chmod(hook, 0o755)
MACHINE = "/etc/gpuctl/gpuctld.conf"
os.makedirs(os.path.dirname(MACHINE), exist_ok=True)
with open(MACHINE, "w") as f:
    f.write("# planted by tests/integration/machine-config.py: a test that reads it reports here\n"
            f"webhook = http://127.0.0.1:{server.server_address[1]}/planted\nnotify-command = {hook}\n")


def reported():
    return bool(posted) or os.path.exists(hooked)


def some_work(queue=True):
    """a queued job (job.started, job.ended) and a lease that ends (gpu.freed)"""
    if queue:
        j = gpuctl("submit", "--name", "w", "--", "true", user=A).stdout.strip()
        gpuctl("wait", j, user=A)
    gpuctl("run", "-n", "1", "--", "sleep", "1", user=A)


daemon = None
try:
    check("the suite's environment names an empty gpuctld configuration",
          os.environ.get("GPUCTLD_CONFIG") == os.devnull, os.environ.get("GPUCTLD_CONFIG"))
    machine_env = {k: v for k, v in policy.env.items() if k != "GPUCTLD_CONFIG"}

    # the plant works: a gpuctld outside the suite's environment reads it and reports
    r = subprocess.run([GPUCTLD, "--check-config"], env=machine_env, capture_output=True, text=True)
    check("without GPUCTLD_CONFIG, gpuctld reads the machine's file", f"configuration OK ({MACHINE})" in r.stdout, r)
    suite_env, policy.env = policy.env, machine_env
    daemon, url = policy.start()
    policy.env = suite_env
    some_work()
    check("and reports to its webhook and its command", until(lambda: posted and os.path.exists(hooked)),
          (posted, policy.log))
    harness.stop(daemon)
    daemon = None
    posted.clear()
    os.unlink(hooked)

    # the suite's ways of starting gpuctld never read it
    r = subprocess.run([GPUCTLD, "--check-config"], capture_output=True, text=True)
    check("--check-config in the suite's environment: the empty configuration",
          r.returncode == 0 and f"configuration OK ({os.devnull})" in r.stdout, r)
    daemon, url = policy.start()
    some_work()
    harness.stop(daemon)
    daemon, url = harness.start_gpuctld(GPUCTLD, NODE, policy.env, "--interval", "0.2s")
    some_work(queue=False)
    time.sleep(1.0)  # a gpu.freed event would be out by now
    harness.stop(daemon)
    daemon = None
    check("policy.py's and harness.py's gpuctlds report nothing: the machine's file was not read",
          not reported(), (posted, os.path.exists(hooked)))

    # the user's side: a garbage SkyPilot catalog in HOME
    home = os.path.join(work, "userhome")
    os.makedirs(os.path.join(home, ".sky", "catalogs", "v8", "aws"))
    with open(os.path.join(home, ".sky", "catalogs", "v8", "aws", "vms.csv"), "w") as f:
        f.write("planted by tests/integration/machine-config.py\n")
    uenv = dict(policy.env, HOME=home, XDG_CONFIG_HOME=os.path.join(home, ".config"))
    r = subprocess.run([GPUCTL, "advise", "--model", "llama-3-8b", "--task", "lora"], env=uenv, capture_output=True,
                       text=True)
    check("with that HOME, gpuctl advise reads the planted catalog", ".sky/catalogs/v8/aws/vms.csv" in r.stderr, r)
    r = subprocess.run([sys.executable, os.path.join(SRC, "tests", "advise", "reference.py"), GPUCTL, SRC], env=uenv,
                       capture_output=True, text=True, timeout=300)
    check("tests/advise/reference.py with that HOME passes: it never reads the user's", r.returncode == 0,
          r.stdout[-2000:])
finally:
    finish(daemon)
