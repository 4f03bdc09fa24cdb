// NumPy arrays <-> the interpreter's arrays (runtime/array.h).
//
// Inputs are borrowed, not copied, when NumPy already lays them out as tessera
// stores them: C-contiguous, aligned, native byte order, and the dtype of the
// storage type (float32 for f32, bool for i1, ...). Anything else is copied
// into a tessera array, converting the dtype where NumPy's casting='same_kind'
// allows (float64 -> f32, int64 -> i32; not float -> int). NumPy has no
// bfloat16: a bf16 input is given as floats and rounded to bf16, and a bf16
// output comes back as float32 (exact), as tessera's .npy files do
// (runtime/npy.h). f16 comes back as float16.
#pragma once

#include <pybind11/numpy.h>

#include <string>

#include "ir/diagnostics.h"
#include "ir/type.h"
#include "runtime/array.h"

namespace tessera::python {

// `value` (an ndarray, or anything numpy.asarray accepts) as an array of type
// `want`; `what` ("input %x of @main") and `loc` locate the Error for a shape
// or dtype that does not fit.
interp::Array to_array(const pybind11::handle& value, const ArrayType& want, const std::string& what, const Loc& loc);

// A new ndarray holding a copy of `a` (outputs own their memory, so what Python
// keeps alive never counts toward a later run's memory limit).
pybind11::array to_numpy(const interp::Array& a);

}  // namespace tessera::python
