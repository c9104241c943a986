#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/*_fuzz.cc) with clang in build/fuzz and runs each one
# for SECONDS (default 20), starting from its seed corpus in tests/fuzz/corpus/<name>/, as many at
# once as there are cores (each target is one process on one core).
# New inputs go to build/fuzz/corpus/<name>/; a crash leaves build/fuzz/crash-* and fails the run.
#
#   scripts/run-fuzz.sh [SECONDS]
#   scripts/run-fuzz.sh --build-only     (configure and build the targets, run nothing)
set -euo pipefail

seconds="${1:-20}"
cd "$(dirname "$0")/.."
build="$(realpath -m "${WEFT_FUZZ_BUILD_DIR:-build/fuzz}")"
root=$PWD

# Only the library and the fuzz targets are built (the option turns the tests, tools, examples and
# benchmarks off); a unity build compiles the library in a few large translation units.
cmake -S . -B "$build" -G Ninja \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
  -DWEFT_FUZZ=ON -DWEFT_BUILD_TESTS=OFF -DWEFT_BUILD_EXAMPLES=OFF -DWEFT_BUILD_BENCHMARKS=OFF -DWEFT_BUILD_TOOLS=OFF >/dev/null
ninja -C "$build" -j"$(nproc)" $(cd tests/fuzz && ls *_fuzz.cc | sed 's/_fuzz\.cc$//; s/^/fuzz_/')
[ "$seconds" = --build-only ] && exit 0

# fuzz_one NAME: runs one target for $seconds; its output goes to $build/NAME.log.
fuzz_one() {
  local name=$1 seeds="$root/tests/fuzz/corpus/$1/" target="$build/bin/fuzz_$1" work="$build/corpus/$1" dict=()
  [ -x "$target" ] || { echo "run-fuzz: no target for corpus $name" > "$build/$name.log"; return 1; }
  mkdir -p "$work"
  [ -f "$root/tests/fuzz/$name.dict" ] && dict=(-dict="$root/tests/fuzz/$name.dict")
  (cd "$build" && "$target" "${dict[@]}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
     -print_final_stats=1 "$work" "$seeds") > "$build/$name.log" 2>&1
}

names=()
for seeds in tests/fuzz/corpus/*/; do names+=("$(basename "$seeds")"); done
status=0
running=()
slots=$(nproc)
for i in "${!names[@]}"; do
  echo "run-fuzz: ${names[$i]} for ${seconds}s"
  fuzz_one "${names[$i]}" &
  running+=("$!:${names[$i]}")
  # Past the cores, wait for the oldest before starting another.
  if ((${#running[@]} >= slots)) || ((i == ${#names[@]} - 1)); then
    for entry in "${running[@]}"; do
      if ! wait "${entry%%:*}"; then status=1; echo "run-fuzz: ${entry#*:} FAILED"; fi
      tail -n 15 "$build/${entry#*:}.log"
    done
    running=()
  fi
done
exit $status
