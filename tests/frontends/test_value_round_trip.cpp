// Emit, then import: each tessera function below is lowered by the Mosaic
// backend's value rules (backends/mosaic/vector_*.cpp) to MLIR text, the
// text is parsed (frontends/mosaic/mlir_parser.h) and translated back by the
// import's value rules, and both functions run in the interpreter on the same
// random inputs. Every value primitive the emitter lowers comes back with the
// same numbers (floats within a few ulps where the emitter writes a formula
// for an op the interpreter computes directly, as logistic or erf_inv).
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <random>

#include "backends/emit_context.h"
#include "backends/lowering.h"
#include "backends/mosaic/constants.h"
#include "backends/mosaic/mlir_types.h"
#include "backends/mosaic/rules.h"
#include "backends/mosaic/sc_rules.h"
#include "frontends/mosaic/import_rules.h"
#include "interpreter/interpreter.h"
#include "ir/parser.h"
#include "verify/verify.h"

namespace {

using namespace tessera;
using interp::Array;

// The TensorCore value rules, or with the SparseCore's iota / sort / rev.
const backends::LoweringTable& vector_table(bool sparse_core) {
  static const backends::LoweringTable tc = [] {
    backends::LoweringTable table("mosaic");
    backends::mosaic::add_vector_rules(table);
    return table;
  }();
  static const backends::LoweringTable sc = [] {
    backends::LoweringTable table("mosaic");
    backends::mosaic::add_vector_rules(table);
    backends::mosaic::add_sc_value_rules(table);
    return table;
  }();
  return sparse_core ? sc : tc;
}

std::string join_types(const std::vector<Type>& ts) {
  std::string out;
  for (const Type& t : ts) out += (out.empty() ? "" : ", ") + backends::mosaic::value_type(t);
  return out;
}

// `func.func @f(...)` holding the Mosaic lowering of @f's body.
std::string emit(const Body& f, bool sparse_core) {
  backends::EmitContext ctx("mosaic");
  ctx.literal = [](backends::EmitContext& c, const Literal& l) { return backends::mosaic::scalar_constant(c, l); };
  std::string params;
  for (Var* p : f.params()) params += (params.empty() ? "" : ", ") + ctx.def(p) + ": " + backends::mosaic::value_type(p->type);
  std::string types = join_types(f.output_types());
  ctx.line("module {");
  ctx.line("func.func @f(" + params + ") -> (" + types + ") {");
  {
    auto inside = ctx.indented();
    backends::lower_body(ctx, f, vector_table(sparse_core));
    std::string outs;
    for (const Value& v : f.outputs()) outs += (outs.empty() ? "" : ", ") + ctx.use(v);
    ctx.line("return " + outs + " : " + types);
  }
  ctx.line("}");
  ctx.line("}");
  return ctx.take_text();
}

// The parsed text's @f, its ops translated by the value rules.
BodyPtr import(const std::string& text) {
  std::vector<mlir_text::ModuleAst> modules = mlir_text::parse_mlir(text, "emitted.mlir");
  const mlir_text::Func& f = modules.at(0).funcs.at(0);
  BodyPtr body = make_body("f", BodyKind::func);
  Builder b(*body);
  std::map<std::string, Value> values;
  for (const auto& a : f.args) values[a.name] = b.param(mlir_text::import_value_type(a.type, a.loc), a.name);
  for (const mlir_text::Operation& op : f.body.blocks.at(0).ops) {
    std::vector<Value> operands;
    for (const std::string& name : op.operands) operands.push_back(values.at(name));
    if (op.name == "func.return") {
      b.ret(operands);
      break;
    }
    auto rule = mlir_text::value_rules().find(op.name);
    REQUIRE_MESSAGE(rule != mlir_text::value_rules().end(), "no value rule for " << op.name);
    b.set_loc(op.loc);
    mlir_text::ValueRuleContext c{b, op, operands};
    std::vector<Value> results = rule->second(c);
    for (size_t i = 0; i < results.size(); ++i) values[op.results[i]] = results[i];
  }
  return body;
}

std::vector<Array> run(const BodyPtr& f, const std::vector<Array>& inputs) {
  Module m;
  m.add(f);
  std::vector<Diagnostic> d = verify_module(m);
  for (const auto& x : d) MESSAGE(x.str());
  REQUIRE(d.empty());
  return interp::run_function(m, "f", inputs);
}

Array random_input(const Type& t, std::mt19937_64& rng) {
  Array a(t.dtype(), t.shape());
  std::uniform_real_distribution<double> u(-3, 3);
  for (int64_t i = 0; i < a.size(); ++i) {
    double v = u(rng);
    a.set(i, is_float(t.dtype()) ? v : is_bool(t.dtype()) ? (v > 0) : std::floor(v * 20));
  }
  return a;
}

// The same value: integers by their bits in the width (an unsigned result
// comes back signless), floats within `ulps` relative error, NaN as NaN.
bool same(double got, double want, DType d, double tol) {
  if (is_int(d) || is_bool(d)) {
    int bits = int_bits(d);
    uint64_t mask = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
    return (static_cast<uint64_t>(static_cast<int64_t>(got)) & mask) == (static_cast<uint64_t>(static_cast<int64_t>(want)) & mask);
  }
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::fabs(got - want) <= tol * std::max(1.0, std::fabs(want));
}

// Emits @f of `text`, imports it back and compares both runs.
void round_trip(const std::string& text, double tol = 0, bool sparse_core = false) {
  Module m = parse_module(text, "f.tsr");
  BodyPtr f = m.find("f");
  std::string mlir = emit(*f, sparse_core);
  INFO("emitted:\n" << mlir);
  BodyPtr back = import(mlir);
  std::mt19937_64 rng(42);
  std::vector<Array> inputs;
  for (Var* p : f->params()) inputs.push_back(random_input(p->type, rng));
  std::vector<Array> want = run(f, inputs), got = run(back, inputs);
  REQUIRE(got.size() == want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    REQUIRE(got[k].shape() == want[k].shape());
    for (int64_t i = 0; i < want[k].size(); ++i) {
      INFO("output " << k << " element " << i << ": imported " << got[k].get(i) << ", original " << want[k].get(i));
      CHECK(same(got[k].get(i), want[k].get(i), want[k].dtype(), tol));
      if (!same(got[k].get(i), want[k].get(i), want[k].dtype(), tol)) break;
    }
  }
}

}  // namespace

TEST_CASE("value round trip: float arithmetic and math") {
  round_trip(R"(func @f(%x: f32[8,128], %y: f32[8,128], %s: f32) -> (f32[8,128], f32[8,128], f32[8,128], f32[8,128], f32[8,128], f32[8,128],
                                                      f32[8,128], f32[8,128], f32[8,128], f32[8,128], f32[8,128], f32) {
  %a = add %x, %y
  %b = sub %a, %s
  %c = mul %b, 2.0
  %d = div %c, %y
  %e = rem %d, %y
  %f = max %e, %x
  %g = min %f, 0.5
  %ax = abs %x
  %h = pow %ax, %y
  %i = atan2 %x, %y
  %j = exp %x
  %k = exp2 %y
  %l = log1p %ax
  %m = sqrt %ax
  %n = rsqrt %ax
  %o = tanh %x
  %p = sin %x
  %q = cos %y
  %r = tan %x
  %t = erf %x
  %u = floor %x
  %v = ceil %y
  %w = round %x
  %z = neg %x
  %sq = square %y
  %sg = sign %x
  %lg = logistic %x
  %rc = reciprocal %y
  %ip = integer_pow[y=3] %x
  %cl = clamp -1.0, %x, 1.0
  %ss = mul %s, %s
  %o1 = add %g, %h
  %o2 = add %i, %j
  %o3 = add %k, %l
  %o4 = add %m, %n
  %o5 = add %o, %p
  %o6 = add %q, %r
  %o7 = add %t, %u
  %o8 = add %v, %w
  %o9 = add %z, %sq
  %o10 = add %sg, %lg
  %o11 = add %rc, %ip
  %o12 = add %o10, %cl
  return %o1, %o2, %o3, %o4, %o5, %o6, %o7, %o8, %o9, %o11, %o12, %ss
}
)", 1e-5);
}

TEST_CASE("value round trip: integer arithmetic, bits and comparisons") {
  round_trip(R"(func @f(%x: i32[8,128], %y: i32[8,128], %p: bool[8,128]) -> (i32[8,128], i32[8,128], i32[8,128], i32[8,128], bool[8,128], bool[8,128], bool[8,128]) {
  %nz = or %y, 1
  %a = add %x, %y
  %b = sub %a, 3
  %c = mul %b, %y
  %d = div %c, %nz
  %e = rem %x, %nz
  %f = max %d, %e
  %g = min %f, 7
  %h = and %x, %y
  %i = or %h, 12
  %j = xor %i, %x
  %sh = and %y, 15
  %k = shift_left %j, %sh
  %l = shift_right_logical %x, %sh
  %m = shift_right_arithmetic %x, %sh
  %n = abs %x
  %o = neg %y
  %q = sign %x
  %r = clz %x
  %s = population_count %x
  %t = not %x
  %u = square %x
  %v = integer_pow[y=5] %y
  %cl = clamp -5, %x, 5
  %o1 = add %g, %k
  %o2 = add %l, %m
  %o3 = add %n, %o
  %o4a = add %q, %r
  %o4b = add %s, %t
  %o4c = add %u, %v
  %o4d = add %o4a, %o4b
  %o4e = add %o4c, %cl
  %o4 = add %o4d, %o4e
  %lt = lt %x, %y
  %le = le %x, 0
  %eq = eq %x, %y
  %ne = ne %x, %y
  %ge = ge %x, %y
  %gt = gt %x, %y
  %c1 = and %lt, %le
  %c2 = or %eq, %ne
  %c3 = xor %ge, %gt
  %pl = lt %p, %c1
  %pe = eq %p, %c3
  %np = not %p
  %b1 = and %pl, %pe
  %b2 = or %b1, %np
  %sel = select_n %p, %x, %y
  %o5 = add %o4, %sel
  return %o1, %o2, %o3, %o5, %c2, %b2, %c3
}
)");
}

TEST_CASE("value round trip: unsigned integers come back signless with the same bits") {
  round_trip(R"(func @f(%x: i32[8,128], %y: i32[8,128]) -> (u32[8,128], u32[8,128], u32[8,128], bool[8,128], f32[8,128], u8[8,128]) {
  %ux = convert_element_type[new_dtype=u32] %x
  %uy0 = convert_element_type[new_dtype=u32] %y
  %uy = or %uy0, 1:u32
  %d = div %ux, %uy
  %r = rem %ux, %uy
  %m = max %ux, %uy
  %l = lt %ux, %uy
  %f = convert_element_type[new_dtype=f32] %ux
  %b = convert_element_type[new_dtype=u8] %x
  return %d, %r, %m, %l, %f, %b
}
)", 1e-6);
}

TEST_CASE("value round trip: conversions and bitcasts") {
  round_trip(R"(func @f(%x: f32[8,128], %i: i32[8,128], %p: bool[8,128]) -> (i32[8,128], f32[8,128], bf16[8,128], f32[8,128], i8[8,128], i32[8,128], f32[8,128], bool[8,128], bool[8,128], i32[8,128], i32[8,128], bf16[8,128], i16[8,128]) {
  %big = mul %x, 100.0
  %a = convert_element_type[new_dtype=i32] %big
  %b = convert_element_type[new_dtype=f32] %i
  %c = convert_element_type[new_dtype=bf16] %x
  %d = convert_element_type[new_dtype=f32] %c
  %e = convert_element_type[new_dtype=i8] %i
  %f = convert_element_type[new_dtype=i32] %e
  %g = convert_element_type[new_dtype=f32] %p
  %h = convert_element_type[new_dtype=bool] %x
  %j = convert_element_type[new_dtype=bool] %i
  %k = convert_element_type[new_dtype=i32] %p
  %l = bitcast_convert_type[new_dtype=i32] %x
  %m = convert_element_type[new_dtype=bf16] %p
  %n = bitcast_convert_type[new_dtype=i16] %c
  return %a, %b, %c, %d, %e, %f, %g, %h, %j, %k, %l, %m, %n
}
)");
}

TEST_CASE("value round trip: shapes, iota, slices, pads, rolls and gathers") {
  round_trip(R"(func @f(%x: f32[8,128], %r: f32[128], %s: f32, %sh: i32, %idx: i32[8,128]) -> (f32[8,128], f32[128,8], f32[8,128], f32[16,128], f32[4,128], f32[8,64], f32[8,64], f32[10,130], f32[8,128], f32[8,128], f32[8,256], i32[128], f32[8,128], f32[1,8,128], f32[8,128], f32, f32[8,128]) {
  %b = broadcast_in_dim[shape=(8, 128), broadcast_dimensions=(1)] %r
  %t = transpose[permutation=(1, 0)] %x
  %rs = reshape[new_sizes=(128, 8)] %t
  %rb = reshape[new_sizes=(8, 128)] %rs
  %c = concatenate[dimension=0] %x, %b
  %sl = slice[start_indices=(2, 0), limit_indices=(6, 128)] %x
  %p0, %p1 = split[sizes=(64, 64), axis=1] %x
  %pd = pad[low=(1, 2), high=(1, 0)] %x, %s
  %ro = roll[axis=1, shift=3] %x
  %rd = roll[axis=0] %x, %sh
  %rp = repeat[repeats=2, axis=1] %x
  %io = iota[dtype=i32, shape=(128), dimension=0]
  %i2 = iota[dtype=f32, shape=(8, 128), dimension=1]
  %ed = expand_dims[dimensions=(0)] %x
  %sq = squeeze[dimensions=(0)] %ed
  %one = slice[start_indices=(0), limit_indices=(1)] %r
  %sc = squeeze[dimensions=(0)] %one
  %m = and %idx, 127
  %g = take_along_axis[axis=1] %x, %m
  %bs = broadcast_in_dim[shape=(8, 128), broadcast_dimensions=()] %s
  %o1 = add %b, %rb
  %o2 = add %g, %bs
  return %o1, %t, %i2, %c, %sl, %p0, %p1, %pd, %ro, %rd, %rp, %io, %sq, %ed, %x, %sc, %o2
}
)");
}

TEST_CASE("value round trip: reductions, arg reductions and cumsum") {
  round_trip(R"(func @f(%x: f32[8,128], %i: i32[8,128], %p: bool[8,128]) -> (f32[8], f32[8], f32[128], f32, i32[8], i32[128], bool[8], bool[128], i32[8], i32[128], f32[8,128], i32[8,128]) {
  %a = reduce_sum[axes=(1)] %x
  %b = reduce_max[axes=(1)] %x
  %c = reduce_min[axes=(0)] %x
  %d = reduce_sum[axes=(0, 1)] %x
  %e = reduce_max[axes=(1)] %i
  %f = reduce_min[axes=(0)] %i
  %g = reduce_and[axes=(1)] %p
  %h = reduce_or[axes=(0)] %p
  %j = argmax[axis=1] %x
  %k = argmin[axis=0] %x
  %l = cumsum[axis=1] %x
  %m = cumsum[axis=0, reverse=true] %i
  return %a, %b, %c, %d, %e, %f, %g, %h, %j, %k, %l, %m
}
)", 1e-4);
}

TEST_CASE("value round trip: dot_general, transposed, batched and from bf16; erf_inv and nextafter") {
  round_trip(R"(func @f(%a: f32[8,128], %b: f32[128,256], %c: f32[256,128], %h: bf16[8,128], %k: bf16[128,128], %y: f32[8,128]) -> (f32[8,256], f32[8,256], f32[8,128], f32[8,128], f32[8,128]) {
  %ab = dot_general[lhs_contracting=(1), rhs_contracting=(0)] %a, %b
  %act = dot_general[lhs_contracting=(1), rhs_contracting=(1)] %a, %c
  %hk = dot_general[lhs_contracting=(1), rhs_contracting=(0), preferred_element_type=f32] %h, %k
  %t = mul %a, 0.3
  %ei = erf_inv %t
  %na = nextafter %a, %y
  return %ab, %act, %hk, %ei, %na
}
)", 1e-5);
}

TEST_CASE("value round trip: the SparseCore's iota, sort (tpu.sort with a mask) and rev (tpu.dynamic_gather)") {
  round_trip(R"(func @f(%k: i32[16], %v: f32[16], %w: i32[16]) -> (i32[16], i32[16], f32[16], i32[16], f32[16], f32[16]) {
  %io = iota[dtype=i32, shape=(16), dimension=0]
  %sk, %sv = sort[num_keys=1] %k, %v
  %dk, %dw = sort[num_keys=1, descending=true] %k, %w
  %rv = rev[dimensions=(0)] %v
  return %io, %sk, %sv, %dk, %rv, %v
}
)", 0, true);
}
