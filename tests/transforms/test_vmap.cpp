// The vmap pass: structure of its output (golden checks on printed IR) and its
// errors. Numerical checks against stacked separate calls are in
// test_ad_interp.cpp.
#include <doctest/doctest.h>

#include "ir/grid_mapping.h"
#include "tests/transforms/ad_test_util.h"

using namespace tessera;
using namespace tessera::testing;

namespace {

Module vmap(const std::string& text, std::initializer_list<std::pair<const char*, const char*>> opts) {
  Module out = vmap_pass(parse(text), options(opts));
  verify_or_throw(out);
  return out;
}

}  // namespace

TEST_CASE("vmap of matmul adds a leading parallel grid axis and squeezed batch block dims") {
  Module m = vmap(kMatmul, {{"axis_size", "3"}});
  std::string text = print_module(m);
  check_in_order(text, {
      "index_map @x_map_vmap(%b: i32, %i: i32, %j: i32, %k: i32) -> (i32, i32, i32)", "return %b, %i, %k",
      "func @main(%x: f32[3,32,16], %y: f32[3,16,24]) -> f32[3,32,24]",
      "kernel=@matmul_kernel,",
      "grid=(3, 4, 3, 2)",
      "in_specs=[spec((squeezed, 8, 8), @x_map_vmap), spec((squeezed, 8, 8), @y_map_vmap)]",
      "out_specs=[spec((squeezed, 8, 8), @o_map_vmap)]",
      "out_shapes=[f32[3,32,24]]",
      "vmapped_dims=(0)",
      "dimension_semantics=(parallel, parallel, parallel, arbitrary)",
      "cost_estimate=(73728, 0, 18432)",
  });
  CHECK(print_module(parse(text)) == text);
  // The kernel is shared, unchanged.
  Module src = parse(kMatmul);
  Module again = vmap_pass(src, options({{"axis_size", "3"}}));
  CHECK(grid_mapping(only_op(*again.entry(), "pallas_call")).kernel == src.find("matmul_kernel"));
}

TEST_CASE("vmap with unbatched and non-leading inputs") {
  Module m = vmap(kMatmul, {{"axis_size", "3"}, {"in_axes", "1|none"}});
  const Body& main = *m.entry();
  CHECK(main.params()[0]->type.str() == "f32[32,3,16]");
  CHECK(main.params()[1]->type.str() == "f32[16,24]");
  GridMapping g = grid_mapping(only_op(main, "pallas_call"));
  REQUIRE(g.in_specs[0].block.has_value());
  CHECK((*g.in_specs[0].block)[1].kind == BlockDimKind::Squeezed);
  CHECK(block_dims(g.in_specs[1], g.in_types[1].shape()).size() == 2);
  // The unbatched input's map takes the batch id and ignores it.
  const Body& ymap = *g.in_specs[1].index_map;
  CHECK(ymap.params().size() == 4);
  CHECK(ymap.outputs().size() == 2);
  std::string text = print_module(m);
  check_in_order(text, {"index_map @x_map_vmap(%b: i32, %i: i32, %j: i32, %k: i32)", "return %i, %b, %k"});
}

TEST_CASE("vmap with axis_size 1 calls the kernel once on the squeezed operands") {
  Module m = vmap(kMatmul, {{"axis_size", "1"}});
  GridMapping g = grid_mapping(only_op(*m.entry(), "pallas_call"));
  CHECK(g.grid == std::vector<int64_t>{4, 3, 2});
  CHECK(m.entry()->output_types()[0].str() == "f32[1,32,24]");
}

TEST_CASE("vmap of pallas_call with a whole-array spec and no index map") {
  Module m = vmap(R"(
kernel @k(%x: ref<f32[4], vmem>, %o: ref<f32[4], vmem>) {
  %a = get %x[:]
  swap %o[:], %a
}
func @main(%x: f32[4]) -> f32[4] {
  %out = pallas_call[kernel=@k, grid=(1), in_specs=[spec()], out_specs=[spec()], out_shapes=[f32[4]]] %x
  return %out
}
)",
                  {{"axis_size", "2"}});
  GridMapping g = grid_mapping(only_op(*m.entry(), "pallas_call"));
  REQUIRE(g.in_specs[0].block);
  CHECK(*g.in_specs[0].block == std::vector<BlockDim>{BlockDim::squeezed(), BlockDim::blocked(4)});
  CHECK(g.in_specs[0].index_map->outputs().size() == 2);
  CHECK(g.dimension_semantics == std::vector<std::string>{"parallel", "arbitrary"});
}

TEST_CASE("vmap of pallas_call with a batched scalar prefetch falls back to a loop") {
  Module m = vmap(R"(
index_map @pick(%i: i32, %idx: ref<i32[2], smem>) -> (i32) {
  %b = get %idx[%i]
  return %b
}
kernel @k(%idx: ref<i32[2], smem>, %x: ref<f32[4], vmem>, %o: ref<f32[4], vmem>) {
  %a = get %x[:]
  swap %o[:], %a
}
func @main(%idx: i32[2], %x: f32[8]) -> f32[8] {
  %out = pallas_call[kernel=@k, grid=(2), num_scalar_prefetch=1, in_specs=[spec((4), @pick)],
                     out_specs=[spec((4), @pick)], out_shapes=[f32[8]]] %idx, %x
  return %out
}
)",
                  {{"axis_size", "3"}, {"in_axes", "0|none"}});
  const Op& loop = only_op(*m.entry(), "for");
  const Body& body = *loop.param(keys::body);
  const Op& call = only_op(body, "pallas_call");
  CHECK(grid_mapping(call).grid == std::vector<int64_t>{2});
  only_op(body, "dynamic_slice");
  only_op(body, "dynamic_update_slice");
  CHECK(m.entry()->output_types()[0].str() == "f32[3,8]");
}

TEST_CASE("vmap of pallas_call with aliases moves the aliased input to axis 0") {
  Module m = vmap(R"(
kernel @k(%x: ref<f32[4], vmem>, %o: ref<f32[4], vmem>) {
  %a = get %x[:]
  %b = mul %a, 2.0
  swap %o[:], %b
}
func @main(%x: f32[4]) -> f32[4] {
  %out = pallas_call[kernel=@k, grid=(1), in_specs=[spec((4))], out_specs=[spec((4))], out_shapes=[f32[4]],
                     input_output_aliases=[(0, 0)]] %x
  return %out
}
)",
                  {{"axis_size", "3"}, {"in_axes", "1"}});
  const Body& main = *m.entry();
  CHECK(main.params()[0]->type.str() == "f32[4,3]");
  only_op(main, "transpose");
  GridMapping g = grid_mapping(only_op(main, "pallas_call"));
  CHECK(g.in_types[0].str() == "f32[3,4]");
}

TEST_CASE("vmap of elementwise, structural and dot ops moves batch dims only when needed") {
  Module m = vmap(R"(
func @main(%x: f32[4,5], %w: f32[5,6], %s: f32) -> (f32[4,6], f32[6], f32[4,5]) {
  %y = dot_general[lhs_contracting=(1), rhs_contracting=(0)] %x, %w
  %r = reduce_sum[axes=(0)] %y
  %t = mul %x, %s
  return %y, %r, %t
}
)",
                  {{"axis_size", "3"}, {"in_axes", "1|none|0"}});
  const Body& main = *m.entry();
  const Op& dot = only_op(main, "dot_general");
  // x batched at 1, w unbatched: the lhs contracting dim shifts, the batch lands
  // on the output's first lhs free dim.
  CHECK(dot.param(keys::lhs_contracting) == std::vector<int64_t>{2});
  CHECK(main.output_types()[0].str() == "f32[3,4,6]");
  CHECK(main.output_types()[1].str() == "f32[3,6]");
  CHECK(main.output_types()[2].str() == "f32[3,4,5]");
}

TEST_CASE("vmap of control flow") {
  std::string text = print_module(vmap(R"(
func @main(%x: f32[4], %n: i32) -> (f32[4], f32[4], f32[4]) {
  %c = gt %n, 2
  %r = cond[branches=[fn(%a: f32[4]) -> f32[4] { %s = sin %a
       return %s }, fn(%a: f32[4]) -> f32[4] { return %a }]] %c, %x
  %w = for[body=fn(%i: i32, %v: f32[4]) -> f32[4] { %e = exp %v
       return %e }] 0:i32, 3:i32, %x
  %cy, %ys = scan[body=fn(%acc: f32, %xi: f32) -> (f32, f32) { %p = mul %acc, %xi
       return %p, %p }, length=4, num_carry=1] 1.0, %x
  return %r, %w, %ys
}
)",
                                       {{"axis_size", "3"}}));
  check_in_order(text, {
      "func @main(%x: f32[3,4], %n: i32[3])",
      "select_n",  // batched predicate: both branches run, select picks
      "for[", "fn(%i: i32, %v: f32[3,4]) -> f32[3,4]",
      "transpose[permutation=(1, 0)] %x",  // scanned input: batch moved behind the scan axis
      "scan[", "fn(%acc: f32[3], %xi: f32[3]) -> (f32[3], f32[3])",
  });
}

TEST_CASE("vmap of while with a batched predicate runs until every element stops") {
  Module m = vmap(R"(
func @main(%x: f32, %n: i32) -> f32 {
  %r, %i = while[cond=fn(%lim: i32, %v: f32, %k: i32) -> bool { %c = lt %k, %lim
                         return %c },
                 body=fn(%lim: i32, %v: f32, %k: i32) -> (f32, i32) { %w = mul %v, 2.0
                         %k1 = add %k, 1:i32
                         return %w, %k1 }, num_consts=1] %n, %x, 0:i32
  return %r
}
)",
                  {{"axis_size", "3"}});
  const Op& w = only_op(*m.entry(), "while");
  only_op(*w.param(keys::cond), "reduce_or");  // continue while any element continues
  only_op(*w.param(keys::body), "select_n");   // finished elements keep their carries
  CHECK(w.results[0]->type.str() == "f32[3]");
}

TEST_CASE("vmap errors") {
  SUBCASE("missing axis_size") {
    CHECK_THROWS_WITH(vmap(kMatmul, {}), doctest::Contains("axis_size"));
  }
  SUBCASE("in_axes of the wrong length") {
    CHECK_THROWS_WITH(vmap(kMatmul, {{"axis_size", "2"}, {"in_axes", "0"}}), doctest::Contains("in_axes has 1 entries"));
  }
  SUBCASE("bad in_axes word") {
    CHECK_THROWS_WITH(vmap(kMatmul, {{"axis_size", "2"}, {"in_axes", "0|x"}}), doctest::Contains("neither"));
  }
  SUBCASE("in_axes out of range") {
    CHECK_THROWS_WITH(vmap(kMatmul, {{"axis_size", "2"}, {"in_axes", "0|3"}}), doctest::Contains("out of range"));
  }
  SUBCASE("a batched value written into an unbatched Ref") {
    CHECK_THROWS_WITH(vmap(R"(
func @main(%x: f32[4], %r: ref<f32[4], vmem>) -> f32[4] {
  swap %r[:], %x
  return %x
}
)",
                           {{"axis_size", "2"}, {"in_axes", "0|none"}}),
                      doctest::Contains("unbatched Ref"));
  }
  SUBCASE("for with batched bounds") {
    CHECK_THROWS_WITH(vmap(R"(
func @main(%n: i32) -> f32 {
  %w = for[body=fn(%i: i32, %v: f32) -> f32 { return %v }] 0:i32, %n, 1.0:f32
  return %w
}
)",
                           {{"axis_size", "2"}}),
                      doctest::Contains("batched bounds"));
  }
}
