#include "ir/block_geometry.h"

#include <limits>

namespace tessera {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// a + b, saturating at the int64 maximum: absurd paddings then fail the
// memory limit instead of wrapping into a small, wrong buffer.
int64_t sat_add(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? kMax : r;
}

// x rounded up to a multiple of n (n >= 1), saturating.
int64_t round_up(int64_t x, int64_t n) {
  if (n <= 1 || x % n == 0) return x;
  return sat_add(x, n - x % n);
}

}  // namespace

DimGeometry dim_geometry(const BlockDim& dim, int64_t extent) {
  DimGeometry g;
  g.dim = dim;
  g.extent = extent;
  switch (dim.kind) {
    case BlockDimKind::Blocked: g.padded = round_up(extent, dim.size); break;
    case BlockDimKind::Element:
      g.pad_lo = dim.pad_lo;
      g.padded = round_up(sat_add(sat_add(dim.pad_lo, extent), dim.pad_hi), dim.size);
      break;
    case BlockDimKind::Squeezed:
    case BlockDimKind::BoundedSlice: g.padded = extent; break;
  }
  return g;
}

DimGeometry::Range DimGeometry::valid_index() const {
  switch (dim.kind) {
    case BlockDimKind::Blocked:
      // A whole-array block of an empty dim has size 0: its only index is 0.
      if (dim.size <= 0) return {0, 0};
      return {0, padded / dim.size - 1};
    case BlockDimKind::Element:
    case BlockDimKind::Squeezed: return {0, padded - window()};
    case BlockDimKind::BoundedSlice: return {0, padded};
  }
  return {0, -1};
}

bool DimGeometry::in_bounds(int64_t index, int64_t size) const {
  Range r = valid_index();
  if (index < r.lo || index > r.hi) return false;
  if (dim.kind != BlockDimKind::BoundedSlice) return true;
  return size >= 0 && size <= dim.size && size <= padded - index;
}

BlockGeometry block_geometry(const std::vector<BlockDim>& dims, const Shape& array_shape) {
  BlockGeometry g;
  for (size_t d = 0; d < dims.size(); ++d) g.dims.push_back(dim_geometry(dims[d], d < array_shape.size() ? array_shape[d] : 0));
  return g;
}

Shape BlockGeometry::array_shape() const {
  Shape s;
  for (const DimGeometry& d : dims) s.push_back(d.extent);
  return s;
}

Shape BlockGeometry::padded_shape() const {
  Shape s;
  for (const DimGeometry& d : dims) s.push_back(d.padded);
  return s;
}

std::vector<int64_t> BlockGeometry::pad_lo() const {
  std::vector<int64_t> s;
  for (const DimGeometry& d : dims) s.push_back(d.pad_lo);
  return s;
}

std::vector<int64_t> BlockGeometry::pad_hi() const {
  std::vector<int64_t> s;
  for (const DimGeometry& d : dims) s.push_back(d.padded - d.pad_lo - d.extent);
  return s;
}

bool BlockGeometry::is_padded() const {
  for (const DimGeometry& d : dims)
    if (d.padded != d.extent) return true;
  return false;
}

Shape BlockGeometry::window() const {
  Shape s;
  for (const DimGeometry& d : dims) s.push_back(d.window());
  return s;
}

bool BlockGeometry::in_bounds(const std::vector<int64_t>& index) const {
  if (static_cast<int>(index.size()) != index_arity()) return false;
  size_t k = 0;
  for (const DimGeometry& d : dims) {
    int64_t start = index[k++];
    int64_t size = d.arity() == 2 ? index[k++] : d.window();
    if (!d.in_bounds(start, size)) return false;
  }
  return true;
}

std::vector<BlockGeometry::Extent> BlockGeometry::block_at(const std::vector<int64_t>& index) const {
  std::vector<Extent> out;
  size_t k = 0;
  for (const DimGeometry& d : dims) {
    int64_t v = index.at(k++);
    out.push_back(Extent{d.start(v), d.arity() == 2 ? index.at(k++) : d.window()});
  }
  return out;
}

int BlockGeometry::index_arity() const {
  int n = 0;
  for (const DimGeometry& d : dims) n += d.arity();
  return n;
}

}  // namespace tessera
