// The data behind the pictures (docs/pictures.md): block maps
// (interpreter/block_map.h) agree with what the interpreter does, and the
// timeline recorder (interpreter/timeline.h) pairs DMAs with their waits.
// The SVG and JSON files themselves are checked by check_pictures.py.
#include <doctest/doctest.h>

#include "interpreter/block_map.h"
#include "interpreter/timeline.h"
#include "runtime/region.h"
#include "tests/interpreter/interp_test_util.h"

using namespace itest;

namespace {

BlockMap map_of(const Module& m, const std::vector<Array>& prefetch = {}) {
  std::vector<const Op*> calls = pallas_calls(*m.entry("main"));
  REQUIRE(calls.size() == 1);
  return block_map(m, *calls[0], "call", prefetch);
}

const MappedBlock& block_at(const OperandBlocks& ob, const std::vector<int64_t>& index) {
  for (const MappedBlock& b : ob.blocks)
    if (b.index == index) return b;
  FAIL("no block " << ints_str(index) << " in " << ob.subject);
  return ob.blocks.front();
}

}  // namespace

TEST_CASE("block map of matmul: who touches which block, in grid order") {
  Module m = parse_checked(example_text("matmul.tsr"));
  BlockMap bm = map_of(m);
  CHECK(bm.grid == std::vector<int64_t>{4, 3, 2});
  CHECK(bm.num_points() == 24);
  CHECK(bm.point(5) == std::vector<int64_t>{0, 2, 1});
  CHECK(bm.number({0, 2, 1}) == 5);
  CHECK(bm.number({0, 3, 0}) == -1);
  REQUIRE(bm.operands.size() == 3);
  const OperandBlocks &x = bm.operands[0], &y = bm.operands[1], &o = bm.operands[2];
  CHECK(x.subject == "in[0]");
  CHECK(x.name == "x");
  CHECK(o.subject == "out[0]");
  CHECK(o.is_output);
  CHECK(x.blocks.size() == 8);
  CHECK(y.blocks.size() == 6);
  CHECK(o.blocks.size() == 12);
  // x block (i, k) is read at (i, 0, k), (i, 1, k), (i, 2, k): points i*6 + j*2 + k.
  const MappedBlock& x10 = block_at(x, {1, 0});
  CHECK(x10.points == std::vector<int64_t>{6, 8, 10});
  CHECK(x10.runs == 3);
  CHECK(x10.extent[0].start == 128);
  CHECK(x10.extent[0].size == 128);
  // An output block accumulates over k: two consecutive points, one run.
  for (const MappedBlock& b : o.blocks) {
    CHECK(b.points.size() == 2);
    CHECK(b.runs == 1);
    CHECK(b.in_bounds);
    CHECK_FALSE(b.partial);
  }
  CHECK(o.block_of_point[7] == o.block_of_point[6]);
}

TEST_CASE("block map: a revisit is where the interpreter reports it") {
  std::string text = replace_once(example_text("add.tsr"), "out_specs=[spec((128, 128), @block_ij)]",
                                  "out_specs=[spec((128, 128), @row0)]");
  text += "index_map @row0(%i: i32, %j: i32) -> (i32, i32) {\n  return 0, %j\n}\n";
  Module m = parse_checked(text);
  BlockMap bm = map_of(m);
  const OperandBlocks& o = bm.operands[2];
  REQUIRE(o.blocks.size() == 4);
  const MappedBlock& b = block_at(o, {0, 0});
  CHECK(b.runs == 8);
  // Its first revisit: the first point after a gap.
  int64_t revisit = -1;
  for (size_t k = 1; k < b.points.size() && revisit < 0; ++k)
    if (b.points[k] != b.points[k - 1] + 1) revisit = b.points[k];
  CHECK(ints_str(bm.point(revisit)) == "(1, 0)");
  Array x = random(DType::f32, {1024, 512}, 1);
  std::string err = error_of([&] { run_function(m, "main", {x, x}); });
  CHECK_HAS(err, "Revisited block [0:128, 0:128] of output \"o\" in iteration (1, 0)");
}

TEST_CASE("block map: padding and out-of-bounds blocks follow the block geometry") {
  std::string text = replace_all(example_text("add.tsr"), "f32[1024,512]", "f32[1000,500]");
  BlockMap bm = map_of(parse_checked(text));
  const OperandBlocks& x = bm.operands[0];
  CHECK(x.geo.padded_shape() == Shape{1024, 512});
  CHECK(block_at(x, {7, 3}).partial);
  CHECK(block_at(x, {7, 0}).partial);
  CHECK_FALSE(block_at(x, {6, 2}).partial);
  // y's index map swapped: the block the prover's counterexample names lies
  // outside the array, and the interpreter stops there.
  std::string swapped = replace_once(example_text("matmul.tsr"), "return %k, %j", "return %j, %k");
  Module m = parse_checked(swapped);
  bm = map_of(m);
  const MappedBlock& b = block_at(bm.operands[1], {2, 0});
  CHECK_FALSE(b.in_bounds);
  CHECK(b.points.front() == bm.number({0, 2, 0}));
  std::string err = error_of([&] { run_function(m, "main", {random(DType::f32, {512, 256}, 1), random(DType::f32, {256, 384}, 2)}); });
  CHECK_HAS(err, "Out-of-bounds block index (2, 0) for input \"y\" in iteration (0, 2, 0)");
}

TEST_CASE("block map: scalar prefetch, failing index maps, limits") {
  const char* text = R"(
index_map @row(%i: i32, %idx: ref<i32[4], smem>) -> (i32, i32) {
  %n = add %i, 1
  %r = get %idx[%n]
  return %r, 0
}
kernel @k(%idx: ref<i32[4], smem>, %x: ref<f32[128], vmem>, %o: ref<f32[128], vmem>) {
  %v = get %x[:]
  swap %o[:], %v
}
func @main(%idx: i32[4], %x: f32[64,128]) -> f32[4,128] {
  %out = pallas_call[kernel=@k, grid=(4), num_scalar_prefetch=1, in_specs=[spec((squeezed, 128), @row)],
                     out_specs=[spec((squeezed, 128))], out_shapes=[f32[4,128]]] %idx, %x
  return %out
}
)";
  Module m = parse_checked(text);
  CHECK_HAS(error_of([&] { map_of(m); }), "its index maps take 1 scalar-prefetch operand(s), got values for 0");
  Array idx = Array::uninitialized(DType::i32, {4});
  for (int i = 0; i < 4; ++i) idx.data<int32_t>()[i] = 10 * i;
  BlockMap bm = map_of(m, {idx});
  const OperandBlocks& x = bm.operands[0];
  CHECK(block_at(x, {30, 0}).points == std::vector<int64_t>{2});
  // At i = 3 the map reads idx[4]: recorded, not thrown.
  REQUIRE(x.failures.size() == 1);
  CHECK(x.failures[0].first == 3);
  CHECK(x.block_of_point[3] == -1);
  // Grids past the limit are refused.
  std::string big = replace_all(replace_all(example_text("add.tsr"), "f32[1024,512]", "f32[8320,8192]"), "grid=(8, 4)",
                                "grid=(65, 64)");
  CHECK_HAS(error_of([&] { map_of(parse_checked(big)); }), "has more than 4096 points, too many to draw");
}

TEST_CASE("timeline: a DMA ends at the wait that takes its bytes") {
  Timeline t(2);
  int64_t a = t.async_begin(1, "DMA any->vmem", "dma", {arg("bytes", int64_t{100})});
  int64_t b = t.async_begin(1, "DMA any->vmem", "dma", {});
  t.expect_wait(7, 1, 100, a);
  t.expect_wait(7, 1, 100, b);
  t.tick();
  t.waited(7, 1, 150);  // all of a, half of b
  std::string j = t.json();
  auto count = [&](const std::string& s) {
    size_t n = 0;
    for (size_t p = j.find(s); p != std::string::npos; p = j.find(s, p + 1)) ++n;
    return n;
  };
  CHECK(count("\"ph\": \"b\"") == 2);
  CHECK(count("\"ph\": \"e\"") == 1);
  t.waited(7, 1, 50);
  j = t.json();
  CHECK(count("\"ph\": \"e\"") == 2);
  CHECK_HAS(j, "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 0, \"tid\": 1, \"args\": {\"name\": \"core 1\"}}");
  // A span left by an exception says so; close_open ends what is left.
  try {
    Timeline::Span s(t, 2, "step (0)", "grid");
    t.tick();
    throw Error("stop");
  } catch (const Error&) {
  }
  t.async_begin(2, "DMA vmem->any", "dma", {});
  t.close_open();
  j = t.json();
  CHECK_HAS(j, "\"name\": \"step (0)\", \"cat\": \"grid\", \"ph\": \"X\", \"ts\": 1, \"dur\": 1, \"pid\": 1, \"tid\": 0, "
               "\"args\": {\"unfinished\": true}");
  CHECK(count("\"ph\": \"e\"") == 3);
  CHECK(count("\"unfinished\": true") == 2);
}
