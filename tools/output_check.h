// `tessera run --check`: how far a compiled backend's outputs are from the
// interpreter's, element by element.
#pragma once

#include <optional>
#include <string>

#include "runtime/array.h"

namespace tessera::cli {

// The largest relative error of `got` against `want` (same type): per element
// |got - want| / max(|want|, 1e-3 * the largest |want| of the output), so an
// element that cancels to near zero is judged against the output's scale.
// NaN matches NaN, an infinity matches itself; any other mismatch with a NaN
// or an infinity counts as an infinite error. Integers and bools the same way
// (exactly equal: 0).
double max_relative_error(const interp::Array& got, const interp::Array& want);

// The default tolerance for dtype d: about one rounding of the type (f32
// 1e-5, f64 1e-12, bf16 2^-7, f16 2^-10), 0 for integers and bools.
double default_tolerance(DType d);

}  // namespace tessera::cli
