#!/usr/bin/env bash
# Every zoo kernel with a PTX lowering and every kernel of kernels/, launch/ and checks/, emitted
# for sm_80 and sm_90 and assembled by NVIDIA's ptxas for that architecture.
# Skipped (exit 77) when ptxas is not installed.
#
#   ptxas.sh TESSERA SOURCE_ROOT
set -u
TESSERA=$(realpath "$1") ROOT=$2
PTXAS=${PTXAS:-$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)}
if [ ! -x "$PTXAS" ]; then
  echo "skipped: ptxas not found (the CUDA toolkit's /usr/local/cuda/bin/ptxas; or set PTXAS)" >&2
  exit 77
fi
cd "$ROOT" || exit 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
for f in examples/{add,matmul,softmax,layernorm,flash_attention,cumsum,row_sum,gather_rows}.tsr tests/backends/llvm/kernels/*.tsr tests/backends/llvm/launch/*.tsr tests/backends/llvm/checks/*.tsr; do
  for sm in 80 90; do
    name=$(basename "$f" .tsr)_sm$sm
    if "$TESSERA" emit ptx "$f" --sm $sm -o "$tmp/$name.ptx" && "$PTXAS" -arch=sm_$sm "$tmp/$name.ptx" -o "$tmp/$name.cubin"; then
      pass=$((pass + 1))
    else
      echo "FAILED: $f for sm_$sm" >&2
      fail=$((fail + 1))
    fi
  done
done
echo "ptxas: $pass passed, $fail failed"
[ $fail -eq 0 ]
