#include "bench/baselines.h"

#include <algorithm>
#include <cmath>

namespace tessera::bench {

void baseline_add(const float* a, const float* b, float* o, size_t n) {
  for (size_t i = 0; i < n; ++i) o[i] = a[i] + b[i];
}

void baseline_matmul_ikj(const float* a, const float* b, float* o, int m, int k, int n) {
  for (int i = 0; i < m; ++i)
    for (int p = 0; p < k; ++p) {
      float av = a[static_cast<size_t>(i) * k + p];
      const float* brow = b + static_cast<size_t>(p) * n;
      float* orow = o + static_cast<size_t>(i) * n;
      for (int j = 0; j < n; ++j) orow[j] += av * brow[j];
    }
}

namespace {

// o[i0:i1, j0:j1] += a[i0:i1, p0:p1] @ b[p0:p1, j0:j1], i-k-j.
void matmul_block(const float* a, const float* b, float* o, int k, int n, int i0, int i1, int p0, int p1, int j0,
                  int j1) {
  for (int i = i0; i < i1; ++i)
    for (int p = p0; p < p1; ++p) {
      float av = a[static_cast<size_t>(i) * k + p];
      for (int j = j0; j < j1; ++j) o[static_cast<size_t>(i) * n + j] += av * b[static_cast<size_t>(p) * n + j];
    }
}

// The register tile: kRows x kCols of the output in registers while p runs
// over [p0, p1): each b row segment loaded once serves kRows rows of a.
constexpr int kRows = 8, kCols = 32;

void matmul_registers(const float* a, const float* b, float* o, int k, int n, int i, int p0, int p1, int j) {
  float acc[kRows][kCols];
  for (int r = 0; r < kRows; ++r)
    for (int c = 0; c < kCols; ++c) acc[r][c] = o[static_cast<size_t>(i + r) * n + j + c];
  for (int p = p0; p < p1; ++p) {
    const float* brow = b + static_cast<size_t>(p) * n + j;
    for (int r = 0; r < kRows; ++r) {
      float av = a[static_cast<size_t>(i + r) * k + p];
      for (int c = 0; c < kCols; ++c) acc[r][c] += av * brow[c];
    }
  }
  for (int r = 0; r < kRows; ++r)
    for (int c = 0; c < kCols; ++c) o[static_cast<size_t>(i + r) * n + j + c] = acc[r][c];
}

}  // namespace

void baseline_matmul_tiled(const float* a, const float* b, float* o, int m, int k, int n) {
  // A 256 x 128 tile of b (128 KiB) stays in a core's L2 while every row of
  // a passes over it, kRows rows at a time.
  constexpr int kTk = 256, kTn = 128;
  for (int p0 = 0; p0 < k; p0 += kTk)
    for (int j0 = 0; j0 < n; j0 += kTn) {
      int p1 = std::min(k, p0 + kTk), j1 = std::min(n, j0 + kTn);
      int i_full = m - m % kRows, j_full = j0 + (j1 - j0) / kCols * kCols;
      for (int i = 0; i < i_full; i += kRows)
        for (int j = j0; j < j_full; j += kCols) matmul_registers(a, b, o, k, n, i, p0, p1, j);
      matmul_block(a, b, o, k, n, 0, i_full, p0, p1, j_full, j1);  // columns left over
      matmul_block(a, b, o, k, n, i_full, m, p0, p1, j0, j1);      // rows left over
    }
}

void baseline_softmax_rows(const float* a, float* o, int rows, int n) {
  for (int i = 0; i < rows; ++i) {
    const float* r = a + static_cast<size_t>(i) * n;
    float* w = o + static_cast<size_t>(i) * n;
    float mx = -INFINITY, s = 0;
    for (int j = 0; j < n; ++j) mx = std::max(mx, r[j]);
    for (int j = 0; j < n; ++j) s += w[j] = std::exp(r[j] - mx);
    for (int j = 0; j < n; ++j) w[j] /= s;
  }
}

}  // namespace tessera::bench
