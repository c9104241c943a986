#!/usr/bin/env python3
"""How each accept mode spreads connections over weft-hello's loops (docs/accept.md, "Spread").

For each loop count and accept mode, a fresh weft-hello (port 0) gets
  short: 1,000 connections, 16 at a time, one request each (Connection: close);
  long:  64 connections opened one after the other and all kept open (one request each), then closed;
and reports the connections each loop served (weft-hello prints them at exit) and max/min.

  scripts/accept-spread.py [--hello build/release/bin/weft-hello] [--loops 2 4] [--transport epoll]
"""
import argparse
import re
import signal
import socket
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

REQUEST = b"GET /plaintext HTTP/1.1\r\nHost: x\r\n%s\r\n"
MODES = ["acceptor", "reuseport", "least-connections"]


def read_response(sock):
    data = b""
    while b"Hello, World!" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            raise RuntimeError("connection closed before the response")
        data += chunk


def one_short(port):
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(REQUEST % b"Connection: close\r\n")
        read_response(sock)
        while sock.recv(4096):
            pass


def short_load(port, count=1000, parallel=16):
    with ThreadPoolExecutor(parallel) as pool:
        list(pool.map(lambda _: one_short(port), range(count)))


def long_load(port, count=64):
    socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(count)]
    for sock in socks:
        sock.sendall(REQUEST % b"")
    for sock in socks:
        read_response(sock)
    for sock in socks:
        sock.close()


def run(hello, transport, loops, mode, load):
    server = subprocess.Popen(
        [hello, "--port", "0", "--host", "127.0.0.1", "--loops", str(loops), "--accept", mode,
         "--transport", transport, "--drain-timeout", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()
        port = int(re.search(r"listening on [\d.]+:(\d+)", line).group(1))
        load(port)
    finally:
        server.send_signal(signal.SIGTERM)
        _, err = server.communicate(timeout=30)
    counts = [int(n) for n in re.search(r"connections per loop:([\d ]+)", err).group(1).split()]
    return counts


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hello", default="build/release/bin/weft-hello")
    parser.add_argument("--loops", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--transport", default="epoll")
    parser.add_argument("--modes", nargs="+", default=MODES, choices=MODES)
    args = parser.parse_args()
    print("| loops | mode | 1,000 short: per loop | max/min | 64 long-lived: per loop | max/min |")
    print("|---|---|---|---|---|---|")
    for loops in args.loops:
        for mode in args.modes:
            cells = []
            for load in (short_load, long_load):
                counts = run(args.hello, args.transport, loops, mode, load)
                ratio = f"{max(counts) / min(counts):.2f}" if min(counts) > 0 else "inf"
                cells += [" ".join(map(str, counts)), ratio]
            print(f"| {loops} | {mode} | " + " | ".join(cells) + " |")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
