#!/usr/bin/env bash
# The README's main command: install the Debian packages, build (Release) and
# run the main job on the built-in data.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release
exec ./build/trainscope train --model small --steps 50 --summary out/main-summary.json "$@"
