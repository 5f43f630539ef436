#!/usr/bin/env python3
"""Sign-up bursts against a real nq-server, for tests/e2e_signup.sh (not a test by itself).

    signup_burst.py PORT CA OUT.json SPEC... [--honest TOKEN]

Each SPEC is SRC:COUNT: COUNT sign-ups (a TLS connection each, the `signup` frame of
docs/protocol.md) from the loopback address SRC, one after another; SPECs run in order (a `pending` answer, --signup approve, counts apart). With
--honest TOKEN a thread logs in with that client token and asks for work over and over while the
bursts run, and the slowest answer is recorded. OUT.json gets, per SPEC, how many joined and the
refusals (code, retry_after, message), and the honest client's round trips."""
import json
import socket
import ssl
import struct
import sys
import threading
import time


def frame(obj):
    b = json.dumps(obj).encode()
    return struct.pack(">I", len(b)) + b


def read_frame(s):
    head = b""
    while len(head) < 4:
        c = s.recv(4 - len(head))
        if not c:
            return None
        head += c
    (n,) = struct.unpack(">I", head)
    body = b""
    while len(body) < n:
        c = s.recv(n - len(body))
        if not c:
            return None
        body += c
    return json.loads(body)


def connect(port, ctx, src=None):
    raw = socket.create_connection(("127.0.0.1", port), timeout=20,
                                   source_address=(src, 0) if src else None)
    # As nq-client (conn.c): without TCP_NODELAY the frame after the handshake waits for the
    # server's delayed ACK, 40 ms a sign-up, most of a burst's time.
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return ctx.wrap_socket(raw, server_hostname="127.0.0.1")


def signup(port, ctx, src, name):
    s = connect(port, ctx, src)
    try:
        s.sendall(frame({"type": "signup", "v": 1, "name": name}))
        return read_frame(s)
    finally:
        s.close()


def honest(port, ctx, token, stop, out):
    times, errors = [], 0
    while not stop.is_set():
        t0 = time.monotonic()
        try:
            s = connect(port, ctx)
            s.sendall(frame({"type": "hello", "v": 1, "role": "client", "token": token}))
            w = read_frame(s)
            s.sendall(frame({"type": "get_work", "want": 1}))
            g = read_frame(s)
            s.close()
            if not w or w.get("type") != "welcome" or not g or g.get("type") not in ("work", "no_work"):
                errors += 1
            times.append(time.monotonic() - t0)
        except OSError:
            errors += 1
        time.sleep(0.05)
    out["honest"] = {"rounds": len(times), "errors": errors,
                     "max_s": max(times) if times else None}


def main():
    port, ca, out_path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    args = sys.argv[4:]
    token = None
    if "--honest" in args:
        i = args.index("--honest")
        token = args[i + 1]
        del args[i:i + 2]
    ctx = ssl.create_default_context(cafile=ca)
    out = {"bursts": []}
    stop = threading.Event()
    th = None
    if token:
        th = threading.Thread(target=honest, args=(port, ctx, token, stop, out))
        th.start()
    k = 0
    for spec in args:
        src, count = spec.rsplit(":", 1)
        b = {"src": src, "count": int(count), "joined": 0, "pending": 0, "refused": []}
        t0 = time.monotonic()
        for _ in range(int(count)):
            k += 1
            # A source that names a /24 ("127.0.9.*") takes a new address each time.
            a = src.replace("*", str(1 + (k % 250))) if "*" in src else src
            r = signup(port, ctx, a, "b%d" % k)
            if r and r.get("type") == "signup_reply" and r.get("state") == "joined":
                b["joined"] += 1
            elif r and r.get("type") == "signup_reply" and r.get("state") == "pending":
                b["pending"] += 1
            else:
                b["refused"].append({"code": r.get("code") if r else None,
                                     "retry_after": r.get("retry_after") if r else None,
                                     "message": r.get("message") if r else None})
        b["seconds"] = time.monotonic() - t0
        out["bursts"].append(b)
    stop.set()
    if th:
        th.join()
    with open(out_path, "w") as f:
        json.dump(out, f, indent=1)


main()
