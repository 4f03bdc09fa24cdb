// Regions of a buffer: what an indexer (`%r[%i, 0:8, ds(%j, 128, 2), :]`) or a
// block of a pallas_call selects, and the strided copies that move them.
//
// A region has one Sel per dimension of the buffer: elements start, start +
// stride, ... (`size` of them); `keep == false` marks a point index whose
// dimension the value drops. The dense value of a region is row-major over the
// kept sizes, so point dims are simply dims of size 1 in memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/array.h"

namespace tessera::interp {

struct Sel {
  int64_t start = 0;
  int64_t size = 0;
  int64_t stride = 1;
  bool keep = true;
};
using Region = std::vector<Sel>;

// The whole of an array of `shape`.
Region full_region(const Shape& shape);
// Shape of the dense value of a region (point dims dropped).
Shape region_shape(const Region& r);
int64_t region_elements(const Region& r);
// True when every selected element lies inside `shape`.
bool region_in_bounds(const Region& r, const Shape& shape);
// True when the region is the whole array (a copy can share the buffer).
bool region_is_full(const Region& r, const Shape& shape);
// NumPy-style text: "[1152:1280, 0:128]", points as "3", strides as "0:16:2".
std::string region_str(const Region& r);
// "(9, 0)"
std::string ints_str(const std::vector<int64_t>& v);

// The value that uninitialized memory holds: NaN / iinfo.max / true, or zero.
void fill_uninitialized(Array& a, bool zero);
Array uninitialized_array(DType d, const Shape& shape, bool zero);

// Reads region `r` of `src` into a new dense array. Elements outside `src`
// (only possible when `allow_oob`) read as uninitialized memory.
Array read_region(const Array& src, const Region& r, bool allow_oob = false, bool uninit_zero = false);
// The same into `out`, which the caller owns (unshared), holds as many
// elements of src's dtype as the region, and the region is in bounds: a
// block copied again and again reuses one buffer, which stays in cache.
void read_region_into(const Array& src, const Region& r, Array& out);
// Writes `value` (the region's dense shape, or rank 0 to broadcast) into
// region `r` of `dst`, which must be in bounds and unshared.
void write_region(Array& dst, const Region& r, const Array& value);
// dst[r] += value, with the dtype's arithmetic (bf16 / f16 rounded).
void accumulate_region(Array& dst, const Region& r, const Array& value);

// Masked variants, element by element: lanes where the mask is false are not
// touched (and may lie out of bounds). Returns false if an on-lane is out of
// bounds (nothing is written then).
bool masked_write_region(Array& dst, const Region& r, const Array& value, const Array& mask);
// Lanes off the mask (or out of bounds, when allowed) take `other` (rank 0 or
// dense shape) or uninitialized memory when `other` is empty. Returns false
// if an on-lane is out of bounds.
bool masked_read_region(const Array& src, const Region& r, const Array& mask, const Array* other, bool uninit_zero,
                        Array& out);

// Slices index `i` of axis `axis` out of `a` (rank drops by one), and the
// reverse: writes `part` into index `i` of axis `axis` of `whole`.
Array take_index(const Array& a, int axis, int64_t i);
void put_index(Array& whole, int axis, int64_t i, const Array& part);

}  // namespace tessera::interp
