// SparseCore facts shared by the verifier, the interpreter and backends
// (after jax/_src/pallas/mosaic/sc_lowering.py and jax/_src/tpu_info.py).
//
// A pallas_call or core_map with `kernel_type=sc_scalar_subcore` or
// `sc_vector_subcore` runs on a SparseCore subcore; its restrictions are
// checked by verify/sparse_core.cpp. tessera models one SparseCore
// generation: TPU7x, whose vector subcores have 16 lanes (v5p and v6e have 8).
#pragma once

#include <string_view>
#include <vector>

#include "ir/type.h"

namespace tessera {

// Lanes of a SparseCore vector subcore (TPU7x).
inline constexpr int64_t kScNumLanes = 16;

// `sc_scalar_subcore` or `sc_vector_subcore` (the kernel_type param).
inline bool is_sparse_core(std::string_view kernel_type) { return kernel_type != "tc"; }

// The vector shapes a SparseCore load / store moves for `d`: 32-bit data
// (16,); 16-bit (32,) or (2, 16); 8-bit (64,) or (4, 16); none for 64-bit.
inline std::vector<Shape> sc_vector_shapes(DType d) {
  int bytes = dtype_bytes(d);
  if (bytes == 4) return {{kScNumLanes}};
  if (bytes == 2) return {{2 * kScNumLanes}, {2, kScNumLanes}};
  if (bytes == 1) return {{4 * kScNumLanes}, {4, kScNumLanes}};
  return {};
}

}  // namespace tessera
