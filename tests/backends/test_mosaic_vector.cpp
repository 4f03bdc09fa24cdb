// The Mosaic rules for values (backends/mosaic/vector_*.cpp): each rule's
// exact op text, and every lowered function piped through
// `mlir-opt-19 --allow-unregistered-dialect`, so MLIR's own parser and
// verifiers check the pretty upstream ops (types, broadcasts) and the
// generic form of the tpu ops. At the end, lowered functions run on the CPU
// (mlir-cpu-runner-19), their tpu ops replaced through the one table of
// tests/backends/mosaic_exec, and their numbers are compared with the
// interpreter's.
// Each check is skipped, with a MESSAGE, when its tool is not installed.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <limits>
#include <regex>
#include <set>
#include <string>
#include <utility>

#include "backends/lowering.h"
#include "backends/mosaic/constants.h"
#include "ir/sparse_core.h"
#include "backends/mosaic/mlir_types.h"
#include "backends/mosaic/rules.h"
#include "backends/mosaic/vector_values.h"
#include "interpreter/interpreter.h"
#include "tests/test_util.h"

namespace tessera::backends::mosaic {
namespace {

using testing::error_of;
using testing::parse;
using interp::Array;
using interp::run_function;
using namespace vec;

const LoweringTable& vector_table() {
  static const LoweringTable t = [] {
    LoweringTable table("mosaic");
    add_vector_rules(table);
    return table;
  }();
  return t;
}

std::string join_types(const std::vector<Type>& ts) {
  std::string out;
  for (const Type& t : ts) out += (out.empty() ? "" : ", ") + value_type(t);
  return out;
}

// `func.func @f(...) -> (...)` around the lowered body of @f in `text`.
std::string lower_func(std::string_view text) {
  Module m = parse(text);
  const Body& f = *m.find("f");
  EmitContext ctx("mosaic");
  ctx.literal = [](EmitContext& c, const Literal& l) { return scalar_constant(c, l); };
  std::string params;
  for (Var* p : f.params()) params += (params.empty() ? "" : ", ") + ctx.def(p) + ": " + value_type(p->type);
  std::string types = join_types(f.output_types());
  ctx.line("func.func @f(" + params + ") -> (" + types + ") {");
  {
    auto inside = ctx.indented();
    lower_body(ctx, f, vector_table());
    std::string outs;
    for (const Value& v : f.outputs()) outs += (outs.empty() ? "" : ", ") + ctx.use(v);
    ctx.line("return " + outs + (outs.empty() ? "" : " : " + types));
  }
  ctx.line("}");
  return ctx.take_text();
}

bool have_mlir_opt() {
  static const bool found = std::system("command -v mlir-opt-19 >/dev/null 2>&1") == 0;
  return found;
}

// What `command` (with `FILE` standing for a file holding `mlir`) prints,
// and its exit status.
std::pair<std::string, int> run_tool(const std::string& mlir, const std::string& command) {
  auto dir = testing::temp_dir("mosaic_vector");
  std::string file = (dir / "f.mlir").string();
  std::ofstream(file) << mlir;
  std::string cmd = command;
  cmd.replace(cmd.find("FILE"), 4, file);
  std::string out;
  int rc = -1;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    rc = pclose(p);
  }
  std::filesystem::remove_all(dir);
  return {out, rc};
}

// mlir-opt-19's verdict on `mlir`: "" when it parses and verifies, else its messages.
std::string mlir_opt_errors(const std::string& mlir) {
  auto [out, rc] = run_tool(mlir, "mlir-opt-19 --allow-unregistered-dialect FILE 2>&1 >/dev/null");
  if (rc != 0 && out.empty()) out = "mlir-opt-19 exited with " + std::to_string(rc);
  return out;
}

// Lowers @f, checks that mlir-opt-19 accepts it, and returns the text.
std::string lowered(std::string_view text) {
  std::string mlir = lower_func(text);
  if (have_mlir_opt()) {
    std::string errors = mlir_opt_errors(mlir);
    CHECK_MESSAGE(errors.empty(), "mlir-opt-19 rejects:\n" << mlir << errors);
  } else {
    MESSAGE("mlir-opt-19 not found: the lowered text is not verified");
  }
  return mlir;
}

std::string lowering_error(std::string_view text) {
  return error_of([&] { lower_func(text); });
}

TEST_CASE("mosaic vector: mlir-opt-19 rejects a scalar where a vector is needed (the check can fail)") {
  if (!have_mlir_opt()) return;
  CHECK(mlir_opt_errors("func.func @f(%x: vector<8x128xf32>, %s: f32) -> vector<8x128xf32> {\n"
                        "  %r = arith.addf %x, %s : vector<8x128xf32>\n  return %r : vector<8x128xf32>\n}\n")
            .find("expects different type") != std::string::npos);
}

TEST_CASE("mosaic vector: binary float ops, a rank-0 operand broadcast explicitly") {
  std::string t = lowered(R"(func @f(%x: f32[8,128], %y: f32[8,128], %s: f32) -> (f32[8,128], f32) {
  %a = add %x, 2.0
  %b = sub %a, %y
  %c = mul %b, %s
  %d = div %c, %x
  %e = rem %d, %y
  %g = max %e, %x
  %h = min %g, %y
  %p = pow %h, %x
  %q = atan2 %p, %y
  %z = pow 2.0, %q
  %k = mul %s, %s
  return %z, %k
}
)");
  CHECK_HAS(t, "%cst = arith.constant 2.000000e+00 : f32\n  %t = vector.broadcast %cst : f32 to vector<8x128xf32>\n"
               "  %a = arith.addf %x, %t : vector<8x128xf32>");
  CHECK_HAS(t, "%b = arith.subf %a, %y : vector<8x128xf32>");
  CHECK_HAS(t, "%t_1 = vector.broadcast %s : f32 to vector<8x128xf32>\n  %c = arith.mulf %b, %t_1 : vector<8x128xf32>");
  CHECK_HAS(t, "%d = arith.divf %c, %x");
  CHECK_HAS(t, "%e = arith.remf %d, %y");
  CHECK_HAS(t, "%g = arith.maximumf %e, %x");
  CHECK_HAS(t, "%h = arith.minimumf %g, %y");
  CHECK_HAS(t, "%p = math.powf %h, %x");
  CHECK_HAS(t, "%q = math.atan2 %p, %y");
  CHECK_HAS(t, "%z = math.exp2 %q : vector<8x128xf32>");  // Pallas: a literal base 2.0 is exp2
  CHECK_HAS(t, "%k = arith.mulf %s, %s : f32");
}

TEST_CASE("mosaic vector: signed and unsigned integers choose their ops") {
  std::string t = lowered(R"(func @f(%i: i32[8,128], %j: i32[8,128], %u: u32[8,128], %v: u32[8,128]) -> (i32[8,128], u32[8,128]) {
  %a = div %i, %j
  %b = rem %a, %j
  %c = max %b, %j
  %d = min %c, %j
  %e = shift_right_arithmetic %d, %j
  %g = shift_right_logical %e, %j
  %h = shift_left %g, 3
  %k = and %h, %j
  %l = or %k, %j
  %m = xor %l, %j
  %u1 = div %u, %v
  %u2 = rem %u1, %v
  %u3 = max %u2, %v
  %u4 = min %u3, %v
  %u5 = shift_right_arithmetic %u4, %v
  return %m, %u5
}
)");
  for (const char* s : {"%a = arith.divsi %i, %j : vector<8x128xi32>", "%b = arith.remsi", "%c = arith.maxsi", "%d = arith.minsi",
                        "%e = arith.shrsi", "%g = arith.shrui", "%c_1 = arith.constant 3 : i32", "%h = arith.shli %g, %t",
                        "%k = arith.andi", "%l = arith.ori", "%m = arith.xori", "%u1 = arith.divui %u, %v : vector<8x128xi32>",
                        "%u2 = arith.remui", "%u3 = arith.maxui", "%u4 = arith.minui", "%u5 = arith.shrsi"})
    CHECK_HAS(t, s);
}

TEST_CASE("mosaic vector: unary math is math.* (abs and clz by dtype; round by its method)") {
  std::string t = lowered(R"(func @f(%x: f32[8,128], %i: i32[8,128]) -> (f32[8,128], i32[8,128]) {
  %0 = exp %x
  %1 = exp2 %0
  %2 = log %1
  %3 = log1p %2
  %4 = sqrt %3
  %5 = rsqrt %4
  %6 = tanh %5
  %7 = sin %6
  %8 = cos %7
  %9 = tan %8
  %10 = erf %9
  %11 = floor %10
  %12 = ceil %11
  %13 = round %12
  %14 = round[rounding_method=to_nearest_even] %13
  %15 = abs %14
  %a = abs %i
  %b = clz %a
  %c = population_count %b
  return %15, %c
}
)");
  for (const char* s : {"math.exp %x", "math.exp2", "math.log %", "math.log1p", "math.sqrt", "math.rsqrt", "math.tanh", "math.sin",
                        "math.cos", "math.tan %", "math.erf", "math.floor", "math.ceil", "%13 = math.round %12 : vector<8x128xf32>",
                        "%14 = math.roundeven %13", "%15 = math.absf %14", "%a = math.absi %i : vector<8x128xi32>",
                        "%b = math.ctlz %a", "%c = math.ctpop %b"})
    CHECK_HAS(t, s);
  CHECK(lowering_error("func @f(%i: i32) -> i32 {\n  %c = population_count %i\n  return %c\n}\n") ==
        "t.tsr:2:3: error: mosaic: Population count is not supported on scalars");
}

TEST_CASE("mosaic vector: ops Pallas builds from several (neg, not, square, integer_pow, logistic, clamp)") {
  std::string t = lowered(R"(func @f(%x: f32[8,128], %i: i32[8,128], %b: bool[8,128], %s: i32) -> (f32[8,128], i32[8,128], bool[8,128], i32, f32[8,128], f32[8,128]) {
  %n = neg %x
  %sq = square %n
  %p3 = integer_pow[y=3] %sq
  %pm = integer_pow[y=-2] %p3
  %p0 = integer_pow[y=0] %pm
  %lg = logistic %p0
  %cl = clamp 0.0, %lg, %x
  %ni = neg %i
  %nb = not %b
  %ns = not %s
  %p1 = integer_pow[y=1] %x
  return %cl, %ni, %nb, %ns, %p1, %pm
}
)");
  CHECK_HAS(t, "%cst = arith.constant 0.000000e+00 : f32\n  %t = vector.broadcast %cst : f32 to vector<8x128xf32>\n"
               "  %n = arith.subf %t, %x : vector<8x128xf32>");
  CHECK_HAS(t, "%sq = arith.mulf %n, %n");
  // y = 3: x * x, then acc * x; y = -2: 1 / (x * x); y = 0: ones
  CHECK_HAS(t, "%t_1 = arith.mulf %sq, %sq : vector<8x128xf32>\n  %p3 = arith.mulf %sq, %t_1 : vector<8x128xf32>\n"
               "  %t_2 = arith.mulf %p3, %p3 : vector<8x128xf32>\n  %cst_1 = arith.constant 1.000000e+00 : f32\n"
               "  %t_3 = vector.broadcast %cst_1 : f32 to vector<8x128xf32>\n  %pm = arith.divf %t_3, %t_2 : vector<8x128xf32>\n"
               "  %cst_2 = arith.constant 1.000000e+00 : f32\n  %t_4 = vector.broadcast %cst_2 : f32 to vector<8x128xf32>\n");
  // logistic of the ones: 1 / (1 + exp(-x))
  CHECK_HAS(t, "%t_5 = arith.negf %t_4 : vector<8x128xf32>\n  %t_6 = math.exp %t_5 : vector<8x128xf32>\n"
               "  %cst_3 = arith.constant 1.000000e+00 : f32\n  %t_7 = vector.broadcast %cst_3 : f32 to vector<8x128xf32>\n"
               "  %t_8 = arith.addf %t_7, %t_6 : vector<8x128xf32>\n  %lg = arith.divf %t_7, %t_8 : vector<8x128xf32>");
  CHECK_HAS(t, "%t_10 = arith.maximumf %lg, %t_9 : vector<8x128xf32>\n  %cl = arith.minimumf %t_10, %x : vector<8x128xf32>");
  CHECK_HAS(t, "%c = arith.constant 0 : i32\n  %t_11 = vector.broadcast %c : i32 to vector<8x128xi32>\n"
               "  %ni = arith.subi %t_11, %i : vector<8x128xi32>");
  CHECK_HAS(t, "%cst_5 = arith.constant dense<true> : vector<8x128xi1>\n  %nb = arith.xori %b, %cst_5 : vector<8x128xi1>");
  CHECK_HAS(t, "%c_1 = arith.constant -1 : i32\n  %ns = arith.xori %s, %c_1 : i32");
  CHECK_HAS(t, "return %cl, %ni, %nb, %ns, %x, %pm :");  // x^1 is x itself
}

TEST_CASE("mosaic vector: scalar ops stay scalar; bool constants are written without a type") {
  std::string t = lowered(R"(func @f(%b: bool, %v: bool[8], %i: i32, %x: f32) -> (bool, bool[8], i32, f32, bool) {
  %n = not %b
  %a = and %v, true
  %j = add %i, 1
  %k = convert_element_type[new_dtype=f32] %j
  %y = select_n %n, %x, %k
  %c = lt %x, %y
  return %n, %a, %j, %y, %c
}
)");
  CHECK_HAS(t, "%true = arith.constant true\n  %n = arith.xori %b, %true : i1");
  CHECK_HAS(t, "%true_1 = arith.constant true\n  %t = vector.broadcast %true_1 : i1 to vector<8xi1>\n"
               "  %a = arith.andi %v, %t : vector<8xi1>");
  CHECK_HAS(t, "%c = arith.constant 1 : i32\n  %j = arith.addi %i, %c : i32");
  CHECK_HAS(t, "%k = arith.sitofp %j : i32 to f32");
  CHECK_HAS(t, "%y = arith.select %n, %k, %x : f32");
  CHECK_HAS(t, "%c_1 = arith.cmpf olt, %x, %y : f32");
}

TEST_CASE("mosaic vector: sign, is_finite and reciprocal") {
  std::string t = lowered(R"(func @f(%x: f32[8,128], %h: bf16[8,128], %i: i32[8,128], %u: u32[8,128], %s: f32) -> (f32[8,128], bf16[8,128], i32[8,128], u32[8,128], bool[8,128], f32[8,128], f32) {
  %a = sign %x
  %b = sign %h
  %c = sign %i
  %d = sign %u
  %e = is_finite %x
  %r = reciprocal[approx=true] %x
  %rs = reciprocal %s
  return %a, %b, %c, %d, %e, %r, %rs
}
)");
  CHECK_HAS(t, "= \"tpu.bitcast\"(%x) : (vector<8x128xf32>) -> vector<8x128xi32>");
  CHECK_HAS(t, "arith.constant -2147483648 : i32");
  CHECK_HAS(t, "arith.constant 1065353216 : i32");
  CHECK_HAS(t, "math.absf %x");
  CHECK_HAS(t, "arith.cmpf ogt, ");
  CHECK_HAS(t, "%a = arith.select ");
  CHECK_HAS(t, "\"tpu.bitcast\"(%h) : (vector<8x128xbf16>) -> vector<8x128xi16>");
  CHECK_HAS(t, "arith.constant 16256 : i16");
  CHECK_HAS(t, "arith.cmpi sgt, %i, ");
  CHECK_HAS(t, "%c_5 = arith.subi %t_20, %t_22 : vector<8x128xi32>");  // %c was taken by a constant
  CHECK_HAS(t, "arith.cmpi ne, %u, ");
  CHECK_HAS(t, "%d = arith.extui ");
  CHECK_HAS(t, "= \"tpu.weird\"(%x) : (vector<8x128xf32>) -> vector<8x128xi1>");
  CHECK_HAS(t, "%r = \"tpu.reciprocal\"(%x) <{approx = true}> : (vector<8x128xf32>) -> vector<8x128xf32>");
  CHECK_HAS(t, "%rs = arith.divf ");
  CHECK(lowering_error("func @f(%h: bf16[8,128]) -> bf16[8,128] {\n  %r = reciprocal %h\n  return %r\n}\n") ==
        "t.tsr:2:3: error: mosaic: reciprocal: Only float32 is supported.");
}

TEST_CASE("mosaic vector: comparisons (ordered float predicates, signed / unsigned, bool algebra)") {
  std::string t = lowered(R"(func @f(%x: f32[8,128], %y: f32[8,128], %i: i32[8,128], %u: u32[8,128], %p: bool[8,128], %q: bool[8,128]) -> (bool[8,128], bool[8,128], bool[8,128], bool[8,128], bool[8,128], bool[8,128], bool[8,128], bool[8,128], bool[8,128], bool[8,128]) {
  %0 = eq %x, %y
  %1 = ne %x, %y
  %2 = lt %x, 0.0
  %3 = le %x, %y
  %4 = gt %i, %i
  %5 = ge %u, %u
  %6 = lt %u, %u
  %7 = eq %p, %q
  %8 = lt %p, %q
  %9 = ge %p, %q
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9
}
)");
  for (const char* s : {"%0 = arith.cmpf oeq, %x, %y : vector<8x128xf32>", "%1 = arith.cmpf one, %x, %y", "%2 = arith.cmpf olt, %x, %",
                        "%3 = arith.cmpf ole", "%4 = arith.cmpi sgt, %i, %i : vector<8x128xi32>", "%5 = arith.cmpi uge, %u, %u",
                        "%6 = arith.cmpi ult", "%7 = arith.xori %", "%8 = arith.andi %", "%9 = arith.ori %p, %"})
    CHECK_HAS(t, s);
}

TEST_CASE("mosaic vector: select_n (bool and i32 predicates, a scalar predicate, one case; more is an error)") {
  std::string t = lowered(R"(func @f(%p: bool[8,128], %k: i32[8,128], %c: bool, %x: f32[8,128], %y: f32[8,128]) -> (f32[8,128], f32[8,128], f32[8,128], f32[8,128]) {
  %a = select_n %p, %x, %y
  %b = select_n %k, %x, 1.0
  %d = select_n %c, %x, %y
  %e = select_n %p, %x
  return %a, %b, %d, %e
}
)");
  CHECK_HAS(t, "%a = arith.select %p, %y, %x : vector<8x128xi1>, vector<8x128xf32>");
  CHECK_HAS(t, "= arith.cmpi ne, %k, %");
  CHECK_HAS(t, "%b = arith.select %t_1, %t_2, %x : vector<8x128xi1>, vector<8x128xf32>");
  CHECK_HAS(t, "%d = arith.select %c, %y, %x : vector<8x128xf32>");
  CHECK_HAS(t, "return %a, %b, %d, %x");
  CHECK(lowering_error("func @f(%k: i32[8], %x: f32[8]) -> f32[8] {\n  %r = select_n %k, %x, %x, %x\n  return %r\n}\n") ==
        "t.tsr:2:3: error: mosaic: select_n only supported with <= 2 arguments (got 3 cases)");
}

TEST_CASE("mosaic vector: convert_element_type chooses Pallas's casts") {
  std::string t = lowered(R"(func @f(%x: f32[8,128], %h: bf16[8,128], %i: i32[8,128], %u: u32[8,128], %s8: i8[8,128], %u8: u8[8,128], %b: bool[8,128]) -> (bf16[8,128], f32[8,128], f32[8,128], f32[8,128], i32[8,128], u32[8,128], i32[8,128], i32[8,128], i8[8,128], u32[8,128], i32[8,128], f32[8,128], bool[8,128], bool[8,128], bool[8,128], f32[8,128]) {
  %0 = convert_element_type[new_dtype=bf16] %x
  %1 = convert_element_type[new_dtype=f32] %h
  %2 = convert_element_type[new_dtype=f32] %i
  %3 = convert_element_type[new_dtype=f32] %u
  %4 = convert_element_type[new_dtype=i32] %x
  %5 = convert_element_type[new_dtype=u32] %x
  %6 = convert_element_type[new_dtype=i32] %s8
  %7 = convert_element_type[new_dtype=i32] %u8
  %8 = convert_element_type[new_dtype=i8] %i
  %9 = convert_element_type[new_dtype=u32] %i
  %10 = convert_element_type[new_dtype=i32] %b
  %11 = convert_element_type[new_dtype=f32] %b
  %12 = convert_element_type[new_dtype=bool] %h
  %13 = convert_element_type[new_dtype=bool] %s8
  %14 = convert_element_type[new_dtype=bool] %x
  %15 = convert_element_type[new_dtype=f32] %x
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15
}
)");
  for (const char* s : {"%0 = arith.truncf %x : vector<8x128xf32> to vector<8x128xbf16>", "%1 = arith.extf %h : vector<8x128xbf16> to",
                        "%2 = arith.sitofp %i", "%3 = arith.uitofp %u", "%4 = arith.fptosi %x", "%5 = arith.fptoui %x",
                        "%6 = arith.extsi %s8 : vector<8x128xi8> to vector<8x128xi32>", "%7 = arith.extui %u8", "%8 = arith.trunci %i",
                        "%10 = arith.extui %b : vector<8x128xi1> to vector<8x128xi32>",
                        "= arith.extui %b : vector<8x128xi1> to vector<8x128xi32>\n  %11 = arith.sitofp",
                        "= arith.extf %h : vector<8x128xbf16> to vector<8x128xf32>", "%12 = arith.cmpf one, ",
                        "= arith.extsi %s8", "%13 = arith.cmpi ne, ", "%14 = arith.cmpf one, %x, "})
    CHECK_HAS(t, s);
  CHECK_HAS(t, "return %0, %1, %2, %3, %4, %5, %6, %7, %8, %i, %10, %11, %12, %13, %14, %x :");  // same bits, same dtype: no op
  std::string b16 = lowered("func @f(%b: bool[8,128]) -> bf16[8,128] {\n  %r = convert_element_type[new_dtype=bf16] %b\n  return %r\n}\n");
  CHECK_HAS(b16, "%t = arith.extui %b : vector<8x128xi1> to vector<8x128xi32>\n"
                 "  %t_1 = arith.sitofp %t : vector<8x128xi32> to vector<8x128xf32>\n"
                 "  %r = arith.truncf %t_1 : vector<8x128xf32> to vector<8x128xbf16>");
  CHECK(lowering_error("func @f(%h: bf16[8]) -> f16[8] {\n  %r = convert_element_type[new_dtype=f16] %h\n  return %r\n}\n") ==
        "t.tsr:2:3: error: mosaic: Unsupported cast: bf16 -> f16");
  CHECK(lowering_error("func @f(%h: f32[8]) -> f64[8] {\n  %r = convert_element_type[new_dtype=f64] %h\n  return %r\n}\n") ==
        "t.tsr:2:3: error: mosaic: 64-bit types are not supported");
}

TEST_CASE("mosaic vector: bitcast_convert_type (tpu.bitcast on vectors, arith.bitcast on scalars)") {
  std::string t = lowered(R"(func @f(%x: f32[8,128], %s: f32) -> (i32[8,128], u32) {
  %a = bitcast_convert_type[new_dtype=i32] %x
  %b = bitcast_convert_type[new_dtype=u32] %s
  return %a, %b
}
)");
  CHECK_HAS(t, "%a = \"tpu.bitcast\"(%x) : (vector<8x128xf32>) -> vector<8x128xi32>");
  CHECK_HAS(t, "%b = arith.bitcast %s : f32 to i32");
  CHECK(lowering_error("func @f(%x: f32[8,128]) -> bf16[8,128,2] {\n  %r = bitcast_convert_type[new_dtype=bf16] %x\n  return %r\n}\n") ==
        "t.tsr:2:3: error: mosaic: Changing bitwidths not supported.");
}

TEST_CASE("mosaic vector: broadcasts and reshapes") {
  std::string t = lowered(R"(func @f(%r: f32[8], %c: f32[8,1], %s: f32, %x: f32[8,128], %one: f32[1,1]) -> (f32[8,128], f32[8,128], f32[8,128], f32[1024], f32[1,8,128], f32[8], f32[8,128], f32, f32) {
  %a = broadcast_in_dim[shape=(8, 128), broadcast_dimensions=(0)] %r
  %b = broadcast_in_dim[shape=(8, 128), broadcast_dimensions=(0, 1)] %c
  %d = broadcast_in_dim[shape=(8, 128), broadcast_dimensions=()] %s
  %e = reshape[new_sizes=(1024)] %x
  %g = expand_dims[dimensions=(0)] %x
  %h = squeeze[dimensions=(1)] %c
  %k = reshape[new_sizes=(8, 128)] %x
  %l = squeeze[dimensions=(0, 1)] %one
  %m = reshape[new_sizes=()] %one
  return %a, %b, %d, %e, %g, %h, %k, %l, %m
}
)");
  CHECK_HAS(t, "%t = vector.shape_cast %r : vector<8xf32> to vector<8x1xf32>\n"
               "  %a = vector.broadcast %t : vector<8x1xf32> to vector<8x128xf32>");
  CHECK_HAS(t, "%b = vector.broadcast %c : vector<8x1xf32> to vector<8x128xf32>");
  CHECK_HAS(t, "%d = vector.broadcast %s : f32 to vector<8x128xf32>");
  CHECK_HAS(t, "%e = vector.shape_cast %x : vector<8x128xf32> to vector<1024xf32>");
  CHECK_HAS(t, "%g = vector.shape_cast %x : vector<8x128xf32> to vector<1x8x128xf32>");
  CHECK_HAS(t, "%h = vector.shape_cast %c : vector<8x1xf32> to vector<8xf32>");
  CHECK_HAS(t, "%l = vector.extract %one[0, 0] : f32 from vector<1x1xf32>");
  CHECK_HAS(t, "%m = vector.extract %one[0, 0] : f32 from vector<1x1xf32>");
  CHECK_HAS(t, "return %a, %b, %d, %e, %g, %h, %x, %l, %m :");
  CHECK(lowering_error("func @f(%x: bf16[1]) -> bf16 {\n  %r = squeeze[dimensions=(0)] %x\n  return %r\n}\n") ==
        "t.tsr:2:3: error: mosaic: Only arrays with 32-bit element types can be converted to scalars, but got: bf16. Try "
        "casting the input before squeezing the scalar.");
}

TEST_CASE("mosaic vector: transpose, iota, concatenate, slices, split, pad, repeat") {
  std::string t = lowered(R"(func @f(%x: f32[8,128], %y: f32[8,128]) -> (f32[128,8], i32[8,128], i32[128], f32[8,128], f32[16,128], f32[4,64], f32[8,64], f32[8,64], f32[10,129], f32[24,128]) {
  %t = transpose[permutation=(1, 0)] %x
  %i = iota[dtype=i32, shape=(8, 128), dimension=0]
  %j = iota[dtype=i32, shape=(128), dimension=0]
  %k = iota[dtype=f32, shape=(8, 128), dimension=1]
  %c = concatenate[dimension=0] %x, %y
  %s = slice[start_indices=(4, 64), limit_indices=(8, 128)] %x
  %p, %q = split[sizes=(64, 64), axis=1] %y
  %d = pad[low=(1, 0), high=(1, 1)] %x, 0.0
  %r = repeat[repeats=3, axis=0] %x
  return %t, %i, %j, %k, %c, %s, %p, %q, %d, %r
}
)");
  CHECK_HAS(t, "%r = \"tpu.concatenate\"(%x, %x, %x) <{dimension = 0 : i32}> : (vector<8x128xf32>, vector<8x128xf32>, vector<8x128xf32>) -> vector<24x128xf32>");
  CHECK_HAS(t, "%t = \"tpu.transpose\"(%x) <{permutation = array<i64: 1, 0>}> : (vector<8x128xf32>) -> vector<128x8xf32>");
  CHECK_HAS(t, "%i = \"tpu.iota\"() <{dimensions = array<i32: 0>}> : () -> vector<8x128xi32>");
  CHECK_HAS(t, "%t_1 = \"tpu.iota\"() <{dimensions = array<i32: 1>}> : () -> vector<1x128xi32>\n"
               "  %j = vector.extract %t_1[0] : vector<128xi32> from vector<1x128xi32>");
  CHECK_HAS(t, "%t_2 = \"tpu.iota\"() <{dimensions = array<i32: 1>}> : () -> vector<8x128xi32>\n"
               "  %k = arith.sitofp %t_2 : vector<8x128xi32> to vector<8x128xf32>");
  CHECK_HAS(t, "%c = \"tpu.concatenate\"(%x, %y) <{dimension = 0 : i32}> : (vector<8x128xf32>, vector<8x128xf32>) -> vector<16x128xf32>");
  CHECK_HAS(t, "%s = vector.extract_strided_slice %x {offsets = [4, 64], sizes = [4, 64], strides = [1, 1]} : vector<8x128xf32> to vector<4x64xf32>");
  CHECK_HAS(t, "%p = vector.extract_strided_slice %y {offsets = [0, 0], sizes = [8, 64]");
  CHECK_HAS(t, "%q = vector.extract_strided_slice %y {offsets = [0, 64], sizes = [8, 64]");
  CHECK_HAS(t, "%cst = arith.constant dense<0.000000e+00> : vector<1x128xf32>\n"
               "  %t_3 = \"tpu.concatenate\"(%cst, %x) <{dimension = 0 : i32}> : (vector<1x128xf32>, vector<8x128xf32>) -> vector<9x128xf32>");
  CHECK_HAS(t, "%t_4 = \"tpu.concatenate\"(%t_3, %cst_1) <{dimension = 0 : i32}> : (vector<9x128xf32>, vector<1x128xf32>) -> vector<10x128xf32>");
  CHECK_HAS(t, "%d = \"tpu.concatenate\"(%t_4, %cst_2) <{dimension = 1 : i32}> : (vector<10x128xf32>, vector<10x1xf32>) -> vector<10x129xf32>");
  CHECK(lowering_error("func @f(%x: f32[8,128]) -> f32[4,128] {\n  %r = slice[start_indices=(0, 0), limit_indices=(8, 128), strides=(2, 1)] %x\n  return %r\n}\n") ==
        "t.tsr:2:3: error: mosaic: slice with strides other than 1 is not supported (vector.extract_strided_slice takes unit strides)");
}

TEST_CASE("mosaic vector: roll is tpu.dynamic_rotate, take_along_axis tpu.dynamic_gather") {
  std::string t = lowered(R"(func @f(%x: f32[8,128], %n: i32, %idx: i32[8,128]) -> (f32[8,128], f32[8,128], f32[8,128]) {
  %a = roll[axis=1, shift=-1] %x
  %b = roll[axis=0] %x, %n
  %g = take_along_axis[axis=1] %x, %idx
  return %a, %b, %g
}
)");
  CHECK_HAS(t, "%c127_i32 = arith.constant 127 : i32\n"
               "  %a = \"tpu.dynamic_rotate\"(%x, %c127_i32) <{dimension = 1 : si32}> : (vector<8x128xf32>, i32) -> vector<8x128xf32>");
  CHECK_HAS(t, "%b = \"tpu.dynamic_rotate\"(%x, %n) <{dimension = 0 : si32}>");
  CHECK_HAS(t, "%g = \"tpu.dynamic_gather\"(%x, %idx) <{dimensions = array<i32: 1>}> : (vector<8x128xf32>, vector<8x128xi32>) -> vector<8x128xf32>");
  CHECK(lowering_error("func @f(%x: f32[4,8,128], %i: i32[4,8,128]) -> f32[4,8,128] {\n  %r = take_along_axis[axis=0] %x, %i\n  return %r\n}\n") ==
        "t.tsr:2:3: error: mosaic: Only gathers along the two minormost dimensions supported on TC");
}

TEST_CASE("mosaic vector: reductions with identity accumulators, to vectors and to scalars") {
  std::string t = lowered(R"(func @f(%x: f32[8,128], %i: i32[8,128], %b: bool[8,128]) -> (f32[8], f32, i32[128], bool[8], bool) {
  %s = reduce_sum[axes=(1)] %x
  %m = reduce_max[axes=(0, 1)] %x
  %n = reduce_min[axes=(0)] %i
  %a = reduce_and[axes=(1)] %b
  %o = reduce_or[axes=(0, 1)] %b
  return %s, %m, %n, %a, %o
}
)");
  CHECK_HAS(t, "%cst = arith.constant dense<0.000000e+00> : vector<8xf32>\n"
               "  %s = vector.multi_reduction <add>, %x, %cst [1] : vector<8x128xf32> to vector<8xf32>");
  CHECK_HAS(t, "%t = vector.shape_cast %x : vector<8x128xf32> to vector<1x8x128xf32>\n"
               "  %cst_1 = arith.constant dense<0xFF800000> : vector<1xf32>\n"
               "  %t_1 = vector.multi_reduction <maximumf>, %t, %cst_1 [1, 2] : vector<1x8x128xf32> to vector<1xf32>\n"
               "  %m = vector.extract %t_1[0] : f32 from vector<1xf32>");
  CHECK_HAS(t, "%cst_2 = arith.constant dense<2147483647> : vector<128xi32>\n"
               "  %n = vector.multi_reduction <minsi>, %i, %cst_2 [0] : vector<8x128xi32> to vector<128xi32>");
  // reduce_and: min over where(b, 1.0, 0.0), then > 0
  CHECK_HAS(t, "%t_4 = arith.select %b, %t_2, %t_3 : vector<8x128xi1>, vector<8x128xf32>\n"
               "  %cst_5 = arith.constant dense<0x7F800000> : vector<8xf32>\n"
               "  %t_5 = vector.multi_reduction <minimumf>, %t_4, %cst_5 [1] : vector<8x128xf32> to vector<8xf32>");
  CHECK_HAS(t, "%a = arith.cmpf ogt, %t_5, %t_6 : vector<8xf32>");
  CHECK_HAS(t, "%t_11 = vector.multi_reduction <maximumf>, %t_10, %cst_9 [1, 2] : vector<1x8x128xf32> to vector<1xf32>");
  CHECK_HAS(t, "%o = arith.cmpf ogt, %t_12, %cst_10 : f32");
  CHECK(lowering_error("func @f(%x: u32[8,128]) -> u32[8] {\n  %r = reduce_sum[axes=(1)] %x\n  return %r\n}\n") ==
        "t.tsr:2:3: error: mosaic: Reductions over unsigned integers not implemented.");
  CHECK(lowering_error("func @f(%x: i16[8,128]) -> i16[8] {\n  %r = reduce_max[axes=(1)] %x\n  return %r\n}\n") ==
        "t.tsr:2:3: error: mosaic: Reductions over i16 not implemented.");
}

TEST_CASE("mosaic vector: argmax / argmin are tpu.reduce_index") {
  std::string t = lowered(R"(func @f(%x: f32[8,128], %v: f32[128], %h: bf16[8,128]) -> (i32[8], i32, i32[8]) {
  %a = argmax[axis=1] %x
  %b = argmin[axis=0] %v
  %c = argmax[axis=1] %h
  return %a, %b, %c
}
)");
  CHECK_HAS(t, "%a = \"tpu.reduce_index\"(%x) <{axis = 1 : i32, kind = #tpu.reduction_kind<arg_max>}> : (vector<8x128xf32>) -> vector<8xi32>");
  CHECK_HAS(t, "%t = vector.shape_cast %v : vector<128xf32> to vector<1x128xf32>\n"
               "  %t_1 = \"tpu.reduce_index\"(%t) <{axis = 1 : i32, kind = #tpu.reduction_kind<arg_min>}> : (vector<1x128xf32>) -> vector<1xi32>\n"
               "  %b = vector.extract %t_1[0] : i32 from vector<1xi32>");
  CHECK_HAS(t, "-> vector<8xi16>\n  %c = arith.extsi %t_2 : vector<8xi16> to vector<8xi32>");
  CHECK(lowering_error("func @f(%x: i32[8,128]) -> i32[8] {\n  %r = argmax[axis=1] %x\n  return %r\n}\n") ==
        "t.tsr:2:3: error: mosaic: Unsupported combination of input dtype (i32) and index_dtype (i32) for reduce_index");
}

TEST_CASE("mosaic vector: cumsum as a log-step scan of tpu.dynamic_rotate") {
  std::string t = lowered(R"(func @f(%x: f32[8,8], %r: i32[4,8]) -> (f32[8,8], i32[4,8]) {
  %c = cumsum[axis=1] %x
  %d = cumsum[axis=0, reverse=true] %r
  return %c, %d
}
)");
  // step 1 of 3 along axis 1: roll by 1, keep where the position >= 1, add
  CHECK_HAS(t, "%t = \"tpu.iota\"() <{dimensions = array<i32: 1>}> : () -> vector<8x8xi32>\n"
               "  %cst = arith.constant dense<0.000000e+00> : vector<8x8xf32>\n"
               "  %c1_i32 = arith.constant 1 : i32\n"
               "  %t_1 = \"tpu.dynamic_rotate\"(%x, %c1_i32) <{dimension = 1 : si32}> : (vector<8x8xf32>, i32) -> vector<8x8xf32>\n"
               "  %cst_1 = arith.constant dense<1> : vector<8x8xi32>\n"
               "  %t_2 = arith.cmpi sge, %t, %cst_1 : vector<8x8xi32>\n"
               "  %t_3 = arith.select %t_2, %t_1, %cst : vector<8x8xi1>, vector<8x8xf32>\n"
               "  %t_4 = arith.addf %x, %t_3 : vector<8x8xf32>\n");
  CHECK_HAS(t, "\"tpu.dynamic_rotate\"(%t_4, %c2_i32)");
  CHECK_HAS(t, "\"tpu.dynamic_rotate\"(%t_8, %c4_i32)");
  CHECK_HAS(t, "%c = arith.addf %t_8, %t_11 : vector<8x8xf32>");
  // reverse along axis 0 (n = 4): roll by n - s, keep where the position < n - s
  CHECK_HAS(t, "\"tpu.dynamic_rotate\"(%r, %c3_i32) <{dimension = 0 : si32}>");
  CHECK_HAS(t, "%t_14 = arith.cmpi slt, %t_12, %cst_5 : vector<4x8xi32>");
  CHECK_HAS(t, "%t_17 = \"tpu.dynamic_rotate\"(%t_16, %c2_i32_1) <{dimension = 0 : si32}>");
  CHECK_HAS(t, "%d = arith.addi %t_16, %t_19 : vector<4x8xi32>");
}

TEST_CASE("mosaic vector: dot_general is tpu.matmul with dimension numbers; accumulation is a separate addf") {
  std::string t = lowered(R"(func @f(%a: f32[128,256], %b: f32[256,64], %acc: f32[128,64], %q: bf16[2,8,128], %k: bf16[2,16,128], %m: bf16[8,128], %v: bf16[1,128]) -> (f32[128,64], f32[2,8,16], f32[8,1]) {
  %p = dot_general[lhs_contracting=(1), rhs_contracting=(0)] %a, %b
  %s = add %acc, %p
  %qk = dot_general[lhs_contracting=(2), rhs_contracting=(2), lhs_batch=(0), rhs_batch=(0), preferred_element_type=f32] %q, %k
  %mv = dot_general[lhs_contracting=(1), rhs_contracting=(1), preferred_element_type=f32] %m, %v
  return %s, %qk, %mv
}
)");
  CHECK_HAS(t, "%cst = arith.constant dense<0.000000e+00> : vector<128x64xf32>\n"
               "  %p = \"tpu.matmul\"(%a, %b, %cst) <{dimension_numbers = #tpu.dot_dimension_numbers<[1], [0], [0], [1], [0, 0, 1, 1], [], []>, "
               "transpose_lhs_hint = false}> : (vector<128x256xf32>, vector<256x64xf32>, vector<128x64xf32>) -> vector<128x64xf32>\n"
               "  %s = arith.addf %acc, %p : vector<128x64xf32>");
  CHECK_HAS(t, "%qk = \"tpu.matmul\"(%q, %k, %cst_1) <{dimension_numbers = #tpu.dot_dimension_numbers<[2], [2], [1], [1], [0, 0, 0, 1, 1, 1], [0], [0]>, "
               "transpose_lhs_hint = false}> : (vector<2x8x128xbf16>, vector<2x16x128xbf16>, vector<2x8x16xf32>) -> vector<2x8x16xf32>");
  // (8, 128) . (1, 128)^T of bf16: Pallas's multiply and lane reduction
  CHECK_HAS(t, "%t = vector.broadcast %v : vector<1x128xbf16> to vector<8x128xbf16>\n"
               "  %t_1 = arith.extf %m : vector<8x128xbf16> to vector<8x128xf32>\n"
               "  %t_2 = arith.extf %t : vector<8x128xbf16> to vector<8x128xf32>\n"
               "  %t_3 = arith.mulf %t_1, %t_2 : vector<8x128xf32>\n"
               "  %cst_2 = arith.constant dense<0.000000e+00> : vector<8xf32>\n"
               "  %t_4 = vector.multi_reduction <add>, %t_3, %cst_2 [1] : vector<8x128xf32> to vector<8xf32>\n"
               "  %mv = vector.shape_cast %t_4 : vector<8xf32> to vector<8x1xf32>");
  CHECK(lowering_error("func @f(%a: u32[8,128], %b: u32[128,128]) -> u32[8,128] {\n  %p = dot_general[lhs_contracting=(1), rhs_contracting=(0)] %a, %b\n  return %p\n}\n")
            .find("mosaic: Unsigned integer dtype u32 is not supported for dot_general") != std::string::npos);
  CHECK(lowering_error("func @f(%a: bf16[8,128], %b: bf16[128,128]) -> bf16[8,128] {\n  %p = dot_general[lhs_contracting=(1), rhs_contracting=(0)] %a, %b\n  return %p\n}\n") ==
        "t.tsr:2:3: error: mosaic: Expected matmul acc to be 32-bit: a bf16 dot_general result needs preferred_element_type=f32 (or i32)");
}

TEST_CASE("mosaic vector: prng_seed and prng_random_bits") {
  std::string t = lowered(R"(func @f(%s: i32) -> i32[8,128] {
  prng_seed %s, 7
  %r = prng_random_bits[shape=(8, 128)]
  return %r
}
)");
  CHECK_HAS(t, "%c = arith.constant 7 : i32\n  \"tpu.prng_set_seed_32\"(%s, %c) : (i32, i32) -> ()");
  CHECK_HAS(t, "%r = \"tpu.prng_random_bits\"() : () -> vector<8x128xi32>");
  CHECK(lowering_error("func @f() -> i32[128] {\n  %r = prng_random_bits[shape=(128)]\n  return %r\n}\n") ==
        "t.tsr:2:3: error: mosaic: random_bits only supports rank>=2 outputs.");
}

TEST_CASE("mosaic vector: every value primitive has a rule or a stated reason") {
  const LoweringTable& t = vector_table();
  for (Family f : {Family::elementwise, Family::structural, Family::reduction})
    for (const Primitive* p : registry().of(f)) {
      INFO(p->name);
      CHECK(t.coverage(*p) != LoweringTable::Coverage::missing);
      CHECK(!t.contradicts(*p));
    }
  CHECK(lowering_error("func @f(%x: f32[8,128]) -> f32[8,128] {\n  %r = sort %x\n  return %r\n}\n") ==
        "t.tsr:2:3: error: mosaic: no lowering for `sort`: Pallas lowers sort only on the SparseCore (tpu.sort)");
  CHECK(lowering_error("func @f(%x: f32[8,128]) -> f32[8,128] {\n  %r = expm1 %x\n  return %r\n}\n") ==
        "t.tsr:2:3: error: mosaic: no lowering for `expm1`: Pallas's TensorCore lowering has no rule for it "
        "(jax/_src/pallas/mosaic/lowering.py)");
}

// Every value op of the kernel zoo, alone in a function of its operands:
// each lowers, and mlir-opt-19 accepts the text.
// SparseCore kernels (named in `skip`) lower by other rules (mosaic-emit.md,
// SparseCore), not these.
void collect_value_ops(const Body& b, const std::set<std::string>& skip, std::vector<const Op*>& out) {
  if (skip.count(b.name())) return;
  for (const Op& op : b.ops()) {
    Family f = op.prim->family;
    if (f == Family::elementwise || f == Family::structural || f == Family::reduction) out.push_back(&op);
    for (const BodyPtr& nested : op.nested_bodies()) collect_value_ops(*nested, skip, out);
  }
}

std::string lower_one_op(const Op& op, const std::string& name) {
  EmitContext ctx("mosaic");
  ctx.literal = [](EmitContext& c, const Literal& l) { return scalar_constant(c, l); };
  std::string params;
  std::vector<const Var*> seen;
  for (const Value& v : op.operands) {
    if (!v.is_var() || std::find(seen.begin(), seen.end(), v.var()) != seen.end()) continue;
    seen.push_back(v.var());
    params += (params.empty() ? "" : ", ") + ctx.def(v.var()) + ": " + value_type(v.var()->type);
  }
  std::vector<Type> types;
  for (const Var* r : op.results) types.push_back(r->type);
  ctx.line("func.func @" + name + "(" + params + ") -> (" + join_types(types) + ") {");
  {
    auto inside = ctx.indented();
    (*vector_table().find(*op.prim))(ctx, op, vector_table());
    std::string outs;
    for (Var* r : op.results) outs += (outs.empty() ? "" : ", ") + ctx.use(r);
    ctx.line("return " + outs + " : " + join_types(types));
  }
  ctx.line("}");
  return ctx.take_text();
}

TEST_CASE("mosaic vector: every value op of the kernel zoo lowers to text mlir-opt-19 accepts") {
  int lowered_ops = 0;
  for (const auto& entry : std::filesystem::directory_iterator(testing::examples_dir())) {
    if (entry.path().extension() != ".tsr") continue;
    Module m = parse_module(testing::read_file(entry.path()), entry.path().filename().string());
    std::set<std::string> sparse_core;
    for (const BodyPtr& b : m.symbols())
      for (const Op& op : b->ops())
        if (op.has(keys::kernel_type) && is_sparse_core(op.param(keys::kernel_type)))
          sparse_core.insert(op.param(keys::kernel)->name());
    std::vector<const Op*> ops;
    for (const BodyPtr& b : m.symbols())
      collect_value_ops(*b, sparse_core, ops);
    std::string module;  // one mlir-opt run per file
    for (const Op* op : ops) {
      INFO(entry.path().filename().string() << ": " << op->name() << " at line " << op->loc.line);
      REQUIRE(vector_table().find(*op->prim));
      module += lower_one_op(*op, "op" + std::to_string(op->loc.line) + "_" + std::to_string(lowered_ops++));
    }
    if (have_mlir_opt()) CHECK_MESSAGE(mlir_opt_errors(module).empty(), entry.path().filename().string() << ":\n" << module
                                                                          << mlir_opt_errors(module));
  }
  CHECK(lowered_ops > 40);  // the zoo's kernels and index maps hold dozens
}

// ---- running the lowered text: mlir-cpu-runner-19 against tessera's interpreter ----
//
// The runner has no unregistered dialects: each tpu op of the lowered @f is
// first replaced through the harness's table (upstream_text below). @main
// builds the inputs as constants, calls @f and
// prints each result's bits as i32 (floats bitcast, bools extended), so the
// comparison with the interpreter is not limited by vector.print's digits.

bool have_runner() {
  static const bool found = have_mlir_opt() && std::system("command -v mlir-cpu-runner-19 >/dev/null 2>&1") == 0 &&
                            std::filesystem::exists("/usr/lib/llvm-19/lib/libmlir_c_runner_utils.so.19.1");
  return found;
}

// `dense<[[a, b], [c, d]]>` body (or the scalar) of `a`, in MLIR's literal spelling.
std::string dense_text(const Array& a, size_t dim = 0, int64_t offset = 0) {
  const Shape& shape = a.shape();
  if (dim == shape.size()) return literal_text(literal_of(a.dtype(), a.get(offset)));
  int64_t stride = 1;
  for (size_t d = dim + 1; d < shape.size(); ++d) stride *= shape[d];
  std::string out = "[";
  for (int64_t k = 0; k < shape[dim]; ++k) out += (k ? ", " : "") + dense_text(a, dim + 1, offset + k * stride);
  return out + "]";
}

std::string main_driver(const Body& f, const std::vector<Array>& inputs) {
  std::string text = "func.func @main() {\n", args, arg_types;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Array& a = inputs[k];
    ArrayType t{a.dtype(), a.shape()};
    std::string value = t.shape.empty() ? dense_text(a) : "dense<" + dense_text(a) + ">";
    text += "  %in" + std::to_string(k) + " = arith.constant " + value + " : " + value_type(t) + "\n";
    args += (k ? ", " : "") + std::string("%in") + std::to_string(k);
    arg_types += (k ? ", " : "") + value_type(t);
  }
  std::vector<Type> outs = f.output_types();
  text += "  %r:" + std::to_string(outs.size()) + " = call @f(" + args + ") : (" + arg_types + ") -> (" + join_types(outs) + ")\n";
  for (size_t k = 0; k < outs.size(); ++k) {
    const ArrayType& t = outs[k].array_type();
    ArrayType bits{DType::i32, t.shape};
    std::string r = "%r#" + std::to_string(k), shown = r;
    if (t.dtype == DType::f32) shown = "%b" + std::to_string(k), text += "  " + shown + " = arith.bitcast " + r + " : " + value_type(t) + " to " + value_type(bits) + "\n";
    if (t.dtype == DType::i1) shown = "%b" + std::to_string(k), text += "  " + shown + " = arith.extui " + r + " : " + value_type(t) + " to " + value_type(bits) + "\n";
    text += "  vector.print " + shown + " : " + value_type(bits) + "\n";
  }
  return text + "  return\n}\n";
}

// Each result's elements (row-major) as the runner printed them.
std::vector<std::vector<int64_t>> run_on_cpu(const std::string& mlir) {
  const std::string lib = "/usr/lib/llvm-19/lib/";
  // Section 11 of the Mosaic reference, with math lowered first (expand what
  // has no LLVM op: rsqrt, tanh...; then LLVM intrinsics; then libm calls) and
  // vector.multi_reduction lowered before the vector dialect; linalg (the
  // table's tpu.matmul row) becomes loops.
  std::string cmd = "mlir-opt-19 FILE"
                    " --test-expand-math --convert-math-to-llvm --convert-math-to-libm --arith-expand --lower-vector-multi-reduction"
                    " --convert-linalg-to-loops --convert-vector-to-scf --lower-affine --convert-scf-to-cf --convert-vector-to-llvm --expand-strided-metadata"
                    " --lower-affine --finalize-memref-to-llvm --convert-func-to-llvm --convert-arith-to-llvm --convert-index-to-llvm"
                    " --convert-cf-to-llvm --reconcile-unrealized-casts 2>&1 | mlir-cpu-runner-19 -e main -entry-point-result=void"
                    " -shared-libs=" + lib + "libmlir_c_runner_utils.so.19.1 -shared-libs=" + lib + "libmlir_runner_utils.so.19.1 2>&1";
  std::string out = run_tool(mlir, cmd).first;
  std::vector<std::vector<int64_t>> results;
  std::istringstream lines(out);
  static const std::regex number("-?[0-9]+");
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || (line[0] != '(' && line[0] != '-' && !std::isdigit(static_cast<unsigned char>(line[0])))) {
      FAIL_CHECK("runner: " << line);
      continue;
    }
    std::vector<int64_t> row;
    for (std::sregex_iterator it(line.begin(), line.end(), number), end; it != end; ++it) row.push_back(std::stoll(it->str()));
    results.push_back(row);
  }
  return results;
}

// The runner's number for one element, decoded as a value of `d`.
double decode(int64_t printed, DType d) {
  if (d != DType::f32) return is_unsigned_int(d) ? static_cast<double>(static_cast<uint32_t>(printed)) : static_cast<double>(printed);
  uint32_t u = static_cast<uint32_t>(printed);
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

#ifndef TESSERA_MOSAIC_EXEC_DIR
#error "TESSERA_MOSAIC_EXEC_DIR is not defined (tests/backends/meson.build sets it)"
#endif

bool have_python() {
  static const bool found = std::filesystem::exists("/usr/bin/python3");
  return found;
}

// `mlir` with every tpu op replaced by its upstream equivalent, so that the
// runner can run it: tests/backends/mosaic_exec/to_upstream.py applies the one
// replacement table of the Mosaic execution harness (upstream_table.py, its
// README lists the rows), the only place these tests trust our reading of a
// tpu op. A tpu op without a row fails the test with the script's message.
std::pair<std::string, int> run_to_upstream(const std::string& mlir) {
  return run_tool(mlir, "/usr/bin/python3 '" TESSERA_MOSAIC_EXEC_DIR "/to_upstream.py' FILE 2>&1");
}

std::string upstream_text(const std::string& mlir) {
  auto [out, rc] = run_to_upstream(mlir);
  if (rc != 0) {
    FAIL_CHECK("to_upstream.py failed:\n" << out << "on:\n" << mlir);
    return "";
  }
  return out;
}

TEST_CASE("mosaic vector: the tpu -> upstream table refuses, by name, a tpu op it has no row for") {
  if (!have_mlir_opt() || !have_python()) {
    MESSAGE("mlir-opt-19 or /usr/bin/python3 not found: to_upstream.py is not run");
    return;
  }
  auto run = [](const std::string& op, const std::string& type) {
    return run_to_upstream("func.func @f(%x: vector<8x128xf32>) -> " + type + " {\n  %r = " + op + "\n  return %r : " + type +
                           "\n}\n");
  };
  auto [same, same_rc] = run("\"tpu.bitcast\"(%x) : (vector<8x128xf32>) -> vector<8x128xi32>", "vector<8x128xi32>");
  CHECK(same_rc == 0);
  CHECK_HAS(same, "= arith.bitcast %arg0 : vector<8x128xf32> to vector<8x128xi32>");
  auto [unknown, unknown_rc] = run("\"tpu.reciprocal\"(%x) : (vector<8x128xf32>) -> vector<8x128xf32>", "vector<8x128xf32>");
  CHECK(unknown_rc != 0);
  CHECK_HAS(unknown, "error: `tpu.reciprocal` has no upstream replacement");
  auto [wide, wide_rc] = run("\"tpu.bitcast\"(%x) : (vector<8x128xf32>) -> vector<4x128xi64>", "vector<4x128xi64>");
  CHECK(wide_rc != 0);
  CHECK_HAS(wide, "error: tpu.bitcast from vector<8x128xf32> to vector<4x128xi64> (only equal shapes and element widths)");
}

// Lowers @f of `text`, runs it on the CPU and compares every result with the
// interpreter's on `inputs`: integers exactly, floats within `rtol` and `atol`
// (NaN matches NaN).
void check_against_interpreter(std::string_view text, const std::vector<Array>& inputs, double rtol = 1e-5, double atol = 1e-6) {
  if (!have_runner()) {
    MESSAGE("mlir-cpu-runner-19 or libmlir-19 not found: the lowered text is not executed");
    return;
  }
  if (!have_python()) {
    MESSAGE("/usr/bin/python3 not found (it runs the tpu -> upstream table): the lowered text is not executed");
    return;
  }
  Module m = parse(text);
  std::vector<Array> expected = run_function(m, "f", inputs);
  std::string mlir = upstream_text(lowered(text) + main_driver(*m.find("f"), inputs));
  if (mlir.empty()) return;
  std::vector<std::vector<int64_t>> got = run_on_cpu(mlir);
  REQUIRE_MESSAGE(got.size() == expected.size(), "the runner printed " << got.size() << " results for " << expected.size());
  const Body& f = *m.find("f");
  for (size_t k = 0; k < expected.size(); ++k) {
    const Array& e = expected[k];
    REQUIRE(static_cast<int64_t>(got[k].size()) == e.size());
    for (int64_t i = 0; i < e.size(); ++i) {
      double want = e.get(i), have = decode(got[k][static_cast<size_t>(i)], e.dtype());
      bool same = want == have || (is_float(e.dtype()) && ((std::isnan(want) && std::isnan(have)) ||
                                                          std::abs(want - have) <= rtol * std::abs(want) + atol));
      CHECK_MESSAGE(same, "result " << k << " (" << f.outputs()[k].var()->name << ") element " << i << ": interpreter "
                                    << std::setprecision(9) << want
                                    << ", lowered text " << have);
    }
  }
}

Array values(DType d, Shape shape, std::vector<double> v) { return Array::from_values(d, std::move(shape), v); }

TEST_CASE("mosaic vector: float elementwise rules compute the interpreter's numbers (mlir-cpu-runner-19)") {
  const char* text = R"(func @f(%x: f32[2,4], %y: f32[2,4], %p: f32[2,4], %s: f32) -> (f32[2,4], f32[2,4], f32[2,4], f32[2,4], f32[2,4], f32[2,4], f32[2,4], f32[2,4], f32[2,4], f32[2,4], f32[2,4], f32[2,4], f32[2,4], f32[2,4], f32[2,4], f32[2,4], f32[2,4], f32[2,4], f32[2,4], f32[2,4], f32[2,4], f32[2,4], f32[2,4], f32[2,4], f32[2,4], f32[2,4], f32[2,4], f32[2,4], f32[2,4], bool[2,4], bool[2,4], bool[2,4], bool[2,4], bool[2,4], bool[2,4], i32[2,4], u32[2,4], f32[2,4], f32) {
  %add = add %x, %s
  %sub = sub %x, %y
  %mul = mul %x, 3.0
  %div = div %x, %y
  %rem = rem %x, %y
  %max = max %x, %y
  %min = min %x, %y
  %pow = pow %p, %y
  %atan2 = atan2 %x, %y
  %exp = exp %x
  %exp2 = exp2 %x
  %log = log %p
  %log1p = log1p %p
  %sqrt = sqrt %p
  %rsqrt = rsqrt %p
  %tanh = tanh %x
  %sin = sin %x
  %cos = cos %x
  %tan = tan %x
  %erf = erf %x
  %floor = floor %x
  %ceil = ceil %x
  %round = round %x
  %even = round[rounding_method=to_nearest_even] %x
  %abs = abs %x
  %neg = neg %x
  %cube = integer_pow[y=3] %x
  %inv2 = integer_pow[y=-2] %p
  %sig = logistic %x
  %eq = eq %x, %y
  %ne = ne %x, %y
  %lt = lt %x, %y
  %le = le %x, 0.5
  %gt = gt %x, %y
  %ge = ge %x, %y
  %toi = convert_element_type[new_dtype=i32] %x
  %tou = convert_element_type[new_dtype=u32] %p
  %clamp = clamp -1.0, %x, 1.0
  %ssq = square %s
  return %add, %sub, %mul, %div, %rem, %max, %min, %pow, %atan2, %exp, %exp2, %log, %log1p, %sqrt, %rsqrt, %tanh, %sin, %cos, %tan, %erf, %floor, %ceil, %round, %even, %abs, %neg, %cube, %inv2, %sig, %eq, %ne, %lt, %le, %gt, %ge, %toi, %tou, %clamp, %ssq
}
)";
  check_against_interpreter(text, {values(DType::f32, {2, 4}, {0.5, -1.5, 2.5, 1.25, -0.75, 3.0, -2.5, 0.1}),
                                   values(DType::f32, {2, 4}, {1.5, 2.0, -0.5, 1.25, 0.3, -2.0, 4.0, 0.7}),
                                   values(DType::f32, {2, 4}, {0.25, 1.0, 2.0, 3.5, 0.01, 7.0, 1.5, 10.0}),
                                   Array::scalar(DType::f32, 1.75)},
                            2e-5);
}

TEST_CASE("mosaic vector: integer elementwise rules compute the interpreter's numbers (mlir-cpu-runner-19)") {
  const char* text = R"(func @f(%i: i32[2,4], %j: i32[2,4], %k: i32[2,4], %u: u32[2,4], %v: u32[2,4], %b: bool[2,4], %c: bool[2,4]) -> (i32[2,4], i32[2,4], i32[2,4], i32[2,4], i32[2,4], i32[2,4], i32[2,4], i32[2,4], i32[2,4], i32[2,4], i32[2,4], i32[2,4], i32[2,4], i32[2,4], i32[2,4], i32[2,4], i32[2,4], i32[2,4], u32[2,4], u32[2,4], u32[2,4], u32[2,4], u32[2,4], bool[2,4], bool[2,4], bool[2,4], bool[2,4], bool[2,4], bool[2,4], bool[2,4], bool[2,4], f32[2,4], f32[2,4], i32[2,4], i32[2,4], f32[2,4]) {
  %add = add %i, %j
  %sub = sub %i, %j
  %mul = mul %i, %j
  %div = div %i, %j
  %rem = rem %i, %j
  %max = max %i, %j
  %min = min %i, %j
  %shl = shift_left %i, %k
  %sra = shift_right_arithmetic %i, %k
  %srl = shift_right_logical %i, %k
  %and = and %i, %j
  %or = or %i, %j
  %xor = xor %i, 12
  %not = not %i
  %abs = abs %i
  %neg = neg %i
  %clz = clz %i
  %pop = population_count %i
  %udiv = div %u, %v
  %urem = rem %u, %v
  %umax = max %u, %v
  %umin = min %u, %v
  %usrl = shift_right_logical %u, 4
  %lt = lt %i, %j
  %ult = lt %u, %v
  %uge = ge %u, %v
  %beq = eq %b, %c
  %blt = lt %b, %c
  %bge = ge %b, %c
  %bne = ne %b, %c
  %band = and %b, %c
  %itof = convert_element_type[new_dtype=f32] %i
  %utof = convert_element_type[new_dtype=f32] %u
  %btoi = convert_element_type[new_dtype=i32] %b
  %sel = select_n %b, %i, %j
  %bf = convert_element_type[new_dtype=f32] %c
  return %add, %sub, %mul, %div, %rem, %max, %min, %shl, %sra, %srl, %and, %or, %xor, %not, %abs, %neg, %clz, %pop, %udiv, %urem, %umax, %umin, %usrl, %lt, %ult, %uge, %beq, %blt, %bge, %bne, %band, %itof, %utof, %btoi, %sel, %bf
}
)";
  check_against_interpreter(text, {values(DType::i32, {2, 4}, {7, -7, 100, -2147483647, 0, 65536, -1, 12345}),
                                   values(DType::i32, {2, 4}, {2, 3, -7, 5, 9, -3, 4, 1000}),
                                   values(DType::i32, {2, 4}, {0, 1, 4, 31, 3, 16, 2, 7}),
                                   values(DType::u32, {2, 4}, {4000000000.0, 7, 100, 3000000000.0, 0, 65536, 4294967295.0, 12}),
                                   values(DType::u32, {2, 4}, {3, 4000000000.0, 7, 2, 9, 3, 4294967294.0, 5}),
                                   values(DType::i1, {2, 4}, {1, 0, 1, 0, 1, 1, 0, 0}),
                                   values(DType::i1, {2, 4}, {1, 1, 0, 0, 0, 1, 1, 0})});
}

TEST_CASE("mosaic vector: reductions, broadcasts, reshapes and slices compute the interpreter's numbers (mlir-cpu-runner-19)") {
  const char* text = R"(func @f(%x: f32[4,8], %i: i32[4,8], %b: bool[4,8], %r: f32[4], %s: f32) -> (f32[4], f32[8], f32, i32[4], i32, i32[8], bool[4], bool, bool[8], f32[4,8], f32[4,8], f32[32], f32[2,16], f32[1,4,8], f32[2,3], f32[4,5], f32[4,3], f32, f32[4,8], f32[4,16], i32[8,8]) {
  %sum1 = reduce_sum[axes=(1)] %x
  %max0 = reduce_max[axes=(0)] %x
  %min01 = reduce_min[axes=(0, 1)] %x
  %isum = reduce_sum[axes=(1)] %i
  %imax = reduce_max[axes=(0, 1)] %i
  %imin = reduce_min[axes=(0)] %i
  %all = reduce_and[axes=(1)] %b
  %any = reduce_or[axes=(0, 1)] %b
  %any0 = reduce_or[axes=(0)] %b
  %rows = broadcast_in_dim[shape=(4, 8), broadcast_dimensions=(0)] %r
  %full = broadcast_in_dim[shape=(4, 8), broadcast_dimensions=()] %s
  %flat = reshape[new_sizes=(32)] %x
  %two = reshape[new_sizes=(2, 16)] %x
  %lead = expand_dims[dimensions=(0)] %x
  %sl = slice[start_indices=(1, 2), limit_indices=(3, 5)] %x
  %p, %q = split[sizes=(5, 3), axis=1] %x
  %sl1 = slice[start_indices=(2, 6), limit_indices=(3, 7)] %x
  %el = reshape[new_sizes=()] %sl1
  %where = select_n %b, %x, %rows
  %tile = repeat[repeats=2, axis=1] %x
  %itile = repeat[repeats=2, axis=0] %i
  return %sum1, %max0, %min01, %isum, %imax, %imin, %all, %any, %any0, %rows, %full, %flat, %two, %lead, %sl, %p, %q, %el, %where, %tile, %itile
}
)";
  std::vector<double> xs, is, bs;
  for (int k = 0; k < 32; ++k) {
    xs.push_back(std::sin(k * 1.3) * 10);
    is.push_back((k * 37) % 23 - 11);
    bs.push_back(k % 5 != 3);
  }
  check_against_interpreter(text, {values(DType::f32, {4, 8}, xs), values(DType::i32, {4, 8}, is), values(DType::i1, {4, 8}, bs),
                                   values(DType::f32, {4}, {1.5, -2.0, 0.25, 8.0}), Array::scalar(DType::f32, -3.5)});
}

TEST_CASE("mosaic vector: cumsum, iota, transpose, roll and matmul compute the interpreter's numbers (mlir-cpu-runner-19)") {
  const char* text = R"(func @f(%x: f32[8,6], %r: i32[4,8], %a: f32[8,16], %b: f32[16,8], %acc: f32[8,8], %n: i32) -> (f32[8,6], f32[8,6], i32[4,8], i32[4,8], i32[4,8], f32[16], f32[16,8], f32[8,6], i32[4,8], f32[8,8]) {
  %c1 = cumsum[axis=1] %x
  %c0 = cumsum[axis=0] %x
  %cr = cumsum[axis=0, reverse=true] %r
  %cr1 = cumsum[axis=1, reverse=true] %r
  %io = iota[dtype=i32, shape=(4, 8), dimension=0]
  %if = iota[dtype=f32, shape=(16), dimension=0]
  %t = transpose[permutation=(1, 0)] %a
  %ro = roll[axis=1, shift=-2] %x
  %rd = roll[axis=0] %r, %n
  %p = dot_general[lhs_contracting=(1), rhs_contracting=(0)] %a, %b
  %s = add %acc, %p
  return %c1, %c0, %cr, %cr1, %io, %if, %t, %ro, %rd, %s
}
)";
  // quarters: every sum is exact, in any order
  auto quarters = [](int64_t n, int mod) {
    std::vector<double> v;
    for (int64_t k = 0; k < n; ++k) v.push_back(((k * 7) % mod - mod / 2) / 4.0);
    return v;
  };
  std::vector<double> ri;
  for (int k = 0; k < 32; ++k) ri.push_back((k * 5) % 11 - 5);
  check_against_interpreter(text, {values(DType::f32, {8, 6}, quarters(48, 13)), values(DType::i32, {4, 8}, ri),
                                   values(DType::f32, {8, 16}, quarters(128, 9)), values(DType::f32, {16, 8}, quarters(128, 7)),
                                   values(DType::f32, {8, 8}, quarters(64, 5)), Array::scalar(DType::i32, 3)});
}

TEST_CASE("mosaic vector: erf_inv and nextafter as Pallas's helpers write them") {
  std::string t = lowered(R"(func @f(%x: f32[8,128], %y: f32[8,128]) -> (f32[8,128], f32[8,128]) {
  %e = erf_inv %x
  %n = nextafter %x, %y
  return %e, %n
}
)");
  CHECK_HAS(t, "math.log1p");
  CHECK_HAS(t, "arith.cmpf olt, ");
  CHECK_HAS(t, "arith.constant 2.8102264e-08 : f32");  // the first coefficient, as f32 reads it
  CHECK_HAS(t, "arith.constant 0x7F800000 : f32");
  CHECK_HAS(t, "%e = arith.select ");
  CHECK_HAS(t, "= \"tpu.bitcast\"(%x) : (vector<8x128xf32>) -> vector<8x128xi32>");
  CHECK_HAS(t, "= arith.cmpf uno, %x, %y : vector<8x128xf32>");
  CHECK_HAS(t, "arith.cmpi ugt, ");
  CHECK_HAS(t, "arith.constant 2143289344 : i32");  // the NaN pattern 0x7FC00000
  CHECK_HAS(t, "%n = \"tpu.bitcast\"(%");
  CHECK(lowering_error("func @f(%x: bf16[8,128]) -> bf16[8,128] {\n  %r = erf_inv %x\n  return %r\n}\n") ==
        "t.tsr:2:3: error: mosaic: erf_inv of bf16 is not supported (f32 only)");
}

TEST_CASE("mosaic vector: erf_inv and nextafter compute the interpreter's numbers (mlir-cpu-runner-19)") {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  Array x = values(DType::f32, {2, 8}, {0.0, 0.5, -0.5, 0.9, -0.999, 1.0, -1.0, 0.1, 0.0, -0.0, 1e-30, 0.75, 0.3, -0.2, nan, 0.999999});
  Array y = values(DType::f32, {2, 8}, {1.0, 0.5, 1.0, -1.0, -1.0, 2.0, -inf, 0.1, -1.0, 1.0, 0.0, inf, nan, -0.2, 0.0, -3.0});
  check_against_interpreter("func @f(%x: f32[2,8]) -> f32[2,8] {\n  %e = erf_inv %x\n  return %e\n}\n", {x}, 2e-6);
  // nextafter moves by one ulp: only exact bits pass
  check_against_interpreter(R"(func @f(%x: f32[2,8], %y: f32[2,8], %s: f32, %t: f32) -> (f32[2,8], f32) {
  %n = nextafter %x, %y
  %m = nextafter %s, %t
  return %n, %m
}
)", {x, y, Array::scalar(DType::f32, 1.0), Array::scalar(DType::f32, 2.0)}, 0, 0);
}

}  // namespace
}  // namespace tessera::backends::mosaic
