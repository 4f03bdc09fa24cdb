// Helpers for running functions from the command line: random inputs and a
// one-line summary of an output.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/array.h"

namespace tessera::interp {

// A reproducible random array: floats uniform in [-1, 1), integers uniform in
// [0, 8) (small, so they work as indices), bools fair coins.
Array random_array(const ArrayType& t, uint64_t seed);

// "f32[1024,512]  min -1.99 max 1.99 mean 0.0012  first [0.52, -0.11, ...]"
std::string summarize(const Array& a);

}  // namespace tessera::interp
