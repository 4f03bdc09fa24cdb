// The jvp pass: structure of its output (golden checks on printed IR) and its
// errors. Numerical checks against finite differences are in test_ad_interp.cpp.
#include <doctest/doctest.h>

#include "ir/grid_mapping.h"
#include "tests/transforms/ad_test_util.h"

using namespace tessera;
using namespace tessera::testing;

namespace {

Module jvp(const std::string& text, std::initializer_list<std::pair<const char*, const char*>> opts = {}) {
  Module out = jvp_pass(parse(text), options(opts));
  verify_or_throw(out);
  return out;
}

}  // namespace

TEST_CASE("jvp of matmul doubles the block mappings in JAX's order") {
  Module m = jvp(kMatmul);
  std::string text = print_module(m);
  check_in_order(text, {
      "kernel @matmul_kernel_jvp(%x: ref<f32[8,8], vmem>, %y: ref<f32[8,8], vmem>, %x_dot: ref<f32[8,8], vmem>, "
      "%y_dot: ref<f32[8,8], vmem>, %o: ref<f32[8,8], vmem>, %o_dot: ref<f32[8,8], vmem>)",
      "swap %o[:, :], %acc",
      "swap %o_dot[:, :], %acc_dot",
      "func @main(%x: f32[32,16], %y: f32[16,24], %x_dot: f32[32,16], %y_dot: f32[16,24]) -> (f32[32,24], f32[32,24])",
      "kernel=@matmul_kernel_jvp",
      "grid=(4, 3, 2)",
      "in_specs=[spec((8, 8), @x_map), spec((8, 8), @y_map), spec((8, 8), @x_map), spec((8, 8), @y_map)]",
      "out_specs=[spec((8, 8), @o_map), spec((8, 8), @o_map)]",
      "out_shapes=[f32[32,24], f32[32,24]]",
      "cost_estimate=(49152, 0, 12288)",
      "] %x, %y, %x_dot, %y_dot",
  });
  // The original kernel is kept untouched.
  CHECK(m.find("matmul_kernel")->params().size() == 3);
}

TEST_CASE("jvp output parses back to the same text") {
  std::string once = print_module(jvp(kMatmul));
  CHECK(print_module(parse(once)) == once);
}

TEST_CASE("jvp wrt= differentiates only the chosen inputs") {
  Module m = jvp(kMatmul, {{"wrt", "1"}});
  const Body& main = *m.entry();
  REQUIRE(main.params().size() == 3);
  CHECK(main.params()[2]->name == "y_dot");
  GridMapping g = grid_mapping(only_op(main, "pallas_call"));
  CHECK(g.num_inputs() == 3);  // x, y, y_dot
  CHECK(g.in_specs[2].index_map->name() == "y_map");
  CHECK(g.kernel->params()[2]->name == "y_dot");
}

TEST_CASE("integer inputs get no tangent and integer ops give symbolic zeros") {
  Module m = jvp(R"(
func @main(%x: f32[4], %n: i32) -> (f32[4], i32) {
  %k = mul %n, 3
  %f = convert_element_type[new_dtype=f32] %k
  %y = mul %x, %f
  %c = lt %x, 0.0
  %z = select_n %c, %y, 0.0
  return %z, %k
}
)");
  const Body& main = *m.entry();
  REQUIRE(main.params().size() == 3);
  CHECK(main.params()[2]->name == "x_dot");
  CHECK(main.outputs().size() == 3);  // z, k, z_dot: no tangent for the i32 output
  // No tangent computation for the integer chain: the ops on %n and the
  // comparison are copied once; dy = dx * f, a select of (dy, 0).
  int muls = 0, selects = 0, broadcasts = 0;
  for (const Op& op : main.ops()) {
    muls += op.name() == "mul";
    selects += op.name() == "select_n";
    broadcasts += op.name() == "broadcast_in_dim";
  }
  CHECK(muls == 3);      // k, y, y_dot
  CHECK(selects == 2);   // z, z_dot
  CHECK(broadcasts == 0);  // the literal case's zero tangent is the literal 0.0, not an array
}

TEST_CASE("jvp leaves ops without tangents alone (no zeros materialised)") {
  Module m = jvp(R"(
func @main(%x: f32[4], %y: f32[4]) -> f32[4] {
  %a = exp %y
  %b = add %x, %a
  return %b
}
)",
                 {{"wrt", "0"}});
  const Body& main = *m.entry();
  // exp, add (primal) and nothing else: b_dot is x_dot itself.
  CHECK(main.ops().size() == 2);
  CHECK(main.outputs()[1] == Value(main.params()[2]));
}

TEST_CASE("jvp of control flow threads tangents as extra operands and carries") {
  std::string text = print_module(jvp(R"(
func @main(%x: f32[4], %n: i32) -> (f32[4], f32[4], f32) {
  %c = gt %n, 2
  %r = cond[branches=[fn(%a: f32[4]) -> f32[4] { %s = sin %a
       return %s }, fn(%a: f32[4]) -> f32[4] { return %a }]] %c, %x
  %w = for[body=fn(%i: i32, %v: f32[4]) -> f32[4] { %e = exp %v
       return %e }] 0:i32, 3:i32, %x
  %cy, %ys = scan[body=fn(%acc: f32, %xi: f32) -> (f32, f32) { %p = mul %acc, %xi
       return %p, %p }, length=4, num_carry=1] 1.0, %x
  return %r, %w, %cy
}
)"));
  check_in_order(text, {
      "cond[", "fn(%a: f32[4], %a_dot: f32[4]) -> (f32[4], f32[4])", "] %c, %x, %x_dot",
      "for[", "fn(%i: i32, %v: f32[4], %v_dot: f32[4]) -> (f32[4], f32[4])", "] 0:i32, 3:i32, %x, %x_dot",
      "scan[", "fn(%acc: f32, %acc_dot: f32, %xi: f32, %xi_dot: f32)", "num_carry=2", "] 1.0:f32, 0.0:f32, %x, %x_dot",
  });
}

TEST_CASE("jvp of while adds tangent carries and keeps the condition primal") {
  Module m = jvp(R"(
func @main(%x: f32) -> f32 {
  %r, %i = while[cond=fn(%v: f32, %k: i32) -> bool { %c = lt %k, 5:i32
                         return %c },
                 body=fn(%v: f32, %k: i32) -> (f32, i32) { %w = mul %v, %v
                         %k1 = add %k, 1:i32
                         return %w, %k1 }] %x, 0:i32
  return %r
}
)");
  const Op& w = only_op(*m.entry(), "while");
  CHECK(w.operands.size() == 3);  // x, 0, x_dot (the i32 carry has no tangent)
  const Body& cond = *w.param(keys::cond);
  CHECK(cond.params().size() == 3);
  CHECK(cond.ops().size() == 1);  // only the primal comparison
  CHECK(w.param(keys::body)->outputs().size() == 3);
}

TEST_CASE("jvp of state ops mirrors them on the tangent Ref with the same indexer") {
  std::string text = print_module(jvp(R"(
func @main(%x: f32[8]) -> f32[4] {
  %r = run_scoped[body=fn(%v: f32[8], %s: ref<f32[8], vmem>, %n: ref<i32[2], smem>) -> f32[4] {
      %i = get %n[0]
      swap %s[:], %v
      %t = mul %v, 2.0
      addupdate %s[:], %t
      %a = get %s[ds(%i, 4)]
      return %a
    }] %x
  return %r
}
)"));
  check_in_order(text, {
      "fn(%v: f32[8], %v_dot: f32[8], %s: ref<f32[8], vmem>, %n: ref<i32[2], smem>, %s_dot: ref<f32[8], vmem>)",
      "swap %s[:], %v", "swap %s_dot[:], %v_dot",
      "addupdate %s[:], %t", "addupdate %s_dot[:], %t_dot",
      "get %s[ds(%i, 4)]", "get %s_dot[ds(%i, 4)]",
  });
}

TEST_CASE("jvp of pallas_call with scalar prefetch, aliases and scratch") {
  Module m = jvp(R"(
index_map @pick(%i: i32, %idx: ref<i32[2], smem>) -> (i32) {
  %b = get %idx[%i]
  return %b
}
kernel @k(%idx: ref<i32[2], smem>, %x: ref<f32[4], vmem>, %acc: ref<f32[4], vmem>, %o: ref<f32[4], vmem>,
          %tmp: ref<f32[4], vmem>) {
  %a = get %x[:]
  %s = sin %a
  swap %tmp[:], %s
  %t = get %tmp[:]
  %p = get %acc[:]
  %q = add %p, %t
  swap %o[:], %q
}
func @main(%idx: i32[2], %x: f32[8], %acc: f32[8]) -> f32[8] {
  %out = pallas_call[kernel=@k, grid=(2), num_scalar_prefetch=1,
                     in_specs=[spec((4), @pick), spec((4), @pick)], out_specs=[spec((4), @pick)],
                     out_shapes=[f32[8]], scratch=[ref<f32[4], vmem>], input_output_aliases=[(2, 0)]] %idx, %x, %acc
  return %out
}
)");
  const Body& main = *m.entry();
  REQUIRE(main.params().size() == 5);  // idx, x, acc, x_dot, acc_dot
  GridMapping g = grid_mapping(only_op(main, "pallas_call"));
  CHECK(g.num_scalar_prefetch() == 1);
  CHECK(g.num_inputs() == 4);
  CHECK(g.num_outputs() == 2);
  CHECK(g.scratch_types.size() == 2);
  CHECK(g.aliases == IntPairs{{1, 0}, {3, 1}});
  std::vector<std::string> names;
  for (const Var* p : g.kernel->params()) names.push_back(p->name);
  CHECK(names == std::vector<std::string>{"idx", "x", "acc", "x_dot", "acc_dot", "o", "o_dot", "tmp", "tmp_dot"});
}

TEST_CASE("jvp of a call differentiates the callee once into a new function") {
  Module m = jvp(R"(
func @sq(%a: f32[4]) -> f32[4] {
  %b = mul %a, %a
  return %b
}
func @main(%x: f32[4]) -> f32[4] {
  %y = call[callee=@sq] %x
  %z = call[callee=@sq] %y
  return %z
}
)");
  REQUIRE(m.find("sq_jvp"));
  CHECK(m.find("sq_jvp")->params().size() == 2);
  int calls = 0;
  for (const Op& op : m.entry()->ops())
    if (op.name() == "call") {
      CHECK(op.param(keys::callee)->name() == "sq_jvp");
      ++calls;
    }
  CHECK(calls == 2);
}

TEST_CASE("jvp errors") {
  SUBCASE("wrt names an integer input") {
    CHECK_THROWS_WITH(jvp("func @main(%x: f32, %n: i32) -> f32 { return %x }", {{"wrt", "1"}}),
                      doctest::Contains("is not floating point"));
  }
  SUBCASE("wrt out of range") {
    CHECK_THROWS_WITH(jvp("func @main(%x: f32) -> f32 { return %x }", {{"wrt", "3"}}), doctest::Contains("has 1 inputs"));
  }
  SUBCASE("a tangent written into a Ref without a tangent") {
    CHECK_THROWS_WITH(jvp(R"(
func @main(%x: f32[4], %r: ref<f32[4], vmem>) -> f32[4] {
  swap %r[:], %x
  return %x
}
)",
                          {{"wrt", "0"}}),
                      doctest::Contains("has no tangent Ref"));
  }
  SUBCASE("dma from a Ref without tangent into a differentiated one") {
    // wrt=1: %x has no tangent, but the DMA's destination (the output) has.
    CHECK_THROWS_WITH(jvp(R"(
kernel @k(%x: ref<f32[4], any>, %y: ref<f32[4], vmem>, %o: ref<f32[4], vmem>, %sem: ref<dma_sem[], semaphore>) {
  dma_start %x[:], %o[:], %sem[]
  dma_wait %sem[], %o[:]
}
func @main(%x: f32[4], %y: f32[4]) -> f32[4] {
  %out = pallas_call[kernel=@k, grid=(1), in_specs=[spec(mem=any), spec((4))], out_specs=[spec((4))], out_shapes=[f32[4]],
                     scratch=[ref<dma_sem[], semaphore>]] %x, %y
  return %out
}
)",
                          {{"wrt", "1"}}),
                      doctest::Contains("dma_start copies %x, which has no tangent Ref, into a differentiated Ref"));
  }
}
