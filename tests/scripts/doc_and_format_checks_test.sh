#!/usr/bin/env bash
# scripts/check-docs.sh and scripts/check-format.sh, the CI checks of issue
# 37, fail on what they are for and pass on this tree: a README of 201
# lines, a date in README or METRICS, a source file clang-format would
# change.
set -euo pipefail
src=${1:?usage: doc_and_format_checks_test.sh SOURCE_DIR}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$src/scripts/check-docs.sh" "$src" >/dev/null || fail "this tree's README and METRICS are refused"

mkdir -p "$tmp/docs/docs"
cp "$src/docs/METRICS.md" "$tmp/docs/docs/METRICS.md"
seq 1 201 > "$tmp/docs/README.md"
out=$("$src/scripts/check-docs.sh" "$tmp/docs" 2>&1) && fail "a 201-line README passed"
[[ $out == *"README.md has 201 lines, at most 200"* ]] || fail "no line count: $out"
seq 1 200 > "$tmp/docs/README.md"
"$src/scripts/check-docs.sh" "$tmp/docs" >/dev/null || fail "a 200-line README was refused"
for dated in "measured 2026-11-26 on the VM" "on 26 Nov 2026 it took 4 min" "(November 2026)"; do
  echo "$dated" >> "$tmp/docs/docs/METRICS.md"
  out=$("$src/scripts/check-docs.sh" "$tmp/docs" 2>&1) && fail "METRICS with '$dated' passed"
  [[ $out == *"docs/METRICS.md:"*"a date"* ]] || fail "the date is not named: $out"
  cp "$src/docs/METRICS.md" "$tmp/docs/docs/METRICS.md"
done
seq 1 199 > "$tmp/docs/README.md"
echo "step 2026 of 3000, version 20.26-11, Decoder 2048" >> "$tmp/docs/README.md"
"$src/scripts/check-docs.sh" "$tmp/docs" >/dev/null || fail "numbers that are no date were refused"

command -v clang-format >/dev/null || { echo "SKIP format half: no clang-format"; exit 0; }
repo=$tmp/repo
mkdir -p "$repo/scripts"
cp "$src/scripts/check-format.sh" "$repo/scripts/"
cp "$src/.clang-format" "$repo/"
cd "$repo"
git init -q && git config user.email t@t && git config user.name t
printf 'int f() { return 1; }\n' > good.cpp
git add -A && git commit -qm base
printf 'int  g( ) {return 2;}\n' > bad.cpp
git add bad.cpp && git commit -qm bad
out=$(scripts/check-format.sh 2>&1) && fail "an unformatted file passed"
[[ $out == *"bad.cpp is not formatted"* ]] || fail "the file is not named: $out"
clang-format -i bad.cpp && git commit -qam fixed
scripts/check-format.sh >/dev/null || fail "a formatted change was refused"
echo "doc and format checks: ok"
