#!/usr/bin/env bash
# `make test` (and so CI, through .ci/run): every check, phase by phase, then a table of the time each
# phase took and the slowest tests of each preset (scripts/ci-report.py), printed also when a phase fails.
#
#   scripts/ci.sh
#
# Phases: deps; for each preset (release, asan, tsan) configure, build, test; packaging (with the docs
# check) right after the release tests, which it reuses; fuzz (the clang build, then each target).
# Environment:
#   WEFT_CI_PRESETS  the presets to run (default "release asan tsan"; packaging runs with release)
#   LABEL            run only the tests of one layer label (core, buffer, channel, ...)
#   FUZZ_SECONDS     seconds per libFuzzer target (default 6: a smoke run; scripts/run-fuzz.sh alone defaults to 20); WEFT_CI_FUZZ=0 skips the fuzz phases
# The parallelism of the tests is the test presets' (CMakePresets.json, execution.jobs). Every preset runs
# its tests as gtest shards here (WEFT_TEST_SHARDS; the release preset's default is a ctest test per gtest
# test): `ctest -R` then picks shards, and a failing test is named in its shard's output.
# The budget: a cold run (no build directory, no compiler cache) on a 2-core machine within 2,100 s.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

presets=${WEFT_CI_PRESETS:-release asan tsan}
fuzz_seconds=${FUZZ_SECONDS:-6}
out=build/ci
mkdir -p "$out"
phases=$out/phases.tsv
: > "$phases"
rm -f "$out"/*-junit.xml
ci_start=$SECONDS

report() {
  local status=$?
  python3 scripts/ci-report.py "$phases" "$out" "$((SECONDS - ci_start))" || true
  exit $status
}
trap report EXIT

# phase NAME COMMAND...: runs COMMAND, records its wall time and exit status; a failure ends the run.
phase() {
  local name=$1 start=$SECONDS status=0
  shift
  echo "== ci: $name"
  "$@" || status=$?
  printf '%s\t%s\t%s\n' "$name" "$((SECONDS - start))" "$status" >> "$phases"
  if [ "$status" -ne 0 ]; then
    echo "== ci: $name failed (exit $status)" >&2
    exit "$status"
  fi
}

# TSan (clang 14's, and gcc 12's) cannot map its shadow memory when the kernel uses more than 28 bits of mmap
# randomness: run the tsan tests without ASLR there.
tsan_wrap=()
if [ "$(cat /proc/sys/vm/mmap_rnd_bits 2>/dev/null || echo 28)" -gt 28 ] && command -v setarch >/dev/null; then
  tsan_wrap=(setarch "$(uname -m)" -R)
fi

run_tests() {
  local preset=$1 wrap=()
  [ "$preset" = tsan ] && wrap=("${tsan_wrap[@]}")
  "${wrap[@]}" ctest --preset "$preset" ${LABEL:+-L "$LABEL"} --output-junit "$PWD/$out/$preset-junit.xml"
}

phase deps bash scripts/install-deps.sh
for preset in $presets; do
  phase "$preset: configure" cmake --preset "$preset" -DWEFT_WERROR=ON -DWEFT_TEST_SHARDS=ON
  phase "$preset: build" cmake --build --preset "$preset"
  phase "$preset: test" run_tests "$preset"
  if [ "$preset" = release ]; then
    phase "packaging and docs" bash scripts/test-packaging.sh build/release
  fi
done
if [ "${WEFT_CI_FUZZ:-1}" != 0 ]; then
  phase "fuzz: build" bash scripts/run-fuzz.sh --build-only
  phase "fuzz: run" bash scripts/run-fuzz.sh "$fuzz_seconds"
fi
