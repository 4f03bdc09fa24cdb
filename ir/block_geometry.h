// Where a block lies in its array: the one definition of block geometry.
//
// A BlockSpec cuts an array into blocks; the index map returns, per array dim,
// one value (two for a BoundedSlice: start and size). This file says what those
// values mean, for every block-dim kind, as the interpreter, discharge, the
// prover and the backends must all read them:
//
//   kind            block start (padded coords)   block size   padded extent P
//   Blocked(n)      index * n                     n            D rounded up to a multiple of n
//   Element(n,l,h)  index                         n            l + D + h rounded up to a multiple of n
//   Squeezed        index                         1            D
//   BoundedSlice(n) start                         size (0..n)  D
//
// The array's data sits at [pad_lo, pad_lo + D) of a buffer of extent P
// (pad_lo = l for Element dims, else 0); the rest is padding, whose contents
// are unspecified (uninitialized memory in the interpreter, zeros after
// discharge). A block is in bounds when it lies inside the padded buffer:
// 0 <= start and start + size <= P. This follows the block dims of
// `jax/_src/pallas/core.py` and the start indices of `_get_start_index` in
// `jax/_src/pallas/mosaic/interpret/interpret_pallas_call.py`.
#pragma once

#include <vector>

#include "ir/params.h"

namespace tessera {

// One array dim under one block dim.
struct DimGeometry {
  BlockDim dim;
  int64_t extent = 0;  // the array's size along this dim
  int64_t pad_lo = 0;  // offset of the data inside the padded buffer
  int64_t padded = 0;  // extent of the padded buffer the blocks index

  // Elements of the block along this dim (the largest, for a BoundedSlice).
  int64_t window() const { return dim.kind == BlockDimKind::Squeezed ? 1 : dim.size; }
  // Index-map values this dim consumes: 1, or 2 for a BoundedSlice.
  int arity() const { return dim.kind == BlockDimKind::BoundedSlice ? 2 : 1; }
  // First element of the block, in padded coordinates, for index-map value `index`.
  int64_t start(int64_t index) const { return dim.kind == BlockDimKind::Blocked ? index * dim.size : index; }
  // Inclusive range of index-map values (the start value, for a BoundedSlice
  // of size 0) whose block lies inside the padded buffer; empty when lo > hi.
  struct Range {
    int64_t lo, hi;
  };
  Range valid_index() const;
  // For a BoundedSlice: its size value must lie in [0, dim.size] and
  // start + size <= padded.
  bool in_bounds(int64_t index, int64_t size) const;
};

// All dims of one block mapping.
struct BlockGeometry {
  std::vector<DimGeometry> dims;

  Shape array_shape() const;
  Shape padded_shape() const;
  std::vector<int64_t> pad_lo() const;
  // Padding after the data per dim: padded - pad_lo - extent.
  std::vector<int64_t> pad_hi() const;
  bool is_padded() const;       // some dim has padding
  Shape window() const;         // block extent per array dim (Squeezed -> 1)
  int index_arity() const;      // values the index map returns
  // Whether the block at these index-map values lies inside the padded buffer.
  bool in_bounds(const std::vector<int64_t>& index) const;
  // Where the block at these index-map values lies, per array dim: its first
  // element in padded coordinates and its extent (a BoundedSlice's size value,
  // unchecked). `index` has index_arity() values.
  struct Extent {
    int64_t start, size;
  };
  std::vector<Extent> block_at(const std::vector<int64_t>& index) const;
};

DimGeometry dim_geometry(const BlockDim& dim, int64_t extent);
BlockGeometry block_geometry(const std::vector<BlockDim>& dims, const Shape& array_shape);

}  // namespace tessera
