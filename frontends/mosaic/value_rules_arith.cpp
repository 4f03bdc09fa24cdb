// arith and math ops as tessera primitives, with MLIR's semantics: integers
// are signless, so the ops that read them unsigned (`divui`, `cmpi ult`,
// `extui`, `uitofp`, ...) convert or flip the sign bit themselves; i1 is
// bool, and as a signed integer `true` is -1 (`extsi`, `sitofp`, `cmpi slt`).
// The emitter's mapping (backends/mosaic/vector_elementwise.cpp,
// vector_convert.cpp) read backwards, plus the ops Pallas never writes but
// the dialects have (`floordivsi`, `maxnumf`, `math.fma`, ...).
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>

#include "frontends/mosaic/value_rules_util.h"

namespace tessera::mlir_text::rules {
namespace {

using V = std::vector<Value>;

Value convert(Builder& b, Value x, DType to) {
  if (dtype_of(x) == to) return x;
  return b.emit1("convert_element_type", {x}, {{"new_dtype", to}});
}

// ---- integer widths and signs ---------------------------------------------------

// `x` (an integer or bool) zero-extended to the wider `to`.
Value zero_extend(Builder& b, Value x, DType to) {
  DType from = dtype_of(x);
  if (is_bool(from) || from == to) return convert(b, x, to);
  uint64_t mask = int_bits(from) >= 64 ? ~uint64_t{0} : (uint64_t{1} << int_bits(from)) - 1;
  return b.binary("and", convert(b, x, to), int_literal(to, static_cast<int64_t>(mask)));
}

// `x` sign-extended to the wider `to`: an i1 `true` is -1.
Value sign_extend(Builder& b, Value x, DType to) {
  if (!is_bool(dtype_of(x))) return convert(b, x, to);
  return b.emit1("select_n", {x, int_literal(to, 0), int_literal(to, -1)});
}

// The low bits of `x` in the narrower `to` (for i1 the lowest bit).
Value truncate(Builder& b, Value x, DType to) {
  if (!is_bool(to)) return convert(b, x, to);
  DType from = dtype_of(x);
  return b.binary("ne", b.binary("and", x, int_literal(from, 1)), int_literal(from, 0));
}

// i8 / i32 read unsigned are u8 / u32; i16 has no unsigned twin and is
// zero-extended to i32; i64 neither (tessera has no u64).
DType unsigned_work_type(const ValueRuleContext& c, DType d) {
  switch (d) {
    case DType::i8: return DType::u8;
    case DType::i16: return DType::i32;
    case DType::i32: return DType::u32;
    default:
      c.fail("unsigned " + std::string(dtype_name(d)) + " arithmetic is not supported" +
             (d == DType::i64 ? " (tessera has no u64)" : ""));
  }
}

Value as_unsigned(const ValueRuleContext& c, Value x) {
  DType w = unsigned_work_type(c, dtype_of(x));
  return is_unsigned_int(w) ? convert(c.b, x, w) : zero_extend(c.b, x, w);
}

// ---- integer division -----------------------------------------------------------

Value unsigned_divide(const ValueRuleContext& c, const char* prim) {
  Value x = as_unsigned(c, c.operands[0]), y = as_unsigned(c, c.operands[1]);
  return convert(c.b, c.b.binary(prim, x, y), dtype_of(c.operands[0]));
}

// floordivsi / ceildivsi from the truncating quotient q and remainder r
// (r has the dividend's sign): floor steps down, ceil up, where r != 0 and
// the exact quotient is negative (floor) or positive (ceil).
Value rounded_divide(const ValueRuleContext& c, bool floor) {
  Builder& b = c.b;
  Value x = c.operands[0], y = c.operands[1];
  DType d = dtype_of(x);
  Value q = b.binary("div", x, y), r = b.binary("rem", x, y);
  Value zero = int_literal(d, 0);
  Value inexact = b.binary("ne", r, zero);
  Value signs_differ = b.binary("ne", b.binary("lt", r, zero), b.binary("lt", y, zero));
  Value step = b.binary("and", inexact, floor ? signs_differ : logical_not(b, signs_differ));
  return b.binary(floor ? "sub" : "add", q, convert(b, step, d));
}

Value ceil_divide_unsigned(const ValueRuleContext& c) {
  Builder& b = c.b;
  Value x = as_unsigned(c, c.operands[0]), y = as_unsigned(c, c.operands[1]);
  DType w = dtype_of(x);
  Value q = b.binary("div", x, y), r = b.binary("rem", x, y);
  Value step = convert(b, b.binary("ne", r, literal(w, 0)), w);
  return convert(b, b.binary("add", q, step), dtype_of(c.operands[0]));
}

// ---- comparisons ----------------------------------------------------------------

// arith's CmpIPredicate, by value: eq, ne, slt, sle, sgt, sge, ult, ule, ugt, uge.
Value compare_ints(const ValueRuleContext& c, int64_t pred) {
  static const char* const prims[] = {"eq", "ne", "lt", "le", "gt", "ge", "lt", "le", "gt", "ge"};
  if (pred < 0 || pred > 9) c.fail("unknown integer predicate " + std::to_string(pred));
  Builder& b = c.b;
  Value x = c.operands[0], y = c.operands[1];
  bool is_unsigned = pred >= 6;
  if (pred >= 2 && is_bool(dtype_of(x))) {
    // tessera orders bools false < true, the unsigned order; signed, true is -1.
    if (!is_unsigned) std::swap(x, y);
  } else if (is_unsigned) {
    x = flip_sign_bit(b, x), y = flip_sign_bit(b, y);
  }
  return b.binary(prims[pred], x, y);
}

// arith's CmpFPredicate, by value: false, oeq, ogt, oge, olt, ole, one, ord,
// ueq, ugt, uge, ult, ule, une, uno, true. tessera's comparisons are IEEE's:
// false on NaN except `ne`, which is true.
Value compare_floats(const ValueRuleContext& c, int64_t pred) {
  Builder& b = c.b;
  Value x = c.operands[0], y = c.operands[1];
  auto unordered = [&] { return b.binary("or", is_nan(b, x), is_nan(b, y)); };
  auto negated = [&](const char* prim) { return logical_not(b, b.binary(prim, x, y)); };
  Type bools = Type::array(DType::i1, c.result_type(0).shape());
  switch (pred) {
    case 0: return full(b, bools, 0);
    case 1: return b.binary("eq", x, y);
    case 2: return b.binary("gt", x, y);
    case 3: return b.binary("ge", x, y);
    case 4: return b.binary("lt", x, y);
    case 5: return b.binary("le", x, y);
    case 6: return b.binary("or", b.binary("lt", x, y), b.binary("gt", x, y));
    case 7: return logical_not(b, unordered());
    case 8: return b.binary("or", b.binary("eq", x, y), unordered());
    case 9: return negated("le");
    case 10: return negated("lt");
    case 11: return negated("ge");
    case 12: return negated("gt");
    case 13: return b.binary("ne", x, y);
    case 14: return unordered();
    case 15: return full(b, bools, 1);
    default: c.fail("unknown float predicate " + std::to_string(pred));
  }
}

int64_t predicate(const ValueRuleContext& c, const std::vector<std::string_view>& names) {
  const Attr& a = need_attr(c, "predicate");
  if (a.kind == Attr::Int) return a.i;
  std::string word = a.kind == Attr::String ? a.s : a.kind == Attr::Dialect ? a.text : "";
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == word) return static_cast<int64_t>(i);
  c.fail("unknown predicate `" + word + "`");
}

// ---- conversions ----------------------------------------------------------------

DType result_dtype(const ValueRuleContext& c) { return c.result_type(0).dtype(); }

Value int_to_float(const ValueRuleContext& c, bool is_unsigned) {
  Builder& b = c.b;
  Value x = c.operands[0];
  DType to = result_dtype(c);
  if (is_bool(dtype_of(x))) return is_unsigned ? convert(b, x, to) : b.emit1("select_n", {x, literal(to, 0), literal(to, -1)});
  return convert(b, is_unsigned ? as_unsigned(c, x) : x, to);
}

Value float_to_int(const ValueRuleContext& c, bool is_unsigned) {
  Builder& b = c.b;
  Value x = c.operands[0];
  DType to = result_dtype(c);
  if (is_bool(to)) return truncate(b, convert(b, x, DType::i32), to);
  if (!is_unsigned || to == DType::i64) return convert(b, x, to);
  // Through the unsigned twin, so [2^(n-1), 2^n) keeps its bits.
  return convert(b, convert(b, x, unsigned_work_type(c, to)), to);
}

void expect_widths(const ValueRuleContext& c, bool widen) {
  int from = is_float(dtype_of(c.operands[0])) ? dtype_bytes(dtype_of(c.operands[0])) * 8 : int_bits(dtype_of(c.operands[0]));
  DType to_d = result_dtype(c);
  int to = is_float(to_d) ? dtype_bytes(to_d) * 8 : int_bits(to_d);
  if (widen ? to <= from : to >= from)
    c.fail(std::string("the result must be ") + (widen ? "wider" : "narrower") + " than the operand, got " +
           c.operands[0].type().str() + " to " + std::string(dtype_name(to_d)));
}

Value index_cast(const ValueRuleContext& c, bool is_unsigned) {
  Value x = c.operands[0];
  DType from = dtype_of(x), to = result_dtype(c);
  if (from == to) return x;  // i32 <-> index: the same bits here
  if (int_bits(to) < int_bits(from)) return truncate(c.b, x, to);
  return is_unsigned ? zero_extend(c.b, x, to) : sign_extend(c.b, x, to);
}

Value bitcast(const ValueRuleContext& c) {
  Value x = c.operands[0];
  DType from = dtype_of(x), to = result_dtype(c);
  if (from == to) return x;
  if (is_bool(from) || is_bool(to) || dtype_bytes(from) != dtype_bytes(to))
    c.fail("bitcast from " + std::string(dtype_name(from)) + " to " + std::string(dtype_name(to)) +
           " is not supported (only between equal widths of at least 8 bits)");
  return c.b.emit1("bitcast_convert_type", {x}, {{"new_dtype", to}});
}

// ---- constants ------------------------------------------------------------------

// One run of a non-splat dense constant: `n` values from flat index `start`:
// `first`, `first + step`, ... (step 0 for floats and bools).
template <class T>
struct Run {
  size_t start, n;
  T first, step;
};

constexpr size_t kMaxDenseRuns = 256;

// Equal values, with -0.0 and 0.0 told apart.
template <class T>
bool same(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) return a == b && std::signbit(a) == std::signbit(b);
  else return a == b;
}

// Maximal runs of equal values, or (integers) of at least three evenly
// spaced ones.
template <class T>
std::vector<Run<T>> runs_of(const std::vector<T>& v, bool progressions) {
  std::vector<Run<T>> runs;
  for (size_t i = 0; i < v.size();) {
    T step = 0;
    if constexpr (std::is_integral_v<T>)
      if (progressions && i + 1 < v.size()) step = static_cast<T>(static_cast<uint64_t>(v[i + 1]) - static_cast<uint64_t>(v[i]));
    auto continues = [&](size_t j) {
      if (step == 0) return same(v[j], v[j - 1]);
      return static_cast<T>(static_cast<uint64_t>(v[j]) - static_cast<uint64_t>(v[j - 1])) == step;
    };
    size_t j = i + 1;
    while (j < v.size() && continues(j)) ++j;
    if (step != 0 && j - i == 2) j = i + 1, step = 0;  // a pair: two runs of one
    runs.push_back({i, j - i, v[i], step});
    i = j;
  }
  return runs;
}

Value scalar_of(DType d, double v) { return literal(d, v); }
Value scalar_of(DType d, int64_t v) { return int_literal(d, v); }

// A dense constant of several values: its runs of equal (or, for integers,
// evenly spaced) values, concatenated and reshaped.
template <class T>
Value dense_constant(const ValueRuleContext& c, const Type& t, const std::vector<T>& v) {
  Builder& b = c.b;
  DType d = t.dtype();
  if (static_cast<int64_t>(v.size()) != t.array_type().size())
    c.fail("has " + std::to_string(v.size()) + " values for " + t.str());
  std::vector<Run<T>> runs = runs_of(v, is_int(d));
  if (runs.size() > kMaxDenseRuns)
    c.fail("non-splat dense constants of more than " + std::to_string(kMaxDenseRuns) +
           " runs of equal or evenly spaced values are not supported (this one has " + std::to_string(runs.size()) + ")");
  std::vector<Value> pieces;
  for (const Run<T>& r : runs) {
    Shape s{static_cast<int64_t>(r.n)};
    Value first = scalar_of(d, r.first);
    if (r.step == 0) {
      pieces.push_back(b.broadcast_scalar(first, s));
      continue;
    }
    Value iota = b.emit1("iota", {}, {{"dtype", d}, {"shape", s}, {"dimension", int64_t{0}}});
    pieces.push_back(b.binary("add", b.binary("mul", iota, scalar_of(d, r.step)), first));
  }
  Value flat = pieces.size() == 1 ? pieces[0] : b.emit1("concatenate", pieces, {{"dimension", int64_t{0}}});
  if (t.rank() == 1) return flat;
  return b.emit1("reshape", {flat}, {{"new_sizes", t.shape()}});
}

template <class T>
Value dense_or_splat(const ValueRuleContext& c, const Type& t, const std::vector<T>& v) {
  if (v.empty()) c.fail("a dense value without elements");
  if (v.size() == 1) return c.b.broadcast_scalar(scalar_of(t.dtype(), v[0]), t.shape());
  if (t.rank() == 0) c.fail("several values for the scalar type " + t.str());
  return dense_constant(c, t, v);
}

Value constant(const ValueRuleContext& c) {
  expect_operands(c, 0);
  Type t = c.result_type(0);
  DType d = t.dtype();
  const Attr& a = need_attr(c, "value");
  switch (a.kind) {
    case Attr::Bool: return full(c.b, t, a.b ? 1 : 0);
    case Attr::Int:
      if (is_float(d)) c.fail("an integer value for a " + t.str() + " result");
      return c.b.broadcast_scalar(int_literal(d, a.i), t.shape());
    case Attr::Float:
      if (!is_float(d)) c.fail("a float value for a " + t.str() + " result");
      return full(c.b, t, a.f);
    case Attr::Dense:
      if (is_float(d)) return dense_or_splat(c, t, a.floats);
      if (!a.floats.empty()) c.fail("float values for a " + t.str() + " result");
      return dense_or_splat(c, t, a.ints);
    default: c.fail("unsupported constant value (a bool, integer, float or dense value is)");
  }
}

// ---- math compositions ------------------------------------------------------------

// The sign bit of float `x`, as a bool.
Value sign_bit(Builder& b, Value x) {
  DType d = dtype_of(x);
  DType bits = dtype_bytes(d) == 8 ? DType::i64 : dtype_bytes(d) == 4 ? DType::i32 : DType::i16;
  Value i = b.emit1("bitcast_convert_type", {x}, {{"new_dtype", bits}});
  return b.binary("lt", i, int_literal(bits, 0));
}

Value copysign(Builder& b, Value x, Value y) {
  Value magnitude = b.unary("abs", x);
  return b.emit1("select_n", {sign_bit(b, y), magnitude, b.unary("neg", magnitude)});
}

// a * b + c, rounded once for f32 and narrower: the product is exact in f64
// (2 x 24 bits), the sum rounds in f64 and then to the dtype (a double
// rounding that differs from a fused one only on rare ties); f64 rounds twice.
Value fma(Builder& b, Value x, Value y, Value z) {
  DType d = dtype_of(x);
  if (d == DType::f64) return b.binary("add", b.binary("mul", x, y), z);
  Value w = b.binary("add", b.binary("mul", convert(b, x, DType::f64), convert(b, y, DType::f64)), convert(b, z, DType::f64));
  return convert(b, w, d);
}

// trunc: toward zero, floor for positives and ceil for negatives.
Value trunc(Builder& b, Value x) {
  Value negative = b.binary("lt", x, literal(dtype_of(x), 0));
  return b.emit1("select_n", {negative, b.unary("floor", x), b.unary("ceil", x)});
}

Value is_inf(Builder& b, Value x) {
  return b.binary("eq", b.unary("abs", x), literal(dtype_of(x), std::numeric_limits<double>::infinity()));
}

// ---- registration -----------------------------------------------------------------

void one(RuleMap& t, const char* name, std::function<Value(const ValueRuleContext&)> f) {
  t[name] = [f = std::move(f)](ValueRuleContext& c) { return V{f(c)}; };
}

// An op of `n` operands of class `k` that is one primitive (with params).
void direct(RuleMap& t, const char* name, size_t n, Class k, std::string prim, Params params = {}) {
  one(t, name, [=](const ValueRuleContext& c) {
    expect_all(c, n, k);
    return c.b.emit1(prim, c.operands, params);
  });
}

void unary(RuleMap& t, const char* name, Class k, std::function<Value(Builder&, Value)> f) {
  one(t, name, [=](const ValueRuleContext& c) {
    expect_all(c, 1, k);
    return f(c.b, c.operands[0]);
  });
}

void binary(RuleMap& t, const char* name, Class k, std::function<Value(const ValueRuleContext&)> f) {
  one(t, name, [=](const ValueRuleContext& c) {
    expect_all(c, 2, k);
    return f(c);
  });
}

// addi / subi / muli: on i1 (arithmetic modulo 2) xor, xor and and.
void ring_op(RuleMap& t, const char* name, const char* prim, const char* on_bool) {
  binary(t, name, Class::integer, [=](const ValueRuleContext& c) {
    return c.b.binary(is_bool(dtype_of(c.operands[0])) ? on_bool : prim, c.operands[0], c.operands[1]);
  });
}

// A cast of one operand of class `from` whose result dtype is checked by `check`.
void cast(RuleMap& t, const char* name, Class from, std::function<Value(const ValueRuleContext&)> f) {
  one(t, name, [=](const ValueRuleContext& c) {
    expect_all(c, 1, from);
    return f(c);
  });
}

Class class_of(DType d) { return is_float(d) ? Class::floating : Class::integer; }

void expect_result(const ValueRuleContext& c, Class k) {
  DType d = result_dtype(c);
  if (class_of(d) != k) c.fail("the result must be " + std::string(k == Class::floating ? "a float" : "an integer") +
                               ", got " + c.result_type(0).str());
}

void add_arith_values(RuleMap& t) {
  one(t, "arith.constant", constant);
  for (auto [name, prim] : {std::pair{"arith.addf", "add"}, {"arith.subf", "sub"}, {"arith.mulf", "mul"}, {"arith.divf", "div"},
                            {"arith.remf", "rem"}, {"arith.maximumf", "max"}, {"arith.minimumf", "min"}})
    direct(t, name, 2, Class::floating, prim);
  direct(t, "arith.negf", 1, Class::floating, "neg");
  binary(t, "arith.maxnumf", Class::floating,
         [](const ValueRuleContext& c) { return nan_ignoring_max(c.b, c.operands[0], c.operands[1], true); });
  binary(t, "arith.minnumf", Class::floating,
         [](const ValueRuleContext& c) { return nan_ignoring_max(c.b, c.operands[0], c.operands[1], false); });

  ring_op(t, "arith.addi", "add", "xor");
  ring_op(t, "arith.subi", "sub", "xor");
  ring_op(t, "arith.muli", "mul", "and");
  for (auto [name, prim] : {std::pair{"arith.divsi", "div"}, {"arith.remsi", "rem"}, {"arith.andi", "and"}, {"arith.ori", "or"},
                            {"arith.xori", "xor"}, {"arith.shli", "shift_left"}, {"arith.shrsi", "shift_right_arithmetic"},
                            {"arith.shrui", "shift_right_logical"}})
    direct(t, name, 2, Class::integer, prim);
  binary(t, "arith.divui", Class::integer, [](const ValueRuleContext& c) { return unsigned_divide(c, "div"); });
  binary(t, "arith.remui", Class::integer, [](const ValueRuleContext& c) { return unsigned_divide(c, "rem"); });
  binary(t, "arith.floordivsi", Class::integer, [](const ValueRuleContext& c) { return rounded_divide(c, true); });
  binary(t, "arith.ceildivsi", Class::integer, [](const ValueRuleContext& c) { return rounded_divide(c, false); });
  binary(t, "arith.ceildivui", Class::integer, ceil_divide_unsigned);
  for (auto [name, kind] : {std::pair{"arith.maxsi", "maxsi"}, {"arith.minsi", "minsi"}, {"arith.maxui", "maxui"},
                            {"arith.minui", "minui"}}) {
    std::string k = kind;
    binary(t, name, Class::integer, [k](const ValueRuleContext& c) { return combine(c, k, c.operands[0], c.operands[1]); });
  }

  binary(t, "arith.cmpi", Class::integer, [](const ValueRuleContext& c) {
    return compare_ints(c, predicate(c, {"eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"}));
  });
  binary(t, "arith.cmpf", Class::floating, [](const ValueRuleContext& c) {
    return compare_floats(c, predicate(c, {"false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge", "ult",
                                           "ule", "une", "uno", "true"}));
  });
  one(t, "arith.select", [](const ValueRuleContext& c) {
    expect_operands(c, 3);
    if (!is_bool(dtype_of(c.operands[0]))) c.fail("the condition must be i1, got " + c.operands[0].type().str());
    return c.b.emit1("select_n", {c.operands[0], c.operands[2], c.operands[1]});
  });
}

void add_arith_casts(RuleMap& t) {
  cast(t, "arith.extf", Class::floating, [](const ValueRuleContext& c) {
    expect_result(c, Class::floating), expect_widths(c, true);
    return convert(c.b, c.operands[0], result_dtype(c));
  });
  cast(t, "arith.truncf", Class::floating, [](const ValueRuleContext& c) {
    expect_result(c, Class::floating), expect_widths(c, false);
    if (const Attr* mode = find_attr(c, "roundingmode"); mode && !(mode->kind == Attr::Int && mode->i == 0))
      c.fail("only the default rounding (to nearest even) is supported");
    return convert(c.b, c.operands[0], result_dtype(c));
  });
  cast(t, "arith.extsi", Class::integer, [](const ValueRuleContext& c) {
    expect_result(c, Class::integer), expect_widths(c, true);
    return sign_extend(c.b, c.operands[0], result_dtype(c));
  });
  cast(t, "arith.extui", Class::integer, [](const ValueRuleContext& c) {
    expect_result(c, Class::integer), expect_widths(c, true);
    return zero_extend(c.b, c.operands[0], result_dtype(c));
  });
  cast(t, "arith.trunci", Class::integer, [](const ValueRuleContext& c) {
    expect_result(c, Class::integer), expect_widths(c, false);
    return truncate(c.b, c.operands[0], result_dtype(c));
  });
  for (bool is_unsigned : {false, true}) {
    cast(t, is_unsigned ? "arith.uitofp" : "arith.sitofp", Class::integer, [is_unsigned](const ValueRuleContext& c) {
      expect_result(c, Class::floating);
      return int_to_float(c, is_unsigned);
    });
    cast(t, is_unsigned ? "arith.fptoui" : "arith.fptosi", Class::floating, [is_unsigned](const ValueRuleContext& c) {
      expect_result(c, Class::integer);
      return float_to_int(c, is_unsigned);
    });
    cast(t, is_unsigned ? "arith.index_castui" : "arith.index_cast", Class::integer, [is_unsigned](const ValueRuleContext& c) {
      expect_result(c, Class::integer);
      return index_cast(c, is_unsigned);
    });
  }
  cast(t, "arith.bitcast", Class::any, bitcast);
}

void add_math(RuleMap& t) {
  for (const char* n : {"exp", "exp2", "log", "log1p", "expm1", "sqrt", "rsqrt", "tanh", "sin", "cos", "tan", "erf", "floor", "ceil",
                        "cbrt"})
    direct(t, (std::string("math.") + n).c_str(), 1, Class::floating, n);
  direct(t, "math.absf", 1, Class::floating, "abs");
  direct(t, "math.absi", 1, Class::integer, "abs");
  direct(t, "math.ctlz", 1, Class::integer, "clz");
  direct(t, "math.ctpop", 1, Class::integer, "population_count");
  direct(t, "math.round", 1, Class::floating, "round", {{"rounding_method", std::string("away_from_zero")}});
  direct(t, "math.roundeven", 1, Class::floating, "round", {{"rounding_method", std::string("to_nearest_even")}});
  direct(t, "math.powf", 2, Class::floating, "pow");
  direct(t, "math.atan2", 2, Class::floating, "atan2");
  unary(t, "math.trunc", Class::floating, trunc);
  unary(t, "math.atan", Class::floating, [](Builder& b, Value x) { return b.binary("atan2", x, literal(dtype_of(x), 1)); });
  unary(t, "math.log2", Class::floating,
        [](Builder& b, Value x) { return b.binary("div", b.unary("log", x), literal(dtype_of(x), std::numbers::ln2)); });
  unary(t, "math.log10", Class::floating,
        [](Builder& b, Value x) { return b.binary("div", b.unary("log", x), literal(dtype_of(x), std::numbers::ln10)); });
  unary(t, "math.isnan", Class::floating, is_nan);
  unary(t, "math.isinf", Class::floating, is_inf);
  unary(t, "math.isfinite", Class::floating, [](Builder& b, Value x) { return b.unary("is_finite", x); });
  binary(t, "math.copysign", Class::floating,
         [](const ValueRuleContext& c) { return copysign(c.b, c.operands[0], c.operands[1]); });
  one(t, "math.fma", [](const ValueRuleContext& c) {
    expect_all(c, 3, Class::floating);
    return fma(c.b, c.operands[0], c.operands[1], c.operands[2]);
  });
}

}  // namespace

Value fused_multiply_add(Builder& b, Value x, Value y, Value z) { return fma(b, x, y, z); }

void add_arith_rules(RuleMap& t) {
  add_arith_values(t);
  add_arith_casts(t);
  add_math(t);
  // cf.assert: pl.debug_check's lowering; `tessera run` stops with the message.
  t["cf.assert"] = [](ValueRuleContext& c) {
    expect_operands(c, 1);
    const Type& p = c.operands[0].type();
    if (!is_bool(p.dtype()) || p.rank() != 0) c.fail("the condition must be an i1 scalar, got " + p.str());
    const Attr* msg = find_attr(c, "msg");
    c.b.emit("debug_check", {c.operands[0]}, {{"msg", msg && msg->kind == Attr::String ? msg->s : std::string("assertion failed")}});
    return V{};
  };
}

}  // namespace tessera::mlir_text::rules
