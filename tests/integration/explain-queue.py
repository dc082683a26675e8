#!/usr/bin/env python3
"""A failed queued job explains itself (issue 24, part 2), two real users on
a simulated node with gpuctld.

User A's job prints a PyTorch OOM (fragmentation) on stderr and exits 1:
its log ends with gpuctl run's block; `gpuctl show --json` carries the
diagnosis (class oom-fragmentation, its numbers, the fix), `gpuctl show`
prints it; /metrics counts gpuctl_job_failures_total{class=...}; the
job.failed event (a command hook) carries it. A failure nothing recognises
is counted as unknown and has no diagnosis. User B cannot see A's job.
Retries (--retry-on on submit): an nccl-timeout job is queued again with the
GPUs it failed on left out and ends done on others; a class not listed is
not queued again; oom-fragmentation is retried in place by the job's gpuctl
run.
Usage: explain-queue.py GPUCTLD GPUCTL SRCDIR SIMHOLD
"""
import json
import os
import re
import subprocess
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import policy  # noqa: E402
import testusers  # noqa: E402
from policy import check, finish, gpuctl, setup, start, until  # noqa: E402

A, B = setup("explain-queue")
OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
       "79.10 GiB of which 1.50 GiB is free. Including non-PyTorch memory, this process has 77.58 GiB memory in use. "
       "Of the allocated memory 70.12 GiB is allocated by PyTorch, and 6.89 GiB is reserved by PyTorch but "
       "unallocated.")
events = os.path.join(policy.work, "events")
hook = os.path.join(policy.work, "hook.sh")
with open(hook, "w") as f:
    f.write(f"#!/bin/sh\n{{ cat; echo; }} >> {events}\n")
os.chmod(hook, 0o755)

daemon = None
try:
    daemon, url = start("--notify-command", hook)
    bad = gpuctl("submit", "--name", "oom", "--", "sh", "-c", f"echo step 1; echo '{OOM}' >&2; exit 1",
                 user=A).stdout.strip()
    odd = gpuctl("submit", "--name", "odd", "--", "sh", "-c", "echo 'something odd' >&2; exit 2", user=A).stdout.strip()
    check("A submits two failing jobs", bad.isdigit() and odd.isdigit(), (bad, odd))
    gpuctl("wait", bad, odd, user=A)
    show = json.loads(gpuctl("show", bad, "--json", user=A).stdout)
    j, logpath = show["job"], show["log"]
    d = j.get("diagnosis") or [{}]
    check("show --json: the diagnosis, oom-fragmentation, its numbers, the fix",
          j["state"] == "failed" and d[0].get("class") == "oom-fragmentation" and
          d[0]["numbers"].get("requested_mib") == 2048 and "expandable_segments" in d[0]["fix"], j)
    text = gpuctl("show", bad, user=A).stdout
    check("show: a diagnosis line with the class and the fix", re.search(
        r"^diagnosis +\[oom-fragmentation\] ", text, re.M) and "fix: set PYTORCH_CUDA_ALLOC_CONF" in text, text)
    log = open(logpath).read()
    check("the job's log ends with gpuctl run's block, after the job's lines",
          log.index(OOM[:40]) < log.index("gpuctl: the job failed (exit status 1)") and "[oom-fragmentation]" in log,
          log[-500:])
    jo = json.loads(gpuctl("show", odd, "--json", user=A).stdout)["job"]
    check("a failure nothing recognises: no diagnosis", jo["state"] == "failed" and "diagnosis" not in jo, jo)
    metrics = urllib.request.urlopen(url + "/metrics", timeout=10).read().decode()
    check("/metrics counts the failures by class",
          re.search(r'^gpuctl_job_failures_total\{class="oom-fragmentation"\} 1$', metrics, re.M) and
          re.search(r'^gpuctl_job_failures_total\{class="unknown"\} 1$', metrics, re.M),
          [l for l in metrics.splitlines() if "failures" in l])
    ev = until(lambda: [e for e in (json.loads(l) for l in open(events) if l.strip()) if e["event"] == "job.failed"]
               if os.path.exists(events) else None)
    by = {e["job"]["id"]: e["job"] for e in ev or []}
    check("job.failed carries the diagnosis", by.get(int(bad), {}).get("diagnosis", [{}])[0].get("class") ==
          "oom-fragmentation" and "diagnosis" not in by.get(int(odd), {"diagnosis": 1}), by)
    # retries: nccl-timeout queued again without the GPUs it failed on; oom-fragmentation in place
    seen = os.path.join(policy.work, "seen")
    NCCL = ("[rank1]:[E1122 07:41:09.123456 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
            "600045 milliseconds before timing out.")
    job = (f"echo \"$GPUCTL_GPUS\" >> {seen}; [ $(wc -l < {seen}) -ge 2 ] && exit 0; echo '{NCCL}' >&2; exit 1")
    nc = gpuctl("submit", "-n", "2", "--retry-on", "nccl-timeout", "--max-restarts", "2", "--", "sh", "-c", job,
                user=A).stdout.strip()
    gpuctl("wait", nc, user=A)
    jn = json.loads(gpuctl("show", nc, "--json", user=A).stdout)["job"]
    tries = open(seen).read().split() if os.path.exists(seen) else []
    check("queue, nccl-timeout: queued again on other GPUs, then done, with no diagnosis left",
          jn["state"] == "done" and jn["starts"] == 2 and len(tries) == 2 and "diagnosis" not in jn and
          not set(tries[0].split(",")) & set(tries[1].split(",")), (jn, tries))
    nlog = open(json.loads(gpuctl("show", nc, "--json", user=A).stdout)["log"]).read()
    check("queue: the log says where the next start began", f"gpuctld: job {nc} queued again: failed with "
          "nccl-timeout" in nlog, nlog[-400:])
    check("queue: the requeue said in gpuctld's log", any(f"job {nc} failed with nccl-timeout on GPUs {tries[0]}: "
                                                          "queued again without them (--retry-on, 1 of 2)" in l
                                                          for l in policy.log) if tries else False, policy.log[-5:])
    # after a requeue, only the new start's output is its failure
    seen2 = os.path.join(policy.work, "seen2")
    job2 = (f"echo x >> {seen2}; if [ $(wc -l < {seen2}) -ge 2 ]; then echo 'something odd' >&2; exit 3; fi; "
            f"echo '{NCCL}' >&2; exit 1")
    n2 = gpuctl("submit", "--retry-on", "nccl-timeout", "--max-restarts", "3", "--", "sh", "-c", job2,
                user=A).stdout.strip()
    gpuctl("wait", n2, user=A)
    j2 = json.loads(gpuctl("show", n2, "--json", user=A).stdout)["job"]
    check("queue: the second start's own failure (unrecognised) is its diagnosis, not the first's",
          j2["state"] == "failed" and j2["starts"] == 2 and "diagnosis" not in j2 and j2["exit_code"] == 3, j2)
    for args, said in ((["--retry-on", "xid", "--no-explain"], "not with --no-explain"),
                       (["--retry-on", "oom-too-big"], "gpuctld does not move a queued job to bigger GPUs")):
        r = gpuctl("submit", *args, "--", "true", user=A)
        check(f"submit {' '.join(args)}: refused, one line", r.returncode == 2 and said in r.stderr and
              r.stderr.count("\n") == 1, r.stderr)
    once = gpuctl("submit", "--retry-on", "xid", "--", "sh", "-c", f"echo '{NCCL}' >&2; exit 1", user=A).stdout.strip()
    gpuctl("wait", once, user=A)
    jo1 = json.loads(gpuctl("show", once, "--json", user=A).stdout)["job"]
    check("queue: a class not listed is not queued again", jo1["state"] == "failed" and jo1["starts"] == 1, jo1)
    frag = (f"case \"$PYTORCH_CUDA_ALLOC_CONF\" in *expandable_segments:True*) echo trained; exit 0;; esac; "
            f"echo '{OOM}' >&2; exit 1")
    fr = gpuctl("submit", "--retry-on", "oom-fragmentation", "--", "sh", "-c", frag, user=A).stdout.strip()
    gpuctl("wait", fr, user=A)
    fs = json.loads(gpuctl("show", fr, "--json", user=A).stdout)
    flog = open(fs["log"]).read()
    check("queue, oom-fragmentation: retried in place by its gpuctl run, then done",
          fs["job"]["state"] == "done" and fs["job"]["starts"] == 1 and "trained" in flog and
          "retrying (1 of 3, --retry-on oom-fragmentation)" in flog, (fs["job"], flog[-400:]))
    # one rule, three ways in (issue 33): the same always-failing job through gpuctl run, gpuctl submit and
    # Python's gpuctl.run, each with --retry-on nccl-timeout --max-restarts 2: the same attempts on the same GPUs
    def always(path):
        return f"echo \"$GPUCTL_GPUS\" >> {path}; echo '{NCCL}' >&2; exit 1"
    ways = {w: os.path.join(policy.work, f"way-{w}") for w in ("run", "submit", "python")}
    # output into A's own files: the tail keeper reopens the job's stdout, which a pipe of root's would refuse
    def as_a(out, *argv, env=None):
        p = subprocess.run(testusers.as_user_cmd(A, "sh", "-c", 'o=$1; shift; exec "$@" > "$o" 2> "$o.err"', "sh",
                                                 out, *argv), env=env or policy.env, timeout=120, cwd=policy.work)
        return p.returncode, open(out).read(), open(out + ".err").read()
    rc_run, _, err_run = as_a(os.path.join(policy.work, "run.out"), policy.GPUCTL, "--sim", policy.NODE, "run",
                              "--retry-on", "nccl-timeout", "--max-restarts", "2", "--", "sh", "-c",
                              always(ways["run"]))
    sj = gpuctl("submit", "--retry-on", "nccl-timeout", "--max-restarts", "2", "--", "sh", "-c",
                always(ways["submit"]), user=A).stdout.strip()
    gpuctl("wait", sj, user=A)
    js = json.loads(gpuctl("show", sj, "--json", user=A).stdout)["job"]
    PY = ("import gpuctl, json, sys\n"
          "r = gpuctl.run(['sh', '-c', sys.argv[1]], 1, retry_on='nccl-timeout', max_restarts=2)\n"
          "print(json.dumps(r))\n")
    pyenv = dict(policy.env, PYTHONPATH=os.path.join(policy.SRC, "python"), GPUCTL_SIM=policy.NODE,
                 GPUCTL_LIBRARY=os.path.join(os.path.dirname(policy.GPUCTL), "..", "lib", "libgpuctl.so.0"))
    if os.environ.get("TEST_PY_PRELOAD"):
        pyenv.update(LD_PRELOAD=os.environ["TEST_PY_PRELOAD"], ASAN_OPTIONS="detect_leaks=0:verify_asan_link_order=0")
    py = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable  # one user A may run
    rc_py, out_py, err_py = as_a(os.path.join(policy.work, "py.out"), py, "-c", PY,
                                 always(ways["python"]), env=pyenv)
    res = json.loads(out_py.strip().splitlines()[-1]) if rc_py == 0 and out_py.strip() else {}
    seen3 = {w: open(p).read().split() if os.path.exists(p) else [] for w, p in ways.items()}
    check("run, submit and Python: three attempts each, each on GPUs the ones before it did not use",
          all(len(v) == 3 and len(set(v)) == 3 for v in seen3.values()), (seen3, err_py[-300:]))
    # all three rank GPUs as gpuctl pick does (select_pick: gpuctld's dispatch asks it too)
    check("run, submit and Python: the same attempts on the same GPUs",
          seen3["run"] == seen3["python"] == seen3["submit"], seen3)
    check("each ends failed after its 2 retries: run exit 1, the queued job failed (3 starts), Python's result",
          rc_run == 1 and "not retried: nccl-timeout again, and --max-restarts 2 retries were spent" in err_run
          and js["state"] == "failed" and js["starts"] == 3 and res.get("exit_code") == 1 and
          res.get("retries") == 2 and [a["gpus"] for a in res.get("attempts", [])] ==
          [[int(g)] for g in seen3["python"]], (rc_run, err_run[-300:], js, res))
    print(f"one rule: run, submit and Python each ran the failing job on GPUs {' then '.join(seen3['run'])}")
    r = gpuctl("show", bad, "--json", user=B)
    check("B cannot see A's job or its diagnosis", r.returncode != 0 and "oom" not in r.stdout, (r.stdout, r.stderr))
finally:
    finish(daemon)
