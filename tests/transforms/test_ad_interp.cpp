// jvp and vmap checked numerically through the interpreter, on the kernel zoo:
//   - jvp tangents equal central finite differences of the original program,
//     both in f64 (the examples with f32 replaced by f64);
//   - vmap equals stacking the outputs of separate calls, with batched and
//     unbatched inputs mixed and batch axes not only in front;
//   - compositions: jvp of vmap against finite differences of vmap, vmap of
//     jvp against stacked jvp calls, and both discharged against the stateful
//     forms;
//   - linearize: the primal function equals the program, and the tangent
//     function applied to a tangent equals the jvp tangent (linearly).
#include <doctest/doctest.h>

#include <functional>
#include <map>
#include <set>
#include <unordered_set>

#include "analysis/prove/prove.h"
#include "ir/primitive.h"

#include "tests/sanitized.h"
#include "tests/transforms/ad_test_util.h"
#include "tests/transforms/diff_test_util.h"

using namespace tessera;
using namespace tessera::testing;

namespace {

// The example with every f32 replaced by f64, so finite differences are exact
// enough to compare with.
Module example_f64(const std::string& name) {
  return parse_module(replace_all(example_text(name), "f32", "f64"), name + " (f64)");
}

// x + h * v, elementwise.
Array axpy(const Array& x, double h, const Array& v) {
  Array out(x.dtype(), x.shape());
  for (int64_t i = 0; i < x.size(); ++i) out.set(i, x.get(i) + h * v.get(i));
  return out;
}

// Runs jvp(m) at random primals and tangents and compares every tangent output
// with (f(x + h v) - f(x - h v)) / 2h, and every primal output with f(x).
void check_jvp_against_fd(const Module& m, uint32_t seed, double tol = 1e-6) {
  Module j = run_pipeline(m, "jvp", {false, true, nullptr, ""});
  const Body& f = *m.entry();
  const Body& jf = *j.entry();
  size_t n = f.params().size();
  std::vector<Array> x = random_inputs(f, seed);
  // A random direction for every differentiated (float) input; zero elsewhere.
  std::vector<Array> v;
  std::map<std::string, size_t> primal_index;
  for (size_t i = 0; i < n; ++i) primal_index[f.params()[i]->name] = i;
  std::vector<Array> jin = x;
  for (size_t i = 0; i < n; ++i) v.push_back(Array(x[i].dtype(), x[i].shape()));
  for (size_t k = n; k < jf.params().size(); ++k) {
    const std::string& name = jf.params()[k]->name;
    REQUIRE(name.size() > 4);
    REQUIRE(name.substr(name.size() - 4) == "_dot");
    size_t i = primal_index.at(name.substr(0, name.size() - 4));
    v[i] = random_array(jf.params()[k]->type, seed + 1000 + static_cast<uint32_t>(k));
    jin.push_back(v[i]);
  }
  REQUIRE(jf.params().size() > n);  // something is differentiated
  std::vector<Array> got = interp::run_function(j, "main", jin);
  std::vector<Array> y = interp::run_function(m, "main", x);
  // Every floating-point output gets a tangent output, in order.
  std::vector<size_t> tangent_of(y.size(), 0);
  size_t float_outputs = 0;
  for (size_t o = 0; o < y.size(); ++o)
    if (is_float(y[o].dtype())) tangent_of[o] = y.size() + float_outputs++;
  REQUIRE(got.size() == y.size() + float_outputs);
  const double h = 1e-5;
  std::vector<Array> xp, xm;
  for (size_t i = 0; i < n; ++i) {
    bool diff = is_float(x[i].dtype());
    xp.push_back(diff ? axpy(x[i], h, v[i]) : x[i]);
    xm.push_back(diff ? axpy(x[i], -h, v[i]) : x[i]);
  }
  std::vector<Array> yp = interp::run_function(m, "main", xp), ym = interp::run_function(m, "main", xm);
  for (size_t o = 0; o < y.size(); ++o) {
    CAPTURE(o);
    require_close(got[o], y[o], 1e-12);
    if (!is_float(y[o].dtype())) continue;
    Array fd(y[o].dtype(), y[o].shape());
    for (int64_t e = 0; e < fd.size(); ++e) fd.set(e, (yp[o].get(e) - ym[o].get(e)) / (2 * h));
    require_close(got[tangent_of[o]], fd, tol);
  }
}

// in_axes as a vector: -1 for `none`.
std::vector<int64_t> parse_axes(const std::string& spec) {
  std::vector<int64_t> out;
  std::stringstream ss(spec);
  for (std::string item; std::getline(ss, item, '|');) out.push_back(item == "none" ? -1 : std::stoll(item));
  return out;
}

// vmap{axis_size=3,in_axes=spec} of m against three separate calls of m.
void check_vmap_against_loop(const Module& m, const std::string& in_axes, uint32_t seed, double tol = 1e-5) {
  const int64_t B = 3;
  Module vm = run_pipeline(m, "vmap{axis_size=3,in_axes=" + in_axes + "}", {false, true, nullptr, ""});
  std::vector<int64_t> axes = parse_axes(in_axes);
  const Body& f = *m.entry();
  REQUIRE(axes.size() == f.params().size());
  std::vector<std::vector<Array>> per_batch(B);
  std::vector<Array> batched;
  for (size_t i = 0; i < axes.size(); ++i) {
    std::vector<Array> parts;
    for (int64_t b = 0; b < B; ++b)
      parts.push_back(random_array(f.params()[i]->type, seed + static_cast<uint32_t>(10 * i + (axes[i] < 0 ? 0 : b)),
                                   /*int_hi=*/8));
    for (int64_t b = 0; b < B; ++b) per_batch[b].push_back(parts[b]);
    batched.push_back(axes[i] < 0 ? parts[0] : stack(parts, axes[i]));
  }
  std::vector<Array> got = interp::run_function(vm, "main", batched);
  for (int64_t b = 0; b < B; ++b) {
    CAPTURE(b);
    std::vector<Array> want = interp::run_function(m, "main", per_batch[b]);
    REQUIRE(got.size() == want.size());
    for (size_t o = 0; o < want.size(); ++o) require_close(batch_element(got[o], b), want[o], tol);
  }
}

}  // namespace

TEST_CASE("jvp equals central finite differences (f64) on the zoo") {
  for (std::string name : {"add.tsr", "matmul.tsr", "softmax.tsr", "layernorm.tsr", "flash_attention.tsr", "cumsum.tsr",
                           "row_sum.tsr", "gather_rows.tsr"}) {
    CAPTURE(name);
    check_jvp_against_fd(example_f64(name), 7);
  }
}

TEST_CASE("jvp with wrt= agrees with finite differences along the chosen input only") {
  Module m = example_f64("matmul.tsr");
  Module j = run_pipeline(m, "jvp{wrt=1}");
  REQUIRE(j.entry()->params().size() == 3);
  CHECK(j.entry()->params()[2]->name == "y_dot");
  std::vector<Array> x = random_inputs(*m.entry(), 3);
  Array dy = random_array(m.entry()->params()[1]->type, 99);
  std::vector<Array> got = interp::run_function(j, "main", {x[0], x[1], dy});
  // matmul is linear in y: the tangent is x @ dy exactly.
  std::vector<Array> want = interp::run_function(m, "main", {x[0], dy});
  require_close(got[1], want[0], 1e-12);
}

TEST_CASE("vmap equals stacking separate calls on the zoo (batch 3, mixed in_axes)") {
  struct Case {
    const char* file;
    const char* in_axes;
  };
  for (Case c : {Case{"add.tsr", "0|none"}, Case{"add.tsr", "1|0"}, Case{"matmul.tsr", "0|0"}, Case{"matmul.tsr", "none|0"},
                 Case{"matmul.tsr", "1|2"}, Case{"softmax.tsr", "2"}, Case{"layernorm.tsr", "1|none|0"},
                 Case{"flash_attention.tsr", "0|none|1"}, Case{"cumsum.tsr", "1"}, Case{"row_sum.tsr", "0"},
                 Case{"gather_rows.tsr", "none|1"}, Case{"gather_rows.tsr", "0|none"}, Case{"dma_pipeline.tsr", "1"},
                 Case{"ring_allreduce.tsr", "0"}, Case{"halo_exchange.tsr", "0"}}) {
    std::string what = std::string(c.file) + " in_axes=" + c.in_axes;
    CAPTURE(what);
    check_vmap_against_loop(example(c.file), c.in_axes, 11);
  }
}

TEST_CASE("compositions: jvp of vmap matches finite differences of vmap; discharged, the same numbers") {
  for (std::string name : {"matmul.tsr", "softmax.tsr", "flash_attention.tsr"}) {
    CAPTURE(name);
    Module m = example_f64(name);
    std::string axes = m.entry()->params().size() == 1 ? "0" : m.entry()->params().size() == 2 ? "0|none" : "0|none|0";
    Module vm = run_pipeline(m, "vmap{axis_size=3,in_axes=" + axes + "}");
    check_jvp_against_fd(vm, 21);
    // jvp of vmap, then discharge: no Ref left, same results as the stateful form.
    Module j = run_pipeline(vm, "jvp");
    Module pure = run_pipeline(j, "discharge,dce", {false, true, nullptr, ""});
    std::vector<Array> in = random_inputs(*j.entry(), 5);
    std::vector<Array> a = interp::run_function(j, "main", in), b = interp::run_function(pure, "main", in);
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) require_close(b[i], a[i], 1e-12);
  }
}

TEST_CASE("jvp of kernels that DMA (a double-buffered pipeline, a ring all-reduce) equals finite differences (f64)") {
  // Each DMA between differentiated Refs is mirrored on the tangent Refs with
  // tangent semaphores; the runs below also check that every semaphore ends
  // at zero and, with the race detector, that no tangent copy races.
  for (std::string name : {"dma_pipeline.tsr", "ring_allreduce.tsr"}) {
    CAPTURE(name);
    Module m = example_f64(name);
    check_jvp_against_fd(m, 41);
    Module j = run_pipeline(m, "jvp", {false, true, nullptr, ""});
    interp::RunOptions racy;
    racy.detect_races = true;
    racy.dma = interp::RunOptions::Dma::eager;
    std::vector<Array> in = random_inputs(*j.entry(), 42);
    std::vector<Array> a = interp::run_function(j, "main", in), b = interp::run_function(j, "main", in, racy);
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) require_close(b[i], a[i], 0);
  }
}

TEST_CASE("jvp of a kernel whose DMA has a dynamic size (ds(0, %n)) equals finite differences (f64)") {
  // The first n rows of x (n from scalar prefetch, 0..7 from the random
  // inputs) land in a zeroed scratch buffer; the output is their sine. The
  // tangent DMA copies the same n rows of the tangent Ref.
  const std::string text = R"(kernel @k(%n_ref: ref<i32[1], smem>, %x: ref<f64[16,8], any>, %o: ref<f64[16,8], vmem>,
          %buf: ref<f64[16,8], vmem>, %sem: ref<dma_sem, semaphore>) {
  %n = get %n_ref[0]
  swap %buf[:, :], 0.0
  dma_start %x[ds(0, %n), :], %buf[ds(0, %n), :], %sem
  dma_wait %sem, %buf[ds(0, %n), :]
  %v = get %buf[:, :]
  %s = sin %v
  swap %o[:, :], %s
}
func @main(%n: i32[1], %x: f64[16,8]) -> f64[16,8] {
  %out = pallas_call[kernel=@k, grid=(1), num_scalar_prefetch=1, in_specs=[spec(mem=any)], out_specs=[spec()],
                     out_shapes=[f64[16,8]], scratch=[ref<f64[16,8], vmem>, ref<dma_sem, semaphore>]] %n, %x
  return %out
}
)";
  Module m = parse_module(text, "dyn_dma");
  std::set<int64_t> sizes;
  for (uint32_t seed : {41u, 50u, 60u, 70u}) {
    CAPTURE(seed);
    sizes.insert(static_cast<int64_t>(random_inputs(*m.entry(), seed)[0].get(0)));
    check_jvp_against_fd(m, seed);
  }
  CHECK(sizes.size() >= 2);
  // The tangent copy keeps the dynamic size operand.
  std::string jt = print_module(run_pipeline(m, "jvp", {false, true, nullptr, ""}));
  size_t first = jt.find("[ds(0, %n), :], %sem");
  REQUIRE(first != std::string::npos);
  CHECK(jt.find("[ds(0, %n), :]", jt.find("dma_start", jt.find("dma_start") + 1)) != std::string::npos);
  // vmap: a batched n loops over the batch; an unbatched n with a batched x
  // keeps one kernel whose DMA size is the same for every element.
  check_vmap_against_loop(m, "0|0", 11);
  check_vmap_against_loop(m, "none|0", 12);
  // discharge cannot give the copy a static shape.
  CHECK_THROWS_WITH_AS(run_pipeline(m, "discharge", {false, true, nullptr, ""}),
                       doctest::Contains("discharge: dma_start with a dynamic size is not supported"), Error);
}

TEST_CASE("compositions: vmap of jvp equals stacking jvp of separate calls; discharged, the same numbers") {
  // gather_rows: its batched scalar prefetch makes vmap loop over the batch,
  // calling the two-output jvp kernel once per element.
  for (std::string name : {"matmul.tsr", "softmax.tsr", "flash_attention.tsr", "gather_rows.tsr"}) {
    CAPTURE(name);
    Module m = example_f64(name);
    Module j = run_pipeline(m, "jvp", {false, true, nullptr, ""});
    // Primals then tangents: batch some along a non-leading axis, leave one unbatched.
    size_t n = j.entry()->params().size();
    std::string axes;
    for (size_t i = 0; i < n; ++i) {
      if (i) axes += "|";
      axes += i == 0 ? "0" : i == 1 ? "none" : i + 1 == n ? "1" : "0";
    }
    check_vmap_against_loop(j, axes, 31, 1e-10);
    if (name == "gather_rows.tsr") check_vmap_against_loop(j, "0|0|0", 32, 1e-10);  // every operand batched
    // discharge after both: no Ref left, the same results as the stateful vmap of jvp.
    Module vj = run_pipeline(j, "vmap{axis_size=3,in_axes=" + axes + "}", {false, true, nullptr, ""});
    Module pure = run_pipeline(vj, "discharge,dce", {false, true, nullptr, ""});
    CHECK_FALSE(has_ref_anywhere(pure));
    std::vector<Array> in = random_inputs(*vj.entry(), 8);
    std::vector<Array> a = interp::run_function(vj, "main", in), b = interp::run_function(pure, "main", in);
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) require_close(b[i], a[i], 1e-12);
  }
}

// linearize of an example in f64: the primal function returns the original
// outputs, and the tangent function applied to the residuals and a tangent
// returns exactly the jvp tangent (one per float output), linearly.
void check_linearize_against_jvp(const Module& m) {
  Module lin = run_pipeline(m, "linearize", {false, true, nullptr, ""});
  Module j = run_pipeline(m, "jvp", {false, true, nullptr, ""});
  const Body& jf = *j.entry();
  size_t n = m.entry()->params().size(), nout = m.entry()->outputs().size();
  std::vector<Array> x = random_inputs(*m.entry(), 41);
  std::vector<Array> t;
  for (size_t k = n; k < jf.params().size(); ++k) t.push_back(random_array(jf.params()[k]->type, 50 + uint32_t(k)));
  std::vector<Array> jin = x;
  jin.insert(jin.end(), t.begin(), t.end());
  std::vector<Array> jout = interp::run_function(j, "main", jin);
  // Independent check of the primal part against the untransformed program.
  std::vector<Array> pout = interp::run_function(lin, "main_primal", x);
  std::vector<Array> y = interp::run_function(m, "main", x);
  REQUIRE(pout.size() >= nout);
  for (size_t o = 0; o < nout; ++o) require_close(pout[o], y[o], 1e-12);
  std::vector<Array> targs(pout.begin() + static_cast<std::ptrdiff_t>(nout), pout.end());
  targs.insert(targs.end(), t.begin(), t.end());
  std::vector<Array> tout = interp::run_function(lin, "main_tangent", targs);
  REQUIRE(jout.size() > nout);
  REQUIRE(tout.size() == jout.size() - nout);
  for (size_t o = 0; o < tout.size(); ++o) require_close(tout[o], jout[nout + o], 1e-10);
  // Linear: twice the tangent gives twice the output.
  std::vector<Array> targs2(pout.begin() + static_cast<std::ptrdiff_t>(nout), pout.end());
  for (const Array& a : t) targs2.push_back(axpy(a, 1.0, a));
  std::vector<Array> tout2 = interp::run_function(lin, "main_tangent", targs2);
  for (size_t o = 0; o < tout.size(); ++o) require_close(tout2[o], axpy(tout[o], 1.0, tout[o]), 1e-10);
}

void check_linearize_against_jvp(const std::string& name) {
  CAPTURE(name);
  check_linearize_against_jvp(example_f64(name));
}

TEST_CASE("linearize on the zoo (f64): the tangent function applied to a tangent equals the jvp tangent") {
  // softmax is covered in test_passes.cpp.
  for (std::string name : {"add.tsr", "layernorm.tsr", "gather_rows.tsr"}) check_linearize_against_jvp(name);
}

// jvp of a `cond` on output Refs passes primal and tangent Refs to one cond;
// partial eval must look into its branches to keep the primal half known.
TEST_CASE("linearize on the zoo (f64), kernels with a cond on output Refs") {
  for (std::string name : {"matmul.tsr", "flash_attention.tsr", "cumsum.tsr", "row_sum.tsr"})
    check_linearize_against_jvp(name);
}

// How many results the one `name` op of the kernel that linearize's primal
// function runs has.
size_t primal_kernel_op_results(const Module& m, const std::string& name) {
  Module lin = run_pipeline(m, "linearize", {false, true, nullptr, ""});
  const Body& primal = *lin.find("main_primal");
  REQUIRE(primal.ops().size() == 1);
  std::vector<size_t> found;
  for (const Op& op : primal.ops()[0].param(keys::kernel)->ops())
    if (op.name() == name) found.push_back(op.results.size());
  REQUIRE(found.size() == 1);
  return found[0];
}

// A kernel @k(%x, %o) over rows of 8 of an f64[32,128], its body `body`.
std::string row_kernel_module(const std::string& body) {
  return R"(
index_map @row(%i: i32) -> (i32, i32) { return %i, 0 }
kernel @k(%x: ref<f64[8,128], vmem>, %o: ref<f64[8,128], vmem>) {
)" + body + R"(}
func @main(%x: f64[32,128]) -> f64[32,128] {
  %out = pallas_call[kernel=@k, grid=(4), in_specs=[spec((8, 128), @row)], out_specs=[spec((8, 128), @row)],
                     out_shapes=[f64[32,128]], dimension_semantics=(parallel)] %x
  return %out
}
)";
}

// A kernel `for` loop (fori_loop) whose carries hold primal and, after jvp,
// tangent values: partial eval splits the loop's carries, so the primal
// function runs the loop on the primal carry alone.
const std::string kForLoopKernel = row_kernel_module(R"(
  %z = broadcast_in_dim[shape=(8, 128), broadcast_dimensions=()] 0.0:f64
  %acc = for[body=fn(%j: i32, %xr: ref<f64[8,128], vmem>, %a: f64[8,128]) -> f64[8,128] {
    %v = get %xr[:, :]
    %jf = convert_element_type[new_dtype=f64] %j
    %w = mul %v, %jf
    %s = sin %w
    %n = add %a, %s
    return %n
  }, num_consts=1] 0, 4, %x, %z
  swap %o[:, :], %acc
)");

TEST_CASE("linearize of a kernel whose for loop carries primal and tangent values") {
  Module m = parse_module(kForLoopKernel, "for_loop.tsr");
  check_linearize_against_jvp(m);
  check_jvp_against_fd(m, 61);
  // The primal function runs the primal kernel: the loop with one carry.
  CHECK(primal_kernel_op_results(m, "for") == 1);
}

// The same with a while loop: its predicate reads only the primal counter,
// so the loop splits too.
const std::string kWhileLoopKernel = row_kernel_module(R"(
  %z = broadcast_in_dim[shape=(8, 128), broadcast_dimensions=()] 0.0:f64
  %n, %acc = while[cond=fn(%xr: ref<f64[8,128], vmem>, %c: i32, %a: f64[8,128]) -> bool {
    %p = lt %c, 4
    return %p
  }, body=fn(%xr: ref<f64[8,128], vmem>, %c: i32, %a: f64[8,128]) -> (i32, f64[8,128]) {
    %v = get %xr[:, :]
    %cf = convert_element_type[new_dtype=f64] %c
    %w = mul %v, %cf
    %s = sin %w
    %n = add %a, %s
    %c1 = add %c, 1
    return %c1, %n
  }, num_consts=1] %x, 0:i32, %z
  swap %o[:, :], %acc
)");

TEST_CASE("linearize of a kernel whose while loop carries primal and tangent values") {
  Module m = parse_module(kWhileLoopKernel, "while_loop.tsr");
  check_linearize_against_jvp(m);
  check_jvp_against_fd(m, 62);
  CHECK(primal_kernel_op_results(m, "while") == 2);  // the counter and the primal sum
}

TEST_CASE("linearize of a kernel whose scan carries primal and tangent values, with stacked ys") {
  std::string text = R"(
index_map @row(%i: i32) -> (i32, i32) { return %i, 0 }
kernel @k(%x: ref<f64[8,128], vmem>, %o: ref<f64[8,128], vmem>, %p: ref<f64[4,8,128], vmem>) {
  %z = broadcast_in_dim[shape=(8, 128), broadcast_dimensions=()] 0.0:f64
  %w = iota[shape=(4), dimension=0, dtype=f64]
  %acc, %ys = scan[body=fn(%xr: ref<f64[8,128], vmem>, %a: f64[8,128], %wi: f64) -> (f64[8,128], f64[8,128]) {
    %v = get %xr[:, :]
    %m = mul %v, %wi
    %s = sin %m
    %n = add %a, %s
    return %n, %s
  }, length=4, num_consts=1, num_carry=1] %x, %z, %w
  swap %o[:, :], %acc
  swap %p[:, :, :], %ys
}
func @main(%x: f64[32,128]) -> (f64[32,128], f64[16,8,128]) {
  %out, %parts = pallas_call[kernel=@k, grid=(4), in_specs=[spec((8, 128), @row)],
                             out_specs=[spec((8, 128), @row), spec((4, 8, 128), @row3)],
                             out_shapes=[f64[32,128], f64[16,8,128]], dimension_semantics=(parallel)] %x
  return %out, %parts
}
index_map @row3(%i: i32) -> (i32, i32, i32) { return %i, 0, 0 }
)";
  Module m = parse_module(text, "scan_loop.tsr");
  check_linearize_against_jvp(m);
  check_jvp_against_fd(m, 63);
  CHECK(primal_kernel_op_results(m, "scan") == 2);  // the primal carry and ys
}

// A run_scoped body that computes the primal and the tangent through its
// scratch Refs: partial eval splits the run_scoped (the primal scratch stays
// with the primal, its tangent twin with the tangent), as it does a cond.
TEST_CASE("linearize splits a run_scoped whose scratch carries primal and tangent values") {
  std::string text = row_kernel_module(R"(
  run_scoped[body=fn(%xr: ref<f64[8,128], vmem>, %or: ref<f64[8,128], vmem>, %tmp: ref<f64[8,128], vmem>) {
    %v = get %xr[:, :]
    swap %tmp[:, :], %v
    %t = get %tmp[:, :]
    %s = sin %t
    swap %or[:, :], %s
  }] %x, %o
)");
  Module m = parse_module(text, "scoped.tsr");
  check_jvp_against_fd(m, 64);
  check_linearize_against_jvp(m);
  CHECK(primal_kernel_op_results(m, "run_scoped") == 0);
  Module lin = run_pipeline(m, "linearize", {false, true, nullptr, ""});
  const Op& call = only_op(*lin.find("main_primal"), "pallas_call");
  CHECK(print_body(*call.param(keys::kernel)).find("_dot") == std::string::npos);  // no tangent scratch
}

// After discharge every pallas_call is a `for` loop in the
// function, which partial_eval stages whole; the error names that loop and
// what to do, instead of blaming run_scoped or tangent control flow.
TEST_CASE("linearize after discharge names the grid loop that blocks it") {
  for (const char* name : {"add.tsr", "matmul.tsr", "softmax.tsr", "row_sum.tsr"}) {
    CAPTURE(name);
    Module m = example(name);
    std::string err = error_of([&] { run_pipeline(m, "discharge,linearize"); });
    CHECK_MESSAGE(err.find("error: linearize: primal output 0 of @main comes out of this `for`, which also takes tangents, "
                           "and partial_eval stages a `for` whole (it has no rule to split control flow); discharge lowers "
                           "each pallas_call to such a loop: run linearize before discharge") != std::string::npos,
                  err);
    // Located at the pallas_call the loop came from.
    const Op* call = nullptr;
    for (const Op& op : m.entry()->ops())
      if (op.name() == "pallas_call") call = &op;
    REQUIRE(call);
    CHECK(err.rfind(call->loc.str() + ": error:", 0) == 0);
  }
}

// pmap (jax/_src/interpreters/pxla.py): jvp maps tangents like their primals; vmap puts the batch
// axis in front of the body's view of each operand. Checked numerically, with
// a mapped and an unmapped operand, out_axes not 0, and integer outputs.
const char* kPmapModule = R"(
func @main(%x: f64[2,3], %s: f64) -> (f64[2,3], i32[3]) {
  %y, %d = pmap[axis_name=dev, axis_size=3, in_axes=(1, none), out_axes=(1, 0),
                body=fn(%col: f64[2], %sc: f64) -> (f64[2], i32) {
                  %i = axis_index[axis_name=dev]
                  %id = device_id
                  %fi = convert_element_type[new_dtype=f64] %i
                  %a = mul %col, %sc
                  %e = sin %a
                  %b = add %e, %fi
                  return %b, %id
                }] %x, %s
  return %y, %d
}
)";

TEST_CASE("pmap: jvp equals finite differences, vmap equals stacked calls, and their compositions") {
  Module m = parse_module(kPmapModule, "pmap.tsr");
  check_jvp_against_fd(m, 71);
  for (const char* axes : {"0|none", "1|0", "none|0"}) {
    CAPTURE(axes);
    check_vmap_against_loop(m, axes, 72);
  }
  PassOptions o;
  o.values["axis_size"] = "3";
  o.values["in_axes"] = "1|0";
  check_jvp_against_fd(vmap_pass(m, o), 73);
  check_vmap_against_loop(jvp_pass(m, {}), "0|none|1|0", 74);
}

// linearize splits a pmap: the primal pmap computes the residual (cos of the
// scaled column) on each device and returns it stacked along the device axis;
// the tangent pmap, over the same axis, takes it mapped and the unmapped
// scalar as it was, and is linear.
TEST_CASE("linearize splits a pmap into a primal and a tangent pmap over the same axis") {
  Module m = parse_module(kPmapModule, "pmap.tsr");
  check_linearize_against_jvp(m);
  Module lin = run_pipeline(m, "linearize", {false, true, nullptr, ""});
  const Op& primal = only_op(*lin.find("main_primal"), "pmap");
  const Op& tangent = only_op(*lin.find("main_tangent"), "pmap");
  for (const Op* p : {&primal, &tangent}) {
    CHECK(p->param(keys::axis_name) == "dev");
    CHECK(p->param(keys::axis_size) == 3);
  }
  CHECK(primal.param(keys::out_axes) == std::vector<int64_t>{1, 0, 0});  // y, the device ids, the residual
  // The scalar and x are passed as they are (known inputs), the residual along axis 0, then the tangents.
  CHECK(tangent.param(keys::in_axes) == std::vector<int64_t>{-1, 1, 0, 1, -1});
  std::string body = print_body(*tangent.param(keys::body));
  CHECK(body.find("sin") == std::string::npos);
  CHECK(body.find("cos") == std::string::npos);
}

// Where a pmap body cannot be split, the error names the op inside it.
TEST_CASE("linearize of a pmap whose body stages a loop whole names that loop") {
  Module m = parse_module(R"(
func @main(%x: f64[3,4]) -> f64[3,4] {
  %y = pmap[axis_name=dev, axis_size=3, in_axes=(0), out_axes=(0),
            body=fn(%row: f64[4]) -> f64[4] {
              %r = for[body=fn(%i: i32, %a: f64[4]) -> f64[4] {
                %s = sin %a
                return %s
              }] 0, 3, %row
              return %r
            }] %x
  return %y
}
)",
                          "pmap_loop.tsr");
  std::string err = error_of([&] { run_pipeline(m, "linearize"); });
  CHECK_MESSAGE(err.rfind("pmap_loop.tsr:5:15: error: linearize: primal output 0 of @main comes out of this `for`, which "
                          "also takes tangents, and partial_eval stages a `for` whole",
                          0) == 0,
                err);
}

// A kernel op with no rule to split it (a call computing primal and tangent
// outputs together): the error names it inside the kernel.
TEST_CASE("linearize names the kernel op where primal values come to depend on tangents") {
  Module m = parse_module(R"(index_map @row(%i: i32) -> (i32, i32) { return %i, 0 }
func @f(%xr: ref<f64[8,128], vmem>, %or: ref<f64[8,128], vmem>) {
  %v = get %xr[:, :]
  %s = sin %v
  swap %or[:, :], %s
  return
}
kernel @k(%x: ref<f64[8,128], vmem>, %o: ref<f64[8,128], vmem>) {
  call[callee=@f] %x, %o
}
func @main(%x: f64[32,128]) -> f64[32,128] {
  %out = pallas_call[kernel=@k, grid=(4), in_specs=[spec((8, 128), @row)], out_specs=[spec((8, 128), @row)],
                     out_shapes=[f64[32,128]], dimension_semantics=(parallel)] %x
  return %out
}
)",
                          "kernel_call.tsr");
  std::string err = error_of([&] { run_pipeline(m, "linearize"); });
  CHECK_MESSAGE(err == "kernel_call.tsr:12:3: error: linearize: primal output 0 of @main comes out of this `pallas_call`, "
                       "which also takes tangents, and its kernel @k_jvp cannot be split: primal values come to depend on "
                       "tangents in this `call` (kernel_call.tsr:9:3), which partial_eval cannot split",
                err);
}

// The pallas_call that `main_primal` runs, inside its pmap if there is one.
const Op& primal_call(const Module& lin) {
  const Body* b = lin.find("main_primal").get();
  if (b->ops().size() == 1 && b->ops()[0].name() == "pmap") b = b->ops()[0].param(keys::body).get();
  return only_op(*b, "pallas_call");
}

// The collective examples (a pmap over 4 devices of a kernel that moves data
// with remote DMAs) and sc_sort (whose kernel's sort carries tangents along):
// the primal function runs the primal kernel alone, the tangent function
// gives jvp's numbers, and every claim of the linearized program is proved
// (halo_exchange's protocol for every device count).
TEST_CASE("linearize of ring_allreduce, halo_exchange (pmap) and sc_sort: jvp's numbers, proved") {
  for (std::string name : {"ring_allreduce.tsr", "halo_exchange.tsr", "sc_sort.tsr"}) {
    CAPTURE(name);
    // SparseCore loads move 32-bit values only; in f32 the tangent function
    // still runs the very ops of the jvp, so the numbers agree exactly.
    Module m = name == "sc_sort.tsr" ? example(name) : example_f64(name);
    check_linearize_against_jvp(m);
    Module lin = run_pipeline(m, "linearize", {false, true, nullptr, ""});
    const Op& call = primal_call(lin);
    CHECK(call.param(keys::kernel)->name().ends_with("_jvp_known"));
    CHECK(print_body(*call.param(keys::kernel)).find("_dot") == std::string::npos);
    // The prover is the slow part (seconds under ASan, where it is not what
    // is checked). @main, the jvp, runs the kernel that @main_tangent runs.
    if (kSanitized) continue;
    Module parts;
    for (const BodyPtr& b : lin.symbols())
      if (b->name() != "main") parts.add(b);
    int claims = 0;
    for (const prove::Obligation& ob : prove::prove_module(parts)) {
      INFO(ob.line() << " " << ob.detail);
      CHECK(ob.verdict == prove::Verdict::proved);
      ++claims;
    }
    CHECK(claims > 10);
  }
}

TEST_CASE("jvp of every unary math op equals finite differences (f64): the derivatives primitives declare") {
  int checked = 0;
  for (const Primitive* p : registry().of(Family::elementwise)) {
    if (!p->tangent) continue;
    INFO(p->name);
    // logistic(x) is in (0, 1), where every op is smooth (log, sqrt, rsqrt
    // need x > 0; erf_inv needs |x| < 1).
    Module m = parse_module("func @main(%x: f64[16]) -> f64[16] {\n  %p = logistic %x\n  %y = " +
                                p->name + " %p\n  return %y\n}\n",
                            p->name);
    check_jvp_against_fd(m, 7);
    ++checked;
  }
  CHECK(checked >= 13);
}

TEST_CASE("atan2, clamp and integer_pow: jvp equals finite differences (f64), vmap equals separate calls") {
  // Every operand differentiated; lo an array, hi a rank-0 bound. Inputs are
  // in [-2, 2]: 3x reaches below lo - 2 and above hi + 2, so all three
  // operands' tangents are taken somewhere.
  Module m = parse_module(R"(func @main(%y: f64[16], %x: f64[16], %lo: f64[16], %hi: f64) -> (f64[16], f64[16], f64[16]) {
  %a = atan2 %y, %x
  %sq = mul %y, %y
  %pos = add %sq, 0.5
  %p3 = integer_pow[y=3] %x
  %pm2 = integer_pow[y=-2] %pos
  %p = add %p3, %pm2
  %s = mul %x, 3.0
  %l = sub %lo, 2.0
  %h = add %hi, 2.0
  %c = clamp %l, %s, %h
  return %a, %c, %p
}
)",
                          "atan2_clamp");
  for (uint32_t seed : {3u, 4u, 5u}) check_jvp_against_fd(m, seed);
  check_vmap_against_loop(m, "0|0|none|0", 6);
  check_vmap_against_loop(m, "none|0|0|none", 7);
}

TEST_CASE("roll: jvp equals finite differences (f64); vmap equals separate calls, with batched run-time shifts too") {
  Module m = parse_module(R"(func @main(%x: f64[4,8], %s: i32) -> (f64[4,8], f64[4,8]) {
  %a = roll[axis=1, shift=3] %x
  %b = roll[axis=0] %x, %s
  %c = mul %b, %b
  return %a, %c
}
)",
                          "roll");
  check_jvp_against_fd(m, 11);
  check_vmap_against_loop(m, "0|none", 12);
  check_vmap_against_loop(m, "1|0", 13);  // a shift per batch element: a loop of calls
  check_vmap_against_loop(m, "none|0", 14);
}

TEST_CASE("bitcast_convert_type, population_count, clz: vmap equals separate calls; jvp gives no tangent through bits") {
  Module m = parse_module(R"(func @main(%x: f32[4,6], %k: i32[6]) -> (i32[4,6,2], i32[6], f32[4,6]) {
  %h = convert_element_type[new_dtype=f64] %x
  %b = bitcast_convert_type[new_dtype=i32] %h
  %p = population_count %k
  %z = clz %k
  %s = add %p, %z
  %back = bitcast_convert_type[new_dtype=f64] %b
  %f = convert_element_type[new_dtype=f32] %back
  return %b, %s, %f
}
)",
                          "bits");
  check_vmap_against_loop(m, "0|0", 21);
  check_vmap_against_loop(m, "1|none", 22);
  // The float output passes through bits: jvp gives it a zero tangent.
  Module j = run_pipeline(m, "jvp", {false, true, nullptr, ""});
  std::vector<Array> in = {random_array(m.entry()->params()[0]->type, 23), random_array(m.entry()->params()[1]->type, 24),
                           random_array(m.entry()->params()[0]->type, 25)};
  std::vector<Array> out = interp::run_function(j, "main", in);
  REQUIRE(out.size() == 4);
  for (int64_t i = 0; i < out[3].size(); ++i) CHECK(out[3].get(i) == 0.0);
}

TEST_CASE("debug_check under vmap checks every element; under jvp it stays on the primal") {
  const char* text = R"(
func @main(%x: f32[4]) -> f32[4] {
  %m = reduce_max[axes=(0)] %x
  %ok = gt %m, 0.0
  debug_check[msg="some element is positive"] %ok
  %y = mul %x, %x
  return %y
}
)";
  Module v = run_pipeline(parse_module(text, "t.tsr"), "vmap{axis_size=2}", {false, true, nullptr, ""});
  Array both(DType::f32, {2, 4}), one_bad(DType::f32, {2, 4});
  for (int64_t i = 0; i < 8; ++i) both.set(i, 1.0), one_bad.set(i, i < 4 ? 1.0 : -1.0);
  CHECK(interp::run_function(v, "main", {both})[0].get(7) == 1.0);
  CHECK_THROWS_WITH_AS(interp::run_function(v, "main", {one_bad}), doctest::Contains("some element is positive"), Error);
  Module j = run_pipeline(parse_module(text, "t.tsr"), "jvp", {false, true, nullptr, ""});
  Array pos(DType::f32, {4}), neg(DType::f32, {4});
  for (int64_t i = 0; i < 4; ++i) pos.set(i, 1.0), neg.set(i, -1.0);
  CHECK(interp::run_function(j, "main", {pos, neg}).size() == 2);
  CHECK_THROWS_WITH_AS(interp::run_function(j, "main", {neg, pos}), doctest::Contains("some element is positive"), Error);
}

TEST_CASE("take_along_axis: jvp equals finite differences (f64); vmap equals separate calls, indices batched or not") {
  Module m = parse_module(R"(func @main(%x: f64[3,8], %i: i32[3,4]) -> f64[3,4] {
  %t = take_along_axis[axis=1] %x, %i
  %s = mul %t, %t
  return %s
}
)",
                          "take");
  check_jvp_against_fd(m, 31);
  check_vmap_against_loop(m, "0|0", 32);
  check_vmap_against_loop(m, "1|none", 33);
  check_vmap_against_loop(m, "none|1", 34);
}

TEST_CASE("prng: jvp keeps the draws on the primal; vmap of a batched seed is a clear error") {
  const char* text = R"(
func @main(%s: i32, %x: f32[4]) -> f32[4] {
  prng_seed %s
  %r = prng_random_bits[shape=(4)]
  %f = convert_element_type[new_dtype=f32] %r
  %y = mul %x, %f
  return %y
}
)";
  Module m = parse_module(text, "t.tsr");
  Module j = run_pipeline(m, "jvp", {false, true, nullptr, ""});
  Array x(DType::f32, {4}), dx(DType::f32, {4});
  for (int64_t i = 0; i < 4; ++i) x.set(i, 1.0), dx.set(i, 1.0);
  std::vector<Array> out = interp::run_function(j, "main", {Array::scalar(DType::i32, 5), x, dx});
  std::vector<Array> plain = interp::run_function(m, "main", {Array::scalar(DType::i32, 5), x});
  for (int64_t i = 0; i < 4; ++i) {
    CHECK(out[0].get(i) == plain[0].get(i));
    CHECK(out[1].get(i) == plain[0].get(i));  // d(x * f)/dx . 1 = f
  }
  CHECK_THROWS_WITH_AS(run_pipeline(m, "vmap{axis_size=2}", {false, true, nullptr, ""}),
                       doctest::Contains("prng_seed with batched operands is not supported"), Error);
}

// softplus(x) = log(1 + exp(x)) with the derivative logistic(x) given as a
// custom rule, inside a kernel and outside, with an integer operand that has
// no tangent.
const char* kCustomJvpModule = R"(index_map @row(%i: i32) -> (i32, i32) { return %i, 0 }
kernel @k(%x: ref<f64[2,8], vmem>, %o: ref<f64[2,8], vmem>) {
  %v = get %x[:, :]
  %s = custom_jvp_call[call=fn(%a: f64[2,8]) -> f64[2,8] {
    %e = exp %a
    %l = log1p %e
    return %l
  }, jvp=fn(%a: f64[2,8], %da: f64[2,8]) -> f64[2,8] {
    %g = logistic %a
    %t = mul %g, %da
    return %t
  }] %v
  swap %o[:, :], %s
}
func @main(%x: f64[4,8], %y: f64[8], %n: i32) -> (f64[4,8], f64[8]) {
  %o = pallas_call[kernel=@k, grid=(2), in_specs=[spec((2, 8), @row)], out_specs=[spec((2, 8), @row)],
                   out_shapes=[f64[4,8]], dimension_semantics=(parallel)] %x
  %c = custom_jvp_call[call=fn(%a: f64[8], %k: i32) -> f64[8] {
    %f = convert_element_type[new_dtype=f64] %k
    %p = mul %a, %f
    %s = sin %p
    return %s
  }, jvp=fn(%a: f64[8], %k: i32, %da: f64[8], %dk: i32) -> f64[8] {
    %f = convert_element_type[new_dtype=f64] %k
    %p = mul %a, %f
    %c = cos %p
    %g = mul %c, %f
    %t = mul %g, %da
    return %t
  }] %y, %n
  return %o, %c
}
)";

TEST_CASE("custom_jvp_call: jvp (inside kernels too) equals finite differences (f64); vmap equals separate calls") {
  Module m = parse_module(kCustomJvpModule, "custom_jvp");
  for (uint32_t seed : {21u, 22u}) check_jvp_against_fd(m, seed);
  check_vmap_against_loop(m, "0|0|none", 23);
  check_vmap_against_loop(m, "none|1|0", 24);  // a batched integer operand too
  // vmap, then jvp: the batched rule is still the one used.
  Module vm = run_pipeline(m, "vmap{axis_size=3,in_axes=0|0|none}", {false, true, nullptr, ""});
  check_jvp_against_fd(vm, 25);
}

TEST_CASE("custom_jvp_call: jvp uses the given rule, not the derivative of `call`") {
  // The rule says the derivative of sin is 3: wrong on purpose, so the tangent
  // shows which one jvp took.
  Module m = parse_module(R"(func @main(%x: f64[4]) -> f64[4] {
  %y = custom_jvp_call[call=fn(%a: f64[4]) -> f64[4] {
    %s = sin %a
    return %s
  }, jvp=fn(%a: f64[4], %da: f64[4]) -> f64[4] {
    %t = mul %da, 3.0
    return %t
  }] %x
  return %y
}
)",
                          "wrong_rule");
  Module j = run_pipeline(m, "jvp", {false, true, nullptr, ""});
  Array x = random_array(Type::array(DType::f64, {4}), 31), dx = random_array(Type::array(DType::f64, {4}), 32);
  std::vector<Array> got = interp::run_function(j, "main", {x, dx});
  REQUIRE(got.size() == 2);
  for (int64_t e = 0; e < 4; ++e) {
    CHECK(got[0].get(e) == doctest::Approx(std::sin(x.get(e))));
    CHECK(got[1].get(e) == doctest::Approx(3.0 * dx.get(e)));
  }
  // The primal stays a custom_jvp_call, so a second jvp uses the rule again
  // (and differentiates the inlined rule: d/dx of 3*dx is 0).
  std::string text = print_module(j);
  CHECK(text.find("custom_jvp_call") != std::string::npos);
  Module jj = run_pipeline(j, "jvp{wrt=0}", {false, true, nullptr, ""});
  std::vector<Array> got2 = interp::run_function(jj, "main", {x, dx, dx});
  REQUIRE(got2.size() == 4);
  for (int64_t e = 0; e < 4; ++e) {
    CHECK(got2[2].get(e) == doctest::Approx(3.0 * dx.get(e)));  // the tangent of the primal: the rule
    CHECK(got2[3].get(e) == doctest::Approx(0.0));               // the tangent of the rule's output
  }
}

TEST_CASE("nextafter, reduce_precision, split, float rem, tan, square: jvp equals finite differences (f64), vmap equals separate calls") {
  // nextafter moves x1 by one ulp: its derivative is 1 in x1 and 0 in x2.
  // reduce_precision[11, 40] keeps 40 mantissa bits: its steps (2^-40
  // relative) are far below the finite-difference step, so the difference
  // quotient sees the tangent that lax's rule rounds the same way.
  // rem's inputs keep |x / y| away from integers (y in [2, 3], x in [-2, 2]).
  Module m = parse_module(R"(func @main(%x: f64[4,6], %y: f64[4,6], %s: f64) -> (f64[4,6], f64[4,6], f64[4,2], f64[4,4], f64[4,6], f64[4,6]) {
  %n = nextafter %x, %y
  %ns = nextafter %s, %y
  %r = reduce_precision[exponent_bits=11, mantissa_bits=40] %x
  %sq = mul %x, %y
  %a, %b = split[sizes=(2, 4), axis=1] %sq
  %d = add %y, 5.0
  %e = mul %d, 0.5
  %m = rem %x, %e
  %h = mul %x, 0.5
  %t = tan %h
  %q = square %t
  %mq = add %m, %q
  return %n, %r, %a, %b, %ns, %mq
}
)",
                          "lax_more");
  for (uint32_t seed : {3u, 4u}) check_jvp_against_fd(m, seed);
  check_vmap_against_loop(m, "0|0|none", 5);
  check_vmap_against_loop(m, "1|none|0", 6);
  check_vmap_against_loop(m, "none|1|0", 7);
}

TEST_CASE("repeat: jvp equals finite differences (f64), vmap equals separate calls") {
  Module m = parse_module(R"(func @main(%x: f64[4,6], %y: f64[4,6]) -> (f64[12,6], f64[4,12]) {
  %p = mul %x, %y
  %a = repeat[repeats=3, axis=0] %p
  %e = exp %x
  %b = repeat[repeats=2, axis=1] %e
  return %a, %b
}
)",
                          "repeat");
  for (uint32_t seed : {8u, 9u}) check_jvp_against_fd(m, seed);
  check_vmap_against_loop(m, "0|none", 10);
  check_vmap_against_loop(m, "1|0", 11);
}

TEST_CASE("reduce_precision: jvp rounds the tangent as the primal (lax's rule); bf16 vmap equals separate calls") {
  Module m = parse_module(R"(func @main(%x: f32[8]) -> f32[8] {
  %r = reduce_precision[exponent_bits=5, mantissa_bits=2] %x
  return %r
}
)",
                          "rp");
  Module j = run_pipeline(m, "jvp", {false, true, nullptr, ""});
  Array x = random_array(m.entry()->params()[0]->type, 41), dx = random_array(m.entry()->params()[0]->type, 42);
  std::vector<Array> out = interp::run_function(j, "main", {x, dx});
  REQUIRE(out.size() == 2);
  std::vector<Array> rounded = interp::run_function(m, "main", {dx});
  for (int64_t i = 0; i < dx.size(); ++i) {
    CAPTURE(i);
    CHECK(out[1].get(i) == rounded[0].get(i));
  }
  CHECK(print_module(j).find("reduce_precision[exponent_bits=5, mantissa_bits=2] %x_dot") != std::string::npos);
  Module b = parse_module(R"(func @main(%x: bf16[4,8], %y: bf16) -> bf16[4,8] {
  %s = add %x, %y
  %r = reduce_precision[exponent_bits=4, mantissa_bits=3] %s
  return %r
}
)",
                          "rp_bf16");
  check_vmap_against_loop(b, "0|none", 43);
  check_vmap_against_loop(b, "2|0", 44);
}
