// Tests of the pass manager and the passes dce, discharge, partial_eval and
// linearize. Numerical checks are differential: the transformed module is run
// in the reference interpreter and compared with the original.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <unordered_set>

#include "interpreter/interpreter.h"
#include "ir/builder.h"
#include "ir/parser.h"
#include "ir/primitive.h"
#include "ir/printer.h"
#include "transforms/kernel_split.h"
#include "transforms/pass.h"
#include "tests/transforms/diff_test_util.h"
#include "verify/verify.h"

using namespace tessera;
using namespace tessera::testing;

namespace {

int count_prim(const Module& m, const std::string& name) {
  int n = 0;
  each_body(m, [&](const Body& b) {
    for (const Op& op : b.ops()) n += op.name() == name;
  });
  return n;
}

int count_ops(const Body& b) { return static_cast<int>(b.ops().size()); }

void require_verifies(const Module& m) {
  auto diags = verify_module(m);
  for (const auto& d : diags) MESSAGE(d.str());
  REQUIRE(diags.empty());
}

}  // namespace

// ---- pass manager ---------------------------------------------------------------

TEST_CASE("pipeline parsing: passes, options and their values") {
  auto steps = parse_pipeline("vmap{axis_size=3,in_axes=0|none},jvp,discharge,dce");
  REQUIRE(steps.size() == 4);
  CHECK(steps[0].name == "vmap");
  CHECK(steps[0].options.get("axis_size") == "3");
  CHECK(steps[0].options.get_int("axis_size", 0) == 3);
  CHECK(steps[0].options.get("in_axes") == "0|none");
  CHECK(steps[1].name == "jvp");
  CHECK(steps[1].options.values.empty());
  CHECK(steps[2].name == "discharge");
  CHECK(steps[3].name == "dce");
  auto spaced = parse_pipeline(" dce , partial_eval{ known = 0|1 } ");
  REQUIRE(spaced.size() == 2);
  CHECK(spaced[1].options.get("known") == "0|1");
}

TEST_CASE("pipeline parsing: clear errors") {
  CHECK(error_of([] { parse_pipeline("dce,frobnicate"); }).find("unknown pass 'frobnicate'") != std::string::npos);
  CHECK(error_of([] { parse_pipeline("dce,frobnicate"); }).find("known passes: dce, discharge") != std::string::npos);
  CHECK(error_of([] { parse_pipeline(""); }).find("empty pipeline") != std::string::npos);
  CHECK(error_of([] { parse_pipeline("dce,,jvp"); }).find("expected a pass name") != std::string::npos);
  CHECK(error_of([] { parse_pipeline("vmap{axis_size=3"); }).find("missing '}'") != std::string::npos);
  CHECK(error_of([] { parse_pipeline("vmap{axis_size}"); }).find("expected '=' after option 'axis_size'") !=
        std::string::npos);
  CHECK(error_of([] { parse_pipeline("vmap{axis_size=}"); }).find("has no value") != std::string::npos);
  CHECK(error_of([] { parse_pipeline("dce jvp"); }).find("expected ','") != std::string::npos);
  CHECK(error_of([] { parse_pipeline("vmap{in_axes=1,in_axes=2}"); }).find("given twice") != std::string::npos);
  PassOptions o;
  o.values["n"] = "3x";
  CHECK(error_of([&] { o.get_int("n", 0); }).find("not an integer") != std::string::npos);
}

TEST_CASE("run_pipeline: runs in order, prints after each pass, and names a pass with a bad option") {
  Module m = parse(R"(
func @main(%x: f32[4]) -> f32[4] {
  %dead = mul %x, 3.0
  %y = add %x, 1.0
  return %y
})");
  std::stringstream log;
  PipelineOptions po;
  po.print_after_all = true;
  po.verify_each = true;
  po.log = &log;
  Module out = run_pipeline(m, "dce,dce", po);
  CHECK(count_ops(*out.entry()) == 1);
  CHECK(log.str().find("after dce") != std::string::npos);
  CHECK(error_of([&] { run_pipeline(m, "discharge{mode=fast}"); }).find("pass 'discharge' has no option 'mode'") !=
        std::string::npos);
}

// Options are declared with each pass and checked by the
// pipeline parser, which names the column.
TEST_CASE("pipeline parsing: every pass rejects an option it does not declare, and values of the wrong type") {
  for (const PassInfo& p : all_passes()) {
    std::string pass = std::string(p.name);
    CAPTURE(pass);
    std::string pipeline = "dce," + std::string(p.name) + "{bogus=1}";
    CHECK(error_of([&] { parse_pipeline(pipeline); }) ==
          "error: bad pipeline '" + pipeline + "' at column " + std::to_string(6 + std::string(p.name).size()) +
              ": pass '" + p.name + "' has no option 'bogus' (its options: " +
              [&] {
                std::string s;
                for (const PassOptionInfo& o : p.options) s += (s.empty() ? "" : ", ") + std::string(o.name);
                return s;
              }() + ")");
    REQUIRE(p.option("func"));  // every pass honours --func
    for (const PassOptionInfo& o : p.options) CHECK(describe_passes().find(std::string("    ") + o.name + "=") != std::string::npos);
  }
  CHECK(error_of([] { parse_pipeline("jvp{wtr=5}"); }).find("at column 5: pass 'jvp' has no option 'wtr' (its options: wrt, func)") !=
        std::string::npos);
  CHECK(error_of([] { parse_pipeline("vmap{axis_size=3x}"); }).find("at column 16: option 'axis_size' takes an integer, got '3x'") !=
        std::string::npos);
  CHECK(error_of([] { parse_pipeline("discharge{pallas_call=fast}"); })
            .find("at column 23: option 'pallas_call' is one of lower|keep, got 'fast'") != std::string::npos);
  CHECK(parse_pipeline("discharge{pallas_call=keep}")[0].options.get("pallas_call") == "keep");
}

// ---- dce ------------------------------------------------------------------------

TEST_CASE("dce removes dead pure ops and keeps every effect") {
  Module m = parse(R"(
kernel @k(%x: ref<f32[8], vmem>, %o: ref<f32[8], vmem>) {
  %unused_read = get %x[:]
  %v = get %x[:]
  %dead = exp %v
  %old = swap %o[:], %v
  addupdate %o[0:4], 1.0
  debug_print[fmt="hi {}"] 3:i32
}
kernel @quiet(%x: ref<f32[8], vmem>, %o: ref<f32[8], vmem>) {
  %v = get %x[:]
  swap %o[:], %v
}
func @main(%x: f32[8]) -> f32[8] {
  %printing = pallas_call[kernel=@k, grid=(1), in_specs=[spec()], out_specs=[spec()], out_shapes=[f32[8]]] %x
  %dead_call = pallas_call[kernel=@quiet, grid=(1), in_specs=[spec()], out_specs=[spec()], out_shapes=[f32[8]]] %x
  %out = pallas_call[kernel=@quiet, grid=(1), in_specs=[spec()], out_specs=[spec()], out_shapes=[f32[8]]] %x
  %a = neg %x
  return %out
})");
  Module out = dce_pass(m, {});
  require_verifies(out);
  const Body& k = *out.find("k");
  std::vector<std::string> names;
  for (const Op& op : k.ops()) names.push_back(op.name());
  CHECK(names == std::vector<std::string>{"get", "swap", "addupdate", "debug_print"});
  // The dead pure pallas_call and neg are gone; the one whose kernel prints stays.
  CHECK(count_ops(*out.entry()) == 2);
  CHECK(out.entry()->ops()[0].param(keys::kernel)->name() == "k");
}

TEST_CASE("dce: an effect in a loop or branch keeps its op; the same module with the effect removed shrinks") {
  Module m = parse(R"(
func @main(%x: f32[4]) -> f32[4] {
  %r = for[body=fn(%i: i32, %a: f32[4]) -> f32[4] {
    debug_print[fmt="step {}"] %i
    return %a
  }] 0:i32, 3:i32, %x
  return %x
})");
  Module out = dce_pass(m, {});
  CHECK(count_prim(out, "debug_print") == 1);
  CHECK(count_prim(out, "for") == 1);
  Module pure = parse(R"(
func @main(%x: f32[4]) -> f32[4] {
  %r = for[body=fn(%i: i32, %a: f32[4]) -> f32[4] {
    %b = add %a, 1.0
    return %b
  }] 0:i32, 3:i32, %x
  return %x
})");
  CHECK(count_prim(dce_pass(pure, {}), "for") == 0);
}

TEST_CASE("dce rules: cond drops unused results and arguments, for drops dead carries") {
  Module m = parse(R"(
func @main(%p: i1, %x: f32[4], %y: f32[4]) -> f32[4] {
  %a, %b = cond[branches=[
    fn(%u: f32[4], %v: f32[4]) -> (f32[4], f32[4]) { %s = add %u, 1.0  %t = mul %v, 2.0  return %s, %t },
    fn(%u2: f32[4], %v2: f32[4]) -> (f32[4], f32[4]) { %s2 = sub %u2, 1.0  %t2 = exp %v2  return %s2, %t2 }
  ]] %p, %x, %y
  %c, %d = for[body=fn(%i: i32, %c0: f32[4], %d0: f32[4]) -> (f32[4], f32[4]) {
    %c1 = add %c0, 1.0
    %d1 = mul %d0, %c0
    return %c1, %d1
  }] 0:i32, 4:i32, %a, %b
  return %c
})");
  Module out = dce_pass(m, {});
  require_verifies(out);
  const Body& main = *out.entry();
  REQUIRE(main.ops().size() == 2);
  const Op& cond = main.ops()[0];
  CHECK(cond.results.size() == 1);
  CHECK(cond.operands.size() == 2);  // %p, %x
  for (const BodyPtr& br : cond.param(keys::branches)) CHECK(br->ops().size() == 1);
  const Op& loop = main.ops()[1];
  CHECK(loop.results.size() == 1);   // %d is dead and does not feed %c
  CHECK(loop.operands.size() == 3);  // lo, hi, %a
  // Results still equal the original's.
  auto in = random_inputs(*m.entry(), 5);
  in[0] = Array::scalar(DType::i1, 1);
  require_close(interp::run_function(out, "main", in)[0], interp::run_function(m, "main", in)[0]);
}

TEST_CASE("dce: a carry read by a live carry stays") {
  Module m = parse(R"(
func @main(%x: f32[4]) -> f32[4] {
  %c, %d = for[body=fn(%i: i32, %c0: f32[4], %d0: f32[4]) -> (f32[4], f32[4]) {
    %c1 = add %c0, %d0
    %d1 = mul %d0, 2.0
    return %c1, %d1
  }] 0:i32, 4:i32, %x, %x
  return %c
})");
  Module out = dce_pass(m, {});
  CHECK(out.entry()->ops()[0].results.size() == 2);
}

TEST_CASE("dce rules: while and scan drop dead carries, unused ys and unread xs") {
  Module m = parse(R"(
func @main(%x: f32[4], %xs: f32[5,4], %zs: f32[5,4]) -> (f32[4], i32) {
  %n, %a, %b = while[cond=fn(%k: f32[4], %c: i32, %a0: f32[4], %b0: f32[4]) -> i1 { %p = lt %c, 3  return %p },
                     body=fn(%k1: f32[4], %c1: i32, %a1: f32[4], %b1: f32[4]) -> (i32, f32[4], f32[4]) {
                       %c2 = add %c1, 1
                       %a2 = add %a1, %k1
                       %b2 = mul %b1, %a1
                       return %c2, %a2, %b2
                     }, num_consts=1] %x, 0:i32, %x, %x
  %s, %t, %ys, %ws = scan[body=fn(%s0: f32[4], %t0: f32[4], %xr: f32[4], %zr: f32[4]) -> (f32[4], f32[4], f32[4], f32[4]) {
    %s1 = add %s0, %xr
    %t1 = mul %t0, %zr
    %y = neg %s1
    %w = exp %zr
    return %s1, %t1, %y, %w
  }, length=5, num_carry=2] %a, %a, %xs, %zs
  %r = add %s, %s
  return %r, %n
})");
  Module out = dce_pass(m, {});
  require_verifies(out);
  const Body& main = *out.entry();
  REQUIRE(main.ops().size() == 3);
  const Op& w = main.ops()[0];
  CHECK(w.results.size() == 2);  // %b is dead and feeds nothing live
  CHECK(w.operands.size() == 3);
  const Op& sc = main.ops()[1];
  CHECK(sc.results.size() == 1);  // only %s: %t, %ys, %ws unused
  CHECK(sc.operands.size() == 2);  // %a and %xs; %zs is unread
  CHECK(sc.param(keys::num_carry) == 1);
  auto in = random_inputs(*m.entry(), 9);
  auto want = interp::run_function(m, "main", in);
  auto got = interp::run_function(out, "main", in);
  require_close(got[0], want[0]);
  CHECK(got[1].get(0) == want[1].get(0));
}

TEST_CASE("run_pipeline: --func gives the entry to every pass") {
  Module m = parse(R"(
func @main(%x: f32[4]) -> f32[4] { return %x }
func @f(%x: f32[4], %y: f32[4]) -> f32[4] { %a = exp %x  %b = mul %a, %y  return %b })");
  PipelineOptions po;
  po.entry = "f";
  Module out = run_pipeline(m, "partial_eval{known=0}", po);
  CHECK(out.find("f_known"));
  CHECK(out.find("f_unknown"));
  CHECK_FALSE(out.find("main_known"));
  // jvp, vmap and linearize transform @f, not @main.
  Module j = run_pipeline(m, "jvp", po);
  CHECK(j.entry("f")->params().size() == 4);
  CHECK(j.entry("main")->params().size() == 1);
  Module v = run_pipeline(m, "vmap{axis_size=3}", po);
  CHECK(v.entry("f")->params()[0]->type.str() == "f32[3,4]");
  CHECK(v.entry("main")->params()[0]->type.str() == "f32[4]");
  Module l = run_pipeline(m, "linearize", po);
  REQUIRE(l.find("f_tangent"));
  CHECK(l.entry("f_tangent")->ops().size() >= 3);  // d(exp(x) y) = exp(x) y_dot + x_dot exp(x) y
  CHECK_FALSE(l.find("main_tangent"));
  // A step's own func= wins over --func; a missing function or a kernel is an error.
  CHECK(run_pipeline(m, "jvp{func=main}", po).entry("main")->params().size() == 2);
  po.entry = "g";
  for (const PassInfo& p : all_passes()) {
    std::string pass = std::string(p.name);
    CAPTURE(pass);
    std::string step = std::string(p.name) + (p.name == std::string("vmap") ? "{axis_size=2}" : p.name == std::string("partial_eval") ? "{known=0}" : "");
    CHECK(error_of([&] { run_pipeline(m, step, po); }).find("no function @g in module") != std::string::npos);
  }
  Module with_kernel = parse("kernel @k(%x: ref<f32[4], vmem>) { swap %x[:], 1.0 }\nfunc @main(%x: f32[4]) -> f32[4] { return %x }");
  po.entry = "k";
  CHECK(error_of([&] { run_pipeline(with_kernel, "jvp", po); }) == "t.tsr:1:1: error: jvp: @k is kernel, not a func; func= names the function to transform");
}

TEST_CASE("partial_eval: a known= position out of range is located at the function") {
  Module m = parse("\nfunc @main(%x: f32[4]) -> f32[4] { return %x }");
  CHECK(error_of([&] { run_pipeline(m, "partial_eval{known=99}"); }) ==
        "t.tsr:2:1: error: partial_eval: known=99: '99' is not an input position of @main (0..0)");
}

// The rules ask about nested bodies more than once; each
// answer is memoized, so dce is linear in the nesting depth (it was 2^depth for
// conds and 3^depth for loops: 20 levels took seconds).
TEST_CASE("dce: nested conds and loops cost linear time in the depth") {
  auto nested = [](int levels, bool loops) {
    std::string text = "func @main(%p: i1, %x: f32[4]) -> f32[4] {\n";
    for (int d = 1; d < levels; ++d)
      text += loops ? "  %r, %dead = for[body=fn(%i: i32, %x: f32[4], %w: f32[4]) -> (f32[4], f32[4]) {\n  %p = lt %i, 2\n"
                    : "  %r = cond[branches=[fn(%p: i1, %x: f32[4]) -> f32[4] {\n";
    text += "  %unused = mul %x, 2.0\n  %r = add %x, 1.0\n";
    for (int d = 1; d < levels; ++d)
      text += loops ? "  %w2 = add %w, 1.0\n  return %r, %w2\n}] 0, 1, %x, %x\n"
                    : "  return %r\n}, fn(%q: i1, %z: f32[4]) -> f32[4] { return %z }]] %p, %p, %x\n";
    return text + "  return %r\n}\n";
  };
  for (bool loops : {false, true}) {
    CAPTURE(loops);
    Module m = parse(nested(40, loops));
    auto start = std::chrono::steady_clock::now();
    Module out = run_pipeline(m, "dce");
    CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < 2.0);
    CHECK(count_prim(out, "mul") == 0);
    if (loops) CHECK(print_module(out).find("%w2") == std::string::npos);  // dead carries removed at every level
    auto in = random_inputs(*m.entry(), 3);
    require_close(interp::run_function(out, "main", in)[0], interp::run_function(m, "main", in)[0], 0);
  }
}

TEST_CASE("run_pipeline: a pass result nested deeper than the parser's limit is an error naming the pass") {
  // Built in C++ (the parser would refuse it): kMaxBodyNesting + 10 levels of cond.
  Type x4 = Type::array(DType::f32, {4}), b1 = Type::scalar(DType::i1);
  auto level = [&](const BodyPtr& inner, BodyKind kind, const std::string& name) {
    BodyPtr b = make_body(name, kind), id = make_body("", BodyKind::fn);
    Builder ib(*id);
    ib.param(b1, "q");
    ib.ret({ib.param(x4, "z")});
    Builder bb(*b);
    Var* p = bb.param(b1, "p");
    Var* x = bb.param(x4, "x");
    if (!inner) {
      bb.ret({bb.binary("add", x, bb.f32(1))});
      return b;
    }
    std::vector<Var*> c = bb.create(prim("cond"), {p, p, x}, {{"branches", std::vector<BodyPtr>{inner, id}}});
    bb.ret({c[0]});
    return b;
  };
  BodyPtr body;
  for (int d = 0; d < kMaxBodyNesting + 10; ++d) body = level(body, BodyKind::fn, "");
  Module m;
  m.add(level(body, BodyKind::func, "main"));
  CHECK(error_of([&] { run_pipeline(m, "dce"); }) ==
        "error: pass 'dce' produced bodies nested " + std::to_string(kMaxBodyNesting + 11) + " deep, deeper than " +
            std::to_string(kMaxBodyNesting) + " (tessera's limit, see docs/ir.md)");
}

// ---- discharge ------------------------------------------------------------------

TEST_CASE("discharge of add: one grid loop with dynamic slices and no Ref left") {
  Module m = example("add.tsr");
  Module out = discharge_pass(m, {});
  require_verifies(out);
  CHECK_FALSE(has_ref_anywhere(out));
  CHECK(count_prim(out, "pallas_call") == 0);
  CHECK(count_prim(out, "for") == 1);
  CHECK(count_prim(out, "dynamic_slice") == 3);         // x, y and the output block
  CHECK(count_prim(out, "dynamic_update_slice") == 1);  // the output block
  CHECK(out.symbols().size() == 1);                     // kernel and index map were inlined
  auto in = random_inputs(*m.entry(), 1);
  require_close(interp::run_function(out, "main", in)[0], interp::run_function(m, "main", in)[0]);
}

// Discharged vs stateful on the zoo: same results, no Ref anywhere.
TEST_CASE("discharge: zoo examples run to the stateful results") {
  for (const char* name : {"add.tsr", "matmul.tsr", "softmax.tsr", "layernorm.tsr", "row_sum.tsr", "cumsum.tsr",
                           "flash_attention.tsr", "dma_pipeline.tsr", "gather_rows.tsr", "sc_sort.tsr"}) {
    INFO(name);
    Module m = example(name);
    Module out = discharge_pass(m, {});
    require_verifies(out);
    CHECK_FALSE(has_ref_anywhere(out));
    auto in = random_inputs(*m.entry(), 11);
    auto want = interp::run_function(m, "main", in);
    auto got = interp::run_function(out, "main", in);
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) require_close(got[i], want[i], 1e-4);
  }
}

// Compositions: jvp / vmap first, then discharge (this checks discharge on
// what jvp and vmap produce: doubled and batched block mappings, Squeezed
// batch dims, vmapped_dims, a 4-D grid).
// References: without vmap, the stateful module; with vmap (batch 3, every
// input batched), the unbatched module (jvp'd if the pipeline has jvp) run on
// each batch element separately, which also checks vmap itself.
TEST_CASE("discharge after vmap and jvp agrees with separate unbatched runs") {
  for (const char* name : {"matmul.tsr", "softmax.tsr", "flash_attention.tsr"}) {
    for (const char* pipeline : {"jvp", "vmap{axis_size=3}", "vmap{axis_size=3},jvp", "jvp,vmap{axis_size=3}"}) {
      std::string what = std::string(name) + " " + pipeline;
      INFO(what);
      Module m = example(name);
      Module stateful = run_pipeline(m, pipeline);
      Module pure = run_pipeline(stateful, "discharge,dce", {false, true, nullptr, ""});
      CHECK_FALSE(has_ref_anywhere(pure));
      auto in = random_inputs(*stateful.entry(), 31);
      auto got = interp::run_function(pure, "main", in);
      if (what.find("vmap") == std::string::npos) {
        auto want = interp::run_function(stateful, "main", in);
        REQUIRE(got.size() == want.size());
        for (size_t i = 0; i < got.size(); ++i) require_close(got[i], want[i], 1e-4);
        continue;
      }
      Module single = what.find("jvp") == std::string::npos ? m : run_pipeline(m, "jvp");
      for (int64_t b = 0; b < 3; ++b) {
        std::vector<Array> in_b;
        for (const Array& a : in) in_b.push_back(batch_element(a, b));
        auto want = interp::run_function(single, "main", in_b);
        REQUIRE(got.size() == want.size());
        for (size_t i = 0; i < got.size(); ++i) require_close(batch_element(got[i], b), want[i], 1e-4);
      }
    }
  }
}

TEST_CASE("discharge: remote DMAs and semaphores are a clear error") {
  Module m = example("ring_allreduce.tsr");
  std::string e = error_of([&] { discharge_pass(m, {}); });
  CHECK(e.find("cannot be discharged") != std::string::npos);
}

// A kernel exercising every indexer form on get / swap / addupdate / load / store.
const char* kIndexers = R"(
kernel @k(%n: ref<i32[2], smem>, %x: ref<f32[8,16], vmem>, %o: ref<f32[8,16], vmem>, %s: ref<f32[4,16], vmem>) {
  %i = get %n[0]
  %j = get %n[1]
  %all = get %x[:, :]
  swap %o[:, :], %all
  %row = get %x[3, :]                    # static point
  %drow = get %x[%i, :]                  # dynamic point
  %elem = get %x[%i, %j]                 # two dynamic points: a scalar
  %sl = get %x[0:4, ds(%j, 8)]           # static slice, dynamic slice
  %st = get %x[ds(1, 3, 2), ds(0, 4, 3)] # strided slices
  %dst = get %x[ds(%i, 2, 3), :]         # dynamic strided slice
  %r2 = add %row, %drow
  swap %o[7, :], %r2
  %e2 = mul %elem, 2.0
  swap %o[%i, %j], %e2
  %sl2 = neg %sl
  swap %o[4:8, ds(%j, 8)], %sl2
  addupdate %o[ds(0, 3, 2), ds(1, 4, 3)], %st
  addupdate %o[ds(%i, 2, 3), :], %dst
  addupdate %o[2, 5], 10.0
  swap %s[:, :], 0.5
  %io = iota[dtype=i32, shape=(16), dimension=0]
  %mask = lt %io, 5
  %ld = load %x[6, :], %mask, -1.0
  swap %s[0, :], %ld
  %v = get %x[5, :]
  store %s[1, :], %v, %mask
  %i4 = rem %i, 4
  store %s[%i4, :], %v
  %sc = get %s[:, :]
  %sc4 = slice[start_indices=(0, 0), limit_indices=(4, 16)] %sc
  %top = get %o[0:4, :]
  %sum = add %top, %sc4
  swap %o[0:4, :], %sum
}
func @main(%x: f32[8,16], %n: i32[2]) -> f32[8,16] {
  %out = pallas_call[kernel=@k, grid=(1), num_scalar_prefetch=1, in_specs=[spec()], out_specs=[spec()],
                     out_shapes=[f32[8,16]], scratch=[ref<f32[4,16], vmem>]] %n, %x
  return %out
}
)";

TEST_CASE("discharge: every indexer form on every state op agrees with the interpreter") {
  Module m = parse(kIndexers);
  require_verifies(m);
  Module out = discharge_pass(m, {});
  require_verifies(out);
  CHECK_FALSE(has_ref_anywhere(out));
  for (int32_t i : {0, 2, 4}) {
    for (int32_t j : {0, 3, 8}) {
      INFO("i=" << i << " j=" << j);
      std::vector<Array> in{random_array(Type::array(DType::f32, {8, 16}), 3),
                            Array::from_values(DType::i32, {2}, {double(i), double(j)})};
      require_close(interp::run_function(out, "main", in)[0], interp::run_function(m, "main", in)[0]);
    }
  }
}

TEST_CASE("discharge: partial edge blocks, squeezed dims, aliases and scratch across grid steps") {
  Module m = parse(R"(
index_map @rows(%i: i32) -> (i32, i32) { return %i, 0 }
index_map @sq(%i: i32) -> (i32, i32) { return %i, 0 }
kernel @k(%x: ref<f32[8,6], vmem>, %c: ref<f32[6], vmem>, %acc_in: ref<f32[20,6], vmem>, %o: ref<f32[8,6], vmem>,
          %acc: ref<f32[20,6], vmem>, %t: ref<f32[6], vmem>) {
  %i = program_id[axis=0]
  %first = eq %i, 0
  cond[branches=[fn(%t0: ref<f32[6], vmem>, %a0: ref<f32[20,6], vmem>, %ai0: ref<f32[20,6], vmem>) { },
                 fn(%t1: ref<f32[6], vmem>, %a1: ref<f32[20,6], vmem>, %ai1: ref<f32[20,6], vmem>) {
                   swap %t1[:], 0.0
                   %init = get %ai1[:, :]
                   swap %a1[:, :], %init
                 }]] %first, %t, %acc, %acc_in
  %a = get %x[:, :]
  %cv = get %c[:]
  %tv = get %t[:]
  %tn = add %tv, %cv
  swap %t[:], %tn
  %nb = num_programs[axis=0]
  %f = convert_element_type[new_dtype=f32] %nb
  %b = mul %a, %f
  swap %o[:, :], %b
  addupdate %acc[0, :], %tn
}
func @main(%x: f32[20,6], %c: f32[3,6], %z: f32[20,6]) -> (f32[20,6], f32[20,6]) {
  %o, %acc = pallas_call[kernel=@k, grid=(3), in_specs=[spec((8, 6), @rows), spec((squeezed, 6), @sq), spec()],
                         out_specs=[spec((8, 6), @rows), spec()], out_shapes=[f32[20,6], f32[20,6]],
                         input_output_aliases=[(2, 1)], scratch=[ref<f32[6], vmem>],
                         dimension_semantics=(arbitrary)] %x, %c, %z
  return %o, %acc
})");
  require_verifies(m);
  Module out = discharge_pass(m, {});
  require_verifies(out);
  CHECK_FALSE(has_ref_anywhere(out));
  CHECK(count_prim(out, "pad") >= 1);  // the 20-row arrays in 8-row blocks
  auto in = random_inputs(*m.entry(), 21);
  auto got = interp::run_function(out, "main", in);
  // Independent reference: o = 3 x; acc = z with row 0 += sum_i (c[0] + ... + c[i]).
  Array want_o = in[0].copy(), want_acc = in[2].copy();
  for (int64_t e = 0; e < want_o.size(); ++e) want_o.set(e, 3 * in[0].get(e));
  for (int64_t col = 0; col < 6; ++col) {
    double run = 0, total = 0;
    for (int64_t i = 0; i < 3; ++i) run += in[1].get(i * 6 + col), total += run;
    want_acc.set(col, in[2].get(col) + total);
  }
  require_close(got[0], want_o);
  require_close(got[1], want_acc);
  auto stateful = interp::run_function(m, "main", in);
  require_close(got[0], stateful[0]);
  require_close(got[1], stateful[1]);
}

// Masked loads and stores whose window reaches past the Ref's ends where the
// mask is off: the interpreter touches only the lanes on the mask, and so
// must the discharged program (dynamic_slice would clamp the start and move
// every lane: lane [0, 0] of a store at [8, 128] landed at [0, 0]). Edge
// blocks of a partial grid, starts before 0, past the end, and a strided
// window; the mask keeps exactly the lanes inside the Ref.
TEST_CASE("discharge: masked loads and stores reaching past the Ref's ends agree with the interpreter") {
  Module m = parse(R"(
index_map @ij(%i: i32, %j: i32, %s: ref<i32[3], smem>) -> (i32, i32) { return %i, %j }
kernel @k(%s: ref<i32[3], smem>, %x: ref<f32[16,256], vmem>, %o: ref<f32[16,256], vmem>) {
  %r0 = get %s[0]
  %c0 = get %s[1]
  %z = broadcast_in_dim[shape=(16, 256), broadcast_dimensions=()] -1.0:f32
  swap %o[:, :], %z
  %r = iota[dtype=i32, shape=(16, 256), dimension=0]
  %c = iota[dtype=i32, shape=(16, 256), dimension=1]
  %gr = add %r, %r0
  %gc = add %c, %c0
  %r_lo = ge %gr, 0
  %r_hi = lt %gr, 16
  %c_lo = ge %gc, 0
  %c_hi = lt %gc, 256
  %mr = and %r_lo, %r_hi
  %mc = and %c_lo, %c_hi
  %m = and %mr, %mc
  %v = load %x[ds(%r0, 16), ds(%c0, 256)], %m, 7.0:f32
  %w = mul %v, 2.0
  store %o[ds(%r0, 16), ds(%c0, 256)], %w, %m
  %c2 = get %s[2]
  %rs = iota[dtype=i32, shape=(4, 128), dimension=0]
  %rs2 = mul %rs, 3
  %grs = add %rs2, %c2
  %ms = lt %grs, 16
  %half = get %x[0:4, 0:128]
  store %o[ds(%c2, 4, 3), 0:128], %half, %ms
}
func @main(%s: i32[3], %x: f32[40,300]) -> f32[40,300] {
  %o = pallas_call[kernel=@k, grid=(3, 2), num_scalar_prefetch=1,
                   in_specs=[spec((16, 256), @ij)], out_specs=[spec((16, 256), @ij)], out_shapes=[f32[40,300]],
                   dimension_semantics=(parallel, parallel)] %s, %x
  return %o
})");
  require_verifies(m);
  Module out = discharge_pass(m, {});
  require_verifies(out);
  CHECK_FALSE(has_ref_anywhere(out));
  Array x = random_array(Type::array(DType::f32, {40, 300}), 5);
  struct Starts {
    int row, column, strided;
  };
  for (Starts st : {Starts{8, 128, 0}, Starts{-5, -100, 7}, Starts{15, 255, 13}, Starts{0, 0, 15}, Starts{-15, 200, 1}}) {
    INFO("row start " << st.row << ", column start " << st.column << ", strided start " << st.strided);
    std::vector<Array> in{Array::from_values(DType::i32, {3}, {double(st.row), double(st.column), double(st.strided)}), x};
    std::vector<Array> want = interp::run_function(m, "main", in);
    require_close(interp::run_function(out, "main", in)[0], want[0]);
  }
}

// Kernels that write their input blocks. The interpreter
// copies an input block in only when its start changes and never back, so a
// write is seen by the following steps on the same block and by nobody else.
TEST_CASE("discharge: writes to input blocks are seen exactly as the interpreter sees them") {
  // JAX's test_correct_number_of_stores, on a (2, 8) grid: a vmem input block
  // that stays put along j accumulates, and a whole SMEM counter input counts
  // every step; neither write leaves the call (%s is returned unchanged).
  Module counter = parse(R"(
index_map @row(%i: i32, %j: i32) -> (i32, i32) { return %i, 0 }
index_map @step(%i: i32, %j: i32) -> (i32) {
  %k = mul %i, 8
  %n = add %k, %j
  return %n
}
kernel @k(%x: ref<f32[1,4], vmem>, %s: ref<i32[1], smem>, %o: ref<f32[1,4], vmem>, %c: ref<i32[1], smem>) {
  %v = get %s[0]
  %xv = get %x[:, :]
  %f = convert_element_type[new_dtype=f32] %v
  %y = add %xv, %f
  swap %x[:, :], %y
  %v1 = add %v, 1
  swap %s[0], %v1
  %z = get %x[:, :]
  swap %o[:, :], %z
  swap %c[0], %v
}
func @main(%x: f32[2,4], %s: i32[1]) -> (f32[2,4], i32[16], i32[1]) {
  %o, %c = pallas_call[kernel=@k, grid=(2, 8), in_specs=[spec((1, 4), @row), spec(mem=smem)],
                       out_specs=[spec((1, 4), @row), spec((1), @step, mem=smem)],
                       out_shapes=[f32[2,4], i32[16]]] %x, %s
  return %o, %c, %s
})");
  // The block index goes 0, 0, 1, 1, 0: coming back to block 0 copies it in
  // again from the array, which the kernel's writes never reached.
  Module revisit = parse(R"(
index_map @half(%i: i32) -> (i32, i32) {
  %h = div %i, 2
  %r = rem %h, 2
  return %r, 0
}
index_map @row(%i: i32) -> (i32, i32) { return %i, 0 }
kernel @k(%x: ref<f32[1,4], vmem>, %o: ref<f32[4], vmem>) {
  addupdate %x[:, :], 1.0
  %v = get %x[0, :]
  swap %o[:], %v
}
func @main(%x: f32[2,4]) -> f32[5,4] {
  %o = pallas_call[kernel=@k, grid=(5), in_specs=[spec((1, 4), @half)],
                   out_specs=[spec((squeezed, 4), @row)], out_shapes=[f32[5,4]]] %x
  return %o
})");
  // An input aliased to its output: the written input block stays along j.
  Module aliased = parse(R"(
index_map @row(%i: i32, %j: i32) -> (i32, i32) { return %i, 0 }
kernel @k(%x: ref<f32[1,4], vmem>, %o: ref<f32[1,4], vmem>) {
  %v = get %x[:, :]
  %w = mul %v, 2.0
  swap %x[:, :], %w
  %u = get %x[:, :]
  %z = add %u, 1.0
  swap %o[:, :], %z
}
func @main(%x: f32[4,4]) -> f32[4,4] {
  %o = pallas_call[kernel=@k, grid=(4, 3), in_specs=[spec((1, 4), @row)], out_specs=[spec((1, 4), @row)],
                   out_shapes=[f32[4,4]], input_output_aliases=[(0, 0)]] %x
  return %o
})");
  // An `any` input written by DMA: step i reads row i, which step i-1 wrote.
  Module dma = parse(R"(
kernel @k(%x: ref<f32[4,4], any>, %o: ref<f32[4], vmem>, %buf: ref<f32[4], vmem>, %sem: ref<dma_sem[1], semaphore>) {
  %i = program_id[axis=0]
  dma_start %x[%i, :], %buf[:], %sem[0]
  dma_wait %sem[0], %buf[:]
  %v = get %buf[:]
  swap %o[:], %v
  %w = add %v, 10.0
  swap %buf[:], %w
  %n = add %i, 1
  %m = rem %n, 4
  dma_start %buf[:], %x[%m, :], %sem[0]
  dma_wait %sem[0], %x[%m, :]
}
index_map @row(%i: i32) -> (i32, i32) { return %i, 0 }
func @main(%x: f32[4,4]) -> (f32[4,4], f32[4,4]) {
  %o = pallas_call[kernel=@k, grid=(4), in_specs=[spec(mem=any)], out_specs=[spec((squeezed, 4), @row)],
                   out_shapes=[f32[4,4]], scratch=[ref<f32[4], vmem>, ref<dma_sem[1], semaphore>]] %x
  return %o, %x
})");

  auto discharged = [](const Module& m) {
    require_verifies(m);
    Module out = run_pipeline(m, "discharge,dce");
    require_verifies(out);
    CHECK_FALSE(has_ref_anywhere(out));
    return out;
  };
  auto same_as_stateful = [&](const Module& m, const std::vector<Array>& in) {
    auto want = interp::run_function(m, "main", in);
    auto got = interp::run_function(discharged(m), "main", in);
    REQUIRE(got.size() == want.size());
    for (size_t o = 0; o < got.size(); ++o) {
      CAPTURE(o);
      require_close(got[o], want[o], 0);
    }
    return got;
  };

  SUBCASE("an input block and an SMEM counter input (JAX's test_correct_number_of_stores)") {
    std::vector<Array> in{Array(DType::f32, {2, 4}), Array(DType::i32, {1})};
    auto got = same_as_stateful(counter, in);
    // Row i holds the sum of the counter over its 8 steps: 0+..+7, 8+..+15.
    for (int64_t e = 0; e < 8; ++e) CHECK(got[0].get(e) == (e < 4 ? 28 : 92));
    for (int64_t e = 0; e < 16; ++e) CHECK(got[1].get(e) == e);
    CHECK(got[2].get(0) == 0);
  }
  SUBCASE("a written block is copied in again when the index comes back") {
    auto in = random_inputs(*revisit.entry(), 5);
    auto got = same_as_stateful(revisit, in);
    const int64_t block[5] = {0, 0, 1, 1, 0}, adds[5] = {1, 2, 1, 2, 1};
    for (int64_t r = 0; r < 5; ++r)
      for (int64_t c = 0; c < 4; ++c) CHECK(got[0].get(r * 4 + c) == doctest::Approx(in[0].get(block[r] * 4 + c) + adds[r]));
  }
  SUBCASE("an input aliased to an output") {
    auto in = random_inputs(*aliased.entry(), 6);
    auto got = same_as_stateful(aliased, in);
    for (int64_t e = 0; e < 16; ++e) CHECK(got[0].get(e) == doctest::Approx(8 * in[0].get(e) + 1));
  }
  SUBCASE("an aliased input block stays resident while its index stays put") {
    // Found by the property test: the output block (also block 0 of the
    // shared buffer) is written at every step, but the input block was copied
    // in once, at step 0; discharge re-read it from the output being built
    // and gave x + 3 instead of x + 1.
    Module resident = parse(R"(
index_map @zero(%i: i32) -> (i32) { return 0:i32 }
kernel @k(%x: ref<f32[2], vmem>, %o: ref<f32[2], vmem>) {
  %v = get %x[:]
  %w = add %v, 1.0:f32
  swap %o[:], %w
}
func @main(%a: f32[4]) -> f32[4] {
  %r = pallas_call[kernel=@k, grid=(3), in_specs=[spec((2), @zero)], out_specs=[spec((2), @zero)],
                   out_shapes=[f32[4]], input_output_aliases=[(0, 0)], dimension_semantics=(arbitrary)] %a
  return %r
})");
    auto in = random_inputs(*resident.entry(), 8);
    auto got = same_as_stateful(resident, in);
    for (int64_t e = 0; e < 2; ++e) CHECK(got[0].get(e) == doctest::Approx(in[0].get(e) + 1));
    for (int64_t e = 2; e < 4; ++e) CHECK(got[0].get(e) == in[0].get(e));
  }
  SUBCASE("an aliased output block goes back to the array only when it moves") {
    // Found by the property test. The output stays on block 0 for all three
    // steps; the aliased input reads blocks 0, 1, 0. At step 2 block 0 is
    // copied in again from the shared array, which the output block has not
    // reached yet (it is copied back after the last step): the input sees x.
    Module lazy = parse(R"(
index_map @zero(%i: i32) -> (i32) { return 0:i32 }
index_map @wobble(%i: i32) -> (i32) {
  %r = rem %i, 2
  return %r
}
kernel @k(%x: ref<f32[2], vmem>, %o: ref<f32[2], vmem>) {
  %v = get %x[:]
  %p = program_id[axis=0]
  %f = convert_element_type[new_dtype=f32] %p
  %w = add %v, %f
  swap %o[:], %w
}
func @main(%a: f32[4]) -> f32[4] {
  %r = pallas_call[kernel=@k, grid=(3), in_specs=[spec((2), @wobble)], out_specs=[spec((2), @zero)],
                   out_shapes=[f32[4]], input_output_aliases=[(0, 0)], dimension_semantics=(arbitrary)] %a
  return %r
})");
    auto in = random_inputs(*lazy.entry(), 9);
    auto got = same_as_stateful(lazy, in);
    for (int64_t e = 0; e < 2; ++e) CHECK(got[0].get(e) == doctest::Approx(in[0].get(e) + 2));
    for (int64_t e = 2; e < 4; ++e) CHECK(got[0].get(e) == in[0].get(e));
  }
  SUBCASE("an any input written by DMA") {
    auto in = random_inputs(*dma.entry(), 7);
    auto got = same_as_stateful(dma, in);
    for (int64_t r = 0; r < 4; ++r)
      for (int64_t c = 0; c < 4; ++c) CHECK(got[0].get(r * 4 + c) == doctest::Approx(in[0].get(c) + 10 * r));
    require_close(got[1], in[0], 0);
  }
}

TEST_CASE("discharge: control flow threads Refs (for, while, scan, run_scoped, dynamic grid)") {
  Module m = parse(R"(
kernel @k(%n: ref<i32[1], smem>, %x: ref<f32[4,8], vmem>, %o: ref<f32[4,8], vmem>) {
  %v = get %x[:, :]
  swap %o[:, :], %v
  %r = for[body=fn(%i: i32, %oo: ref<f32[4,8], vmem>, %s: f32) -> f32 {
    %row = get %oo[%i, :]
    %row2 = mul %row, 2.0
    swap %oo[%i, :], %row2
    %s2 = add %s, 1.0
    return %s2
  }, num_consts=1] 0:i32, 4:i32, %o, 0.0
  %cnt = get %n[0]
  %w = while[cond=fn(%oo: ref<f32[4,8], vmem>, %c: i32) -> i1 { %b = lt %c, 3  return %b },
             body=fn(%oo2: ref<f32[4,8], vmem>, %c2: i32) -> i32 {
               addupdate %oo2[%c2, 0:4], 1.0
               %c3 = add %c2, 1
               return %c3
             }, num_consts=1] %o, %cnt
  %accf, %ys = scan[body=fn(%oo3: ref<f32[4,8], vmem>, %acc: f32, %xrow: f32[8]) -> (f32, f32[8]) {
    %old = get %oo3[0, :]
    %new = add %old, %xrow
    swap %oo3[0, :], %new
    %t = reduce_sum[axes=(0)] %xrow
    %acc2 = add %acc, %t
    return %acc2, %old
  }, length=4, num_consts=1, num_carry=1] %o, %r, %v
  %z = run_scoped[body=fn(%oo4: ref<f32[4,8], vmem>, %tmp: ref<f32[8], vmem>) -> f32 {
    %row3 = get %oo4[3, :]
    swap %tmp[:], %row3
    %back = get %tmp[:]
    %neg = neg %back
    swap %oo4[3, :], %neg
    %m = reduce_max[axes=(0)] %back
    return %m
  }] %o
  addupdate %o[2, 7], %z
}
func @main(%g: i32, %n: i32[1], %x: f32[8,8]) -> f32[8,8] {
  %out = pallas_call[kernel=@k, grid=(?), num_scalar_prefetch=1, in_specs=[spec((4, 8), fn(%i: i32, %nn: ref<i32[1], smem>) -> (i32, i32) { return %i, 0 })],
                     out_specs=[spec((4, 8), fn(%i2: i32, %nn2: ref<i32[1], smem>) -> (i32, i32) { return %i2, 0 })],
                     out_shapes=[f32[8,8]]] %g, %n, %x
  return %out
})");
  require_verifies(m);
  Module out = discharge_pass(m, {});
  require_verifies(out);
  CHECK_FALSE(has_ref_anywhere(out));
  std::vector<Array> in{Array::scalar(DType::i32, 2), Array::from_values(DType::i32, {1}, {1}),
                        random_array(Type::array(DType::f32, {8, 8}), 4)};
  require_close(interp::run_function(out, "main", in)[0], interp::run_function(m, "main", in)[0]);
}

TEST_CASE("discharge{pallas_call=keep}: JAX's state discharge rule makes closed-over Refs aliased inputs/outputs") {
  Module m = parse(R"(
kernel @k(%x: ref<f32[8], vmem>, %acc: ref<f32[8], vmem>, %o: ref<f32[8], vmem>) {
  %v = get %x[:]
  swap %o[:], %v
  addupdate %acc[:], %v
}
func @main(%x: f32[8], %a: f32[8]) -> (f32[8], f32[8]) {
  %r, %q = run_scoped[body=fn(%a0: f32[8], %x0: f32[8], %ref: ref<f32[8], vmem>) -> (f32[8], f32[8]) {
    swap %ref[:], %a0
    %o = pallas_call[kernel=@k, grid=(1), in_specs=[spec(), spec()], out_specs=[spec()], out_shapes=[f32[8]]] %x0, %ref
    %fin = get %ref[:]
    return %o, %fin
  }] %a, %x
  return %r, %q
})");
  require_verifies(m);
  PassOptions keep;
  keep.values["pallas_call"] = "keep";
  Module kept = discharge_pass(m, keep);
  require_verifies(kept);
  REQUIRE(count_prim(kept, "pallas_call") == 1);
  const Op* pc = nullptr;
  each_body(kept, [&](const Body& b) {
    for (const Op& op : b.ops())
      if (op.name() == "pallas_call") pc = &op;
  });
  REQUIRE(pc);
  CHECK(pc->results.size() == 2);
  CHECK(pc->param(keys::input_output_aliases) == IntPairs{{1, 1}});
  CHECK_FALSE(pc->operands[1].type().is_ref());
  Module lowered = discharge_pass(m, {});
  CHECK_FALSE(has_ref_anywhere(lowered));
  auto in = random_inputs(*m.entry(), 8);
  auto want = interp::run_function(m, "main", in);
  // The Ref is updated in place (the pallas_call effect rule): acc = a + x, an
  // independent reference. (The interpreter, run on the stateful module, does
  // not write a blocked Ref input back yet, so only its first output is compared.)
  for (const Module* t : {&kept, &lowered}) {
    auto got = interp::run_function(*t, "main", in);
    require_close(got[0], want[0]);
    for (int64_t e = 0; e < 8; ++e) CHECK(got[1].get(e) == doctest::Approx(in[0].get(e) + in[1].get(e)));
  }
}

TEST_CASE("discharge: core_map becomes a pallas_call over the mesh, then a loop") {
  Module m = parse(R"(
func @main(%a: f32[4,8]) -> f32[4,8] {
  %r = run_scoped[body=fn(%a0: f32[4,8], %ref: ref<f32[4,8], vmem>) -> f32[4,8] {
    swap %ref[:, :], %a0
    core_map[body=fn(%rr: ref<f32[4,8], vmem>) {
      %c = axis_index[axis_name=core]
      %row = get %rr[%c, :]
      %f = convert_element_type[new_dtype=f32] %c
      %row2 = add %row, %f
      swap %rr[%c, :], %row2
    }, mesh_axes=(core), mesh_shape=(4)] %ref
    %fin = get %ref[:, :]
    return %fin
  }] %a
  return %r
})");
  require_verifies(m);
  PassOptions keep;
  keep.values["pallas_call"] = "keep";
  Module kept = discharge_pass(m, keep);
  CHECK(count_prim(kept, "core_map") == 0);
  CHECK(count_prim(kept, "pallas_call") == 1);
  Module out = discharge_pass(m, {});
  require_verifies(out);
  CHECK_FALSE(has_ref_anywhere(out));
  auto in = random_inputs(*m.entry(), 2);
  auto got = interp::run_function(out, "main", in);
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t c = 0; c < 8; ++c) CHECK(got[0].get(r * 8 + c) == doctest::Approx(in[0].get(r * 8 + c) + r));
}

TEST_CASE("discharge: unsupported cases are clear errors") {
  Module bounded = parse(R"(
kernel @k(%x: ref<f32[8], vmem>, %o: ref<f32[8], vmem>) { %v = get %x[:]  swap %o[:], %v }
func @main(%x: f32[16]) -> f32[16] {
  %o = pallas_call[kernel=@k, grid=(2), in_specs=[spec((bounded(8)), fn(%i: i32) -> (i32, i32) { %s = mul %i, 8  return %s, 8 })],
                   out_specs=[spec((8), fn(%j: i32) -> (i32) { return %j })], out_shapes=[f32[16]]] %x
  return %o
})");
  // Refused at the pallas_call, located (line 4 of the text).
  std::string refusal = error_of([&] { discharge_pass(bounded, {}); });
  CHECK(refusal.find("BoundedSlice") != std::string::npos);
  CHECK(refusal.rfind("t.tsr:4:", 0) == 0);
  Module sem = parse(R"(
kernel @k(%o: ref<f32[8], vmem>, %s: ref<sem[1], semaphore>) {
  semaphore_signal %s[0], 1:i32
  semaphore_wait %s[0], 1:i32
  swap %o[:], 1.0
}
func @main() -> f32[8] {
  %o = pallas_call[kernel=@k, grid=(1), in_specs=[], out_specs=[spec()], out_shapes=[f32[8]], scratch=[ref<sem[1], semaphore>]]
  return %o
})");
  CHECK(error_of([&] { discharge_pass(sem, {}); }).find("semaphore_signal cannot be discharged") != std::string::npos);
  PassOptions bad;
  bad.values["pallas_call"] = "maybe";
  CHECK(error_of([&] { discharge_pass(sem, bad); }).find("not one of lower, keep") != std::string::npos);
}

// ---- partial eval / linearize -----------------------------------------------------

TEST_CASE("partial_eval: known part then unknown part equals the original") {
  Module m = parse(R"(
func @main(%x: f32[8], %y: f32[8], %z: f32[8]) -> (f32[8], f32[8], f32[8]) {
  %a = exp %x
  %b = mul %a, %y
  %c = sin %x
  %d = add %b, %z
  %e = mul %d, %c
  %unused = neg %z
  return %c, %e, %b
})");
  PassOptions o;
  o.values["known"] = "0|1";
  Module out = partial_eval_pass(m, o);
  require_verifies(out);
  BodyPtr k = out.find("main_known"), u = out.find("main_unknown");
  REQUIRE(k);
  REQUIRE(u);
  CHECK(out.find("main"));
  // Known: %c, %b (and residuals); unknown: %e only.
  CHECK(u->outputs().size() == 1);
  CHECK(k->params().size() == 2);
  CHECK(u->ops().size() == 2);  // add, mul: everything else is known
  auto in = random_inputs(*m.entry(), 3);
  auto want = interp::run_function(m, "main", in);
  auto kout = interp::run_function(out, "main_known", {in[0], in[1]});
  REQUIRE(kout.size() == 2 + u->params().size() - 1);
  std::vector<Array> uin(kout.begin() + 2, kout.end());
  uin.push_back(in[2]);
  auto uout = interp::run_function(out, "main_unknown", uin);
  require_close(kout[0], want[0]);
  require_close(uout[0], want[1]);
  require_close(kout[1], want[2]);
}

// The known part runs before the unknown part, so ops on a Ref stay in one
// part, in program order, once an unknown op writes it (a later read would miss
// the write) or reads it before a known write (it would see the write early).
TEST_CASE("partial_eval: a Ref an unknown op writes, or reads before a known write, stays in program order") {
  Module raw = parse(R"(
func @main(%r: ref<f32[4], vmem>, %t: f32[4]) -> f32[4] {
  %old = swap %r[:], %t
  %v = get %r[:]
  %w = exp %v
  return %w
})");
  PassOptions o;
  o.values["known"] = "0";
  Module out = partial_eval_pass(raw, o);
  require_verifies(out);
  CHECK(out.find("main_known")->ops().empty());  // the read follows the unknown write
  REQUIRE(out.find("main_unknown")->ops().size() == 3);
  auto in = random_inputs(*raw.entry(), 5);
  auto want = interp::run_function(raw, "main", in);
  auto got = interp::run_function(out, "main_unknown", in);
  REQUIRE(got.size() == 1);
  require_close(got[0], want[0]);

  Module war = parse(R"(
func @main(%r: ref<f32[4], vmem>, %k: f32[4], %i: i32) -> (f32, f32[4]) {
  %v = get %r[%i]
  %old = swap %r[:], %k
  %e = exp %k
  return %v, %e
})");
  o.values["known"] = "0|1";
  out = partial_eval_pass(war, o);
  require_verifies(out);
  const Body& known = *out.find("main_known");
  const Body& unknown = *out.find("main_unknown");
  REQUIRE(known.ops().size() == 1);  // exp only: the write waits for the unknown read
  CHECK(known.ops()[0].name() == "exp");
  REQUIRE(unknown.ops().size() == 2);
  CHECK(unknown.ops()[0].name() == "get");
  CHECK(unknown.ops()[1].name() == "swap");

  // Reads the unknown part makes with no later write need no ordering.
  Module late = parse(R"(
func @main(%r: ref<f32[4], vmem>, %k: f32[4], %i: i32) -> f32 {
  %old = swap %r[:], %k
  %v = get %r[%i]
  return %v
})");
  out = partial_eval_pass(late, o);
  CHECK(out.find("main_known")->ops().size() == 1);
  CHECK(out.find("main_unknown")->ops().size() == 1);
}

// kernel_split's where_mixed, which linearize's error names: following the
// taint of an output back to where it meets untainted data (an `add` of a
// tangent and a primal value), or, when it only passed through a Ref, to the
// write that put it there (scratch both halves would use).
TEST_CASE("where_mixed: the op where taint meets untainted data, or the write into a shared Ref") {
  Module m = parse(R"(
kernel @k(%x: ref<f64[8], vmem>, %t: ref<f64[8], vmem>, %o: ref<f64[8], vmem>, %p: ref<f64[8], vmem>,
          %s: ref<f64[8], vmem>) {
  %v = get %t[:]
  swap %s[:], %v
  %w = get %s[:]
  %y = sin %w
  swap %o[:], %y
  %xv = get %x[:]
  %z = add %xv, %v
  swap %p[:], %z
})");
  const Body& k = *m.find("k");
  KernelTaint t = kernel_taint(k, {0, 1, 0, 0, 0});
  const Op* shared = where_mixed(t, k.params()[2]);
  REQUIRE(shared);
  CHECK(shared->name() == "swap");
  CHECK(shared->operands[0].var() == k.params()[4]);  // the write into %s
  const Op* add = where_mixed(t, k.params()[3]);
  REQUIRE(add);
  CHECK(add->name() == "add");
  CHECK(where_mixed(t, k.params()[1]) == nullptr);  // the tainted parameter itself
}

TEST_CASE("partial_eval: options and the core_map rule") {
  Module m = parse(R"(
func @main(%x: f32[8]) -> f32[8] { %a = exp %x  return %a })");
  CHECK(error_of([&] { partial_eval_pass(m, {}); }).find("needs the option known=") != std::string::npos);
  PassOptions bad;
  bad.values["known"] = "3";
  CHECK(error_of([&] { partial_eval_pass(m, bad); }).find("not an input position") != std::string::npos);
  PassOptions none;
  none.values["known"] = "none";
  Module all_unknown = partial_eval_pass(m, none);
  CHECK(all_unknown.find("main_unknown")->ops().size() == 1);
  CHECK(all_unknown.find("main_known")->ops().empty());

  Module cm = parse(R"(
func @main(%r: ref<f32[4], vmem>, %s: ref<f32[4], vmem>) {
  core_map[body=fn(%a: ref<f32[4], vmem>) { addupdate %a[:], 1.0 }, mesh_axes=(core), mesh_shape=(2)] %r
  core_map[body=fn(%b: ref<f32[4], vmem>, %c: ref<f32[4], vmem>) { %v = get %b[:]  swap %c[:], %v }, mesh_axes=(core), mesh_shape=(2)] %r, %s
})");
  PassOptions o;
  o.values["known"] = "0";
  Module out = partial_eval_pass(cm, o);
  // All known: in the known part only (both parts run, one after the other,
  // on the same Refs: recomputing it would add 1.0 twice); mixed: staged.
  CHECK(out.find("main_known")->ops().size() == 1);
  REQUIRE(out.find("main_unknown")->ops().size() == 1);
  CHECK(out.find("main_unknown")->ops()[0].operands.size() == 2);
  CHECK(out.find("main_unknown")->params().size() == 2);  // %r passed through, %s
}

TEST_CASE("linearize: primal function plus a linear tangent function that matches jvp") {
  Module m = parse(R"(
func @main(%x: f32[8], %y: f32[8]) -> f32[8] {
  %s = sin %x
  %p = mul %s, %y
  %e = exp %p
  return %e
})");
  Module out = linearize_pass(m, {});
  require_verifies(out);
  BodyPtr primal = out.find("main_primal"), tangent = out.find("main_tangent");
  REQUIRE(primal);
  REQUIRE(tangent);
  // The tangent function is linear: no transcendental op is left in it.
  for (const Op& op : tangent->ops()) CHECK(op.name() != "sin");
  for (const Op& op : tangent->ops()) CHECK(op.name() != "exp");
  for (const Op& op : tangent->ops()) CHECK(op.name() != "cos");
  auto in = random_inputs(*m.entry(), 17);
  auto tin = random_inputs(*m.entry(), 29);
  auto pout = interp::run_function(out, "main_primal", in);
  REQUIRE(pout.size() >= 1);
  std::vector<Array> targs(pout.begin() + 1, pout.end());
  targs.insert(targs.end(), tin.begin(), tin.end());
  auto tout = interp::run_function(out, "main_tangent", targs);
  REQUIRE(tout.size() == 1);
  std::vector<Array> jin = in;
  jin.insert(jin.end(), tin.begin(), tin.end());
  auto jout = interp::run_function(out, "main", jin);  // the jvp itself
  require_close(pout[0], jout[0]);
  require_close(tout[0], jout[1]);
  // Independent reference: d/dt exp(sin(x) y) = exp(sin x * y) (cos x * y * dx + sin x * dy).
  for (int64_t e = 0; e < 8; ++e) {
    double x = in[0].get(e), y = in[1].get(e), dx = tin[0].get(e), dy = tin[1].get(e);
    CHECK(tout[0].get(e) == doctest::Approx(std::exp(std::sin(x) * y) * (std::cos(x) * y * dx + std::sin(x) * dy)).epsilon(1e-4));
  }
}

TEST_CASE("linearize then discharge of a pallas_call kernel (softmax) stays consistent") {
  Module m = example("softmax.tsr");
  Module out;
  std::string err = error_of([&] { out = run_pipeline(m, "linearize,discharge,dce", {false, true, nullptr, ""}); });
  if (!err.empty()) {
    // jvp of this kernel may still be unsupported by the jvp pass; then the error must name it.
    MESSAGE("linearize of softmax: " << err);
    CHECK(err.find("jvp") != std::string::npos);
    return;
  }
  CHECK_FALSE(has_ref_anywhere(out));
  // Before discharge: the primal function runs a pallas_call restricted to the
  // primal input and output (the pallas_call partial-eval rule).
  Module lin = linearize_pass(m, {});
  const Body& primal = *lin.find("main_primal");
  REQUIRE(primal.ops().size() == 1);
  CHECK(primal.ops()[0].name() == "pallas_call");
  CHECK(primal.ops()[0].results.size() == 1);
  CHECK(primal.ops()[0].operands.size() == 1);
  CHECK(lin.find("main_tangent")->outputs().size() == 1);
  auto in = random_inputs(*m.entry(), 5);
  auto tin = random_inputs(*m.entry(), 6);
  auto pout = interp::run_function(out, "main_primal", in);
  std::vector<Array> targs(pout.begin() + 1, pout.end());
  targs.insert(targs.end(), tin.begin(), tin.end());
  auto tout = interp::run_function(out, "main_tangent", targs);
  std::vector<Array> jin = in;
  jin.insert(jin.end(), tin.begin(), tin.end());
  auto jout = interp::run_function(out, "main", jin);
  require_close(pout[0], interp::run_function(m, "main", in)[0], 1e-5);
  require_close(tout[0], jout[1], 1e-4);
}

TEST_CASE("jvp and vmap copy an op no tangent or batch reaches, sharing its nested body") {
  Module src = parse(R"(
func @main(%x: f32[4], %n: i32) -> (f32[4], i32) {
  %c = for[body=fn(%i: i32, %a: i32) -> i32 { %b = add %a, %i
    return %b }] 0:i32, %n, 0:i32
  %y = exp %x
  return %y, %c
}
)");
  auto loop_body = [](const Module& m) {
    for (const Op& op : m.entry()->ops())
      if (op.name() == "for") return op.param(keys::body).get();
    return static_cast<Body*>(nullptr);
  };
  const Body* shared = loop_body(src);
  REQUIRE(shared);
  PassOptions wrt, batch;
  wrt.values = {{"wrt", "0"}};
  batch.values = {{"axis_size", "3"}, {"in_axes", "0|none"}};
  Module j = jvp_pass(src, wrt);
  Module v = vmap_pass(src, batch);
  verify_or_throw(j);
  verify_or_throw(v);
  CHECK(loop_body(j) == shared);
  CHECK(loop_body(v) == shared);
}
