// The interpreter against plain C++ (naive loops, -O2, i-k-j matmul) on the
// same computations: add 4096x4096, matmul 1024^3 in 128x128 blocks, softmax
// 4096x4096, matmul in tiny 8x128 blocks, and the per-op overhead of a kernel
// made of scalar ops. Compare BM_interp_X with BM_cpp_X.
#include <benchmark/benchmark.h>

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
void BM_cpp_matmul_tiny(benchmark::State& state) {
  Array x = random({256, 128}, 6), y = random({128, 128}, 7);
  for (auto _ : state) {
    std::vector<float> o(256 * 128, 0.0f);
    naive_matmul(x.data<float>(), y.data<float>(), o.data(), 256, 128, 128);
    benchmark::DoNotOptimize(o.data());
  }
}

// 10000 grid points x 10 scalar ops: time per op = time / 100000.
void BM_interp_scalar_ops(benchmark::State& state) {
  run_interp(state, scalar_ops_text(10000), {});
  state.counters["ns_per_op"] = benchmark::Counter(100000.0 * static_cast<double>(state.iterations()),
                                                   benchmark::Counter::kIsRate | benchmark::Counter::kInvert,
                                                   benchmark::Counter::OneK::kIs1000);
}

}  // namespace

BENCHMARK(BM_cpp_add)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_interp_add)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_cpp_matmul)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_interp_matmul)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_cpp_softmax)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_interp_softmax)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_cpp_matmul_tiny)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_interp_matmul_tiny)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_interp_scalar_ops)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
