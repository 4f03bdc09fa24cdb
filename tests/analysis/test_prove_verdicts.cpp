// Trustworthy verdicts: programs that `tessera prove` once proved
// and `tessera run` then broke, or that prove could not decide although they
// are correct. Each test is the failing program; most also run the
// interpreter to show the verdict and the run agree.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "analysis/prove/call_context.h"
#include "prove_test_util.h"

using namespace tessera;
using namespace tessera::prove;
using namespace tessera::prove::testing;

namespace {

interp::Array iota(int64_t n) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<double>(i));
  return interp::Array::from_values(DType::f32, {n}, v);
}

std::string run_error(const std::string& text, const std::vector<interp::Array>& inputs, interp::RunOptions opts = {}) {
  Module m = parse_verified(text);
  try {
    interp::run_function(m, "main", inputs, opts);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A 1-D copy kernel over f32[N] with blocks of B, grid (G), maps @in_map / @out_map.
std::string copy_kernel(const std::string& maps, int64_t n, int64_t b, int64_t g, const std::string& extra = "") {
  std::string N = std::to_string(n), B = std::to_string(b);
  return maps + "\nkernel @k(%x: ref<f32[" + B + "], vmem>, %o: ref<f32[" + B + "], vmem>) {\n"
         "  %v = get %x[:]\n  swap %o[:], %v\n}\n"
         "func @main(%x: f32[" + N + "]) -> f32[" + N + "] {\n"
         "  %out = pallas_call[kernel=@k, grid=(" + std::to_string(g) + "), in_specs=[spec((" + B + "), @in_map)],\n"
         "                     out_specs=[spec((" + B + "), @out_map)], out_shapes=[f32[" + N + "]]" + extra + "] %x\n"
         "  return %out\n}\n";
}

}  // namespace

TEST_CASE("a kernel may not write its scalar-prefetch Ref") {
  const std::string text = R"(index_map @m(%i: i32, %s: ref<i32[2], smem>) -> i32 {
  %r = get %s[%i]
  return %r
}
kernel @k(%idx: ref<i32[2], smem>, %x: ref<f32[8], vmem>, %o: ref<f32[8], vmem>) {
  %i = program_id[axis=0]
  %first = eq %i, 0
  cond[branches=[fn(%a: ref<i32[2], smem>) { }, fn(%b: ref<i32[2], smem>) {
    swap %b[1], 5000:i32
  }]] %first, %idx
  %v = get %x[:]
  swap %o[:], %v
}
func @main(%s: i32[2], %x: f32[16]) -> f32[16] {
  %out = pallas_call[kernel=@k, grid=(2), num_scalar_prefetch=1, in_specs=[spec((8), @m)], out_specs=[spec((8), @m)],
                     out_shapes=[f32[16]]] %s, %x
  return %out
}
)";
  // The write sits in a cond branch, on the branch's own name for the Ref.
  CHECK_THROWS_WITH_AS(parse_verified(text),
                       doctest::Contains("<test>:9:5: error: cannot write to scalar-prefetch Ref %idx (swap): index maps read it"),
                       Error);
  // Reading it stays fine.
  CHECK_NOTHROW(parse_verified(replace_once(text, "swap %b[1], 5000:i32", "%r = get %b[1]")));
  // addupdate and a direct store are writes too.
  CHECK_THROWS_WITH_AS(parse_verified(replace_once(text, "swap %b[1], 5000:i32", "addupdate %b[1], 1:i32")),
                       doctest::Contains("cannot write to scalar-prefetch Ref %idx (addupdate)"), Error);
}

TEST_CASE("i64 arithmetic gets overflow guards, as i32 does") {
  // (i + 1) * 2^32 * 2^32 wraps to 0 in i64: the run selects block 99.
  std::string maps = R"(index_map @in_map(%i: i32) -> i32 {
  %a = add %i, 1
  %b = convert_element_type[new_dtype=i64] %a
  %c = mul %b, 4294967296:i64
  %d = mul %c, 4294967296:i64
  %z = eq %d, 0:i64
  %r = select_n %z, %i, 99:i32
  return %r
}
index_map @out_map(%i: i32) -> i32 { return %i })";
  std::string text = copy_kernel(maps, 16, 8, 2);
  Obligation o = find(prove_text(text), "in[0]", "bounds");
  CHECK_MESSAGE(o.verdict == Verdict::failed, o.line());
  CHECK(o.detail.find("i64 overflow in mul") != std::string::npos);
  CHECK(run_error(text, {iota(16)}).find("Out-of-bounds") != std::string::npos);
  // i64 arithmetic that stays in range is still proved.
  std::string fine = replace_once(text, "%d = mul %c, 4294967296:i64", "%d = mul %c, 2:i64");
  for (const Obligation& ob : prove_text(fine)) CHECK_MESSAGE(ob.verdict == Verdict::proved, ob.line());
}

TEST_CASE("multiple_of hints are checked, never assumed into another claim") {
  const std::string text = R"(kernel @k(%x: ref<f32[8,128], vmem>, %o: ref<f32[8,128], vmem>) {
  %i = program_id[axis=0]
  %h = multiple_of[value=2] %i
  %j = add %i, 7
  %v = get %x[%j, :]
  %b = broadcast_in_dim[shape=(8, 128), broadcast_dimensions=(1)] %v
  swap %o[:, :], %b
}
func @main(%x: f32[8,128]) -> f32[8,128] {
  %out = pallas_call[kernel=@k, grid=(2), in_specs=[spec((8, 128), fn(%i: i32) -> (i32, i32) { return 0, 0 })],
                     out_specs=[spec((8, 128), fn(%i: i32) -> (i32, i32) { return 0, 0 })], out_shapes=[f32[8,128]],
                     dimension_semantics=(arbitrary)] %x
  return %out
}
)";
  // The hint (false at i = 1) once made the query forget i = 1, proving the
  // read of row i + 7 = 8.
  Obligation o = find(prove_text(text), "kernel", "bounds");
  CHECK_MESSAGE(o.verdict == Verdict::failed, o.line());
  CHECK(o.grid_points == std::vector<std::vector<int64_t>>{{1}});
  CHECK(o.detail.find("multiple_of[value=2] hint is false") != std::string::npos);
  // Without the hint the read itself is the failure.
  o = find(prove_text(replace_once(text, "%h = multiple_of[value=2] %i", "")), "kernel", "bounds");
  CHECK(o.verdict == Verdict::failed);
  CHECK(o.detail.find("get %x") != std::string::npos);
  // The interpreter stops on the false hint, naming the kernel and the grid point.
  std::string err = run_error(text, {interp::Array(DType::f32, {8, 128})});
  CHECK(err.find("multiple_of: the hint is false: 1 is not a multiple of 2") != std::string::npos);
  CHECK(err.find("@k") != std::string::npos);
  CHECK(err.find("(1,)") != std::string::npos);
  // A true hint is proved, and its interval helps prove what uses it.
  std::string good = replace_once(replace_once(text, "%h = multiple_of[value=2] %i", "%m = mul %i, 4\n  %h = multiple_of[value=4] %m"),
                             "%j = add %i, 7", "%j = add %h, 3");
  for (const Obligation& ob : prove_text(good)) CHECK_MESSAGE(ob.verdict == Verdict::proved, ob.line());
}

TEST_CASE("a hint that no value satisfies never gives an empty interval") {
  // i + 1 lies in [1, 2]: no multiple of 4. Rounding inward gave [4, 0], and
  // an empty interval proves anything.
  std::string maps = R"(index_map @in_map(%i: i32) -> i32 {
  %p = add %i, 1
  %h = multiple_of[value=4] %p
  %r = sub %h, 4
  return %r
}
index_map @out_map(%i: i32) -> i32 { return %i })";
  std::string text = copy_kernel(maps, 16, 8, 2);
  Module m = parse_verified(text);
  const Op* call = nullptr;
  for (const Op& op : m.find("main")->ops())
    if (op.name() == "pallas_call") call = &op;
  REQUIRE(call);
  Options opts;
  CallContext c(*call, "k", opts, {});
  std::vector<z3::expr> facts;
  MapAt at = c.encode_map(0, c.make_point("p", facts));
  CHECK(at.outputs[0].iv.lo <= at.outputs[0].iv.hi);
  Obligation o = find(prove_text(text), "in[0]", "bounds");
  CHECK_MESSAGE(o.verdict == Verdict::failed, o.line());
  CHECK(o.detail.find("multiple_of[value=4] hint is false") != std::string::npos);
}

TEST_CASE("an aliased input read on another parallel point than the write is a race") {
  // Point i reads block i + 1 of the buffer that point i + 1 writes.
  std::string maps = R"(index_map @in_map(%i: i32) -> i32 {
  %n = add %i, 1
  %r = rem %n, 4
  return %r
}
index_map @out_map(%i: i32) -> i32 { return %i })";
  std::string text = copy_kernel(maps, 32, 8, 4, ", input_output_aliases=[(0, 0)], dimension_semantics=(parallel)");
  Obligation o = find(prove_text(text), "in[0]", "parallel safety");
  CHECK_MESSAGE(o.verdict == Verdict::failed, o.line());
  REQUIRE(o.grid_points.size() == 2);
  CHECK((o.grid_points[0][0] + 1) % 4 == o.grid_points[1][0]);
  CHECK(o.detail.find("aliases it") != std::string::npos);
  // The same kernel on an arbitrary axis runs in one order: no race.
  std::string seq = replace_once(text, "dimension_semantics=(parallel)", "dimension_semantics=(arbitrary)");
  CHECK(find(prove_text(seq), "in[0]", "parallel safety").verdict == Verdict::proved);
  // Reading the block one writes is the usual in-place update: proved.
  std::string same = replace_once(text, "%n = add %i, 1", "%n = add %i, 0");
  CHECK(find(prove_text(same), "in[0]", "parallel safety").verdict == Verdict::proved);
}

TEST_CASE("state read before it is written in a step cannot cross a parallel axis") {
  std::string cumsum = example_text("cumsum.tsr");
  CHECK(find(prove_text(cumsum), "kernel", "carried state").verdict == Verdict::proved);
  std::string par = replace_once(cumsum, "dimension_semantics=(arbitrary)", "dimension_semantics=(parallel)");
  Obligation o = find(prove_text(par), "kernel", "carried state");
  CHECK_MESSAGE(o.verdict == Verdict::failed, o.line());
  REQUIRE(o.grid_points.size() == 1);
  CHECK(o.grid_points[0][0] >= 1);  // every point but 0 reads the carry another step left
  CHECK(o.detail.find("get %carry") != std::string::npos);
  CHECK(o.detail.find("scratch 0") != std::string::npos);
  // matmul's output block is zeroed at k == 0 before the accumulation: proved;
  // without the zeroing its first k step reads another (i, j)'s block.
  std::string mm = example_text("matmul.tsr");
  CHECK(find(prove_text(mm), "kernel", "carried state").verdict == Verdict::proved);
  std::string no_init = replace_once(mm, "swap %o1[:, :], %zeros", "");
  o = find(prove_text(no_init), "kernel", "carried state");
  CHECK_MESSAGE(o.verdict == Verdict::failed, o.line());
  CHECK(o.detail.find("addupdate %o") != std::string::npos);
  CHECK(o.grid_points[0][2] == 0);
}

TEST_CASE("the resource limit, not the wall clock, decides a hard query") {
  // A cubic output map: whether two points collide is hard for Z3.
  const std::string text = R"(index_map @cubic(%i: i32) -> i32 {
  %w = convert_element_type[new_dtype=i64] %i
  %a = mul %w, %w
  %b = mul %a, %w
  %c = add %b, 7:i64
  %r = rem %c, 4093:i64
  %n = convert_element_type[new_dtype=i32] %r
  return %n
}
kernel @k(%x: ref<f32[1], vmem>, %o: ref<f32[1], vmem>) {
  %v = get %x[:]
  swap %o[:], %v
}
func @main(%x: f32[4096]) -> f32[4096] {
  %out = pallas_call[kernel=@k, grid=(4096), in_specs=[spec((1), fn(%i: i32) -> i32 { return %i })],
                     out_specs=[spec((1), @cubic)], out_shapes=[f32[4096]], dimension_semantics=(parallel)] %x
  return %out
}
)";
  Options opts;  // the defaults
  std::vector<Obligation> obs = prove_text(text, opts);
  CAPTURE(lines(obs));
  int unknown = 0;
  for (const Obligation& o : obs) {
    CHECK(o.detail.find("time-out") == std::string::npos);
    if (o.verdict == Verdict::unknown) {
      ++unknown;
      CHECK(o.detail == "(resource limit rlimit=" + std::to_string(opts.rlimit) + " reached)");
    }
    CHECK(o.millis < opts.timeout_ms / 2.0);
  }
  CHECK(unknown >= 1);
}

TEST_CASE("literal dynamic grid sizes are constants; --assume names do not shift") {
  const std::string text = R"(kernel @k(%x: ref<f32[8,8], vmem>, %o: ref<f32[8,8], vmem>) {
  %v = get %x[:, :]
  swap %o[:, :], %v
}
func @main(%n: i32, %x: f32[16,24]) -> f32[16,24] {
  %out = pallas_call[kernel=@k, grid=(?, ?), in_specs=[spec((8, 8), fn(%i: i32, %j: i32) -> (i32, i32) { return %i, %j })],
                     out_specs=[spec((8, 8), fn(%i: i32, %j: i32) -> (i32, i32) { return %i, %j })],
                     out_shapes=[f32[16,24]], dimension_semantics=(parallel, arbitrary)] 2:i32, %n, %x
  return %out
}
)";
  Options opts;
  opts.assumptions = {parse_assumption("n in [1, 4)")};
  std::vector<Obligation> obs = prove_text(text, opts);
  for (const Obligation& o : obs) CHECK_MESSAGE(o.verdict == Verdict::proved, o.line());
  // The literal 2 bounds axis 0: block row 2 would be outside f32[16,24].
  opts.assumptions = {parse_assumption("n in [1, 5)")};
  CHECK(find(prove_text(text, opts), "in[0]", "bounds").verdict == Verdict::failed);
}

TEST_CASE("a counter that never reaches an index needs no overflow proof") {
  const std::string text = R"(kernel @k(%x: ref<f32[8], vmem>, %o: ref<f32[8], vmem>, %cnt: ref<i32[1], smem>) {
  %i = program_id[axis=0]
  %first = eq %i, 0
  cond[branches=[fn(%c0: ref<i32[1], smem>) { }, fn(%c1: ref<i32[1], smem>) { swap %c1[0], 0:i32 }]] %first, %cnt
  %c = get %cnt[0]
  %n = add %c, 1
  swap %cnt[0], %n
  %v = get %x[:]
  swap %o[:], %v
}
func @main(%x: f32[32]) -> f32[32] {
  %out = pallas_call[kernel=@k, grid=(4), in_specs=[spec((8), fn(%i: i32) -> i32 { return %i })],
                     out_specs=[spec((8), fn(%i: i32) -> i32 { return %i })], out_shapes=[f32[32]],
                     scratch=[ref<i32[1], smem>], dimension_semantics=(arbitrary)] %x
  return %out
}
)";
  std::vector<Obligation> obs = prove_text(text);
  CAPTURE(lines(obs));
  CHECK(exit_code(obs) == 0);
  // Once the counter picks an element, its overflow matters.
  std::string indexed = replace_once(text, "%v = get %x[:]\n  swap %o[:], %v", "%r = rem %n, 8\n  %w = get %x[%r]\n  swap %o[0], %w");
  Obligation o = find(prove_text(indexed), "kernel", "bounds");
  CHECK_MESSAGE(o.verdict == Verdict::unknown, o.line());
  CHECK(o.detail.find("cannot decide") != std::string::npos);
}

TEST_CASE("core_map bodies are proved") {
  const std::string text = R"(func @main(%x: ref<f32[256,128], hbm>) {
  core_map[body=fn(%hr: ref<f32[256,128], hbm>) {
    %c = axis_index[axis_name=core]
    %row = mul %c, 128
    run_scoped[body=fn(%r: ref<f32[256,128], hbm>, %row0: i32,
                       %buf: ref<f32[128,128], vmem>, %sem: ref<dma_sem, semaphore>) {
      dma_start %r[ds(%row0, 128), :], %buf[:, :], %sem
      dma_wait %sem, %buf[:, :]
    }] %hr, %row
  }, mesh_axes=(core), mesh_shape=(2)] %x
}
)";
  std::vector<Obligation> obs = prove_text(text);
  REQUIRE(obs.size() == 4);
  CHECK(obs[0].line() == "core_map kernel bounds: proved");
  CHECK(obs[1].line() == "core_map kernel semaphore balance: proved");
  CHECK(obs[2].line() == "core_map kernel DMA races: proved");
  CHECK(obs[3].line() == "core_map kernel core races: proved");
  // Three cores: core 2 copies rows 256..383 of 256.
  Obligation o = find(prove_text(replace_once(text, "mesh_shape=(2)", "mesh_shape=(3)")), "kernel", "bounds");
  CHECK_MESSAGE(o.verdict == Verdict::failed, o.line());
  CHECK(o.detail.find("dma_start %r") != std::string::npos);
  CHECK(o.detail.find("slice start 256") != std::string::npos);
}

TEST_CASE("shifts by a constant out of range follow the interpreter") {
  // shift_left by 32 on i32 (and by 64 on i64) shifts every bit out: 0.
  for (const char* body : {"%s = shift_left %i, 32:i32\n  return %s",
                           "%w = convert_element_type[new_dtype=i64] %i\n  %s = shift_left %w, 64:i64\n"
                           "  %r = convert_element_type[new_dtype=i32] %s\n  return %r",
                           "%s = shift_right_arithmetic %i, 40:i32\n  return %s"}) {
    CAPTURE(body);
    std::string maps = std::string("index_map @in_map(%i: i32) -> i32 {\n  ") + body + "\n}\nindex_map @out_map(%i: i32) -> i32 { return 0 }";
    std::string text = copy_kernel(maps, 16, 8, 2, ", dimension_semantics=(arbitrary)");
    for (const Obligation& o : prove_text(text)) CHECK_MESSAGE(o.verdict == Verdict::proved, o.line());
    interp::Array out;
    CHECK(run_error(text, {iota(16)}).empty());
  }
  // A shift by a non-constant amount is still reported as such.
  std::string maps = "index_map @in_map(%i: i32) -> i32 {\n  %s = shift_left %i, %i\n  return %s\n}\n"
                     "index_map @out_map(%i: i32) -> i32 { return 0 }";
  Obligation o = find(prove_text(copy_kernel(maps, 16, 8, 2, ", dimension_semantics=(arbitrary)")), "in[0]", "bounds");
  CHECK(o.verdict == Verdict::unknown);
  CHECK(o.detail.find("non-constant") != std::string::npos);
}

TEST_CASE("carried state: an input block the kernel writes carries state when another parallel point shares it") {
  // Found by the property test. Both points read input block 0; point 0 writes
  // x + 1 into its buffer. On one core point 1 finds that buffer unchanged (the
  // block index did not change, so no copy-in) and reads x + 1; on two cores it
  // reads x. Output blocks differ per point, so parallel safety holds.
  const std::string text = R"(
index_map @zero(%i: i32) -> (i32) {
  return 0:i32
}
index_map @own(%i: i32) -> (i32) {
  return %i
}
kernel @k(%x: ref<f32[2], vmem>, %o: ref<f32[2], vmem>) {
  %v = get %x[:]
  swap %o[:], %v
  %w = add %v, 1.0:f32
  swap %x[:], %w
}
func @main(%a: f32[2]) -> f32[4] {
  %r = pallas_call[kernel=@k, grid=(2), in_specs=[spec((2), @zero)], out_specs=[spec((2), @own)],
                   out_shapes=[f32[4]], dimension_semantics=(parallel)] %a
  return %r
}
)";
  Obligation o = find(prove_text(text), "kernel", "carried state");
  CHECK_MESSAGE(o.verdict == Verdict::failed, o.line());
  CHECK(o.detail.find("the block of in[0]") != std::string::npos);
  // The run confirms it: one core and two cores disagree.
  Module m = parse_verified(text);
  interp::RunOptions two;
  two.cores = 2;
  auto one_core = interp::run_function(m, "main", {iota(2)});
  auto two_cores = interp::run_function(m, "main", {iota(2)}, two);
  CHECK(one_core[0].get(2) != two_cores[0].get(2));
  // Each point on its own input block: no point sees another's writes.
  std::string own = replace_once(text, "in_specs=[spec((2), @zero)]", "in_specs=[spec((2), @own)]");
  own = replace_once(own, "func @main(%a: f32[2])", "func @main(%a: f32[4])");
  CHECK(find(prove_text(own), "kernel", "carried state").verdict == Verdict::proved);
  // A kernel that only reads its input block carries nothing.
  std::string ro = replace_once(text, "  swap %x[:], %w\n", "");
  CHECK(find(prove_text(ro), "kernel", "carried state").verdict == Verdict::proved);
}

TEST_CASE("a claim that assumes an unproved bounds claim is unknown, not proved") {
  // Found by the property test: out[0]'s map overflows i64 for every point but
  // the wrapped value selects another block; non-revisiting and parallel
  // safety were proved in the integer model, and the run revisited.
  const std::string maps = R"(
index_map @in_map(%i: i32) -> (i32) {
  return %i
}
index_map @out_map(%i: i32) -> (i32) {
  %a = convert_element_type[new_dtype=i64] %i
  %b = add %a, 1:i64
  %c = mul %b, 4294967296:i64
  %d = mul %c, 4294967296:i64
  %z = eq %d, 0:i64
  %e = select_n %z, 0:i32, %i
  return %e
}
)";
  auto obs = prove_text(copy_kernel(maps, 16, 4, 4, ", dimension_semantics=(parallel)"));
  CHECK(find(obs, "out[0]", "bounds").verdict == Verdict::failed);
  for (const char* kind : {"non-revisiting", "parallel safety"}) {
    Obligation o = find(obs, "out[0]", kind);
    CHECK_MESSAGE(o.verdict == Verdict::unknown, o.line());
    CHECK(o.detail.find("holds only if the index computations of out[0] are well defined") != std::string::npos);
  }
}

TEST_CASE("carried state: the unfilled tail of a bounded input block is stale state") {
  // Found by the property test. Point 1's bounded block has size 1: the copy-in
  // fills element 0 and element 1 keeps what the previous step on this core
  // left (x0 on one core, uninitialized on two). Reading the whole block reads it.
  const std::string text = R"(
index_map @slice(%i: i32) -> (i32, i32) {
  %size = sub 2:i32, %i
  return %i, %size
}
index_map @own(%i: i32) -> (i32) {
  return %i
}
kernel @k(%x: ref<f32[2], vmem>, %o: ref<f32[2], vmem>) {
  %v = get %x[:]
  swap %o[:], %v
}
func @main(%a: f32[4]) -> f32[4] {
  %r = pallas_call[kernel=@k, grid=(2), in_specs=[spec((bounded(2)), @slice)], out_specs=[spec((2), @own)],
                   out_shapes=[f32[4]], dimension_semantics=(parallel)] %a
  return %r
}
)";
  Obligation o = find(prove_text(text), "kernel", "carried state");
  CHECK_MESSAGE(o.verdict == Verdict::failed, o.line());
  CHECK(o.grid_points == std::vector<std::vector<int64_t>>{{1}});
  // Reading only the head, which every size fills, is fine.
  std::string head = replace_once(text, "%v = get %x[:]\n  swap %o[:], %v", "%v = get %x[0]\n  swap %o[0], %v");
  CHECK(find(prove_text(head), "kernel", "carried state").verdict == Verdict::proved);
}
