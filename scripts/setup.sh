#!/usr/bin/env bash
# The README's first command: install what is missing, build, and run the main
# job on a shipped example (scripts/demo.sh: verify, prove, transform and run
# examples/matmul.tsr).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# llvm19.ini points meson at LLVM 19's llvm-config (Debian's llvm-config is LLVM 14).
[ -f build/build.ninja ] || meson setup build --native-file llvm19.ini
ninja -C build
scripts/demo.sh
