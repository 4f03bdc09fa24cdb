#!/usr/bin/env bash
# On a machine with an NVIDIA GPU and its driver (libcuda.so.1), e.g. one lent
# by the `device` tool: (1) every zoo kernel but the TPU-only two through
# `tessera run --backend=cuda --check` (the GPU against the interpreter), and
# the vjp of every TensorCore zoo kernel the same way;
# (2) the bandwidth of an add and a copy of 1 GiB f32 arrays (16384 x 16384),
# kernel time alone (CUDA events over 20 launches), printed as GB/s and as the
# fraction of an H100 SXM's 3.35 TB/s. Prints "gpu_check: N failed" last;
# exit 1 if a kernel failed its check.
# (0) first, the run-time checks: each kernel of tests/backends/llvm/checks/
# (an out-of-bounds block index, an out-of-bounds SMEM index, an in-place
# transpose through input_output_aliases, a kernel writing its input block,
# uninitialized i16 scratch, a revisited output block) must print exactly
# what the interpreter prints, error or outputs: the device-side check record
# read after the launch, the staged input blocks and the scratch fill.
#   scripts/gpu_check.sh [BUILD_DIR] [--checks-only]    (default: build)
set -u
BUILD=${1:-build}
TESSERA=$BUILD/tools/tessera
cd "$(dirname "$0")/.." || exit 2
[ -x "$TESSERA" ] || { echo "gpu_check: no $TESSERA (build it first)" >&2; exit 2; }
failed=0
for f in tests/backends/llvm/checks/*.tsr; do
  want=$("$TESSERA" run "$f" --random-inputs 1 2>&1)
  got=$("$TESSERA" run "$f" --random-inputs 1 --backend=cuda 2>&1)
  if [ "$got" = "$want" ]; then
    echo "== check $f: as the interpreter: $(printf '%s' "$want" | tail -1 | cut -c1-160)"
  else
    echo "== check $f: FAILED"; echo "interpreter: $want"; echo "cuda: $got"
    failed=$((failed + 1))
  fi
done
if [ "${2:-}" = --checks-only ]; then
  echo "gpu_check: $failed failed"
  [ "$failed" = 0 ]
  exit
fi
for k in add matmul softmax layernorm flash_attention cumsum row_sum gather_rows; do
  echo "== $k"
  # flash attention's outputs are averages with cancellation: libdevice's expf
  # (within 2 ulp of glibc's) moves its smallest elements by ~1e-4 of
  # themselves, ~1e-7 of the output's largest (H100, 2026-11-26).
  tol=()
  [ "$k" = flash_attention ] && tol=(--tol 1e-3)
  "$TESSERA" run "examples/$k.tsr" --random-inputs 1 --backend=cuda --check "${tol[@]}" || failed=$((failed + 1))
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The vjp of each: transposed kernels on reversed and reordered grids, and
# flash attention's checkpoint call. softmax's input cotangent y * (w - sum(w y))
# cancels where w is near the sum, so the GPU's other summation order moves
# its smallest elements by ~1e-3 of the 1e-3 floor (H100, 2026-11-26).
for k in add matmul softmax layernorm flash_attention cumsum row_sum gather_rows train_step; do
  echo "== vjp $k"
  tol=()
  [ "$k" = flash_attention ] && tol=(--tol 1e-3)
  [ "$k" = softmax ] && tol=(--tol 1e-2)
  "$TESSERA" opt --passes=vjp "examples/$k.tsr" >"$tmp/$k.vjp.tsr" &&
    "$TESSERA" run "$tmp/$k.vjp.tsr" --random-inputs 1 --backend=cuda --check "${tol[@]}" || failed=$((failed + 1))
done

N=16384 B=128 G=128   # 1 GiB per f32 array, 128 x 128 blocks
index_map_text() {
  cat <<TSR
index_map @ij(%i: i32, %j: i32) -> (i32, i32) {
  return %i, %j
}
TSR
}
{ index_map_text; cat <<TSR
kernel @k(%x: ref<f32[$B,$B], vmem>, %y: ref<f32[$B,$B], vmem>, %o: ref<f32[$B,$B], vmem>) {
  %a = get %x[:, :]
  %b = get %y[:, :]
  %c = add %a, %b
  swap %o[:, :], %c
}
func @main(%x: f32[$N,$N], %y: f32[$N,$N]) -> f32[$N,$N] {
  %o = pallas_call[kernel=@k, grid=($G, $G), in_specs=[spec(($B, $B), @ij), spec(($B, $B), @ij)],
                   out_specs=[spec(($B, $B), @ij)], out_shapes=[f32[$N,$N]], dimension_semantics=(parallel, parallel)] %x, %y
  return %o
}
TSR
} > "$tmp/add.tsr"
{ index_map_text; cat <<TSR
kernel @k(%x: ref<f32[$B,$B], vmem>, %o: ref<f32[$B,$B], vmem>) {
  %a = get %x[:, :]
  swap %o[:, :], %a
}
func @main(%x: f32[$N,$N]) -> f32[$N,$N] {
  %o = pallas_call[kernel=@k, grid=($G, $G), in_specs=[spec(($B, $B), @ij)],
                   out_specs=[spec(($B, $B), @ij)], out_shapes=[f32[$N,$N]], dimension_semantics=(parallel, parallel)] %x
  return %o
}
TSR
} > "$tmp/copy.tsr"
for k in add copy; do
  echo "== bandwidth: $k, f32[$N,$N] arrays (1 GiB each)"
  out=$("$TESSERA" run "$tmp/$k.tsr" --random-inputs 1 --backend=cuda --time-launches 20 --max-memory 0) || {
    failed=$((failed + 1)); continue; }
  printf '%s\n' "$out"
  # "cuda: @k: 1.23 ms per launch (20 launches), ...": bytes = the arrays, each read or written once.
  ms=$(printf '%s\n' "$out" | sed -n 's/^cuda: [^:]*: \([0-9.e+-]*\) ms per launch.*/\1/p' | head -1)
  arrays=$([ $k = add ] && echo 3 || echo 2)
  awk -v ms="$ms" -v n="$N" -v a="$arrays" -v k="$k" 'BEGIN {
    bytes = a * n * n * 4; rate = bytes / (ms / 1e3);
    printf "bandwidth: %s: %.1f GB/s, %.1f%% of 3.35 TB/s (H100 SXM5 peak)\n", k, rate / 1e9, 100 * rate / 3.35e12 }'
done
echo "gpu_check: $failed failed"
[ "$failed" = 0 ]
