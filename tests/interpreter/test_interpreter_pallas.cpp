// pallas_call grid semantics (Pallas's TPU interpret mode): padding, block
// dims, copy-in only on a change of block, scalar prefetch, aliasing, dynamic grids, the split of
// the parallel prefix across cores, grid order, and the run-time errors with
// their messages.
#include <fstream>

#include "interp_test_util.h"
#include "interpreter/axis_order.h"

using namespace itest;

namespace {

// out = x + 1 over blocks of (128, 128) on an array that is not a multiple of them.
const char* kPadded = R"(
index_map @ij(%i: i32, %j: i32) -> (i32, i32) {
  return %i, %j
}
kernel @k(%x: ref<f32[128,128], vmem>, %o: ref<f32[128,128], vmem>) {
  %a = get %x[:, :]
  %b = add %a, 1.0
  swap %o[:, :], %b
}
func @main(%x: f32[200,300]) -> f32[200,300] {
  %out = pallas_call[kernel=@k, grid=(2, 3), in_specs=[spec((128, 128), @ij)],
                     out_specs=[spec((128, 128), @ij)], out_shapes=[f32[200,300]],
                     dimension_semantics=(parallel, parallel)] %x
  return %out
}
)";

std::vector<double> plus_one(const Array& x) {
  std::vector<double> r = values(x);
  for (double& v : r) v = static_cast<float>(v) + 1.0f;
  return r;
}

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream f(path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(f, l);) lines.push_back(l);
  return lines;
}

}  // namespace

TEST_CASE("partial blocks: inputs padded, results sliced back") {
  Array x = random(DType::f32, {200, 300}, 1);
  check_close(run(kPadded, {x})[0], plus_one(x), 0);
}

// RunOptions::pallas_call_executor (how `tessera run --backend=jit` runs
// kernels compiled): consulted first with the op and its operand arrays; its
// outputs replace the interpreter's, nullopt falls back to the interpreter.
TEST_CASE("a pallas_call executor runs the kernel instead of the interpreter, or declines") {
  const std::string text = std::string(kPadded) + R"(
func @twice(%x: f32[200,300]) -> f32[200,300] {
  %a = call[callee=@main] %x
  %b = neg %a
  return %b
}
)";
  Module m = parse_checked(text);
  Array x = random(DType::f32, {200, 300}, 2);
  RunOptions o;
  int calls = 0;
  o.pallas_call_executor = [&](const Op& call, const std::vector<Array>& operands) -> std::optional<std::vector<Array>> {
    ++calls;
    CHECK(call.name() == "pallas_call");
    REQUIRE(operands.size() == 1);
    CHECK(operands[0].raw() == x.raw());  // the caller's array itself, not a padded copy
    Array out = Array::uninitialized(DType::f32, {200, 300});
    for (int64_t i = 0; i < out.size(); ++i) out.data<float>()[i] = 7.0f;
    return std::vector<Array>{out};
  };
  // The op after the kernel stays interpreted: -(7) everywhere.
  check_close(run_function(m, "twice", {x}, o)[0], std::vector<double>(200 * 300, -7.0), 0);
  CHECK(calls == 1);
  o.pallas_call_executor = [&](const Op&, const std::vector<Array>&) -> std::optional<std::vector<Array>> {
    ++calls;
    return std::nullopt;
  };
  check_close(run_function(m, "main", {x}, o)[0], plus_one(x), 0);
  CHECK(calls == 2);
  o.pallas_call_executor = [&](const Op&, const std::vector<Array>&) -> std::optional<std::vector<Array>> {
    return std::vector<Array>{};
  };
  CHECK_THROWS_WITH_AS(run_function(m, "main", {x}, o), doctest::Contains("pallas_call: the pallas_call executor returned 0 outputs, expected 1"), Error);
}

TEST_CASE("out-of-bounds block index for an input names input, iteration, range and shape") {
  const char* text = R"(
index_map @ij(%i: i32, %j: i32) -> (i32, i32) {
  return %i, %j
}
kernel @add_kernel(%x: ref<f32[128,128], vmem>, %o: ref<f32[128,128], vmem>) {
  %a = get %x[:, :]
  swap %o[:, :], %a
}
func @main(%x: f32[1024,512]) -> f32[1280,512] {
  %out = pallas_call[kernel=@add_kernel, grid=(10, 4), in_specs=[spec((128, 128), @ij)],
                     out_specs=[spec((128, 128), @ij)], out_shapes=[f32[1280,512]],
                     dimension_semantics=(parallel, parallel)] %x
  return %out
}
)";
  std::string err = run_error(text, {Array(DType::f32, {1024, 512})});
  CHECK(contains(err, "test.tsr:10:3: error: Out-of-bounds block index (8, 0) for input \"x\" in iteration (8, 0): "
                      "reading [1024:1152, 0:128] but input has shape (1024, 512) (kernel @add_kernel)"));
  // With --oob uninitialized the missing rows read NaN.
  RunOptions o;
  o.oob = RunOptions::Oob::uninitialized;
  Array out = run(text, {random(DType::f32, {1024, 512}, 2)}, o)[0];
  CHECK(std::isnan(out.get(1100 * 512)));
  CHECK(!std::isnan(out.get(1000 * 512)));
}

TEST_CASE("out-of-bounds block index for an output") {
  const char* text = R"(
index_map @in(%i: i32) -> (i32, i32) {
  return %i, 0
}
index_map @shifted(%i: i32) -> (i32, i32) {
  %n = add %i, 1
  return %n, 0
}
kernel @k(%x: ref<f32[8,128], vmem>, %o: ref<f32[8,128], vmem>) {
  %a = get %x[:, :]
  swap %o[:, :], %a
}
func @main(%x: f32[32,128]) -> f32[32,128] {
  %out = pallas_call[kernel=@k, grid=(4), in_specs=[spec((8, 128), @in)],
                     out_specs=[spec((8, 128), @shifted)], out_shapes=[f32[32,128]]] %x
  return %out
}
)";
  std::string err = run_error(text, {Array(DType::f32, {32, 128})});
  CHECK(contains(err, "Out-of-bounds block index (4, 0) for output \"o\" in iteration (3,): writing [32:40, 0:128] "
                      "but output has shape (32, 128) (kernel @k)"));
}

TEST_CASE("revisiting an output block is an error; staying on it is not") {
  const char* text = R"(
index_map @in(%i: i32) -> (i32, i32) {
  return %i, 0
}
index_map @half(%i: i32) -> (i32, i32) {
  %h = div %i, 2
  %r = rem %h, 2
  return %r, 0
}
kernel @k(%x: ref<f32[8,128], vmem>, %o: ref<f32[8,128], vmem>) {
  %a = get %x[:, :]
  swap %o[:, :], %a
}
func @main(%x: f32[64,128]) -> f32[16,128] {
  %out = pallas_call[kernel=@k, grid=(8), in_specs=[spec((8, 128), @in)],
                     out_specs=[spec((8, 128), @half)], out_shapes=[f32[16,128]],
                     dimension_semantics=(arbitrary)] %x
  return %out
}
)";
  // Blocks visited: 0 0 1 1 0 ... -> iteration 4 comes back to block 0.
  std::string err = run_error(text, {Array(DType::f32, {64, 128})});
  CHECK(contains(err, "Revisited block [0:8, 0:128] of output \"o\" in iteration (4,). The block was previously "
                      "visited in iterations (0,) through (1,) ."));
}

TEST_CASE("an input block is copied in only when its start changes (kernel writes to it persist)") {
  const char* text = R"(
index_map @zero(%i: i32) -> i32 {
  return 0
}
index_map @own(%i: i32) -> i32 {
  return %i
}
kernel @k(%x: ref<f32[4], vmem>, %o: ref<f32[4], vmem>) {
  %a = get %x[:]
  %b = add %a, 1.0
  swap %x[:], %b
  swap %o[:], %b
}
func @main(%x: f32[4]) -> f32[12] {
  %out = pallas_call[kernel=@k, grid=(3), in_specs=[spec((4), @zero)],
                     out_specs=[spec((4), @own)], out_shapes=[f32[12]], dimension_semantics=(arbitrary)] %x
  return %out
}
)";
  Array x = Array::from_values(DType::f32, {4}, {0, 10, 20, 30});
  check_close(run(text, {x})[0], {1, 11, 21, 31, 2, 12, 22, 32, 3, 13, 23, 33}, 0);
}

TEST_CASE("kernel buffers persist across iterations of a core; outputs are never copied in") {
  // Accumulate over an arbitrary axis without initializing: the kernel buffer
  // of the output starts as uninitialized memory (zero here) on each core, and
  // a core's second output block starts from what its first one left behind.
  const char* text = R"(
index_map @in(%i: i32, %j: i32) -> (i32, i32) {
  return %i, %j
}
index_map @row(%i: i32, %j: i32) -> (i32, i32) {
  return %i, 0
}
kernel @k(%x: ref<f32[2,4], vmem>, %o: ref<f32[2,4], vmem>) {
  %a = get %x[:, :]
  addupdate %o[:, :], %a
}
func @main(%x: f32[4,12]) -> f32[4,4] {
  %out = pallas_call[kernel=@k, grid=(2, 3), in_specs=[spec((2, 4), @in)],
                     out_specs=[spec((2, 4), @row)], out_shapes=[f32[4,4]],
                     dimension_semantics=(parallel, arbitrary)] %x
  return %out
}
)";
  Array x = random(DType::f32, {4, 12}, 3);
  std::vector<double> sums(16, 0.0);
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 12; ++c) sums[r * 4 + c % 4] += static_cast<float>(x.get(r * 12 + c));
  RunOptions o;
  o.uninit = RunOptions::Uninit::zero;
  o.cores = 2;  // one row block per core: independent sums
  check_close(run(text, {x}, o)[0], sums, 1e-6);
  o.cores = 1;  // block 1 starts from block 0's final contents
  std::vector<double> carried = sums;
  for (int e = 8; e < 16; ++e) carried[e] += sums[e - 8];
  check_close(run(text, {x}, o)[0], carried, 1e-6);
}

TEST_CASE("Element block dims with padding, Squeezed dims, BoundedSlice dims") {
  // out[j] = x[j-1] + x[j] + x[j+1] with zero padding: blocks of 6 elements
  // starting at 4i in x padded by one element on each side.
  const char* halo = R"(
index_map @win(%i: i32) -> i32 {
  %s = mul %i, 4
  return %s
}
index_map @blk(%i: i32) -> i32 {
  return %i
}
kernel @k(%x: ref<f32[6], vmem>, %o: ref<f32[4], vmem>) {
  %a = get %x[0:4]
  %b = get %x[1:5]
  %c = get %x[2:6]
  %s = add %a, %b
  %t = add %s, %c
  swap %o[:], %t
}
func @main(%x: f32[16]) -> f32[16] {
  %out = pallas_call[kernel=@k, grid=(4), in_specs=[spec((element(6, 1, 1)), @win)],
                     out_specs=[spec((4), @blk)], out_shapes=[f32[16]]] %x
  return %out
}
)";
  Array x = random(DType::f32, {16}, 4);
  std::vector<double> want(16);
  for (int j = 0; j < 16; ++j) {
    float s = (j > 0 ? static_cast<float>(x.get(j - 1)) : 0.0f) + static_cast<float>(x.get(j));
    want[j] = s + (j < 15 ? static_cast<float>(x.get(j + 1)) : 0.0f);
  }
  RunOptions zero;
  zero.uninit = RunOptions::Uninit::zero;
  check_close(run(halo, {x}, zero)[0], want, 1e-6);

  // Rows of 40 elements cut into bounded slices of at most 16: (0, 16), (16, 16), (32, 8).
  const char* bounded = R"(
index_map @sl(%i: i32) -> (i32, i32, i32) {
  %s = mul %i, 16
  %left = sub 40, %s
  %n = min %left, 16
  return 0, %s, %n
}
kernel @k(%x: ref<f32[16], vmem>, %o: ref<f32[16], vmem>) {
  %a = get %x[:]
  %b = mul %a, 3.0
  swap %o[:], %b
}
func @main(%x: f32[2,40]) -> f32[2,40] {
  %out = pallas_call[kernel=@k, grid=(3), in_specs=[spec((squeezed, bounded(16)), @sl)],
                     out_specs=[spec((squeezed, bounded(16)), @sl)], out_shapes=[f32[2,40]]] %x
  return %out
}
)";
  Array y = random(DType::f32, {2, 40}, 5);
  Array out = run(bounded, {y})[0];
  for (int j = 0; j < 40; ++j) CHECK(out.get(j) == static_cast<float>(y.get(j)) * 3.0f);
  CHECK(std::isnan(out.get(40)));  // row 1 is never written: uninitialized output
}

TEST_CASE("input_output_aliases: the output starts as the input and is exempt from revisiting") {
  const char* text = R"(
index_map @first(%i: i32) -> i32 {
  %r = rem %i, 2
  return %r
}
kernel @k(%x: ref<f32[4], vmem>, %o: ref<f32[4], vmem>) {
  %a = get %x[:]
  %b = mul %a, 2.0
  swap %o[:], %b
}
func @main(%x: f32[12]) -> f32[12] {
  %out = pallas_call[kernel=@k, grid=(3), in_specs=[spec((4), @first)],
                     out_specs=[spec((4), @first)], out_shapes=[f32[12]],
                     input_output_aliases=[(0, 0)], dimension_semantics=(arbitrary)] %x
  return %out
}
)";
  Array x = iota(DType::f32, {12});
  // Iterations touch blocks 0, 1, 0: block 0 is doubled twice, block 1 once, block 2 untouched.
  check_close(run(text, {x})[0], {0, 4, 8, 12, 8, 10, 12, 14, 8, 9, 10, 11}, 0);
}

TEST_CASE("input_output_aliases count scalar-prefetch operands as inputs, as JAX does") {
  // With one prefetch operand, (1, 0) aliases the first array input %x; %y
  // has the same type, so the old numbering (prefetch skipped) aliased %y.
  const char* text = R"(
index_map @at(%i: i32, %s: ref<i32[1], smem>) -> i32 {
  return %i
}
kernel @k(%s: ref<i32[1], smem>, %x: ref<f32[4], vmem>, %y: ref<f32[4], vmem>, %o: ref<f32[4], vmem>) {
  %a = get %x[:]
  %b = mul %a, 2.0
  swap %o[:], %b
}
func @main(%s: i32[1], %x: f32[8], %y: f32[8]) -> f32[8] {
  %out = pallas_call[kernel=@k, grid=(1), num_scalar_prefetch=1, in_specs=[spec((4), @at), spec((4), @at)],
                     out_specs=[spec((4), @at)], out_shapes=[f32[8]], input_output_aliases=[(1, 0)]] %s, %x, %y
  return %out
}
)";
  Array x = iota(DType::f32, {8}), y = iota(DType::f32, {8}, 100);
  // Block 0 is 2x; block 1, which no grid point writes, keeps the aliased input's values.
  check_close(run(text, {Array::from_values(DType::i32, {1}, {0}), x, y})[0], {0, 2, 4, 6, 4, 5, 6, 7}, 0);
}

TEST_CASE("dynamic grid sizes and scalar prefetch") {
  const char* text = R"(
index_map @pick(%i: i32, %perm: ref<i32[4], smem>) -> i32 {
  %p = get %perm[%i]
  return %p
}
index_map @own(%i: i32, %perm: ref<i32[4], smem>) -> i32 {
  return %i
}
kernel @k(%perm: ref<i32[4], smem>, %x: ref<f32[2], vmem>, %o: ref<f32[2], vmem>) {
  %i = program_id[axis=0]
  %n = num_programs[axis=0]
  %p = get %perm[%i]
  %pf = convert_element_type[new_dtype=f32] %p
  %nf = convert_element_type[new_dtype=f32] %n
  %a = get %x[:]
  %b = mul %a, %nf
  %c = add %b, %pf
  swap %o[:], %c
}
func @main(%n: i32, %perm: i32[4], %x: f32[8]) -> f32[8] {
  %out = pallas_call[kernel=@k, grid=(?), num_scalar_prefetch=1, in_specs=[spec((2), @pick)],
                     out_specs=[spec((2), @own)], out_shapes=[f32[8]], dimension_semantics=(parallel)] %n, %perm, %x
  return %out
}
)";
  Array perm = Array::from_values(DType::i32, {4}, {3, 0, 2, 1});
  Array x = iota(DType::f32, {8}, 1);
  RunOptions zero;
  zero.uninit = RunOptions::Uninit::zero;
  Array out = run(text, {Array::scalar(DType::i32, 4), perm, x}, zero)[0];
  std::vector<double> want(8);
  for (int i = 0; i < 4; ++i)
    for (int e = 0; e < 2; ++e) want[i * 2 + e] = x.get(perm.get_int(i) * 2 + e) * 4 + perm.get_int(i);
  check_close(out, want, 0);
  // A dynamic size of 3 leaves the last block unwritten (zero-initialized here).
  out = run(text, {Array::scalar(DType::i32, 3), perm, x}, zero)[0];
  CHECK(out.get(6) == 0);
  CHECK(out.get(0) == x.get(6) * 3 + 3);
}

TEST_CASE("cores split the parallel prefix as JAX's interpret mode does; grid seeds shuffle parallel axes; trace file") {
  std::string path = "test_interpreter_trace.txt";
  const char* text = R"(
index_map @ij(%i: i32, %j: i32) -> (i32, i32) {
  return %i, %j
}
kernel @k(%x: ref<f32[8,128], vmem>, %o: ref<f32[8,128], vmem>) {
  %a = get %x[:, :]
  swap %o[:, :], %a
}
func @main(%x: f32[24,256]) -> f32[24,256] {
  %out = pallas_call[kernel=@k, grid=(3, 2), in_specs=[spec((8, 128), @ij)],
                     out_specs=[spec((8, 128), @ij)], out_shapes=[f32[24,256]],
                     dimension_semantics=(parallel, arbitrary)] %x
  return %out
}
)";
  Array x = random(DType::f32, {24, 256}, 6);
  RunOptions o;
  o.cores = 2;
  o.trace_file = path;
  check_close(run(text, {x}, o)[0], values(x), 0);
  std::vector<std::string> lines = read_lines(path);
  std::sort(lines.begin(), lines.end());
  // 3 parallel points over 2 cores: ceil(3/2) = 2 points (4 iterations) for core 0, the rest for core 1.
  CHECK(lines == std::vector<std::string>{"device 0 core 0 point (0, 0)", "device 0 core 0 point (0, 1)",
                                          "device 0 core 0 point (1, 0)", "device 0 core 0 point (1, 1)",
                                          "device 0 core 1 point (2, 0)", "device 0 core 1 point (2, 1)"});
  // With a seed, the parallel axis is permuted, the arbitrary one is not.
  bool some_shuffled = false;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    o.cores = 1;
    o.grid_seed = seed;
    check_close(run(text, {x}, o)[0], values(x), 0);
    std::vector<std::string> l = read_lines(path);
    REQUIRE(l.size() == 6);
    for (int p = 0; p < 3; ++p) {
      CHECK(l[2 * p].substr(0, 22) == l[2 * p + 1].substr(0, 22));
      CHECK(l[2 * p].back() == ')');
      CHECK(l[2 * p].find(", 0)") != std::string::npos);
      CHECK(l[2 * p + 1].find(", 1)") != std::string::npos);
    }
    some_shuffled |= l[0] != "device 0 core 0 point (0, 0)" || l[2] != "device 0 core 0 point (1, 0)";
  }
  CHECK(some_shuffled);
  std::remove(path.c_str());
}

TEST_CASE("grid seed orders are permutations, shuffled or (past a million points) affine") {
  for (int64_t n : {int64_t{2}, int64_t{7}, int64_t{1000}, AxisOrder::kShuffleLimit + 7}) {
    CAPTURE(n);
    std::vector<char> seen(static_cast<size_t>(n), 0);
    std::mt19937_64 rng(3);
    AxisOrder order(n, rng);
    int64_t bad = 0, moved = 0;  // counted, not CHECKed per point: a million of them
    for (int64_t i = 0; i < n; ++i) {
      int64_t c = order.at(i);
      if (c < 0 || c >= n || seen[static_cast<size_t>(c)]) {
        ++bad;
        continue;
      }
      seen[static_cast<size_t>(c)] = 1;
      moved += c != i;
    }
    CHECK(bad == 0);
    if (n > 2) CHECK(moved > 0);
  }
  std::mt19937_64 rng(1);
  CHECK(AxisOrder(1, rng).at(0) == 0);
  CHECK(AxisOrder().at(5) == 5);
}

// A grid of 2^31 - 1 points: --grid-seed allocates nothing per point, and
// every iteration counts toward --max-steps (the kernel is empty).
TEST_CASE("huge grids: grid seeds cost no memory and max_steps counts grid iterations") {
  const char* text = R"(
kernel @k() { }
func @main() {
  pallas_call[kernel=@k, grid=(2147483647), in_specs=[], out_specs=[], out_shapes=[], dimension_semantics=(parallel)]
  return
}
)";
  RunOptions o;
  o.max_steps = 5000;
  o.grid_seed = 9;
  CHECK(contains(run_error(text, {}, o), "stopped after 5000 steps"));
  const char* overflow = R"(
kernel @k() { }
func @main() {
  pallas_call[kernel=@k, grid=(2147483647, 2147483647, 2147483647), in_specs=[], out_specs=[], out_shapes=[]]
  return
}
)";
  CHECK(contains(run_error(overflow, {}, o), "has more than 2^63 points"));
}

// Block copy-outs into an output of 16 MiB or more use non-temporal stores
// (region.cpp); blocks 99 floats wide start rows at unaligned addresses, so
// the aligned middle and the unaligned head and tail are all exercised.
TEST_CASE("a large output written block by block with streaming stores is exact") {
  const char* text = R"(
index_map @ij(%i: i32, %j: i32) -> (i32, i32) { return %i, %j }
kernel @k(%x: ref<f32[256,99], vmem>, %o: ref<f32[256,99], vmem>) {
  %a = get %x[:, :]
  %b = mul %a, 2.0
  %c = add %b, 1.0
  swap %o[:, :], %c
}
func @main(%x: f32[2048,2079]) -> f32[2048,2079] {
  %out = pallas_call[kernel=@k, grid=(8, 21), in_specs=[spec((256, 99), @ij)], out_specs=[spec((256, 99), @ij)],
                     out_shapes=[f32[2048,2079]], dimension_semantics=(parallel, parallel)] %x
  return %out
}
)";
  Array x = random(DType::f32, {2048, 2079}, 12);
  Array out = run(text, {x})[0];
  REQUIRE(out.storage_bytes() >= (size_t{16} << 20));
  const float* px = x.data<float>();
  const float* po = out.data<float>();
  int64_t wrong = 0;
  for (int64_t i = 0; i < x.size(); ++i) wrong += po[i] != px[i] * 2.0f + 1.0f;
  CHECK(wrong == 0);
}

TEST_CASE("parallel dimensions must be a prefix of the grid") {
  const char* text = R"(
index_map @ij(%i: i32, %j: i32) -> (i32, i32) {
  return %i, %j
}
kernel @k(%x: ref<f32[8,128], vmem>, %o: ref<f32[8,128], vmem>) {
  %a = get %x[:, :]
  swap %o[:, :], %a
}
func @main(%x: f32[16,256]) -> f32[16,256] {
  %out = pallas_call[kernel=@k, grid=(2, 2), in_specs=[spec((8, 128), @ij)],
                     out_specs=[spec((8, 128), @ij)], out_shapes=[f32[16,256]],
                     dimension_semantics=(arbitrary, parallel)] %x
  return %out
}
)";
  CHECK(contains(run_error(text, {Array(DType::f32, {16, 256})}),
                 "Dimensions with parallel semantics must form a prefix of the grid"));
}

TEST_CASE("an error inside a kernel names the kernel, the grid point and the op's location") {
  const char* text = R"(
index_map @i0(%i: i32) -> (i32, i32) {
  return %i, 0
}
kernel @k(%x: ref<f32[8,128], vmem>, %o: ref<f32[8,128], vmem>) {
  %i = program_id[axis=0]
  %r = get %x[%i, :]
  swap %o[0, :], %r
}
func @main(%x: f32[80,128]) -> f32[80,128] {
  %out = pallas_call[kernel=@k, grid=(10), in_specs=[spec((8, 128), @i0)],
                     out_specs=[spec((8, 128), @i0)], out_shapes=[f32[80,128]]] %x
  return %out
}
)";
  std::string err = run_error(text, {Array(DType::f32, {80, 128})});
  CHECK(contains(err, "test.tsr:7:3: error: get: Out-of-bounds read of vmem buffer of input \"x\" block (device 0, core 0): "
                      "reading [8, 0:128] but buffer has shape (8, 128) (in kernel @k in iteration (8,))"));
}

TEST_CASE("program_id and num_programs skip vmapped grid axes") {
  // Grid (3, 2) with axis 0 vmapped: the kernel sees a grid of rank 1 (size 2).
  const char* text = R"(
index_map @m(%b: i32, %i: i32) -> (i32, i32) {
  return %b, %i
}
kernel @k(%o: ref<i32[1], vmem>) {
  %i = program_id[axis=0]
  %n = num_programs[axis=0]
  %t = mul %n, 10
  %v = add %t, %i
  %vb = broadcast_in_dim[shape=(1), broadcast_dimensions=()] %v
  swap %o[:], %vb
}
func @main() -> i32[3,2] {
  %out = pallas_call[kernel=@k, grid=(3, 2), in_specs=[], out_specs=[spec((squeezed, 1), @m)], out_shapes=[i32[3,2]],
                     vmapped_dims=(0), dimension_semantics=(parallel, arbitrary)]
  return %out
}
)";
  Array out = run(text, {})[0];
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t i = 0; i < 2; ++i) CHECK(out.get_int(b * 2 + i) == 20 + i);
}

TEST_CASE("an output block no grid point writes is uninitialized, on any number of cores and seeds") {
  // Blocked output of 4 blocks of 8 rows; the grid writes blocks 0, 2 and 3
  // (block 1 never). The interpreter fills output buffers lazily (only where no
  // block was copied out, at exit), so this checks the unwritten block still
  // reads as uninitialized memory and the written ones are not clobbered.
  const char* text = R"(
index_map @skip1(%i: i32) -> (i32, i32) {
  %ge = ge %i, 1
  %one = convert_element_type[new_dtype=i32] %ge
  %b = add %i, %one
  return %b, 0
}
kernel @k(%x: ref<f32[8,128], vmem>, %o: ref<f32[8,128], vmem>) {
  %a = get %x[:, :]
  %b = add %a, 1.0
  swap %o[:, :], %b
}
func @main(%x: f32[32,128]) -> f32[32,128] {
  %out = pallas_call[kernel=@k, grid=(3), in_specs=[spec((8, 128), @skip1)], out_specs=[spec((8, 128), @skip1)],
                     out_shapes=[f32[32,128]], dimension_semantics=(parallel)] %x
  return %out
}
)";
  Array x = random(DType::f32, {32, 128}, 9);
  for (int cores : {1, 2}) {
    for (uint64_t seed : {0u, 1u, 2u}) {
      RunOptions o;
      o.cores = cores;
      o.grid_seed = seed;
      CAPTURE(cores);
      CAPTURE(seed);
      Array out = run(text, {x}, o)[0];
      for (int64_t e = 0; e < 32 * 128; ++e) {
        bool unwritten = e / 128 >= 8 && e / 128 < 16;
        if (unwritten) REQUIRE(std::isnan(out.get(e)));
        else REQUIRE(out.get(e) == static_cast<float>(x.get(e)) + 1.0f);
      }
      o.uninit = RunOptions::Uninit::zero;
      Array z = run(text, {x}, o)[0];
      CHECK(z.get(8 * 128) == 0.0);
      CHECK(z.get(16 * 128) == static_cast<float>(x.get(16 * 128)) + 1.0f);
    }
  }
}

// In Pallas the grid_names are named axes inside the
// kernel: axis_index of one is that axis's program id. The kernel writes
// 10 * axis_index(rows) + axis_index(cols) into each 1x1 block, on one and two
// cores, in a shuffled order.
TEST_CASE("axis_index of a grid axis name is that axis's program id") {
  const char* text = R"(
index_map @ij(%i: i32, %j: i32) -> (i32, i32) { return %i, %j }
kernel @k(%o: ref<i32[1,1], smem>) {
  %r = axis_index[axis_name=rows]
  %c = axis_index[axis_name=cols]
  %p = program_id[axis=1]
  %r10 = mul %r, 10
  %v = add %r10, %c
  %check = sub %c, %p
  %w = add %v, %check
  swap %o[0, 0], %w
}
func @main() -> i32[3,4] {
  %out = pallas_call[kernel=@k, grid=(3, 4), grid_names=(rows, cols), in_specs=[],
                     out_specs=[spec((1, 1), @ij, mem=smem)], out_shapes=[i32[3,4]],
                     dimension_semantics=(parallel, arbitrary)]
  return %out
}
)";
  std::vector<double> want;
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) want.push_back(10 * r + c);
  for (int cores : {1, 2}) {
    RunOptions o;
    o.cores = cores;
    o.grid_seed = 5;
    check_close(run(text, {}, o)[0], want, 0);
  }
}

// An index map gets the program ids as parameters; one
// that calls program_id is rejected by the verifier, and the interpreter,
// given the module unverified, reports it at the op instead of reading a grid
// point that is not set yet (it crashed on the first block).
TEST_CASE("program_id inside an index map is a located error, never a crash") {
  const char* text = R"(
index_map @bad(%i: i32) -> i32 {
  %p = program_id[axis=0]
  return %p
}
kernel @k(%x: ref<f32[8], vmem>, %o: ref<f32[8], vmem>) {
  %a = get %x[:]
  swap %o[:], %a
}
func @main(%x: f32[16]) -> f32[16] {
  %out = pallas_call[kernel=@k, grid=(2), in_specs=[spec((8), @bad)], out_specs=[spec((8), @bad)], out_shapes=[f32[16]]] %x
  return %out
}
)";
  Module m = parse_module(text, "test.tsr");
  std::vector<Diagnostic> d = verify_module(m);
  REQUIRE(!d.empty());
  CHECK(d[0].str() == "test.tsr:3:3: error: program_id inside an index map: an index map gets the program ids as its "
                      "parameters; use the parameter of axis 0");
  std::string e;
  try {
    run_function(m, "main", {random(DType::f32, {16}, 1)});
  } catch (const Error& err) {
    e = err.formatted();
  }
  CAPTURE(e);
  CHECK(contains(e, "test.tsr:3:3: error: program_id: an index map cannot read the grid point: it gets the program ids "
                    "as its parameters"));
  CHECK(contains(e, "(in index map @bad of input \"x\" in iteration (0,))"));
}
