"""weft-hello's /downstream?ms=N (issue 9) against the built binary: the body names the mode, the wait
takes N ms, each mode waits where it says it does, and an offload server under overload keeps its memory
flat and answers or closes every connection."""
import os
import select
import socket
import subprocess
import time
import unittest

from bench_helpers import BIN_DIR
from weft_bench.processes import free_port, memory_kib

HELLO = os.path.join(BIN_DIR, "weft-hello")
MODES = ["loop", "loop-async", "offload", "coroutine", "coroutine-async"]


class Hello:
    def __init__(self, mode, threads=2):
        self.port = free_port()
        self.proc = subprocess.Popen([HELLO, "--port", str(self.port), "--host", "127.0.0.1", "--loops", "1",
                                      "--mode", mode, "--offload-threads", str(threads)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        self.close()
        raise AssertionError(f"weft-hello --mode {mode} does not accept")

    def close(self):
        self.proc.kill()
        self.proc.wait(timeout=10)
        self.proc.stderr.close()

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.close()


def request(path):
    return f"GET {path} HTTP/1.1\r\nHost: t\r\n\r\n".encode()


def read_response(sock):
    """(status, body) of one response with Content-Length; raises on EOF before it is complete."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            raise ConnectionError(f"closed after {data!r}")
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    length = next(int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length"))
    while len(body) < length:
        chunk = sock.recv(4096)
        if not chunk:
            raise ConnectionError("closed inside the body")
        body += chunk
    return int(head.split(b" ")[1]), body.decode()


def get(port, path, timeout=15):
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(request(path))
        return read_response(s)


def concurrent(port, count, ms):
    """Seconds until `count` connections, each with one /downstream?ms request sent at once, are answered."""
    socks = [socket.create_connection(("127.0.0.1", port), timeout=15) for _ in range(count)]
    try:
        t0 = time.monotonic()
        for s in socks:
            s.sendall(request(f"/downstream?ms={ms}"))
        for s in socks:
            assert read_response(s)[0] == 200
        return time.monotonic() - t0
    finally:
        for s in socks:
            s.close()


@unittest.skipUnless(os.access(HELLO, os.X_OK), f"weft-hello not built in {BIN_DIR}")
class DownstreamRoute(unittest.TestCase):
    def test_every_mode_names_itself_and_waits_the_time_asked(self):
        for mode in MODES:
            with self.subTest(mode=mode), Hello(mode) as h:
                t0 = time.monotonic()
                status, body = get(h.port, "/downstream?ms=200")
                elapsed = time.monotonic() - t0
                self.assertEqual((status, body), (200, f"downstream {mode} 200 ms\n"))
                self.assertGreaterEqual(elapsed, 0.195)
                self.assertLess(elapsed, 0.7, "200 ms plus scheduling on a busy 2-core machine")
                self.assertEqual(get(h.port, "/downstream"), (200, f"downstream {mode} 250 ms\n"))
                self.assertEqual(get(h.port, "/downstream?x=1&ms=0")[1], f"downstream {mode} 0 ms\n")
                for bad in ("ms=abc", "ms=-1", "ms=10001", "ms=", "ms=5x"):
                    self.assertEqual(get(h.port, f"/downstream?{bad}")[0], 400, bad)

    def test_where_each_mode_waits(self):
        # Four requests of 200 ms at once: the loop serves them one after another, two executor threads two
        # at a time, a coroutine all at once.
        expected = {"loop": 0.8, "offload": 0.4, "loop-async": 0.4, "coroutine": 0.2, "coroutine-async": 0.2}
        for mode, seconds in expected.items():
            with self.subTest(mode=mode), Hello(mode, threads=2) as h:
                elapsed = concurrent(h.port, 4, 200)
                self.assertGreaterEqual(elapsed, seconds - 0.01)
                self.assertLess(elapsed, seconds + 0.19)


@unittest.skipUnless(os.access(HELLO, os.X_OK), f"weft-hello not built in {BIN_DIR}")
class Overload(unittest.TestCase):
    def test_offload_answers_every_client_far_beyond_its_pool(self):
        # Two threads of 10 ms serve 200/s; 600 clients send one request each at once (siege-like, 3 s of
        # work). Every one is answered (or closed with an error status) before the deadline, none hangs,
        # and the server's peak RSS stays within a few MiB of idle.
        with Hello("offload", threads=2) as h:
            idle = memory_kib(h.proc.pid)["VmRSS"]
            clients = [socket.create_connection(("127.0.0.1", h.port), timeout=5) for _ in range(600)]
            for s in clients:
                s.sendall(request("/downstream?ms=10"))
            outcomes = self._collect(clients, deadline=time.monotonic() + 20)
            peak = memory_kib(h.proc.pid)["VmHWM"]
        hung = [i for i, o in enumerate(outcomes) if o is None]
        self.assertEqual(hung, [], "connections neither answered nor closed by the deadline")
        self.assertTrue(all(o in ("closed", "error", 200) or isinstance(o, int) and o >= 500 for o in outcomes))
        self.assertGreater(outcomes.count(200), 550)
        self.assertLess(peak - idle, 8 * 1024, f"peak RSS {peak} KiB vs idle {idle} KiB")

    def test_offload_queue_bound_stops_reading_a_pipelined_flood(self):
        # Twenty clients pipeline 20,000 requests each (18 MB, 400,000 requests: an hour of work for two
        # threads of 20 ms). Unbounded, the server would hold every decoded request; the executor queue
        # bound stops reading, so the flood waits in socket buffers and memory stays bounded.
        with Hello("offload", threads=2) as h:
            idle = memory_kib(h.proc.pid)["VmRSS"]
            flood = []
            for _ in range(20):
                s = socket.create_connection(("127.0.0.1", h.port))
                s.setblocking(False)
                flood.append([s, request("/downstream?ms=20") * 20000])
            end_flood = time.monotonic() + 2.0
            while time.monotonic() < end_flood:
                for f in flood:
                    try:
                        f[1] = f[1][f[0].send(f[1]):] if f[1] else f[1]
                    except BlockingIOError:
                        pass
                time.sleep(0.01)
            peak = memory_kib(h.proc.pid)["VmHWM"]
            self.assertLess(peak - idle, 32 * 1024, f"peak RSS {peak} KiB vs idle {idle} KiB")
            self.assertTrue(h.proc.poll() is None)
            for s, _ in flood:
                s.close()

    @staticmethod
    def _collect(clients, deadline):
        outcomes, buffers = [None] * len(clients), [b""] * len(clients)
        pending = {s.fileno(): i for i, s in enumerate(clients)}
        try:
            while pending and time.monotonic() < deadline:
                ready, _, _ = select.select(list(pending), [], [], 0.2)
                for fd in ready:
                    i = pending[fd]
                    try:
                        chunk = clients[i].recv(4096)
                    except OSError:
                        chunk, outcomes[i] = b"", "error"
                    buffers[i] += chunk
                    if not chunk:
                        outcomes[i] = outcomes[i] or "closed"
                    elif buffers[i].endswith(b" ms\n") or b"\r\n\r\n" in buffers[i] and not buffers[i].startswith(b"HTTP/1.1 200"):
                        outcomes[i] = int(buffers[i].split(b" ")[1])
                    if outcomes[i] is not None:
                        del pending[fd]
        finally:
            for s in clients:
                s.close()
        return outcomes


if __name__ == "__main__":
    unittest.main()
