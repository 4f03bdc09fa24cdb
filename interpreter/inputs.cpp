#include "interpreter/inputs.h"

#include <cmath>
#include <cstdio>
#include <random>

namespace tessera::interp {

Array random_array(const ArrayType& t, uint64_t seed) {
  Array a = Array::uninitialized(t.dtype, t.shape);
  std::mt19937_64 rng(seed);
  for (int64_t i = 0; i < a.size(); ++i) {
    uint64_t r = rng();
    if (is_float(t.dtype)) a.set(i, static_cast<double>(r >> 11) * 0x1.0p-53 * 2.0 - 1.0);
    else if (is_bool(t.dtype)) a.set(i, static_cast<double>(r & 1));
    else a.set(i, static_cast<double>(r % 8));
  }
  return a;
}

namespace {
std::string num(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}
}  // namespace

std::string summarize(const Array& a) {
  std::string s = std::string(dtype_name(a.dtype())) + shape_str(a.shape());
  // shape_str prints "(1024, 512)"; show the type the way the text format does.
  s = Type::array(a.type()).str();
  if (a.size() == 0) return s + "  (empty)";
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  int64_t nans = 0;
  for (int64_t i = 0; i < a.size(); ++i) {
    double v = a.get(i);
    if (std::isnan(v)) {
      ++nans;
      continue;
    }
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  int64_t n = a.size() - nans;
  s += "  min " + (n ? num(lo) : "nan") + " max " + (n ? num(hi) : "nan") + " mean " + (n ? num(sum / n) : "nan");
  if (nans) s += "  nan count " + std::to_string(nans);
  s += "  first [";
  int64_t k = std::min<int64_t>(a.size(), 4);
  for (int64_t i = 0; i < k; ++i) s += (i ? ", " : "") + num(a.get(i));
  if (a.size() > k) s += ", ...";
  return s + "]";
}

}  // namespace tessera::interp
