#include "tools/output_check.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tessera::cli {

double max_relative_error(const interp::Array& got, const interp::Array& want) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape()) return std::numeric_limits<double>::infinity();
  double scale = 0;
  for (int64_t i = 0; i < want.size(); ++i)
    if (double w = std::fabs(want.get(i)); std::isfinite(w)) scale = std::max(scale, w);
  double floor = 1e-3 * scale, worst = 0;
  for (int64_t i = 0; i < want.size(); ++i) {
    double g = got.get(i), w = want.get(i);
    if (g == w || (std::isnan(g) && std::isnan(w))) continue;
    if (!std::isfinite(g) || !std::isfinite(w)) return std::numeric_limits<double>::infinity();
    double denom = std::max(std::fabs(w), floor);
    worst = std::max(worst, denom > 0 ? std::fabs(g - w) / denom : std::numeric_limits<double>::infinity());
  }
  return worst;
}

double default_tolerance(DType d) {
  switch (d) {
    case DType::f32: return 1e-5;
    case DType::f64: return 1e-12;
    case DType::bf16: return 0x1p-7;
    case DType::f16: return 0x1p-10;
    default: return 0;
  }
}

}  // namespace tessera::cli
