#include "analysis/prove/interval.h"

namespace tessera::prove {

namespace {

bool inf(int64_t v) { return v <= -Interval::kInf || v >= Interval::kInf; }

// a * b where either end may be saturated (0 * inf is 0).
int64_t mul_end(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  if (inf(a) || inf(b)) return (a < 0) != (b < 0) ? -Interval::kInf : Interval::kInf;
  return Interval::clamp(static_cast<__int128>(a) * b);
}

int64_t add_end(int64_t a, int64_t b) {
  if (inf(a)) return a;
  if (inf(b)) return b;
  return Interval::clamp(static_cast<__int128>(a) + b);
}

int64_t div_end(int64_t a, int64_t b) {  // b != 0
  if (inf(a)) return (a < 0) != (b < 0) ? -Interval::kInf : Interval::kInf;
  if (inf(b)) return 0;
  return a / b;
}

// Division by a divisor interval that excludes zero.
Interval div_nonzero(Interval a, Interval b) {
  int64_t c[4] = {div_end(a.lo, b.lo), div_end(a.lo, b.hi), div_end(a.hi, b.lo), div_end(a.hi, b.hi)};
  return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}

}  // namespace

std::string Interval::str() const {
  auto end = [](int64_t v) { return v <= -kInf ? std::string("-inf") : v >= kInf ? std::string("inf") : std::to_string(v); };
  return "[" + end(lo) + ", " + end(hi) + "]";
}

Interval join(Interval a, Interval b) { return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)}; }
Interval operator+(Interval a, Interval b) {
  if ((a.lo <= -Interval::kInf && b.hi >= Interval::kInf) || (a.hi >= Interval::kInf && b.lo <= -Interval::kInf)) return Interval::top();
  return {add_end(a.lo, b.lo), add_end(a.hi, b.hi)};
}
Interval operator-(Interval a) { return {a.hi >= Interval::kInf ? -Interval::kInf : -a.hi, a.lo <= -Interval::kInf ? Interval::kInf : -a.lo}; }
Interval operator-(Interval a, Interval b) { return a + (-b); }
Interval operator*(Interval a, Interval b) {
  int64_t c[4] = {mul_end(a.lo, b.lo), mul_end(a.lo, b.hi), mul_end(a.hi, b.lo), mul_end(a.hi, b.hi)};
  return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}

Interval trunc_div(Interval a, Interval b) {
  if (b.lo > 0 || b.hi < 0) return div_nonzero(a, b);
  // The divisor may be zero; the prover guards that case separately, so only
  // the non-zero parts of the divisor matter here.
  if (b.lo == 0 && b.hi == 0) return Interval::top();
  Interval out{Interval::kInf, -Interval::kInf};
  if (b.lo < 0) out = join(out, div_nonzero(a, {b.lo, -1}));
  if (b.hi > 0) out = join(out, div_nonzero(a, {1, b.hi}));
  return out;
}

Interval trunc_rem(Interval a, Interval b) {
  // |a % b| < |b| and |a % b| <= |a|; the sign follows a.
  int64_t m = std::max(b.hi >= Interval::kInf ? Interval::kInf : std::abs(b.hi),
                       b.lo <= -Interval::kInf ? Interval::kInf : std::abs(b.lo));
  int64_t bound = m >= Interval::kInf ? Interval::kInf : m - 1;
  int64_t lo = a.lo >= 0 ? 0 : std::max(a.lo, -bound);
  int64_t hi = a.hi <= 0 ? 0 : std::min(a.hi, bound);
  return {lo, hi};
}

Interval min(Interval a, Interval b) { return {std::min(a.lo, b.lo), std::min(a.hi, b.hi)}; }
Interval max(Interval a, Interval b) { return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)}; }
Interval abs(Interval a) {
  if (a.lo >= 0) return a;
  if (a.hi <= 0) return -a;
  return {0, std::max(-a.lo, a.hi)};
}

}  // namespace tessera::prove
