"""Load generators behind one interface: weft-load (every mode), wrk (http only) and h2load (HTTP/2).

Each call returns the argv to run and a parser turning its output into weft-load's --json dict.
"""
import json
import math
import os
import re
import shutil
import tempfile

NOT_BUILT = "n/a: weft-load not built"


class WeftLoad:
    name = "weft-load"
    fractional_seconds = True

    def __init__(self, binary):
        self.binary = binary

    def supports(self, _kind):
        return True

    def _json_file(self):
        fd, path = tempfile.mkstemp(prefix="weft-load-", suffix=".json")
        os.close(fd)
        return path

    def _parser(self, path):
        def parse(_stdout):
            try:
                with open(path) as f:
                    return json.load(f)
            finally:
                os.unlink(path)
        return parse

    def http(self, url, connections, threads, duration, pipeline, timeout=None):
        path = self._json_file()
        argv = [self.binary, "http", url, "-c", str(connections), "-t", str(threads), "-d", f"{duration:g}",
                "--pipeline", str(pipeline), "--json", path]
        if timeout is not None:
            argv += ["--timeout", f"{timeout:g}"]
        return argv, self._parser(path)

    def h2(self, url, connections, streams, duration, threads=1, h1=False):
        """weft-load h2: `streams` per connection, as h2load's -m (h2c for http://, h2 by ALPN for https://)."""
        if h1:
            raise ValueError("weft-load h2 speaks HTTP/2 only: HTTP/1.1 over TLS is weft-load http")
        path = self._json_file()
        argv = [self.binary, "h2", url, "-c", str(connections), "-m", str(streams), "-t", str(threads),
                "-d", f"{duration:g}", "--json", path]
        return argv, self._parser(path)

    def ws(self, url, connections, in_flight, size, duration, text=False, deflate=False):
        """weft-load ws: `connections` WebSockets each keeping `in_flight` messages of `size` bytes out."""
        path = self._json_file()
        argv = [self.binary, "ws", url, "-c", str(connections), "-m", str(in_flight), "-s", str(size),
                "-d", f"{duration:g}", "--text" if text else "--binary", "--json", path]
        argv += ["--deflate"] if deflate else []
        return argv, self._parser(path)

    def echo(self, host, port, ports, threads, rounds, size):
        path = self._json_file()
        argv = [self.binary, "echo", f"{host}:{port}+{ports}", "--threads", str(threads), "--rounds", str(rounds),
                "--size", str(size), "--json", path]
        return argv, self._parser(path)

    def stream(self, host, port, connections, size, duration):
        path = self._json_file()
        argv = [self.binary, "stream", f"{host}:{port}", "-c", str(connections), "--size", str(size),
                "-d", f"{duration:g}", "--json", path]
        return argv, self._parser(path)


class Wrk:
    """wrk with the peers' pipeline.lua (TechEmpower-style pipelining); whole seconds only."""
    name = "wrk"
    fractional_seconds = False

    def __init__(self, binary, pipeline_script):
        self.binary, self.pipeline_script = binary, pipeline_script

    def supports(self, kind):
        return kind == "http"

    def http(self, url, connections, threads, duration, pipeline, timeout=None):
        seconds = max(1, math.ceil(duration))
        argv = [self.binary, f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--latency"]
        if timeout is not None:
            argv.append(f"--timeout={max(1, math.ceil(timeout))}s")
        argv += ["-s", self.pipeline_script, url, "--", str(pipeline)]

        def parse(stdout):
            result = parse_wrk(stdout)
            result.update(target=url, connections=connections, threads=threads, pipeline=pipeline)
            return result
        return argv, parse



class H2Load:
    """h2load (Debian nghttp2-client): HTTP/2 with prior knowledge for http:// URLs, h2 by ALPN for
    https://; whole seconds only. A table whose load_kind is h2 uses it whatever --load says."""
    name = "h2load"
    fractional_seconds = False
    missing_note = "n/a: h2load not installed (apt-get install nghttp2-client)"

    def __init__(self, binary="h2load"):
        self.binary = binary

    def supports(self, kind):
        return kind in ("h2", "https") and shutil.which(self.binary) is not None

    def h2(self, url, connections, streams, duration, threads=1, h1=False):
        """`streams` per connection; with h1, HTTP/1.1 (over TLS for https://) pipelined that deep."""
        seconds = max(1, math.ceil(duration))
        argv = [self.binary, "-c", str(connections), "-m", str(streams), "-t", str(threads), "-D", str(seconds)]
        argv += ["--h1"] if h1 else []
        argv.append(url)

        def parse(stdout):
            result = parse_h2load(stdout)
            result.update(target=url, connections=connections, threads=threads, streams=streams)
            return result
        return argv, parse


class STime:
    """`openssl s_time`: one client making TLS handshakes back to back for the whole duration, each on a
    new connection: full ones, or ones resuming the first connection's session. Whole seconds only."""
    name = "openssl s_time"
    fractional_seconds = False
    missing_note = "n/a: openssl not installed (apt-get install openssl)"

    def __init__(self, binary="openssl"):
        self.binary = binary

    def supports(self, kind):
        return kind == "handshake" and shutil.which(self.binary) is not None

    def handshake(self, host, port, resumed, duration):
        seconds = max(1, math.ceil(duration))
        argv = [self.binary, "s_time", "-connect", f"{host}:{port}", "-time", str(seconds)]
        # s_time resumes by session id only: TLS 1.3 sessions come in tickets after the handshake, which it
        # never reads, so the resumed row is TLS 1.2 (the full one negotiates 1.3).
        argv += ["-reuse", "-tls1_2"] if resumed else ["-new"]

        def parse(stdout):
            return parse_s_time(stdout, seconds, resumed)
        return argv, parse


class GrpcPeerClient:
    """grpc++'s reference load client (shared/peers/grpc/client.cc: what grpc-load.sh runs): `streams`
    calls on one connection (one thread each), `size`-byte messages, for `duration` seconds. The grpc
    suite's load with --grpc-load grpc++ (suites.grpc, ctx.grpc_load; weft-load grpc by default)."""
    name = "grpc++ client"
    fractional_seconds = True

    def __init__(self, binary, missing_note=None):
        self.binary = binary
        self.missing_note = missing_note or f"n/a: {binary} not built"

    def supports(self, kind):
        return kind == "grpc" and os.access(self.binary, os.X_OK)

    def grpc(self, host, port, mode, streams, size, duration):
        argv = [self.binary, f"{host}:{port}", mode, str(streams), f"{duration:g}", str(size), "1"]

        def parse(stdout):
            result = parse_grpc_client(stdout)
            result.update(target=f"{host}:{port}", streams=streams, size=size)
            return result
        return argv, parse


class GrpcWeftLoad(WeftLoad):
    """weft-load grpc stream|unary|pingpong (issue 18's load generator), with --json like its other modes."""

    def supports(self, kind):
        return kind == "grpc" and os.access(self.binary, os.X_OK)

    def grpc(self, host, port, mode, streams, size, duration):
        path = self._json_file()
        argv = [self.binary, "grpc", mode, f"{host}:{port}", "-c", "1", "--streams", str(streams),
                "--size", str(size), "-d", f"{duration:g}", "--json", path]
        return argv, self._parser(path)


def parse_grpc_client(stdout):
    """The grpc++ client's line (mode=M threads=T size=S channels=C messages=N seconds=D rate=R failures=F)
    as a dict: messages, messages_per_s, duration_s, failures; raises ValueError without one."""
    m = re.search(r"mode=(\w+) threads=(\d+) size=(\d+) channels=(\d+) messages=(\d+) seconds=([\d.]+) "
                  r"rate=(\d+) failures=(\d+)", stdout)
    if not m:
        first = stdout.strip().splitlines()[-1] if stdout.strip() else "no output"
        raise ValueError(f"grpc++ client: no result in its output ({first})")
    messages, seconds = int(m.group(5)), float(m.group(6))
    return {"tool": "grpc++ client", "mode": m.group(1), "threads": int(m.group(2)), "channels": int(m.group(4)),
            "messages": messages, "duration_s": seconds, "messages_per_s": messages / seconds if seconds else 0.0,
            "failures": int(m.group(8)), "latency_us": {}, "errors": {"failures": int(m.group(8))}}


_TIME_UNITS = {"us": 1.0, "ms": 1e3, "s": 1e6, "m": 60e6, "h": 3600e6}
_SIZE_UNITS = {"B": 1, "KB": 1024, "MB": 1024 ** 2, "GB": 1024 ** 3, "TB": 1024 ** 4}


def _micros(text):
    m = re.fullmatch(r"([\d.]+)(us|ms|s|m|h)", text)
    if not m:
        raise ValueError(f"wrk: unreadable time '{text}'")
    return float(m.group(1)) * _TIME_UNITS[m.group(2)]


def parse_wrk(stdout):
    """wrk's text report (with --latency) as weft-load's http --json dict; raises ValueError if incomplete."""
    m = re.search(r"(\d+) requests in ([\d.]+)(us|ms|s|m|h), ([\d.]+)([KMGT]?B) read", stdout)
    rps = re.search(r"Requests/sec:\s+([\d.]+)", stdout)
    if not m or not rps:
        first = stdout.strip().splitlines()[-1] if stdout.strip() else "no output"
        raise ValueError(f"wrk: no result in its output ({first})")
    requests = int(m.group(1))
    latency = {key: None for key in ("p50", "p90", "p99", "p999", "max", "mean")}
    stats = re.search(r"Latency\s+([\d.]+\w+)\s+([\d.]+\w+)\s+([\d.]+\w+)", stdout)
    if stats:
        latency["mean"], latency["max"] = _micros(stats.group(1)), _micros(stats.group(3))
    for pct, key in (("50", "p50"), ("90", "p90"), ("99", "p99")):
        d = re.search(rf"^\s+{pct}%\s+([\d.]+\w+)", stdout, re.M)
        if d:
            latency[key] = _micros(d.group(1))
    if latency["p99"] == 0.0 and (latency["p90"] or 0) > 0:
        latency["p99"] = None  # wrk prints 0.00us for p99 when pipelining overflows its histogram
    errors = {"connect": 0, "read": 0, "write": 0, "timeout": 0, "status": 0, "parse": 0}
    s = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", stdout)
    if s:
        errors.update(connect=int(s.group(1)), read=int(s.group(2)), write=int(s.group(3)), timeout=int(s.group(4)))
    n = re.search(r"Non-2xx or 3xx responses: (\d+)", stdout)
    if n:
        errors["status"] = int(n.group(1))
    return {"tool": "wrk", "mode": "http", "duration_s": _micros(m.group(2) + m.group(3)) / 1e6,
            "requests": requests, "responses": requests, "rps": float(rps.group(1)),
            "bytes_read": int(float(m.group(4)) * _SIZE_UNITS[m.group(5)]), "latency_us": latency,
            "errors": errors}


def parse_h2load(stdout):
    """h2load's report as weft-load's http --json dict; raises ValueError if it has no result. Requests
    that failed, errored or timed out count as errors, not as responses; h2load gives no percentiles."""
    m = re.search(r"finished in ([\d.]+)(us|ms|s|m|h), ([\d.]+) req/s", stdout)
    r = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, "
                  r"(\d+) errored, (\d+) timeout", stdout)
    if not m or not r:
        first = stdout.strip().splitlines()[-1] if stdout.strip() else "no output"
        raise ValueError(f"h2load: no result in its output ({first})")
    duration_s = _micros(m.group(1) + m.group(2)) / 1e6
    succeeded = int(r.group(4))
    latency = {key: None for key in ("p50", "p90", "p99", "p999", "max", "mean")}
    t = re.search(r"time for request:\s+([\d.]+\w+)\s+([\d.]+\w+)\s+([\d.]+\w+)", stdout)
    if t:
        latency["max"], latency["mean"] = _micros(t.group(2)), _micros(t.group(3))
    traffic = re.search(r"traffic: [\d.]+\w+ \((\d+)\) total", stdout)
    codes = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", stdout)
    errors = {"connect": 0, "read": int(r.group(6)), "write": 0, "timeout": int(r.group(7)),
              "status": int(codes.group(3)) + int(codes.group(4)) if codes else 0, "parse": int(r.group(5))}
    return {"tool": "h2load", "mode": "h2", "duration_s": duration_s, "requests": int(r.group(2)),
            "responses": succeeded, "rps": succeeded / duration_s if duration_s > 0 else 0.0,
            "bytes_read": int(traffic.group(1)) if traffic else 0, "latency_us": latency, "errors": errors}


def parse_s_time(stdout, seconds, resumed):
    """`openssl s_time`'s report for one mode: handshakes (connections) made in `seconds`. With -reuse it
    prints 'r' for each connection that resumed and '*' for each that did not: `resumed_fraction` says
    how many really did (servers may refuse resumption)."""
    m = re.findall(r"(\d+) connections in [\d.]+s; [\d.]+ connections/user sec", stdout)
    if not m:
        first = stdout.strip().splitlines()[-1] if stdout.strip() else "no output"
        raise ValueError(f"s_time: no result in its output ({first})")
    handshakes = int(m[-1])  # with -reuse, the second report is the resuming run
    result = {"tool": "openssl s_time", "mode": "handshake", "duration_s": float(seconds),
              "handshakes": handshakes, "handshakes_per_s": handshakes / seconds, "resumed": resumed,
              "latency_us": {}, "errors": {}}
    if resumed:
        marks = "".join(re.findall(r"^[r*]+$", stdout.split("session id reuse", 1)[-1], re.M))
        reused, new = marks.count("r"), marks.count("*")
        result["resumed_fraction"] = reused / (reused + new) if reused + new else 0.0
    return result


def choose(kind, bin_dir, wrk_script):
    """(adapter, note): weft-load when built (or asked for), else wrk with a note."""
    weft_load = os.path.join(bin_dir, "weft-load")
    if kind == "weft-load" or (kind is None and os.access(weft_load, os.X_OK)):
        if not os.access(weft_load, os.X_OK):
            raise FileNotFoundError(f"weft-load not built: {weft_load} (build target weft-load, or use --load wrk)")
        return WeftLoad(weft_load), None
    note = None if kind == "wrk" else f"load: wrk ({weft_load} not built; echo and stream need weft-load)"
    return Wrk("wrk", wrk_script), note


def choose_h2(kind, bin_dir):
    """The h2 suite's load generator: weft-load h2 when built (it spends less client CPU per request than
    h2load on the same load), else h2load; `kind` ("weft-load" or "h2load") forces one."""
    weft_load = os.path.join(bin_dir, "weft-load")
    if kind == "weft-load" or (kind is None and os.access(weft_load, os.X_OK)):
        return WeftLoad(weft_load)
    return H2Load()
