#!/usr/bin/env bash
# scripts/install-deps.sh prints a line a step and keeps apt's output in its
# log (issue 37: apt printed thousands of lines first), and a failing step
# says so with the log's tail and exits with apt's code. apt-get and
# dpkg-query are stand-ins here: nothing is installed.
set -euo pipefail
src=${1:?usage: install_deps_test.sh SOURCE_DIR}
[[ $(id -u) -eq 0 ]] || { echo "SKIP: install-deps.sh runs as root (it would sudo)"; exit 0; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
mkdir -p "$tmp/bin"
cat > "$tmp/bin/dpkg-query" <<'SH'
#!/bin/sh
exit 1
SH
cat > "$tmp/bin/apt-get" <<'SH'
#!/bin/sh
[ -n "$ARGS_LOG" ] && echo "$*" >> "$ARGS_LOG"
for i in $(seq 1 3000); do echo "Get:$i http://deb.example/debian bookworm/main pkg$i"; done
case " $* " in *" --download-only "*) [ -n "$APT_FAIL" ] && { echo "E: Unable to fetch" >&2; exit 100; } ;; esac
exit 0
SH
chmod +x "$tmp/bin/"*
out=$(PATH="$tmp/bin:$PATH" TRAINSCOPE_INSTALL_LOG="$tmp/log" "$src/scripts/install-deps.sh" 2>&1) ||
  fail "install-deps.sh failed: $out"
lines=$(printf '%s\n' "$out" | wc -l)
(( lines <= 6 )) || fail "$lines lines on the terminal: $out"
[[ $out == *"installing"*"done"* ]] || fail "no step line: $out"
(( $(grep -c '^Get:' "$tmp/log") == 9000 )) || fail "apt's output is not all in the log"
out=$(APT_FAIL=1 PATH="$tmp/bin:$PATH" TRAINSCOPE_INSTALL_LOG="$tmp/log" \
      "$src/scripts/install-deps.sh" 2>&1) && fail "a failed download passed"
[[ $out == *"downloading"*"failed (exit 100)"* ]] || fail "the failed step is not said: $out"
[[ $out == *"E: Unable to fetch"* && $out == *"$tmp/log"* ]] || fail "no tail or log path: $out"
# --main (scripts/main.sh) installs what the build and the suites need, not
# the tests' and the peers' packages, which are half the download.
PATH="$tmp/bin:$PATH" TRAINSCOPE_INSTALL_LOG="$tmp/log" ARGS_LOG="$tmp/main-args" \
  "$src/scripts/install-deps.sh" --main >/dev/null 2>&1 || fail "install-deps.sh --main failed"
grep -q -- "--download-only .*libopenmpi-dev" "$tmp/main-args" || fail "--main: no MPI asked for"
grep -q -- "gnuplot-nox" "$tmp/main-args" || fail "--main: no gnuplot asked for"
! grep -qE -- "chromium|python3-torch|valgrind" "$tmp/main-args" ||
  fail "--main asked for the tests' packages: $(cat "$tmp/main-args")"
PATH="$tmp/bin:$PATH" TRAINSCOPE_INSTALL_LOG="$tmp/log" ARGS_LOG="$tmp/all-args" \
  "$src/scripts/install-deps.sh" >/dev/null 2>&1 || fail "install-deps.sh failed"
grep -q -- "--download-only .*chromium.*python3-torch" "$tmp/all-args" ||
  fail "without --main the tests' packages are not asked for: $(cat "$tmp/all-args")"
out=$("$src/scripts/install-deps.sh" --bogus 2>&1) && fail "an unknown argument passed"
[[ $out == *"unknown argument '--bogus'"* ]] || fail "the unknown argument is not named: $out"
echo "install-deps quiet: ok"
