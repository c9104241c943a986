#!/usr/bin/env python3
"""A backend for weft-proxy's tests on python's http.server (HTTP/1.1, keep-alive, a thread per
connection). Prints "ready" once it listens on 127.0.0.1:PORT.

    GET  /headers       the request's header lines as it got them, "name: value" (names lowercased)
    GET  /chunked?n=N   N bytes, chunked in 10,000-byte chunks; byte i is (i * 7 + 3) % 251
    GET  /cut?n=N&sent=S&chunked=0|1
                        declares N bytes (Content-Length, or chunked), sends S of them, closes
    GET  /hang          never answers; waits until the client goes
    POST /echo          the request's body (Content-Length or chunked), with Content-Length
"""
import socketserver
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import parse_qs, urlsplit


def pattern(start, n):
    return bytes((i * 7 + 3) % 251 for i in range(start, start + n))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def query(self):
        return {k: v[0] for k, v in parse_qs(urlsplit(self.path).query).items()}

    def answer(self, body, status=200):
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        path = urlsplit(self.path).path
        if path == "/headers":
            lines = "".join(f"{name.lower()}: {value}\n" for name, value in self.headers.items())
            self.answer(lines.encode())
        elif path == "/chunked":
            n = int(self.query()["n"])
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for at in range(0, n, 10000):
                chunk = pattern(at, min(10000, n - at))
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.write(b"0\r\n\r\n")
        elif path == "/cut":
            q = self.query()
            n, sent, chunked = int(q["n"]), int(q["sent"]), q.get("chunked") == "1"
            self.send_response(200)
            if chunked:
                self.send_header("Transfer-Encoding", "chunked")
            else:
                self.send_header("Content-Length", str(n))
            self.end_headers()
            body = pattern(0, sent)
            self.wfile.write(b"%x\r\n%s\r\n" % (len(body), body) if chunked else body)
            self.wfile.flush()
            self.close_connection = True  # the rest never comes
        elif path == "/hang":
            self.rfile.read(1)  # returns when the proxy gives up and closes
            self.close_connection = True
        else:
            self.answer(b"not found\n", 404)

    def do_POST(self):
        if urlsplit(self.path).path != "/echo":
            self.answer(b"not found\n", 404)
            return
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                body += self.rfile.read(size)
                self.rfile.readline()
        else:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.answer(bytes(body))


class Server(socketserver.ThreadingMixIn, HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


if __name__ == "__main__":
    server = Server(("127.0.0.1", int(sys.argv[1])), Handler)
    print("ready", flush=True)
    server.serve_forever()
