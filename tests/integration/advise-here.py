#!/usr/bin/env python3
"""gpuctl advise --here (issue 23): this machine beside the rentals, on a
simulated 8x H100 node with a running gpuctld and two real users.

1. free now: user B asks for a Llama-2-7B inference; one GPU holds it and
   none is busy: "fits on GPU N here, free now", priced at --here-price.
2. the queue: user A's jobs give gpuctld a typical runtime (two 8-GPU jobs
   of 2 s), then A runs an 8-GPU job and queues another; B's answer is
   "fits here after ~1 min in gpuctld's queue", its wait in the JSON
   between the two jobs' 4 s and a generous bound, and the queue's counts
   (one running, one queued) without A's jobs' names or commands.
3. no fit: a 70B full fine-tune needs more H100s than the machine has:
   "does not fit: needs NxH100 ...; cheapest rental: ...".
Bad --here-price and --here with --emit are refused (exit 2).
Usage: advise-here.py GPUCTLD GPUCTL SRCDIR SIMHOLD
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import policy  # noqa: E402
from policy import check, finish, gpuctl, setup, start, until  # noqa: E402

A, B = setup("advise-here")


def here(user, *args):
    r = gpuctl("advise", *args, "--here", "--json", user=user)
    try:
        return r, json.loads(r.stdout)["here"]
    except (ValueError, KeyError):
        return r, {}


def state(user, job):
    return json.loads(gpuctl("show", job, "--json", user=user).stdout)["job"]["state"]


daemon = None
try:
    daemon, _ = start()
    r, h = here(B, "--model", "llama-2-7b", "--here-price", "2.50")
    check("free now: kind free-now, one GPU named, priced", r.returncode == 0 and h.get("kind") == "free-now" and
          h["plan"]["gpus"] == 1 and h["free_gpus"].isdigit() and h["price_per_gpu_hour"] == 2.5 and
          h["text"].startswith(f"here: fits on GPU {h['free_gpus']} here, free now: 1x H100") and
          "at $2.50/GPU-hour" in h["text"], (r.returncode, h, r.stderr))
    t = gpuctl("advise", "--model", "llama-2-7b", "--here-price", "2.50", user=B)
    check("free now: the table's last line says it", t.returncode == 0 and
          t.stdout.rstrip().splitlines()[-1] == h["text"], (t.returncode, t.stderr, t.stdout.splitlines()[-3:]))

    # a typical runtime: two of A's 8-GPU jobs of 2 s each
    done = [gpuctl("submit", "-n", "8", "--", "sleep", "2", user=A).stdout.strip() for _ in range(2)]
    gpuctl("wait", *done, user=A)
    running = gpuctl("submit", "-n", "8", "--name", "secret-run", "--", "sleep", "30", user=A).stdout.strip()
    check("A's 8-GPU job runs", until(lambda: state(A, running) == "running"), state(A, running))
    queued = gpuctl("submit", "-n", "8", "--name", "secret-queued", "--", "sleep", "30", user=A).stdout.strip()
    r, h = here(B, "--model", "llama-2-7b")
    q = h.get("queue", {})
    check("busy: kind queue, the wait behind A's two jobs (2 s each, typically)", h.get("kind") == "queue" and
          2.0 <= h["wait_s"] <= 8 and q.get("running") == 1 and q.get("queued") == 1 and
          1500 <= q.get("typical_runtime_ms", 0) <= 6000, (h, r.stderr))
    check("busy: the text", h.get("text", "").startswith("here: fits here after ~1 min in gpuctld's queue: 1x H100")
          and "1 job running, 1 queued" in h["text"], h.get("text"))
    check("busy: nothing of A's jobs but their sizes and times", "secret" not in r.stdout, r.stdout[-400:])
    # the same, without a queue to ask: busy, the reasons counted, each GPU's in the JSON
    sock = policy.env["GPUCTL_QUEUE_SOCKET"]
    policy.env["GPUCTL_QUEUE_SOCKET"] = os.path.join(policy.work, "no.sock")
    r, h = here(B, "--model", "llama-2-7b")
    policy.env["GPUCTL_QUEUE_SOCKET"] = sock
    check("no queue to ask: kind busy, '8 leased', no wait estimate, each GPU's reason in the JSON",
          h.get("kind") == "busy" and "none free now (8 leased); no wait estimate: no gpuctld queue at" in h["text"]
          and h.get("why", "").count("is leased by") == 8, h)
    gpuctl("cancel", running, queued, user=A)

    r, h = here(B, "--model", "llama-2-70b", "--task", "train-full")
    check("no fit: kind no-fit, what it needs of these GPUs and the cheapest rental",
          h.get("kind") == "no-fit" and "here: does not fit: needs " in h["text"] and "x H100 (" in h["text"] and
          "this machine has 8 (80 GB each); cheapest rental: " in h["text"], (h, r.stderr))
    # inside a lease of several GPUs (the request becomes the lease's): no overrun, still an answer
    r = gpuctl("run", "-n", "4", "--", policy.GPUCTL, "--sim", policy.NODE, "advise", "--model", "llama-2-7b", "--here",
               "--json", user=B)
    try:
        inner = json.loads(r.stdout)["here"]
    except (ValueError, KeyError):
        inner = {}
    check("inside a 4-GPU lease: an answer, no crash", r.returncode == 0 and inner.get("kind") in ("free-now", "busy",
                                                                                                 "queue"),
          (r.returncode, r.stderr[-300:]))
    for args, said in ((["--here-price", "cheap"], "invalid --here-price 'cheap'"),
                       (["--here", "--emit", "skypilot", "--", "true"], "--here adds this machine")):
        r = gpuctl("advise", "--model", "llama-2-7b", *args, user=B)
        check(f"refused: {' '.join(args)}", r.returncode == 2 and said in r.stderr and r.stderr.count("\n") == 1,
              r.stderr)
finally:
    finish(daemon)
