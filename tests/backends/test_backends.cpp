// The backends scaffold: SSA names shared with the printer, the emit context,
// lower_body with a missing-rule error, the backend table, and the coverage of
// every primitive by every backend. A small test-only target, "toy", lowers a
// few ops to a pseudo text through the scaffold to show that it works.
#include <doctest/doctest.h>

#include <string>

#include "tests/test_util.h"
#include "backends/backend.h"
#include "backends/emit_context.h"
#include "backends/lowering.h"
#include "ir/builder.h"
#include "ir/control_views.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/ssa_names.h"

namespace tessera::backends {
namespace {

Module parse(std::string_view text) { return parse_module(text, "t.tsr"); }

using testing::error_of;

// ---- the toy target: `%r = NAME %a, %b : TYPE`, loops as `for ... { yield }` ----

std::string operand_list(EmitContext& ctx, std::span<const Value> vs) {
  std::string out;
  for (const Value& v : vs) out += (out.empty() ? "" : ", ") + ctx.use(v);
  return out;
}

void lower_elementwise(EmitContext& ctx, const Op& op, const LoweringTable&) {
  std::string args = operand_list(ctx, op.operands);  // before the result's name: literals may emit lines
  ctx.line(ctx.def(op.results[0]) + " = " + op.name() + " " + args + " : " + op.results[0]->type.str());
}

// The body sees the enclosing names (an MLIR region does): its constants are
// the enclosing values themselves, its carries are named afresh.
void lower_for(EmitContext& ctx, const Op& op, const LoweringTable& table) {
  ForView loop(op);
  std::string lo = ctx.use(loop.lo()), hi = ctx.use(loop.hi());
  std::vector<std::string> consts, inits;
  for (const Value& v : loop.operands().consts) consts.push_back(ctx.use(v));
  for (const Value& v : loop.operands().carries) inits.push_back(ctx.use(v));
  std::string results;
  for (Var* r : op.results) results += (results.empty() ? "" : ", ") + ctx.def(r);
  {
    // The header names the body's parameters, so it is written in the body's
    // scope, at the enclosing indentation; the ops go one level deeper.
    auto region = ctx.nested(EmitContext::Names::see_enclosing, 0);
    std::string header = results + " = for " + ctx.def(loop.index_param()) + " = " + lo + " to " + hi + " carry(";
    auto params = loop.params();
    for (size_t i = 0; i < params.consts.size(); ++i) ctx.alias(params.consts[i], consts[i]);
    for (size_t i = 0; i < params.carries.size(); ++i)
      header += (i ? ", " : "") + ctx.def(params.carries[i]) + " = " + inits[i];
    ctx.line(header + ") {");
    auto inside = ctx.indented();
    lower_body(ctx, loop.body(), table);
    ctx.line("yield " + operand_list(ctx, loop.body().outputs()));
  }
  ctx.line("}");
}

const LoweringTable& toy_rules() {
  static const LoweringTable t = [] {
    LoweringTable table("toy");
    table.set_family(Family::elementwise, [](const Primitive& p) { return p.is_nary(1) || p.is_nary(2); }, lower_elementwise);
    table.set("for", lower_for);
    table.unsupported_family(Family::reduction, "toy lowers no reductions");
    return table;  // everything else: no rule and no reason, which the coverage report calls MISSING
  }();
  return t;
}

std::string emit_toy(const Body& f) {
  EmitContext ctx("toy");
  ctx.literal = [](EmitContext& c, const Literal& l) {
    std::string n = c.fresh("c");
    c.line(n + " = const " + l.str());
    return n;
  };
  std::string params;
  for (Var* p : f.params()) params += (params.empty() ? "" : ", ") + ctx.def(p);
  ctx.line("toy.func @" + f.name() + "(" + params + ") {");
  {
    auto inside = ctx.indented();
    lower_body(ctx, f, toy_rules());
    ctx.line("return " + operand_list(ctx, f.outputs()));
  }
  ctx.line("}");
  return ctx.take_text();
}

TEST_CASE("toy: elementwise ops by family, a loop through lower_body, names as the printer's") {
  Module m = parse(R"(func @f(%x: f32[8], %y: f32[8]) -> f32[8] {
  %s = add %x, %y
  %r = for[body=fn(%i: i32, %k: f32[8], %s: f32[8]) -> f32[8] {
    %s2 = mul %s, %k
    %x = sub %s2, 1.0
    return %x
  }, num_consts=1] 0, 4, %y, %s
  %e = exp %r
  return %e
}
)");
  CHECK(emit_toy(*m.find("f")) ==
        "toy.func @f(%x, %y) {\n"
        "  %s = add %x, %y : f32[8]\n"
        "  %c = const 0:i32\n"
        "  %c_1 = const 4:i32\n"
        "  %r = for %i = %c to %c_1 carry(%s_1 = %s) {\n"
        "    %s2 = mul %s_1, %y : f32[8]\n"
        "    %c_2 = const 1.0:f32\n"
        "    %x_1 = sub %s2, %c_2 : f32[8]\n"
        "    yield %x_1\n"
        "  }\n"
        "  %e = exp %r : f32[8]\n"
        "  return %e\n"
        "}\n");
}

TEST_CASE("toy: an op without a rule is a located error, with the table's reason when it has one") {
  Module m = parse(R"(func @f(%x: f32[8,4]) -> f32[4] {
  %n = neg %x
  %t = transpose[permutation=(1, 0)] %n
  %s = reduce_sum[axes=(1)] %t
  return %s
}
)");
  CHECK(error_of([&] { emit_toy(*m.find("f")); }) == "t.tsr:3:3: error: toy: no lowering for `transpose`");
  Module r = parse(R"(func @f(%x: f32[8,4]) -> f32[8] {
  %s = reduce_sum[axes=(1)] %x
  return %s
}
)");
  CHECK(error_of([&] { emit_toy(*r.find("f")); }) ==
        "t.tsr:2:3: error: toy: no lowering for `reduce_sum`: toy lowers no reductions");
  // A rule that reads a value no one named is the rule's bug: an Error too.
  EmitContext ctx("toy");
  CHECK(error_of([&] { ctx.use(m.find("f")->params()[0]); }).find("toy: internal error: value `x` used where it has no name") !=
        std::string::npos);
}

TEST_CASE("toy: the coverage report lists what has no rule, and why") {
  std::vector<std::string> report = unsupported_report(toy_rules());
  auto has = [&](const std::string& line) { return std::find(report.begin(), report.end(), line) != report.end(); };
  CHECK(has("reduce_sum: toy lowers no reductions"));
  CHECK(has("transpose: MISSING"));
  CHECK(!has("add: MISSING"));
  CHECK(toy_rules().coverage(prim("exp")) == LoweringTable::Coverage::rule);
  CHECK(toy_rules().coverage(prim("select_n")) == LoweringTable::Coverage::missing);  // not unary or binary
  CHECK(toy_rules().coverage(prim("cumsum")) == LoweringTable::Coverage::unsupported);
  size_t with_rule = 0;
  for (const Primitive* p : registry().all()) with_rule += toy_rules().find(*p) != nullptr;
  CHECK(report.size() + with_rule == registry().all().size());
}

// ---- the real targets ----

TEST_CASE("every backend covers every primitive: a rule, or a stated or pending reason") {
  CHECK(backends().size() == 3);
  for (const Backend& b : backends()) {
    const RuleTableBase& t = b.rules();
    CHECK(t.name() == b.target);
    int rules = 0, unsupported = 0, pending = 0;
    for (const Primitive* p : registry().all()) {
      CHECK_MESSAGE(t.coverage(*p) != LoweringTable::Coverage::missing,
                    b.target << ": no rule and no reason for `" << p->name << "`");
      CHECK_MESSAGE(!t.contradicts(*p), b.target << ": `" << p->name << "` has a rule and is listed unsupported");
      switch (t.coverage(*p)) {
        case LoweringTable::Coverage::rule: ++rules; break;
        case LoweringTable::Coverage::unsupported:
        case LoweringTable::Coverage::no_rule_needed: ++unsupported; break;
        case LoweringTable::Coverage::pending: ++pending; break;
        case LoweringTable::Coverage::missing: break;
      }
    }
    for (const std::string& line : unsupported_report(t)) CHECK(line.find("MISSING") == std::string::npos);
    MESSAGE(b.target << ": " << rules << " rules, " << unsupported << " unsupported, " << pending << " pending ("
                     << t.pending() << ")");
  }
  // ptx and llvm: a rule or a stated reason; without LLVM 19 every
  // primitive is pending with the reason they cannot run.
#if TESSERA_HAVE_LLVM
  CHECK(find_backend("ptx")->rules().reason(prim("dma_start")) == "TPU-only");
  CHECK(find_backend("llvm")->rules().coverage(prim("get")) == LoweringTable::Coverage::rule);
#else
  CHECK(find_backend("ptx")->rules().pending() == "tessera was built without LLVM 19 (meson option llvm)");
  CHECK(unsupported_report(find_backend("ptx")->rules()).front() ==
        registry().all().front()->name + ": tessera was built without LLVM 19 (meson option llvm)");
#endif
  CHECK(find_backend("mosaic")->rules().pending().empty());
}

TEST_CASE("the backend table: targets, lookup; ptx and llvm lower kernels only") {
  CHECK(target_names() == "mosaic, ptx, llvm");
  CHECK(find_backend("mosaic") != nullptr);
  CHECK(find_backend("cuda") == nullptr);
  Module m = parse(R"(func @main(%x: f32[8]) -> f32[8] {
  %y = exp %x
  return %y
}
)");
  for (const Backend& b : backends()) {
    if (b.target == "mosaic") continue;  // tests/backends/test_mosaic.cpp
#if TESSERA_HAVE_LLVM
    // The ops around kernels are the interpreter's: nothing to compile here.
    CHECK(error_of([&] { b.emit(m, *m.find("main")); }) ==
          "t.tsr:1:1: error: " + std::string(b.target) +
              ": @main has no pallas_call to lower (the ops around kernels run in the interpreter)");
#else
    CHECK(error_of([&] { b.emit(m, *m.find("main")); }) == "error: tessera was built without LLVM 19 (meson option llvm)");
#endif
  }
}

// ---- names ----

TEST_CASE("SsaNames: hints, uniquing, numbering, enclosing scopes, aliases") {
  Var a{"x", Type::scalar(DType::f32), {}}, b{"x", Type::scalar(DType::f32), {}}, c{"", Type::scalar(DType::f32), {}},
      d{"a.b", Type::scalar(DType::f32), {}}, e{"1", Type::scalar(DType::f32), {}}, f{"", Type::scalar(DType::f32), {}};
  SsaNames outer;
  CHECK(outer.name(&a) == "x");
  CHECK(outer.name(&b) == "x_1");  // the hint is taken
  CHECK(outer.name(&a) == "x");    // stable
  CHECK(outer.name(&e) == "1");    // a number as hint is a name like any other
  CHECK(outer.name(&c) == "0");
  CHECK(outer.name(&d) == "2");    // not an identifier: numbered, skipping the taken "1"
  CHECK(outer.fresh("x") == "x_2");
  CHECK(outer.find(&f) == nullptr);

  SsaNames closed;  // a closed body starts afresh, as the printer's bodies do
  CHECK(closed.name(&b) == "x");
  CHECK(closed.name(&f) == "0");

  SsaNames inner(&outer);  // sees and avoids the enclosing names
  CHECK(*inner.find(&a) == "x");
  CHECK(inner.name(&f) == "3");
  CHECK(inner.fresh("x") == "x_3");
  inner.alias(&c, "x");
  CHECK(*inner.find(&c) == "x");
  CHECK(*outer.find(&c) == "0");

  // A taken numeric hint gets the next free number: `%1_1` is not an SSA
  // name MLIR (or the text format) reads.
  Var g{"1", Type::scalar(DType::f32), {}};
  CHECK(outer.name(&g) == "3");
}

TEST_CASE("EmitContext names values as `tessera print` does") {
  // Colliding and missing hints, as passes make them.
  auto f = make_body("f", BodyKind::func);
  Builder bld(*f);
  Var* x = bld.param(Type::array(DType::f32, {8}), "x");
  Var* x2 = bld.param(Type::array(DType::f32, {8}), "x");
  Value s = bld.binary("add", x, x2);
  Value t = bld.binary("mul", s, x);
  Value u = bld.unary("neg", t);
  bld.ret({u});
  Module m;
  m.add(f);
  std::string printed = print_body(*f, &m);
  EmitContext ctx("toy");
  for (Var* p : f->params()) CHECK(printed.find(ctx.def(p) + ": f32[8]") != std::string::npos);
  for (const Op& op : f->ops()) CHECK(printed.find(ctx.def(op.results[0]) + ": f32[8] = " + op.name()) != std::string::npos);
  CHECK(ctx.use(x2) == "%x_1");
  CHECK(ctx.use(u) == "%2");
}

TEST_CASE("EmitContext: lines, indentation and scopes") {
  EmitContext ctx("toy");
  Var v{"v", Type::scalar(DType::i32), {}}, w{"v", Type::scalar(DType::i32), {}};
  ctx.line("a");
  {
    auto in = ctx.nested(EmitContext::Names::closed, 2);
    CHECK(ctx.depth() == 2);
    ctx.line(ctx.def(&v));
    auto more = ctx.indented();
    ctx.line(ctx.def(&w));  // same scope: the hint is taken
  }
  CHECK(ctx.depth() == 0);
  CHECK(error_of([&] { ctx.use(&v); }).find("has no name") != std::string::npos);  // its scope is gone
  ctx.line(ctx.def(&w));
  CHECK(ctx.take_text() == "a\n    %v\n      %v_1\n%v\n");
  CHECK(ctx.error(Op{}, "boom").message() == "toy: boom");
}

}  // namespace
}  // namespace tessera::backends
