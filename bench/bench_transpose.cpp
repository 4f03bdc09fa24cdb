// Reverse mode: throughput of transpose, and the cost of a kernel's vjp.
//
//   - BM_TransposeKernels / BM_TransposeFlat: transpose of the tangent
//     function linearize makes of the generated modules bench_passes uses (10k,
//     100k and 1M ops in the source; ops/s over those). On the kernel module
//     every pallas_call goes through the pallas_call rule (a transposed kernel
//     per kernel); linearize runs once, untimed.
//   - BM_MatmulForward / BM_MatmulVjp: examples/matmul.tsr in the interpreter,
//     the forward call against the primal and transposed functions of its vjp
//     (the counter `vs_forward` of BM_MatmulVjp is its fastest run over the
//     forward's fastest).
//   ninja -C build bench/bench_transpose && build/bench/bench_transpose
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "bench/bench_main.h"
#include "bench/gen_module.h"
#include "interpreter/interpreter.h"
#include "ir/parser.h"
#include "transforms/pass.h"
#include "transforms/transpose.h"

namespace {

using namespace tessera;

struct Input {
  Module linearized;
  int64_t ops = 0;  // in the source module
};

const Input& linearized(const std::string& text, int64_t ops, std::map<int64_t, Input>& cache, int64_t key) {
  auto it = cache.find(key);
  if (it == cache.end())
    it = cache.emplace(key, Input{run_pipeline(parse_module(text, "gen.tsr"), "linearize"), ops}).first;
  return it->second;
}

const Input& kernels_of(int64_t n) {
  static std::map<int64_t, Input> cache;
  if (auto it = cache.find(n); it != cache.end()) return it->second;
  bench::GeneratedModule g = bench::generate_module(n);
  return linearized(g.text, g.ops, cache, n);
}

// The flat function of bench_passes: chains of add / mul / sin on two inputs.
const Input& flat_of(int64_t n) {
  static std::map<int64_t, Input> cache;
  if (auto it = cache.find(n); it != cache.end()) return it->second;
  std::string t = "func @main(%x: f32[16], %y: f32[16]) -> (f32[16], f32[16]) {\n";
  std::string a = "%x", b = "%y";
  for (int64_t i = 0; i < n; ++i) {
    std::string r = "%v" + std::to_string(i);
    if (i % 4 == 3) t += "  " + r + " = neg " + a + "\n";
    else if (i % 8 == 0) t += "  " + r + " = add " + b + ", " + a + "\n", b = r;
    else if (i % 2 == 0) t += "  " + r + " = mul " + a + ", 1.5\n", a = r;
    else t += "  " + r + " = sin " + b + "\n", b = r;
  }
  t += "  return " + a + ", " + b + "\n}\n";
  return linearized(t, n, cache, n);
}

// The tangent function's transpose; its tangent params are the last
// `tangents` ones.
BodyPtr transpose_tangent(const Module& lin, size_t tangents) {
  BodyPtr tangent = lin.find("main_tangent");
  size_t n = tangent->params().size();
  std::vector<bool> linear(n, false);
  for (size_t i = n - tangents; i < n; ++i) linear[i] = true;
  ad::SymbolSink syms(lin);
  BodyPtr scratch = make_body("scratch", BodyKind::func);
  Builder b(*scratch);
  transpose::Ctx ctx{b, syms};
  return transpose::transpose_body(ctx, *tangent, "main_transpose", BodyKind::func, linear);
}

void time_transpose(benchmark::State& state, const Input& in, size_t tangents) {
  { BodyPtr warm = transpose_tangent(in.linearized, tangents); }
  for (auto _ : state) {
    BodyPtr out = transpose_tangent(in.linearized, tangents);
    benchmark::DoNotOptimize(out);
    state.PauseTiming();
    out.reset();
    state.ResumeTiming();
  }
  state.counters["ops"] = static_cast<double>(in.ops);
  state.counters["ops/s"] = benchmark::Counter(static_cast<double>(in.ops), benchmark::Counter::kIsIterationInvariantRate);
  state.SetComplexityN(in.ops);
}

void BM_TransposeKernels(benchmark::State& state) { time_transpose(state, kernels_of(state.range(0)), 2); }
void BM_TransposeFlat(benchmark::State& state) { time_transpose(state, flat_of(state.range(0)), 2); }

// ---- vjp(matmul) in the interpreter ------------------------------------------------

struct Matmul {
  Module src;  // the example
  Module m;    // main_primal, main_tangent, main_transpose (and the jvp as main)
  std::vector<interp::Array> x, w;
};

const Matmul& matmul() {
  static Matmul mm = [] {
    std::ifstream f(std::string(TESSERA_EXAMPLES_DIR) + "/matmul.tsr");
    std::stringstream text;
    text << f.rdbuf();
    Module src = parse_module(text.str(), "matmul.tsr");
    Matmul out{src, run_pipeline(src, "linearize,transpose"), {}, {}};
    auto fill = [](DType d, Shape s, double scale) {
      interp::Array a(d, s);
      for (int64_t i = 0; i < a.size(); ++i) a.set(i, scale * static_cast<double>((i * 7919) % 13 - 6));
      return a;
    };
    out.x = {fill(DType::f32, {512, 256}, 0.1), fill(DType::f32, {256, 384}, 0.2)};
    out.w = {fill(DType::f32, {512, 384}, 0.3)};
    return out;
  }();
  return mm;
}

double forward_seconds = 0;

void BM_MatmulForward(benchmark::State& state) {
  const Matmul& mm = matmul();
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(interp::run_function(mm.src, "main", mm.x));
    double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    forward_seconds = forward_seconds > 0 ? std::min(forward_seconds, t) : t;  // the fastest run: least noise
  }
}

// vjp = the primal function (outputs and residuals) + the transpose.
void BM_MatmulVjp(benchmark::State& state) {
  const Matmul& mm = matmul();
  double best = 0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    std::vector<interp::Array> primal = interp::run_function(mm.m, "main_primal", mm.x);
    std::vector<interp::Array> in(primal.begin() + 1, primal.end());
    in.push_back(mm.w[0]);
    benchmark::DoNotOptimize(interp::run_function(mm.m, "main_transpose", in));
    double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = best > 0 ? std::min(best, t) : t;
  }
  if (forward_seconds > 0) state.counters["vs_forward"] = best / forward_seconds;
}

void sizes(benchmark::internal::Benchmark* b) {
  b->Arg(10'000)->Arg(100'000)->Arg(1'000'000)->Unit(benchmark::kMillisecond)->Complexity(benchmark::oN);
}

}  // namespace

BENCHMARK(BM_TransposeKernels)->Apply(sizes);
BENCHMARK(BM_TransposeFlat)->Apply(sizes);
BENCHMARK(BM_MatmulForward)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MatmulVjp)->Unit(benchmark::kMillisecond);

int main(int argc, char** argv) { return tessera::bench::run_benchmarks(argc, argv); }
