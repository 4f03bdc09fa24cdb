// Scalar conversions between storage types with tessera's defined semantics
// (never undefined behaviour):
//   float -> int : truncate toward zero, saturate to the target's range, NaN -> 0
//   int -> int   : two's complement wrap-around (keep the low bits)
//   f64 -> f32   : round to nearest even; beyond the float range -> +-inf
//   anything else: the C++ conversion (exact or round to nearest)
// Targets bool, bf16 and f16 need the dtype, see convert_element().
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace tessera::interp {

inline float double_to_float(double x) {
  if (std::isfinite(x) && std::fabs(x) > static_cast<double>(FLT_MAX)) {
    // Halfway between FLT_MAX and 2^128; FLT_MAX's significand is odd, so a tie goes up.
    const double halfway = static_cast<double>(FLT_MAX) + std::ldexp(1.0, 103);
    if (std::fabs(x) >= halfway) return std::copysign(INFINITY, static_cast<float>(x > 0 ? 1 : -1));
    return x > 0 ? FLT_MAX : -FLT_MAX;
  }
  return static_cast<float>(x);
}

template <class From, class To>
inline To convert_scalar(From x) {
  if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    if (x != x) return To(0);
    double v = std::trunc(static_cast<double>(x));
    constexpr double lo = static_cast<double>(std::numeric_limits<To>::min());
    constexpr double hi_excl = std::is_signed_v<To> ? -lo : 2.0 * (static_cast<double>(std::numeric_limits<To>::max() / 2) + 1.0);
    if (v <= lo) return std::numeric_limits<To>::min();
    if (v >= hi_excl) return std::numeric_limits<To>::max();
    return static_cast<To>(v);
  } else if constexpr (std::is_same_v<From, double> && std::is_same_v<To, float>) {
    return double_to_float(x);
  } else {
    return static_cast<To>(x);
  }
}

}  // namespace tessera::interp
