// Elementwise rules: one arith / math op per formula, chosen by the class of
// the operands' dtype (float, signed or unsigned integer), comparisons,
// select_n, and the few ops Pallas builds from several (neg, sign, logistic,
// integer_pow, clamp, is_finite), all as in jax/_src/pallas/mosaic/lowering.py.
// bf16 and f16 values use the same ops as f32, as Pallas writes them.
#include <map>
#include <string_view>

#include "backends/mosaic/constants.h"
#include "backends/mosaic/mlir_types.h"
#include "backends/mosaic/vector_groups.h"
#include "backends/mosaic/vector_values.h"

namespace tessera::backends::mosaic {
namespace {

using namespace vec;

// The op of a formula per dtype class; null where Pallas has none.
struct ByClass {
  const char* floating;
  const char* signed_int;  // and bool
  const char* unsigned_int;
};

const char* pick(const ByClass& c, DType d) {
  return is_float(d) ? c.floating : is_unsigned_int(d) ? c.unsigned_int : c.signed_int;
}

// Formulas that are one op on their operands, in operand order.
const std::map<std::string_view, ByClass>& formulas() {
  static const std::map<std::string_view, ByClass> table = {
      {"add", {"arith.addf", "arith.addi", "arith.addi"}},
      {"sub", {"arith.subf", "arith.subi", "arith.subi"}},
      {"mul", {"arith.mulf", "arith.muli", "arith.muli"}},
      {"div", {"arith.divf", "arith.divsi", "arith.divui"}},
      {"rem", {"arith.remf", "arith.remsi", "arith.remui"}},
      {"max", {"arith.maximumf", "arith.maxsi", "arith.maxui"}},
      {"min", {"arith.minimumf", "arith.minsi", "arith.minui"}},
      {"and", {nullptr, "arith.andi", "arith.andi"}},
      {"or", {nullptr, "arith.ori", "arith.ori"}},
      {"xor", {nullptr, "arith.xori", "arith.xori"}},
      {"shift_left", {nullptr, "arith.shli", "arith.shli"}},
      {"shift_right_logical", {nullptr, "arith.shrui", "arith.shrui"}},
      {"shift_right_arithmetic", {nullptr, "arith.shrsi", "arith.shrsi"}},
      {"pow", {"math.powf", nullptr, nullptr}},
      {"atan2", {"math.atan2", nullptr, nullptr}},
      {"abs", {"math.absf", "math.absi", "math.absi"}},
      {"exp", {"math.exp", nullptr, nullptr}},
      {"exp2", {"math.exp2", nullptr, nullptr}},
      {"log", {"math.log", nullptr, nullptr}},
      {"log1p", {"math.log1p", nullptr, nullptr}},
      {"sqrt", {"math.sqrt", nullptr, nullptr}},
      {"rsqrt", {"math.rsqrt", nullptr, nullptr}},
      {"tanh", {"math.tanh", nullptr, nullptr}},
      {"sin", {"math.sin", nullptr, nullptr}},
      {"cos", {"math.cos", nullptr, nullptr}},
      {"tan", {"math.tan", nullptr, nullptr}},
      {"erf", {"math.erf", nullptr, nullptr}},
      {"floor", {"math.floor", nullptr, nullptr}},
      {"ceil", {"math.ceil", nullptr, nullptr}},
      {"clz", {nullptr, "math.ctlz", "math.ctlz"}},
      {"population_count", {nullptr, "math.ctpop", "math.ctpop"}},
  };
  return table;
}

// Comparison predicates: ordered for floats (`ne` is `one`, false on NaN, as
// Pallas writes it), signed or unsigned for integers.
const std::map<std::string_view, ByClass>& predicates() {
  static const std::map<std::string_view, ByClass> table = {
      {"eq", {"oeq", "eq", "eq"}},    {"ne", {"one", "ne", "ne"}},    {"lt", {"olt", "slt", "ult"}},
      {"le", {"ole", "sle", "ule"}}, {"gt", {"ogt", "sgt", "ugt"}}, {"ge", {"oge", "sge", "uge"}},
  };
  return table;
}

// `%r = OP args : T` for formula `name` on operands of dtype `d`.
std::string formula(EmitContext& ctx, const Op& op, std::string_view name, DType d, const std::vector<std::string>& args,
                    const ArrayType& out, const Var* result = nullptr) {
  const char* mlir_op = pick(formulas().at(name), d);
  if (!mlir_op)
    throw ctx.error(op, "no lowering for `" + std::string(name) + "` of " + std::string(dtype_name(d)) + " operands");
  return put(ctx, pretty(mlir_op, args, value_type(out)), result);
}

std::vector<std::string> operands_on(EmitContext& ctx, const Op& op, const Shape& shape) {
  std::vector<std::string> args;
  for (const Value& v : op.operands) args.push_back(operand_on(ctx, v, shape));
  return args;
}

void lower_formula(EmitContext& ctx, const Op& op, const LoweringTable&) {
  const ArrayType& out = result_of(op);
  if (op.name() == "population_count" && out.shape.empty())
    throw ctx.error(op, "Population count is not supported on scalars");
  formula(ctx, op, op.name(), array_of(op.operands[0]).dtype, operands_on(ctx, op, out.shape), out, op.results[0]);
}

// `not` as Pallas writes it: xor with all ones (`true` for bool).
std::string bitwise_not(EmitContext& ctx, const std::string& x, const ArrayType& t, const Var* result = nullptr) {
  std::string ones = splat(ctx, Literal::of_int(t.dtype, -1), t.shape);
  return put(ctx, pretty("arith.xori", {x, ones}, value_type(t)), result);
}

void lower_not(EmitContext& ctx, const Op& op, const LoweringTable&) {
  bitwise_not(ctx, ctx.use(op.operands[0]), result_of(op), op.results[0]);
}

// Comparisons of bools are boolean algebra (lt is !x & y, ...), as Pallas's
// `_cmp_boolean_lowering_helper`.
std::string compare_bools(EmitContext& ctx, std::string_view name, const std::string& x, const std::string& y,
                          const ArrayType& t, const Var* result) {
  std::string type = value_type(t);
  if (name == "eq") return bitwise_not(ctx, put(ctx, pretty("arith.xori", {x, y}, type)), t, result);
  if (name == "ne") return put(ctx, pretty("arith.xori", {x, y}, type), result);
  bool negate_x = name == "lt" || name == "le";
  std::string a = negate_x ? bitwise_not(ctx, x, t) : x;
  std::string b = negate_x ? y : bitwise_not(ctx, y, t);
  return put(ctx, pretty(name == "lt" || name == "gt" ? "arith.andi" : "arith.ori", {a, b}, type), result);
}

void lower_compare(EmitContext& ctx, const Op& op, const LoweringTable&) {
  const ArrayType& out = result_of(op);
  DType d = array_of(op.operands[0]).dtype;
  std::vector<std::string> args = operands_on(ctx, op, out.shape);
  if (is_bool(d)) {
    compare_bools(ctx, op.name(), args[0], args[1], out, op.results[0]);
    return;
  }
  compare(ctx, pick(predicates().at(op.name()), d), d, args[0], args[1], out.shape, op.results[0]);
}

// neg x is 0 - x (Pallas lowers it through its `sub` rule).
void lower_neg(EmitContext& ctx, const Op& op, const LoweringTable&) {
  const ArrayType& out = result_of(op);
  std::string zero = constant_on(ctx, out.dtype, 0, out.shape);
  formula(ctx, op, "sub", out.dtype, {zero, ctx.use(op.operands[0])}, out, op.results[0]);
}

void lower_square(EmitContext& ctx, const Op& op, const LoweringTable&) {
  const ArrayType& out = result_of(op);
  std::string x = ctx.use(op.operands[0]);
  formula(ctx, op, "mul", out.dtype, {x, x}, out, op.results[0]);
}

// pow with the literal base 2.0 is exp2, as in Pallas's rule.
void lower_pow(EmitContext& ctx, const Op& op, const LoweringTable& table) {
  const Value& base = op.operands[0];
  const ArrayType& out = result_of(op);
  if (base.is_literal() && base.literal().as_double() == 2.0) {
    put(ctx, pretty("math.exp2", {operand_on(ctx, op.operands[1], out.shape)}, value_type(out)), op.results[0]);
    return;
  }
  lower_formula(ctx, op, table);
}

// integer_pow by repeated squaring, as lax's `_integer_pow` that Pallas
// lowers: y = 0 is ones, y = 1 is x itself, a negative y divides 1 by x^-y.
void lower_integer_pow(EmitContext& ctx, const Op& op, const LoweringTable&) {
  const ArrayType& out = result_of(op);
  int64_t y = op.param(keys::y);
  if (y == 0) {
    ctx.alias(op.results[0], constant_on(ctx, out.dtype, 1, out.shape));
    return;
  }
  bool reciprocal = y < 0;
  if (reciprocal) y = -y;
  std::string x = ctx.use(op.operands[0]), acc;
  while (y > 0) {
    bool last = (y >> 1) == 0;  // the highest bit: its product is the result
    if (y & 1) acc = acc.empty() ? x : formula(ctx, op, "mul", out.dtype, {acc, x}, out, last && !reciprocal ? op.results[0] : nullptr);
    y >>= 1;
    if (y > 0) x = formula(ctx, op, "mul", out.dtype, {x, x}, out);
  }
  if (reciprocal) {
    std::string one = constant_on(ctx, out.dtype, 1, out.shape);
    formula(ctx, op, "div", out.dtype, {one, acc}, out, op.results[0]);
  } else if (acc == x) {  // y is a power of two (or 1): the last square is the result
    ctx.alias(op.results[0], acc);
  }
}

// logistic: 1 / (1 + exp(-x)), Pallas's ops.
void lower_logistic(EmitContext& ctx, const Op& op, const LoweringTable&) {
  const ArrayType& out = result_of(op);
  std::string type = value_type(out);
  std::string neg = put(ctx, pretty("arith.negf", {ctx.use(op.operands[0])}, type));
  std::string e = put(ctx, pretty("math.exp", {neg}, type));
  std::string one = constant_on(ctx, out.dtype, 1, out.shape);
  std::string denom = put(ctx, pretty("arith.addf", {one, e}, type));
  put(ctx, pretty("arith.divf", {one, denom}, type), op.results[0]);
}

// sign: floats take the sign bit of x onto 1.0 where |x| > 0, else x itself
// (which keeps +-0 and NaN); signed integers (x > 0) - (x < 0); unsigned x != 0.
// Pallas's bf16 path for TPU v4 and later, which stays in 16 bits; f16 goes through f32.
void lower_sign(EmitContext& ctx, const Op& op, const LoweringTable&) {
  const ArrayType& out = result_of(op);
  std::string x = ctx.use(op.operands[0]);
  if (is_int(out.dtype)) {
    ArrayType b{DType::i1, out.shape};
    std::string zero = constant_on(ctx, out.dtype, 0, out.shape);
    auto as_int = [&](const std::string& p) {
      return put(ctx, "arith.extui " + p + " : " + value_type(b) + " to " + value_type(out));
    };
    if (is_unsigned_int(out.dtype)) {
      std::string nz = compare(ctx, "ne", out.dtype, x, zero, out.shape);
      put(ctx, "arith.extui " + nz + " : " + value_type(b) + " to " + value_type(out), op.results[0]);
      return;
    }
    std::string pos = as_int(compare(ctx, "sgt", out.dtype, x, zero, out.shape));
    std::string neg = as_int(compare(ctx, "slt", out.dtype, x, zero, out.shape));
    put(ctx, pretty("arith.subi", {pos, neg}, value_type(out)), op.results[0]);
    return;
  }
  bool via_f32 = out.dtype == DType::f16;
  ArrayType f{via_f32 ? DType::f32 : out.dtype, out.shape};
  if (via_f32) x = put(ctx, "arith.extf " + x + " : " + value_type(out) + " to " + value_type(f));
  bool narrow = f.dtype == DType::bf16;
  DType bits = narrow ? DType::i16 : DType::i32;
  ArrayType i{bits, out.shape};
  std::string ix = bitcast(ctx, x, f, bits);
  std::string sign_bit = put(ctx, pretty("arith.andi", {ix, constant_on(ctx, bits, narrow ? -0x8000 : -0x80000000LL, out.shape)},
                                         value_type(i)));
  std::string one_bits = constant_on(ctx, bits, narrow ? 0x3F80 : 0x3F800000, out.shape);
  std::string signed_one = bitcast(ctx, put(ctx, pretty("arith.ori", {one_bits, sign_bit}, value_type(i))), i, f.dtype);
  std::string abs = put(ctx, pretty("math.absf", {x}, value_type(f)));
  std::string nonzero = compare(ctx, "ogt", f.dtype, abs, constant_on(ctx, f.dtype, 0, out.shape), out.shape);
  if (!via_f32) {
    select(ctx, nonzero, out.shape, signed_one, x, f, op.results[0]);
    return;
  }
  std::string r = select(ctx, nonzero, out.shape, signed_one, x, f);
  put(ctx, "arith.truncf " + r + " : " + value_type(f) + " to " + value_type(out), op.results[0]);
}

void lower_round(EmitContext& ctx, const Op& op, const LoweringTable&) {
  const char* mlir_op = op.param(keys::rounding_method) == "to_nearest_even" ? "math.roundeven" : "math.round";
  put(ctx, pretty(mlir_op, {ctx.use(op.operands[0])}, value_type(result_of(op))), op.results[0]);
}

// pl.reciprocal is `tpu.reciprocal` (f32 vectors); a scalar, which the op
// does not take, divides.
void lower_reciprocal(EmitContext& ctx, const Op& op, const LoweringTable&) {
  const ArrayType& out = result_of(op);
  if (out.dtype != DType::f32) throw ctx.error(op, "reciprocal: Only float32 is supported.");
  std::string x = ctx.use(op.operands[0]);
  if (out.shape.empty()) {
    put(ctx, pretty("arith.divf", {constant_on(ctx, out.dtype, 1, {}), x}, "f32"), op.results[0]);
    return;
  }
  std::string approx = std::string("approx = ") + (op.param(keys::approx) ? "true" : "false");
  put(ctx, generic("tpu.reciprocal", {x}, approx, {value_type(out)}, value_type(out)), op.results[0]);
}

// is_finite: not `tpu.weird` (true for infinities and NaNs).
void lower_is_finite(EmitContext& ctx, const Op& op, const LoweringTable&) {
  const ArrayType& out = result_of(op);
  const ArrayType& in = array_of(op.operands[0]);
  std::string weird = put(ctx, generic("tpu.weird", {ctx.use(op.operands[0])}, "", {value_type(in)}, value_type(out)));
  bitwise_not(ctx, weird, out, op.results[0]);
}

// clamp lo, x, hi = min(max(x, lo), hi), as Pallas's `_clamp`.
void lower_clamp(EmitContext& ctx, const Op& op, const LoweringTable&) {
  const ArrayType& out = result_of(op);
  std::vector<std::string> a = operands_on(ctx, op, out.shape);
  std::string lo_bounded = formula(ctx, op, "max", out.dtype, {a[1], a[0]}, out);
  formula(ctx, op, "min", out.dtype, {lo_bounded, a[2]}, out, op.results[0]);
}

// select_n p, c0, c1 is `arith.select p, c1, c0`; an i32 predicate is first
// compared with 0; one case is itself. Like Pallas, at most two cases.
void lower_select_n(EmitContext& ctx, const Op& op, const LoweringTable&) {
  const ArrayType& out = result_of(op);
  size_t cases = op.operands.size() - 1;
  if (cases > 2) throw ctx.error(op, "select_n only supported with <= 2 arguments (got " + std::to_string(cases) + " cases)");
  const ArrayType& p = array_of(op.operands[0]);
  std::string pred = ctx.use(op.operands[0]);
  if (cases == 1) {
    ctx.alias(op.results[0], operand_on(ctx, op.operands[1], out.shape));
    return;
  }
  if (!is_bool(p.dtype)) pred = compare(ctx, "ne", p.dtype, pred, constant_on(ctx, p.dtype, 0, p.shape), p.shape);
  std::string c0 = operand_on(ctx, op.operands[1], out.shape), c1 = operand_on(ctx, op.operands[2], out.shape);
  select(ctx, pred, p.shape, c1, c0, out, op.results[0]);
}

}  // namespace

void add_elementwise_rules(LoweringTable& t) {
  t.set_family(Family::elementwise, [](const Primitive& p) { return formulas().count(p.name) > 0; }, lower_formula);
  t.set_family(Family::elementwise, [](const Primitive& p) { return predicates().count(p.name) > 0; }, lower_compare);
  t.set("pow", lower_pow);
  t.set("not", lower_not);
  t.set("neg", lower_neg);
  t.set("square", lower_square);
  t.set("integer_pow", lower_integer_pow);
  t.set("logistic", lower_logistic);
  t.set("sign", lower_sign);
  t.set("round", lower_round);
  t.set("reciprocal", lower_reciprocal);
  t.set("is_finite", lower_is_finite);
  t.set("clamp", lower_clamp);
  t.set("select_n", lower_select_n);
}

}  // namespace tessera::backends::mosaic
