#!/usr/bin/env bash
# The README's main command: install the Debian packages, build (Release), run
# the default suite on the built-in story corpus (seed model: one machine of
# one core vs two virtual hosts of one core each, skipped without root, vs 2
# ranks on this box; duplicated vs sharded data; per-tensor vs fused vs
# overlapped gradient reductions), and write the comparison report.
#
#   ./scripts/main.sh                 # results in out/results.db, report in out/report.html
#   ./scripts/main.sh --suite smoke   # a quicker suite
set -euo pipefail
cd "$(dirname "$0")/.."
suite=default
while [[ $# -gt 0 ]]; do
  case $1 in
    --suite) [[ $# -ge 2 ]] || { echo "main.sh: --suite needs a suite name" >&2; exit 2; }
             suite=$2; shift 2 ;;
    *) echo "main.sh: unknown argument '$1' (usage: main.sh [--suite NAME])" >&2; exit 2 ;;
  esac
done
# What the build and the suite need; test.sh installs the tests' packages too.
./scripts/install-deps.sh --main
cmake --preset release >/dev/null
# Only the program the suite runs: the tests and benchmarks are test.sh's.
cmake --build --preset release --target trainscope
mkdir -p out
# A failing case is recorded and the suite goes on; report what ran either way.
status=0
./build/trainscope suite run "$suite" --db out/results.db || status=$?
./build/trainscope report --db out/results.db --out out/report.html
./build/trainscope report --db out/results.db --format md
echo
echo "results database: out/results.db   report: out/report.html"
exit "$status"
