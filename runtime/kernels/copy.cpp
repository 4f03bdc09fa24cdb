// Strided copies: the one data-movement loop behind broadcast, transpose,
// slice, pad, rev, concatenate, dynamic (update) slice and gather.
#include <algorithm>
#include <cstring>

#include "runtime/kernels/util.h"

namespace tessera::interp::kern {
namespace {

// Copies one row of n elements.
template <class U>
void copy_row(U* dst, int64_t ds, const U* src, int64_t ss, int64_t n) {
  if (ds == 1 && ss == 1) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(U));
  } else if (ds == 1 && ss == 0) {
    U v = *src;
    for_n(n, [&](int64_t i) { dst[i] = v; });
  } else if (ds == 1) {
    for (int64_t i = 0; i < n; ++i) dst[i] = src[i * ss];
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i * ds] = src[i * ss];
  }
}

// Copies a rows x cols plane where src is contiguous along rows and dst along
// cols (a transpose), in square tiles so both sides stay in cache.
template <class U>
void copy_plane_tiled(U* dst, int64_t dr, const U* src, int64_t sc, int64_t rows, int64_t cols) {
  constexpr int64_t kTile = 32;
  for (int64_t r0 = 0; r0 < rows; r0 += kTile) {
    int64_t r1 = std::min(rows, r0 + kTile);
    for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
      int64_t c1 = std::min(cols, c0 + kTile);
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) dst[r * dr + c] = src[r + c * sc];
    }
  }
}

template <class U>
void copy_typed(const Shape& shape, U* dst, const std::vector<int64_t>& ds, const U* src, const std::vector<int64_t>& ss) {
  int rank = static_cast<int>(shape.size());
  if (rank == 0) {
    *dst = *src;
    return;
  }
  bool tiled = rank >= 2 && ds[rank - 1] == 1 && ss[rank - 2] == 1 && ss[rank - 1] != 1 && ss[rank - 1] != 0 &&
               shape[rank - 1] >= 8 && shape[rank - 2] >= 8;
  int inner = tiled ? 2 : 1;
  int outer = rank - inner;
  std::vector<int64_t> idx(outer, 0);
  int64_t doff = 0, soff = 0;
  while (true) {
    if (tiled) copy_plane_tiled(dst + doff, ds[rank - 2], src + soff, ss[rank - 1], shape[rank - 2], shape[rank - 1]);
    else copy_row(dst + doff, ds[rank - 1], src + soff, ss[rank - 1], shape[rank - 1]);
    int d = outer - 1;
    for (; d >= 0; --d) {
      if (++idx[d] < shape[d]) {
        doff += ds[d];
        soff += ss[d];
        break;
      }
      doff -= ds[d] * (shape[d] - 1);
      soff -= ss[d] * (shape[d] - 1);
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

}  // namespace

std::vector<int64_t> dense_strides(const Shape& shape) {
  std::vector<int64_t> s(shape.size());
  int64_t acc = 1;
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    s[d] = acc;
    acc *= shape[d];
  }
  return s;
}

void copy_strided(int elem_size, const Shape& shape_in, void* dst, std::vector<int64_t> ds_in, const void* src,
                  std::vector<int64_t> ss_in) {
  for (int64_t n : shape_in)
    if (n == 0) return;
  // Drop size-1 dims, then merge neighbours that are contiguous on both sides.
  Shape shape;
  std::vector<int64_t> ds, ss;
  for (size_t d = 0; d < shape_in.size(); ++d) {
    if (shape_in[d] == 1) continue;
    if (!shape.empty() && ds.back() == ds_in[d] * shape_in[d] && ss.back() == ss_in[d] * shape_in[d]) {
      shape.back() *= shape_in[d];
      ds.back() = ds_in[d];
      ss.back() = ss_in[d];
      continue;
    }
    shape.push_back(shape_in[d]);
    ds.push_back(ds_in[d]);
    ss.push_back(ss_in[d]);
  }
  // For a transposing copy, bring the dim that is contiguous in src next to
  // the innermost one (copy order does not matter) so the plane gets tiled.
  int rank = static_cast<int>(shape.size());
  if (rank >= 3 && ds[rank - 1] == 1 && ss[rank - 1] != 1) {
    for (int p = 0; p < rank - 2; ++p) {
      if (ss[p] != 1) continue;
      auto move = [&](auto& v) {
        auto x = v[p];
        v.erase(v.begin() + p);
        v.insert(v.begin() + (rank - 2), x);
      };
      move(shape), move(ds), move(ss);
      break;
    }
  }
  switch (elem_size) {
    case 1: return copy_typed(shape, static_cast<uint8_t*>(dst), ds, static_cast<const uint8_t*>(src), ss);
    case 2: return copy_typed(shape, static_cast<uint16_t*>(dst), ds, static_cast<const uint16_t*>(src), ss);
    case 4: return copy_typed(shape, static_cast<uint32_t*>(dst), ds, static_cast<const uint32_t*>(src), ss);
    case 8: return copy_typed(shape, static_cast<uint64_t*>(dst), ds, static_cast<const uint64_t*>(src), ss);
    default: throw Error("copy_strided: unsupported element size " + std::to_string(elem_size));
  }
}

void fill_with(Array& a, const void* value) {
  int es = storage_size(a.dtype());
  if (a.size() == 0) return;
  copy_strided(es, {a.size()}, a.raw(), {1}, value, {0});
}

}  // namespace tessera::interp::kern
