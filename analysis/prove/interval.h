// Integer intervals: the cheap first pass of the prover.
//
// Every integer value of an index map or kernel gets an interval [lo, hi]
// (both ends included) computed from the grid sizes, declared ranges and loop
// bounds. Many obligations are settled by intervals alone, without asking Z3
// (TVM's and tinygrad's approach). Bounds saturate at +-kInf, which means "no
// bound known"; arithmetic on saturated ends stays saturated.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

namespace tessera::prove {

struct Interval {
  static constexpr int64_t kInf = int64_t{1} << 62;
  int64_t lo = -kInf, hi = kInf;

  static Interval of(int64_t v) { return {v, v}; }
  static Interval range(int64_t lo, int64_t hi) { return {clamp(lo), clamp(hi)}; }
  static Interval top() { return {}; }
  bool bounded() const { return lo > -kInf && hi < kInf; }
  bool within(int64_t a, int64_t b) const { return lo >= a && hi <= b; }
  bool is_const() const { return lo == hi && bounded(); }
  bool contains(int64_t v) const { return lo <= v && v <= hi; }
  std::string str() const;

  static int64_t clamp(__int128 v) {
    if (v >= kInf) return kInf;
    if (v <= -kInf) return -kInf;
    return static_cast<int64_t>(v);
  }
};

Interval join(Interval a, Interval b);
Interval operator+(Interval a, Interval b);
Interval operator-(Interval a, Interval b);
Interval operator-(Interval a);
Interval operator*(Interval a, Interval b);
Interval trunc_div(Interval a, Interval b);  // rounds toward zero, like the IR
Interval trunc_rem(Interval a, Interval b);  // sign follows the dividend
Interval min(Interval a, Interval b);
Interval max(Interval a, Interval b);
Interval abs(Interval a);

// C++ semantics of integer division, which the IR shares: round toward zero.
inline int64_t trunc_div(int64_t a, int64_t b) { return a / b; }
inline int64_t trunc_rem(int64_t a, int64_t b) { return a % b; }

}  // namespace tessera::prove
