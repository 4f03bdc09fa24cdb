// The output-coverage claim (every element of an output block that is copied
// out was written during the block's visit) and the core-races claim (cores
// of a core_map never touch the same elements of a shared Ref unordered).
// Every FAILED is reproduced by the interpreter: an unwritten element holds
// the uninitialized fill (it changes with `--uninit`, on every core count and
// grid seed), a core race is what `run --detect-races` reports.
#include <cmath>
#include <filesystem>
#include <optional>

#include "protocol_test_util.h"

using namespace tessera;
using namespace tessera::prove;
using namespace tessera::prove::testing;

namespace {

// x, out: f32[32,128] in 8-row blocks, block (i) at grid point (i, k) of a
// (4, 2) grid, i parallel and k arbitrary; `body` is the kernel's body.
std::string rows_kernel(const std::string& body, const std::string& call_params = "") {
  return "index_map @blk(%i: i32, %k: i32) -> (i32, i32) {\n  return %i, 0\n}\n"
         "kernel @k(%x: ref<f32[8,128], vmem>, %o: ref<f32[8,128], vmem>) {\n" +
         body +
         "}\n"
         "func @main(%x: f32[32,128]) -> f32[32,128] {\n"
         "  %out = pallas_call[kernel=@k, grid=(4, 2), in_specs=[spec((8, 128), @blk)], out_specs=[spec((8, 128), @blk)],\n"
         "                     out_shapes=[f32[32,128]], dimension_semantics=(parallel, arbitrary)" +
         call_params + "] %x\n  return %out\n}\n";
}

// `then` runs when program_id(1) == k; it sees the Refs as %xx and %oo
// (renamed after `tag`, so that a body may hold several).
std::string at_k(int k, const std::string& then, const std::string& tag = "") {
  std::string xx = "%xx" + tag, oo = "%oo" + tag, is = "%is" + tag, kk = "%kk" + tag;
  return "  " + kk + " = program_id[axis=1]\n  " + is + " = eq " + kk + ", " + std::to_string(k) +
         "\n"
         "  cond[branches=[fn(%x0" + tag + ": ref<f32[8,128], vmem>, %o0" + tag + ": ref<f32[8,128], vmem>) { },\n"
         "                 fn(" + xx + ": ref<f32[8,128], vmem>, " + oo + ": ref<f32[8,128], vmem>) {\n" +
         replace_all(replace_all(then, "%xx", xx), "%oo", oo) + "  }]] " + is + ", %x, %o\n";
}

Obligation coverage(const std::string& text) { return find(prove_text(text), "out[0]", "output coverage"); }

interp::Array ramp(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<double>(i % 97) + 1);
  return interp::Array::from_values(DType::f32, s, v);
}

// Runs @main on 1, 2 and 3 cores, in the interpreter's order and two shuffled
// ones, with uninitialized memory as NaN and as zero; returns element `flat`
// of output 0 per run (NaN fill first, then zero fill).
std::vector<std::pair<double, double>> element_per_run(const std::string& text, const std::vector<interp::Array>& inputs,
                                                       int64_t flat) {
  Module m = parse_verified(text);
  std::vector<std::pair<double, double>> out;
  for (int cores : {1, 2, 3})
    for (std::optional<uint64_t> seed : {std::optional<uint64_t>(), std::optional<uint64_t>(1), std::optional<uint64_t>(2)}) {
      double v[2];
      for (int zero = 0; zero < 2; ++zero) {
        interp::RunOptions opts;
        opts.cores = cores;
        opts.grid_seed = seed;
        opts.uninit = zero ? interp::RunOptions::Uninit::zero : interp::RunOptions::Uninit::nan;
        v[zero] = interp::run_function(m, "main", inputs, opts)[0].get(flat);
      }
      out.emplace_back(v[0], v[1]);
    }
  return out;
}

// Every run shows the fill at `flat`: NaN, or 0 under `--uninit zero`.
void check_shows_fill(const std::string& text, const std::vector<interp::Array>& inputs, int64_t flat) {
  for (const auto& [with_nan, with_zero] : element_per_run(text, inputs, flat)) {
    CHECK(std::isnan(with_nan));
    CHECK(with_zero == 0.0);
  }
}

// No run shows the fill at `flat`.
void check_written(const std::string& text, const std::vector<interp::Array>& inputs, int64_t flat) {
  for (const auto& [with_nan, with_zero] : element_per_run(text, inputs, flat)) {
    CHECK(!std::isnan(with_nan));
    CHECK(with_nan == with_zero);
  }
}

const std::string kFull = "  %v = get %x[:, :]\n  swap %o[:, :], %v\n";
const std::string kRow0 = "  %v = get %x[0, :]\n  swap %o[0, :], %v\n";

}  // namespace

TEST_CASE("output coverage: proved when every step, the first or the last step of a visit writes the block") {
  SUBCASE("every step writes all of it") { CHECK(coverage(rows_kernel(kFull)).verdict == Verdict::proved); }
  SUBCASE("zeroed at k == 0, accumulated after (matmul)") {
    std::string body = at_k(0, "    %z = broadcast_in_dim[shape=(8, 128), broadcast_dimensions=()] 0.0:f32\n    swap %oo[:, :], %z\n") +
                       "  %v = get %x[:, :]\n  addupdate %o[:, :], %v\n";
    CHECK(coverage(rows_kernel(body)).verdict == Verdict::proved);
  }
  SUBCASE("written only at the last k") {
    std::string text = rows_kernel(at_k(1, "    %v = get %xx[:, :]\n    swap %oo[:, :], %v\n"));
    CHECK(coverage(text).verdict == Verdict::proved);
    check_written(text, {ramp({32, 128})}, 3 * 128 + 5);
  }
  SUBCASE("rows 0:4 at the first k, rows 4:8 at the last") {
    std::string body = at_k(0, "    %v = get %xx[0:4, :]\n    swap %oo[0:4, :], %v\n", "a") +
                       at_k(1, "    %w = get %xx[4:8, :]\n    swap %oo[4:8, :], %w\n", "b");
    std::string text = rows_kernel(body);
    CHECK(coverage(text).verdict == Verdict::proved);
    check_written(text, {ramp({32, 128})}, 6 * 128 + 1);
  }
  SUBCASE("two stores that together fill the block") {
    std::string body = "  %v = get %x[0:3, :]\n  swap %o[0:3, :], %v\n  %w = get %x[3:8, :]\n  swap %o[3:8, :], %w\n";
    CHECK(coverage(rows_kernel(body)).verdict == Verdict::proved);
  }
}

TEST_CASE("output coverage: rows past the array's end are padding, never read back") {
  // out: f32[12,128] in 8-row blocks; block 1 holds rows 8..11 and 4 rows of
  // padding, of which the kernel writes only the first 4.
  std::string text = R"(
index_map @blk(%i: i32) -> (i32, i32) {
  return %i, 0
}
kernel @k(%x: ref<f32[8,128], vmem>, %o: ref<f32[8,128], vmem>) {
  %v = get %x[0:4, :]
  swap %o[0:4, :], %v
  %i = program_id[axis=0]
  %first = eq %i, 0
  cond[branches=[fn(%x0: ref<f32[8,128], vmem>, %o0: ref<f32[8,128], vmem>) { },
                 fn(%x1: ref<f32[8,128], vmem>, %o1: ref<f32[8,128], vmem>) {
    %w = get %x1[4:8, :]
    swap %o1[4:8, :], %w
  }]] %first, %x, %o
}
func @main(%x: f32[12,128]) -> f32[12,128] {
  %out = pallas_call[kernel=@k, grid=(2), in_specs=[spec((8, 128), @blk)], out_specs=[spec((8, 128), @blk)],
                     out_shapes=[f32[12,128]], dimension_semantics=(parallel)] %x
  return %out
}
)";
  CHECK(coverage(text).verdict == Verdict::proved);
  check_written(text, {ramp({12, 128})}, 11 * 128 + 127);
  // Writing only rows 0:3 at every step leaves row 3 of each block unwritten.
  std::string short_text = replace_all(text, "0:4", "0:3");
  Obligation ob = coverage(short_text);
  CHECK(ob.verdict == Verdict::failed);
  CHECK_HAS(ob.detail, "element (3, ");  // row 3 of a block: array row 3 or 11
  check_shows_fill(short_text, {ramp({12, 128})}, 3 * 128 + 7);
  check_shows_fill(short_text, {ramp({12, 128})}, 11 * 128 + 7);
}

TEST_CASE("output coverage: FAILED when a block is copied out with rows no step writes, on every core count and seed") {
  std::string text = rows_kernel(kRow0);
  std::vector<Obligation> obs = prove_text(text);
  Obligation ob = find(obs, "out[0]", "output coverage");
  REQUIRE(ob.verdict == Verdict::failed);
  CHECK_HAS(ob.detail, "of out[0] is copied out after this step");
  REQUIRE(ob.grid_points.size() == 1);
  CHECK(ob.grid_points[0][1] == 1);  // the visit's last step
  // Every other claim is proved: this is the hole the claim closes.
  for (const Obligation& o : obs)
    if (o.kind != "output coverage") CHECK_MESSAGE(o.verdict == Verdict::proved, o.line());
  check_shows_fill(text, {ramp({32, 128})}, 8 * 128 + 3 * 128);  // row 3 of block 1
  check_written(text, {ramp({32, 128})}, 8 * 128);                // row 0 of block 1

  SUBCASE("an aliased output's block is not the input's: the same") {
    std::string aliased = rows_kernel(kRow0, ", input_output_aliases=[(0, 0)]");
    Obligation a = coverage(aliased);
    CHECK(a.verdict == Verdict::failed);
    check_shows_fill(aliased, {ramp({32, 128})}, 2 * 8 * 128 + 5 * 128);
  }
  SUBCASE("without a grid axis of more than one step") {
    std::string one = replace_all(replace_all(text, "grid=(4, 2)", "grid=(1, 1)"), "f32[32,128]", "f32[8,128]");
    CHECK(coverage(one).verdict == Verdict::failed);
    check_shows_fill(one, {ramp({8, 128})}, 7 * 128);
  }
}

TEST_CASE("output coverage: unknown where writes the claim does not follow may fill the block") {
  SUBCASE("a row per loop iteration") {
    std::string body =
        "  for[body=fn(%r: i32, %xr: ref<f32[8,128], vmem>, %or: ref<f32[8,128], vmem>) {\n"
        "    %v = get %xr[%r, :]\n    swap %or[%r, :], %v\n  }, num_consts=2] 0:i32, 8:i32, %x, %o\n";
    Obligation ob = coverage(rows_kernel(body));
    CHECK(ob.verdict == Verdict::unknown);
    CHECK_HAS(ob.detail, "inside a loop");
    check_written(rows_kernel(body), {ramp({32, 128})}, 8 * 128 + 7 * 128);
  }
  SUBCASE("a middle step of the visit") {
    // Grid (4, 3): only k == 1 writes, neither the first nor the last step.
    std::string text = replace_all(rows_kernel(at_k(1, "    %v = get %xx[:, :]\n    swap %oo[:, :], %v\n")), "grid=(4, 2)",
                                   "grid=(4, 3)");
    Obligation ob = coverage(text);
    CHECK(ob.verdict == Verdict::unknown);
    CHECK_HAS(ob.detail, "an earlier step of its visit");
    check_written(text, {ramp({32, 128})}, 8 * 128 + 2 * 128);
  }
  SUBCASE("a masked store") {
    std::string body =
        "  %v = get %x[:, :]\n  %rows = iota[shape=(8, 128), dimension=0, dtype=i32]\n  %m = lt %rows, 3\n"
        "  store %o[:, :], %v, %m\n";
    Obligation ob = coverage(rows_kernel(body));
    CHECK(ob.verdict == Verdict::unknown);
    CHECK_HAS(ob.detail, "masked store");
    check_shows_fill(rows_kernel(body), {ramp({32, 128})}, 8 * 128 + 5 * 128);
  }
  SUBCASE("under a condition on data") {
    std::string body =
        "  %s = get %x[0, 0]\n  %pos = gt %s, 0.0\n"
        "  cond[branches=[fn(%x0: ref<f32[8,128], vmem>, %o0: ref<f32[8,128], vmem>) { },\n"
        "                 fn(%xx: ref<f32[8,128], vmem>, %oo: ref<f32[8,128], vmem>) {\n"
        "    %v = get %xx[:, :]\n    swap %oo[:, :], %v\n  }]] %pos, %x, %o\n";
    Obligation ob = coverage(rows_kernel(body));
    CHECK(ob.verdict == Verdict::unknown);
    CHECK_HAS(ob.detail, "condition the prover does not model");
  }
}

TEST_CASE("output coverage and core races: every shipped example is proved") {
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(examples_dir())) {
    if (entry.path().extension() != ".tsr") continue;
    std::string name = entry.path().filename().string();
    CAPTURE(name);
    std::vector<Obligation> obs = prove_module(parse_verified(read_file(entry.path())), {});
    for (const Obligation& o : obs)
      if (o.kind == "output coverage" || o.kind == "core races") {
        CHECK_MESSAGE(o.verdict == Verdict::proved, o.line());
        ++checked;
      }
  }
  CHECK(checked >= 12);  // every output with blocks, and the core_maps
}

namespace {

// The cores of a 2-core mesh over a shared f32[4,128] VMEM Ref; `body` runs
// on each, with %c its core index.
std::string core_map_kernel(const std::string& body) {
  return "func @main(%r: ref<f32[4,128], vmem>) -> f32[4,128] {\n"
         "  core_map[body=fn(%rr: ref<f32[4,128], vmem>) {\n"
         "    %c = axis_index[axis_name=core]\n" +
         body +
         "  }, mesh_axes=(core), mesh_shape=(2)] %r\n"
         "  %v = get %r[:, :]\n  return %v\n}\n";
}

Obligation core_races(const std::string& text) { return find(prove_text(text), "kernel", "core races"); }

const std::vector<interp::Array> kSharedRef = {interp::Array(DType::f32, {4, 128})};

}  // namespace

TEST_CASE("core races: proved when the cores write disjoint rows, FAILED when one reads what another writes") {
  std::string own_row = core_map_kernel("    %cf = convert_element_type[new_dtype=f32] %c\n    swap %rr[%c, :], %cf\n");
  CHECK(core_races(own_row).verdict == Verdict::proved);
  CHECK(run_races(own_row, kSharedRef).empty());
  CHECK(core_races(kCoreMap).verdict == Verdict::proved);  // DMAs into each core's half

  // Each core reads the whole Ref, then writes its row: core 0 reads row 1 unordered with core 1's write.
  std::string read_all = core_map_kernel(
      "    %all = get %rr[:, :]\n    %s = reduce_sum[axes=(0)] %all\n    swap %rr[%c, :], %s\n");
  Obligation ob = core_races(read_all);
  CHECK(ob.verdict == Verdict::failed);
  CHECK_HAS(ob.detail, "nothing orders them");
  CHECK_HAS(run_races(read_all, kSharedRef), "RACE DETECTED");

  // Both cores write row 0.
  std::string same_row = core_map_kernel("    %cf = convert_element_type[new_dtype=f32] %c\n    swap %rr[0, :], %cf\n");
  CHECK(core_races(same_row).verdict == Verdict::failed);
  CHECK_HAS(run_races(same_row, kSharedRef), "RACE DETECTED");
  // Reads only: no race.
  std::string reads = core_map_kernel("    %all = get %rr[:, :]\n");
  CHECK(core_races(reads).verdict == Verdict::proved);
  CHECK(run_races(reads, kSharedRef).empty());
}

TEST_CASE("core races: unknown, never FAILED, when a semaphore may order the cores") {
  // Core 0 writes row 0, then signals core 1, which waits and reads it: ordered.
  std::string ordered = core_map_kernel(R"(    %dev = device_id
    run_scoped[body=fn(%ref: ref<f32[4,128], vmem>, %cc: i32, %d: i32, %s: ref<sem, semaphore>) {
      %first = eq %cc, 0
      %other = sub 1, %cc
      cond[branches=[fn(%r1: ref<f32[4,128], vmem>, %s1: ref<sem, semaphore>, %d1: i32, %o1: i32) {
        semaphore_wait %s1, 1
        %v = get %r1[0, :]
        swap %r1[1, :], %v
      }, fn(%r0: ref<f32[4,128], vmem>, %s0: ref<sem, semaphore>, %d0: i32, %o0: i32) {
        swap %r0[0, :], 1.0
        semaphore_signal %s0, 1, %d0, %o0
      }]] %first, %ref, %s, %d, %other
    }] %rr, %c, %dev
)");
  Obligation ob = core_races(ordered);
  CHECK(ob.verdict == Verdict::unknown);
  CHECK_HAS(ob.detail, "semaphore");
  CHECK(run_races(ordered, kSharedRef).empty());
}
