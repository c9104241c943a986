#!/usr/bin/python3
# RSS per idle connection of weft-hello: starts it (one loop, TRANSPORT), opens N connections and holds
# them -- connected only, after one /plaintext request, or upgraded to a WebSocket (/ws) -- and prints
# the server's VmRSS growth per connection. One request first, so that the growth is the connections',
# not the first request's. (The WebSocket figures of docs/weft-bench.md; raise ulimit -n first.)
#   scripts/measure-idle-connections.py HELLO TRANSPORT none|request|websocket [N]
#   e.g. ulimit -n 4096; scripts/measure-idle-connections.py build/release/bin/weft-hello io_uring websocket
import os
import socket
import subprocess
import sys
import time

hello, transport, mode = sys.argv[1], sys.argv[2], sys.argv[3]
n = int(sys.argv[4]) if len(sys.argv) > 4 else 1000
if mode not in ("none", "request", "websocket"):
    sys.exit("mode: none, request or websocket")
probe = socket.socket()
probe.bind(("127.0.0.1", 0))
port = probe.getsockname()[1] % 20000 + 10000  # below the ephemeral range
probe.close()
server = subprocess.Popen([hello, "--loops", "1", "--port", str(port), "--transport", transport],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
if "listening" not in server.stdout.readline():  # "weft-hello listening on ..."
    sys.exit(f"weft-hello did not start on port {port} (taken? run again)")


def rss_kib():
    with open(f"/proc/{server.pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS"))


def answer(s):
    got = b""
    while b"\r\n\r\n" not in got:
        chunk = s.recv(4096)
        if not chunk:
            sys.exit("the server closed a connection")
        got += chunk


try:
    first = socket.create_connection(("127.0.0.1", port))
    first.sendall(b"GET /plaintext HTTP/1.1\r\nHost: x\r\n\r\n")
    answer(first)
    first.close()
    before = rss_kib()
    held = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        if mode == "request":
            s.sendall(b"GET /plaintext HTTP/1.1\r\nHost: x\r\n\r\n")
            answer(s)
        elif mode == "websocket":
            s.sendall(b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
            answer(s)
        held.append(s)
    # The last connections' accepts may still be on their way: wait until the server's RSS is still.
    last = rss_kib()
    for _ in range(50):
        time.sleep(0.1)
        now = rss_kib()
        if now == last:
            break
        last = now
    print(f"{transport} {mode}: {(last - before) / n:.2f} KiB per connection ({n} connections, RSS {before} -> {last} KiB)")
finally:
    server.kill()
    server.wait()
