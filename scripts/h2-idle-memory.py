#!/usr/bin/python3
# Memory per idle HTTP/2 connection (issue 17: <= 32 KiB): opens N connections to a server (the preface
# and SETTINGS, h2c or h2 over TLS by ALPN), then N more, and prints the growth of the server's RSS per
# connection. Usage: scripts/h2-idle-memory.py SERVER_PID PORT N tls|h2c   (raise ulimit -n first)
import socket, ssl, sys, time, os
pid, port, n, mode = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
def rss():
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS"): return int(line.split()[1])
def open_many(k):
    socks = []
    ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(["h2"])
    for _ in range(k):
        s = socket.create_connection(("127.0.0.1", port))
        if mode == "tls":
            s = ctx.wrap_socket(s, server_hostname="localhost")
            assert s.selected_alpn_protocol() == "h2"
        s.sendall(preface)
        socks.append(s)
    # read the server's SETTINGS so both sides are past the preface
    for s in socks:
        s.settimeout(5); s.recv(4096)
    return socks
a = open_many(n); time.sleep(1); r1 = rss()
b = open_many(n); time.sleep(1); r2 = rss()
print(f"{mode}: {(r2 - r1) / n:.1f} KiB per idle connection (RSS {r1} -> {r2} KiB for {n} more)")
