#!/usr/bin/env bash
# Install the Debian packages weft needs to build and test, skipping those already installed.
# Works as root, or as a normal user with sudo.
# doxygen: `make docs`; dpkg-dev and file: `make package` (cpack's dpkg-shlibdeps); pkg-config and
# curl: scripts/test-packaging.sh. libnghttp2-dev: the HTTP/2 tests' peer and weft-load h2; nghttp2-client (h2load, nghttp)
# and python3-h2: the HTTP/2 interop and attack tests. python3-websockets, nodejs and node-ws, and
# libwebsockets-test-server (its test client): the WebSocket interop tests, both ways.
# libssl-dev: weft's TLS; openssl: the TLS
# interop tests (openssl s_client) and weft-bench's tls suite; nginx-light: the TLS client test against nginx.
# zlib1g-dev: gRPC message compression (gzip, deflate). libc-ares-dev: weft/dns's resolver;
# dnsmasq-base: the DNS server the resolver's tests run.
# haproxy: the rolling restart behind a load balancer (tests/integration/rolling_restart_test.cc).
# h2o: a peer weft-bench adds as a column (tools/bench/weft_bench/peers.py; make run).
# valgrind: weft-bench's grpc-ir suite (callgrind instruction counts) and scripts/callgrind-*.sh.
# clang-format: the test `format` (scripts/check-format.sh).
# libgrpc++-dev, protobuf-compiler-grpc, libprotobuf-dev, protobuf-compiler: the grpc++ reference peer
# (shared/peers/grpc) the gRPC interop test builds. libprotoc-dev: protoc-gen-weft, weft's protoc plugin.
# python3-grpcio: the gRPC health and reflection tests' Python clients (stubs from protoc and grpc_python_plugin).
# prometheus: promtool, which checks the /metrics text weft-hello's admin listener serves
# (tests/integration/hello_metrics_test.cc).
set -euo pipefail

PACKAGES=(
  build-essential
  cmake
  ninja-build
  g++
  clang
  clang-format
  libgtest-dev
  libgmock-dev
  libfmt-dev
  rapidjson-dev
  curl
  python3
  libbenchmark-dev
  libjemalloc-dev
  libmimalloc-dev
  libclang-rt-14-dev
  pkg-config
  libcli11-dev
  wrk
  chromium
  liburing-dev
  libnghttp2-dev
  nghttp2-client
  python3-h2
  python3-websockets
  nodejs
  node-ws
  libwebsockets-test-server
  libssl-dev
  zlib1g-dev
  libc-ares-dev
  dnsmasq-base
  haproxy
  h2o
  valgrind
  openssl
  nginx-light
  doxygen
  dpkg-dev
  file
  libgrpc++-dev
  protobuf-compiler-grpc
  python3-grpcio
  libprotobuf-dev
  libprotoc-dev
  protobuf-compiler
  prometheus
)

if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
  echo "install-deps: not a Debian/Ubuntu system (no dpkg-query/apt-get); install these yourself:" >&2
  echo "  ${PACKAGES[*]}" >&2
  exit 0
fi

missing=()
for pkg in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  if [[ "$status" != *"install ok installed"* ]]; then
    missing+=("$pkg")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#PACKAGES[@]} packages already installed"
  exit 0
fi

if [[ $(id -u) -eq 0 ]]; then
  SUDO=()
elif command -v sudo >/dev/null 2>&1; then
  SUDO=(sudo)
else
  echo "install-deps: missing packages (${missing[*]}), and not root and no sudo" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y --no-install-recommends "${missing[@]}"
