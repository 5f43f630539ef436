#!/usr/bin/env python3
"""The fixture itself (tests/e2e_netem.sh runs it first): nq-netem (tools/netem_main.c) in front of
a Python echo server on 127.0.0.1, each impairment checked against what it says it does.

    python3 tests/netem_selftest.py BUILD_DIR/nq-netem
"""
import os
import signal
import socket
import subprocess
import sys
import threading
import time

NETEM = sys.argv[1]


def echo_server():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(16)

    def serve(c):
        try:
            while True:
                d = c.recv(65536)
                if not d:
                    break
                c.sendall(d)
        except OSError:
            pass
        c.close()

    def loop():
        while True:
            c, _ = s.accept()
            threading.Thread(target=serve, args=(c,), daemon=True).start()

    threading.Thread(target=loop, daemon=True).start()
    return s.getsockname()[1]


UP = echo_server()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def proxy(*args):
    port = free_port()
    p = subprocess.Popen([NETEM, "--listen", "127.0.0.1:%d" % port, "--to", "127.0.0.1:%d" % UP]
                         + list(args), stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    assert "listening" in line, line
    return p, port


def stop(p, c):
    c.close()
    p.kill()
    p.wait()


def roundtrip(c, data):
    t = time.monotonic()
    c.sendall(data)
    got = b""
    while len(got) < len(data):
        d = c.recv(65536)
        if not d:
            raise OSError("closed")
        got += d
    assert got == data, "the bytes changed"
    return time.monotonic() - t


def main():
    # --delay 100 --jitter 20 each way: a round trip of 160..240 ms (plus scheduling).
    p, port = proxy("--delay", "100", "--jitter", "20")
    c = socket.create_connection(("127.0.0.1", port), timeout=10)
    rtts = [roundtrip(c, b"x" * 10) for _ in range(5)]
    assert all(0.15 <= r <= 0.8 for r in rtts), ("delay", rtts)
    stop(p, c)
    # --rate 100000: 200 kB through it takes about 2 s.
    p, port = proxy("--rate", "100000")
    c = socket.create_connection(("127.0.0.1", port), timeout=20)
    r = roundtrip(c, os.urandom(200000))
    assert 1.8 <= r <= 10, ("rate", r)
    stop(p, c)
    # --blackhole: the connection opens, nothing ever comes back.
    p, port = proxy("--blackhole")
    c = socket.create_connection(("127.0.0.1", port), timeout=10)
    c.settimeout(1.0)
    c.sendall(b"hello")
    try:
        c.recv(10)
        raise AssertionError("the blackhole answered")
    except socket.timeout:
        pass
    stop(p, c)
    # --reset-prob 1: at most half of the first chunk arrives, then a reset.
    p, port = proxy("--reset-prob", "1")
    c = socket.create_connection(("127.0.0.1", port), timeout=10)
    c.sendall(b"0123456789" * 100)
    got = b""
    try:
        while True:
            d = c.recv(65536)
            if not d:
                break
            got += d
    except ConnectionResetError:
        pass
    assert len(got) < 1000, ("reset", len(got))
    stop(p, c)
    # A drop (SIGUSR1, --drop-for 1): what is sent meanwhile arrives once the link is back.
    p, port = proxy("--drop-for", "1")
    c = socket.create_connection(("127.0.0.1", port), timeout=10)
    roundtrip(c, b"warm")
    p.send_signal(signal.SIGUSR1)
    time.sleep(0.1)
    r = roundtrip(c, b"during the drop")
    assert 0.7 <= r <= 6, ("drop", r)
    stop(p, c)
    print("netem: the fixture: delay (round trips %s ms), rate, blackhole, reset and drop behave"
          % ", ".join("%.0f" % (1e3 * x) for x in rtts))

main()
