// Elementwise math, comparisons, bitwise ops, select_n and dtype conversion.
//
// Operands of an elementwise op have one shape and one dtype, except that a
// rank-0 operand broadcasts (so `mul %x, 2.0` needs no broadcast_in_dim).
#include <cmath>
#include <numbers>

#include "ir/builder.h"
#include "ir/prims/shape_util.h"

namespace tessera {
using namespace prims;
namespace {

// Common shape of elementwise operands (rank-0 ones broadcast).
Shape broadcast_shape(const Op& op, const std::vector<Type>& ts) {
  Shape shape;
  bool have = false;
  for (const Type& t : ts) {
    if (t.rank() == 0) continue;
    if (!have) shape = t.shape(), have = true;
    else if (t.shape() != shape) fail(op, "operand shapes differ: " + types_str(ts));
  }
  return shape;
}

ShapeRule elementwise_rule(size_t arity, DTypeClass acc, bool to_bool) {
  return [=](const Op& op) {
    expect_operands(op, arity);
    // The common path looks at the operand types in place; the list of copies
    // is built only for an error message.
    auto all_types = [&] {
      std::vector<Type> ts;
      for (size_t i = 0; i < arity; ++i) ts.push_back(array_operand(op, static_cast<int>(i)));
      return ts;
    };
    const Type* shaped = nullptr;  // the first operand of rank > 0
    DType first = DType::f32;
    for (size_t i = 0; i < arity; ++i) {
      const Type& t = array_operand(op, static_cast<int>(i));
      if (i == 0) first = t.dtype();
      if (t.dtype() != first) fail(op, "operand dtypes differ: " + types_str(all_types()));
      if (!in_class(acc, t.dtype())) fail(op, "expects " + std::string(class_noun(acc)) + " dtype, got " + t.str());
    }
    for (size_t i = 0; i < arity; ++i) {  // as broadcast_shape, in the same order of checks
      const Type& t = array_operand(op, static_cast<int>(i));
      if (t.rank() == 0) continue;
      if (!shaped) shaped = &t;
      else if (t.shape() != shaped->shape()) fail(op, "operand shapes differ: " + types_str(all_types()));
    }
    return one_type(Type::array(to_bool ? DType::i1 : first, shaped ? shaped->shape() : Shape{}));
  };
}

Primitive& add(Registry& r, std::string name, std::string summary, int arity, DTypeClass acc, bool to_bool = false) {
  Primitive p{std::move(name), std::move(summary), {}, elementwise_rule(arity, acc, to_bool), {}, false};
  p.arity = arity;
  p.accepts = acc;
  p.to_bool = to_bool;
  return r.add(std::move(p));
}

// ---- derivatives of the unary math ops, applied to a tangent dx -----------------

Value lit(const Value& like, double v) { return Builder::literal(like.type().dtype(), v); }

Value d_exp(Builder& b, Value, Value y, Value d) { return b.binary("mul", d, y); }
Value d_exp2(Builder& b, Value, Value y, Value d) { return b.binary("mul", d, b.binary("mul", y, lit(y, std::numbers::ln2))); }
Value d_expm1(Builder& b, Value, Value y, Value d) { return b.binary("mul", d, b.binary("add", y, lit(y, 1))); }
Value d_log(Builder& b, Value x, Value, Value d) { return b.binary("div", d, x); }
Value d_log1p(Builder& b, Value x, Value, Value d) { return b.binary("div", d, b.binary("add", x, lit(x, 1))); }
Value d_sqrt(Builder& b, Value, Value y, Value d) { return b.binary("div", d, b.binary("mul", y, lit(y, 2))); }
Value d_rsqrt(Builder& b, Value x, Value y, Value d) {
  return b.binary("mul", d, b.binary("div", b.binary("mul", y, lit(y, -0.5)), x));
}
Value d_tanh(Builder& b, Value, Value y, Value d) { return b.binary("mul", d, b.binary("sub", lit(y, 1), b.binary("mul", y, y))); }
Value d_logistic(Builder& b, Value, Value y, Value d) {
  return b.binary("mul", d, b.binary("mul", y, b.binary("sub", lit(y, 1), y)));
}
Value d_sin(Builder& b, Value x, Value, Value d) { return b.binary("mul", d, b.unary("cos", x)); }
Value d_tan(Builder& b, Value, Value y, Value d) { return b.binary("mul", d, b.binary("add", lit(y, 1), b.binary("mul", y, y))); }
Value d_square(Builder& b, Value x, Value, Value d) { return b.binary("mul", d, b.binary("mul", x, lit(x, 2))); }
Value d_cos(Builder& b, Value x, Value, Value d) { return b.unary("neg", b.binary("mul", d, b.unary("sin", x))); }
Value d_abs(Builder& b, Value x, Value, Value d) { return b.binary("mul", d, b.unary("sign", x)); }
// cbrt: d / (3 y^2); reciprocal: -d y^2; erf_inv: d sqrt(pi)/2 exp(y^2).
Value d_erf_inv(Builder& b, Value, Value y, Value d) {
  Value g = b.unary("exp", b.binary("mul", y, y));
  return b.binary("mul", d, b.binary("mul", g, lit(y, std::sqrt(std::numbers::pi) / 2)));
}
Value d_cbrt(Builder& b, Value, Value y, Value d) { return b.binary("div", d, b.binary("mul", b.binary("mul", y, y), lit(y, 3))); }
Value d_reciprocal(Builder& b, Value, Value y, Value d) { return b.unary("neg", b.binary("mul", d, b.binary("mul", y, y))); }
Value d_erf(Builder& b, Value x, Value, Value d) {
  Value g = b.unary("exp", b.unary("neg", b.binary("mul", x, x)));
  return b.binary("mul", d, b.binary("mul", g, lit(x, 2.0 / std::sqrt(std::numbers::pi))));
}

}  // namespace

void register_elementwise(Registry& r) {
  struct UnaryMath {
    const char* name;
    Primitive::TangentFn tangent;  // null: piecewise constant
  };
  for (auto [n, tangent] : {UnaryMath{"exp", d_exp}, {"log", d_log}, {"sqrt", d_sqrt}, {"rsqrt", d_rsqrt},
                            {"tanh", d_tanh}, {"logistic", d_logistic}, {"sin", d_sin}, {"cos", d_cos}, {"tan", d_tan}, {"floor", nullptr},
                            {"ceil", nullptr}, {"exp2", d_exp2}, {"log1p", d_log1p},
                            {"expm1", d_expm1}, {"erf", d_erf}, {"cbrt", d_cbrt}, {"erf_inv", d_erf_inv}}) {
    Primitive& p = add(r, n, std::string("elementwise ") + n, 1, DTypeClass::floating);
    p.tangent = tangent;
    p.piecewise_constant = !tangent;
    p.transcendental = !p.piecewise_constant;
  }
  // lax.round's rounding_method: half away from zero (its default) or to even.
  Primitive& round = add(r, "round", "elementwise round to an integer value, halves away from zero or to even", 1,
                         DTypeClass::floating);
  round.params = {choice("rounding_method", {"away_from_zero", "to_nearest_even"}, "away_from_zero")};
  round.piecewise_constant = true;
  add(r, "neg", "elementwise negation", 1, DTypeClass::numeric);
  add(r, "abs", "elementwise absolute value", 1, DTypeClass::numeric).tangent = d_abs;
  // lax.square: x * x (integers wrap, as mul does).
  add(r, "square", "elementwise x * x", 1, DTypeClass::numeric).tangent = d_square;
  add(r, "sign", "elementwise sign (-1, 0, 1)", 1, DTypeClass::numeric).piecewise_constant = true;
  add(r, "not", "bitwise / logical not", 1, DTypeClass::int_or_bool);
  // pl.reciprocal: `approx` lets a backend use a fast approximation; the
  // interpreter computes 1 / x exactly either way.
  Primitive& recip = add(r, "reciprocal", "elementwise 1 / x (approx=true: a backend may approximate)", 1, DTypeClass::floating);
  recip.params = {opt("approx", ParamKind::Bool, false)};
  recip.tangent = d_reciprocal;
  add(r, "is_finite", "elementwise: neither infinite nor NaN, giving bool", 1, DTypeClass::floating, true);
  // lax.integer_pow: x ** y by repeated multiplication (integers wrap); a
  // negative y is the reciprocal, so floats only.
  Primitive& ipow = add(r, "integer_pow", "elementwise x ** y for a static integer y", 1, DTypeClass::numeric);
  ipow.params = {req("y", ParamKind::Int)};
  ipow.shape = [rule = ipow.shape](const Op& op) {
    std::vector<Type> out = rule(op);
    if (op.int_param("y") < 0 && !is_float(out[0].dtype()))
      fail(op, "a negative exponent y = " + std::to_string(op.int_param("y")) + " needs a float dtype, got " + out[0].str());
    return out;
  };
  // lax.reduce_precision: x rounded to a float format with exponent_bits
  // and mantissa_bits (XLA's ReducePrecision).
  Primitive& rp = add(r, "reduce_precision", "elementwise x rounded to exponent_bits / mantissa_bits (lax.reduce_precision)", 1,
                      DTypeClass::floating);
  rp.params = {req("exponent_bits", ParamKind::Int), req("mantissa_bits", ParamKind::Int)};
  rp.shape = [rule = rp.shape](const Op& op) {
    std::vector<Type> out = rule(op);
    if (op.int_param("exponent_bits") < 1)
      fail(op, "exponent_bits must be at least 1, got " + std::to_string(op.int_param("exponent_bits")));
    if (op.int_param("mantissa_bits") < 0)
      fail(op, "mantissa_bits must be at least 0, got " + std::to_string(op.int_param("mantissa_bits")));
    return out;
  };
  for (const char* n : {"add", "sub", "mul", "div", "rem", "max", "min"})
    add(r, n, std::string("elementwise ") + n + " (integer div and rem round toward zero)", 2, DTypeClass::numeric);
  add(r, "pow", "elementwise x ** y", 2, DTypeClass::floating).transcendental = true;
  // lax.nextafter: the neighbour of x1 in its dtype, towards x2 (bf16 and f16
  // step their own 16-bit patterns).
  add(r, "nextafter", "elementwise nextafter %x1, %x2: the next representable float after x1 towards x2", 2,
      DTypeClass::floating);
  add(r, "atan2", "elementwise atan2(y, x): the angle of the point (x, y), in [-pi, pi]", 2, DTypeClass::floating)
      .transcendental = true;
  // lax.clamp(min, x, max): min(max(x, min), max), as XLA defines it; scalars broadcast.
  add(r, "clamp", "clamp %lo, %x, %hi: x limited to [lo, hi] (lax.clamp)", 3, DTypeClass::numeric);
  add(r, "population_count", "elementwise number of set bits", 1, DTypeClass::integer);
  add(r, "clz", "elementwise number of leading zero bits", 1, DTypeClass::integer);
  for (const char* n : {"and", "or", "xor"}) add(r, n, std::string("bitwise / logical ") + n, 2, DTypeClass::int_or_bool);
  for (const char* n : {"shift_left", "shift_right_logical", "shift_right_arithmetic"})
    add(r, n, std::string("bitwise ") + n, 2, DTypeClass::integer);
  for (const char* n : {"eq", "ne", "lt", "le", "gt", "ge"})
    add(r, n, std::string("elementwise comparison ") + n + ", giving bool", 2, DTypeClass::any, true);

  r.add(Primitive{"select_n", "select_n p, c0, c1, ...: picks case p (bool: false -> c0, true -> c1)", {},
                  [](const Op& op) {
                    size_t n = op.num_main_operands();
                    if (n < 2) fail(op, "needs a predicate and at least one case");
                    std::vector<Type> ts;
                    for (size_t i = 0; i < n; ++i) ts.push_back(array_operand(op, static_cast<int>(i)));
                    const Type& pred = ts[0];
                    if (!is_bool(pred.dtype()) && pred.dtype() != DType::i32)
                      fail(op, "predicate must be bool or i32, got " + pred.str());
                    if (is_bool(pred.dtype()) && n > 3) fail(op, "a bool predicate selects between at most 2 cases");
                    for (size_t i = 2; i < n; ++i)
                      if (ts[i].dtype() != ts[1].dtype()) fail(op, "case dtypes differ: " + types_str(ts));
                    return std::vector<Type>{Type::array(ts[1].dtype(), broadcast_shape(op, ts))};
                  },
                  {}, false});

  r.add(Primitive{"convert_element_type", "converts to new_dtype (floats to ints round toward zero)",
                  {req("new_dtype", ParamKind::DType)},
                  [](const Op& op) {
                    expect_operands(op, 1);
                    Type t = array_operand(op, 0);
                    DType d = op.dtype_param("new_dtype");
                    if (is_semaphore(d) || is_semaphore(t.dtype())) fail(op, "cannot convert semaphores");
                    return std::vector<Type>{Type::array(d, t.shape())};
                  },
                  {}, false});
}

}  // namespace tessera
