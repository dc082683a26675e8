#!/usr/bin/env python3
"""Mock cloud metadata services for the spot watcher's tests (lib/spot*.c):
AWS IMDSv2, GCP's metadata server and Azure Scheduled Events, all on one
127.0.0.1 port, plus a control API the tests drive.

Usage: metadata.py [PORT]   (0 or none: any free port; the first line on
stdout is "listening on PORT"). SIGTERM or SIGINT stops it.

Cloud endpoints, with the checks the real services make:
  PUT /latest/api/token                  needs X-aws-ec2-metadata-token-ttl-seconds (1..21600)
  GET /latest/meta-data/spot/instance-action            401 without a valid token; 404 or JSON
  GET /latest/meta-data/events/recommendations/rebalance 401 without a valid token; 404 or JSON
  GET /computeMetadata/v1/instance/preempted            403 without Metadata-Flavor: Google
  GET /computeMetadata/v1/instance/maintenance-event      (wait_for_change, last_etag, timeout_sec:
                                                           held until the value's ETag differs)
  GET|POST /metadata/scheduledevents?api-version=...    400 without Metadata: true
  GET /latest/meta-data/instance-type, /computeMetadata/v1/instance/machine-type,
      /metadata/instance/compute/vmSize?api-version=...&format=text
                                                        the instance type: p4d.24xlarge,
                                                        a2-highgpu-1g, Standard_NC24ads_A100_v4
Control:
  POST /_ctl/preempt?cloud=aws|gcp|azure[&in=SECONDS]   AWS instance-action terminate, GCP
                                                        preempted=TRUE, Azure a Preempt event
  POST /_ctl/warning?cloud=aws|gcp|azure                AWS rebalance, GCP MIGRATE_ON_HOST_MAINTENANCE,
                                                        Azure a Freeze event
  POST /_ctl/maintenance?value=V                        GCP maintenance-event = V
  POST /_ctl/azure-event?type=T[&in=S][&not_before=RAW] one Azure event of any type
  POST /_ctl/fault?kind=K[&count=N][&delay=S]           the next N data requests (not the token
        PUT, not /_ctl) fail as K: 503, slow (answer after S seconds, default 5), oversize
        (a 1 MiB 200 answer), malformed (a 200 answer that is not what the cloud sends),
        close (drop the connection). kind=token-expire invalidates every AWS token now.
  POST /_ctl/reset                                      everything back to "no notice"
  GET  /_ctl/log                                        JSON list of requests seen (method, path,
                                                        headers, body, status, time)
"""
import email.utils
import json
import secrets
import signal
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG_MAX = 2000


class State:
    def __init__(self):
        self.cond = threading.Condition()
        self.reset()

    def reset(self):
        self.tokens = set()
        self.aws_action = None        # dict or None
        self.aws_rebalance = None
        self.gcp = {"preempted": ["FALSE", 1], "maintenance-event": ["NONE", 1],  # value, version
                    "machine-type": ["projects/123456789/machineTypes/a2-highgpu-1g", 1]}
        self.azure_inc = 1
        self.azure_events = []
        self.faults = []              # [kind, remaining, delay]
        self.log = []
        self.closing = False

    def gcp_set(self, key, value):
        v = self.gcp[key]
        if v[0] != value:
            v[0] = value
            v[1] += 1
        self.cond.notify_all()

    def etag(self, key):
        return "%016x" % (hash((key, self.gcp[key][1])) & 0xFFFFFFFFFFFFFFFF)

    def take_fault(self):
        if self.faults:
            f = self.faults[0]
            f[1] -= 1
            if f[1] <= 0:
                self.faults.pop(0)
            return f[0], f[2]
        return None, 0


S = State()


def iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


class Handler(BaseHTTPRequestHandler):
    # real metadata services answer at once; with Nagle on, a small body sent
    # after the headers waits ~40 ms for the client's delayed ACK
    disable_nagle_algorithm = True
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def reply(self, status, body=b"", ctype="text/plain", headers=()):
        if isinstance(body, str):
            body = body.encode()
        self.status_sent = status
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.handle_any("GET")

    def do_PUT(self):
        self.handle_any("PUT")

    def do_POST(self):
        self.handle_any("POST")

    def handle_any(self, method):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(min(n, 65536)) if n else b""
        url = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(url.query))
        self.status_sent = None
        entry = {"method": method, "path": self.path, "headers": dict(self.headers.items()),
                 "body": body.decode(errors="replace"), "time": time.time()}
        try:
            if url.path.startswith("/_ctl/"):
                self.control(method, url.path[6:], q)
            else:
                self.serve(method, url.path, q, body)
        finally:
            entry["status"] = self.status_sent
            if not url.path.startswith("/_ctl/"):
                with S.cond:
                    S.log.append(entry)
                    del S.log[:-LOG_MAX]

    # ---- control ----
    def control(self, method, what, q):
        if what == "log" and method == "GET":
            with S.cond:
                return self.reply(200, json.dumps(S.log), "application/json")
        if method != "POST":
            return self.reply(405)
        now = time.time()
        with S.cond:
            cloud = q.get("cloud", "")
            if what == "reset":
                S.reset()
                S.cond.notify_all()
            elif what == "preempt" and cloud == "aws":
                S.aws_action = {"action": q.get("action", "terminate"),
                                "time": iso(now + float(q.get("in", "120")))}
            elif what == "preempt" and cloud == "gcp":
                S.gcp_set("preempted", "TRUE")
            elif what == "preempt" and cloud == "azure":
                self.azure_event("Preempt", now + float(q.get("in", "30")))
            elif what == "warning" and cloud == "aws":
                S.aws_rebalance = {"noticeTime": iso(now)}
            elif what == "warning" and cloud == "gcp":
                S.gcp_set("maintenance-event", "MIGRATE_ON_HOST_MAINTENANCE")
            elif what == "warning" and cloud == "azure":
                self.azure_event("Freeze", now + 15)
            elif what == "maintenance" and "value" in q:
                S.gcp_set("maintenance-event", q["value"])
            elif what == "azure-event" and "type" in q:
                self.azure_event(q["type"], now + float(q.get("in", "30")), q.get("not_before"))
            elif what == "fault" and q.get("kind") == "token-expire":
                S.tokens.clear()
            elif what == "fault" and q.get("kind") in ("503", "slow", "oversize", "malformed", "close"):
                S.faults.append([q["kind"], int(q.get("count", "1")), float(q.get("delay", "5"))])
            else:
                return self.reply(400, "unknown control request\n")
        return self.reply(200, "ok\n")

    def azure_event(self, etype, when, raw=None):
        S.azure_inc += 1
        S.azure_events.append({
            "EventId": "%s-%s" % (etype.lower(), secrets.token_hex(8)),
            "EventType": etype, "ResourceType": "VirtualMachine", "Resources": ["gpuvm_0"],
            "EventStatus": "Scheduled", "EventSource": "Platform", "Description": "",
            "DurationInSeconds": -1,
            "NotBefore": raw if raw is not None else email.utils.formatdate(when, usegmt=True)})

    # ---- cloud endpoints ----
    def serve(self, method, path, q, body):
        with S.cond:
            kind, delay = S.take_fault() if not path.endswith("/api/token") else (None, 0)
        if kind == "503":
            return self.reply(503, "service unavailable\n")
        if kind == "close":
            self.close_connection = True
            self.status_sent = "closed"
            return
        if kind == "slow":
            time.sleep(delay)
        if kind == "oversize":
            return self.reply(200, "A" * (1 << 20))
        if path == "/latest/api/token":
            return self.aws_token(method)
        if path.startswith("/latest/meta-data/"):
            return self.aws(method, path, kind)
        if path.startswith("/computeMetadata/v1/instance/"):
            return self.gcp(method, path[len("/computeMetadata/v1/instance/"):], q, kind)
        if path == "/metadata/scheduledevents":
            return self.azure(method, q, body, kind)
        if path == "/metadata/instance/compute/vmSize":
            if self.headers.get("Metadata") != "true" or not q.get("api-version"):
                return self.reply(400, '{"error": "Bad request"}', "application/json")
            return self.reply(200, "Standard_NC24ads_A100_v4", "text/plain")
        return self.reply(404, "not found\n")

    def aws_token(self, method):
        if method != "PUT":
            return self.reply(405)
        try:
            ttl = int(self.headers.get("X-aws-ec2-metadata-token-ttl-seconds", ""))
        except ValueError:
            ttl = 0
        if not 1 <= ttl <= 21600:
            return self.reply(400, "missing or invalid ttl\n")
        tok = secrets.token_urlsafe(32)
        with S.cond:
            S.tokens.add(tok)
        return self.reply(200, tok, headers=[("X-aws-ec2-metadata-token-ttl-seconds", str(ttl))])

    def aws(self, method, path, kind):
        with S.cond:
            valid = self.headers.get("X-aws-ec2-metadata-token") in S.tokens
            doc = {"/latest/meta-data/spot/instance-action": S.aws_action,
                   "/latest/meta-data/events/recommendations/rebalance": S.aws_rebalance,
                   "/latest/meta-data/instance-type": "p4d.24xlarge"}
        if method != "GET":
            return self.reply(405)
        if not valid:
            return self.reply(401, "unauthorized\n")
        if path not in doc:
            return self.reply(404, "not found\n")
        if kind == "malformed":
            return self.reply(200, '{"action": "terminate", "time": ', "text/plain")
        if doc[path] is None:
            return self.reply(404, "not found\n")
        if isinstance(doc[path], str):
            return self.reply(200, doc[path], "text/plain")  # instance-type: plain text
        return self.reply(200, json.dumps(doc[path]), "text/plain")

    def gcp(self, method, key, q, kind):
        if self.headers.get("Metadata-Flavor") != "Google":
            return self.reply(403, "missing Metadata-Flavor: Google\n")
        if method != "GET" or key not in S.gcp:
            return self.reply(404, "not found\n")
        if kind == "malformed":
            return self.reply(200, "MAYBE", headers=[("ETag", "0123")])
        with S.cond:
            if q.get("wait_for_change") == "true":
                timeout = min(float(q.get("timeout_sec", "60")), 3600)
                end = time.monotonic() + timeout
                last = q.get("last_etag", "0")
                while S.etag(key) == last and not S.closing:
                    left = end - time.monotonic()
                    if left <= 0:
                        break
                    S.cond.wait(left)
            value, tag = S.gcp[key][0], S.etag(key)
        return self.reply(200, value, headers=[("ETag", tag)])

    def azure(self, method, q, body, kind):
        if self.headers.get("Metadata") != "true":
            return self.reply(400, '{"error": "Bad request. Required metadata header not specified"}',
                              "application/json")
        if not q.get("api-version"):
            return self.reply(400, '{"error": "Bad request. api-version was not specified"}',
                              "application/json")
        if kind == "malformed":
            return self.reply(200, '{"DocumentIncarnation": 7, "Events": [{"EventId": ', "application/json")
        with S.cond:
            if method == "POST":
                try:
                    ids = {r["EventId"] for r in json.loads(body)["StartRequests"]}
                except (ValueError, KeyError, TypeError):
                    return self.reply(400, '{"error": "bad StartRequests"}', "application/json")
                for e in S.azure_events:
                    if e["EventId"] in ids:
                        e["EventStatus"] = "Started"
                        e["NotBefore"] = ""
                S.azure_inc += 1
                return self.reply(200, "", "application/json")
            doc = {"DocumentIncarnation": S.azure_inc, "Events": S.azure_events}
            return self.reply(200, json.dumps(doc), "application/json")


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # a client that gave up (timeout, oversize abort) is part of the tests, not an error
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    server = Server(("127.0.0.1", port), Handler)

    def stop(signum, frame):
        with S.cond:
            S.closing = True
            S.cond.notify_all()
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print("listening on %d" % server.server_address[1], flush=True)
    server.serve_forever(poll_interval=0.1)
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
