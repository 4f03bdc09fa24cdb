// jvp rules of elementwise math, comparisons, conversions, structural ops,
// reductions and dot_general.
#include "transforms/jvp.h"

namespace tessera::jvp {
namespace {

using Vals = std::vector<Value>;
using Tans = std::vector<Tangent>;

Value lit(const Value& like, double v) { return Builder::literal(like.type().dtype(), v); }

Tangent tadd(Builder& b, const Tangent& x, const Tangent& y) {
  if (!x) return y;
  if (!y) return x;
  return b.binary("add", *x, *y);
}

Tangent tneg(Builder& b, const Tangent& x) {
  if (!x) return std::nullopt;
  return b.unary("neg", *x);
}

Tangent tmul(Builder& b, const Tangent& t, Value f) {
  if (!t) return std::nullopt;
  return b.binary("mul", *t, f);
}

// Integer / comparison / rounding ops and ops whose results carry no
// information about the inputs' perturbation: primal only, zero tangents.
RuleResult zero_rule(Ctx& c, const Op& op, const Vals& x, const Tans&) {
  Vals y = emit_primal(c, op, x);
  return {y, Tans(y.size())};
}

JvpRule unary(Primitive::TangentFn f) {
  return [f](Ctx& c, const Op& op, const Vals& x, const Tans& dx) -> RuleResult {
    Vals y = emit_primal(c, op, x);
    if (!dx[0] || !differentiable(y[0].type())) return {y, {std::nullopt}};
    return {y, {f(c.b, x[0], y[0], *dx[0])}};
  };
}

// A rule for an op linear in the operands at `linear` (operand positions; all
// operands if empty): the tangent is the same op applied to their tangents,
// the other operands (indices, sizes) unchanged.
JvpRule linear(std::vector<int> linear_ops = {}) {
  return [linear_ops](Ctx& c, const Op& op, const Vals& x, const Tans& dx) -> RuleResult {
    Vals y = emit_primal(c, op, x);
    std::vector<int> lin = linear_ops;
    if (lin.empty())
      for (size_t i = 0; i < x.size(); ++i) lin.push_back(static_cast<int>(i));
    bool any = false;
    for (int i : lin) any |= dx[i].has_value();
    if (!any || !differentiable(y[0].type())) return {y, Tans(y.size())};
    Vals ops = x;
    for (int i : lin) ops[i] = c.instantiate(dx[i], x[i].type());
    return {y, {ad::emit_like(c.b, op, ops)[0]}};
  };
}

RuleResult add_rule(Ctx& c, const Op& op, const Vals& x, const Tans& dx) {
  Vals y = emit_primal(c, op, x);
  return {y, {tadd(c.b, dx[0], dx[1])}};
}

RuleResult sub_rule(Ctx& c, const Op& op, const Vals& x, const Tans& dx) {
  Vals y = emit_primal(c, op, x);
  return {y, {tadd(c.b, dx[0], tneg(c.b, dx[1]))}};
}

RuleResult mul_rule(Ctx& c, const Op& op, const Vals& x, const Tans& dx) {
  Vals y = emit_primal(c, op, x);
  Tangent t0 = tmul(c.b, dx[0], x[1]);
  Tangent t1 = tmul(c.b, dx[1], x[0]);
  return {y, {tadd(c.b, t0, t1)}};
}

// d(x / y) = dx / y - dy * (x / y) / y
RuleResult div_rule(Ctx& c, const Op& op, const Vals& x, const Tans& dx) {
  Vals y = emit_primal(c, op, x);
  Builder& b = c.b;
  Tangent t0 = dx[0] ? Tangent(b.binary("div", *dx[0], x[1])) : std::nullopt;
  Tangent t1 = dx[1] ? Tangent(b.unary("neg", b.binary("div", b.binary("mul", *dx[1], y[0]), x[1]))) : std::nullopt;
  return {y, {tadd(b, t0, t1)}};
}

// max / min: the tangent of the chosen operand; at ties, the mean of both
// (the symmetric choice JAX makes).
JvpRule minmax(bool is_max) {
  return [is_max](Ctx& c, const Op& op, const Vals& x, const Tans& dx) -> RuleResult {
    Vals y = emit_primal(c, op, x);
    Builder& b = c.b;
    Value d0 = c.instantiate(dx[0], x[0].type()), d1 = c.instantiate(dx[1], x[1].type());
    Value pick0 = b.binary(is_max ? "gt" : "lt", x[0], x[1]);
    Value pick1 = b.binary(is_max ? "lt" : "gt", x[0], x[1]);
    Value half = b.binary("mul", b.binary("add", d0, d1), lit(y[0], 0.5));
    Value inner = b.emit1("select_n", {pick1, half, d1});
    return {y, {b.emit1("select_n", {pick0, inner, d0})}};
  };
}

// d(x^y) = y x^(y-1) dx + log(x) x^y dy
RuleResult pow_rule(Ctx& c, const Op& op, const Vals& x, const Tans& dx) {
  Vals y = emit_primal(c, op, x);
  Builder& b = c.b;
  Tangent t0, t1;
  if (dx[0]) {
    Value xm1 = b.binary("pow", x[0], b.binary("sub", x[1], lit(x[1], 1.0)));
    t0 = b.binary("mul", *dx[0], b.binary("mul", x[1], xm1));
  }
  if (dx[1]) t1 = b.binary("mul", *dx[1], b.binary("mul", y[0], b.unary("log", x[0])));
  return {y, {tadd(b, t0, t1)}};
}

// integer_pow[y] x: d = y x^(y-1) dx
RuleResult integer_pow_rule(Ctx& c, const Op& op, const Vals& x, const Tans& dx) {
  Vals r = emit_primal(c, op, x);
  int64_t y = op.param(keys::y);
  if (y == 0 || !differentiable(r[0].type())) return {r, {std::nullopt}};
  Builder& b = c.b;
  Value slope = b.emit1("integer_pow", {x[0]}, {{"y", y - 1}});
  return {r, {b.binary("mul", *dx[0], b.binary("mul", slope, lit(x[0], static_cast<double>(y))))}};
}

// atan2(y, x): d = (x dy - y dx) / (x^2 + y^2)
RuleResult atan2_rule(Ctx& c, const Op& op, const Vals& x, const Tans& dx) {
  Vals r = emit_primal(c, op, x);
  Builder& b = c.b;
  Value norm = b.binary("add", b.binary("mul", x[0], x[0]), b.binary("mul", x[1], x[1]));
  Tangent t0 = dx[0] ? Tangent(b.binary("div", b.binary("mul", *dx[0], x[1]), norm)) : std::nullopt;
  Tangent t1 = dx[1] ? Tangent(b.unary("neg", b.binary("div", b.binary("mul", *dx[1], x[0]), norm))) : std::nullopt;
  return {r, {tadd(b, t0, t1)}};
}

// clamp(lo, x, hi): the tangent of the operand the result is, with the
// conditions of JAX's rule (jax/_src/lax/lax.py, clamp_p): lo's where
// lo > x and lo < hi, x's where lo < x < hi, hi's where hi < x.
RuleResult clamp_rule(Ctx& c, const Op& op, const Vals& x, const Tans& dx) {
  Vals r = emit_primal(c, op, x);
  if (!differentiable(r[0].type())) return {r, {std::nullopt}};
  Builder& b = c.b;
  Value zero = Builder::literal(r[0].type().dtype(), 0);
  auto where = [&](Value pred, const Tangent& t) -> Tangent {
    if (!t) return std::nullopt;
    return b.emit1("select_n", {pred, zero, *t});
  };
  Value below = b.binary("and", b.binary("gt", x[0], x[1]), b.binary("lt", x[0], x[2]));
  Value above = b.binary("lt", x[2], x[1]);
  Value inside = b.binary("and", b.binary("gt", x[1], x[0]), b.binary("lt", x[1], x[2]));
  return {r, {tadd(b, tadd(b, where(below, dx[0]), where(inside, dx[1])), where(above, dx[2]))}};
}

// nextafter(x1, x2) is x1 moved by one ulp towards x2, a step constant
// between binade boundaries: d = dx1, and x2 only picks the direction. (JAX
// defines no jvp for nextafter_p in jax/_src/lax/lax.py; this is the
// derivative almost everywhere, which finite differences agree with.)
RuleResult nextafter_rule(Ctx& c, const Op& op, const Vals& x, const Tans& dx) {
  Vals y = emit_primal(c, op, x);
  return {y, {dx[0]}};  // a rank-0 dx1 beside an array x2 is broadcast by the pass
}

// split: every piece's tangent is the same piece of the tangent.
RuleResult split_rule(Ctx& c, const Op& op, const Vals& x, const Tans& dx) {
  Vals y = emit_primal(c, op, x);
  if (!dx[0] || !differentiable(x[0].type())) return {y, Tans(y.size())};
  Vals pieces = ad::emit_like(c.b, op, {*dx[0]});
  return {y, Tans(pieces.begin(), pieces.end())};
}

// rem(x, y) = x - y * trunc(x / y): d = dx - dy * trunc(x / y)
RuleResult rem_rule(Ctx& c, const Op& op, const Vals& x, const Tans& dx) {
  Vals y = emit_primal(c, op, x);
  Builder& b = c.b;
  Tangent t1;
  if (dx[1]) {
    Value q = b.binary("div", x[0], x[1]);
    Value trunc = b.binary("mul", b.unary("sign", q), b.unary("floor", b.unary("abs", q)));
    t1 = b.unary("neg", b.binary("mul", *dx[1], trunc));
  }
  return {y, {tadd(b, dx[0], t1)}};
}

RuleResult select_rule(Ctx& c, const Op& op, const Vals& x, const Tans& dx) {
  Vals y = emit_primal(c, op, x);
  bool any = false;
  for (size_t i = 1; i < x.size(); ++i) any |= dx[i].has_value();
  if (!any || !differentiable(y[0].type())) return {y, {std::nullopt}};
  Vals ops{x[0]};
  for (size_t i = 1; i < x.size(); ++i) ops.push_back(c.instantiate(dx[i], x[i].type()));
  return {y, {c.b.emit1("select_n", ops)}};
}

RuleResult convert_rule(Ctx& c, const Op& op, const Vals& x, const Tans& dx) {
  Vals y = emit_primal(c, op, x);
  if (!dx[0] || !differentiable(y[0].type()) || !differentiable(x[0].type())) return {y, {std::nullopt}};
  return {y, {ad::emit_like(c.b, op, {*dx[0]})[0]}};
}

RuleResult dot_rule(Ctx& c, const Op& op, const Vals& x, const Tans& dx) {
  Vals y = emit_primal(c, op, x);
  if (!differentiable(y[0].type())) return {y, {std::nullopt}};
  Tangent t0 = dx[0] ? Tangent(ad::emit_like(c.b, op, {*dx[0], x[1]})[0]) : std::nullopt;
  Tangent t1 = dx[1] ? Tangent(ad::emit_like(c.b, op, {x[0], *dx[1]})[0]) : std::nullopt;
  return {y, {tadd(c.b, t0, t1)}};
}

// y broadcast back over the reduced axes of x (the kept axes keep their order).
Value unreduce(Builder& b, Value y, const Type& x, const std::vector<int64_t>& axes) {
  std::vector<int64_t> kept;
  for (int d = 0; d < x.rank(); ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) kept.push_back(d);
  return b.emit1("broadcast_in_dim", {y}, {{"shape", x.shape()}, {"broadcast_dimensions", kept}});
}

// reduce_max / reduce_min: the tangent averaged over the positions holding
// the extremum.
RuleResult reduce_extremum_rule(Ctx& c, const Op& op, const Vals& x, const Tans& dx) {
  Vals y = emit_primal(c, op, x);
  Builder& b = c.b;
  const auto& axes = op.param(keys::axes);
  Value at = b.binary("eq", x[0], unreduce(b, y[0], x[0].type(), axes));
  Value w = b.emit1("convert_element_type", {at}, {{"new_dtype", x[0].type().dtype()}});
  Params sum{{"axes", axes}};
  Value num = b.emit1("reduce_sum", {b.binary("mul", *dx[0], w)}, sum);
  Value cnt = b.emit1("reduce_sum", {w}, sum);
  return {y, {b.binary("div", num, cnt)}};
}

// reduce_prod: sum of dx * prod / x (undefined where x has zeros).
RuleResult reduce_prod_rule(Ctx& c, const Op& op, const Vals& x, const Tans& dx) {
  Vals y = emit_primal(c, op, x);
  Builder& b = c.b;
  const auto& axes = op.param(keys::axes);
  Value ratio = b.binary("div", unreduce(b, y[0], x[0].type(), axes), x[0]);
  return {y, {b.emit1("reduce_sum", {b.binary("mul", *dx[0], ratio)}, {{"axes", axes}})}};
}

// sort: the tangents ride along as extra (non-key) operands of the same sort.
RuleResult sort_rule(Ctx& c, const Op& op, const Vals& x, const Tans& dx) {
  Vals ops = x;
  std::vector<int> which;
  for (size_t i = 0; i < x.size(); ++i)
    if (dx[i] && differentiable(x[i].type())) {
      ops.push_back(*dx[i]);
      which.push_back(static_cast<int>(i));
    }
  Vals all = ad::emit_like(c.b, op, ops);
  RuleResult r{Vals(all.begin(), all.begin() + static_cast<long>(x.size())), Tans(x.size())};
  for (size_t k = 0; k < which.size(); ++k) r.tangents[which[k]] = all[x.size() + k];
  return r;
}

}  // namespace

void add_math_rules(RuleTable<JvpRule>& t) {
  // Elementwise ops whose results are integers or bools (bitwise ops,
  // shifts, comparisons) have no tangent; nor have the piecewise-constant
  // float ops and the integer-valued ops below.
  // Unary math gives its derivative as a trait (ir/prims/elementwise.cpp).
  for (const Primitive* p : registry().of(Family::elementwise)) {
    if (p->to_bool || p->accepts == DTypeClass::int_or_bool || p->accepts == DTypeClass::integer || p->piecewise_constant)
      t.set(p->name, zero_rule);
    else if (p->tangent)
      t.set(p->name, unary(p->tangent));
  }
  for (const char* n : {"argmax", "argmin", "iota", "bitcast_convert_type",
                        "reduce_and", "reduce_or", "program_id", "num_programs", "axis_index", "axis_size", "device_id",
                        "multiple_of", "debug_print", "debug_check", "prng_seed", "prng_random_bits", "delay", "semaphore_signal", "semaphore_wait", "semaphore_read",
                        "get_barrier_semaphore"})
    t.set(n, zero_rule);
  t.set("neg", linear());
  t.set("add", add_rule);
  t.set("sub", sub_rule);
  t.set("mul", mul_rule);
  t.set("div", div_rule);
  t.set("max", minmax(true));
  t.set("min", minmax(false));
  t.set("pow", pow_rule);
  t.set("atan2", atan2_rule);
  t.set("integer_pow", integer_pow_rule);
  t.set("clamp", clamp_rule);
  t.set("rem", rem_rule);
  t.set("nextafter", nextafter_rule);
  // lax's rule (jax/_src/lax/lax.py, ad.deflinear on reduce_precision_p):
  // the tangent is rounded to the same format.
  t.set("reduce_precision", linear());
  t.set("select_n", select_rule);
  t.set("convert_element_type", convert_rule);
  t.set("dot_general", dot_rule);
}

void add_structural_rules(RuleTable<JvpRule>& t) {
  for (const char* n : {"broadcast_in_dim", "reshape", "transpose", "squeeze", "expand_dims", "slice", "rev", "reduce_sum",
                        "cumsum", "dynamic_slice", "gather"})
    t.set(n, linear({0}));
  t.set("roll", linear({0}));
  t.set("take_along_axis", linear({0}));
  t.set("split", split_rule);
  t.set("repeat", linear());
  t.set("concatenate", linear());
  t.set("pad", linear({0, 1}));
  t.set("dynamic_update_slice", linear({0, 1}));
  t.set("reduce_max", reduce_extremum_rule);
  t.set("reduce_min", reduce_extremum_rule);
  t.set("reduce_prod", reduce_prod_rule);
  t.set("sort", sort_rule);
}

}  // namespace tessera::jvp
