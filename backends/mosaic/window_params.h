// The kernel func.func's attributes (jax/_src/pallas/mosaic/lowering.py,
// `lower_jaxpr_to_module`), in the order MLIR prints a dictionary:
// dimension_semantics, iteration_bounds, scalar_prefetch, scratch_operands,
// tpu.core_type, window_params. iteration_bounds and window_params exist only
// with a grid; a grid-free call must not window its operands.
#pragma once

#include <string>

#include "ir/grid_mapping.h"

namespace tessera::backends::mosaic {

// How Mosaic writes a dynamic grid size in iteration_bounds (INT64_MIN, MLIR's
// ShapedType::kDynamic).
constexpr const char* kDynamicBound = "-9223372036854775808";

// `[#tpu.dimension_semantics<parallel>, ...]`: the call's, or `arbitrary`
// per axis (`parallel` for vmapped axes).
std::string dimension_semantics_attr(const GridMapping& g);
// `array<i64: 8, 4>`, kDynamicBound for a dynamic size.
std::string iteration_bounds_attr(const GridMapping& g);

// `attributes {...}` of the kernel of `call`; throws located at `call`.
std::string kernel_attributes(const GridMapping& g, const Op& call);

// The window_params dictionary of block mapping m: `{}` for ANY / HBM /
// semaphore operands, else transform_indices and window_bounds (and
// pipeline_mode, window_kind).
std::string window_param(const GridMapping& g, int m);

// `attributes {...}` of the func of a core_map over a TensorCore mesh of
// `mesh_shape` whose operands (Refs) are `operands` (the `pl.kernel` path,
// `lower_jaxpr_into_unpipelined_module`): iteration_bounds is the mesh shape,
// every axis `core_parallel`, and each operand's window is the whole array at
// 0, written as an affine map (`{}` for ANY, HBM and semaphores on the
// TensorCore); no transform functions.
std::string core_map_attributes(const std::vector<int64_t>& mesh_shape, const std::vector<Type>& operands);

}  // namespace tessera::backends::mosaic
