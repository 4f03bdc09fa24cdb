#include "ir/value.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace tessera {

std::string Literal::str() const {
  if (is_bool(dtype)) return i ? "true" : "false";
  std::string v;
  if (is_float(dtype)) {
    if (std::isnan(f)) v = "nan";
    else if (std::isinf(f)) v = f > 0 ? "inf" : "-inf";
    else {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.17g", f);
      // Shortest representation that round-trips.
      for (int prec = 1; prec <= 17; ++prec) {
        std::snprintf(buf, sizeof buf, "%.*g", prec, f);
        if (std::strtod(buf, nullptr) == f) break;
      }
      v = buf;
      if (v.find_first_of(".en") == std::string::npos) v += ".0";
    }
  } else {
    v = std::to_string(i);
  }
  return v + ":" + std::string(dtype_name(dtype));
}

bool Literal::operator==(const Literal& o) const {
  if (dtype != o.dtype) return false;
  if (is_float(dtype)) return (std::isnan(f) && std::isnan(o.f)) || f == o.f;
  return i == o.i;
}

}  // namespace tessera
