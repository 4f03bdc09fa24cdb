// Block geometry (ir/block_geometry.h) is the one definition of where a block
// lies; these tests check that the prover, the interpreter and discharge read
// it alike, on the programs that once disagreed (element padding).
#include <doctest/doctest.h>

#include "analysis/prove/prove.h"
#include "interpreter/interpreter.h"
#include "ir/block_geometry.h"
#include "ir/parser.h"
#include "prove_test_util.h"
#include "transforms/pass.h"
#include "verify/verify.h"

namespace tessera {
namespace {

using interp::Array;
using prove::testing::find;
using prove::testing::prove_text;

// valid_index() is derived from start() and the padded extent: check it
// against the definition by brute force over small dims of every kind.
TEST_CASE("block geometry: valid_index is exactly the set of in-bounds starts") {
  std::vector<BlockDim> kinds;
  for (int64_t n : {1, 3, 4, 6})
    for (int64_t lo : {0, 1, 5})
      for (int64_t hi : {0, 2}) kinds.push_back(BlockDim::element(n, lo, hi));
  for (int64_t n : {1, 3, 4, 16}) kinds.push_back(BlockDim::blocked(n));
  kinds.push_back(BlockDim::squeezed());
  for (int64_t extent : {1, 5, 8, 16}) {
    for (const BlockDim& b : kinds) {
      DimGeometry g = dim_geometry(b, extent);
      CAPTURE(extent);
      CAPTURE(static_cast<int>(b.kind));
      CAPTURE(b.size);
      // The data fits in the padded buffer, which whole blocks tile when blocked or element.
      CHECK(g.pad_lo + g.extent <= g.padded);
      if (b.kind != BlockDimKind::Squeezed) CHECK(g.padded % b.size == 0);
      DimGeometry::Range r = g.valid_index();
      for (int64_t idx = -20; idx <= 40; ++idx) {
        int64_t start = g.start(idx);
        bool inside = start >= 0 && start + g.window() <= g.padded;
        CHECK(inside == (idx >= r.lo && idx <= r.hi));
        CHECK(inside == g.in_bounds(idx, g.window()));
      }
    }
  }
}

TEST_CASE("block geometry: element padding rounds up to a multiple of the block") {
  DimGeometry g = dim_geometry(BlockDim::element(128, 8, 8), 256);
  CHECK(g.pad_lo == 8);
  CHECK(g.padded == 384);
  CHECK(g.valid_index().lo == 0);
  CHECK(g.valid_index().hi == 256);
  // An absurd padding saturates instead of wrapping to a small buffer.
  DimGeometry huge = dim_geometry(BlockDim::element(4, int64_t{1} << 62, int64_t{1} << 62), 16);
  CHECK(huge.padded > (int64_t{1} << 62));
}

// A 1-D kernel over f32[256] in element(128, 8, 8) blocks whose index map is
// `128 * i + OFFSET`, on a grid of 2: copies its block to a blocked output.
std::string element_program(int64_t offset) {
  return R"(
index_map @in_map(%i: i32) -> (i32) {
  %a = mul %i, 128:i32
  %b = add %a, )" + std::to_string(offset) +
         R"(:i32
  return %b
}
index_map @out_map(%i: i32) -> (i32) {
  return %i
}
kernel @k(%x: ref<f32[128], vmem>, %o: ref<f32[128], vmem>) {
  %v = get %x[:]
  swap %o[:], %v
}
func @main(%x: f32[256]) -> f32[256] {
  %out = pallas_call[kernel=@k, grid=(2), in_specs=[spec((element(128, 8, 8)), @in_map)],
                     out_specs=[spec((128), @out_map)], out_shapes=[f32[256]],
                     dimension_semantics=(parallel)] %x
  return %out
}
)";
}

Array iota_f32(int64_t n) {
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<double>(i);
  return Array::from_values(DType::f32, {n}, v);
}

// Proves in[0] bounds of `text`, then runs it on x, stateful and discharged,
// with padding read as zero: the outputs of both, which must be equal.
std::vector<Array> prove_run_and_discharge(const std::string& text, const Array& x) {
  CHECK(find(prove_text(text), "in[0]", "bounds").verdict == prove::Verdict::proved);
  Module m = parse_module(text, "<test>");
  verify_or_throw(m);
  interp::RunOptions opts;
  opts.uninit = interp::RunOptions::Uninit::zero;
  std::vector<Array> out = interp::run_function(m, "main", {x}, opts);
  std::vector<Array> dout = interp::run_function(run_pipeline(m, "discharge,dce"), "main", {x}, opts);
  for (int64_t e = 0; e < out[0].size(); ++e) CHECK(dout[0].get(e) == out[0].get(e));
  return out;
}

TEST_CASE("block geometry: an element index below the padded buffer fails in prove and in run") {
  std::string text = element_program(-8);
  auto obs = prove_text(text);
  prove::Obligation b = find(obs, "in[0]", "bounds");
  CHECK(b.verdict == prove::Verdict::failed);
  CHECK(b.detail.find("grid point (0)") != std::string::npos);
  Module m = parse_module(text, "<test>");
  verify_or_throw(m);
  std::string err;
  try {
    interp::run_function(m, "main", {iota_f32(256)});
  } catch (const Error& e) {
    err = e.message();
  }
  INFO(err);
  CHECK(err.find("Out-of-bounds block index (-8") != std::string::npos);
}

TEST_CASE("block geometry: an element index into the padding proves and runs, with the padding's offset") {
  // Discharge reads the same geometry: same numbers (padding is zero there too).
  std::vector<Array> out = prove_run_and_discharge(element_program(100), iota_f32(256));
  // Block i reads padded [128 i + 100, +128) = array [128 i + 92, +128); past 255 it is padding (zero).
  for (int64_t e = 0; e < 256; ++e) {
    int64_t src = e + 92;
    CHECK(out[0].get(e) == (src < 256 ? static_cast<double>(src) : 0.0));
  }
}

// element(6, 1, 0) over f32[16]: the padded buffer is 1 + 16 rounded up to
// 18, so the last block (index 12) reads array elements 11..16, the last of
// them padding. Discharge once padded to 17 only and clamped that slice.
TEST_CASE("block geometry: discharge pads element dims as the interpreter does") {
  std::string text = R"(
index_map @in_map(%i: i32) -> (i32) {
  %a = mul %i, 4:i32
  return %a
}
index_map @out_map(%i: i32) -> (i32) {
  return %i
}
kernel @k(%x: ref<f32[6], vmem>, %o: ref<f32[4], vmem>) {
  %v = get %x[1:5]
  swap %o[:], %v
}
func @main(%x: f32[16]) -> f32[16] {
  %out = pallas_call[kernel=@k, grid=(4), in_specs=[spec((element(6, 1, 0)), @in_map)],
                     out_specs=[spec((4), @out_map)], out_shapes=[f32[16]]] %x
  return %out
}
)";
  std::vector<Array> out = prove_run_and_discharge(text, iota_f32(16));
  // Output element e is padded element e + 1, i.e. array element e: a copy.
  for (int64_t e = 0; e < 16; ++e) CHECK(out[0].get(e) == static_cast<double>(e));
}

// Element blocks at different indices overlap: two parallel points writing
// element(8) blocks 4 apart race, although their indices differ.
TEST_CASE("block geometry: parallel safety sees overlapping element blocks") {
  std::string text = R"(
index_map @in_map(%i: i32) -> (i32) {
  return %i
}
index_map @out_map(%i: i32) -> (i32) {
  %a = mul %i, 4:i32
  return %a
}
kernel @k(%x: ref<f32[8], vmem>, %o: ref<f32[8], vmem>) {
  %v = get %x[:]
  swap %o[:], %v
}
func @main(%x: f32[32]) -> f32[32] {
  %out = pallas_call[kernel=@k, grid=(3), in_specs=[spec((8), @in_map)],
                     out_specs=[spec((element(8, 0, 0)), @out_map)], out_shapes=[f32[32]],
                     dimension_semantics=(parallel)] %x
  return %out
}
)";
  auto obs = prove_text(text);
  prove::Obligation p = find(obs, "out[0]", "parallel safety");
  CHECK(p.verdict == prove::Verdict::failed);
  CHECK(p.detail.find("overlapping blocks") != std::string::npos);
}

}  // namespace
}  // namespace tessera
