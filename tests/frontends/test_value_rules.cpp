// The Mosaic import's value rules (frontends/mosaic/value_rules_*.cpp): each
// test builds an Operation as the parser hands it over (generic shape), applies
// its rule to parameters of a fresh body, checks the result types, and runs the
// body in the interpreter to check MLIR's semantics on the values that tell
// the cases apart (negative divisions, NaN comparisons, i1 extensions, ...).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "frontends/mosaic/import_rules.h"
#include "interpreter/interpreter.h"
#include "verify/verify.h"

namespace {

using namespace tessera;
using namespace tessera::mlir_text;
using interp::Array;

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

MType scalar(const std::string& e) {
  MType t;
  t.kind = MType::Scalar, t.element = e, t.text = e;
  return t;
}

MType vec(std::vector<int64_t> shape, const std::string& e) {
  MType t;
  t.kind = MType::Vector, t.element = e, t.shape = std::move(shape);
  t.text = "vector<";
  for (int64_t d : t.shape) t.text += std::to_string(d) + "x";
  t.text += e + ">";
  return t;
}

Attr int_attr(int64_t v) {
  Attr a;
  a.kind = Attr::Int, a.i = v;
  return a;
}
Attr float_attr(double v) {
  Attr a;
  a.kind = Attr::Float, a.f = v;
  return a;
}
Attr str_attr(std::string s) {
  Attr a;
  a.kind = Attr::String, a.s = std::move(s);
  return a;
}
Attr dialect_attr(std::string name, std::string text) {
  Attr a;
  a.kind = Attr::Dialect, a.s = std::move(name), a.text = std::move(text);
  return a;
}
Attr dense_array(std::vector<int64_t> v) {
  Attr a;
  a.kind = Attr::DenseArray, a.ints = std::move(v);
  return a;
}
Attr dense_floats(std::vector<double> v) {
  Attr a;
  a.kind = Attr::Dense, a.floats = std::move(v);
  return a;
}
Attr dense_ints(std::vector<int64_t> v) {
  Attr a;
  a.kind = Attr::Dense, a.ints = std::move(v);
  return a;
}

Operation make_op(std::string name, std::vector<MType> results, std::vector<std::pair<std::string, Attr>> attrs = {}) {
  Operation op;
  op.name = std::move(name);
  op.loc = Loc{std::make_shared<const std::string>("kernel.mlir"), 7, 5};
  op.result_types = std::move(results);
  for (size_t i = 0; i < op.result_types.size(); ++i) op.results.push_back(std::to_string(i));
  op.attrs = std::move(attrs);
  return op;
}

// A body under construction: parameters, rules applied to them, a run.
struct Kernel {
  BodyPtr body = make_body("main", BodyKind::func);
  Builder b{*body};
  std::vector<Array> inputs;

  Value param(const Type& t, std::vector<double> values) {
    inputs.push_back(Array::from_values(t.dtype(), t.shape(), values));
    return b.param(t, "p" + std::to_string(inputs.size()));
  }
  std::vector<Value> apply(const Operation& op, std::vector<Value> operands) {
    const auto& rules = value_rules();
    auto it = rules.find(op.name);
    REQUIRE(it != rules.end());
    b.set_loc(op.loc);
    ValueRuleContext c{b, op, std::move(operands)};
    return it->second(c);
  }
  Value apply1(const Operation& op, std::vector<Value> operands) {
    std::vector<Value> r = apply(op, std::move(operands));
    REQUIRE(r.size() == 1);
    return r[0];
  }
  std::vector<Array> run(std::vector<Value> outputs) {
    b.ret(std::move(outputs));
    Module m;
    m.add(body);
    std::vector<Diagnostic> d = verify_module(m);
    for (const auto& x : d) MESSAGE(x.str());
    REQUIRE(d.empty());
    return interp::run_function(m, "main", inputs);
  }
  int count(std::string_view prim) const {
    int n = 0;
    for (const Op& op : body->ops()) n += op.name() == prim;
    return n;
  }
};

std::vector<double> values(const Array& a) {
  std::vector<double> v;
  for (int64_t i = 0; i < a.size(); ++i) v.push_back(a.get(i));
  return v;
}

// Equal element by element, NaN equal to NaN and -0.0 told from 0.0.
void check_values(const Array& a, const std::vector<double>& want) {
  std::vector<double> got = values(a);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
    if (std::isnan(want[i])) CHECK(std::isnan(got[i]));
    else CHECK((got[i] == want[i] && std::signbit(got[i]) == std::signbit(want[i])));
  }
}

// Within a few f32 ulps: transcendental results depend on the libm.
void check_near(const Array& a, const std::vector<double>& want) {
  std::vector<double> got = values(a);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
    CHECK(std::fabs(got[i] - want[i]) <= 1e-6 * std::max(1.0, std::fabs(want[i])));
  }
}

// The message of the Error applying `op` throws ("" if none), checking it is
// located at the op.
std::string rule_error(const Operation& op, const std::vector<Type>& operand_types) {
  Kernel k;
  std::vector<Value> operands;
  for (const Type& t : operand_types) operands.push_back(k.b.param(t, "x"));
  try {
    k.apply(op, operands);
  } catch (const Error& e) {
    CHECK(e.loc().line == 7);
    CHECK(e.loc().col == 5);
    return e.formatted();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) {
  if (s.find(part) != std::string::npos) return true;
  MESSAGE("'" << s << "' does not contain '" << part << "'");
  return false;
}

const Type kI32x6 = Type::array(DType::i32, {6});

}  // namespace

TEST_CASE("value rules: signed division truncates toward zero; floordivsi and ceildivsi round") {
  Kernel k;
  Value x = k.param(kI32x6, {-7, 7, -7, 7, -6, 0});
  Value y = k.param(kI32x6, {2, -2, -2, 2, 3, 5});
  std::vector<Value> outs;
  for (const char* name : {"arith.divsi", "arith.remsi", "arith.floordivsi", "arith.ceildivsi"})
    outs.push_back(k.apply1(make_op(name, {vec({6}, "i32")}), {x, y}));
  std::vector<Array> r = k.run(outs);
  check_values(r[0], {-3, -3, 3, 3, -2, 0});
  check_values(r[1], {-1, 1, -1, 1, 0, 0});
  check_values(r[2], {-4, -4, 3, 3, -2, 0});
  check_values(r[3], {-3, -3, 4, 4, -2, 0});
}

TEST_CASE("value rules: unsigned division, comparison and max read the bits unsigned") {
  Kernel k;
  Value x = k.param(Type::array(DType::i32, {2}), {-1, 7});
  Value y = k.param(Type::array(DType::i32, {2}), {2, -1});
  Value x8 = k.param(Type::array(DType::i8, {2}), {-2, 5});
  Value y8 = k.param(Type::array(DType::i8, {2}), {3, 3});
  Value x16 = k.param(Type::array(DType::i16, {2}), {-1, 5});
  Value y16 = k.param(Type::array(DType::i16, {2}), {2, 2});
  Attr ult = int_attr(6), slt = int_attr(2);
  std::vector<Value> outs = {
      k.apply1(make_op("arith.divui", {vec({2}, "i32")}), {x, y}),
      k.apply1(make_op("arith.remui", {vec({2}, "i32")}), {x, y}),
      k.apply1(make_op("arith.divui", {vec({2}, "i8")}), {x8, y8}),
      k.apply1(make_op("arith.remui", {vec({2}, "i16")}), {x16, y16}),
      k.apply1(make_op("arith.cmpi", {vec({2}, "i1")}, {{"predicate", ult}}), {x, y}),
      k.apply1(make_op("arith.cmpi", {vec({2}, "i1")}, {{"predicate", slt}}), {x, y}),
      k.apply1(make_op("arith.maxui", {vec({2}, "i32")}), {x, y}),
      k.apply1(make_op("arith.minui", {vec({2}, "i32")}), {x, y}),
      k.apply1(make_op("arith.ceildivui", {vec({2}, "i8")}), {x8, y8}),
      k.apply1(make_op("arith.shrui", {vec({2}, "i32")}), {x, Builder::literal(DType::i32, 28)}),
      k.apply1(make_op("arith.shrsi", {vec({2}, "i32")}), {x, Builder::literal(DType::i32, 28)}),
  };
  std::vector<Array> r = k.run(outs);
  check_values(r[0], {2147483647, 0});
  check_values(r[1], {1, 7});
  check_values(r[2], {84, 1});  // 254 / 3
  check_values(r[3], {1, 1});   // 65535 % 2
  check_values(r[4], {0, 1});   // 0xFFFFFFFF < 2 is false; 7 < 0xFFFFFFFF
  check_values(r[5], {1, 0});
  check_values(r[6], {-1, -1});
  check_values(r[7], {2, 7});
  check_values(r[8], {85, 2});  // ceil(254 / 3), ceil(5 / 3)
  check_values(r[9], {15, 0});
  check_values(r[10], {-1, 0});
}

TEST_CASE("value rules: unsigned 64-bit division is a located error") {
  std::string e = rule_error(make_op("arith.divui", {scalar("i64")}), {Type::scalar(DType::i64), Type::scalar(DType::i64)});
  CHECK(contains(e, "kernel.mlir:7:5: error: `arith.divui`: unsigned i64 arithmetic is not supported"));
}

TEST_CASE("value rules: cmpf predicates, ordered and unordered, on NaN") {
  Kernel k;
  Type t = Type::array(DType::f32, {4});
  std::vector<double> xs = {kNaN, 1, 1, 2}, ys = {1, 1, kNaN, 1};
  Value x = k.param(t, xs), y = k.param(t, ys);
  std::vector<Value> outs;
  for (int64_t p = 0; p < 16; ++p) outs.push_back(k.apply1(make_op("arith.cmpf", {vec({4}, "i1")}, {{"predicate", int_attr(p)}}), {x, y}));
  std::vector<Array> r = k.run(outs);
  for (int64_t p = 0; p < 16; ++p) {
    std::vector<double> want;
    for (size_t i = 0; i < 4; ++i) {
      double a = xs[i], b = ys[i];
      bool unordered = std::isnan(a) || std::isnan(b);
      // CmpFPredicate: 1..7 oeq ogt oge olt ole one ord, 8..14 the same relations unordered (uno: none).
      int64_t rel = p < 8 ? p : p - 7;
      bool eq = a == b, gt = a > b, lt = a < b;
      bool base = (rel == 1 && eq) || (rel == 2 && gt) || (rel == 3 && (gt || eq)) || (rel == 4 && lt) ||
                  (rel == 5 && (lt || eq)) || (rel == 6 && (lt || gt)) || (rel == 7 && p == 7);
      want.push_back(p == 0 ? 0 : p == 15 ? 1 : p < 8 ? (base && !unordered) : (base || unordered));
    }
    INFO("predicate " << p);
    check_values(r[static_cast<size_t>(p)], want);
  }
  // The spot checks the predicates are known by.
  check_values(r[13], {1, 0, 1, 1});  // une: true on NaN
  check_values(r[6], {0, 0, 0, 1});   // one: false on NaN
  check_values(r[11], {1, 0, 1, 0});  // ult
}

TEST_CASE("value rules: maximumf propagates NaN, maxnumf and minnumf ignore it") {
  Kernel k;
  Type t = Type::array(DType::f32, {3});
  Value x = k.param(t, {kNaN, 1, kNaN}), y = k.param(t, {2, kNaN, kNaN});
  std::vector<Value> outs;
  for (const char* name : {"arith.maximumf", "arith.minimumf", "arith.maxnumf", "arith.minnumf"})
    outs.push_back(k.apply1(make_op(name, {vec({3}, "f32")}), {x, y}));
  std::vector<Array> r = k.run(outs);
  check_values(r[0], {kNaN, kNaN, kNaN});
  check_values(r[1], {kNaN, kNaN, kNaN});
  check_values(r[2], {2, 1, kNaN});
  check_values(r[3], {2, 1, kNaN});
}

TEST_CASE("value rules: i1 extends to -1 signed and 1 unsigned; trunci keeps the low bits") {
  Kernel k;
  Value p = k.param(Type::array(DType::i1, {2}), {1, 0});
  Value b8 = k.param(Type::array(DType::i8, {2}), {-1, 5});
  Value i = k.param(Type::array(DType::i32, {4}), {3, 2, 258, -1});
  std::vector<Value> outs = {
      k.apply1(make_op("arith.extsi", {vec({2}, "i32")}), {p}),
      k.apply1(make_op("arith.extui", {vec({2}, "i32")}), {p}),
      k.apply1(make_op("arith.extui", {vec({2}, "i32")}), {b8}),
      k.apply1(make_op("arith.extsi", {vec({2}, "i32")}), {b8}),
      k.apply1(make_op("arith.sitofp", {vec({2}, "f32")}), {p}),
      k.apply1(make_op("arith.uitofp", {vec({2}, "f32")}), {p}),
      k.apply1(make_op("arith.uitofp", {vec({2}, "f32")}), {b8}),
      k.apply1(make_op("arith.trunci", {vec({4}, "i1")}), {i}),
      k.apply1(make_op("arith.trunci", {vec({4}, "i8")}), {i}),
  };
  std::vector<Array> r = k.run(outs);
  check_values(r[0], {-1, 0});
  check_values(r[1], {1, 0});
  check_values(r[2], {255, 5});
  check_values(r[3], {-1, 5});
  check_values(r[4], {-1, 0});
  check_values(r[5], {1, 0});
  check_values(r[6], {255, 5});
  check_values(r[7], {1, 0, 0, 1});
  check_values(r[8], {3, 2, 2, -1});
}

TEST_CASE("value rules: float <-> integer casts, index_cast and bitcast") {
  Kernel k;
  Value f = k.param(Type::array(DType::f32, {3}), {-2.7, 2.7, 200});
  Value i = k.param(Type::scalar(DType::i32), {-5});
  Value big = k.param(Type::scalar(DType::i64), {(1LL << 32) + 3});
  std::vector<Value> outs = {
      k.apply1(make_op("arith.fptosi", {vec({3}, "i32")}), {f}),
      k.apply1(make_op("arith.fptoui", {vec({3}, "i8")}), {f}),
      k.apply1(make_op("arith.index_cast", {scalar("index")}), {i}),
      k.apply1(make_op("arith.index_cast", {scalar("i64")}), {i}),
      k.apply1(make_op("arith.index_castui", {scalar("i64")}), {i}),
      k.apply1(make_op("arith.index_cast", {scalar("index")}), {big}),
      k.apply1(make_op("arith.bitcast", {vec({3}, "i32")}), {f}),
  };
  CHECK(outs[2] == i);  // i32 -> index: the same value
  std::vector<Array> r = k.run(outs);
  check_values(r[0], {-2, 2, 200});
  check_values(r[1], {0, 2, -56});  // 200 as u8, read as i8
  check_values(r[3], {-5});
  check_values(r[4], {4294967291.0});
  check_values(r[5], {3});
  float v = -2.7f;
  int32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  CHECK(r[6].get(0) == bits);
}

TEST_CASE("value rules: select with a scalar i1 condition and with a vector one") {
  Kernel k;
  Type t = Type::array(DType::f32, {3});
  Value c = k.param(Type::scalar(DType::i1), {0});
  Value m = k.param(Type::array(DType::i1, {3}), {1, 0, 1});
  Value a = k.param(t, {1, 2, 3}), b = k.param(t, {-1, -2, -3});
  std::vector<Value> outs = {k.apply1(make_op("arith.select", {vec({3}, "f32")}), {c, a, b}),
                             k.apply1(make_op("arith.select", {vec({3}, "f32")}), {m, a, b})};
  std::vector<Array> r = k.run(outs);
  check_values(r[0], {-1, -2, -3});
  check_values(r[1], {1, -2, 3});
}

TEST_CASE("value rules: constants: scalars, -inf from hex, splats and runs of a non-splat dense value") {
  Kernel k;
  Value s = k.apply1(make_op("arith.constant", {scalar("f32")}, {{"value", float_attr(-kInf)}}), {});
  REQUIRE(s.is_literal());
  CHECK(s.literal().dtype == DType::f32);
  CHECK(s.literal().f == -kInf);
  Value wrapped = k.apply1(make_op("arith.constant", {scalar("i8")}, {{"value", int_attr(255)}}), {});
  CHECK(wrapped.literal().i == -1);
  Value idx = k.apply1(make_op("arith.constant", {scalar("index")}, {{"value", int_attr(4)}}), {});
  CHECK(idx.type() == Type::scalar(DType::i32));
  std::vector<Value> outs = {
      k.apply1(make_op("arith.constant", {vec({2, 3}, "f32")}, {{"value", dense_floats({-kInf})}}), {}),
      k.apply1(make_op("arith.constant", {vec({2, 5}, "i32")}, {{"value", dense_ints({0, 1, 2, 3, 4, 9, 9, 9, -4, 7})}}), {}),
      k.apply1(make_op("arith.constant", {vec({4}, "f32")}, {{"value", dense_floats({1.5, -0.0, 0.0, kNaN})}}), {}),
      k.apply1(make_op("arith.constant", {vec({3}, "i1")}, {{"value", dense_ints({1, 0, 1})}}), {}),
  };
  std::vector<Array> r = k.run(outs);
  check_values(r[0], std::vector<double>(6, -kInf));
  check_values(r[1], {0, 1, 2, 3, 4, 9, 9, 9, -4, 7});
  check_values(r[2], {1.5, -0.0, 0.0, kNaN});
  check_values(r[3], {1, 0, 1});
  CHECK(k.count("iota") == 1);  // 0..4 is one run; -4, 7 two runs of one

  std::vector<int64_t> noise;
  for (int64_t i = 0; i < 600; ++i) noise.push_back(i % 2);
  std::string e = rule_error(make_op("arith.constant", {vec({600}, "i32")}, {{"value", dense_ints(noise)}}), {});
  CHECK(contains(e, "non-splat dense constants of more than 256 runs"));
}

TEST_CASE("value rules: vector.multi_reduction reduces, then combines with a non-identity accumulator") {
  Kernel k;
  Type t = Type::array(DType::f32, {2, 3});
  Value x = k.param(t, {1, 5, 3, -4, kNaN, 2});
  Value acc = k.param(Type::array(DType::f32, {2}), {10, 20});
  Value xi = k.param(Type::array(DType::i32, {2, 2}), {-1, 3, 4, 5});
  auto red = [&](const char* kind, Value src, Value a, MType out, std::vector<int64_t> dims = {1}) {
    return k.apply1(make_op("vector.multi_reduction", {std::move(out)},
                            {{"kind", str_attr(kind)}, {"reduction_dims", dense_array(std::move(dims))}}),
                    {src, a});
  };
  Value neg_inf = k.apply1(make_op("arith.constant", {vec({2}, "f32")}, {{"value", dense_floats({-kInf})}}), {});
  Value zero_i = k.apply1(make_op("arith.constant", {vec({2}, "i32")}, {{"value", dense_ints({0})}}), {});
  int adds_before = k.count("add");
  std::vector<Value> outs = {
      red("add", x, acc, vec({2}, "f32")),
      red("maximumf", x, neg_inf, vec({2}, "f32")),
      red("maxnumf", x, acc, vec({2}, "f32")),
      red("maxui", xi, zero_i, vec({2}, "i32")),
      red("minsi", xi, zero_i, vec({2}, "i32")),
      red("add", x, k.apply1(make_op("arith.constant", {scalar("f32")}, {{"value", float_attr(0.5)}}), {}), scalar("f32"),
          {0, 1}),
  };
  CHECK(k.count("add") == adds_before + 2);  // the -inf / 0 accumulators of maximumf / maxui add no op
  std::vector<Array> r = k.run(outs);
  check_values(r[0], {19, kNaN});
  check_values(r[1], {5, kNaN});
  check_values(r[2], {10, 20});  // max(5, 10), max(max(-4, 2), 20): NaN skipped
  check_values(r[3], {-1, 5});   // 0xFFFFFFFF is the unsigned max
  check_values(r[4], {-1, 0});   // min(min(-1, 3), 0), min(min(4, 5), 0)
  check_values(r[5], {kNaN});
}

TEST_CASE("value rules: tpu.matmul with transposed-rhs dimension numbers, an accumulator and output order") {
  Kernel k;
  Value a = k.param(Type::array(DType::f32, {2, 3}), {1, 2, 3, 4, 5, 6});
  Value bt = k.param(Type::array(DType::f32, {4, 3}), {1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1});
  Value acc = k.param(Type::array(DType::f32, {2, 4}), {100, 200, 300, 400, 500, 600, 700, 800});
  Value zero = k.apply1(make_op("arith.constant", {vec({2, 4}, "f32")}, {{"value", dense_floats({0})}}), {});
  auto dims = [](const char* text) { return std::pair<std::string, Attr>{"dimension_numbers", dialect_attr("tpu.dot_dimension_numbers", text)}; };
  std::vector<Value> outs = {
      k.apply1(make_op("tpu.matmul", {vec({2, 4}, "f32")}, {dims("[1], [1], [0], [0], [0, 0, 1, 0], [], []")}), {a, bt, acc}),
      k.apply1(make_op("tpu.matmul", {vec({2, 4}, "f32")}, {dims("[1], [1], [0], [0], [0, 0, 1, 0], [], []")}), {a, bt, zero}),
  };
  CHECK(k.count("add") == 1);  // the zero accumulator adds nothing
  // The output order (rhs dim 0, lhs dim 0): the product transposed.
  Value zero_t = k.apply1(make_op("arith.constant", {vec({4, 2}, "f32")}, {{"value", dense_floats({0})}}), {});
  outs.push_back(k.apply1(make_op("tpu.matmul", {vec({4, 2}, "f32")}, {dims("[1], [1], [0], [0], [1, 0, 0, 0], [], []")}),
                          {a, bt, zero_t}));
  // Mixed operand dtypes (as in JAX's flash attention: f32 x bf16), and the deprecated flags.
  Value bt16 = k.param(Type::array(DType::bf16, {4, 3}), {1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1});
  outs.push_back(k.apply1(make_op("tpu.matmul", {vec({2, 4}, "f32")}, {{"transpose_rhs", [] { Attr t; t.kind = Attr::Bool, t.b = true; return t; }()}}),
                          {a, bt16, zero}));
  std::vector<Array> r = k.run(outs);
  check_values(r[0], {101, 202, 303, 406, 504, 605, 706, 815});
  check_values(r[1], {1, 2, 3, 6, 4, 5, 6, 15});
  check_values(r[2], {1, 4, 2, 5, 3, 6, 6, 15});
  check_values(r[3], {1, 2, 3, 6, 4, 5, 6, 15});
}

TEST_CASE("value rules: tpu.matmul with bf16 operands accumulates in the f32 accumulator's dtype") {
  Kernel k;
  Value a = k.param(Type::array(DType::bf16, {1, 2}), {256, 1});
  Value b = k.param(Type::array(DType::bf16, {2, 1}), {1, 1});
  Value zero = k.apply1(make_op("arith.constant", {vec({1, 1}, "f32")}, {{"value", dense_floats({0})}}), {});
  Value r0 = k.apply1(make_op("tpu.matmul", {vec({1, 1}, "f32")},
                              {{"dimension_numbers", dialect_attr("tpu.dot_dimension_numbers", "[1], [0], [0], [1], [0, 0, 1, 1], [], []")}}),
                      {a, b, zero});
  CHECK(r0.type() == Type::array(DType::f32, {1, 1}));
  check_values(k.run({r0})[0], {257});  // 257 is not a bf16
}

TEST_CASE("value rules: tpu.iota counts along its dims collapsed row-major") {
  Kernel k;
  std::vector<Value> outs = {
      k.apply1(make_op("tpu.iota", {vec({2, 3}, "i32")}, {{"dimensions", dense_array({1})}}), {}),
      k.apply1(make_op("tpu.iota", {vec({2, 3}, "index")}, {{"dimensions", dense_array({0})}}), {}),
      k.apply1(make_op("tpu.iota", {vec({4, 3, 2}, "i16")}, {{"dimensions", dense_array({2, 0})}}), {}),
  };
  std::vector<Array> r = k.run(outs);
  check_values(r[0], {0, 1, 2, 0, 1, 2});
  check_values(r[1], {0, 0, 0, 1, 1, 1});
  // tpu_ops.td's example: element (i, j, k) is k * 4 + i.
  std::vector<double> want;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j)
      for (int l = 0; l < 2; ++l) want.push_back(l * 4 + i);
  check_values(r[2], want);
}

TEST_CASE("value rules: vector.broadcast, shape_cast, extract, extract_strided_slice, transpose") {
  Kernel k;
  Value s = k.param(Type::scalar(DType::f32), {2.5});
  Value row = k.param(Type::array(DType::f32, {1, 4}), {1, 2, 3, 4});
  Value m = k.param(Type::array(DType::f32, {2, 3}), {1, 2, 3, 4, 5, 6});
  Value pos = k.param(Type::scalar(DType::i32), {1});
  std::vector<Value> outs = {
      k.apply1(make_op("vector.broadcast", {vec({2, 2}, "f32")}), {s}),
      k.apply1(make_op("vector.broadcast", {vec({3, 2, 4}, "f32")}), {row}),
      k.apply1(make_op("vector.shape_cast", {vec({3, 2}, "f32")}), {m}),
      k.apply1(make_op("vector.extract", {scalar("f32")}, {{"static_position", dense_array({1, 2})}}), {m}),
      k.apply1(make_op("vector.extract", {vec({3}, "f32")}, {{"static_position", dense_array({std::numeric_limits<int64_t>::min()})}}), {m, pos}),
      k.apply1(make_op("vector.extract_strided_slice", {vec({2, 2}, "f32")},
                       {{"offsets", dense_array({0, 1})}, {"sizes", dense_array({2, 2})}, {"strides", dense_array({1, 1})}}),
               {m}),
      k.apply1(make_op("vector.transpose", {vec({3, 2}, "f32")}, {{"permutation", dense_array({1, 0})}}), {m}),
      k.apply1(make_op("vector.splat", {vec({2}, "f32")}), {s}),
  };
  std::vector<Array> r = k.run(outs);
  check_values(r[0], {2.5, 2.5, 2.5, 2.5});
  std::vector<double> rows;
  for (int i = 0; i < 6; ++i) rows.insert(rows.end(), {1, 2, 3, 4});
  check_values(r[1], rows);
  check_values(r[2], {1, 2, 3, 4, 5, 6});
  check_values(r[3], {6});
  check_values(r[4], {4, 5, 6});
  check_values(r[5], {2, 3, 5, 6});
  check_values(r[6], {1, 4, 2, 5, 3, 6});
  check_values(r[7], {2.5, 2.5});
  CHECK(k.count("slice") == 2);
}

TEST_CASE("value rules: vector.extract of unit dims is a reshape alone") {
  Kernel k;
  Value row = k.param(Type::array(DType::f32, {1, 3}), {4, 5, 6});
  Value one = k.param(Type::array(DType::f32, {1}), {7});
  std::vector<Value> outs = {k.apply1(make_op("vector.extract", {vec({3}, "f32")}, {{"static_position", dense_array({0})}}), {row}),
                             k.apply1(make_op("vector.extract", {scalar("f32")}, {{"static_position", dense_array({0})}}), {one})};
  CHECK(k.count("slice") == 0);
  CHECK(k.count("reshape") == 2);
  std::vector<Array> r = k.run(outs);
  check_values(r[0], {4, 5, 6});
  check_values(r[1], {7});
}

TEST_CASE("value rules: tpu rotations, concatenate, weird, reduce_index, sort, assume_multiple, math compositions") {
  Kernel k;
  Value x = k.param(Type::array(DType::f32, {4}), {1, -kInf, kNaN, -0.5});
  Value by = k.param(Type::scalar(DType::i32), {1});
  Value n = k.param(Type::scalar(DType::i32), {16});
  Value keys = k.param(Type::array(DType::i32, {4}), {3, 1, 2, 0});
  Value vals = k.param(Type::array(DType::f32, {4}), {30, 10, 20, 0});
  Value mask = k.param(Type::array(DType::i1, {4}), {1, 1, 1, 0});
  Value m = k.param(Type::array(DType::f32, {2, 3}), {1, 7, 3, 9, 5, 6});
  std::vector<Value> outs = {
      k.apply1(make_op("tpu.dynamic_rotate", {vec({4}, "f32")}, {{"dimension", int_attr(0)}}), {x, by}),
      k.apply1(make_op("tpu.concatenate", {vec({8}, "f32")}, {{"dimension", int_attr(0)}}), {x, x}),
      k.apply1(make_op("tpu.weird", {vec({4}, "i1")}), {x}),
      k.apply1(make_op("tpu.reduce_index", {vec({2}, "i32")}, {{"axis", int_attr(1)}, {"kind", dialect_attr("tpu.reduction_kind", "arg_max")}}), {m}),
      k.apply1(make_op("tpu.assume_multiple", {scalar("i32")}, {{"multiple", int_attr(8)}}), {n}),
      k.apply1(make_op("math.copysign", {vec({4}, "f32")}), {k.apply1(make_op("math.absf", {vec({4}, "f32")}), {x}), x}),
      k.apply1(make_op("math.trunc", {vec({4}, "f32")}), {x}),
  };
  std::vector<Value> sorted = k.apply(make_op("tpu.sort", {vec({4}, "i1"), vec({4}, "i32"), vec({4}, "f32")}), {keys, vals, mask});
  outs.insert(outs.end(), sorted.begin(), sorted.end());
  std::vector<Array> r = k.run(outs);
  check_values(r[0], {-0.5, 1, -kInf, kNaN});
  check_values(r[1], {1, -kInf, kNaN, -0.5, 1, -kInf, kNaN, -0.5});
  check_values(r[2], {0, 1, 1, 0});
  check_values(r[3], {1, 0});
  check_values(r[4], {16});
  check_values(r[5], {1, -kInf, kNaN, -0.5});
  check_values(r[6], {1, -kInf, kNaN, -0.0});
  check_values(r[7], {1, 1, 1, 0});     // valid lanes first
  check_values(r[8], {1, 2, 3, 0});     // sorted by key, the masked 0 last
  check_values(r[9], {10, 20, 30, 0});  // the values follow their keys
}

TEST_CASE("value rules: every 'value rule' of the coverage table has a rule, and every rule an entry") {
  std::set<std::string> covered;
  for (const CoverageEntry& e : import_coverage()) {
    INFO(e.op);
    CHECK(covered.insert(std::string(e.op)).second);  // each op once
    CHECK((e.status == "value rule" || e.status == "structural" || e.status == "unsupported"));
    CHECK(!e.note.empty());
    CHECK(find_coverage(e.op) == &e);
    CHECK((value_rules().count(e.op) == 1) == (e.status == "value rule"));
  }
  for (const auto& entry : value_rules()) {
    const std::string& name = entry.first;
    INFO(name);
    const CoverageEntry* e = find_coverage(name);
    REQUIRE(e);
    CHECK(e->status == "value rule");
  }
  CHECK(find_coverage("tpu.no_such_op") == nullptr);
  CHECK(find_coverage("") == nullptr);
  // The translator's ops, exactly.
  std::set<std::string> structural;
  for (const CoverageEntry& e : import_coverage())
    if (e.status == "structural") structural.insert(std::string(e.op));
  CHECK(structural == std::set<std::string>{
                          "vector.load", "vector.store", "tpu.vector_load", "tpu.vector_store", "tpu.strided_load",
                          "tpu.strided_store", "memref.load", "memref.store", "memref.alloca", "tpu.memref_slice",
                          "tpu.memref_squeeze", "tpu.memref_reshape", "tpu.memref_bitcast", "tpu.enqueue_dma", "tpu.wait_dma2",
                          "tpu.enqueue_indirect_dma", "tpu.wait_indirect_dma", "tpu.sem_signal", "tpu.sem_wait", "tpu.sem_read",
                          "tpu.sem_barrier", "tpu.sem_alloc", "tpu.device_id", "tpu.iteration_bound", "tpu.region", "tpu.yield",
                          "tpu.trace_start", "tpu.trace_stop", "tpu.trace", "tpu.log", "tpu.log_buffer", "tpu.delay", "scf.if",
                          "scf.for", "scf.while", "scf.condition", "scf.yield", "scf.index_switch", "func.return", "func.call"});
}

TEST_CASE("value rules: bad operands, attributes and result types are located errors, never crashes") {
  Type i32s = Type::scalar(DType::i32), f32s = Type::scalar(DType::f32);
  Type f32v = Type::array(DType::f32, {8});
  CHECK(contains(rule_error(make_op("arith.addf", {scalar("i32")}), {i32s, i32s}),
                 "kernel.mlir:7:5: error: `arith.addf`: operand 0 must be a float, got i32"));
  CHECK(contains(rule_error(make_op("arith.addi", {scalar("f32")}), {f32s, f32s}), "`arith.addi`: operand 0 must be an integer"));
  CHECK(contains(rule_error(make_op("arith.addf", {scalar("f32")}), {f32s}), "`arith.addf`: expects 2 operand(s), got 1"));
  CHECK(contains(rule_error(make_op("arith.addf", {vec({8}, "f32")}), {f32v, Type::array(DType::f32, {4})}),
                 "`arith.addf`: add: operand shapes differ"));
  CHECK(contains(rule_error(make_op("arith.addf", {vec({4}, "f32")}), {f32v, f32v}),
                 "`arith.addf`: result 0 is declared f32[4] but the operands give f32[8]"));
  CHECK(contains(rule_error(make_op("arith.cmpi", {scalar("i1")}), {i32s, i32s}), "`arith.cmpi`: needs the attribute `predicate`"));
  CHECK(contains(rule_error(make_op("arith.cmpi", {scalar("i1")}, {{"predicate", int_attr(42)}}), {i32s, i32s}),
                 "unknown integer predicate 42"));
  CHECK(contains(rule_error(make_op("arith.constant", {scalar("f8E4M3")}, {{"value", float_attr(1)}}), {}),
                 "`arith.constant`: result 0: the element type `f8E4M3`"));
  CHECK(contains(rule_error(make_op("vector.broadcast", {vec({8}, "i32")}), {f32s}), "`vector.broadcast`: the result i32[8]"));
  CHECK(contains(rule_error(make_op("vector.multi_reduction", {vec({8}, "f32")}, {{"kind", str_attr("bogus")}, {"reduction_dims", dense_array({1})}}),
                            {Type::array(DType::f32, {8, 2}), f32v}),
                 "unknown combining kind `bogus`"));
  CHECK(contains(rule_error(make_op("tpu.matmul", {vec({8, 8}, "f32")}, {{"dimension_numbers", dialect_attr("tpu.dot_dimension_numbers", "[1], [0")}}),
                            {Type::array(DType::f32, {8, 8}), Type::array(DType::f32, {8, 8}), Type::array(DType::f32, {8, 8})}),
                 "malformed dimension_numbers"));
  CHECK(contains(rule_error(make_op("tpu.bitcast", {vec({16, 128}, "bf16")}), {Type::array(DType::i32, {8, 128})}),
                 "`tpu.bitcast`: a bitcast from i32[8,128] to bf16[16,128] is not supported"));
  CHECK(contains(rule_error(make_op("tpu.dynamic_rotate", {vec({8}, "f32")}, {{"dimension", int_attr(0)}, {"stride", int_attr(1)}}),
                            {f32v, i32s}),
                 "a rotation with a stride"));
  CHECK(contains(rule_error(make_op("arith.addf", {scalar("f32")}), {Type::ref(DType::f32, {8}, MemSpace::vmem), f32s}),
                 "operand 0 must be a value, got the Ref"));
  CHECK(contains(rule_error(make_op("vector.extract", {scalar("f32")}, {{"static_position", dense_array({9})}}), {f32v}),
                 "position 9 is out of range"));
}

// ---- the corpus: every op of JAX's and tessera's Mosaic text ----------------------

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "frontends/mosaic/mlir_ast.h"

namespace {

std::vector<std::filesystem::path> corpus_files() {
  std::vector<std::filesystem::path> files;
  for (const char* dir : {"zoo", "production", "emitted"})
    for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(MLIR_CORPUS_DIR) / dir)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Every op of a region, depth first, with the types of the SSA names defined
// so far (block arguments and results), so operands without a written type
// get theirs.
struct CorpusWalk {
  std::map<std::string, MType> types;
  std::function<void(const Operation&, const std::vector<MType>&)> visit;

  void region(const Region& r) {
    for (const Block& b : r.blocks) {
      for (const BlockArg& a : b.args) types[a.name] = a.type;
      for (const Operation& op : b.ops) {
        std::vector<MType> operand_types;
        for (size_t i = 0; i < op.operands.size(); ++i) {
          if (i < op.operand_types.size() && op.operand_types[i].kind != MType::None) operand_types.push_back(op.operand_types[i]);
          else if (auto it = types.find(op.operands[i]); it != types.end()) operand_types.push_back(it->second);
          else operand_types.push_back(MType{});
        }
        visit(op, operand_types);
        for (const Region& inner : op.regions) region(inner);
        for (size_t i = 0; i < op.results.size() && i < op.result_types.size(); ++i) types[op.results[i]] = op.result_types[i];
      }
    }
  }
};

}  // namespace

TEST_CASE("value rules: every op of the corpus has a coverage entry, and every value op of it translates") {
  std::map<std::string, int> uncovered, translated;
  int files = 0;
  for (const auto& path : corpus_files()) {
    INFO(path.string());
    std::string text = read_text(path);
    if (text.find("module") == std::string::npos) continue;  // JAX failed to lower it: a jaxpr and an error
    std::vector<ModuleAst> modules = parse_mlir(text, path.filename().string());
    ++files;
    for (const ModuleAst& m : modules)
      for (const Func& f : m.funcs) {
        CorpusWalk walk;
        for (const BlockArg& a : f.args) walk.types[a.name] = a.type;
        walk.visit = [&](const Operation& op, const std::vector<MType>& operand_types) {
          const CoverageEntry* e = find_coverage(op.name);
          if (!e) ++uncovered[op.name];
          if (!e || e->status != "value rule") return;
          Kernel k;
          std::vector<Value> operands;
          for (const MType& t : operand_types) {
            REQUIRE_MESSAGE((t.is_scalar() || t.is_vector()), op.name << " at " << op.loc.str() << ": an operand of unknown type");
            operands.push_back(k.b.param(import_value_type(t, op.loc), "x"));
          }
          try {
            k.apply(op, operands);
            ++translated[op.name];
          } catch (const Error& err) {
            FAIL_CHECK(err.formatted());
          }
        };
        walk.region(f.body);
      }
  }
  CHECK(files >= 20);
  for (const auto& [name, n] : uncovered) FAIL_CHECK(name << " (" << n << " uses) has no coverage entry");
  for (std::string op : {"tpu.matmul", "vector.multi_reduction", "tpu.iota", "arith.cmpf", "arith.select", "math.exp"})
    CHECK_MESSAGE(translated[op] > 0, op);
}

namespace {

// The ops of `text`'s first func applied one by one (value rules only) to
// its arguments; `func.return` gives the outputs, run on `inputs`.
std::vector<Array> run_text(const std::string& text, const std::vector<std::vector<double>>& inputs) {
  std::vector<ModuleAst> modules = parse_mlir(text, "text.mlir");
  REQUIRE(!modules.empty());
  const Func& f = modules[0].funcs.at(0);
  Kernel k;
  std::map<std::string, Value> values;
  for (size_t i = 0; i < f.args.size(); ++i) values[f.args[i].name] = k.param(import_value_type(f.args[i].type, f.loc), inputs.at(i));
  std::vector<Value> outputs;
  for (const Operation& op : f.body.blocks.at(0).ops) {
    std::vector<Value> operands;
    for (const std::string& name : op.operands) operands.push_back(values.at(name));
    if (op.name == "func.return") {
      outputs = operands;
      break;
    }
    std::vector<Value> results = k.apply(op, operands);
    for (size_t i = 0; i < results.size(); ++i) values[op.results[i]] = results[i];
  }
  return k.run(outputs);
}

}  // namespace

TEST_CASE("value rules: from text: hex -inf, splats, reductions with the accumulator, matmul with transposed rhs") {
  std::vector<Array> r = run_text(R"(module {
  func.func @f(%x: vector<2x3xf32>, %w: vector<4x3xf32>, %acc: vector<2x4xf32>) -> (f32, vector<2xf32>, vector<2x4xf32>, vector<2x3xi32>) {
    %ninf = arith.constant 0xFF800000 : f32
    %cst = arith.constant dense<0xFF800000> : vector<2xf32>
    %m = vector.multi_reduction <maximumf>, %x, %cst [1] : vector<2x3xf32> to vector<2xf32>
    %d = tpu.matmul %x, %w, %acc {dimension_numbers = #tpu.dot_dimension_numbers<[1], [1], [0], [0], [0, 0, 1, 0], [], []>, transpose_lhs_hint = false} : vector<2x3xf32>, vector<4x3xf32>, vector<2x4xf32> -> vector<2x4xf32>
    %i = tpu.iota {dimensions = array<i32: 1>} : vector<2x3xi32>
    %c2 = arith.constant 2 : i32
    %b = vector.broadcast %c2 : i32 to vector<2x3xi32>
    %c = arith.cmpi slt, %i, %b : vector<2x3xi32>
    %e = arith.extui %c : vector<2x3xi1> to vector<2x3xi32>
    return %ninf, %m, %d, %e : f32, vector<2xf32>, vector<2x4xf32>, vector<2x3xi32>
  }
})",
                                  {{1, 2, 3, 4, 5, 6}, {1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1}, {100, 200, 300, 400, 500, 600, 700, 800}});
  check_values(r[0], {-kInf});
  check_values(r[1], {3, 6});
  check_values(r[2], {101, 202, 303, 406, 504, 605, 706, 815});
  check_values(r[3], {1, 1, 0, 1, 1, 0});
}

TEST_CASE("value rules: the remaining arith, math, vector and tpu rules on values that tell them apart") {
  Kernel k;
  Value p = k.param(Type::array(DType::i1, {4}), {1, 1, 0, 0});
  Value q = k.param(Type::array(DType::i1, {4}), {1, 0, 1, 0});
  Value x = k.param(Type::array(DType::f32, {4}), {0.5, -2.5, kInf, kNaN});
  Value y = k.param(Type::array(DType::f32, {4}), {3, 2, 1, 1});
  Value n = k.param(Type::array(DType::i32, {4}), {1, 0, -1, 256});
  Value m = k.param(Type::array(DType::f32, {2, 2}), {1, 2, 3, 4});
  Value acc = k.param(Type::scalar(DType::f32), {100});
  auto f4 = [] { return vec({4}, "f32"); };
  auto b4 = [] { return vec({4}, "i1"); };
  std::vector<Value> outs = {
      k.apply1(make_op("arith.cmpi", {b4()}, {{"predicate", int_attr(2)}}), {p, q}),  // slt: true is -1
      k.apply1(make_op("arith.cmpi", {b4()}, {{"predicate", int_attr(6)}}), {p, q}),  // ult
      k.apply1(make_op("arith.addi", {b4()}), {p, q}),
      k.apply1(make_op("arith.muli", {b4()}), {p, q}),
      k.apply1(make_op("math.fma", {f4()}), {x, y, y}),
      k.apply1(make_op("math.log2", {f4()}), {y}),
      k.apply1(make_op("math.isinf", {b4()}), {x}),
      k.apply1(make_op("math.isnan", {b4()}), {x}),
      k.apply1(make_op("math.isfinite", {b4()}), {x}),
      k.apply1(make_op("math.round", {f4()}), {x}),
      k.apply1(make_op("math.roundeven", {f4()}), {x}),
      k.apply1(make_op("math.ctlz", {vec({4}, "i32")}), {n}),
      k.apply1(make_op("math.ctpop", {vec({4}, "i32")}), {n}),
      k.apply1(make_op("arith.negf", {f4()}), {x}),
      k.apply1(make_op("tpu.rotate", {f4()}, {{"amount", int_attr(3)}, {"dimension", int_attr(0)}}), {y}),
      k.apply1(make_op("tpu.repeat", {vec({2, 4}, "f32")}, {{"dimension", int_attr(1)}, {"times", int_attr(2)}}), {m}),
      k.apply1(make_op("tpu.reciprocal", {f4()}), {y}),
      k.apply1(make_op("vector.reduction", {scalar("f32")}, {{"kind", str_attr("add")}}), {m, acc}),
      k.apply1(make_op("vector.reduction", {scalar("i1")}, {{"kind", str_attr("xor")}}), {p}),
      k.apply1(make_op("vector.fma", {f4()}), {y, y, x}),
      k.apply1(make_op("math.atan", {f4()}), {y}),
  };
  CHECK(k.apply(make_op("tpu.trace_value", {}), {acc}).empty());
  CHECK(k.apply(make_op("tpu.prng_set_seed_32", {}), {k.param(Type::scalar(DType::i32), {7})}).empty());
  Value bits = k.apply1(make_op("tpu.prng_random_bits", {vec({8, 128}, "i32")}), {});
  CHECK(bits.type() == Type::array(DType::i32, {8, 128}));
  CHECK(k.count("prng_seed") == 1);
  std::vector<Array> r = k.run(outs);
  check_values(r[0], {0, 1, 0, 0});
  check_values(r[1], {0, 0, 1, 0});
  check_values(r[2], {0, 1, 1, 0});
  check_values(r[3], {1, 0, 0, 0});
  check_values(r[4], {4.5, -3, kInf, kNaN});
  check_near(r[5], {std::log2(3.0), 1, 0, 0});
  check_values(r[6], {0, 0, 1, 0});
  check_values(r[7], {0, 0, 0, 1});
  check_values(r[8], {1, 1, 0, 0});
  check_values(r[9], {1, -3, kInf, kNaN});
  check_values(r[10], {0, -2, kInf, kNaN});
  check_values(r[11], {31, 32, 0, 23});
  check_values(r[12], {1, 0, 32, 1});
  check_values(r[13], {-0.5, 2.5, -kInf, kNaN});
  check_values(r[14], {2, 1, 1, 3});
  check_values(r[15], {1, 2, 1, 2, 3, 4, 3, 4});
  check_values(r[16], {1.0f / 3.0f, 0.5, 1, 1});
  check_values(r[17], {110});
  check_values(r[18], {0});
  check_values(r[19], {9.5, 1.5, kInf, kNaN});
  check_near(r[20], {std::atan(3.0), std::atan(2.0), std::atan(1.0), std::atan(1.0)});
}

TEST_CASE("value rules: cf.assert stops the run with its message where the condition is false") {
  Kernel k;
  Value c = k.param(Type::scalar(DType::i1), {0});
  Attr msg = str_attr("x must be positive");
  CHECK(k.apply(make_op("cf.assert", {}, {{"msg", msg}}), {c}).empty());
  CHECK(k.count("debug_check") == 1);
  std::string error;
  try {
    k.run({});
  } catch (const Error& e) {
    error = e.formatted();
  }
  CHECK(contains(error, "x must be positive"));
}
