// `tessera cost` (analysis/cost/cost.h) against hand-derived formulas, and
// against the counters of `tessera run --stats` on every kernel of the zoo.
#include <doctest/doctest.h>

#include <filesystem>

#include "analysis/cost/cost.h"
#include "interpreter/inputs.h"
#include "interpreter/interpreter.h"
#include "ir/grid_mapping.h"
#include "ir/op_cost.h"
#include "tests/test_util.h"

using namespace tessera;
using namespace tessera::testing;

namespace {

constexpr int64_t kF32 = 4;

cost::CostReport cost_of(const Module& m, const std::string& func = "main", const cost::PrefetchValues& prefetch = {}) {
  cost::CostOptions opts;
  opts.prefetch = prefetch;
  opts.index_maps = interp::index_map_function;
  return cost::compute_cost(m, *m.entry(func), opts);
}

const cost::KernelCost& only_kernel(const cost::CostReport& r) {
  REQUIRE(r.kernels.size() == 1);
  return r.kernels[0];
}

}  // namespace

TEST_CASE("op costs: elementwise, transcendental, reductions, dot_general, addupdate") {
  CHECK(prim("exp").transcendental);
  CHECK(prim("tanh").transcendental);
  CHECK(prim("pow").transcendental);
  CHECK_FALSE(prim("add").transcendental);
  CHECK_FALSE(prim("floor").transcendental);  // piecewise constant: a flop
  Module m = parse(R"(
func @main(%x: f32[8,16], %y: f32[16,4], %r: ref<f32[8,16], vmem>) -> f32[8,4] {
  %a = add %x, %x
  %e = exp %x
  %s = reduce_sum[axes=(1)] %x
  %c = cumsum[axis=1] %x
  %d = dot_general[lhs_contracting=(1), rhs_contracting=(0)] %x, %y
  addupdate %r[:, :], %x
  %g = get %r[0:4, :]
  return %d
}
)");
  const auto& ops = m.entry("main")->ops();
  auto flops = [&](size_t i) { return op_cost(ops[i]).flops; };
  CHECK(flops(0) == 128);
  CHECK(op_cost(ops[1]).flops == 0);
  CHECK(op_cost(ops[1]).transcendentals == 128);
  CHECK(flops(2) == 128 - 8);       // n - 1 per output row
  CHECK(flops(3) == 128 - 8);       // n - 1 per line
  CHECK(flops(4) == 2 * 8 * 4 * 16);  // 2 M N K
  CHECK(flops(5) == 128);
  CHECK(flops(6) == 0);
  // Every primitive has a cost rule.
  for (const Primitive* p : registry().all()) CHECK_MESSAGE(cost_rules().find(*p), p->name);
}

TEST_CASE("matmul: 2*M*N*K flops, x re-read per j, y per i, out written once") {
  Module m = parse_file(example_path("matmul.tsr").string());
  cost::CostReport r = cost_of(m);
  const cost::KernelCost& k = only_kernel(r);
  CHECK(k.call == "matmul");
  CHECK(k.exact);
  CHECK(k.runs == 1);
  const int64_t M = 512, K = 256, N = 384, grid_j = 3, grid_i = 4, k_steps = 2;
  // The dot products, the accumulation of the k partial products (addupdate)
  // and the `k == 0` test at each of the 24 grid points.
  CHECK(k.figures.flops == 2 * M * N * K + M * N * k_steps + grid_i * grid_j * k_steps);
  CHECK(k.figures.transcendentals == 0);
  CHECK(k.figures.bytes_in == M * K * kF32 * grid_j + K * N * kF32 * grid_i);
  CHECK(k.figures.bytes_out == M * N * kF32);
  CHECK(k.figures.bytes_dma == 0);
  CHECK(r.total() == k.figures);
  CHECK(cost::intensity(k.figures) == doctest::Approx(double(k.figures.flops) / double(k.figures.bytes())));
}

TEST_CASE("flash attention: per grid point, plus init and finalize steps decided by the grid point") {
  Module m = parse_file(example_path("flash_attention.tsr").string());
  cost::CostReport r = cost_of(m);
  const cost::KernelCost& k = only_kernel(r);
  CHECK(k.exact);
  const int64_t B = 64, heads = 4, q_blocks = 4, kv_blocks = 4;
  const int64_t points = heads * q_blocks * kv_blocks;
  const int64_t tile = B * B;
  // Per point: q k^T and p v (2 B^3 each); four B x B elementwise ops (scale,
  // shift, rescale acc, add pv); two row reductions (B*B - B each); four row
  // ops (max, m_shift, l_scaled, l_new); three scalar ops on program ids.
  const int64_t per_point = 2 * (2 * B * B * B) + 4 * tile + 2 * (tile - B) + 4 * B + 3;
  // The finalize division runs once per (head, q block).
  CHECK(k.figures.flops == points * per_point + heads * q_blocks * tile);
  CHECK(k.figures.transcendentals == points * (B + tile));  // exp of the row shift and of the scores
  const int64_t block_bytes = tile * kF32;
  // q: one block per (h, qi), kept across ki; k and v: a new block every point.
  CHECK(k.figures.bytes_in == heads * q_blocks * block_bytes + 2 * points * block_bytes);
  CHECK(k.figures.bytes_out == heads * q_blocks * block_bytes);
}

TEST_CASE("every example: tessera cost equals the interpreter's --stats counters") {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(examples_dir())) {
    if (entry.path().extension() != ".tsr") continue;
    ++files;
    INFO(entry.path().string());
    Module m = parse_file(entry.path().string());
    const Body& f = *m.entry("main");
    std::vector<interp::Array> inputs;
    for (size_t i = 0; i < f.params().size(); ++i)
      inputs.push_back(interp::random_array(f.params()[i]->type.array_type(), 7 * 1000003 + i));
    // Scalar prefetch operands are parameters of @main here: their run-time values.
    auto prefetch = [&](const Op& call) {
      GridMapping g = grid_mapping(call);
      std::vector<interp::Array> out;
      for (int j = 0; j < g.num_scalar_prefetch(); ++j) {
        const Value& v = call.operands.at(g.scalar_prefetch_operand(j));
        for (size_t i = 0; i < f.params().size(); ++i)
          if (v.is_var() && v.var() == f.params()[i]) out.push_back(inputs[i]);
      }
      REQUIRE(static_cast<int>(out.size()) == g.num_scalar_prefetch());
      return out;
    };
    cost::CostReport r = cost_of(m, "main", prefetch);
    CHECK(r.exact());
    interp::RunStats stats;
    interp::RunOptions opts;
    opts.stats = &stats;
    interp::run_function(m, "main", inputs, opts);
    CHECK(r.total() == stats.total());
    CHECK(figures_str(r.total()) == figures_str(stats.total()));
    for (const interp::RunStats::Scope& s : stats.scopes()) {
      if (!s.op) {
        CHECK(figures_str(r.outside.figures) == figures_str(s.figures));
        continue;
      }
      const cost::KernelCost* k = nullptr;
      for (const cost::KernelCost& c : r.kernels)
        if (c.op == s.op) k = &c;
      REQUIRE(k);
      CHECK(k->runs == s.runs);
      CHECK(figures_str(k->figures) == figures_str(s.figures));
    }
    size_t kernels_run = 0;
    for (const interp::RunStats::Scope& s : stats.scopes()) kernels_run += s.op != nullptr;
    CHECK(r.kernels.size() == kernels_run);
    CHECK(r.total().flops + r.total().bytes() > 0);  // each example does something
  }
  CHECK(files >= 12);
}

TEST_CASE("a cond on data counts its most costly branch, noted") {
  Module m = parse(R"(
kernel @k(%x: ref<f32[8], vmem>, %o: ref<f32[8], vmem>) {
  %v = get %x[:]
  %s = reduce_sum[axes=(0)] %v
  %p = gt %s, 0.0
  %r = cond[branches=[fn(%a: f32[8]) -> f32[8] { return %a },
                      fn(%b: f32[8]) -> f32[8] { %e = exp %b
                                                 %t = mul %e, %e
                                                 return %t }]] %p, %v
  swap %o[:], %r
}
func @main(%x: f32[16]) -> f32[16] {
  %y = pallas_call[kernel=@k, grid=(2), in_specs=[spec((8), @i)], out_specs=[spec((8), @i)], out_shapes=[f32[16]]] %x
  return %y
}
index_map @i(%i: i32) -> (i32) {
  return %i
}
)");
  cost::CostReport r = cost_of(m);
  const cost::KernelCost& k = only_kernel(r);
  CHECK_FALSE(k.exact);
  REQUIRE(k.notes.size() == 1);
  CHECK(k.notes[0] == "t.tsr:6:3: cond on a value known only at run time: its most costly branch counted");
  CHECK(k.figures.flops == 2 * (7 + 1 + 8));
  CHECK(k.figures.transcendentals == 2 * 8);
  CHECK_HAS(cost::format_report(r), "total (an upper bound):");
}

TEST_CASE("errors: figures not multilinear in a dynamic grid size, data-dependent trip counts, missing prefetch values") {
  // Each grid point loops num_programs times: n^2 steps in all.
  Module dyn = parse(R"(
kernel @k(%x: ref<f32[8], vmem>, %o: ref<f32[8], vmem>) {
  %n = num_programs[axis=0]
  %v = get %x[:]
  %r = for[body=fn(%i: i32, %a: f32[8]) -> f32[8] { %b = add %a, %a
                                                   return %b }] 0:i32, %n, %v
  swap %o[:], %r
}
index_map @i(%i: i32) -> (i32) {
  return %i
}
func @main(%n: i32, %x: f32[64]) -> f32[64] {
  %y = pallas_call[kernel=@k, grid=(-1), in_specs=[spec((8), @i)], out_specs=[spec((8), @i)], out_shapes=[f32[64]]] %n, %x
  return %y
}
)");
  CHECK(error_of([&] { cost_of(dyn); }) ==
        "t.tsr:13:3: error: cost: the figures of this kernel are not a sum of products of the dynamic grid sizes (each "
        "to the power 1 at most): a loop or a copy counted per grid point per grid point?");
  Module loop = parse(R"(
func @main(%n: i32, %x: f32[4]) -> f32[4] {
  %r = for[body=fn(%i: i32, %a: f32[4]) -> f32[4] { %b = add %a, %a
                                                   return %b }] 0:i32, %n, %x
  return %r
}
)");
  CHECK(error_of([&] { cost_of(loop); }) == "t.tsr:3:3: error: cost: the trip count of this for loop depends on data");
  Module gather = parse_file(example_path("gather_rows.tsr").string());
  CHECK_HAS(error_of([&] { cost_of(gather); }), "cost: the values of this pallas_call's scalar-prefetch operands are needed");
}

TEST_CASE("without an index-map evaluator, a kernel with index maps is a located error") {
  // analysis/cost cannot evaluate index maps itself (it sits below the
  // interpreter): a caller that hands in none gets an error, not a guess.
  Module m = parse_file(example_path("matmul.tsr").string());
  cost::CostOptions opts;
  CHECK_HAS(error_of([&] { cost::compute_cost(m, *m.entry("main"), opts); }),
            "error: cost: no index-map evaluator given (CostOptions::index_maps)");
  opts.index_maps = interp::index_map_function;
  CHECK(only_kernel(cost::compute_cost(m, *m.entry("main"), opts)).figures.bytes_out == 512 * 384 * kF32);
}

TEST_CASE("a cost_estimate far from the computed figures is reported") {
  std::string text = example_text("matmul.tsr");
  Module good = parse(replace_once(text, "dimension_semantics=", "cost_estimate=(101056536, 0, 3932160), dimension_semantics="));
  CHECK(cost::check_estimates(cost_of(good)).empty());
  Module close = parse(replace_once(text, "dimension_semantics=", "cost_estimate=(60000000, 0, 2000000), dimension_semantics="));
  CHECK(cost::check_estimates(cost_of(close)).empty());  // within a factor of 2
  Module off = parse(replace_once(text, "dimension_semantics=", "cost_estimate=(1000, 5, 3932160), dimension_semantics="));
  std::vector<cost::EstimateMismatch> w = cost::check_estimates(cost_of(off));
  REQUIRE(w.size() == 2);
  CHECK(w[0].message == "cost_estimate flops 1000 differs from the computed 101056536 (per run) by more than a factor of 2");
  CHECK(w[1].message == "cost_estimate transcendentals 5 differs from the computed 0 (per run) by more than a factor of 2");
}

TEST_CASE("--json") {
  Module m = parse_file(example_path("add.tsr").string());
  std::string j = cost::json_report(cost_of(m));
  CHECK_HAS(j, "{\"function\": \"main\", \"exact\": true,");
  CHECK_HAS(j, "\"call\": \"add\"");
}

namespace {

// The figures of `text`'s @main, computed and counted by the interpreter
// (random inputs), which must agree exactly.
void check_against_interpreter(const std::string& text) {
  Module m = parse(text);
  const Body& f = *m.entry("main");
  std::vector<interp::Array> inputs;
  for (size_t i = 0; i < f.params().size(); ++i)
    inputs.push_back(interp::random_array(f.params()[i]->type.array_type(), 11 + i));
  cost::CostReport r = cost_of(m);
  CHECK(r.exact());
  interp::RunStats stats;
  interp::RunOptions opts;
  opts.stats = &stats;
  interp::run_function(m, "main", inputs, opts);
  CHECK(figures_str(r.total()) == figures_str(stats.total()));
  for (const interp::RunStats::Scope& s : stats.scopes())
    for (const cost::KernelCost& k : r.kernels)
      if (k.op == s.op) {
        CHECK(k.runs == s.runs);
        CHECK(figures_str(k.figures) == figures_str(s.figures));
      }
}

}  // namespace

TEST_CASE("core_map, loops, scan and conds decided per grid point agree with the interpreter") {
  SUBCASE("core_map: the body once per core, its DMAs counted") {
    check_against_interpreter(R"(
func @main(%x: ref<f32[16,128], any>, %y: ref<f32[16,128], any>) -> f32[16,128] {
  core_map[mesh_axes=(c), mesh_shape=(2), body=fn(%s: ref<f32[16,128], any>, %d: ref<f32[16,128], any>) {
    run_scoped[body=fn(%s2: ref<f32[16,128], any>, %d2: ref<f32[16,128], any>, %sem: ref<dma_sem, semaphore>) {
      %c = axis_index[axis_name=c]
      %row = mul %c, 8
      dma_start %s2[ds(%row, 8), :], %d2[ds(%row, 8), :], %sem
      dma_wait %sem, %d2[ds(%row, 8), :]
    }] %s, %d
  }] %x, %y
  %v = run_scoped[body=fn(%yy: ref<f32[16,128], any>, %buf: ref<f32[16,128], vmem>, %sem: ref<dma_sem, semaphore>) -> f32[16,128] {
    dma_start %yy[:, :], %buf[:, :], %sem
    dma_wait %sem, %buf[:, :]
    %r = get %buf[:, :]
    %t = tanh %r
    return %t
  }] %y
  return %v
}
)");
  }
  SUBCASE("a for loop whose trip count is the program id, a while counter, a scan") {
    check_against_interpreter(R"(
kernel @k(%x: ref<f32[8,16], vmem>, %o: ref<f32[8,16], vmem>) {
  %i = program_id[axis=0]
  %v = get %x[:, :]
  %n = add %i, 1
  %w = for[body=fn(%j: i32, %a: f32[8,16]) -> f32[8,16] { %b = mul %a, %a
                                                         return %b }] 0:i32, %n, %v
  %c, %z = while[cond=fn(%c0: i32, %a2: f32[8,16]) -> i1 { %go = lt %c0, 3
                                                         return %go },
                 body=fn(%c2: i32, %a3: f32[8,16]) -> (i32, f32[8,16]) { %c3 = add %c2, 1
                                                                        %a4 = exp %a3
                                                                        return %c3, %a4 }] 0:i32, %w
  %row0 = slice[start_indices=(0, 0), limit_indices=(1, 16)] %z
  %init = reshape[new_sizes=(16)] %row0
  %acc, %ys = scan[body=fn(%acc0: f32[16], %row: f32[16]) -> (f32[16], f32[16]) { %acc1 = add %acc0, %row
                                                                                return %acc1, %acc1 }, length=8, num_carry=1] %init, %z
  swap %o[:, :], %ys
}
index_map @rows(%i: i32) -> (i32, i32) {
  return %i, 0
}
func @main(%x: f32[32,16]) -> f32[32,16] {
  %y = pallas_call[kernel=@k, grid=(4), in_specs=[spec((8, 16), @rows)], out_specs=[spec((8, 16), @rows)], out_shapes=[f32[32,16]]] %x
  return %y
}
)");
  }
}

TEST_CASE("dynamic grid sizes: the figures are polynomials in them, equal to the interpreter's counters") {
  // matmul.tsr with all three grid sizes known only at run time.
  std::string text = example_text("matmul.tsr");
  text = replace_once(text, "func @main(%x: f32[512,256]", "func @main(%gi: i32, %gj: i32, %gk: i32, %x: f32[512,256]");
  text = replace_once(text, "grid=(4, 3, 2)", "grid=(?, ?, ?)");
  text = replace_once(text, "] %x, %y", "] %gi, %gj, %gk, %x, %y");
  Module m = parse(text);
  cost::CostReport r = cost_of(m);
  CHECK(r.sizes == std::vector<std::string>{"%gi", "%gj", "%gk"});
  const cost::KernelCost& k = only_kernel(r);
  // Hand-derived: per grid point 2*128^3 flops of the dot, 128^2 of the
  // addupdate and 1 of the `eq` on program_id; x tile (i, k) re-read at
  // every step since k moves fastest, y tile (k, j) too; out tile (i, j)
  // written once per (i, j).
  const int64_t tile = 128 * 128 * kF32;
  CHECK(cost::evaluate(k.terms, {5, 7, 11}).flops == (2 * 128 * 128 * 128 + 128 * 128 + 1) * int64_t{5 * 7 * 11});
  CHECK(cost::evaluate(k.terms, {5, 7, 11}).bytes_in == 2 * tile * 5 * 7 * 11);
  CHECK(cost::evaluate(k.terms, {5, 7, 11}).bytes_out == tile * 5 * 7);
  CHECK(format_report(r).find("flops 4210689*%gi*%gj*%gk, transcendentals 0, bytes in 131072*%gi*%gj*%gk, out "
                              "65536*%gi*%gj, dma 0") != std::string::npos);
  // At every size the arrays allow (from 2), the interpreter counts the same.
  const Body& f = *m.entry("main");
  for (std::vector<int64_t> sizes : {std::vector<int64_t>{2, 2, 2}, {4, 3, 2}, {3, 2, 2}, {2, 3, 2}}) {
    INFO(sizes[0] << "x" << sizes[1] << "x" << sizes[2]);
    std::vector<interp::Array> inputs;
    for (size_t i = 0; i < 3; ++i) inputs.push_back(interp::Array::scalar(DType::i32, static_cast<double>(sizes[i])));
    for (size_t i = 3; i < f.params().size(); ++i)
      inputs.push_back(interp::random_array(f.params()[i]->type.array_type(), 5 + i));
    interp::RunStats stats;
    interp::RunOptions opts;
    opts.stats = &stats;
    interp::run_function(m, "main", inputs, opts);
    CHECK(figures_str(cost::evaluate(r.total_terms(), sizes)) == figures_str(stats.total()));
    CHECK(figures_str(cost::evaluate(k.terms, sizes)) == figures_str(stats.scopes().at(0).figures));
  }
}
