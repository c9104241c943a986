#!/usr/bin/env bash
# The packaging test: weft used the ways README.md's "Using weft in your project" describes.
#
#   scripts/test-packaging.sh [BUILD_DIR]     (default build/release; `make test-packaging` builds it first)
#
# Reuses BUILD_DIR's build (nothing of weft is recompiled except for the add_subdirectory case):
#   1. docs:      the API reference builds without one Doxygen warning (and a probe header with an
#                 undocumented function does fail the same check)
#   2. install:   cmake --install into a scratch prefix; the files and the CMake package are there and
#                 name no path of the source or build tree; nothing of it needs libnghttp2 (a test
#                 peer and weft-load's, not the library's)
#   3. find_package(weft CONFIG REQUIRED): examples/consumer builds against the prefix, without
#                 libnghttp2, and runs; a request for another minor version is refused
#   4. pkg-config --cflags --libs weft: the consumer's sources build with those flags alone and run
#   5. .deb:      cpack -G DEB makes libweft-dev and weft-tools with their Debian dependencies;
#                 dpkg -x into a scratch root; the consumer builds against it and runs; the tools run
#   6. add_subdirectory: the consumer builds weft from source as a subproject, with tests, tools,
#                 examples and benchmarks off, without GTest, CLI11, Python or libnghttp2, and runs
# "Runs" means: each server starts on a free port below 32768 on 127.0.0.1 and answers a request
# (an echo round trip, an HTTP GET), then is stopped. Waits are bounded polls, never fixed sleeps.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
src=$(pwd)
build=$(realpath -m "${1:-build/release}")
jobs=${WEFT_JOBS:-2}
start_time=$SECONDS

fail() { echo "test-packaging: FAIL: $*" >&2; exit 1; }
step() { echo "== test-packaging [$((SECONDS - start_time))s]: $*"; }
checks=0
ok() { checks=$((checks + 1)); echo "   ok: $*"; }

[ -f "$build/CMakeCache.txt" ] || fail "no configured build in $build (make test-packaging configures and builds it)"
[ -f "$build/lib/libweft.a" ] || [ -n "$(ls "$build"/lib/libweft.so* 2>/dev/null)" ] ||
  fail "$build has no libweft: build it first"
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
[ -n "$version" ] || fail "no project version in $build/CMakeCache.txt"
for tool in cmake ninja pkg-config g++ python3 cpack dpkg-deb dpkg doxygen; do
  command -v "$tool" >/dev/null || fail "$tool is missing (scripts/install-deps.sh installs it)"
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/weft-packaging.XXXXXX")
server_pid=""
sub_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  if [ -n "$sub_pid" ]; then kill -- "-$sub_pid" 2>/dev/null || true; wait "$sub_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

# ---- running a consumer's servers ------------------------------------------------------------
# wait_and_check MODE PORT PID LOG: waits (bounded) until the server logged that it listens on PORT,
# then checks one exchange. Exit status: 0 ok, 2 the server died (e.g. the port was taken), 1 failure.
cat > "$tmp/check.py" <<'EOF'
import os, socket, sys, time, urllib.request

mode, port, pid, log = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
deadline = time.monotonic() + 30

def alive():
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False

needle = f"127.0.0.1:{port}"
while True:  # the server prints its address once it listens
    with open(log, errors="replace") as f:
        if needle in f.read():
            break
    if not alive():
        sys.exit(2)
    if time.monotonic() > deadline:
        print(f"check: no 'listening on {needle}' line within 30 s", file=sys.stderr)
        sys.exit(1)
    time.sleep(0.02)  # poll interval; the wait is bounded by the deadline

if mode == "echo":
    payload = b"weft packaging check %d\n" % os.getpid()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(payload)
        got = b""
        while len(got) < len(payload):
            chunk = s.recv(4096)
            if not chunk:
                break
            got += chunk
    if got != payload:
        print(f"check: echo sent {payload!r}, got {got!r}", file=sys.stderr)
        sys.exit(1)
else:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as r:
        body = r.read()
        if r.status != 200 or body != b"Hello, World!":
            print(f"check: GET / answered {r.status} {body!r}", file=sys.stderr)
            sys.exit(1)
EOF

# run_consumer DIR LABEL: starts DIR/echo_server and DIR/hello in turn, checks each, stops it.
run_consumer() {
  local dir=$1 label=$2 prog mode attempt port status
  for prog in echo_server hello; do
    mode=echo
    [ "$prog" = hello ] && mode=http
    [ -x "$dir/$prog" ] || fail "$label: $dir/$prog was not built"
    for attempt in 1 2 3 4 5; do
      port=$((20000 + RANDOM % 12000))
      "$dir/$prog" "$port" > "$tmp/server.log" 2>&1 &
      server_pid=$!
      status=0
      python3 "$tmp/check.py" "$mode" "$port" "$server_pid" "$tmp/server.log" || status=$?
      kill "$server_pid" 2>/dev/null || true
      wait "$server_pid" 2>/dev/null || true
      server_pid=""
      [ "$status" -ne 2 ] && break
      echo "   ($prog could not listen on $port: $(tail -n 1 "$tmp/server.log"); trying another port)"
    done
    [ "$status" -eq 0 ] || { cat "$tmp/server.log" >&2; fail "$label: $prog on 127.0.0.1:$port did not answer as expected"; }
    ok "$label: $prog answered on 127.0.0.1:$port"
  done
}

# build_consumer BUILD_DIR LABEL CMAKE_ARGS...: configures and builds examples/consumer.
build_consumer() {
  local dir=$1 label=$2
  shift 2
  cmake -S "$src/examples/consumer" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" > "$dir.configure.log" 2>&1 ||
    { cat "$dir.configure.log" >&2; fail "$label: configuring examples/consumer failed"; }
  cmake --build "$dir" -j "$jobs" > "$dir.build.log" 2>&1 ||
    { tail -n 40 "$dir.build.log" >&2; fail "$label: building examples/consumer failed"; }
  ok "$label: examples/consumer configured and built"
}

# ---- 6 (started first). add_subdirectory --------------------------------------------------------
# The subproject compiles weft's sources, the one long step: it runs in the background (its own
# process group) while steps 1-5 run, and step 6 waits for it and checks it. Only the library's own
# dependencies may be needed: GTest, benchmark and Python may not be looked for, and the CLI11 lookup
# may not run (it would leave WEFT_CLI11_INCLUDE in the cache).
setsid bash -c '
  cmake -S "$1/examples/consumer" -B "$2" -G Ninja -DWEFT_SOURCE_DIR="$1" \
    -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0 -DWEFT_UNITY_BUILD=ON \
    -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON -DCMAKE_DISABLE_FIND_PACKAGE_benchmark=ON \
    -DCMAKE_DISABLE_FIND_PACKAGE_Python3=ON > "$2.configure.log" 2>&1 || exit 10
  cmake --build "$2" -j "$3" > "$2.build.log" 2>&1 || exit 11
' sub-build "$src" "$tmp/sub" "$jobs" &
sub_pid=$!

# ---- 1. docs ---------------------------------------------------------------------------------
step "docs (Doxygen, no warnings)"
cmake --build "$build" --target docs > "$tmp/docs.log" 2>&1 || { cat "$tmp/docs.log" >&2; fail "docs: the API reference has warnings"; }
[ -f "$build/docs/html/index.html" ] || fail "docs: no $build/docs/html/index.html"
grep -q "Thread-safe" "$build/docs/html/classweft_1_1EventLoopGroup.html" ||
  fail "docs: EventLoopGroup's page does not show its methods' thread contract"
ok "docs: built without warnings; EventLoopGroup's page states its thread contract"
# The same check must fail on an undocumented public name.
mkdir -p "$tmp/probe"
printf '#pragma once\n/// @file\n/// A probe.\nnamespace weft {\nint undocumented_probe_function();\n}\n' > "$tmp/probe/probe.h"
{ cat "$build/docs/Doxyfile"
  echo "INPUT = $tmp/probe/probe.h"
  echo "USE_MDFILE_AS_MAINPAGE ="
  echo "OUTPUT_DIRECTORY = $tmp/probe/out"
  echo "WARN_LOGFILE = $tmp/probe/warnings.log"; } > "$tmp/probe/Doxyfile"
if cmake -DDOXYGEN="$(command -v doxygen)" -DDOXYFILE="$tmp/probe/Doxyfile" -DLOG="$tmp/probe/warnings.log" \
     -P "$src/cmake/run-doxygen.cmake" > "$tmp/probe/run.log" 2>&1; then
  fail "docs: the warning check passed a header with an undocumented function"
fi
grep -q "undocumented_probe_function" "$tmp/probe/warnings.log" || fail "docs: the probe's warning does not name its function"
ok "docs: the check fails on an undocumented function"

# ---- 2. install ------------------------------------------------------------------------------
step "cmake --install $build --prefix <scratch>"
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" > "$tmp/install.log" 2>&1 || { cat "$tmp/install.log" >&2; fail "install failed"; }
libdir=lib
[ -d "$prefix/lib" ] || fail "install: no $prefix/lib"
for f in include/weft/weft.h include/weft/version.h include/weft/channel/pipeline.h \
         lib/cmake/weft/weftConfig.cmake lib/cmake/weft/weftConfigVersion.cmake \
         lib/cmake/weft/weft-core-targets.cmake lib/cmake/weft/weftUring.cmake lib/cmake/weft/weftCares.cmake lib/pkgconfig/weft.pc \
         lib/cmake/weft/weftGrpcGenerate.cmake bin/protoc-gen-weft bin/weft-load bin/weft-bench bin/weft-hello bin/weft-echo-server bin/weft-grpc-bench-server \
         share/weft/bench/weft_bench/cli.py; do
  [ -e "$prefix/$f" ] || fail "install: $f is missing"
done
[ -f "$prefix/$libdir/libweft.a" ] || [ -n "$(ls "$prefix/$libdir"/libweft.so.* 2>/dev/null)" ] || fail "install: no libweft"
grep -q "#define WEFT_VERSION_STRING \"$version\"" "$prefix/include/weft/version.h" || fail "install: version.h does not say $version"
if grep -rl -e "$src" -e "$build" "$prefix/lib/cmake" "$prefix/lib/pkgconfig"; then
  fail "install: the CMake package or weft.pc names the source or build tree (files above)"
fi
"$prefix/bin/weft-bench" --help > /dev/null || fail "install: weft-bench --help failed"
"$prefix/bin/weft-load" --help > /dev/null || fail "install: weft-load --help failed"
"$prefix/bin/weft-grpc-bench-server" --help > /dev/null || fail "install: weft-grpc-bench-server --help failed"
ok "install: library, headers, CMake package, weft.pc and tools in place, relocatable; the tools start"
# libweft's HTTP/2 engine is its own: the library, its CMake package and weft.pc do not name libnghttp2.
[ ! -e "$prefix/lib/cmake/weft/weftNghttp2.cmake" ] || fail "install: weftNghttp2.cmake is installed"
if grep -rl "nghttp2" "$prefix/lib/cmake/weft" "$prefix/lib/pkgconfig/weft.pc"; then
  fail "install: the CMake package or weft.pc names libnghttp2 (files above)"
fi
undefined=$( { nm -u "$prefix/$libdir"/libweft.a; nm -D -u "$prefix/$libdir"/libweft.so.*; } 2>/dev/null || true)
if grep -q "nghttp2_" <<< "$undefined"; then fail "install: libweft uses libnghttp2's symbols"; fi
ok "install: libweft, its CMake package and weft.pc need no libnghttp2"

# ---- 3. find_package -------------------------------------------------------------------------
step "find_package(weft CONFIG REQUIRED) against the prefix"
# This consumer also generates a gRPC service and its stub with the installed protoc-gen-weft.
build_consumer "$tmp/find" "find_package" -DCMAKE_PREFIX_PATH="$prefix" -DWEFT_CONSUMER_GRPC=ON
grep -q -- "$prefix/bin/protoc-gen-weft" "$tmp/find/build.ninja" ||
  fail "find_package: weft_grpc_generate did not run the installed protoc-gen-weft"
"$tmp/find/grpc_ping" > "$tmp/grpc_ping.log" 2>&1 || { cat "$tmp/grpc_ping.log" >&2; fail "find_package: grpc_ping failed"; }
ok "find_package: weft_grpc_generate made ping.proto's service and stub; $(cat "$tmp/grpc_ping.log")"
grep -q "weft $version from $prefix/lib/cmake/weft" "$tmp/find.configure.log" || fail "find_package: weft was not found in the prefix"
if grep -q -- "-I$src/include" "$tmp/find/build.ninja"; then fail "find_package: the consumer compiled against the source tree"; fi
grep -q -- "-luring\|liburing" "$tmp/find/build.ninja" || [ -n "$(ls "$prefix/$libdir"/libweft.so.* 2>/dev/null)" ] ||
  fail "find_package: a static libweft's consumer does not link liburing"
if grep -q -- "-lnghttp2\|libnghttp2" "$tmp/find/build.ninja"; then fail "find_package: the consumer links libnghttp2"; fi
run_consumer "$tmp/find" "find_package"
mkdir -p "$tmp/wrong-version"
cat > "$tmp/wrong-version/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.25)
project(wrong_version LANGUAGES CXX)
find_package(weft ${WANTED} CONFIG REQUIRED)
EOF
major=${version%%.*}
minor=${version#*.}; minor=${minor%%.*}
wanted="$major.$((minor + 1))"
if cmake -S "$tmp/wrong-version" -B "$tmp/wrong-version/build" -DWANTED="$wanted" -DCMAKE_PREFIX_PATH="$prefix" \
     > "$tmp/wrong-version.log" 2>&1; then
  fail "find_package: weft $version was accepted for a request of $wanted"
fi
grep -q "$version" "$tmp/wrong-version.log" || fail "find_package: the refusal does not name the version found"
ok "find_package: weft $version refused for a request of $wanted"

# ---- 4. pkg-config ---------------------------------------------------------------------------
step "pkg-config --cflags --libs weft"
export PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig"
[ "$(pkg-config --modversion weft)" = "$version" ] || fail "pkg-config: weft's version is not $version"
flags=$(pkg-config --cflags --libs weft)
echo "   flags: $flags"
mkdir -p "$tmp/pc"
pc_pids=()
for prog in echo_server hello; do
  g++ -std=c++20 -O2 "$src/examples/consumer/$prog.cc" $flags -o "$tmp/pc/$prog" > "$tmp/pc/$prog.log" 2>&1 &
  pc_pids+=($!)
done
for i in "${!pc_pids[@]}"; do
  wait "${pc_pids[$i]}" || { cat "$tmp/pc/"*.log >&2; fail "pkg-config: the consumer does not build with pkg-config's flags alone"; }
done
unset PKG_CONFIG_PATH
ok "pkg-config: the consumer built with g++ and pkg-config's flags alone"
run_consumer "$tmp/pc" "pkg-config"

# ---- 5. Debian packages ----------------------------------------------------------------------
step "cpack -G DEB, dpkg -x into a scratch root"
cpack -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/deb" > "$tmp/cpack.log" 2>&1 || { cat "$tmp/cpack.log" >&2; fail "cpack failed"; }
arch=$(dpkg --print-architecture)
dev_deb="$tmp/deb/libweft-dev_${version}_${arch}.deb"
tools_deb="$tmp/deb/weft-tools_${version}_${arch}.deb"
[ -f "$dev_deb" ] || { ls "$tmp/deb" >&2; fail "deb: no libweft-dev_${version}_${arch}.deb"; }
[ -f "$tools_deb" ] || { ls "$tmp/deb" >&2; fail "deb: no weft-tools_${version}_${arch}.deb"; }
dev_depends=$(dpkg-deb -f "$dev_deb" Depends)
tools_depends=$(dpkg-deb -f "$tools_deb" Depends)
echo "   libweft-dev Depends: $dev_depends"
echo "   weft-tools Depends:  $tools_depends"
for dep in libfmt-dev liburing-dev libssl-dev zlib1g-dev; do
  [[ "$dev_depends" == *"$dep"* ]] || fail "deb: libweft-dev does not depend on $dep"
done
[[ "$dev_depends" != *nghttp2* ]] || fail "deb: libweft-dev depends on libnghttp2"
for dep in libfmt9 liburing2 libnghttp2-14 libssl3 zlib1g libc6 libstdc++6 python3; do
  [[ "$tools_depends" == *"$dep"* ]] || fail "deb: weft-tools does not depend on $dep"
done
dev_files=$(dpkg-deb -c "$dev_deb")
tools_files=$(dpkg-deb -c "$tools_deb")
for f in ./usr/include/weft/weft.h ./usr/include/weft/version.h ./usr/lib/cmake/weft/weftConfig.cmake \
         ./usr/lib/cmake/weft/weftGrpcGenerate.cmake ./usr/lib/pkgconfig/weft.pc; do
  grep -q " $f\$" <<< "$dev_files" || fail "deb: libweft-dev lacks $f"
done
grep -qE " \./usr/lib/libweft\.(a|so)" <<< "$dev_files" || fail "deb: libweft-dev lacks the library"
for f in ./usr/bin/weft-load ./usr/bin/protoc-gen-weft ./usr/bin/weft-hello ./usr/bin/weft-grpc-bench-server ./usr/share/weft/bench/weft_bench/cli.py; do
  grep -q " $f\$" <<< "$tools_files" || fail "deb: weft-tools lacks $f"
done
grep -q " \./usr/bin/weft-bench -> " <<< "$tools_files" || fail "deb: weft-tools lacks the weft-bench link"
if grep -q "/usr/bin/" <<< "$dev_files"; then fail "deb: libweft-dev holds programs"; fi
if grep -q "/usr/include/" <<< "$tools_files"; then fail "deb: weft-tools holds headers"; fi
ok "deb: libweft-dev and weft-tools with their files and Debian dependencies"
root=$tmp/root
dpkg -x "$dev_deb" "$root"
dpkg -x "$tools_deb" "$root"
"$root/usr/bin/weft-bench" --help > /dev/null || fail "deb: the extracted weft-bench does not start"
"$root/usr/bin/weft-load" --help > /dev/null || fail "deb: the extracted weft-load does not start"
"$root/usr/bin/weft-grpc-bench-server" --help > /dev/null || fail "deb: the extracted weft-grpc-bench-server does not start"
build_consumer "$tmp/debroot" "deb" -DCMAKE_PREFIX_PATH="$root/usr"
grep -q "weft $version from $root/usr/lib/cmake/weft" "$tmp/debroot.configure.log" || fail "deb: weft was not found in the extracted root"
run_consumer "$tmp/debroot" "deb"

# ---- 6. add_subdirectory: the checks ---------------------------------------------------------
step "add_subdirectory: weft built from source as a subproject (started at the beginning)"
sub_status=0
wait "$sub_pid" || sub_status=$?
sub_pid=""
case $sub_status in
  0) ok "add_subdirectory: examples/consumer configured and built" ;;
  10) cat "$tmp/sub.configure.log" >&2; fail "add_subdirectory: configuring examples/consumer failed" ;;
  11) tail -n 40 "$tmp/sub.build.log" >&2; fail "add_subdirectory: building examples/consumer failed" ;;
  *) fail "add_subdirectory: the background build ended with status $sub_status" ;;
esac
cache=$tmp/sub/CMakeCache.txt
for option in WEFT_BUILD_TESTS WEFT_BUILD_EXAMPLES WEFT_BUILD_TOOLS WEFT_BUILD_BENCHMARKS WEFT_INSTALL; do
  grep -q "^$option:BOOL=OFF\$" "$cache" || fail "add_subdirectory: $option is not OFF in a subproject"
done
if grep -q "^WEFT_CLI11_INCLUDE" "$cache"; then fail "add_subdirectory: the CLI11 lookup ran"; fi
if grep -q "^GTest_DIR\|^benchmark_DIR" "$cache"; then fail "add_subdirectory: GTest or benchmark was looked for"; fi
if grep -q "^WEFT_NGHTTP2" "$cache"; then fail "add_subdirectory: libnghttp2 was looked for"; fi
if ninja -C "$tmp/sub" -t targets all | grep -qE "^(weft-load|weft-hello|weft_core_tests)[.:]"; then
  fail "add_subdirectory: tools, examples or tests were configured"
fi
leftovers=$(find "$tmp/sub" -name 'weft-bench*' -o -name 'install-links')
[ -z "$leftovers" ] || fail "add_subdirectory: weft left files in the consumer's tree: $leftovers"
ok "add_subdirectory: only the library, no GTest/CLI11/benchmark/Python/libnghttp2, nothing dropped into the consumer's tree"
run_consumer "$tmp/sub" "add_subdirectory"

echo "test-packaging: done in $((SECONDS - start_time)) s"
echo "packaging: $checks passed, 0 failed"
