// bench_prove: proof time of `tessera prove` does not depend on the grid size.
//
// Proves matmul with grid (4, 3, 2) and with grid (4096, 3072, 2048) (array
// shapes scaled to match), times every obligation of the zoo, and compares
// with brute-force enumeration of the grid (the interpreter's index-map evaluation at
// every point, the approach a run-time check takes). Brute force on the big
// grid (2.6e10 points) is extrapolated from its measured cost per point.
//
// The matmul kernel zeroes its output block at the first step of k, so every
// claim holds; the benchmark checks that each is proved (a timing of wrong
// verdicts would mean nothing) and that no zoo claim is FAILED, and exits 1
// otherwise.
//
// Plain main(), no framework: `bench_prove [EXAMPLES_DIR]`.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "interpreter/interpreter.h"
#include "analysis/prove/prove.h"
#include "ir/grid_mapping.h"
#include "ir/parser.h"
#include "verify/verify.h"

using namespace tessera;

namespace {

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string matmul(int64_t gi, int64_t gj, int64_t gk) {
  auto s = [](int64_t v) { return std::to_string(v); };
  std::string M = s(gi * 128), N = s(gj * 128), K = s(gk * 128);
  return "index_map @x_tile(%i: i32, %j: i32, %k: i32) -> (i32, i32) { return %i, %k }\n"
         "index_map @y_tile(%i: i32, %j: i32, %k: i32) -> (i32, i32) { return %k, %j }\n"
         "index_map @out_tile(%i: i32, %j: i32, %k: i32) -> (i32, i32) { return %i, %j }\n"
         "kernel @matmul_kernel(%x: ref<f32[128,128], vmem>, %y: ref<f32[128,128], vmem>, %o: ref<f32[128,128], vmem>) {\n"
         "  %k = program_id[axis=2]\n  %first = eq %k, 0\n"
         "  cond[branches=[fn(%o0: ref<f32[128,128], vmem>) { }, fn(%o1: ref<f32[128,128], vmem>) {\n"
         "    %z = broadcast_in_dim[shape=(128, 128), broadcast_dimensions=()] 0.0:f32\n"
         "    swap %o1[:, :], %z\n  }]] %first, %o\n"
         "  %a = get %x[:, :]\n  %b = get %y[:, :]\n"
         "  %p = dot_general[lhs_contracting=(1), rhs_contracting=(0)] %a, %b\n  addupdate %o[:, :], %p\n}\n"
         "func @main(%x: f32[" + M + "," + K + "], %y: f32[" + K + "," + N + "]) -> f32[" + M + "," + N + "] {\n"
         "  %out = pallas_call[kernel=@matmul_kernel, grid=(" + s(gi) + ", " + s(gj) + ", " + s(gk) + "),\n"
         "    in_specs=[spec((128, 128), @x_tile), spec((128, 128), @y_tile)], out_specs=[spec((128, 128), @out_tile)],\n"
         "    out_shapes=[f32[" + M + "," + N + "]], dimension_semantics=(parallel, parallel, arbitrary)] %x, %y\n"
         "  return %out\n}\n";
}

// Median wall time of proving `m` (all obligations), over `reps` runs.
double prove_ms(const Module& m, const prove::Options& opts, int reps, std::vector<prove::Obligation>* last = nullptr) {
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    double t0 = now_ms();
    auto obs = prove::prove_module(m, opts);
    t.push_back(now_ms() - t0);
    if (last) *last = obs;
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Brute force over the first `limit` grid points in row-major order: evaluate
// every index map, check bounds, and track output blocks for the revisiting
// and parallel-safety checks. Returns ns per grid point.
double brute_ns_per_point(const Module& m, int64_t limit, int64_t* points) {
  const Op* call = nullptr;
  for (const Op& op : m.entry()->ops())
    if (op.name() == "pallas_call") call = &op;
  GridMapping g = grid_mapping(*call);
  int rank = g.grid_rank();
  std::vector<int64_t> p(rank, 0);
  int64_t total = 1;
  for (int64_t d : g.grid) total *= d;
  int64_t n = std::min(total, limit);
  std::unordered_map<int64_t, int64_t> owner;  // output block -> parallel point (hashed)
  std::vector<int64_t> prev;
  int64_t bad = 0;
  std::vector<interp::IndexMapEvaluator> maps;
  for (int mm = 0; mm < g.num_inputs() + g.num_outputs(); ++mm) maps.emplace_back(m, *g.spec(mm).index_map);
  double t0 = now_ms();
  for (int64_t it = 0; it < n; ++it) {
    int64_t r = it;
    for (int a = rank; a-- > 0;) p[a] = r % g.grid[a], r /= g.grid[a];
    for (int mm = 0; mm < g.num_inputs() + g.num_outputs(); ++mm) {
      std::vector<int64_t> b = maps[mm](p);
      auto dims = g.dims(mm);
      for (size_t d = 0; d < b.size(); ++d) bad += b[d] < 0 || b[d] * dims[d].size >= g.array(mm).shape()[d];
      if (mm >= g.num_inputs()) {
        int64_t key = b[0] * 1000003 + b[1];
        int64_t par = p[0] * 100003 + p[1];
        auto [pos, fresh] = owner.emplace(key, par);
        bad += !fresh && pos->second != par;
        bad += !fresh && b != prev;  // a block seen before, not the previous one: revisit
        prev = b;
      }
    }
  }
  double ms = now_ms() - t0;
  if (bad) std::printf("  (brute force found %lld violations)\n", static_cast<long long>(bad));
  *points = total;
  return ms * 1e6 / static_cast<double>(n);
}

}  // namespace

int main(int argc, char** argv) {
  std::string examples = argc > 1 ? argv[1] : "examples";
  prove::Options opts;

  std::printf("== matmul: proof time vs grid size (median of 20 runs, all obligations)\n");
  double small = 0, big = 0;
  int wrong = 0;  // verdicts that are not what the kernel deserves
  for (auto [gi, gj, gk] : {std::tuple{4, 3, 2}, std::tuple{4096, 3072, 2048}}) {
    Module m = parse_module(matmul(gi, gj, gk), "matmul");
    verify_or_throw(m);
    std::vector<prove::Obligation> obs;
    double ms = prove_ms(m, opts, 20, &obs);
    int64_t points = 0;
    double ns = brute_ns_per_point(m, 2'000'000, &points);
    double brute_ms = ns * static_cast<double>(points) / 1e6;
    std::printf("grid (%d, %d, %d): %lld points; prove %.2f ms (%zu obligations); brute force %.0f ns/point -> %s %.3f ms\n",
                gi, gj, gk, static_cast<long long>(points), ms, obs.size(), ns,
                points > 2'000'000 ? "estimated" : "measured", brute_ms);
    for (const auto& o : obs) {
      std::printf("    %-50s %7.2f ms  %s\n", o.line().c_str(), o.millis, o.method.c_str());
      if (o.verdict != prove::Verdict::proved) ++wrong;
    }
    (gi == 4 ? small : big) = ms;
  }
  std::printf("ratio big/small: %.2fx (goal: within 2x)\n\n", big / small);

  std::printf("== zoo: every obligation (median of 5 runs of the whole file; per-obligation times from the last run)\n");
  double worst = 0;
  std::string worst_name;
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(examples))
    if (e.path().extension() == ".tsr") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& path : files) {
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    prove::Options o;
    o.assumptions = prove::assumptions_in_source(ss.str());
    if (path.stem() == "gather_rows" && o.assumptions.empty()) o.assumptions.push_back(prove::parse_assumption("idx in [0, 1024)"));
    Module m = parse_module(ss.str(), path.string());
    std::vector<prove::Obligation> obs;
    double ms = prove_ms(m, o, 5, &obs);
    std::printf("%-22s %6.2f ms total\n", path.stem().c_str(), ms);
    for (const auto& ob : obs) {
      std::printf("    %-60s %7.2f ms  %s\n", ob.line().c_str(), ob.millis, ob.method.c_str());
      if (ob.millis > worst) worst = ob.millis, worst_name = ob.call + " " + ob.subject + " " + ob.kind;
      if (ob.verdict == prove::Verdict::failed) ++wrong;
    }
  }
  std::printf("slowest zoo obligation: %s, %.2f ms (goal: < 100 ms)\n", worst_name.c_str(), worst);
  if (wrong) {
    std::printf("%d wrong verdicts (a matmul claim not proved, or a zoo claim FAILED): the figures above mean nothing\n", wrong);
    return 1;
  }
  return 0;
}
