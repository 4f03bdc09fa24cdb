// erf_inv and nextafter: Pallas lowers them through jnp helpers
// (jax/_src/pallas/utils.py, `erf_inv_lowering_helper`, XLA's f32 polynomial
// with two coefficient sets, and `nextafter_lowering_helper`, a step of the
// bit pattern); these rules write the ops those helpers trace to, for f32.
// One deviation: the helper's NaN test `x != x` would lower to the ordered
// `cmpf one`, which is never true; NaNs are found with `cmpf uno` here.
#include <limits>

#include "backends/mosaic/mlir_types.h"
#include "backends/mosaic/vector_groups.h"
#include "backends/mosaic/vector_values.h"

namespace tessera::backends::mosaic {
namespace {

using namespace vec;

// Elementwise ops on values of one shape, for writing formulas.
struct Formula {
  EmitContext& ctx;
  Shape shape;

  std::string type(DType d) const { return value_type(ArrayType{d, shape}); }
  std::string c(DType d, double v) { return constant_on(ctx, d, v, shape); }
  std::string op(const char* name, const std::vector<std::string>& args, DType d, const Var* result = nullptr) {
    return put(ctx, pretty(name, args, type(d)), result);
  }
  std::string cmp(const char* pred, DType d, const std::string& a, const std::string& b) {
    return compare(ctx, pred, d, a, b, shape);
  }
  std::string where(const std::string& p, const std::string& a, const std::string& b, DType d, const Var* result = nullptr) {
    return select(ctx, p, shape, a, b, ArrayType{d, shape}, result);
  }
};

void require_f32(EmitContext& ctx, const Op& op) {
  DType d = array_of(op.operands[0]).dtype;
  if (d != DType::f32) throw ctx.error(op, op.name() + " of " + std::string(dtype_name(d)) + " is not supported (f32 only)");
}

// erf_inv(x) = x * p(w), w = -log1p(-x^2), p a degree-8 polynomial in w - 2.5
// (w < 5) or sqrt(w) - 3; +-inf at x = +-1.
void lower_erf_inv(EmitContext& ctx, const Op& op, const LoweringTable&) {
  require_f32(ctx, op);
  static const double small_w[] = {2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                                   -0.00125372503, -0.00417768164, 0.246640727,    1.50140941};
  static const double large_w[] = {-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                                   -0.0076224613,   0.00943887047,  1.00167406,    2.83297682};
  const DType f = DType::f32;
  Formula e{ctx, result_of(op).shape};
  std::string x = ctx.use(op.operands[0]);
  std::string neg_x = e.op("arith.subf", {e.c(f, 0), x}, f);  // Pallas's neg: 0 - x
  std::string log = e.op("math.log1p", {e.op("arith.mulf", {x, neg_x}, f)}, f);
  std::string w = e.op("arith.subf", {e.c(f, 0), log}, f);
  std::string small = e.cmp("olt", f, w, e.c(f, 5.0));
  std::string shifted = e.op("arith.subf", {w, e.c(f, 2.5)}, f);
  std::string root = e.op("arith.subf", {e.op("math.sqrt", {w}, f), e.c(f, 3.0)}, f);
  w = e.where(small, shifted, root, f);
  std::string p = e.where(small, e.c(f, small_w[0]), e.c(f, large_w[0]), f);
  for (int i = 1; i < 9; ++i) {
    std::string coefficient = e.where(small, e.c(f, small_w[i]), e.c(f, large_w[i]), f);
    p = e.op("arith.addf", {coefficient, e.op("arith.mulf", {p, w}, f)}, f);
  }
  std::string at_one = e.cmp("oeq", f, e.op("math.absf", {x}, f), e.c(f, 1.0));
  std::string infinite = e.op("arith.mulf", {e.c(f, std::numeric_limits<double>::infinity()), x}, f);
  e.where(at_one, infinite, e.op("arith.mulf", {p, x}, f), f, op.results[0]);
}

// nextafter(x, y): the bit pattern of x stepped by one toward y; y when
// x == y; the smallest subnormal signed like y when x is 0; NaN when either is.
void lower_nextafter(EmitContext& ctx, const Op& op, const LoweringTable&) {
  require_f32(ctx, op);
  const DType f = DType::f32, i = DType::i32;
  const ArrayType& out = result_of(op);
  Formula e{ctx, out.shape};
  std::string x = operand_on(ctx, op.operands[0], out.shape), y = operand_on(ctx, op.operands[1], out.shape);
  ArrayType ft{f, out.shape};
  std::string xi = bitcast(ctx, x, ft, i), yi = bitcast(ctx, y, ft, i);
  std::string nan_input = e.cmp("uno", f, x, y);
  std::string x_abs = e.op("arith.andi", {xi, e.c(i, 0x7FFFFFFF)}, i);
  std::string y_abs = e.op("arith.andi", {yi, e.c(i, 0x7FFFFFFF)}, i);
  std::string equal = e.cmp("oeq", f, x, y);
  std::string x_zero = e.cmp("eq", i, x_abs, e.c(i, 0)), y_zero = e.cmp("eq", i, y_abs, e.c(i, 0));
  std::string x_sign = e.op("arith.andi", {xi, e.c(i, -2147483648.0)}, i);
  std::string y_sign = e.op("arith.andi", {yi, e.c(i, -2147483648.0)}, i);
  std::string tiny_like_y = e.op("arith.ori", {y_sign, e.c(i, 1)}, i);
  std::string toward_zero = e.op("arith.ori", {e.cmp("ugt", i, x_abs, y_abs), e.cmp("ne", i, x_sign, y_sign)}, DType::i1);
  std::string step = e.where(toward_zero, e.c(i, -1), e.c(i, 1), i);
  std::string r = e.op("arith.addi", {xi, step}, i);
  r = e.where(x_zero, e.where(y_zero, yi, tiny_like_y, i), r, i);
  r = e.where(equal, yi, r, i);
  r = e.where(nan_input, e.c(i, 0x7FC00000), r, i);
  bitcast(ctx, r, ArrayType{i, out.shape}, f, op.results[0]);
}

}  // namespace

void add_composite_rules(LoweringTable& t) {
  t.set("erf_inv", lower_erf_inv);
  t.set("nextafter", lower_nextafter);
}

}  // namespace tessera::backends::mosaic
