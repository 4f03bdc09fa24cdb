#!/usr/bin/env bash
# tessera's main job on a shipped kernel (examples/matmul.tsr, x @ y in 128x128
# blocks with k-accumulation): verify it, prove its index maps safe for every
# grid point, transform it (vmap then jvp, then discharge to a pure loop), and
# run it in the reference interpreter, writing the result as .npy.
set -euo pipefail
cd "$(dirname "$0")/.."
T=build/tools/tessera
K=examples/matmul.tsr
echo "== tessera verify $K"
$T verify $K
echo "== tessera prove $K"
$T prove $K
echo "== tessera opt $K --passes='vmap{axis_size=3},jvp,discharge,dce' --verify-each  (first lines)"
$T opt $K --passes='vmap{axis_size=3},jvp,discharge,dce' --verify-each | grep -m1 -A3 "func @main"
mkdir -p out
echo "== tessera run $K --random-inputs 0 --out out"
$T run $K --random-inputs 0 --out out
