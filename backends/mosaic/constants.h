// `arith.constant` lines: how the Mosaic emitter materializes literals,
// splats and the `index` / `i32` constants that indices and loop bounds need.
// MLIR has no literal operands, so every constant is an op of its own; the
// helpers return the SSA name they defined.
#pragma once

#include <string>

#include "backends/emit_context.h"
#include "ir/value.h"

namespace tessera::backends::mosaic {

// How MLIR writes value `v` of float dtype `d` as an attribute body:
// `2.000000e+00`, the shortest %e form that reads back to the same value of
// `d`; infinities and NaNs as hexadecimal bit patterns (`0xFF800000`).
std::string float_text(double v, DType d);
// The attribute body of a literal: a float as float_text, an integer in
// decimal, a bool as `true` / `false`.
std::string literal_text(const Literal& l);

// `%cst = arith.constant 2.000000e+00 : f32`; the name.
std::string scalar_constant(EmitContext& ctx, const Literal& l);
// `%cst = arith.constant dense<0.000000e+00> : vector<8x128xf32>`.
std::string splat_constant(EmitContext& ctx, const Literal& l, const Shape& shape);
// `%c0 = arith.constant 0 : index` and `%c0_i32 = arith.constant 0 : i32`.
std::string index_constant(EmitContext& ctx, int64_t v);
std::string i32_constant(EmitContext& ctx, int64_t v);

}  // namespace tessera::backends::mosaic
