// Reverse mode through kernels: the pallas_call transpose rule, on the zoo.
//
//   - the grid side alone (transpose_grid.h): axis use of index maps, the
//     planned order, partial fallbacks;
//   - the dot-product test <w, J v> = <J^T w, v>: J v from the tangent
//     function of linearize, J^T w from its transpose, in f64 (to 1e-10) and
//     f32 (to 1e-4), for every zoo kernel the rule supports;
//   - gradients against references computed here with naive loops (matmul:
//     w @ y^T and x^T @ w; softmax, layernorm, cumsum);
//   - `prove`: every claim of every transposed pallas_call proved;
//   - the located errors of what is not supported.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "analysis/prove/prove.h"
#include "ir/grid_mapping.h"
#include "ir/printer.h"
#include "transforms/transpose.h"
#include "transforms/transpose_checkpoint.h"
#include "transforms/transpose_grid.h"

#include "tests/transforms/ad_test_util.h"
#include "tests/transforms/diff_test_util.h"

using namespace tessera;
using namespace tessera::testing;

namespace {

Module example_in(const std::string& name, bool f64) {
  std::string text = example_text(name);
  return parse_module(f64 ? replace_all(text, "f32", "f64") : text, name);
}

// linearize, then the transpose of its tangent function, as @main_transpose:
//   main_transpose(residuals..., cotangents of the outputs...) -> (cotangents of the tangents...)
struct Linearized {
  Module m;
  size_t num_residuals = 0, num_tangents = 0;
};

Linearized transpose_of(const Module& src) {
  Module out = run_pipeline(src, "linearize,transpose");
  verify_or_throw(out);
  BodyPtr tangent = out.find("main_tangent");
  REQUIRE(tangent);
  REQUIRE(out.find("main_transpose"));
  size_t tangents = 0;
  for (const Var* p : src.entry()->params()) tangents += is_float(p->type.dtype());
  size_t n = tangent->params().size();
  return {out, n - tangents, tangents};
}

// The module with every f32 turned into f64 (through its text).
Module replace_f64(const Module& m) {
  return parse_module(replace_all(print_module(m), "f32", "f64"), "f64.tsr");
}

double dot(const Array& a, const Array& b) {
  REQUIRE(a.shape() == b.shape());
  double s = 0;
  for (int64_t i = 0; i < a.size(); ++i) s += a.get(i) * b.get(i);
  return s;
}

struct DotTest {
  double lhs = 0, rhs = 0;  // <w, J v>, <J^T w, v>
  std::vector<Array> x, v, w, jt;  // primals, tangents, cotangents, J^T w
};

// The dot-product test at random points; `x` given or random.
DotTest dot_test(const Module& src, uint32_t seed, std::vector<Array> x = {}) {
  Linearized l = transpose_of(src);
  const Body& f = *src.entry();
  if (x.empty()) x = random_inputs(f, seed);
  DotTest d;
  d.x = x;
  std::vector<Array> primal = interp::run_function(l.m, "main_primal", x);
  size_t nout = f.outputs().size();
  std::vector<Array> residuals(primal.begin() + static_cast<long>(nout), primal.end());
  REQUIRE(residuals.size() == l.num_residuals);
  std::vector<Array> tin = residuals, tr = residuals;
  for (const Var* p : f.params())
    if (is_float(p->type.dtype())) d.v.push_back(random_array(p->type, seed + 100 + static_cast<uint32_t>(d.v.size())));
  tin.insert(tin.end(), d.v.begin(), d.v.end());
  std::vector<Array> jv = interp::run_function(l.m, "main_tangent", tin);
  for (size_t o = 0; o < nout; ++o) {
    d.w.push_back(random_array(f.outputs()[o].type(), seed + 200 + static_cast<uint32_t>(o)));
    tr.push_back(d.w.back());
    d.lhs += dot(d.w[o], jv[o]);
  }
  d.jt = interp::run_function(l.m, "main_transpose", tr);
  REQUIRE(d.jt.size() == d.v.size());
  for (size_t i = 0; i < d.v.size(); ++i) d.rhs += dot(d.jt[i], d.v[i]);
  return d;
}

void check_dot(const Module& src, double tol, uint32_t seed = 1) {
  DotTest d = dot_test(src, seed);
  INFO("<w, J v> = " << d.lhs << ", <J^T w, v> = " << d.rhs);
  CHECK(std::abs(d.lhs - d.rhs) <= tol * (1 + std::abs(d.lhs)));
}

}  // namespace

// ---- the grid side ------------------------------------------------------------

TEST_CASE("transpose grid: axis use of index maps") {
  Module m = example("matmul.tsr");
  GridMapping g = grid_mapping(only_op(*m.entry(), "pallas_call"));
  transpose::AxisUse x = transpose::index_map_axis_use(g.in_specs[0], g.dims(0), g.grid);
  CHECK(x.reads == std::vector<bool>{true, false, true});
  CHECK(x.projection);
  transpose::AxisUse y = transpose::index_map_axis_use(g.in_specs[1], g.dims(1), g.grid);
  CHECK(y.reads == std::vector<bool>{false, true, true});

  Module gr = example("gather_rows.tsr");
  GridMapping gg = grid_mapping(only_op(*gr.entry(), "pallas_call"));
  transpose::AxisUse t = transpose::index_map_axis_use(gg.in_specs[0], gg.dims(0), gg.grid);
  CHECK(t.reads == std::vector<bool>{true});  // through idx[i]
  CHECK_FALSE(t.projection);                  // data-dependent: rows may repeat
}

TEST_CASE("transpose grid: matmul's x and y cotangents need different orders") {
  Module m = example("matmul.tsr");
  GridMapping g = grid_mapping(only_op(*m.entry(), "pallas_call"));
  // x (i, k) ignores j; y (k, j) ignores i: j goes innermost for x, y is left
  // to another call.
  transpose::GridPlan p = transpose::plan_grid(g, {0, 1}, true);
  CHECK(p.order == std::vector<int>{0, 2, 1});
  CHECK(p.position == std::vector<int>{0, 2, 1});
  REQUIRE(p.outputs.size() == 2);
  CHECK_FALSE(p.outputs[0].partial);
  CHECK(p.outputs[0].ignored == std::vector<int>{1});
  CHECK(p.outputs[0].covers);
  CHECK_FALSE(p.outputs[1].partial);
  CHECK(p.outputs[1].conflict);
  CHECK(p.grid(g) == std::vector<int64_t>{4, 2, 3});
  CHECK(p.semantics(g) == std::vector<std::string>{"parallel", "arbitrary", "arbitrary"});
  REQUIRE(p.notes.size() == 1);
  CHECK(p.notes[0] == "transpose: the cotangent of input \"y\" is computed by another transposed kernel: it needs a "
                      "different grid order");
  // Only y: i innermost.
  transpose::GridPlan py = transpose::plan_grid(g, {1}, true);
  CHECK(py.order == std::vector<int>{1, 2, 0});
  CHECK_FALSE(py.outputs[0].partial);
  // Without reordering, x's ignored axis (j) is not innermost: partial.
  transpose::GridPlan fixed = transpose::plan_grid(g, {0}, false);
  CHECK(fixed.order == std::vector<int>{0, 1, 2});
  CHECK(fixed.outputs[0].partial);
  CHECK(fixed.outputs[0].partial_size == 3);
}

TEST_CASE("transpose grid: nested ignored sets share one order") {
  Module m = parse(R"(
index_map @ij(%i: i32, %j: i32, %k: i32) -> (i32, i32) { return %i, %j }
index_map @i_only(%i: i32, %j: i32, %k: i32) -> (i32, i32) { return %i, 0 }
kernel @k(%a: ref<f32[8,8], vmem>, %b: ref<f32[8,8], vmem>, %o: ref<f32[8,8], vmem>) {
  %x = get %a[:, :]
  swap %o[:, :], %x
}
func @main(%a: f32[16,16], %b: f32[16,8]) -> f32[16,16] {
  %o = pallas_call[kernel=@k, grid=(2, 2, 3), in_specs=[spec((8, 8), @ij), spec((8, 8), @i_only)],
                   out_specs=[spec((8, 8), @ij)], out_shapes=[f32[16,16]],
                   dimension_semantics=(parallel, parallel, arbitrary)] %a, %b
  return %o
}
)");
  GridMapping g = grid_mapping(only_op(*m.entry(), "pallas_call"));
  transpose::GridPlan p = transpose::plan_grid(g, {0, 1}, true);
  // a ignores {k}, b ignores {j, k}: order (i, j, k) already nests them.
  CHECK(p.order == std::vector<int>{0, 1, 2});
  CHECK_FALSE(p.outputs[0].partial);
  CHECK_FALSE(p.outputs[1].partial);
  CHECK(p.semantics(g) == std::vector<std::string>{"parallel", "arbitrary", "arbitrary"});
  CHECK(p.notes.empty());
}

// ---- the dot-product test -------------------------------------------------------

// Every zoo kernel (flash attention's transpose checkpoints its scratch).
const std::vector<std::string> kZoo = {"add.tsr",     "matmul.tsr",      "softmax.tsr",    "layernorm.tsr",
                                       "cumsum.tsr",  "row_sum.tsr",     "gather_rows.tsr", "train_step.tsr",
                                       "flash_attention.tsr"};

TEST_CASE("transpose kernels: dot-product test, f64") {
  for (const std::string& name : kZoo) {
    INFO(name);
    check_dot(example_in(name, true), 1e-10);
  }
}

TEST_CASE("transpose kernels: dot-product test, f32") {
  for (const std::string& name : kZoo) {
    INFO(name);
    check_dot(example_in(name, false), 1e-4);
  }
}

TEST_CASE("transpose kernels: every transposed pallas_call is proved") {
  prove::Options opts;
  opts.assumptions.push_back(prove::parse_assumption("idx in [0, 1024)"));  // gather_rows' rows
  for (const std::string& name : kZoo) {
    INFO(name);
    Module m = transpose_of(example_in(name, false)).m;
    int calls = 0;
    for (const BodyPtr& s : m.symbols()) {
      if (s->kind() != BodyKind::func) continue;
      for (const Op& op : s->ops()) {
        if (op.prim->name != "pallas_call" || op.param(keys::kernel)->name().find("_transpose") == std::string::npos)
          continue;
        ++calls;
        std::vector<prove::Obligation> obs = prove::prove_call(op, prove::call_name(op), opts);
        CHECK(obs.size() >= 5);
        for (const prove::Obligation& ob : obs) {
          INFO(ob.line() << " " << ob.detail);
          CHECK(ob.verdict == prove::Verdict::proved);
        }
      }
    }
    CHECK(calls == (name == "train_step.tsr" || name == "matmul.tsr" ? 2 : 1));
  }
}

TEST_CASE("transpose kernels: the transposed calls give the same numbers on 2 and 4 cores, shuffled, racing checked") {
  for (const std::string& name : kZoo) {
    INFO(name);
    Module src = example_in(name, true);
    Linearized l = transpose_of(src);
    std::vector<Array> primal = interp::run_function(l.m, "main_primal", random_inputs(*src.entry(), 11));
    std::vector<Array> in(primal.begin() + static_cast<long>(src.entry()->outputs().size()), primal.end());
    for (const Value& o : src.entry()->outputs()) in.push_back(random_array(o.type(), 12));
    std::vector<Array> want = interp::run_function(l.m, "main_transpose", in);
    for (int cores : {2, 4}) {
      interp::RunOptions o;
      o.cores = cores;
      o.grid_seed = static_cast<uint64_t>(cores);
      o.detect_races = true;
      o.dma = cores == 4 ? interp::RunOptions::Dma::eager : interp::RunOptions::Dma::on_wait;
      INFO("cores " << cores);
      std::vector<Array> got = interp::run_function(l.m, "main_transpose", in, o);
      REQUIRE(got.size() == want.size());
      for (size_t i = 0; i < got.size(); ++i) require_close(got[i], want[i], 1e-12);
    }
  }
}

// ---- gradients against references computed here ---------------------------------

TEST_CASE("transpose kernels: matmul gradients are w @ y^T and x^T @ w") {
  DotTest d = dot_test(example_in("matmul.tsr", true), 3);
  const Array &x = d.x[0], &y = d.x[1], &w = d.w[0];
  Array gx(DType::f64, {512, 256}), gy(DType::f64, {256, 384});
  for (int i = 0; i < 512; ++i)
    for (int k = 0; k < 256; ++k) {
      double s = 0;
      for (int j = 0; j < 384; ++j) s += w.get(i * 384 + j) * y.get(k * 384 + j);
      gx.set(i * 256 + k, s);
    }
  for (int k = 0; k < 256; ++k)
    for (int j = 0; j < 384; ++j) {
      double s = 0;
      for (int i = 0; i < 512; ++i) s += x.get(i * 256 + k) * w.get(i * 384 + j);
      gy.set(k * 384 + j, s);
    }
  require_close(d.jt[0], gx, 1e-12);
  require_close(d.jt[1], gy, 1e-12);
}

// Attention per head: S = Q K^T / 8, P = softmax(S) by rows, O = P V. With
// the cotangent W of O: dV = P^T W, dP = W V^T, dS = P * (dP - rowsum(dP * P)),
// dQ = dS K / 8, dK = dS^T Q / 8. The kernel's transpose gets there through
// the checkpoints of its running max, sum and accumulator.
TEST_CASE("transpose kernels: flash attention gradients match attention's, computed with loops") {
  DotTest d = dot_test(example_in("flash_attention.tsr", true), 6);
  const Array &q = d.x[0], &k = d.x[1], &v = d.x[2], &w = d.w[0];
  const int H = 4, N = 256, D = 64;
  Array gq(DType::f64, {H, N, D}), gk(DType::f64, {H, N, D}), gv(DType::f64, {H, N, D});
  for (int64_t i = 0; i < gq.size(); ++i) gq.set(i, 0), gk.set(i, 0), gv.set(i, 0);
  auto at = [&](int h, int r, int c) { return (static_cast<int64_t>(h) * N + r) * D + c; };
  std::vector<double> p(N), dp(N);
  for (int h = 0; h < H; ++h)
    for (int r = 0; r < N; ++r) {
      double mx = -INFINITY, z = 0;
      for (int j = 0; j < N; ++j) {
        double sc = 0;
        for (int c = 0; c < D; ++c) sc += q.get(at(h, r, c)) * k.get(at(h, j, c));
        p[j] = sc / 8;
        mx = std::max(mx, p[j]);
      }
      for (int j = 0; j < N; ++j) z += p[j] = std::exp(p[j] - mx);
      double rowsum = 0;
      for (int j = 0; j < N; ++j) {
        p[j] /= z;
        double s = 0;
        for (int c = 0; c < D; ++c) s += w.get(at(h, r, c)) * v.get(at(h, j, c));
        dp[j] = s;
        rowsum += s * p[j];
      }
      for (int j = 0; j < N; ++j) {
        double ds = p[j] * (dp[j] - rowsum) / 8;
        for (int c = 0; c < D; ++c) {
          gv.set(at(h, j, c), gv.get(at(h, j, c)) + p[j] * w.get(at(h, r, c)));
          gq.set(at(h, r, c), gq.get(at(h, r, c)) + ds * k.get(at(h, j, c)));
          gk.set(at(h, j, c), gk.get(at(h, j, c)) + ds * q.get(at(h, r, c)));
        }
      }
    }
  require_close(d.jt[0], gq, 1e-10);
  require_close(d.jt[1], gk, 1e-10);
  require_close(d.jt[2], gv, 1e-10);
}

TEST_CASE("transpose kernels: softmax gradient is y * (w - sum(w * y))") {
  DotTest d = dot_test(example_in("softmax.tsr", true), 4);
  const Array &x = d.x[0], &w = d.w[0];
  Array g(DType::f64, {256, 1000});
  for (int r = 0; r < 256; ++r) {
    double mx = -INFINITY, z = 0, wy = 0;
    for (int c = 0; c < 1000; ++c) mx = std::max(mx, x.get(r * 1000 + c));
    for (int c = 0; c < 1000; ++c) z += std::exp(x.get(r * 1000 + c) - mx);
    for (int c = 0; c < 1000; ++c) wy += w.get(r * 1000 + c) * std::exp(x.get(r * 1000 + c) - mx) / z;
    for (int c = 0; c < 1000; ++c) {
      double y = std::exp(x.get(r * 1000 + c) - mx) / z;
      g.set(r * 1000 + c, y * (w.get(r * 1000 + c) - wy));
    }
  }
  require_close(d.jt[0], g, 1e-12);
}

TEST_CASE("transpose kernels: layernorm gradients") {
  DotTest d = dot_test(example_in("layernorm.tsr", true), 5);
  const Array &x = d.x[0], &gamma = d.x[1], &w = d.w[0];
  const int n = 512;
  Array gx(DType::f64, {256, n}), gg(DType::f64, {n}), gb(DType::f64, {n});
  for (int r = 0; r < 256; ++r) {
    double mean = 0, var = 0;
    for (int c = 0; c < n; ++c) mean += x.get(r * n + c) / n;
    for (int c = 0; c < n; ++c) var += (x.get(r * n + c) - mean) * (x.get(r * n + c) - mean) / n;
    double inv = 1 / std::sqrt(var + 1e-5);
    // dxhat = w * gamma; dx = inv * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
    double m1 = 0, m2 = 0;
    for (int c = 0; c < n; ++c) {
      double xhat = (x.get(r * n + c) - mean) * inv, dxhat = w.get(r * n + c) * gamma.get(c);
      m1 += dxhat / n;
      m2 += dxhat * xhat / n;
      gg.set(c, gg.get(c) + w.get(r * n + c) * xhat);
      gb.set(c, gb.get(c) + w.get(r * n + c));
    }
    for (int c = 0; c < n; ++c) {
      double xhat = (x.get(r * n + c) - mean) * inv, dxhat = w.get(r * n + c) * gamma.get(c);
      gx.set(r * n + c, inv * (dxhat - m1 - xhat * m2));
    }
  }
  require_close(d.jt[0], gx, 1e-10);
  require_close(d.jt[1], gg, 1e-10);
  require_close(d.jt[2], gb, 1e-10);
}

TEST_CASE("transpose kernels: cumsum gradient is the reversed cumsum of w") {
  DotTest d = dot_test(example_in("cumsum.tsr", true), 6);
  const Array& w = d.w[0];
  Array g(DType::f64, {8, 1024});
  for (int r = 0; r < 8; ++r) {
    double s = 0;
    for (int c = 1023; c >= 0; --c) g.set(r * 1024 + c, s += w.get(r * 1024 + c));
  }
  require_close(d.jt[0], g, 1e-12);
}

TEST_CASE("transpose kernels: gather_rows scatters the cotangent rows, repeats summed") {
  Module m = example_in("gather_rows.tsr", true);
  std::vector<Array> x = random_inputs(*m.entry(), 7);  // idx in [0, 8): rows repeat
  DotTest d = dot_test(m, 7, x);
  const Array &idx = d.x[0], &w = d.w[0];
  Array g(DType::f64, {1024, 128});
  for (int i = 0; i < 16; ++i)
    for (int c = 0; c < 128; ++c) {
      int64_t row = static_cast<int64_t>(idx.get(i));
      g.set(row * 128 + c, g.get(row * 128 + c) + w.get(i * 128 + c));
    }
  require_close(d.jt[0], g, 1e-12);
}

// ---- composed forms --------------------------------------------------------------

// main(primals..., cotangents...) of the vjp pass at random inputs.
std::vector<Array> vjp_inputs(const Module& vjp, uint32_t seed) { return random_inputs(*vjp.entry(), seed); }

TEST_CASE("transpose kernels: vjp after discharge computes what vjp computes") {
  for (const std::string& name : kZoo) {
    INFO(name);
    Module src = example_in(name, true);
    Module vjp = run_pipeline(src, "vjp");
    Module dis = run_pipeline(src, "vjp,discharge");
    std::vector<Array> in = vjp_inputs(vjp, 8);
    std::vector<Array> want = interp::run_function(vjp, "main", in);
    std::vector<Array> got = interp::run_function(dis, "main", in);
    REQUIRE(got.size() == want.size());
    REQUIRE(want.size() > src.entry()->outputs().size());
    for (size_t i = 0; i < got.size(); ++i) require_close(got[i], want[i], 1e-12);
  }
}

TEST_CASE("transpose kernels: prove proves every claim of each vjp'd zoo program") {
  for (const std::string& name : kZoo) {
    INFO(name);
    prove::Options opts;
    if (name == "gather_rows.tsr") opts.assumptions.push_back(prove::parse_assumption("idx in [0, 1024)"));
    std::vector<prove::Obligation> obs = prove::prove_module(run_pipeline(example_in(name, false), "vjp"), opts);
    int transposed = 0;
    for (const prove::Obligation& ob : obs) {
      INFO(ob.line() << " " << ob.detail);
      CHECK(ob.verdict == prove::Verdict::proved);
      transposed += ob.call.find("_transpose") != std::string::npos;
    }
    CHECK(transposed >= 5);
  }
}

TEST_CASE("transpose kernels: dot-product test of vmap(matmul)") {
  Module batched = run_pipeline(parse(kMatmul), "vmap{axis_size=3}");
  check_dot(replace_f64(batched), 1e-10);
}

// vmap puts the batch on a vmapped grid axis the kernel does not see; the
// checkpoint arrays get a block per point of the whole grid, batch included.
TEST_CASE("transpose kernels: vjp of vmap(flash attention) is the vjp of each batch element") {
  Module src = example_in("flash_attention.tsr", true);
  Module one = run_pipeline(src, "vjp");
  Module batched = run_pipeline(src, "vmap{axis_size=2},vjp");
  std::vector<Array> in = random_inputs(*batched.entry(), 21);
  std::vector<Array> got = interp::run_function(batched, "main", in);
  for (int64_t b = 0; b < 2; ++b) {
    std::vector<Array> slice;
    for (const Array& a : in) slice.push_back(batch_element(a, b));
    std::vector<Array> want = interp::run_function(one, "main", slice);
    REQUIRE(want.size() == got.size());
    for (size_t i = 0; i < got.size(); ++i) require_close(batch_element(got[i], b), want[i], 1e-12);
  }
  for (const prove::Obligation& ob : prove::prove_module(run_pipeline(example_in("flash_attention.tsr", false),
                                                                      "vmap{axis_size=2},vjp"))) {
    INFO(ob.line() << " " << ob.detail);
    CHECK(ob.verdict == prove::Verdict::proved);
  }
}

// A running sum over the whole grid in linear scratch: its cotangent flows
// back through the grid in exactly reverse order, so the grid may not be
// reordered, and w's block (0, j), revisited along the outer axis i, gets
// partial cotangents (one slice per i) summed after the call.
const char* kScan2d = R"(
index_map @ij(%i: i32, %j: i32) -> (i32, i32) { return %i, %j }
index_map @j_only(%i: i32, %j: i32) -> (i32, i32) { return 0, %j }
kernel @scan_kernel(%x: ref<f32[4,8], vmem>, %w: ref<f32[4,8], vmem>, %o: ref<f32[4,8], vmem>, %s: ref<f32[4,8], vmem>) {
  %i = program_id[axis=0]
  %j = program_id[axis=1]
  %i0 = eq %i, 0
  %j0 = eq %j, 0
  %first = and %i0, %j0
  cond[branches=[
    fn(%s0: ref<f32[4,8], vmem>) { },
    fn(%s1: ref<f32[4,8], vmem>) {
      %z = broadcast_in_dim[shape=(4, 8), broadcast_dimensions=()] 0.0:f32
      swap %s1[:, :], %z
    }
  ]] %first, %s
  %a = get %x[:, :]
  %b = get %w[:, :]
  %p = mul %a, %b
  addupdate %s[:, :], %p
  %v = get %s[:, :]
  swap %o[:, :], %v
}
func @main(%x: f32[8,24], %w: f32[4,24]) -> f32[8,24] {
  %o = pallas_call[kernel=@scan_kernel, grid=(2, 3), in_specs=[spec((4, 8), @ij), spec((4, 8), @j_only)],
                   out_specs=[spec((4, 8), @ij)], out_shapes=[f32[8,24]], scratch=[ref<f32[4,8], vmem>],
                   dimension_semantics=(arbitrary, arbitrary)] %x, %w
  return %o
}
)";

TEST_CASE("transpose kernels: linear scratch keeps the grid order; a revisit on an outer axis gets partials") {
  std::vector<std::string> notes;
  transpose::set_pallas_call_note_sink([&](const std::string& n) { notes.push_back(n); });
  Module m = parse(kScan2d);
  Module vjp = run_pipeline(m, "vjp");
  transpose::set_pallas_call_note_sink(nullptr);
  REQUIRE(notes.size() == 1);
  CHECK(notes[0] == "t.tsr:25:3: note: transpose: the cotangent of input \"w_dot\" is summed from partial cotangents "
                    "outside the kernel: the kernel carries linear state from step to step, so the grid cannot be "
                    "reordered");
  const Op& call = vjp.entry()->ops().at(2);
  REQUIRE(call.prim->name == "pallas_call");
  GridMapping g = grid_mapping(call);
  CHECK(g.grid == std::vector<int64_t>{2, 3});
  CHECK(g.out_types[1].shape() == Shape{2, 4, 24});  // one slice of w's cotangent per i
  check_dot(replace_f64(m), 1e-10);
  check_dot(m, 1e-4);
  for (const prove::Obligation& ob : prove::prove_module(vjp)) {
    INFO(ob.line() << " " << ob.detail);
    CHECK(ob.verdict == prove::Verdict::proved);
  }
}

// o = 2 o + x w, accumulated along k: the tangent kernel reads the tangent
// output block, so its cotangent block is carried from visit to visit in the
// transposed kernel and those visits must stay consecutive. w's block (0, k)
// is revisited along i, which would need i innermost: w gets partials.
const char* kScaledAccumulation = R"(
index_map @xk(%i: i32, %k: i32) -> (i32, i32) { return %i, %k }
index_map @wk(%i: i32, %k: i32) -> (i32, i32) { return 0, %k }
index_map @oi(%i: i32, %k: i32) -> (i32, i32) { return %i, 0 }
kernel @k(%x: ref<f32[4,8], vmem>, %w: ref<f32[4,8], vmem>, %o: ref<f32[4,8], vmem>) {
  %k = program_id[axis=1]
  %first = eq %k, 0
  cond[branches=[
    fn(%o0: ref<f32[4,8], vmem>) { },
    fn(%o1: ref<f32[4,8], vmem>) {
      %z = broadcast_in_dim[shape=(4, 8), broadcast_dimensions=()] 0.0:f32
      swap %o1[:, :], %z
    }
  ]] %first, %o
  %a0 = get %x[:, :]
  %wb = get %w[:, :]
  %a = mul %a0, %wb
  %prev = get %o[:, :]
  %twice = mul %prev, 2.0
  %next = add %twice, %a
  swap %o[:, :], %next
}
func @main(%x: f32[8,24], %w: f32[4,24]) -> f32[8,8] {
  %out = pallas_call[kernel=@k, grid=(2, 3), in_specs=[spec((4, 8), @xk), spec((4, 8), @wk)], out_specs=[spec((4, 8), @oi)],
                     out_shapes=[f32[8,8]], dimension_semantics=(parallel, arbitrary)] %x, %w
  return %out
}
)";

TEST_CASE("transpose kernels: a cotangent block carried across visits keeps its visits consecutive") {
  std::vector<std::string> notes;
  transpose::set_pallas_call_note_sink([&](const std::string& n) { notes.push_back(n); });
  Module m = parse(kScaledAccumulation);
  Module vjp = run_pipeline(m, "vjp");
  transpose::set_pallas_call_note_sink(nullptr);
  REQUIRE(notes.size() == 1);
  CHECK(notes[0] == "t.tsr:24:3: note: transpose: the cotangent of input \"w_dot\" is summed from partial cotangents "
                    "outside the kernel: the cotangent blocks the kernel carries from step to step need another grid "
                    "order");
  GridMapping g = grid_mapping(vjp.entry()->ops().at(2));
  CHECK(g.grid == std::vector<int64_t>{2, 3});  // not reordered
  check_dot(replace_f64(m), 1e-10);
  check_dot(m, 1e-4);
}

// ---- what is not supported -------------------------------------------------------

TEST_CASE("transpose kernels: a dynamic grid and input_output_aliases are located errors") {
  std::string dynamic = error_of([] {
    run_pipeline(parse(R"(
kernel @k(%x: ref<f32[4,8], vmem>, %o: ref<f32[4,8], vmem>) {
  %a = get %x[:, :]
  %b = mul %a, %a
  swap %o[:, :], %b
}
func @main(%g: i32, %x: f32[8,8]) -> f32[8,8] {
  %out = pallas_call[kernel=@k, grid=(?), in_specs=[spec((4, 8), fn(%i: i32) -> (i32, i32) { return %i, 0 })],
                     out_specs=[spec((4, 8), fn(%i2: i32) -> (i32, i32) { return %i2, 0 })],
                     out_shapes=[f32[8,8]]] %g, %x
  return %out
}
)"),
                 "vjp{wrt=1}");
  });
  CHECK(dynamic == "t.tsr:8:3: error: transpose: pallas_call with a dynamic grid size is not supported");
  std::string aliased = error_of([] {
    run_pipeline(parse(R"(
index_map @rows(%i: i32) -> (i32, i32) { return %i, 0 }
kernel @k(%x: ref<f32[4,8], vmem>, %acc: ref<f32[4,8], vmem>, %o: ref<f32[4,8], vmem>) {
  %a = get %x[:, :]
  %b = mul %a, %a
  addupdate %o[:, :], %b
}
func @main(%x: f32[8,8], %acc: f32[8,8]) -> f32[8,8] {
  %out = pallas_call[kernel=@k, grid=(2), in_specs=[spec((4, 8), @rows), spec((4, 8), @rows)],
                     out_specs=[spec((4, 8), @rows)], out_shapes=[f32[8,8]], input_output_aliases=[(1, 0)]] %x, %acc
  return %out
}
)"),
                 "vjp");
  });
  CHECK(aliased == "t.tsr:9:3: error: transpose: pallas_call with input_output_aliases is not supported: output "
                   "\"o_dot\" starts from the linear input \"acc_dot\" (its cotangent would flow to that input)");
}

// o = x * (the previous step's x block), through scratch read in a branch:
// the scratch is checkpointed, so its transpose passes the dot-product test.
const char* kCarriedInBranch = R"(
index_map @rows(%i: i32) -> (i32, i32) { return %i, 0 }
kernel @k(%x: ref<f64[4,8], vmem>, %o: ref<f64[4,8], vmem>, %m: ref<f64[4,8], vmem>) {
  %i = program_id[axis=0]
  %later = ne %i, 0
  cond[branches=[
    fn(%x0: ref<f64[4,8], vmem>, %o0: ref<f64[4,8], vmem>, %m0: ref<f64[4,8], vmem>) {
      %a0 = get %x0[:, :]
      swap %o0[:, :], %a0
      swap %m0[:, :], %a0
    },
    fn(%x1: ref<f64[4,8], vmem>, %o1: ref<f64[4,8], vmem>, %m1: ref<f64[4,8], vmem>) {
      %a1 = get %x1[:, :]
      %prev = get %m1[:, :]
      %y = mul %a1, %prev
      swap %o1[:, :], %y
      swap %m1[:, :], %a1
    }
  ]] %later, %x, %o, %m
}
func @main(%x: f64[8,8]) -> f64[8,8] {
  %out = pallas_call[kernel=@k, grid=(2), in_specs=[spec((4, 8), @rows)], out_specs=[spec((4, 8), @rows)],
                     out_shapes=[f64[8,8]], scratch=[ref<f64[4,8], vmem>], dimension_semantics=(arbitrary)] %x
  return %out
}
)";

TEST_CASE("transpose kernels: carried scratch read inside a cond branch is checkpointed") {
  Module src = parse(kCarriedInBranch);
  check_dot(src, 1e-10);
  // o = [x0; x1 * x0]: the cotangent of x0 gets w0 + w1 * x1, of x1 gets w1 * x0.
  DotTest d = dot_test(src, 9);
  const Array &x = d.x[0], &w = d.w[0];
  Array g(DType::f64, {8, 8});
  for (int e = 0; e < 32; ++e) {
    g.set(e, w.get(e) + w.get(32 + e) * x.get(32 + e));
    g.set(32 + e, w.get(32 + e) * x.get(e));
  }
  require_close(d.jt[0], g, 1e-12);
  for (const prove::Obligation& ob : prove::prove_module(run_pipeline(src, "vjp"))) {
    INFO(ob.line() << " " << ob.detail);
    CHECK(ob.verdict == prove::Verdict::proved);
  }
}

TEST_CASE("transpose kernels: a tangent reading a non-linear output block carried across steps is a located error") {
  // o accumulates a running product along the arbitrary axis: o_dot reads o.
  std::string e = error_of([] { run_pipeline(parse(R"(
index_map @rows(%i: i32) -> (i32, i32) { return %i, 0 }
index_map @first(%i: i32) -> (i32, i32) { return 0, 0 }
kernel @k(%x: ref<f32[4,8], vmem>, %o: ref<f32[4,8], vmem>) {
  %i = program_id[axis=0]
  %a = get %x[:, :]
  %start = eq %i, 0
  cond[branches=[
    fn(%o0: ref<f32[4,8], vmem>, %a0: f32[4,8]) {
      %prev = get %o0[:, :]
      %y = mul %prev, %a0
      swap %o0[:, :], %y
    },
    fn(%o1: ref<f32[4,8], vmem>, %a1: f32[4,8]) {
      swap %o1[:, :], %a1
    }
  ]] %start, %o, %a
}
func @main(%x: f32[8,8]) -> f32[4,8] {
  %out = pallas_call[kernel=@k, grid=(2), in_specs=[spec((4, 8), @rows)], out_specs=[spec((4, 8), @first)],
                     out_shapes=[f32[4,8]], dimension_semantics=(arbitrary)] %x
  return %out
}
)"), "vjp"); });
  CHECK(e == "t.tsr:8:3: error: transpose: pallas_call kernel @k_jvp: this `cond` of a tangent uses a value read from "
             "output block %o, state the forward kernel carries from grid step to step; the transposed kernel walks "
             "the grid backwards and cannot recompute it (not supported)");
}

TEST_CASE("transpose kernels: a tangent input in `any` memory the kernel reads by DMA gets its cotangent by DMA") {
  // The kernel copies x (in `any` memory) into VMEM with a DMA and squares it:
  // x_ct = 2 x ct, moved back into `any` memory by the DMA's transpose.
  Module dm = run_pipeline(parse(R"(
kernel @k(%x: ref<f32[8,128], any>, %o: ref<f32[8,128], vmem>, %buf: ref<f32[8,128], vmem>,
          %sem: ref<dma_sem[1], semaphore>) {
  dma_start %x[:, :], %buf[:, :], %sem[0]
  dma_wait %sem[0], %buf[:, :]
  %a = get %buf[:, :]
  %b = mul %a, %a
  swap %o[:, :], %b
}
func @main(%x: f32[8,128]) -> f32[8,128] {
  %out = pallas_call[kernel=@k, grid=(1), in_specs=[spec(mem=any)], out_specs=[spec()], out_shapes=[f32[8,128]],
                     scratch=[ref<f32[8,128], vmem>, ref<dma_sem[1], semaphore>]] %x
  return %out
}
)"), "vjp");
  verify_or_throw(dm);
  std::vector<Array> din = random_inputs(*dm.entry(), 4);
  std::vector<Array> dout = interp::run_function(dm, "main", din);
  REQUIRE(dout.size() == 2);
  for (int64_t i = 0; i < dout[1].size(); ++i) {
    double want = 2 * din[0].get(i) * din[1].get(i);
    REQUIRE(std::abs(dout[1].get(i) - want) <= 1e-5 * (1 + std::abs(want)));
  }
  // Unread: the cotangent of y is zero and no transposed call computes it.
  Module m = run_pipeline(parse(R"(
kernel @k(%x: ref<f32[8,128], vmem>, %y: ref<f32[8,128], any>, %o: ref<f32[8,128], vmem>) {
  %a = get %x[:, :]
  %b = mul %a, %a
  swap %o[:, :], %b
}
func @main(%x: f32[8,128], %y: f32[8,128]) -> f32[8,128] {
  %out = pallas_call[kernel=@k, grid=(1), in_specs=[spec(), spec(mem=any)], out_specs=[spec()],
                     out_shapes=[f32[8,128]]] %x, %y
  return %out
}
)"), "vjp");
  verify_or_throw(m);
  std::vector<Array> in = random_inputs(*m.entry(), 5);
  std::vector<Array> out = interp::run_function(m, "main", in);
  REQUIRE(out.size() == 3);
  for (int64_t i = 0; i < out[2].size(); ++i) REQUIRE(out[2].get(i) == 0.0);
  for (int64_t i = 0; i < out[1].size(); ++i) {
    double want = 2 * in[0].get(i) * in[2].get(i);
    REQUIRE(std::abs(out[1].get(i) - want) <= 1e-5 * (1 + std::abs(want)));
  }
}

namespace {

// Every claim of every pallas_call in `m`'s entry proved.
void check_all_proved(const Module& m) {
  int calls = 0;
  for (const Op& op : m.entry()->ops()) {
    if (op.prim->name != "pallas_call") continue;
    ++calls;
    for (const prove::Obligation& ob : prove::prove_call(op, prove::call_name(op), {})) {
      INFO(ob.line() << " " << ob.detail);
      CHECK(ob.verdict == prove::Verdict::proved);
    }
  }
  CHECK(calls >= 2);
}

}  // namespace

TEST_CASE("transpose kernels: a SparseCore kernel is a located error") {
  std::string e = error_of([] { run_pipeline(example_in("sc_gather_scatter.tsr", false), "vjp"); });
  CHECK(e.find("sc_gather_scatter.tsr:39:3: error: transpose: pallas_call of a SparseCore kernel "
               "(kernel_type=sc_vector_subcore) is not supported yet: its transpose would zero and move whole VMEM "
               "blocks") == 0);
}

TEST_CASE("vjp of an indirect gather DMA is a scatter-add of the cotangent rows; repeated ids add up") {
  Module m = run_pipeline(parse(R"(
kernel @k(%ids: ref<i32[8], vmem>, %t: ref<f32[32,128], any>, %o: ref<f32[8,128], vmem>,
          %rows: ref<f32[8,128], vmem>, %sem: ref<dma_sem, semaphore>) {
  dma_start %t[%ids, :], %rows[:, :], %sem
  dma_wait %sem, %rows[:, :]
  %a = get %rows[:, :]
  %b = mul %a, 3.0
  swap %o[:, :], %b
}
func @main(%ids: i32[8], %t: f32[32,128]) -> f32[8,128] {
  %out = pallas_call[kernel=@k, grid=(1), in_specs=[spec(), spec(mem=any)], out_specs=[spec()],
                     out_shapes=[f32[8,128]], scratch=[ref<f32[8,128], vmem>, ref<dma_sem, semaphore>]] %ids, %t
  return %out
}
)"), "vjp");
  verify_or_throw(m);
  // The rows are data (the offsets), which the prover does not model: their
  // bounds are unknown, as in the forward; the protocol is proved.
  for (const Op& op : m.entry()->ops())
    if (op.prim->name == "pallas_call")
      for (const prove::Obligation& ob : prove::prove_call(op, prove::call_name(op), {})) {
        INFO(ob.line() << " " << ob.detail);
        CHECK(ob.verdict != prove::Verdict::failed);
        if (ob.line().find("semaphore balance") != std::string::npos || ob.line().find("DMA races") != std::string::npos)
          CHECK(ob.verdict == prove::Verdict::proved);
      }
  std::vector<Array> in = random_inputs(*m.entry(), 6);  // ids, t, ct0
  const int64_t ids[8] = {3, 0, 3, 31, 7, 3, 0, 12};
  for (int64_t i = 0; i < 8; ++i) in[0].set(i, static_cast<double>(ids[i]));
  interp::RunOptions o;
  o.detect_races = true;
  std::vector<Array> out = interp::run_function(m, "main", in, o);
  REQUIRE(out.size() == 2);
  double worst = 0;
  for (int64_t r = 0; r < 32; ++r)
    for (int64_t c = 0; c < 128; ++c) {
      double want = 0;
      for (int64_t i = 0; i < 8; ++i)
        if (ids[i] == r) want += 3 * in[2].get(i * 128 + c);
      worst = std::max(worst, std::abs(out[1].get(r * 128 + c) - want));
    }
  CHECK(worst <= 1e-5);
}

TEST_CASE("overwritten_at_each_step: scratch a step overwrites whole before anything else touches it carries nothing") {
  Module m = parse_module(R"(
kernel @k(%x: ref<f32[8,128], vmem>, %o: ref<f32[8,128], vmem>, %whole: ref<f32[8,128], vmem>,
          %part: ref<f32[8,128], vmem>, %read: ref<f32[8,128], vmem>, %unused: ref<f32[8,128], vmem>) {
  %v = get %x[:, :]
  swap %whole[:, :], %v
  %h = get %x[0:4, :]
  swap %part[0:4, :], %h
  %r = get %read[:, :]
  swap %read[:, :], %v
  %a = get %whole[:, :]
  %b = add %a, %r
  swap %o[:, :], %b
}
)", "t.tsr");
  const Body& k = *m.find("k");
  auto param = [&](int i) { return k.params()[static_cast<size_t>(i)]; };
  CHECK(transpose::overwritten_at_each_step(k, param(2)));    // whole: swapped whole first
  CHECK(!transpose::overwritten_at_each_step(k, param(3)));   // part: only rows 0..3
  CHECK(!transpose::overwritten_at_each_step(k, param(4)));   // read: read before it is swapped
  CHECK(!transpose::overwritten_at_each_step(k, param(5)));   // unused: no swap, so kept as carried (conservative)
}

TEST_CASE("vjp through a remote DMA or a core_map on linear Refs: located errors") {
  // halo_exchange sends rows of its input by remote DMA: their tangents are linear Refs a remote DMA copies.
  CHECK(error_of([] { run_pipeline(example("halo_exchange.tsr"), "vjp"); }) ==
        "halo_exchange.tsr:51:3: error: transpose: `dma_start` to another device (a remote copy of linear Refs) has no "
        "transpose rule yet: it would be a remote copy in the opposite direction, with the semaphores mirrored (not "
        "supported)");
  // Cores scaling rows of a Ref in place.
  Module cm = parse_module(R"(func @main(%x: f32[2,128]) -> f32[2,128] {
  %y = run_scoped[body=fn(%xx: f32[2,128], %r: ref<f32[2,128], vmem>) -> f32[2,128] {
    swap %r[:, :], %xx
    core_map[body=fn(%rr: ref<f32[2,128], vmem>) {
      %c = axis_index[axis_name=core]
      %v = get %rr[%c, :]
      %w = mul %v, 2.0
      swap %rr[%c, :], %w
    }, mesh_axes=(core), mesh_shape=(2)] %r
    %o = get %r[:, :]
    return %o
  }] %x
  return %y
}
)", "cm.tsr");
  CHECK(error_of([&] { run_pipeline(cm, "vjp"); }) ==
        "cm.tsr:4:5: error: transpose: `core_map` has no transpose rule (its cores communicate through Refs and semaphores; "
        "a transpose needs the communication schedule reversed: not implemented), but takes the linear value %r_dot");
}

// ---- second order -----------------------------------------------------------------

namespace {

// <a, b> over the float arrays of two lists (non-float entries skipped).
double dot_all(const std::vector<Array>& a, const std::vector<Array>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    if (is_float(a[i].dtype())) s += dot(a[i], b[i]);
  return s;
}

// Second order, two independent references. G = vjp(F) maps (x..., c...) to
// (F(x)..., J(x)^T c); vjp(G) at the cotangents (a, b) of G's outputs gives
//   - the dot-product form of central finite differences of G (f64):
//     <vjp(G)(a, b), u> = d/dh <(a, b), G(p + h u)> for a random direction u;
//   - for x, what vjp(jvp(F)) gives at the tangent b and the cotangents
//     (a, c): both are d/dx [<a, F(x)> + <c, J(x) b>], since
//     <b, J^T c> = <c, J b>.
void check_second_order(const Module& src, uint32_t seed) {
  Module g = run_pipeline(src, "vjp");
  Module gg = run_pipeline(g, "vjp");
  Module hh = run_pipeline(src, "jvp,vjp");
  const Body& F = *src.entry();
  const Body& G = *g.entry();
  std::vector<Array> p = random_inputs(G, seed);
  std::vector<Array> gout = interp::run_function(g, "main", p);
  std::vector<Array> w(gout.size());  // (a, b); empty for integer outputs
  std::vector<Array> in = p;
  for (size_t k = 0; k < gout.size(); ++k)
    if (is_float(gout[k].dtype())) {
      w[k] = random_array(G.outputs()[k].type(), seed + 50 + static_cast<uint32_t>(k));
      in.push_back(w[k]);
    }
  std::vector<Array> got = interp::run_function(gg, "main", in);
  std::vector<Array> jt(got.begin() + static_cast<long>(gout.size()), got.end());  // per float input of G

  // Finite differences along u.
  std::vector<Array> pp = p, pm = p;
  double rhs = 0;
  const double h = 1e-5;
  size_t k = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (!is_float(p[i].dtype())) continue;
    Array dir = random_array(G.params()[i]->type, seed + 90 + static_cast<uint32_t>(i));
    REQUIRE(k < jt.size());
    rhs += dot(jt[k++], dir);
    pp[i] = Array(p[i].dtype(), p[i].shape());
    pm[i] = Array(p[i].dtype(), p[i].shape());
    for (int64_t e = 0; e < dir.size(); ++e) {
      pp[i].set(e, p[i].get(e) + h * dir.get(e));
      pm[i].set(e, p[i].get(e) - h * dir.get(e));
    }
  }
  REQUIRE(k == jt.size());
  double lhs = (dot_all(w, interp::run_function(g, "main", pp)) - dot_all(w, interp::run_function(g, "main", pm))) / (2 * h);
  INFO("finite differences " << lhs << ", vjp of vjp " << rhs);
  CHECK(std::abs(lhs - rhs) <= 1e-6 * (1 + std::abs(lhs)));

  // vjp(jvp(F)): (x..., x_dot = b..., a..., c...) -> (outputs..., x cotangents..., ...).
  size_t np = F.params().size(), nout = F.outputs().size();
  std::vector<Array> hin(p.begin(), p.begin() + static_cast<long>(np));
  std::vector<Array> a, b, c;
  for (size_t o = 0; o < nout; ++o)
    if (is_float(gout[o].dtype())) a.push_back(w[o]);
  for (size_t j = nout; j < gout.size(); ++j) b.push_back(w[j]);
  for (size_t j = np; j < p.size(); ++j) c.push_back(p[j]);
  hin.insert(hin.end(), b.begin(), b.end());
  hin.insert(hin.end(), a.begin(), a.end());
  hin.insert(hin.end(), c.begin(), c.end());
  std::vector<Array> hout = interp::run_function(hh, "main", hin);
  size_t h_outs = nout + c.size();
  REQUIRE(hout.size() >= h_outs + b.size());
  for (size_t x = 0; x < b.size(); ++x) {
    CAPTURE(x);
    require_close(jt[x], hout[h_outs + x], 1e-10);
  }
}

// A loss accumulated across the two steps of an `arbitrary` axis, zeroed at
// the first: the first vjp's kernel reads the loss cotangent at both steps
// and its zeroing transposes to a write into that input block at the last.
const char* kLossOverSteps = R"(
index_map @rows(%i: i32) -> (i32, i32) { return %i, 0 }
kernel @k(%x: ref<f64[4,8], vmem>, %loss: ref<f64[1], vmem>) {
  %i = program_id[axis=0]
  %first = eq %i, 0
  cond[branches=[
    fn(%l0: ref<f64[1], vmem>) { },
    fn(%l1: ref<f64[1], vmem>) {
      %zero = broadcast_in_dim[shape=(1), broadcast_dimensions=()] 0.0:f64
      swap %l1[:], %zero
    }
  ]] %first, %loss
  %a = get %x[:, :]
  %sq = mul %a, %a
  %c = mul %sq, %a
  %s = reduce_sum[axes=(0, 1)] %c
  %sb = broadcast_in_dim[shape=(1), broadcast_dimensions=()] %s
  addupdate %loss[:], %sb
}
func @main(%x: f64[8,8]) -> f64[1] {
  %loss = pallas_call[kernel=@k, grid=(2), in_specs=[spec((4, 8), @rows)], out_specs=[spec()],
                      out_shapes=[f64[1]], dimension_semantics=(arbitrary)] %x
  return %loss
}
)";

}  // namespace

TEST_CASE("second order: vjp of vjp equals finite differences and vjp of jvp (f64), on the zoo") {
  for (std::string name : {"add.tsr", "matmul.tsr", "softmax.tsr", "layernorm.tsr", "cumsum.tsr", "row_sum.tsr",
                                  "gather_rows.tsr", "train_step.tsr"}) {
    CAPTURE(name);
    check_second_order(example_in(name, true), 31);
  }
}

TEST_CASE("second order: a loss accumulated across grid steps (the first vjp's kernel reads its cotangent at each)") {
  check_second_order(parse(kLossOverSteps), 32);
  // The first transpose leaves out the dead zeroing of the cotangent input.
  Module g = run_pipeline(parse(kLossOverSteps), "vjp");
  CHECK(print_module(g).find("swap %l1_ct") == std::string::npos);
}

// The first transpose of flash attention reads and zeroes the output
// cotangent only at the first kv step of each block (the forward's last):
// the zeroing is left out, so the second transpose gets as far as the
// checkpoint of the scratch, which an earlier vjp's aliases stop.
TEST_CASE("second order: flash attention's is a located error naming the earlier vjp's aliases") {
  Module g = run_pipeline(example_in("flash_attention.tsr", true), "vjp");
  CHECK(print_module(g).find("swap %o3_ct") == std::string::npos);
  std::string err = error_of([&] { run_pipeline(g, "vjp"); });
  CHECK(err.find("error: transpose: pallas_call kernel @flash_kernel_jvp_restored_transpose_jvp carries scratch from "
                 "step to step that its tangent reads, and has input_output_aliases (the zeros partial cotangents "
                 "start from, when an earlier vjp made this call)") != std::string::npos);
}

// An output block the tangent kernel writes at its last visit, twice in the
// same branch: the transposed kernel's zeroing between the two reads is live.
TEST_CASE("a last-visit write read again in the same branch keeps its cotangent zeroing") {
  Module m = parse(R"(
index_map @rows(%i: i32, %j: i32) -> (i32, i32) { return %i, 0 }
kernel @k(%x: ref<f64[4,8], vmem>, %o: ref<f64[4,8], vmem>) {
  %j = program_id[axis=1]
  %last = eq %j, 1
  cond[branches=[
    fn(%x0: ref<f64[4,8], vmem>, %o0: ref<f64[4,8], vmem>) { },
    fn(%x1: ref<f64[4,8], vmem>, %o1: ref<f64[4,8], vmem>) {
      %a = get %x1[:, :]
      %s = sin %a
      swap %o1[:, :], %s
      %t = mul %a, %a
      swap %o1[:, :], %t
    }
  ]] %last, %x, %o
}
func @main(%x: f64[8,8]) -> f64[8,8] {
  %out = pallas_call[kernel=@k, grid=(2, 2), in_specs=[spec((4, 8), @rows)], out_specs=[spec((4, 8), @rows)],
                     out_shapes=[f64[8,8]], dimension_semantics=(parallel, arbitrary)] %x
  return %out
}
)");
  DotTest d = dot_test(m, 46);
  Array g(DType::f64, {8, 8});
  for (int64_t e = 0; e < 64; ++e) g.set(e, 2 * d.x[0].get(e) * d.w[0].get(e));
  require_close(d.jt[0], g, 1e-12);
  // The zeroing stays, so the transposed kernel writes its input block:
  // state a second transpose refuses, located.
  CHECK(error_of([&] { run_pipeline(m, "vjp,vjp"); })
            .find("uses a value read from input block %o_ct (which the kernel writes)") != std::string::npos);
}

// ---- kernels the reverse mode used to get wrong ---------------------------------

// An f16 matmul accumulated in f32 run_scoped scratch: linearize splits the
// run_scoped (primal scratch and its tangent twin), so the primal output
// stays f16 and computed, and the cotangents are ct @ w^T and x^T @ ct.
TEST_CASE("vjp of an f16 matmul accumulated in f32 run_scoped scratch keeps the primal output; cotangents right") {
  Module m = parse(R"(
index_map @rows(%i: i32) -> (i32, i32) { return %i, 0 }
kernel @mm(%x: ref<f16[8,16], vmem>, %w: ref<f16[16,8], vmem>, %o: ref<f16[8,8], vmem>) {
  run_scoped[body=fn(%xr: ref<f16[8,16], vmem>, %wr: ref<f16[16,8], vmem>, %or: ref<f16[8,8], vmem>,
                     %acc: ref<f32[8,8], vmem>) {
    %z = broadcast_in_dim[shape=(8, 8), broadcast_dimensions=()] 0.0:f32
    swap %acc[:, :], %z
    %a = get %xr[:, :]
    %b = get %wr[:, :]
    %p = dot_general[lhs_contracting=(1), rhs_contracting=(0), preferred_element_type=f32] %a, %b
    addupdate %acc[:, :], %p
    %r = get %acc[:, :]
    %h = convert_element_type[new_dtype=f16] %r
    swap %or[:, :], %h
  }] %x, %w, %o
}
func @main(%x: f16[16,16], %w: f16[16,8]) -> f16[16,8] {
  %o = pallas_call[kernel=@mm, grid=(2), in_specs=[spec((8, 16), @rows), spec()],
                   out_specs=[spec((8, 8), @rows)], out_shapes=[f16[16,8]], dimension_semantics=(parallel)] %x, %w
  return %o
}
)");
  Module v = run_pipeline(m, "vjp", {false, true, nullptr, ""});
  const Body& f = *v.entry();
  REQUIRE(f.outputs().size() == 3);
  CHECK(f.outputs()[0].type().str() == "f16[16,8]");
  CHECK(f.outputs()[0].is_var());
  std::vector<Array> in = random_inputs(f, 41);
  for (Array& a : in)
    for (int64_t e = 0; e < a.size(); ++e) a.set(e, a.get(e) / 2);  // [-1, 1): no f16 overflow
  std::vector<Array> got = interp::run_function(v, "main", in);
  std::vector<Array> want = interp::run_function(m, "main", {in[0], in[1]});
  require_close(got[0], want[0], 0);
  const Array &x = in[0], &w = in[1], &ct = in[2];
  Array xw(DType::f16, {16, 16}), ww(DType::f16, {16, 8});
  for (int r = 0; r < 16; ++r)
    for (int k = 0; k < 16; ++k) {
      double s = 0;
      for (int j = 0; j < 8; ++j) s += ct.get(r * 8 + j) * w.get(k * 8 + j);
      xw.set(r * 16 + k, s);
    }
  for (int k = 0; k < 16; ++k)
    for (int j = 0; j < 8; ++j) {
      double s = 0;
      for (int r = 0; r < 16; ++r) s += x.get(r * 16 + k) * ct.get(r * 8 + j);
      ww.set(k * 8 + j, s);
    }
  require_close(got[1], xw, 1e-2);
  require_close(got[2], ww, 1e-2);
}

// JAX gives integer outputs no cotangent (float0); neither does vjp here,
// also when a kernel writes one beside float outputs.
TEST_CASE("vjp of a kernel with an integer output beside a float one") {
  Module m = parse(R"(
index_map @rows(%i: i32) -> (i32, i32) { return %i, 0 }
index_map @r1(%i: i32) -> (i32) { return %i }
kernel @k(%x: ref<f64[4,8], vmem>, %o: ref<f64[4,8], vmem>, %am: ref<i32[4], vmem>) {
  %a = get %x[:, :]
  %s = sin %a
  swap %o[:, :], %s
  %m = argmax[axis=1] %a
  swap %am[:], %m
}
func @main(%x: f64[8,8]) -> (f64[8,8], i32[8]) {
  %o, %am = pallas_call[kernel=@k, grid=(2), in_specs=[spec((4, 8), @rows)],
                        out_specs=[spec((4, 8), @rows), spec((4), @r1)], out_shapes=[f64[8,8], i32[8]],
                        dimension_semantics=(parallel)] %x
  return %o, %am
}
)");
  Module v = run_pipeline(m, "vjp", {false, true, nullptr, ""});
  REQUIRE(v.entry()->params().size() == 2);  // x, and the cotangent of the float output only
  std::vector<Array> in = random_inputs(*v.entry(), 42);
  std::vector<Array> got = interp::run_function(v, "main", in);
  std::vector<Array> want = interp::run_function(m, "main", {in[0]});
  REQUIRE(got.size() == 3);
  require_close(got[0], want[0], 0);
  require_close(got[1], want[1], 0);
  Array g(DType::f64, {8, 8});
  for (int64_t e = 0; e < 64; ++e) g.set(e, std::cos(in[0].get(e)) * in[1].get(e));
  require_close(got[2], g, 1e-12);
}

// A masked load and store whose window reaches past the block (masked-off
// lanes outside it): the transposed kernel reads and writes the cotangents
// through the same masks, never out of bounds.
TEST_CASE("transpose of masked load and store touches the cotangent Ref through the forward's mask") {
  Module m = parse(R"(
kernel @k(%x: ref<f64[16], vmem>, %o: ref<f64[16], vmem>) {
  %z = broadcast_in_dim[shape=(16), broadcast_dimensions=()] 0.0:f64
  swap %o[:], %z
  %p = program_id[axis=0]
  %st = add %p, 12
  %r = iota[shape=(8), dimension=0, dtype=i32]
  %m = lt %r, 4
  %v = load %x[ds(%st, 8)], %m, 0.0
  %s = sin %v
  store %o[ds(%st, 8)], %s, %m
}
func @main(%x: f64[16]) -> f64[16] {
  %o = pallas_call[kernel=@k, grid=(1), in_specs=[spec()], out_specs=[spec()], out_shapes=[f64[16]],
                   dimension_semantics=(arbitrary)] %x
  return %o
}
)");
  DotTest d = dot_test(m, 43);
  INFO("<w, J v> = " << d.lhs << ", <J^T w, v> = " << d.rhs);
  CHECK(std::abs(d.lhs - d.rhs) <= 1e-10 * (1 + std::abs(d.lhs)));
  Array g(DType::f64, {16});
  for (int e = 12; e < 16; ++e) g.set(e, std::cos(d.x[0].get(e)) * d.w[0].get(e));
  require_close(d.jt[0], g, 1e-12);
}

// An input with element padding gets partial cotangents (its map is not a
// projection); the zeros they start from are passed in the output's own
// padded blocks, so that the alias pads both alike.
TEST_CASE("vjp of an element-padded input: its partial cotangents start from zeros padded alike") {
  Module m = parse(R"(
index_map @m(%i: i32) -> (i32) {
  %e = mul %i, 8
  return %e
}
index_map @m2(%i: i32) -> (i32) { return %i }
kernel @k(%x: ref<f64[12], vmem>, %o: ref<f64[8], vmem>) {
  %a = get %x[:]
  %c = slice[start_indices=(2), limit_indices=(10)] %a
  %s = sin %c
  %y = mul %s, %c
  swap %o[:], %y
}
func @main(%x: f64[32]) -> f64[32] {
  %o = pallas_call[kernel=@k, grid=(4), in_specs=[spec((element(12, 2, 2)), @m)], out_specs=[spec((8), @m2)],
                   out_shapes=[f64[32]], dimension_semantics=(parallel)] %x
  return %o
}
)");
  Module v = run_pipeline(m, "vjp", {false, true, nullptr, ""});
  std::vector<Array> in = random_inputs(*v.entry(), 44);
  std::vector<Array> got = interp::run_function(v, "main", in);
  REQUIRE(got.size() == 2);
  Array g(DType::f64, {32});
  for (int64_t e = 0; e < 32; ++e) {
    double x = in[0].get(e);
    g.set(e, (std::cos(x) * x + std::sin(x)) * in[1].get(e));
  }
  require_close(got[1], g, 1e-12);
}

// gather_rows' first vjp sums partial cotangents that start from zeros
// aliased to them; its second order is checked above. An output aliased to
// an input that is not differentiated starts from values no tangent changes;
// one aliased to a differentiated input is the error above.
TEST_CASE("vjp of a pallas_call whose output is aliased to an input that is not differentiated") {
  Module m = parse(R"(
index_map @rows(%i: i32) -> (i32, i32) { return %i, 0 }
kernel @k(%x: ref<f32[4,8], vmem>, %acc: ref<f32[4,8], vmem>, %o: ref<f32[4,8], vmem>) {
  %a = get %x[:, :]
  %b = mul %a, %a
  addupdate %o[:, :], %b
}
func @main(%x: f32[8,8], %acc: f32[8,8]) -> f32[8,8] {
  %out = pallas_call[kernel=@k, grid=(2), in_specs=[spec((4, 8), @rows), spec((4, 8), @rows)],
                     out_specs=[spec((4, 8), @rows)], out_shapes=[f32[8,8]], input_output_aliases=[(1, 0)]] %x, %acc
  return %out
}
)");
  Module v = run_pipeline(m, "vjp{wrt=0}", {false, true, nullptr, ""});
  std::vector<Array> in = random_inputs(*v.entry(), 45);
  std::vector<Array> got = interp::run_function(v, "main", in);
  REQUIRE(got.size() == 2);
  Array g(DType::f32, {8, 8});
  for (int64_t e = 0; e < 64; ++e) g.set(e, 2 * in[0].get(e) * in[2].get(e));
  require_close(got[1], g, 1e-6);
}

// ---- kernels that move data themselves: the transpose of DMAs ---------------------


TEST_CASE("vjp of dma_pipeline: dot-product test, gradient 2 ct, finite differences (f64)") {
  Module src = example_in("dma_pipeline.tsr", true);
  check_dot(src, 1e-10);
  Module m = run_pipeline(src, "vjp");
  verify_or_throw(m);
  std::vector<Array> in = random_inputs(*m.entry(), 3);  // x, ct0
  std::vector<Array> out = interp::run_function(m, "main", in);
  REQUIRE(out.size() == 2);
  double worst = 0;
  for (int64_t i = 0; i < out[1].size(); ++i) worst = std::max(worst, std::abs(out[1].get(i) - 2 * in[1].get(i)));
  CHECK(worst == 0);
  // <ct, (F(x + h u) - F(x - h u)) / 2h> = <vjp(ct), u>.
  Array u = random_array(Type::array(in[0].dtype(), in[0].shape()), 4);
  const double h = 1e-3;
  Array xp = in[0].copy(), xm = in[0].copy();
  for (int64_t i = 0; i < u.size(); ++i) {
    xp.set(i, in[0].get(i) + h * u.get(i));
    xm.set(i, in[0].get(i) - h * u.get(i));
  }
  Array fp = interp::run_function(src, "main", {xp})[0], fm = interp::run_function(src, "main", {xm})[0];
  double fd = (dot(in[1], fp) - dot(in[1], fm)) / (2 * h), vj = dot(out[1], u);
  INFO("finite differences " << fd << ", vjp " << vj);
  CHECK(std::abs(fd - vj) <= 1e-8 * (1 + std::abs(fd)));
}

TEST_CASE("vjp of dma_pipeline: every claim proved; 2 cores, shuffled, eager DMAs, racing checked: same numbers") {
  Module m = run_pipeline(example_in("dma_pipeline.tsr", false), "vjp");
  check_all_proved(m);
  std::vector<Array> in = random_inputs(*m.entry(), 5);
  std::vector<Array> want = interp::run_function(m, "main", in);
  interp::RunOptions o;
  o.cores = 2;
  o.grid_seed = 7;
  o.detect_races = true;
  o.dma = interp::RunOptions::Dma::eager;
  std::vector<Array> got = interp::run_function(m, "main", in, o);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) require_close(got[i], want[i], 0);
}

// ---- the transpose of a DMA pipeline is a pipeline (transforms/dma_mirror.h) ----

namespace {

// dma_pipeline cut to 4 chunks of 128 rows: cheap to run.
std::string dma_pipeline_4_chunks() {
  std::string t = replace_all(example_text("dma_pipeline.tsr"), "2048", "512");
  return replace_once(replace_once(t, "lt %next, 16", "lt %next, 4"), "0:i32, 16:i32", "0:i32, 4:i32");
}

int64_t number_after(const std::string& line, const std::string& key) {
  size_t at = line.find("\"" + key + "\": ");
  REQUIRE(at != std::string::npos);
  return std::stoll(line.substr(at + key.size() + 4));
}

// What the timeline of a run of `m` shows of its transposed pallas_call: how
// long it ran and, per DMA it started, the ticks until the wait that ended it.
struct TransposedTimeline {
  int64_t duration = -1;
  std::vector<int64_t> flights;
};

TransposedTimeline transposed_timeline(const Module& m, const std::vector<Array>& in, const std::string& tag) {
  interp::RunOptions o;
  o.timeline_file = (temp_dir(tag) / "timeline.json").string();
  interp::run_function(m, "main", in, o);
  std::istringstream text(read_file(o.timeline_file));
  int64_t from = -1;
  TransposedTimeline t;
  std::map<int64_t, int64_t> begun;  // DMA id -> start tick
  std::vector<std::pair<int64_t, int64_t>> ended;
  for (std::string line; std::getline(text, line);) {
    if (line.find("\"cat\": \"pallas_call\"") != std::string::npos && line.find("_transpose\"") != std::string::npos) {
      from = number_after(line, "ts");
      t.duration = number_after(line, "dur");
    }
    if (line.find("\"cat\": \"dma\"") == std::string::npos) continue;
    if (line.find("\"ph\": \"b\"") != std::string::npos) begun[number_after(line, "id")] = number_after(line, "ts");
    else ended.push_back({number_after(line, "id"), number_after(line, "ts")});
  }
  REQUIRE(from >= 0);
  for (auto [id, at] : ended)
    if (begun.count(id) && begun[id] >= from && begun[id] <= from + t.duration) t.flights.push_back(at - begun[id]);
  REQUIRE(!t.flights.empty());
  return t;
}

// vjp of `text`, with the notes the pallas_call rule leaves.
Module vjp_noting(const std::string& text, const std::string& file, std::vector<std::string>& notes) {
  transpose::set_pallas_call_note_sink([&](const std::string& n) { notes.push_back(n); });
  Module m;
  std::string e = error_of([&] { m = run_pipeline(parse_module(text, file), "vjp"); });
  transpose::set_pallas_call_note_sink(nullptr);
  REQUIRE(e.empty());
  return m;
}

}  // namespace

TEST_CASE("vjp of dma_pipeline: the transposed kernel overlaps its copies with its compute, unlike synchronous copies") {
  std::vector<std::string> notes;
  std::string text = dma_pipeline_4_chunks();
  Module piped = vjp_noting(text, "dma_pipeline.tsr", notes);
  CHECK(notes.empty());
  // The forward and the transposed kernel: the jvp'd call linearize leaves,
  // its primal result unused, is gone (its DMAs order nothing outside it).
  size_t calls = 0;
  for (const Op& op : piped.entry()->ops()) calls += op.prim->name == "pallas_call";
  CHECK(calls == 2);
  // The same program with its last waits naming the HBM rows instead of the
  // VMEM slots (the same byte count): waits the pairing does not follow, so
  // every copy is transposed synchronously.
  std::string named_hbm = replace_once(replace_once(text, "dma_wait %out_sem[0], %out_buf[0, :, :]",
                                                    "dma_wait %out_sem[0], %o_hbm[256:384, :]"),
                                       "dma_wait %out_sem[1], %out_buf[1, :, :]", "dma_wait %out_sem[1], %o_hbm[384:512, :]");
  Module sync = vjp_noting(named_hbm, "dma_pipeline.tsr", notes);
  REQUIRE(notes.size() == 1);
  CHECK(notes[0] == "dma_pipeline.tsr:82:3: note: transpose: the DMAs of kernel @double_kernel_jvp are transposed "
                    "synchronously (not as a pipeline): a wait that does not name the copy's VMEM region at "
                    "dma_pipeline.tsr:77:3");
  std::vector<Array> in = random_inputs(*piped.entry(), 2);
  TransposedTimeline p = transposed_timeline(piped, in, "dma_mirror_piped");
  TransposedTimeline s = transposed_timeline(sync, in, "dma_mirror_sync");
  MESSAGE("transposed kernel: " << p.duration << " ticks as a pipeline, " << s.duration << " with synchronous copies");
  CHECK(p.duration < s.duration);
  // A synchronous copy ends 3 ticks after it starts (the copy, the wait);
  // each mirrored one is in flight while the kernel computes.
  CHECK(*std::max_element(s.flights.begin(), s.flights.end()) <= 3);
  CHECK(*std::min_element(p.flights.begin(), p.flights.end()) > 3);
  CHECK(*std::max_element(p.flights.begin(), p.flights.end()) >= 20);
  std::vector<Array> a = interp::run_function(piped, "main", in), b = interp::run_function(sync, "main", in);
  REQUIRE(a.size() == 2);
  require_close(a[1], b[1], 0);
  for (int64_t i = 0; i < a[1].size(); ++i) REQUIRE(a[1].get(i) == 2 * in[1].get(i));
}

TEST_CASE("vjp,vjp of dma_pipeline: the mirrored transposed kernel differentiates again") {
  // main(x, ct0) -> (2 x, 2 ct0) is linear: the second vjp's cotangents of
  // x and ct0 are 2 times those of the two outputs.
  Module m = run_pipeline(parse_module(dma_pipeline_4_chunks(), "dma_pipeline.tsr"), "vjp,vjp");
  verify_or_throw(m);
  std::vector<Array> in = random_inputs(*m.entry(), 6);  // x, ct0, and the cotangents of both outputs
  REQUIRE(in.size() == 4);
  std::vector<Array> out = interp::run_function(m, "main", in);
  REQUIRE(out.size() == 4);
  for (int64_t i = 0; i < out[2].size(); ++i) {
    REQUIRE(out[2].get(i) == 2 * in[2].get(i));
    REQUIRE(out[3].get(i) == 2 * in[3].get(i));
  }
  check_second_order(parse_module(replace_all(dma_pipeline_4_chunks(), "f32", "f64"), "dma_pipeline.tsr"), 31);
}

namespace {

// Two chunks of x (rows `first` and `second`) fetched into two VMEM slots,
// summed into o: x_ct gets ct on each chunk's rows, added up where they meet.
std::string two_fetches(const std::string& first, const std::string& second) {
  return R"(
kernel @k(%x: ref<f32[16,128], any>, %o: ref<f32[8,128], vmem>, %buf: ref<f32[2,8,128], vmem>,
          %sem: ref<dma_sem[2], semaphore>) {
  dma_start %x[)" + first + R"(, :], %buf[0, :, :], %sem[0]
  dma_start %x[)" + second + R"(, :], %buf[1, :, :], %sem[1]
  dma_wait %sem[0], %buf[0, :, :]
  dma_wait %sem[1], %buf[1, :, :]
  %a = get %buf[0, :, :]
  %b = get %buf[1, :, :]
  %s = add %a, %b
  swap %o[:, :], %s
}
func @main(%x: f32[16,128]) -> f32[8,128] {
  %out = pallas_call[kernel=@k, grid=(1), in_specs=[spec(mem=any)], out_specs=[spec()], out_shapes=[f32[8,128]],
                     scratch=[ref<f32[2,8,128], vmem>, ref<dma_sem[2], semaphore>]] %x
  return %out
}
)";
}

// x_ct of a vjp of `two_fetches` against ct summed onto the rows each chunk read.
void check_two_fetches(const Module& m, int64_t first, int64_t second) {
  std::vector<Array> in = random_inputs(*m.entry(), 3);  // x, ct
  std::vector<Array> out = interp::run_function(m, "main", in);
  REQUIRE(out.size() == 2);
  for (int64_t r = 0; r < 16; ++r)
    for (int64_t c = 0; c < 128; ++c) {
      double want = 0;
      for (int64_t at : {first, second})
        if (r >= at && r < at + 8) want += in[1].get((r - at) * 128 + c);
      REQUIRE(out[1].get(r * 128 + c) == want);
    }
}

}  // namespace

TEST_CASE("transpose of DMAs: disjoint fetches are mirrored; two fetches of one HBM region stay synchronous and add up") {
  std::vector<std::string> notes;
  Module apart = vjp_noting(two_fetches("0:8", "8:16"), "t.tsr", notes);
  CHECK(notes.empty());
  check_two_fetches(apart, 0, 8);
  check_all_proved(apart);
  // Mirrored, both transposed copies would write x_ct[0:8]: one of the two
  // cotangents would be lost.
  Module same = vjp_noting(two_fetches("0:8", "0:8"), "t.tsr", notes);
  REQUIRE(notes.size() == 1);
  CHECK_HAS(notes[0], "synchronously (not as a pipeline): two copies of one HBM region at t.tsr:5:3");
  check_two_fetches(same, 0, 0);
}

TEST_CASE("transpose of DMAs: a write-back whose VMEM region is read after its wait stays synchronous") {
  // o = [x; 2 x]: buf is written back, then read again for the second half.
  // Mirrored, the transposed write-back would overwrite buf's cotangent,
  // which already holds 2 ct[8:16] from the read.
  std::vector<std::string> notes;
  Module m = vjp_noting(R"(
kernel @k(%x: ref<f32[8,128], vmem>, %o: ref<f32[16,128], any>, %buf: ref<f32[8,128], vmem>,
          %sem: ref<dma_sem[1], semaphore>) {
  %a = get %x[:, :]
  swap %buf[:, :], %a
  dma_start %buf[:, :], %o[0:8, :], %sem[0]
  dma_wait %sem[0], %buf[:, :]
  %b = get %buf[:, :]
  %c = mul %b, 2.0
  swap %buf[:, :], %c
  dma_start %buf[:, :], %o[8:16, :], %sem[0]
  dma_wait %sem[0], %buf[:, :]
}
func @main(%x: f32[8,128]) -> f32[16,128] {
  %out = pallas_call[kernel=@k, grid=(1), in_specs=[spec()], out_specs=[spec(mem=any)], out_shapes=[f32[16,128]],
                     scratch=[ref<f32[8,128], vmem>, ref<dma_sem[1], semaphore>]] %x
  return %out
}
)", "t.tsr", notes);
  REQUIRE(notes.size() == 1);
  CHECK_HAS(notes[0], "synchronously (not as a pipeline): after a write-back, its VMEM region is read or partly written "
                      "at t.tsr:8:3");
  std::vector<Array> in = random_inputs(*m.entry(), 4);  // x, ct
  std::vector<Array> out = interp::run_function(m, "main", in);
  REQUIRE(out.size() == 2);
  for (int64_t i = 0; i < 8 * 128; ++i) {
    double want = in[1].get(i) + 2 * in[1].get(8 * 128 + i);
    REQUIRE(std::abs(out[1].get(i) - want) <= 1e-6 * (1 + std::abs(want)));
  }
}

TEST_CASE("transpose of DMAs: a write-back whose VMEM region is read while in flight stays synchronous") {
  // o = x, o2 = 2 x, buf read while its write-back is in flight (as the
  // forward may). Mirrored, the read's transpose would add into buf's
  // cotangent while the transposed copy writes it.
  std::vector<std::string> notes;
  Module m = vjp_noting(R"(
kernel @k(%x: ref<f32[8,128], vmem>, %o: ref<f32[8,128], any>, %o2: ref<f32[8,128], vmem>,
          %buf: ref<f32[8,128], vmem>, %sem: ref<dma_sem[1], semaphore>) {
  %a = get %x[:, :]
  swap %buf[:, :], %a
  dma_start %buf[:, :], %o[:, :], %sem[0]
  %b = get %buf[:, :]
  %c = mul %b, 2.0
  swap %o2[:, :], %c
  dma_wait %sem[0], %buf[:, :]
}
func @main(%x: f32[8,128]) -> (f32[8,128], f32[8,128]) {
  %o, %o2 = pallas_call[kernel=@k, grid=(1), in_specs=[spec()], out_specs=[spec(mem=any), spec()],
                        out_shapes=[f32[8,128], f32[8,128]], scratch=[ref<f32[8,128], vmem>, ref<dma_sem[1], semaphore>]] %x
  return %o, %o2
}
)", "t.tsr", notes);
  REQUIRE(notes.size() == 1);
  CHECK_HAS(notes[0], "synchronously (not as a pipeline): an access to a VMEM region while a copy of it is in flight "
                      "at t.tsr:7:3");
  std::vector<Array> in = random_inputs(*m.entry(), 5);  // x, ct_o, ct_o2
  std::vector<Array> out = interp::run_function(m, "main", in);
  REQUIRE(out.size() == 3);
  for (int64_t i = 0; i < out[2].size(); ++i) {
    double want = in[1].get(i) + 2 * in[2].get(i);
    REQUIRE(std::abs(out[2].get(i) - want) <= 1e-6 * (1 + std::abs(want)));
  }
}

TEST_CASE("transpose of dma_start: a scatter without add and a copy between two HBM Refs are located errors") {
  // rows (VMEM) -> o[ids] (HBM), overwriting: repeated ids make the transpose ambiguous.
  std::string scatter = error_of([] { run_pipeline(parse(R"(
kernel @k(%ids: ref<i32[8], vmem>, %x: ref<f32[8,128], vmem>, %o: ref<f32[32,128], any>,
          %sem: ref<dma_sem, semaphore>) {
  dma_start %x[:, :], %o[%ids, :], %sem
  dma_wait %sem, %x[:, :]
}
func @main(%ids: i32[8], %x: f32[8,128]) -> f32[32,128] {
  %out = pallas_call[kernel=@k, grid=(1), in_specs=[spec(), spec()], out_specs=[spec(mem=any)],
                     out_shapes=[f32[32,128]], scratch=[ref<dma_sem, semaphore>]] %ids, %x
  return %out
}
)"), "vjp"); });
  CHECK(scatter.find("t.tsr:4:3: error: transpose: a scatter `dma_start` without add=true has no transpose rule") == 0);
  // x (HBM) -> o (HBM): no VMEM side to stage the cotangent through.
  std::string hbm = error_of([] { run_pipeline(parse(R"(
kernel @k(%x: ref<f32[8,128], any>, %o: ref<f32[8,128], any>, %sem: ref<dma_sem, semaphore>) {
  dma_start %x[:, :], %o[:, :], %sem
  dma_wait %sem, %o[:, :]
}
func @main(%x: f32[8,128]) -> f32[8,128] {
  %out = pallas_call[kernel=@k, grid=(1), in_specs=[spec(mem=any)], out_specs=[spec(mem=any)],
                     out_shapes=[f32[8,128]], scratch=[ref<dma_sem, semaphore>]] %x
  return %out
}
)"), "vjp"); });
  CHECK(hbm.find("t.tsr:3:3: error: transpose: `dma_start` between two Refs in `any` / HBM memory has no transpose rule "
                 "yet") == 0);
}

TEST_CASE("vjp of a DMA pipeline whose tangent needs the primal chunks it moves is a located error") {
  // dma_pipeline computing x * x: the tangent 2 x x_dot reads the primal chunks
  // the loop prefetches one iteration ahead; the reversed loop cannot replay that.
  Module src = parse_module(replace_all(example_text("dma_pipeline.tsr"), "%b = mul %a, 2.0", "%b = mul %a, %a"),
                            "dma_pipeline.tsr");
  CHECK(error_of([&] { run_pipeline(src, "vjp"); }).find(
            "dma_pipeline.tsr:52:13: error: transpose: pallas_call kernel @double_kernel_jvp: this `dma_start` moves "
            "primal data inside a loop that also computes tangents") == 0);
}

TEST_CASE("vjp of a scatter-add into an output aliased to a differentiated input: a gather, and the cotangent passed on") {
  // out = init; out[bag[i], :] += 3 x[i, :]. x_ct[i] = 3 ct[bag[i]]; init_ct = ct.
  Module m = run_pipeline(parse(R"(
kernel @k(%bag: ref<i32[8], vmem>, %x: ref<f32[8,128], vmem>, %init: ref<f32[16,128], any>,
          %o: ref<f32[16,128], any>, %rows: ref<f32[8,128], vmem>, %sem: ref<dma_sem, semaphore>) {
  %a = get %x[:, :]
  %b = mul %a, 3.0
  swap %rows[:, :], %b
  dma_start[add=true] %rows[:, :], %o[%bag, :], %sem
  dma_wait %sem, %rows[:, :]
}
func @main(%bag: i32[8], %x: f32[8,128], %init: f32[16,128]) -> f32[16,128] {
  %out = pallas_call[kernel=@k, grid=(1), in_specs=[spec(), spec(), spec(mem=any)], out_specs=[spec(mem=any)],
                     out_shapes=[f32[16,128]], scratch=[ref<f32[8,128], vmem>, ref<dma_sem, semaphore>],
                     input_output_aliases=[(2, 0)]] %bag, %x, %init
  return %out
}
)"), "vjp");
  verify_or_throw(m);
  std::vector<Array> in = random_inputs(*m.entry(), 8);  // bag, x, init, ct0
  const int64_t bag[8] = {5, 0, 5, 15, 2, 5, 0, 9};
  for (int64_t i = 0; i < 8; ++i) in[0].set(i, static_cast<double>(bag[i]));
  interp::RunOptions o;
  o.detect_races = true;
  std::vector<Array> out = interp::run_function(m, "main", in, o);
  REQUIRE(out.size() == 3);  // out, x_ct, init_ct
  double worst = 0;
  for (int64_t i = 0; i < 8; ++i)
    for (int64_t c = 0; c < 128; ++c) worst = std::max(worst, std::abs(out[1].get(i * 128 + c) - 3 * in[3].get(bag[i] * 128 + c)));
  for (int64_t e = 0; e < out[2].size(); ++e) worst = std::max(worst, std::abs(out[2].get(e) - in[3].get(e)));
  CHECK(worst <= 1e-5);
}
