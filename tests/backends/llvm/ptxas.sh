#!/usr/bin/env bash
# Every zoo kernel with a PTX lowering and every kernel of kernels/, launch/ and checks/, emitted
# for sm_80 and sm_90 and assembled by NVIDIA's ptxas for that architecture; the zoo kernels with
# `ptxas -v`, which must report no register spills (spill stores or loads of 0 bytes): a spill puts
# a kernel's registers in local memory, a slowdown no test of the numbers would see.
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
zoo=" $(echo examples/{add,matmul,softmax,layernorm,flash_attention,cumsum,row_sum,gather_rows}.tsr) "
spilled=0
for f in $zoo tests/backends/llvm/kernels/*.tsr tests/backends/llvm/launch/*.tsr tests/backends/llvm/checks/*.tsr; do
  for sm in 80 90; do
    name=$(basename "$f" .tsr)_sm$sm
    verbose=
    case $zoo in *" $f "*) verbose=-v ;; esac
    if "$TESSERA" emit ptx "$f" --sm $sm -o "$tmp/$name.ptx" &&
       "$PTXAS" -arch=sm_$sm $verbose "$tmp/$name.ptx" -o "$tmp/$name.cubin" 2> "$tmp/$name.log"; then
      pass=$((pass + 1))
      # "Function properties for K" precedes K's "N bytes stack frame, N bytes spill stores, N bytes spill loads".
      spills=$(awk '/Function properties for/ { k = $NF }
                    /bytes spill stores/ && ($5 != 0 || $9 != 0) { print k ": " $5 " bytes spill stores, " $9 " bytes spill loads" }' "$tmp/$name.log")
      if [ -n "$spills" ]; then
        echo "SPILLS: $f for sm_$sm: $spills" >&2
        spilled=$((spilled + 1))
      fi
    else
      cat "$tmp/$name.log" >&2 2>/dev/null
      echo "FAILED: $f for sm_$sm" >&2
      fail=$((fail + 1))
    fi
  done
done
echo "ptxas: $pass passed, $fail failed; $spilled zoo kernel(s) spilling registers"
[ $fail -eq 0 ] && [ $spilled -eq 0 ]
