// .npy files (NumPy's array format, versions 1.0 to 3.0): little-endian, C order.
//
// dtypes: f32 '<f4', f64 '<f8', f16 '<f2', i8 '|i1', i16 '<i2', i32 '<i4',
// i64 '<i8', u8 '|u1', u32 '<u4', bool '|b1'. NumPy has no bfloat16, so bf16
// arrays are written as float32 ('<f4', exact) and a bf16 input is read from a
// float32 file (rounded to bf16).
#pragma once

#include <string>

#include "runtime/array.h"

namespace tessera::interp {

// Reads a .npy file; throws Error naming the file on any problem.
Array read_npy(const std::string& path);
// Reads a .npy file that must hold an array of type `want` (`what` names it in
// messages: "input %x").
Array read_npy_as(const std::string& path, const ArrayType& want, const std::string& what);
void write_npy(const std::string& path, const Array& a);

}  // namespace tessera::interp
