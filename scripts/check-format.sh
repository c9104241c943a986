#!/usr/bin/env bash
# Fails when a C++ line changed since the format's base commit (.clang-format-base) is not formatted
# as .clang-format says. Only changed lines: reformatting the whole tree would hide its history.
# Fix: git clang-format $(cat .clang-format-base). Exit 77 (skipped) in a clone without that commit.
set -euo pipefail
cd "$(dirname "$0")/.."
base=$(cat .clang-format-base)
if ! git cat-file -e "$base^{commit}" 2>/dev/null; then
  echo "check-format: the base commit $base is not in this clone's history; not checked"
  exit 77
fi
formatter=$(command -v clang-format-14 || command -v clang-format)
out=$(git clang-format --binary "$formatter" --diff --extensions cc,h "$base" -- src include tests tools examples 2>&1 || true)
if grep -q '^diff --git' <<<"$out"; then
  echo "$out"
  echo "check-format: lines changed since $base are not formatted; run: git clang-format $base"
  exit 1
fi
echo "check-format: the lines changed since $base are formatted"
