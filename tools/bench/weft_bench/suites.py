"""The benchmark suites: which servers (columns) run at which concurrency (rows), measured how.

Add a suite by writing a builder (context -> list of Table) and registering it in SUITES.
"""
import atexit
import os
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field

from . import instructions, peers
from .load import GrpcPeerClient, GrpcWeftLoad, H2Load, STime, choose_h2

HELLO_MODES = ["loop", "loop-async", "offload", "coroutine", "coroutine-async"]


@dataclass
class Column:
    name: str
    argv: list            # may hold {port} and {ports}
    path_suffix: str = ""  # "-async" for the routes whose handler blocks on an executor future
    note: str = None       # set when the column cannot run (then it shows n/a)
    params: dict = None    # what the column stands for, as JMH's parameter columns (the grpc table's layout)
    min_warmup: float = None  # seconds of warm-up this server needs at least (a JVM's JIT), when warmed up at all
    start_timeout: float = None  # seconds it may take to accept, when more than usual (it compiles itself first)


@dataclass
class Table:
    id: str
    suite: str
    title: str
    row_label: str
    rows: list
    load_kind: str         # http | echo | stream | h2 | https | handshake | grpc | ws: what the load generator must support
    metric: str            # key of the load result shown in the cells
    unit: str
    higher_is_better: bool
    count_key: str         # load result key counting requests, for server CPU us per request
    columns: list = field(default_factory=list)
    ports: int = 1
    params: dict = field(default_factory=dict)
    show: list = None            # cell contents when --show is left at its default
    restart_per_row: bool = False  # a fresh server per measurement (no backlog carried between rows)
    repeat: int = None           # overrides of --repeat, --duration, --warmup for this table
    duration: float = None
    warmup: float = None
    stop_grace: float = 3.0      # seconds from SIGTERM to SIGKILL when the server is stopped
    loader: object = None        # this table's own load generator (h2load for h2), whatever --load says
    default_repeat: int = None   # repeats when --repeat is not given (JMH-like tables want ~10)
    warmup_each_row: bool = False  # warm a server up on every row, not only the largest
    layout: str = None           # "jmh": rendered as JMH's table (tables.render_jmh), Score ± Error
    threshold_pct: float = None  # compare's threshold for this table (None: compare.DEFAULT_THRESHOLD)
    interleave_columns: bool = False  # all servers up at once, every round measures every column in turn
    precise_cpu: bool = False    # server CPU from schedstat (ns) rather than clock ticks (10 ms)
    thread_cpu_prefix: str = None  # also the CPU of the server's threads named so (executors), per request
    reference_column: str = None  # compare: Score and CPU/op also as ratios to this column's, round by round
    loops_per_row: bool = False  # a row is the server's loop (worker) count: {loops} in its argv, a fresh
    #                              server per row, pinned to that many of the server's CPUs
    instructions: bool = False  # the servers run under callgrind; the metric is instructions per counted
    #                             operation (instructions.py), the load's own figures beside it

    def load_argv(self, adapter, column, port, row, duration):
        p = self.params
        if self.load_kind == "http":
            url = f"http://127.0.0.1:{port}{p['path']}{column.path_suffix}"
            return adapter.http(url, p.get("connections", row), p.get("threads", 1), duration, p["pipeline"],
                                p.get("timeout"))
        if self.load_kind == "h2":
            url = f"http://127.0.0.1:{port}{p['path']}{column.path_suffix}"
            return adapter.h2(url, row, p["streams"], duration)
        if self.load_kind == "https":
            url = f"https://127.0.0.1:{port}{p['path']}{column.path_suffix}"
            return adapter.h2(url, row, p["pipeline"], duration, h1=True)
        if self.load_kind == "ws":
            url = f"ws://127.0.0.1:{port}{p['path']}"
            return adapter.ws(url, row, p["in_flight"], p["size"], duration)
        if self.load_kind == "handshake":
            return adapter.handshake("127.0.0.1", port, p["resumed"], duration)
        if self.load_kind == "grpc":
            return adapter.grpc("127.0.0.1", port, p["modes"][row], p["streams"], p["size"], duration)
        if self.load_kind == "echo":
            return adapter.echo("127.0.0.1", port, self.ports, row, p["rounds"], p["size"])
        return adapter.stream("127.0.0.1", port, row, p["size"], duration)


@dataclass
class Context:
    bin_dir: str
    quick: bool
    server_cpus: int                 # event loops to give a weft server
    peers: dict                      # suite -> [(name, command string)]
    columns: set = None              # only these column names, when given
    h2_load: str = None              # the h2 suite's load: "weft-load" or "h2load"; None: weft-load when built
    build_peers: bool = True         # build reference peers the suites need (grpc++'s) while building them
    grpc_load: str = "weft-load"     # the grpc suite's load: weft-load grpc, or grpc++ (the reference client)
    load_cpus: int = 1               # CPUs the load generator is given (the scaling suite's load threads)
    installed_peers: bool = True     # add the peers installed on the machine (peers.py) as columns
    rows: set = None                 # only these rows (as written: "256", "unaryCallsThroughput"), when given


def _bin(ctx, name):
    return os.path.join(ctx.bin_dir, name)


def _peer_columns(ctx, suite):
    return [Column(name, shlex.split(cmd)) for name, cmd in ctx.peers.get(suite, [])]


def _keep(ctx, columns):
    return [c for c in columns if ctx.columns is None or c.name in ctx.columns]


def tfb(ctx):
    hello = _bin(ctx, "weft-hello")
    base = [hello, "--port", "{port}", "--loops", str(ctx.server_cpus)]
    columns = [Column(m, base + ["--mode", m], "-async" if m.endswith("-async") else "") for m in HELLO_MODES]
    columns.append(Column("io_uring", base + ["--mode", "loop", "--transport", "io_uring"]))
    columns.append(Column("blocking", base + ["--mode", "loop", "--transport", "blocking"]))
    columns += peers.installed(ctx, "tfb") + _peer_columns(ctx, "tfb")
    tables = []
    for kind, pipeline, full, quick in (("plaintext", 16, [4, 16, 64, 256, 1024], [16, 256]),
                                        ("json", 1, [4, 16, 64, 256, 512], [16, 256])):
        tables.append(Table(
            id=f"tfb-{kind}", suite="tfb", title=f"Type: {kind}, pipeline {pipeline}, Result: requests/s",
            row_label="connections", rows=quick if ctx.quick else full, load_kind="http", metric="rps",
            unit="req/s", higher_is_better=True, count_key="responses", columns=_keep(ctx, columns),
            params={"path": f"/{kind}", "pipeline": pipeline}))
    return tables


def echo(ctx):
    ports, rounds = (10, 128) if ctx.quick else (100, 1024)
    server = [_bin(ctx, "weft-echo-server"), "--port", "{port}", "--ports", "{ports}",
              "--loops", str(ctx.server_cpus)]
    columns = [Column("weft-echo-server", server),
               Column("weft-echo-server/io_uring", server + ["--transport", "io_uring"])]
    columns += peers.installed(ctx, "echo") + _peer_columns(ctx, "echo")
    rows = [100, 200] if ctx.quick else [100, 200, 400, 800, 1200, 1600, 2000, 2400, 2800]
    return [Table(
        id="echo", suite="echo", title=f"Echo: {rounds} round trips of 256 B per client thread, {ports} ports, "
                                       "Result: total ms", row_label="client threads", rows=rows,
        load_kind="echo", metric="total_ms", unit="ms", higher_is_better=False, count_key="round_trips",
        columns=_keep(ctx, columns), ports=ports, params={"rounds": rounds, "size": 256})]


def stream(ctx):
    server = [_bin(ctx, "weft-stream-server"), "{port}", str(ctx.server_cpus)]
    columns = [Column("weft-stream-server", server),
               Column("weft-stream-server/io_uring", server + ["0", "io_uring"])] + _peer_columns(ctx, "stream")
    rows = [1, 4] if ctx.quick else [1, 4, 16, 64]
    return [Table(
        id="stream", suite="stream", title="Stream: 64 B length-prefixed messages, Result: messages/s",
        row_label="connections", rows=rows, load_kind="stream", metric="messages_per_s", unit="msg/s",
        higher_is_better=True, count_key="received_messages", columns=_keep(ctx, columns),
        params={"size": 64})]


def h2(ctx):
    """HTTP/2 over cleartext with prior knowledge, the load of issue 17's targets: /plaintext, 16 streams
    per connection, from weft-load h2 (or h2load: --h2-load). weft-hello serves h2c and HTTP/1.1 on one
    port. Peers (h2o, nginx's h2c port) come with --peer h2:NAME=COMMAND."""
    hello = _bin(ctx, "weft-hello")
    base = [hello, "--port", "{port}", "--loops", str(ctx.server_cpus)]
    columns = [Column("epoll", base + ["--mode", "loop"]),
               Column("io_uring", base + ["--mode", "loop", "--transport", "io_uring"]),
               Column("coroutine", base + ["--mode", "coroutine"])]
    columns += peers.installed(ctx, "h2") + _peer_columns(ctx, "h2")
    return [Table(
        id="h2-plaintext", suite="h2", title="HTTP/2 cleartext (h2c): /plaintext, 16 streams per connection, "
                                             "Result: requests/s",
        row_label="connections", rows=[64] if ctx.quick else [16, 64, 256], load_kind="h2", metric="rps",
        unit="req/s", higher_is_better=True, count_key="responses", columns=_keep(ctx, columns),
        params={"path": "/plaintext", "streams": 16}, loader=choose_h2(ctx.h2_load, ctx.bin_dir))]


WS_SIZES = [64, 16384]


def ws(ctx):
    """Issue 32: a WebSocket echo, binary messages of 64 B and of 16 KiB, one in flight per connection, 100
    connections (weft-load ws: masked frames, every echo checked). Columns: weft-hello's /ws as callbacks
    on the loop (epoll, io_uring), as a coroutine per connection, and on the blocking transport; Boost.Beast's
    and node's ws echo servers (one thread each). No compression: the load does not offer it."""
    hello = _bin(ctx, "weft-hello")
    base = [hello, "--port", "{port}", "--loops", str(ctx.server_cpus)]
    columns = [Column("loop", base + ["--mode", "loop"]),
               Column("coroutine", base + ["--mode", "coroutine"]),
               Column("io_uring", base + ["--mode", "loop", "--transport", "io_uring"])]
    if not ctx.quick:
        columns.append(Column("blocking", base + ["--mode", "loop", "--transport", "blocking"]))
    columns += peers.installed(ctx, "ws") + _peer_columns(ctx, "ws")
    return [Table(
        id=f"ws-{size}", suite="ws", title=f"WebSocket echo: {size}-byte binary messages, 1 in flight per connection, "
                                           "Result: messages/s",
        row_label="connections", rows=[100], load_kind="ws", metric="rps", unit="msg/s", higher_is_better=True,
        count_key="responses", columns=_keep(ctx, columns), params={"path": "/ws", "size": size, "in_flight": 1},
        precise_cpu=True, show=["rps", "cpu"]) for size in WS_SIZES]


def _test_certificate():
    """A self-signed P-256 certificate for 127.0.0.1 and localhost, made once per run: (cert, key) paths,
    removed at exit. Raises NotBuilt without the openssl command."""
    if shutil.which("openssl") is None:
        raise NotBuilt("the tls suite needs the openssl command (apt-get install openssl)")
    d = tempfile.mkdtemp(prefix="weft-bench-tls-")
    atexit.register(shutil.rmtree, d, True)
    cert, key = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-days", "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                    "-keyout", key, "-out", cert], check=True, capture_output=True)
    return cert, key


def tls(ctx):
    """Issue 16's load: HTTPS/1.1 (h2load --h1) /plaintext at pipeline 16 and /json at pipeline 1, and TLS
    handshakes per second (openssl s_time: full TLS 1.3 ones, and resumed ones). Columns: weft-hello
    serving HTTPS with a certificate made for the run, on epoll, io_uring and as coroutines; peers
    (nginx with TLS) come with --peer tls:NAME=COMMAND."""
    cert, key = _test_certificate()
    hello = _bin(ctx, "weft-hello")
    base = [hello, "--port", "{port}", "--loops", str(ctx.server_cpus), "--tls-cert", cert, "--tls-key", key]
    columns = _keep(ctx, [Column("epoll", base + ["--mode", "loop"]),
                          Column("io_uring", base + ["--mode", "loop", "--transport", "io_uring"]),
                          Column("coroutine", base + ["--mode", "coroutine"])]
                    + peers.installed(ctx, "tls", cert, key) + _peer_columns(ctx, "tls"))
    tables = []
    for kind, pipeline in (("plaintext", 16), ("json", 1)):
        tables.append(Table(
            id=f"tls-{kind}", suite="tls", title=f"HTTPS/1.1: {kind}, pipeline {pipeline}, Result: requests/s",
            row_label="connections", rows=[256] if ctx.quick else [16, 256], load_kind="https", metric="rps", unit="req/s",
            higher_is_better=True, count_key="responses", columns=columns,
            params={"path": f"/{kind}", "pipeline": pipeline}, loader=H2Load()))
    # A handshake's cost is the TLS library's, whatever the transport: quick runs measure weft on epoll
    # against the peers, without a warm-up (no JIT to warm; a handshake is a whole new connection).
    handshake_columns = [c for c in columns if c.name not in ("io_uring", "coroutine")] if ctx.quick else columns
    for mode in ("full", "resumed"):
        tables.append(Table(
            id=f"tls-handshakes-{mode}", suite="tls",
            title=f"TLS handshakes ({mode}{', TLS 1.2 session id' if mode == 'resumed' else ', TLS 1.3'}), "
                  "one client, Result: handshakes/s",
            row_label="clients", rows=[1], load_kind="handshake", metric="handshakes_per_s", unit="hs/s",
            higher_is_better=True, count_key="handshakes", columns=handshake_columns,
            params={"resumed": mode == "resumed"}, loader=STime(), warmup=0 if ctx.quick else None))
    return tables


class NotBuilt(Exception):
    pass


DOWNSTREAM_POOLS = [4, 8, 12, 16]


def downstream(ctx):
    """Issue 9 (seed 002): /downstream?ms=250 waits like a slow downstream call; the modes and pool sizes
    as columns, client concurrency as rows, transactions/s with mean response time and peak server RSS."""
    hello = _bin(ctx, "weft-hello")
    base = [hello, "--port", "{port}", "--loops", str(ctx.server_cpus)]
    columns = [Column("sync-loop", base + ["--mode", "loop"])]
    columns += [Column(f"offload-{t}", base + ["--mode", "offload", "--offload-threads", str(t)])
                for t in (DOWNSTREAM_POOLS[::3] if ctx.quick else DOWNSTREAM_POOLS)]  # quick: the smallest and largest
    columns.append(Column("coroutine", base + ["--mode", "coroutine"]))
    columns = _keep(ctx, columns)
    show = ["rps", "mean", "rss"]
    quick = {"repeat": 1, "duration": 1.5} if ctx.quick else {}
    common = dict(suite="downstream", load_kind="http", metric="rps", unit="trans/s", higher_is_better=True,
                  count_key="responses", show=show, restart_per_row=True, warmup=0, stop_grace=1.0)
    # Clients wait as long as siege would: no timeouts inside a measurement.
    steady = Table(id="downstream", title="Downstream 250 ms: transactions/s, mean response time, peak RSS",
                   row_label="clients", rows=[15, 256] if ctx.quick else [15, 64, 256], columns=columns,
                   params={"path": "/downstream?ms=250", "pipeline": 1, "timeout": 60}, **quick, **common)
    # Far beyond every pool (16 threads serve 64/s); clients give up after 2 s and reconnect, as users do.
    clients = 1024 if ctx.quick else 4096
    overload = Table(id="downstream-overload", title=f"Overload: {clients} clients, 2 s timeout, "
                                                     "transactions/s, mean, peak RSS",
                     row_label="clients", rows=[clients], columns=columns,
                     params={"path": "/downstream?ms=250", "pipeline": 1, "timeout": 2},
                     repeat=1, duration=3.0 if ctx.quick else 10.0, **common)
    return [steady, overload]


# The grpc table's compare threshold: its cells are means of 10 repeats whose 99.9% intervals must also
# part (compare.compare_jmh), so a smaller change than the default 10% can count (seed 004 lost 14%).
GRPC_THRESHOLD_PCT = 3.0

# grpc-ir's: instruction counts repeat to within a fraction of a percent.
GRPC_IR_THRESHOLD_PCT = 2.0

GRPC_BENCHMARKS = {  # row -> the load's mode (grpc-load.sh's, weft-load grpc's)
    "streamingCallsMessageThroughput": "stream",
    "unaryCallsThroughput": "unary",
    "pingPongMessageThroughput": "pingpong",
}


def grpc_peer_dir():
    """Where grpc++'s reference peer's sources are: $WEFT_GRPC_PEER_DIR, else the source tree's copy of
    shared/peers/grpc (tests/integration/grpc_peer); None when neither exists (an installed weft-bench)."""
    here = os.path.dirname(os.path.abspath(__file__))
    for d in (os.environ.get("WEFT_GRPC_PEER_DIR"), os.path.join(here, "..", "..", "..", "tests", "integration", "grpc_peer")):
        if d and os.path.exists(os.path.join(d, "build.sh")):
            return os.path.abspath(d)
    return None


def build_grpc_peer(build=True):
    """(directory of weft-peer-grpc-server and -client, note): built by the peer's build.sh into
    $WEFT_GRPC_PEER_OUT, else $TMPDIR/weft-peer-grpc (where shared/peers/serve-peer.sh grpc and
    grpc-load.sh put them); note is None when they are there, else why not."""
    out = os.environ.get("WEFT_GRPC_PEER_OUT") or os.path.join(os.environ.get("TMPDIR", "/tmp"), "weft-peer-grpc")
    src = grpc_peer_dir()
    if build and src is not None:
        done = subprocess.run(["bash", os.path.join(src, "build.sh"), out], capture_output=True, text=True)
        if done.returncode != 0:
            lines = (done.stderr or done.stdout).strip().splitlines()
            return out, f"n/a: grpc++ peer did not build ({lines[-1] if lines else 'build.sh failed'}; apt-get install " \
                        "libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler pkg-config)"
    if not all(os.access(os.path.join(out, f"weft-peer-grpc-{p}"), os.X_OK) for p in ("server", "client")):
        return out, "n/a: grpc++ peer not built (tests/integration/grpc_peer/build.sh)"
    return out, None


def grpc(ctx):
    """Issue 18 (seed 004, grpc-java's TransportBenchmark): bench.proto's BenchmarkService, 10 streams (calls)
    on one connection, empty messages; rows are the benchmarks, columns weft-grpc-bench-server on epoll and
    io_uring with direct true and false, and grpc++'s callback server. Rendered like JMH's table: Score (the
    mean of the repeats) ± Error (99.9% confidence, Student's t). The load is weft-load grpc
    (ctx.grpc_load = "weft-load", the default: it returns a stream's window as it reads, so a server's
    figures per message count messages read) or grpc++'s reference client ("grpc++": it grants a fast
    server stream window without bound and buffers what it has not read), pinned apart from the server."""
    peer_dir, peer_note = build_grpc_peer(ctx.build_peers)
    server = _bin(ctx, "weft-grpc-bench-server")
    columns = []
    for transport in ("epoll",) if ctx.quick else ("epoll", "io_uring"):  # quick: the seed's comparison only
        for direct in ("true", "false"):
            columns.append(Column(f"weft-{transport}-direct-{direct}",
                                  [server, "--port", "{port}", "--transport", transport, "--direct", direct,
                                   "--loops", str(ctx.server_cpus)],
                                  params={"direct": direct, "transport": f"weft-{transport}"}))
    columns.append(Column("grpc++", [os.path.join(peer_dir, "weft-peer-grpc-server"), "{port}", "1"], note=peer_note,
                          params={"direct": "-", "transport": "grpc++"}))
    columns += _peer_columns(ctx, "grpc")
    if ctx.grpc_load == "weft-load":
        loader = GrpcWeftLoad(_bin(ctx, "weft-load"))
    else:
        loader = GrpcPeerClient(os.path.join(peer_dir, "weft-peer-grpc-client"), peer_note)
    return [Table(
        id="grpc", suite="grpc", title="gRPC BenchmarkService, 10 streams on one connection, empty messages, "
                                       "Result: ops/s", row_label="Benchmark", rows=list(GRPC_BENCHMARKS),
        load_kind="grpc", metric="messages_per_s", unit="ops/s", higher_is_better=True, count_key="messages",
        columns=_keep(ctx, columns), params={"modes": GRPC_BENCHMARKS, "streams": 10, "size": 0},
        loader=loader, default_repeat=3 if ctx.quick else 10, duration=None if ctx.quick else 2.0,
        warmup_each_row=True, layout="jmh", threshold_pct=GRPC_THRESHOLD_PCT, interleave_columns=True,
        precise_cpu=True, thread_cpu_prefix="grpc-exec", reference_column="grpc++")]


def grpc_ir(ctx):
    """Seed 004's regression made deterministic: server instructions per message (callgrind) for the grpc
    table's benchmarks, which a loaded machine does not move, so that compare flags a change of a few
    percent -- the executor threads' allocator cache (`--executor-thread-cache false`, or
    WEFT_GRPC_EXECUTOR_THREAD_CACHE=false in the environment of one run) -- on a loaded machine and in a
    quick run. Columns: weft-grpc-bench-server on epoll with its handlers on the executor (direct false,
    the seed's setting) and on the loop (direct true)."""
    server = _bin(ctx, "weft-grpc-bench-server")
    out_dir = tempfile.mkdtemp(prefix="weft-bench-callgrind-")
    atexit.register(shutil.rmtree, out_dir, True)
    note = None if instructions.available() else instructions.VALGRIND_MISSING
    columns = []
    for direct in ("false", "true"):
        argv = [server, "--port", "{port}", "--transport", "epoll", "--direct", direct, "--loops", "1"]
        columns.append(Column(f"weft-epoll-direct-{direct}", instructions.wrap(argv, out_dir) if note is None else [],
                              note=note, params={"direct": direct, "transport": "weft-epoll"}))
    return [Table(
        id="grpc-ir", suite="grpc-ir", title="gRPC BenchmarkService under callgrind, 10 streams on one connection, "
                                             "empty messages, Result: server instructions per message",
        row_label="Benchmark", rows=list(GRPC_BENCHMARKS), load_kind="grpc", metric="instructions_per_op",
        unit="Ir/msg", higher_is_better=False, count_key="messages", columns=_keep(ctx, columns),
        params={"modes": GRPC_BENCHMARKS, "streams": 10, "size": 0}, loader=GrpcWeftLoad(_bin(ctx, "weft-load")),
        default_repeat=2, warmup_each_row=True,
        threshold_pct=GRPC_IR_THRESHOLD_PCT, instructions=True, stop_grace=10.0)]


def scaling_rows(server_cpus):
    """1, 2, 4 ... loops, and the server's whole CPU share last: [1] on a 2-core machine, [1, 2, 4, 8] on 16."""
    rows, n = [], 1
    while n < server_cpus:
        rows.append(n)
        n *= 2
    return rows + [server_cpus]


def scaling(ctx):
    """Issue 31: requests/s and server CPU per request for 1..N event loops (nginx: workers), the load on the
    other half of the machine. weft-hello in each accept mode, each loop pinned to a CPU; nginx; peers given with --peer
    scaling:NAME=COMMAND may use {loops} too (Netty: its event loop count). On 2 cores it runs the one-loop
    point; on 16 cores, 1, 2, 4 and 8 loops against 8 load threads: one command, bounded in time."""
    hello = _bin(ctx, "weft-hello")
    columns = [Column(f"weft {mode}", [hello, "--port", "{port}", "--loops", "{loops}", "--accept", mode, "--pin"])
               for mode in ("acceptor", "reuseport", "least-connections")]
    columns += peers.installed(ctx, "scaling") + _peer_columns(ctx, "scaling")
    load_threads = max(1, ctx.load_cpus)
    connections = 64 if ctx.quick else max(256, 64 * ctx.server_cpus)
    return [Table(
        id="scaling", suite="scaling",
        title=f"Scaling: /plaintext, pipeline 16, {connections} connections, {load_threads} load thread(s), "
              "Result: requests/s", row_label="loops", rows=scaling_rows(ctx.server_cpus), load_kind="http",
        metric="rps", unit="req/s", higher_is_better=True, count_key="responses", columns=_keep(ctx, columns),
        params={"path": "/plaintext", "pipeline": 16, "connections": connections, "threads": load_threads},
        show=["rps", "cpu"], loops_per_row=True, precise_cpu=True)]


SUITES = {"tfb": tfb, "echo": echo, "stream": stream, "downstream": downstream, "h2": h2, "tls": tls, "grpc": grpc,
          "grpc-ir": grpc_ir, "scaling": scaling, "ws": ws}
ALL = ["tfb", "echo", "stream", "downstream", "h2", "tls", "grpc"]


def build(names, ctx):
    tables = []
    for name in names:
        if name not in SUITES:
            raise KeyError(f"unknown suite '{name}'; known: {', '.join(list(SUITES) + ['all'])}")
        tables += SUITES[name](ctx)
    if ctx.rows is not None:  # --rows: each table keeps the rows named; a table left with none is dropped
        for t in tables:
            t.rows = [r for r in t.rows if str(r) in ctx.rows]
        tables = [t for t in tables if t.rows]
        if not tables:
            raise KeyError(f"no table of {', '.join(names)} has the rows {', '.join(sorted(ctx.rows))}")
    return tables
