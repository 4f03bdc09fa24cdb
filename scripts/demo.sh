#!/usr/bin/env bash
# tessera's main job on a shipped kernel: verify it, then run it.
set -euo pipefail
cd "$(dirname "$0")/.."
T=build/tools/tessera
echo "== tessera verify examples/matmul.tsr"
$T verify examples/matmul.tsr
if $T run --help >/dev/null 2>&1; then
  echo "== tessera run examples/matmul.tsr --random-inputs 0"
  $T run examples/matmul.tsr --random-inputs 0
fi
