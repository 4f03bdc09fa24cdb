// How an indexer `%r[%i, 0:8, ds(%j, 128), :]` addresses the memref behind a
// Ref: one start per memref dim (unit dims of squeezed block dims at 0), the
// extent read there, and whether the dim survives in the value. Shared by
// the vector loads and stores (`index` starts) and the DMA slices (`i32`
// starts) of the Mosaic rules.
#pragma once

#include <string>
#include <vector>

#include "backends/mosaic/kernel_context.h"

namespace tessera::backends::mosaic {

struct DimIndex {
  const Value* dyn = nullptr;  // a dynamic start, or null
  int64_t start = 0;           // the static start
  int64_t size = 1;            // elements read along the dim
  int64_t stride = 1;
  bool kept = true;            // false: an integer index or a unit dim, gone from the value
  const Value* dyn_size = nullptr;  // `ds(0, %n)`: the size (only DMAs allow one); `size` is its static bound
};

// One entry per memref dim of `view`; `ix` null means every dim is full.
std::vector<DimIndex> memref_indices(const Op& op, const RefView& view, const Indexer* ix);

// The shape read: one extent per memref dim; the shape of the value: kept dims only.
Shape read_shape(const std::vector<DimIndex>& idx);
Shape value_shape(const std::vector<DimIndex>& idx);
bool is_whole(const std::vector<DimIndex>& idx, const RefView& view);  // every dim full from 0, nothing dropped
bool has_stride(const std::vector<DimIndex>& idx);

// The start of each dim as an SSA name: `index` typed (`arith.constant 0 :
// index`, `arith.index_cast %i : i32 to index`) or `i32` typed. Emits the
// constants and casts, in dim order.
std::vector<std::string> index_starts(KernelContext& ctx, const std::vector<DimIndex>& idx);
std::vector<std::string> i32_starts(KernelContext& ctx, const std::vector<DimIndex>& idx);

// "a, b, c"
std::string join(const std::vector<std::string>& parts);
// `array<i32: 1, 2>` / `array<i64: 8, 128>`
std::string i32_array(const std::vector<int64_t>& v);
std::string i64_array(const std::vector<int64_t>& v);

}  // namespace tessera::backends::mosaic
