#!/usr/bin/env bash
# Emits every zoo kernel (examples/*.tsr) and every Mosaic test kernel
# (tests/backends/mosaic/*.tsr), TensorCore and SparseCore, with
# `tessera emit mosaic --checkable`, and the vjp of the TensorCore zoo kernels,
# and verifies each module with upstream MLIR:
#   mlir-opt-19 --allow-unregistered-dialect --split-input-file
#
#   check_examples.sh TESSERA MLIR_OPT ROOT
#
# Exit 77 (skip) without mlir-opt.
set -u
TESSERA=$(realpath "$1") MLIR_OPT=$2 ROOT=$3
if ! command -v "$MLIR_OPT" >/dev/null 2>&1; then
  echo "skipped: $MLIR_OPT not found (install mlir-19-tools): the emitted Mosaic text is not verified" >&2
  exit 77
fi
cd "$ROOT" || exit 2
passed=0 failed=0
# The vjp of the TensorCore zoo kernels too: transposed and checkpoint kernels, and
# the transposed DMAs of dma_pipeline.
vjps="add cumsum dma_pipeline flash_attention gather_rows layernorm matmul row_sum softmax train_step"
for f in examples/*.tsr tests/backends/mosaic/*.tsr $(for v in $vjps; do echo "vjp:examples/$v.tsr"; done); do
  if [ "${f#vjp:}" != "$f" ]; then
    src=${f#vjp:}
    emit() { "$TESSERA" opt --passes=vjp "$src" | "$TESSERA" emit mosaic --checkable -; }
  else
    emit() { "$TESSERA" emit mosaic --checkable "$f"; }
  fi
  if ! text=$(emit 2>/tmp/check_examples.$$); then
    echo "FAIL $f: emit: $(cat /tmp/check_examples.$$)"
    failed=$((failed + 1))
    continue
  fi
  if ! out=$(printf '%s\n' "$text" | "$MLIR_OPT" --allow-unregistered-dialect --split-input-file 2>&1 >/dev/null); then
    echo "FAIL $f: mlir-opt: $out"
    failed=$((failed + 1))
    continue
  fi
  echo "ok   $f"
  passed=$((passed + 1))
done
rm -f /tmp/check_examples.$$
echo "$passed verified, $failed failed"
[ "$failed" -eq 0 ]
