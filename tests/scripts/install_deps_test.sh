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
echo "install-deps quiet: ok"
