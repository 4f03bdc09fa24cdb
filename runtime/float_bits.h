// The bit patterns of the 16-bit floats, which arrays keep as float values
// (runtime/array.h): what bitcast_convert_type, nextafter and
// reduce_precision of bf16 / f16 work on, and what .npy files hold for f16.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace tessera::interp {

// `f` must be a bf16 value: its float's low 16 bits are zero.
inline uint16_t bf16_bits(float f) { return static_cast<uint16_t>(std::bit_cast<uint32_t>(f) >> 16); }
inline float bf16_from_bits(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

// A NaN keeps its sign and the top 10 bits of its payload, as a hardware
// conversion does (a payload that would vanish becomes the quiet bit).
inline float f16_from_bits(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h >> 15) << 31, exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
  if (exp == 0) {  // zero or subnormal: mant * 2^-24, exact in float
    float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7F800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

// `f` must be an f16 value (the arrays keep f16 data rounded so).
inline uint16_t f16_bits(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  uint32_t exp = (u >> 23) & 0xFFu, mant = u & 0x7FFFFFu;
  if (exp == 0xFF) {
    if (mant == 0) return sign | 0x7C00u;
    uint16_t payload = static_cast<uint16_t>(mant >> 13);
    return sign | 0x7C00u | (payload ? payload : 0x200u);
  }
  int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 31) return sign | 0x7C00u;
  if (e <= 0) return sign | static_cast<uint16_t>(std::lround(std::fabs(f) * 16777216.0f));  // subnormal, * 2^24
  return sign | static_cast<uint16_t>((static_cast<uint32_t>(e) << 10) | (mant >> 13));
}

// nextafter on a 16-bit format: one step of its bit pattern towards y.
template <uint16_t (*Bits)(float), float (*FromBits)(uint16_t)>
float nextafter16(float x, float y) {
  if (x != x || y != y) return x + y;  // NaN
  if (x == y) return y;
  if (x == 0) return FromBits(static_cast<uint16_t>(std::signbit(y) ? 0x8001u : 0x0001u));
  uint16_t b = Bits(x);
  bool away_from_zero = (x < y) == (x > 0);
  return FromBits(static_cast<uint16_t>(away_from_zero ? b + 1 : b - 1));
}

}  // namespace tessera::interp
