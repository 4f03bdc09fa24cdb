// Plain C++ loops the benchmarks measure tessera against: add, matmul (the
// i-k-j loop and a tiled one) and row softmax on f32. They are compiled in a
// library of their own with the flags tessera's JIT gives its kernels (-O3 and
// every feature of this CPU, -march=native; no fast-math: neither
// reassociates floats), so a figure against them compares code generators,
// not optimization levels (bench/meson.build).
#pragma once

#include <cstddef>

namespace tessera::bench {

// o = a + b over n elements.
void baseline_add(const float* a, const float* b, float* o, size_t n);
// o += a (m x k) @ b (k x n), row-major, the i-k-j loop order.
void baseline_matmul_ikj(const float* a, const float* b, float* o, int m, int k, int n);
// The same product tiled: a tile of b stays in cache while the rows of a pass
// over it, and an 8 x 32 tile of the output stays in registers meanwhile.
void baseline_matmul_tiled(const float* a, const float* b, float* o, int m, int k, int n);
// Softmax of each of `rows` rows of n elements (max-subtracted).
void baseline_softmax_rows(const float* a, float* o, int rows, int n);

}  // namespace tessera::bench
