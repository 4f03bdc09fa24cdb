// The interpreter against plain C++ (bench/baselines.h: -O3 -march=native,
// the i-k-j and a tiled matmul) on the same computations: add 4096x4096,
// matmul 1024^3 in 128x128 blocks, softmax 4096x4096, matmul in tiny 8x128
// blocks, and the per-op overhead of a kernel made of scalar ops. Compare
// BM_interp_X with BM_cpp_X (real time; the fastest of the repetitions).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_programs.h"
#include "interpreter/interpreter.h"
#include "ir/parser.h"

using namespace tessera;
using namespace tessera::interp;
using namespace tessera::bench;

namespace {

// 256 x 128 x 128 in blocks of 8 rows: 32 grid points, tiny per-block work.
void BM_interp_matmul_tiny(benchmark::State& state) {
  run_interp(state, matmul_text(256, 128, 128, 8, 128, 128), {random({256, 128}, 6), random({128, 128}, 7)});
}
void BM_cpp_matmul_tiny(benchmark::State& state) { cpp_matmul<baseline_matmul_ikj>(state, 256, 128, 128, 6, 7); }

// 10000 grid points x 10 scalar ops: time per op = time / 100000.
void BM_interp_scalar_ops(benchmark::State& state) {
  run_interp(state, scalar_ops_text(10000), {});
  state.counters["ns_per_op"] = benchmark::Counter(100000.0 * static_cast<double>(state.iterations()),
                                                   benchmark::Counter::kIsRate | benchmark::Counter::kInvert,
                                                   benchmark::Counter::OneK::kIs1000);
}

}  // namespace

namespace {

// The race detector over a grid of n (1, 8) blocks: each step's block copies
// are checked against the accesses in their own cells only, so the time per
// grid step stays flat as n grows (it grew linearly before: a check scanned
// every earlier access of the buffer).
void BM_interp_races_grid(benchmark::State& state) {
  int64_t n = state.range(0);
  std::string text = R"(
index_map @ij(%i: i32, %j: i32) -> (i32, i32) { return %i, %j }
kernel @copy(%x: ref<f32[1,8], vmem>, %o: ref<f32[1,8], vmem>) {
  %v = get %x[:, :]
  swap %o[:, :], %v
}
func @main(%x: f32[1,)" + std::to_string(8 * n) + R"(]) -> f32[1,)" + std::to_string(8 * n) + R"(] {
  %out = pallas_call[kernel=@copy, grid=(1, )" + std::to_string(n) + R"(), in_specs=[spec((1, 8), @ij)],
                     out_specs=[spec((1, 8), @ij)], out_shapes=[f32[1,)" + std::to_string(8 * n) + R"(]]] %x
  return %out
}
)";
  Module m = parse_module(text, "bench.tsr");
  std::vector<Array> in = {random({1, 8 * n}, 9)};
  RunOptions o;
  o.detect_races = true;
  for (auto _ : state) benchmark::DoNotOptimize(interp::run_function(m, "main", in, o));
  state.counters["steps/s"] = benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

// The fastest repetition: on a shared machine the minimum is the least noisy
// figure (run with --benchmark_repetitions=N).
double fastest(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

#define TIMED(bm, unit) BENCHMARK(bm)->Unit(unit)->UseRealTime()->ComputeStatistics("min", fastest)

BENCHMARK(BM_interp_races_grid)->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMillisecond);
TIMED(BM_cpp_add, benchmark::kMillisecond);
TIMED(BM_interp_add, benchmark::kMillisecond);
TIMED(BM_cpp_matmul, benchmark::kMillisecond);
TIMED(BM_cpp_matmul_tiled, benchmark::kMillisecond);
TIMED(BM_interp_matmul, benchmark::kMillisecond);
TIMED(BM_cpp_softmax, benchmark::kMillisecond);
TIMED(BM_interp_softmax, benchmark::kMillisecond);
TIMED(BM_cpp_matmul_tiny, benchmark::kMicrosecond);
TIMED(BM_interp_matmul_tiny, benchmark::kMicrosecond);
TIMED(BM_interp_scalar_ops, benchmark::kMillisecond);
BENCHMARK_MAIN();
