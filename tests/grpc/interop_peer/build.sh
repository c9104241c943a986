#!/usr/bin/env bash
# Builds grpc++'s side of the interop suite into DIR (default ${TMPDIR:-/tmp}/weft-interop-peer):
# weft-interop-peer-server and weft-interop-peer-client, on grpc++'s generated code for
# examples/grpc_interop/protos (grpc.testing). Needs: apt-get install libgrpc++-dev
# protobuf-compiler-grpc libprotobuf-dev protobuf-compiler pkg-config
# Keeps binaries newer than their sources; callers building at once wait on DIR/.lock.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
protos=$(cd "$here/../../../examples/grpc_interop/protos" && pwd)
out=${1:-${TMPDIR:-/tmp}/weft-interop-peer}
mkdir -p "$out"
exec 9> "$out/.lock"
flock 9
up_to_date() {
  local p s
  for p in server client; do
    for s in "$here/$p.cc" "$here/build.sh" "$protos"/grpc/testing/*.proto; do
      [ "$out/weft-interop-peer-$p" -nt "$s" ] || return 1
    done
  done
}
up_to_date && exit 0
protoc -I "$protos" --cpp_out="$out" --grpc_out="$out" --plugin=protoc-gen-grpc="$(command -v grpc_cpp_plugin)" \
  "$protos"/grpc/testing/{empty,messages,test}.proto
cflags=$(pkg-config --cflags grpc++ protobuf)
libs=$(pkg-config --libs grpc++ protobuf)
compile() { g++ -std=c++17 -O1 -I "$out" $cflags -c -o "$2" "$1"; }
objects=()
for stem in empty messages test; do
  compile "$out/grpc/testing/$stem.pb.cc" "$out/$stem.pb.o"
  objects+=("$out/$stem.pb.o")
done
compile "$out/grpc/testing/test.grpc.pb.cc" "$out/test.grpc.pb.o"
objects+=("$out/test.grpc.pb.o")
for p in server client; do
  compile "$here/$p.cc" "$out/$p.o"
  g++ -o "$out/weft-interop-peer-$p.tmp" "$out/$p.o" "${objects[@]}" $libs -lpthread
  mv "$out/weft-interop-peer-$p.tmp" "$out/weft-interop-peer-$p"
done
