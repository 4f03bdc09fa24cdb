#include "backends/mosaic/constants.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <cstdlib>

#include "backends/mosaic/mlir_types.h"

namespace tessera::backends::mosaic {
namespace {

// The hexadecimal bit pattern MLIR uses for a non-finite value of `d`.
std::string non_finite_hex(double v, DType d) {
  char buf[32];
  if (d == DType::f64) {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    std::snprintf(buf, sizeof buf, "0x%016llX", static_cast<unsigned long long>(bits));
    return buf;
  }
  float f = static_cast<float>(v);
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if (d == DType::bf16) {
    std::snprintf(buf, sizeof buf, "0x%04X", bits >> 16);
  } else if (d == DType::f16) {
    // sign, all-ones exponent, and a quiet-NaN bit when not infinite
    uint32_t h = ((bits >> 16) & 0x8000u) | 0x7C00u | (std::isnan(f) ? 0x0200u : 0u);
    std::snprintf(buf, sizeof buf, "0x%04X", h);
  } else {
    std::snprintf(buf, sizeof buf, "0x%08X", bits);
  }
  return buf;
}

bool reads_back(const char* text, double v, DType d) {
  double r = std::strtod(text, nullptr);
  if (d == DType::f64) return r == v;
  return static_cast<float>(r) == static_cast<float>(v);  // bf16/f16 literals hold f32-exact values
}

}  // namespace

std::string float_text(double v, DType d) {
  if (!std::isfinite(v)) return non_finite_hex(v, d);
  char buf[40];
  for (int precision = 6; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*e", precision, v);
    if (reads_back(buf, v, d)) break;
  }
  return buf;
}

std::string literal_text(const Literal& l) {
  if (is_float(l.dtype)) return float_text(l.f, l.dtype);
  if (is_bool(l.dtype)) return l.i ? "true" : "false";
  return std::to_string(l.i);
}

std::string scalar_constant(EmitContext& ctx, const Literal& l) {
  if (is_bool(l.dtype)) {
    // MLIR writes an i1 constant without its type (`arith.constant true : i1` does not parse).
    std::string name = ctx.fresh(l.i ? "true" : "false");
    ctx.line(name + " = arith.constant " + literal_text(l));
    return name;
  }
  std::string name = ctx.fresh(is_float(l.dtype) ? "cst" : "c");
  ctx.line(name + " = arith.constant " + literal_text(l) + " : " + element_type(l.dtype));
  return name;
}

std::string splat_constant(EmitContext& ctx, const Literal& l, const Shape& shape) {
  std::string name = ctx.fresh("cst");
  ctx.line(name + " = arith.constant dense<" + literal_text(l) + "> : " + vector_type(shape, l.dtype));
  return name;
}

std::string index_constant(EmitContext& ctx, int64_t v) {
  std::string name = ctx.fresh("c" + std::to_string(v < 0 ? -v : v));
  ctx.line(name + " = arith.constant " + std::to_string(v) + " : index");
  return name;
}

std::string i32_constant(EmitContext& ctx, int64_t v) {
  std::string name = ctx.fresh("c" + std::to_string(v < 0 ? -v : v) + "_i32");
  ctx.line(name + " = arith.constant " + std::to_string(v) + " : i32");
  return name;
}

}  // namespace tessera::backends::mosaic
