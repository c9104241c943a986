#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/*_fuzz.cc) with clang in build/fuzz and runs each one
# for SECONDS (default 20), starting from its seed corpus in tests/fuzz/corpus/<name>/.
# New inputs go to build/fuzz/corpus/<name>/; a crash leaves build/fuzz/crash-* and fails the run.
#
#   scripts/run-fuzz.sh [SECONDS]
set -euo pipefail

seconds="${1:-20}"
cd "$(dirname "$0")/.."
build="${WEFT_FUZZ_BUILD_DIR:-build/fuzz}"

cmake -S . -B "$build" -G Ninja \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DWEFT_FUZZ=ON -DWEFT_BUILD_TESTS=OFF -DWEFT_BUILD_EXAMPLES=OFF -DWEFT_BUILD_BENCHMARKS=OFF -DWEFT_BUILD_TOOLS=OFF >/dev/null
ninja -C "$build" -j2 $(cd tests/fuzz && ls *_fuzz.cc | sed 's/_fuzz\.cc$//; s/^/fuzz_/')

status=0
for seeds in tests/fuzz/corpus/*/; do
  name="$(basename "$seeds")"
  target="$build/bin/fuzz_$name"
  [ -x "$target" ] || { echo "run-fuzz: no target for corpus $name" >&2; status=1; continue; }
  work="$build/corpus/$name"
  mkdir -p "$work"
  echo "run-fuzz: $name for ${seconds}s"
  dict=()
  [ -f "tests/fuzz/$name.dict" ] && dict=(-dict="../../tests/fuzz/$name.dict")
  if ! (cd "$build" && "../../$target" "${dict[@]}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
          -print_final_stats=1 "../../$work" "../../$seeds" 2>&1 | tail -n 15); then
    status=1
  fi
done
exit $status
