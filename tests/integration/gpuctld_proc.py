"""Start and stop gpuctld for the integration tests: start() returns the
process and its base URL once it has printed its "listening on" line;
queue_request() is one request over its queue socket. bench/queue.py uses
queue_request() too."""
import json
import re
import socket
import subprocess


def start(gpuctld, node, env, *args):
    d = subprocess.Popen([gpuctld, "--sim", node, "--listen", "127.0.0.1:0", "--no-queue", *args], env=env,
                         stderr=subprocess.PIPE, text=True)
    line = d.stderr.readline()
    m = re.search(r"listening on (http://\S+)", line)
    if not m:
        d.kill()
        raise SystemExit(f"FAIL: gpuctld did not start: {line!r} {d.stderr.read()!r}")
    return d, m.group(1).rstrip("/")


def stop(p):
    """TERM, then KILL after 10 s; None and finished processes are fine"""
    if p and p.poll() is None:
        p.terminate()
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def queue_request(sock, obj, timeout=30):
    """one JSON request line to gpuctld's queue socket, its one JSON answer line"""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(timeout)
    s.connect(sock)
    s.sendall(json.dumps(obj).encode() + b"\n")
    data = b""
    while not data.endswith(b"\n"):
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    return json.loads(data)
