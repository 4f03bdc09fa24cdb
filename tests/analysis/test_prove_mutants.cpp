// Mutants of zoo kernels that must FAIL, each with the right counterexample.
// Counterexamples are re-checked with the interpreter's index-map evaluation, independently
// of the Z3 encoding.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "protocol_test_util.h"

using namespace tessera;
using namespace tessera::prove;
using namespace tessera::prove::testing;

namespace {

const std::string kMatmul = R"(
index_map @x_tile(%i: i32, %j: i32, %k: i32) -> (i32, i32) { return %i, %k }
index_map @y_tile(%i: i32, %j: i32, %k: i32) -> (i32, i32) { return %k, %j }
index_map @out_tile(%i: i32, %j: i32, %k: i32) -> (i32, i32) { return %i, %j }
kernel @matmul_kernel(%x: ref<f32[128,128], vmem>, %y: ref<f32[128,128], vmem>, %o: ref<f32[128,128], vmem>) {
  %k = program_id[axis=2]
  %first = eq %k, 0
  cond[branches=[fn(%o0: ref<f32[128,128], vmem>) { }, fn(%o1: ref<f32[128,128], vmem>) {
    %zeros = broadcast_in_dim[shape=(128, 128), broadcast_dimensions=()] 0.0:f32
    swap %o1[:, :], %zeros
  }]] %first, %o
  %a = get %x[:, :]
  %b = get %y[:, :]
  %p = dot_general[lhs_contracting=(1), rhs_contracting=(0)] %a, %b
  addupdate %o[:, :], %p
}
func @main(%x: f32[512,256], %y: f32[256,384]) -> f32[512,384] {
  %out = pallas_call[kernel=@matmul_kernel, grid=(4, 3, 2),
                     in_specs=[spec((128, 128), @x_tile), spec((128, 128), @y_tile)],
                     out_specs=[spec((128, 128), @out_tile)], out_shapes=[f32[512,384]],
                     dimension_semantics=(parallel, parallel, arbitrary)] %x, %y
  return %out
}
)";

// A 1-D elementwise kernel over f32[N] with blocks of B, grid (G), one index map for in and out.
std::string one_d(int64_t n, const std::string& block, const std::string& kblock, int64_t grid, const std::string& sem,
                  const std::string& map_body, const std::string& map_ret = "i32") {
  std::string N = std::to_string(n);
  return "index_map @m(%i: i32) -> " + map_ret + " {\n" + map_body + "\n}\n"
         "kernel @k(%x: ref<f32[" + kblock + "], vmem>, %o: ref<f32[" + kblock + "], vmem>) {\n"
         "  %v = get %x[:]\n  swap %o[:], %v\n}\n"
         "func @main(%x: f32[" + N + "]) -> f32[" + N + "] {\n"
         "  %out = pallas_call[kernel=@k, grid=(" + std::to_string(grid) + "), in_specs=[spec((" + block + "), @m)],\n"
         "                     out_specs=[spec((" + block + "), @m)], out_shapes=[f32[" + N + "]],\n"
         "                     dimension_semantics=(" + sem + ")] %x\n  return %out\n}\n";
}

}  // namespace

TEST_CASE("the unmutated matmul is proved") {
  for (const Obligation& o : prove_text(kMatmul)) CHECK_MESSAGE(o.verdict == Verdict::proved, o.line());
}

TEST_CASE("mutant: off-by-one index map") {
  std::string text = replace_once(kMatmul, "@x_tile(%i: i32, %j: i32, %k: i32) -> (i32, i32) { return %i, %k }",
                             "@x_tile(%i: i32, %j: i32, %k: i32) -> (i32, i32) {\n  %n = add %i, 1\n  return %n, %k\n}");
  auto obs = prove_text(text);
  Obligation o = find(obs, "in[0]", "bounds");
  CHECK(o.verdict == Verdict::failed);
  REQUIRE(o.grid_points.size() == 1);
  CHECK(o.grid_points[0][0] == 3);  // only the last row of blocks overflows
  std::vector<int64_t> k{o.grid_points[0][2]};
  CHECK(o.line() == "matmul in[0] bounds: FAILED at grid point " + std::string("(3, ") + std::to_string(o.grid_points[0][1]) +
                        ", " + std::to_string(k[0]) + "): block index (4, " + std::to_string(k[0]) +
                        ") outside (4, 2) blocks of f32[512,256] padded to (512, 256)");
  CHECK(find(obs, "in[1]", "bounds").verdict == Verdict::proved);
  CHECK(exit_code(obs) == 1);
}

TEST_CASE("mutant: swapped index-map outputs on a non-square array") {
  std::string text = replace_once(kMatmul, "{ return %k, %j }", "{ return %j, %k }");
  Obligation o = find(prove_text(text), "in[1]", "bounds");
  CHECK(o.verdict == Verdict::failed);
  REQUIRE(o.grid_points.size() == 1);
  const auto& p = o.grid_points[0];
  CHECK(p[1] == 2);  // j = 2 is the only row block index past y's 2 row blocks
  CHECK(o.detail == "at grid point (" + std::to_string(p[0]) + ", 2, " + std::to_string(p[2]) + "): block index (2, " +
                        std::to_string(p[2]) + ") outside (2, 3) blocks of f32[256,384] padded to (256, 384)");
}

TEST_CASE("mutant: matmul's k axis marked parallel") {
  std::string text = replace_once(kMatmul, "(parallel, parallel, arbitrary)", "(parallel, parallel, parallel)");
  auto obs = prove_text(text);
  Obligation o = find(obs, "out[0]", "parallel safety");
  CHECK(o.verdict == Verdict::failed);
  REQUIRE(o.grid_points.size() == 2);
  const auto& a = o.grid_points[0];
  const auto& b = o.grid_points[1];
  CHECK(a[0] == b[0]);  // the same output block (i, j)...
  CHECK(a[1] == b[1]);
  CHECK(a[2] != b[2]);  // ...from two k steps
  CHECK(o.detail.find("differ on parallel axis 2 but both write block (" + std::to_string(a[0]) + ", " + std::to_string(a[1]) + ")") !=
        std::string::npos);
  // Yet no seed revisits: the two k steps of block (i, j) share their (i, j) prefix, so
  // row-major order keeps them adjacent under any per-axis permutation.
  CHECK(find(obs, "out[0]", "non-revisiting").verdict == Verdict::proved);
}

TEST_CASE("mutant: an output index map that returns to an earlier block") {
  // Blocks 0, 1, 0, 1 along an arbitrary axis.
  std::string text = one_d(64, "16", "16", 4, "arbitrary", "  %b = rem %i, 2\n  return %b");
  Module m = parse_verified(text);
  auto obs = prove_module(m);
  Obligation o = find(obs, "out[0]", "non-revisiting");
  CHECK(o.verdict == Verdict::failed);
  REQUIRE(o.grid_points.size() == 3);
  // Re-check with the interpreter: p < q < r in row-major order, block(p) == block(r) != block(q).
  auto blk = [&](const std::vector<int64_t>& p) { return block_at(m, "m", p); };
  CHECK(o.grid_points[0] < o.grid_points[1]);
  CHECK(o.grid_points[1] < o.grid_points[2]);
  CHECK(blk(o.grid_points[0]) == blk(o.grid_points[2]));
  CHECK(blk(o.grid_points[0]) != blk(o.grid_points[1]));
  CHECK(o.detail.find("row-major order on one core") != std::string::npos);
  CHECK(find(obs, "out[0]", "parallel safety").verdict == Verdict::proved);  // no parallel axis
}

TEST_CASE("non-revisiting under permuted parallel axes") {
  // Blocks 0, 0, 1 along a parallel axis: a seed visiting 0, 2, 1 revisits block 0.
  auto obs = prove_text(one_d(32, "16", "16", 3, "parallel", "  %b = div %i, 2\n  return %b"));
  Obligation o = find(obs, "out[0]", "non-revisiting");
  CHECK(o.verdict == Verdict::failed);
  CHECK(o.detail.find("a seed permuting parallel axis 0") != std::string::npos);
  CHECK(find(obs, "out[0]", "parallel safety").verdict == Verdict::failed);
  // One block for the whole grid: not parallel safe, but never revisited in any order.
  auto one = prove_text(one_d(16, "16", "16", 2, "parallel", "  %z = mul %i, 0\n  return %z"));
  CHECK(find(one, "out[0]", "non-revisiting").verdict == Verdict::proved);
  CHECK(find(one, "out[0]", "parallel safety").verdict == Verdict::failed);
}

TEST_CASE("non-revisiting is exact: rows of a 2-D parallel grid are always visited together") {
  // grid (2, 2), both parallel, block = i: points (i, 0) and (i, 1) share a block and are
  // always adjacent (only per-axis permutations exist), so no order revisits.
  std::string text = R"(
index_map @row(%i: i32, %j: i32) -> i32 { return %i }
kernel @k(%x: ref<f32[8], vmem>, %o: ref<f32[8], vmem>) {
  %v = get %x[:]
  swap %o[:], %v
}
func @main(%x: f32[16]) -> f32[16] {
  %out = pallas_call[kernel=@k, grid=(2, 2), in_specs=[spec((8), @row)], out_specs=[spec((8), @row)],
                     out_shapes=[f32[16]], dimension_semantics=(parallel, parallel)] %x
  return %out
}
)";
  auto obs = prove_text(text);
  CHECK(find(obs, "out[0]", "non-revisiting").verdict == Verdict::proved);
  CHECK(find(obs, "out[0]", "parallel safety").verdict == Verdict::failed);
  // Block = j instead: (0, 0) and (1, 0) share a block with (0, 1) between them.
  auto col = prove_text(replace_once(text, "{ return %i }", "{ return %j }"));
  CHECK(find(col, "out[0]", "non-revisiting").verdict == Verdict::failed);
}

TEST_CASE("mutant: a kernel get one row past its Ref") {
  std::string text = R"(
index_map @rows(%i: i32) -> (i32, i32) { return %i, 0 }
kernel @k(%x: ref<f32[8,128], vmem>, %o: ref<f32[8,128], vmem>) {
  %p = program_id[axis=0]
  %r = add %p, 7
  %v = get %x[%r, :]
  %all = get %x[:, :]
  swap %o[:, :], %all
}
func @main(%x: f32[16,128]) -> f32[16,128] {
  %out = pallas_call[kernel=@k, grid=(2), in_specs=[spec((8, 128), @rows)], out_specs=[spec((8, 128), @rows)],
                     out_shapes=[f32[16,128]], dimension_semantics=(parallel)] %x
  return %out
}
)";
  auto obs = prove_text(text);
  Obligation o = find(obs, "kernel", "bounds");
  CHECK(o.verdict == Verdict::failed);
  CHECK(o.grid_points == std::vector<std::vector<int64_t>>{{1}});
  CHECK(o.detail.find("get %x at <test>:") != std::string::npos);
  CHECK(o.detail.find("index outside [0, 8) in dimension 0 of ref<f32[8,128], vmem> (index 8)") != std::string::npos);
  // The in-range version (add 6) is proved.
  CHECK(find(prove_text(replace_once(text, "add %p, 7", "add %p, 6")), "kernel", "bounds").verdict == Verdict::proved);
  // The same overrun through a loop bound: for i in [0, 9) over 8 rows.
  std::string loop = replace_once(text, "  %p = program_id[axis=0]\n  %r = add %p, 7\n  %v = get %x[%r, :]\n",
                             "  for[body=fn(%i: i32, %xr: ref<f32[8,128], vmem>) {\n    %row = get %xr[%i, :]\n  }, num_consts=1] 0:i32, 9:i32, %x\n");
  Obligation lo = find(prove_text(loop), "kernel", "bounds");
  CHECK(lo.verdict == Verdict::failed);
  CHECK(lo.detail.find("(index 8)") != std::string::npos);
  CHECK(find(prove_text(replace_once(loop, "9:i32", "8:i32")), "kernel", "bounds").verdict == Verdict::proved);
}

TEST_CASE("mutant: gather_rows without its range assumption") {
  std::string text = example_text("gather_rows.tsr");
  // Drop any range the file declares.
  std::string plain;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.find("prove: assume") == std::string::npos) plain += line + "\n";
  Module m = parse_verified(plain);
  auto obs = prove_module(m);
  Obligation o = find(obs, "in[0]", "bounds");
  CHECK(o.verdict == Verdict::failed);
  REQUIRE(o.grid_points.size() == 1);
  CHECK(o.detail.find("outside (1024, 1) blocks of f32[1024,128]") != std::string::npos);
  CHECK(o.detail.find("idx has no declared range") != std::string::npos);
  // With the range declared on the command line, all is proved; one past the table fails at row 1024.
  Options ok;
  ok.assumptions = {parse_assumption("idx in [0, 1024)")};
  for (const Obligation& x : prove_module(m, ok)) CHECK_MESSAGE(x.verdict == Verdict::proved, x.line());
  Options wide;
  wide.assumptions = {parse_assumption("idx in [0, 1024]")};
  Obligation w = find(prove_module(m, wide), "in[0]", "bounds");
  CHECK(w.verdict == Verdict::failed);
  CHECK(w.detail.find("block index (1024, 0)") != std::string::npos);
  // Declared in the source as a comment line.
  std::vector<Assumption> src = assumptions_in_source("# prove: assume idx in [0, 1024)\n" + plain);
  Options from_src;
  from_src.assumptions = src;
  CHECK(exit_code(prove_text("# prove: assume idx in [0, 1024)\n" + plain, from_src)) == 0);
}

TEST_CASE("Element and BoundedSlice block dims") {
  // Element(8, padding (2, 2)) over f32[64]: the index is an offset into the
  // padded buffer of 2 + 64 + 2 = 68 rounded up to 72 elements, so it may
  // range over [0, 64]. Offsets 8i + 2 for i in [0, 8) lie in [2, 58].
  std::string el = one_d(64, "element(8, 2, 2)", "8", 8, "parallel", "  %s = mul %i, 8\n  %t = add %s, 2\n  return %t");
  CHECK(find(prove_text(el), "in[0]", "bounds").verdict == Verdict::proved);
  // 8i - 1 starts before the padded buffer at i = 0 (the padding is not below offset 0).
  Obligation low = find(prove_text(replace_once(el, "add %s, 2", "sub %s, 1")), "in[0]", "bounds");
  CHECK(low.verdict == Verdict::failed);
  CHECK(low.grid_points == std::vector<std::vector<int64_t>>{{0}});
  CHECK(low.detail.find("Element(8, padding=(2, 2)) needs 0 <= index <= 64") != std::string::npos);
  // 8i + 9 ends past it at i = 7 (65 + 8 > 72).
  Obligation high = find(prove_text(replace_once(el, "add %s, 2", "add %s, 9")), "in[0]", "bounds");
  CHECK(high.verdict == Verdict::failed);
  CHECK(high.grid_points == std::vector<std::vector<int64_t>>{{7}});
  // BoundedSlice(16): (start, size) = (16 i, 16) over f32[64], grid (4).
  std::string bs = one_d(64, "bounded(16)", "16", 4, "parallel", "  %s = mul %i, 16\n  return %s, 16", "(i32, i32)");
  CHECK(find(prove_text(bs), "in[0]", "bounds").verdict == Verdict::proved);
  Obligation big = find(prove_text(replace_once(bs, "return %s, 16", "return %s, 17")), "in[0]", "bounds");
  CHECK(big.verdict == Verdict::failed);
  CHECK(big.detail.find("BoundedSlice(16) needs") != std::string::npos);
}

TEST_CASE("overflow and division by zero in an index map") {
  // i * 2^30 overflows i32 for i >= 2: the integer model would not wrap, so it is a failure.
  Obligation o = find(prove_text(one_d(64, "16", "16", 4, "arbitrary", "  %b = mul %i, 1073741824\n  %c = rem %b, 4\n  return %c")),
                      "in[0]", "bounds");
  CHECK(o.verdict == Verdict::failed);
  CHECK(o.detail.find("i32 overflow in mul") != std::string::npos);
  Obligation z = find(prove_text(one_d(64, "16", "16", 4, "arbitrary", "  %b = div 3, %i\n  %c = rem %b, 4\n  %d = abs %c\n  return %d")),
                      "in[0]", "bounds");
  CHECK(z.verdict == Verdict::failed);
  CHECK(z.grid_points == std::vector<std::vector<int64_t>>{{0}});
  CHECK(z.detail.find("division by zero") != std::string::npos);
}

TEST_CASE("dynamic grid sizes are bounded symbols") {
  std::string text = R"(
index_map @m(%i: i32) -> i32 { return %i }
kernel @k(%x: ref<f32[8], vmem>, %o: ref<f32[8], vmem>) {
  %v = get %x[:]
  swap %o[:], %v
}
func @main(%n: i32, %x: f32[64]) -> f32[64] {
  %out = pallas_call[kernel=@k, grid=(?), in_specs=[spec((8), @m)], out_specs=[spec((8), @m)],
                     out_shapes=[f32[64]], dimension_semantics=(arbitrary)] %n, %x
  return %out
}
)";
  Options fits;
  fits.assumptions = {parse_assumption("n in [1, 8]")};
  for (const Obligation& o : prove_text(text, fits)) CHECK_MESSAGE(o.verdict == Verdict::proved, o.line());
  Options too_big;
  too_big.assumptions = {parse_assumption("n in [1, 9]")};
  Obligation o = find(prove_text(text, too_big), "in[0]", "bounds");
  CHECK(o.verdict == Verdict::failed);
  CHECK(o.grid_points == std::vector<std::vector<int64_t>>{{8}});
  // Without an assumption the size is any positive i32.
  CHECK(find(prove_text(text), "in[0]", "bounds").verdict == Verdict::failed);
}

TEST_CASE("kernel integer code: overflow fails, opaque values give unknown or a sound proof") {
  std::string base = R"(
index_map @m(%i: i32) -> i32 {
  %z = mul %i, 0
  return %z
}
kernel @k(%x: ref<i32[8], vmem>, %o: ref<i32[8], vmem>) {
BODY
  %all = get %x[:]
  swap %o[:], %all
}
func @main(%x: i32[8]) -> i32[8] {
  %out = pallas_call[kernel=@k, grid=(4), in_specs=[spec((8), @m)], out_specs=[spec((8), @m)],
                     out_shapes=[i32[8]], dimension_semantics=(arbitrary)] %x
  return %out
}
)";
  // i * 2^30 overflows i32 at i >= 2, even though the index (times 0) is always 0.
  Obligation ov = find(prove_text(replace_once(base, "BODY", "  %p = program_id[axis=0]\n  %m = mul %p, 1073741824\n  %z = mul %m, 0\n  %v = get %x[%z]")),
                       "kernel", "bounds");
  CHECK(ov.verdict == Verdict::failed);
  CHECK(ov.detail.find("i32 overflow in mul") != std::string::npos);
  // An index read from memory is opaque: unknown, with the reason...
  auto opq = prove_text(replace_once(base, "BODY", "  %c = get %x[0]\n  %v = get %x[%c]"));
  Obligation u = find(opq, "kernel", "bounds");
  CHECK(u.verdict == Verdict::unknown);
  CHECK(u.detail.find("does not model") != std::string::npos);
  CHECK(exit_code(opq) == 3);
  // ...but a proof that holds for any value of it is still a proof.
  Obligation ok = find(prove_text(replace_once(base, "BODY", "  %c = get %x[0]\n  %r = rem %c, 8\n  %a = abs %r\n  %v = get %x[%a]")),
                       "kernel", "bounds");
  CHECK_MESSAGE(ok.verdict == Verdict::proved, ok.line());
}

TEST_CASE("clamp in an index map: bounds follow the clamp; a bound one too high fails at the last blocks") {
  // Grid 6 over 4 blocks of 16: clamp(0, i - 1, 3) stays in bounds; clamp(0, i - 1, 4) does not.
  auto map = [](int hi) { return "  %j = sub %i, 1\n  %b = clamp 0, %j, " + std::to_string(hi) + "\n  return %b"; };
  auto ok = prove_text(one_d(64, "16", "16", 6, "arbitrary", map(3)));
  CHECK(find(ok, "in[0]", "bounds").verdict == Verdict::proved);
  auto bad = prove_text(one_d(64, "16", "16", 6, "arbitrary", map(4)));
  Obligation o = find(bad, "in[0]", "bounds");
  CHECK(o.verdict == Verdict::failed);
  REQUIRE(o.grid_points.size() == 1);
  CHECK(o.grid_points[0][0] == 5);  // clamp(0, 4, 4) = 4: the first grid point past the array
}

TEST_CASE("square in an index map: modelled as i * i; a grid one step too long fails at its last point") {
  // Blocks of 4 over 64 elements: block i * i is in bounds for i < 4 (9 < 16), not at i = 4.
  const std::string map = "  %b = square %i\n  return %b";
  CHECK(find(prove_text(one_d(64, "4", "4", 4, "arbitrary", map)), "in[0]", "bounds").verdict == Verdict::proved);
  Obligation o = find(prove_text(one_d(64, "4", "4", 5, "arbitrary", map)), "in[0]", "bounds");
  CHECK(o.verdict == Verdict::failed);
  REQUIRE(o.grid_points.size() == 1);
  CHECK(o.grid_points[0][0] == 4);
}

TEST_CASE("debug_check in a kernel is part of the kernel claim: proved when it holds at every grid point, else the failing point") {
  auto text = [](int limit) {
    return "kernel @k(%x: ref<f32[16], vmem>, %o: ref<f32[16], vmem>) {\n"
           "  %i = program_id[axis=0]\n"
           "  %ok = lt %i, " + std::to_string(limit) + "\n"
           "  debug_check[msg=\"i in range\"] %ok\n"
           "  %v = get %x[:]\n  swap %o[:], %v\n}\n"
           "func @main(%x: f32[64]) -> f32[64] {\n"
           "  %out = pallas_call[kernel=@k, grid=(4), in_specs=[spec((16), @m)], out_specs=[spec((16), @m)],\n"
           "                     out_shapes=[f32[64]]] %x\n  return %out\n}\n"
           "index_map @m(%i: i32) -> i32 { return %i }\n";
  };
  Obligation ok = find(prove_text(text(4)), "kernel", "bounds");
  CHECK(ok.verdict == Verdict::proved);
  CHECK(ok.detail.find("1 debug checks") != std::string::npos);
  Obligation bad = find(prove_text(text(3)), "kernel", "bounds");
  CHECK(bad.verdict == Verdict::failed);
  REQUIRE(bad.grid_points.size() == 1);
  CHECK(bad.grid_points[0] == std::vector<int64_t>{3});
  CHECK(bad.detail.find("debug_check") != std::string::npos);
  CHECK(bad.detail.find("i in range") != std::string::npos);
}

// Mutants of the DMA and semaphore protocol, one table. Each must be
// FAILED by its claim with the counterexample given, and the interpreter must
// reproduce it (a semaphore left non-zero, a deadlock, with race detection a
// race). The verdicts on the unmutated kernels are in test_prove_semaphores.cpp.
namespace {

struct ProtocolMutant {
  const char* name;
  std::string text;                   // the mutated program
  const char* claim;                  // "semaphore balance" or "DMA races"
  std::vector<std::string> prover;    // parts of the counterexample
  std::vector<std::string> run;       // parts of the interpreter's error
  std::vector<interp::Array> inputs;
};

// `text` with each (from, to) replaced once, in order.
std::string mutate(std::string text, const std::vector<std::pair<std::string, std::string>>& edits) {
  for (const auto& [from, to] : edits) text = replace_once(text, from, to);
  return text;
}

std::vector<ProtocolMutant> protocol_mutants() {
  const std::string pipeline = example_text("dma_pipeline.tsr"), ring = example_text("ring_allreduce.tsr"),
                    halo = example_text("halo_exchange.tsr");
  const std::vector<interp::Array> pipeline_in = {zeros(DType::f32, {2048, 128})}, ring_in = {zeros(DType::f32, {4, 8, 128})},
                                   copy_in = {zeros(DType::f32, {16, 128})}, core_in = {zeros(DType::f32, {256, 128})};
  const std::string barrier = "  semaphore_signal %barrier, 1, %left\n  semaphore_signal %barrier, 1, %right\n";
  return {
      {"a wait removed (dma_pipeline)",
       mutate(pipeline, {{"        dma_wait %is[%slot], %ib[%slot, :, :]\n", ""}}),
       "semaphore balance",
       {"at grid point (0): %in_sem[0] is left at 524288 when the step ends", "(c=1; c=3; c=5; ... 7 iterations)",
        // The path: the prefetch cond, taken for every chunk but the last.
        "; path: branch 1 of cond at <test>:45:9 (c=0; c=1; c=2; ... 15 iterations), branch 0 of cond at <test>:45:9 (c=15))",
        "it is non-zero at kernel exit"},
       {"Semaphore scratch \"in_sem\"[0] has non-zero count 524288"},
       pipeline_in},
      {"a byte count changed (dma_pipeline)",
       mutate(pipeline, {{"dma_wait %out_sem[1], %out_buf[1, :, :]", "dma_wait %out_sem[1], %out_buf[1, 0:64, :]"}}),
       "semaphore balance",
       {"%os[1] is left at 32768 when the step ends"},
       {"Semaphore scratch \"out_sem\"[1] has non-zero count 32768"},
       pipeline_in},
      {"a wait moved before its start",
       copy_kernel("  dma_wait %sem, %o[:, :]\n  dma_start %x[:, :], %o[:, :], %sem\n"),
       "semaphore balance",
       {"at grid point (0): dma_wait at <test>:2:3 waits for 8192 bytes on %sem, but the step has 0 there before it "
        "(no signal on this path): it waits forever"},
       {"<test>:2:3: error: dma_wait: deadlock", "to reach 8192 (it holds 0)"},
       copy_in},
      {"a wait moved before its start (core_map)",
       mutate(kCoreMap, {{"      dma_start %r[ds(%row0, 128), :], %buf[:, :], %sem\n      dma_wait %sem, %buf[:, :]\n",
                          "      dma_wait %sem, %buf[:, :]\n      dma_start %r[ds(%row0, 128), :], %buf[:, :], %sem\n"}}),
       "semaphore balance",
       {"waits for 65536 bytes on %sem, but the step has 0 there before it"},
       {"deadlock: every core is waiting and none can proceed", "to reach 65536 (it holds 0)"},
       core_in},
      {"the receive wait removed (ring_allreduce)",
       mutate(ring, {{"        dma_wait %rs[%s], %b[%s1, :, :]\n", ""}}),
       "semaphore balance",
       {" on device ", "is left at 4096 when the step ends"},
       {"has non-zero count 4096"},
       ring_in},
      {"a barrier waiting for one neighbour (ring_allreduce)",
       mutate(ring, {{"semaphore_wait %barrier, 2", "semaphore_wait %barrier, 1"}}),
       "semaphore balance",
       {"the barrier semaphore on device ", "is left at 1 when the step ends"},
       {"Semaphore barrier semaphore of collective 0 has non-zero count 1"},
       ring_in},
      {"a barrier waiting for three (ring_allreduce)",
       mutate(ring, {{"semaphore_wait %barrier, 2", "semaphore_wait %barrier, 3"}}),
       "semaphore balance",
       {"is left at -1 when the step ends", "a wait takes more than is ever signalled, so it waits forever"},
       {"deadlock: every core is waiting and none can proceed", "to reach 3 (it holds 2)"},
       ring_in},
      {"a barrier waiting before it signals (ring_allreduce)",
       mutate(ring, {{barrier + "  semaphore_wait %barrier, 2\n", "  semaphore_wait %barrier, 2\n" + barrier}}),
       "semaphore balance",
       {"at grid point (0), every device that has not finished is blocked: device 0 waits in semaphore_wait at "
        "<test>:44:3 for 2 on the barrier semaphore, which holds 0; device 1 waits",
        ": a deadlock across devices"},
       {"deadlock: every core is waiting and none can proceed",
        "device 0 core 0 waits for semaphore barrier semaphore of collective 0 to reach 2 (it holds 0) in semaphore_wait at <test>:44:3"},
       ring_in},
      // (d + 1) mod 3 on 4 devices: device 3 gets one barrier signal, device 1 three.
      {"a signal to the wrong neighbour (ring_allreduce)",
       mutate(ring, {{"%right = rem %me_plus_1, 4", "%right = rem %me_plus_1, 3"}}),
       "semaphore balance",
       {"the barrier semaphore on device 3 is left at -1 when the step ends", "a wait takes more than is ever signalled"},
       {"Semaphore barrier semaphore of collective 0 has non-zero count 1 for device 1"},
       ring_in},
      // halo_exchange is proved for every device count; its mutants fail at the 4 devices it runs on.
      {"a halo wait removed (halo_exchange)",
       mutate(halo, {{"  dma_wait %recv_sem[1], %halo[1:2, :]\n", ""}}),
       "semaphore balance",
       {"%recv_sem[1] on device ", "is left at 512 when the step ends", "it is non-zero at kernel exit"},
       {"Semaphore scratch \"recv_sem\"[1] has non-zero count 512"},
       ring_in},
      {"a barrier signal to device 0 instead of the left neighbour (halo_exchange)",
       mutate(halo, {{"semaphore_signal %barrier, 1, %left", "semaphore_signal %barrier, 1, 0"}}),
       "semaphore balance",
       {"the barrier semaphore on device ", "is left at -1 when the step ends", "a wait takes more than is ever signalled"},
       {"deadlock: every core is waiting and none can proceed"},
       ring_in},
      {"a halo sent with the other slot's semaphore (halo_exchange)",
       mutate(halo, {{"%halo[1:2, :], %recv_sem[1], %send_sem[1], %left", "%halo[1:2, :], %recv_sem[0], %send_sem[1], %left"}}),
       "semaphore balance",
       {"%recv_sem[1] on device ", "is left at -512 when the step ends"},
       {"deadlock: every core is waiting and none can proceed", "waits for semaphore scratch \"recv_sem\"[1] to reach 512 (it holds 0)"},
       ring_in},
      {"both cores wait before they signal (core_map)",
       mutate(kCoreToken, {{"      semaphore_signal %s, 1, %d, %o\n      semaphore_wait %s, 1\n",
                            "      semaphore_wait %s, 1\n      semaphore_signal %s, 1, %d, %o\n"}}),
       "semaphore balance",
       {"every core that has not finished is blocked: core 0 waits in semaphore_wait at <test>:8:7 for 1 on %s, which holds 0; "
        "core 1 waits in semaphore_wait at <test>:8:7 for 1 on %s, which holds 0: a deadlock across cores"},
       {"device 0 core 0 waits for semaphore run_scoped \"s\" to reach 1 (it holds 0) in semaphore_wait at <test>:8:7",
        "device 0 core 1 waits for semaphore run_scoped \"s\" to reach 1 (it holds 0)"},
       core_in},
      {"a signal to the wrong core (core_map)",
       mutate(kCoreToken, {{"semaphore_signal %s, 1, %d, %o", "semaphore_signal %s, 1, %d, 0"}}),
       "semaphore balance",
       {"on core "},
       {"device 0 core 1 waits for semaphore run_scoped \"s\" to reach 1 (it holds 0)"},
       core_in},
      // Device 0 waits before it sends the token: both devices wait first.
      {"a token sent after the wait for its reply (two devices)",
       mutate(kPingPong, {{"  }]] %first, %s, %other\n  semaphore_wait %s, 1\n", "  }]] %first, %s, %other\n"},
                          {"fn(%s1: ref<sem, semaphore>, %t1: i32) {\n    semaphore_signal %s1, 1, %t1\n  }",
                           "fn(%s1: ref<sem, semaphore>, %t1: i32) {\n    semaphore_wait %s1, 1\n    semaphore_signal %s1, 1, %t1\n  }"},
                          {"fn(%s2: ref<sem, semaphore>, %t2: i32) {\n    semaphore_signal %s2, 1, %t2\n  }",
                           "fn(%s2: ref<sem, semaphore>, %t2: i32) {\n    semaphore_wait %s2, 1\n    semaphore_signal %s2, 1, %t2\n  }"}}),
       "semaphore balance",
       {"device 0 waits in semaphore_wait at <test>:7:5 for 1 on %s1, which holds 0; "
        "device 1 waits in semaphore_wait at <test>:11:5 for 1 on %s2, which holds 0 (device 0 took branch 1 of cond at <test>:6:3): "
        "a deadlock across devices"},
       {"device 0 core 0 waits for semaphore scratch \"s\" to reach 1 (it holds 0) in semaphore_wait at <test>:7:5",
        "device 1 core 0 waits for semaphore scratch \"s\" to reach 1 (it holds 0) in semaphore_wait at <test>:11:5"},
       {zeros(DType::f32, {2, 8})}},
      {"a read of a DMA destination before its wait",
       copy_kernel("  dma_start %x[:, :], %o[:, :], %sem\n  %v = get %o[0:8, :]\n  dma_wait %sem, %o[:, :]\n"),
       "DMA races",
       {"at grid point (0): get %o at <test>:3:3 reads it while dma_start at <test>:2:3 is in flight writing %o, before the "
        "wait on %sem that completes the copy, and the regions overlap"},
       {"RACE DETECTED", "by DMA 0 of dma_start on device 0 core 0 at <test>:2:3", "by get on device 0 core 0 at <test>:3:3"},
       copy_in},
      {"a write of a DMA source before its wait",
       kWriteSource,
       "DMA races",
       {"swap %buf at <test>:6:3 writes it while dma_start at <test>:5:3 is in flight reading %buf"},
       {"RACE DETECTED"},
       copy_in},
      {"a prefetch into the slot in use (dma_pipeline)",
       mutate(pipeline, {{"%ib1[%other, :, :], %is1[%other]", "%ib1[%s1, :, :], %is1[%other]"}}),
       "DMA races",
       {"the copy of dma_start at <test>:52:13 (c=0) writes %ib1 while dma_start at <test>:34:3 is in flight writing %in_buf"},
       {"RACE DETECTED"},
       pipeline_in},
      {"a scatter of the gathered rows before the gather's wait (sc_gather_scatter)",
       mutate(example_text("sc_gather_scatter.tsr"),
              {{"    dma_wait %sem, %rows[:, :]\n    dma_start[add=true] %rows[:, :], %o[%bag_of, :], %sem\n",
                "    dma_start[add=true] %rows[:, :], %o[%bag_of, :], %sem\n    dma_wait %sem, %rows[:, :]\n"}}),
       "DMA races",
       {"the copy of dma_start at <test>:32:5 reads %rows while dma_start at <test>:31:5 is in flight writing %rows"},
       {"RACE DETECTED"},
       {zeros(DType::i32, {64}), zeros(DType::i32, {64}), zeros(DType::f32, {256, 128}), zeros(DType::f32, {16, 128})}},
  };
}

}  // namespace

TEST_CASE("protocol mutants are FAILED with a counterexample the interpreter reproduces") {
  for (const ProtocolMutant& m : protocol_mutants()) {
    std::string name = m.name;
    CAPTURE(name);
    Obligation o = find(prove_text(m.text), "kernel", m.claim);
    CHECK_MESSAGE(o.verdict == Verdict::failed, o.line());
    for (const std::string& part : m.prover) CHECK_MESSAGE(has(o.detail, part), o.detail);
    std::string err = run_error(m.text, m.inputs, std::string(m.claim) == "DMA races");
    for (const std::string& part : m.run) CHECK_MESSAGE(has(err, part), err);
  }
}
