#!/usr/bin/env bash
# The README's first command: install what is missing, build, and run the main
# job on a shipped example (scripts/demo.sh: verify, prove, transform and run
# examples/matmul.tsr).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
[ -f build/build.ninja ] || meson setup build
ninja -C build
scripts/demo.sh
