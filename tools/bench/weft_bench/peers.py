"""The reference servers weft-bench adds as columns when they are installed: each a recipe that writes
its configuration when the server starts (with the run's {port} and, for the scaling suite, {loops}),
with the warm-up it needs. A peer that is not installed is a column whose note says in one line how to
add it. `--peer [SUITE:]NAME=CMD` replaces the installed peer of the same name.

    suite       peers
    tfb         nginx, h2o (files), Netty 4.1 (JIT warm-up)
    echo        Netty 4.1's echo server
    h2          nginx (h2c), h2o (h2c)
    tls         nginx (TLS), h2o (TLS)
    scaling     nginx (a worker per loop)
    grpc        grpc++ (suites.grpc builds it from tests/integration/grpc_peer)
    ws          Boost.Beast 1.81's WebSocket echo, node's ws echo (shared/peers/ws; one thread each)
"""
import atexit
import glob
import hashlib
import os
import shlex
import shutil
import tempfile

# Seconds of load before the first measurement of a JVM peer: its JIT compiles the hot path in the first
# seconds (shared/peers/README.md: "Warm the JVM with one 5-second run before the counted one").
JVM_WARMUP_S = 5.0

# Seconds a peer that compiles itself before it listens may take to accept (g++ on a busy two-core machine).
BUILD_START_TIMEOUT_S = 600.0

NGINX_MISSING = "n/a: nginx is not installed (apt-get install nginx-light)"
H2O_MISSING = "n/a: h2o is not installed (apt-get install h2o)"
NETTY_MISSING = ("n/a: Netty needs java, javac and Netty's jars (apt-get install default-jdk-headless libnetty-java) "
                 "and its peer sources (WEFT_NETTY_PEER_DIR=<dir of HelloServer.java and EchoServer.java>)")

NGINX_ROUTES = """    location /plaintext {{ default_type text/plain; return 200 "Hello, World!"; }}
    location /json {{ default_type application/json; return 200 '{{"message":"Hello, World!"}}'; }}
"""

# @LISTEN@: the listen directive's parameters after the address; @TLS@: the certificate lines. Braces are
# doubled for the runner, which fills in {port} (and {loops}) when the server starts.
NGINX_CONF = """worker_processes @WORKERS@;
daemon off;
error_log /dev/null crit;
pid @DIR@/nginx-{port}.pid;
events {{ worker_connections 65536; multi_accept on; }}
http {{
  access_log off;
  keepalive_requests 10000000;
  http2_max_requests 10000000;
  client_body_temp_path @DIR@;
  proxy_temp_path @DIR@;
  fastcgi_temp_path @DIR@;
  uwsgi_temp_path @DIR@;
  scgi_temp_path @DIR@;
  ssl_protocols TLSv1.2 TLSv1.3;
  ssl_session_cache shared:weftbench:10m;
  server {{
    listen 127.0.0.1:{port}@LISTEN@ backlog=8192 reuseport;
@TLS@@ROUTES@  }}
}}
"""


def find_program(name):
    """The program's path on PATH or in /usr/sbin (not on a user's PATH on Debian), or None."""
    return shutil.which(name) or (f"/usr/sbin/{name}" if os.access(f"/usr/sbin/{name}", os.X_OK) else None)


def _workdir(prefix):
    d = tempfile.mkdtemp(prefix=f"weft-bench-{prefix}-")
    atexit.register(shutil.rmtree, d, True)
    return d


def _sh(script):
    """argv running `script` in sh; {port} and {loops} in it are filled in when the server starts."""
    return ["sh", "-c", script]


def nginx(column, workers=None, listen="", cert=None, key=None):
    """nginx serving /plaintext and /json on {port}: `listen` " http2" for h2c, " ssl" (with cert and key) for
    HTTPS (ALPN http/1.1, h2 as well with " ssl http2"); `workers` workers, or the row's {loops} when None."""
    from .suites import Column
    program = find_program("nginx")
    if program is None:
        return Column(column, [], note=NGINX_MISSING)
    d = _workdir("nginx")
    tls = f"    ssl_certificate {cert};\n    ssl_certificate_key {key};\n" if cert else ""
    conf = NGINX_CONF
    for name, value in (("@WORKERS@", "{loops}" if workers is None else str(workers)), ("@DIR@", d),
                        ("@LISTEN@", listen), ("@TLS@", tls), ("@ROUTES@", NGINX_ROUTES)):
        conf = conf.replace(name, value)
    script = f"cat > {d}/nginx-{{port}}.conf <<'EOF'\n{conf}EOF\nexec {program} -c {d}/nginx-{{port}}.conf"
    return Column(column, _sh(script))


H2O_CONF = """num-threads: {threads}
{user}error-log: {dir}/error-{{port}}.log
http2-idle-timeout: 600
listen:
  host: 127.0.0.1
  port: {{port}}
{tls}hosts:
  default:
    paths:
      /plaintext:
        file.file: {dir}/plaintext.txt
      /json:
        file.file: {dir}/message.json
"""


def h2o(column, threads, cert=None, key=None):
    """h2o serving /plaintext and /json from files on {port} (HTTP/1.1 and h2c; with cert and key, HTTPS
    with ALPN h2 and http/1.1), `threads` threads."""
    from .suites import Column
    program = find_program("h2o")
    if program is None:
        return Column(column, [], note=H2O_MISSING)
    d = _workdir("h2o")
    with open(os.path.join(d, "plaintext.txt"), "w") as f:
        f.write("Hello, World!")
    with open(os.path.join(d, "message.json"), "w") as f:
        f.write('{"message":"Hello, World!"}')
    tls = f"  ssl:\n    certificate-file: {cert}\n    key-file: {key}\n" if cert else ""
    # h2o refuses to run as root without a user to drop to.
    user = "user: root\n" if os.geteuid() == 0 else ""
    conf = H2O_CONF.format(threads=threads, user=user, dir=d, tls=tls)
    script = f"cat > {d}/h2o-{{port}}.conf <<'EOF'\n{conf}EOF\nexec {program} -c {d}/h2o-{{port}}.conf"
    return Column(column, _sh(script))


def netty_peer_dir():
    """Where the Netty peer's sources are: $WEFT_NETTY_PEER_DIR, else shared/peers/netty beside the source
    tree (the team's peers, not shipped with weft); None when neither has them."""
    here = os.path.dirname(os.path.abspath(__file__))
    for d in (os.environ.get("WEFT_NETTY_PEER_DIR"), os.path.join(here, "..", "..", "..", "..", "shared", "peers", "netty")):
        if d and os.path.exists(os.path.join(d, "HelloServer.java")):
            return os.path.abspath(d)
    return None


NETTY_JARS = ["buffer", "codec", "codec-http", "common", "handler", "transport", "resolver"]


def netty(column, main_class, args):
    """A Netty 4.1 peer (shared/peers/netty's `main_class`, compiled once per run) with `args` (may hold
    {port}), warmed up for at least JVM_WARMUP_S seconds."""
    from .suites import Column
    jars = [f"/usr/share/java/netty-{j}.jar" for j in NETTY_JARS]
    src = netty_peer_dir()
    java, javac = shutil.which("java"), shutil.which("javac")
    if src is None or java is None or javac is None or not all(os.path.exists(j) for j in jars):
        return Column(column, [], note=NETTY_MISSING)
    d = _workdir("netty")
    cp = ":".join(jars)
    source = shlex.quote(os.path.join(src, f"{main_class}.java"))
    script = (f"[ -f {d}/{main_class}.class ] || {javac} -nowarn -cp {cp} -d {d} {source} || exit 1\n"
              f"exec {java} -Xms1g -Xmx1g -cp {d}:{cp} {main_class} {args}")
    return Column(column, _sh(script), min_warmup=JVM_WARMUP_S)


BEAST_MISSING = ("n/a: Boost.Beast needs g++, Boost's headers (apt-get install libboost1.81-dev) and its peer source "
                 "(WEFT_WS_PEER_DIR=<dir of beast_echo.cc and node_ws_echo.js>)")
NODE_WS_MISSING = ("n/a: node's ws needs node and its ws module (apt-get install nodejs node-ws) and its peer source "
                   "(WEFT_WS_PEER_DIR=<dir of beast_echo.cc and node_ws_echo.js>)")
NODE_MODULES = "/usr/share/nodejs"


def ws_peer_dir():
    """Where the WebSocket peers' sources are: $WEFT_WS_PEER_DIR, else shared/peers/ws beside the source
    tree; None when neither has them."""
    here = os.path.dirname(os.path.abspath(__file__))
    for d in (os.environ.get("WEFT_WS_PEER_DIR"), os.path.join(here, "..", "..", "..", "..", "shared", "peers", "ws")):
        if d and os.path.exists(os.path.join(d, "beast_echo.cc")):
            return os.path.abspath(d)
    return None


def beast_ws_binary():
    """Where the Beast peer is built: $WEFT_WS_PEER_OUT, else $TMPDIR/weft-peer-ws (shared/peers/serve-peer.sh's
    place), so that one build serves every run until its source changes."""
    out = os.environ.get("WEFT_WS_PEER_OUT") or os.path.join(os.environ.get("TMPDIR", "/tmp"), "weft-peer-ws")
    return os.path.join(out, "beast-ws-echo")


def _source_digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def beast_ws_built():
    """Whether the Beast peer's binary is built from its current source. Decided by the source's digest,
    stamped beside the binary when it was built, not by mtimes: a fresh checkout of the peers' sources is
    newer than every binary without changing a byte. A binary without a stamp (shared/peers/ws/build.sh's)
    counts when it is newer than its source."""
    src, binary = ws_peer_dir(), beast_ws_binary()
    if src is None or not os.access(binary, os.X_OK):
        return False
    source = os.path.join(src, "beast_echo.cc")
    try:
        with open(binary + ".sha256") as f:
            return f.read().strip() == _source_digest(source)
    except OSError:
        return os.path.getmtime(binary) > os.path.getmtime(source)


def beast_ws(column, deflate=False):
    """Boost.Beast's WebSocket echo (shared/peers/ws/beast_echo.cc, compiled when its binary is not built from
    the current source: about two minutes of g++, which its start waits for), one thread, echoing every
    message at any path; permessage-deflate accepted when `deflate`."""
    from .suites import Column
    src = ws_peer_dir()
    gxx = shutil.which("g++")
    if src is None or gxx is None or not os.path.exists("/usr/include/boost/beast.hpp"):
        return Column(column, [], note=BEAST_MISSING)
    binary = beast_ws_binary()
    exe = shlex.quote(binary)
    run = f"exec {exe} {{port}}{' deflate' if deflate else ''}"
    if beast_ws_built():
        return Column(column, _sh(run))
    source = os.path.join(src, "beast_echo.cc")
    out, stamp = shlex.quote(os.path.dirname(binary)), shlex.quote(binary + ".sha256")
    build = (f"mkdir -p {out} && {gxx} -std=c++20 -O2 -DNDEBUG -o {exe}.$$ {shlex.quote(source)} -lpthread "
             f"&& mv {exe}.$$ {exe} && echo {_source_digest(source)} > {stamp} || exit 1\n")
    return Column(column, _sh(build + run), start_timeout=BUILD_START_TIMEOUT_S)


def node_ws(column, deflate=False):
    """node's ws WebSocket echo (shared/peers/ws/node_ws_echo.js), one thread; permessage-deflate accepted when
    `deflate`. Warmed up like a JVM: V8 compiles the hot path in the first seconds."""
    from .suites import Column
    src = ws_peer_dir()
    node = shutil.which("node") or shutil.which("nodejs")
    if src is None or node is None or not os.path.exists(os.path.join(NODE_MODULES, "ws")):
        return Column(column, [], note=NODE_WS_MISSING)
    script = (f"NODE_PATH={NODE_MODULES} exec {node} {shlex.quote(os.path.join(src, 'node_ws_echo.js'))} "
              f"{{port}}{' deflate' if deflate else ''}")
    return Column(column, _sh(script), min_warmup=JVM_WARMUP_S)


def installed(ctx, suite, cert=None, key=None):
    """The installed peers' columns for `suite` (a note for each one missing), less those given by --peer
    under the same name, and none when ctx.installed_peers is off."""
    if not ctx.installed_peers:
        return []
    n = ctx.server_cpus
    make = {
        "tfb": lambda: [nginx("nginx", n), h2o("h2o", n), netty("netty", "HelloServer", f"{{port}} {n}")],
        "echo": lambda: [netty("netty", "EchoServer", f"{{port}} {{ports}} {n}")],
        "h2": lambda: [nginx("nginx", n, " http2"), h2o("h2o", n)],
        "tls": lambda: [nginx("nginx", n, " ssl http2", cert, key), h2o("h2o", n, cert, key)],
        "scaling": lambda: [nginx("nginx")],
        "ws": lambda: [beast_ws("beast-ws"), node_ws("node-ws")],
    }.get(suite)
    if make is None:
        return []
    given = {name for name, _ in ctx.peers.get(suite, [])}
    return [c for c in make() if c.name not in given]
