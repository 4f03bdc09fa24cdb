// Helpers shared by the robustness tests (mutants and the property test).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "interpreter/interpreter.h"
#include "tests/sanitized.h"

namespace tessera::robustness {

// An integer from the environment (campaign knobs), or `fallback`.
inline int64_t env_int(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoll(v, nullptr, 10) : fallback;
}

// The same dtype, shape and bits (NaN equal to NaN): outputs of two runs
// that must agree exactly.
inline bool same_bits(const interp::Array& a, const interp::Array& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  for (int64_t i = 0; i < a.size(); ++i) {
    double x = a.get(i), y = b.get(i);
    if (!(x == y || (std::isnan(x) && std::isnan(y)))) return false;
  }
  return true;
}

inline bool same_bits(const std::vector<interp::Array>& a, const std::vector<interp::Array>& b) {
  if (a.size() != b.size()) return false;
  for (size_t o = 0; o < a.size(); ++o)
    if (!same_bits(a[o], b[o])) return false;
  return true;
}

}  // namespace tessera::robustness
