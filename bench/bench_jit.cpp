// The host JIT (backends/llvm/jit.h) against plain C++ loops built as the JIT
// builds (bench/baselines.h: -O3 -march=native; the i-k-j and a tiled
// matmul) and the interpreter on bench_interpreter's programs
// (bench_programs.h): add 4096x4096, matmul 1024^3 in 128x128 blocks, softmax
// 4096x4096; and the compile time of every zoo kernel but the TPU-only ones
// (lowering, optimization, machine code). Kernels are compiled and run once
// before the timed loop. BM_jit_X runs the kernel into output arrays
// allocated before the loop (HostJit::run_into), as the C++ loops write into
// a buffer allocated before theirs; BM_jit_X_fresh_output runs the function
// as `tessera run` does, allocating fresh outputs per run, as
// BM_cpp_add_fresh_output does: the operating system zeroes each fresh page
// on first touch, a cost no code generator removes. Every figure is wall
// time (UseRealTime): with 2 threads the CPU time of the calling thread alone
// would leave out the other thread's work; on a loaded machine read the CPU
// column of the single-threaded runs.
// Goals: add and softmax within 1.2x of BM_cpp_X, matmul at least as fast as
// BM_cpp_matmul_tiled, compile < 150 ms per zoo kernel.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <sstream>

#include "backends/llvm/jit.h"
#include "bench/bench_programs.h"
#include "interpreter/interpreter.h"
#include "ir/parser.h"

using namespace tessera;
using namespace tessera::bench;
namespace ll = tessera::backends::llvm_lowering;

namespace {

const Op& first_pallas_call(const Module& m) {
  for (const Op& op : m.entry("main")->ops())
    if (op.name() == "pallas_call") return op;
  throw Error("bench_jit: no pallas_call in @main");
}

// BM_jit_X: HostJit::run_into, into output arrays allocated before the
// timed loop (as the C++ loops write into theirs); BM_jit_X_fresh_output:
// the whole function as `tessera run --backend=jit` runs it, fresh outputs
// per run.
enum class Outputs { preallocated, fresh };

void run_jit(benchmark::State& state, const std::string& text, const std::vector<Array>& in, Outputs outputs) {
  Module m = parse_module(text, "bench.tsr");
  const Op& call = first_pallas_call(m);
  ll::HostJit jit(ll::JitOptions{static_cast<int>(state.range(0)), false});
  state.counters["compile_ms"] = 1e3 * jit.compile(m, call);
  std::vector<Array> out = ll::run_function_jit(jit, m, "main", in);  // warm: first-use costs are not a run's
  for (auto _ : state) {
    if (outputs == Outputs::fresh) out = ll::run_function_jit(jit, m, "main", in);
    else jit.run_into(m, call, in, out);
    benchmark::DoNotOptimize(out[0].raw());
    benchmark::ClobberMemory();
  }
}

void BM_cpp_add_fresh_output(benchmark::State& state) {
  Array x = random({4096, 4096}, 1), y = random({4096, 4096}, 2);
  for (auto _ : state) {
    std::unique_ptr<float[]> o(new float[4096 * 4096]);  // uninitialized, like a tessera run's output
    baseline_add(x.data<float>(), y.data<float>(), o.get(), 4096 * 4096);
    benchmark::DoNotOptimize(o.get());
    benchmark::ClobberMemory();
  }
}
void jit_add(benchmark::State& state, Outputs o) {
  run_jit(state, add_text(4096, 256), {random({4096, 4096}, 1), random({4096, 4096}, 2)}, o);
}
void jit_matmul(benchmark::State& state, Outputs o) {
  run_jit(state, matmul_text(1024, 1024, 1024, 128, 128, 128), {random({1024, 1024}, 3), random({1024, 1024}, 4)}, o);
}
void jit_softmax(benchmark::State& state, Outputs o) { run_jit(state, softmax_text(4096, 32), {random({4096, 4096}, 5)}, o); }
void BM_jit_add(benchmark::State& state) { jit_add(state, Outputs::preallocated); }
void BM_jit_add_fresh_output(benchmark::State& state) { jit_add(state, Outputs::fresh); }
void BM_jit_matmul(benchmark::State& state) { jit_matmul(state, Outputs::preallocated); }
void BM_jit_matmul_fresh_output(benchmark::State& state) { jit_matmul(state, Outputs::fresh); }
void BM_jit_softmax(benchmark::State& state) { jit_softmax(state, Outputs::preallocated); }
void BM_jit_softmax_fresh_output(benchmark::State& state) { jit_softmax(state, Outputs::fresh); }
// BM_pair_X: the C++ loop and the JIT (into preallocated outputs) alternate
// inside one timed loop, which of them goes first alternating too, so both
// see the same load: on a shared machine memory-bound times move by a third
// from run to run, and only a ratio of neighbouring runs is stable.
// jit_over_cpp is the median of the per-pair ratios; the iteration time is
// the JIT's.
template <class Baseline>
void run_pair(benchmark::State& state, const std::string& text, const std::vector<Array>& in, Baseline cpp) {
  Module m = parse_module(text, "bench.tsr");
  const Op& call = first_pallas_call(m);
  ll::HostJit jit(ll::JitOptions{1, false});
  jit.compile(m, call);
  std::vector<Array> out = ll::run_function_jit(jit, m, "main", in);
  auto seconds = [](auto&& f) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    benchmark::ClobberMemory();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  std::vector<double> cpp_s, jit_s, ratio;
  for (auto _ : state) {
    auto run_jit_once = [&] { jit.run_into(m, call, in, out); };
    double c = 0, j = 0;
    if (cpp_s.size() % 2 == 0) c = seconds(cpp), j = seconds(run_jit_once);
    else j = seconds(run_jit_once), c = seconds(cpp);
    cpp_s.push_back(c), jit_s.push_back(j), ratio.push_back(j / c);
    state.SetIterationTime(j);
  }
  auto median = [](std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  };
  state.counters["cpp_ms"] = 1e3 * median(cpp_s);
  state.counters["jit_ms"] = 1e3 * median(jit_s);
  state.counters["jit_over_cpp"] = median(ratio);
}
void BM_pair_add(benchmark::State& state) {
  Array x = random({4096, 4096}, 1), y = random({4096, 4096}, 2);
  std::vector<float> o(4096 * 4096);
  run_pair(state, add_text(4096, 256), {x, y}, [&] { baseline_add(x.data<float>(), y.data<float>(), o.data(), o.size()); });
}
void BM_pair_softmax(benchmark::State& state) {
  Array x = random({4096, 4096}, 5);
  std::vector<float> o(4096 * 4096);
  run_pair(state, softmax_text(4096, 32), {x}, [&] { baseline_softmax_rows(x.data<float>(), o.data(), 4096, 4096); });
}
void BM_pair_matmul(benchmark::State& state) {
  Array a = random({1024, 1024}, 3), b = random({1024, 1024}, 4);
  std::vector<float> o(1024 * 1024);
  run_pair(state, matmul_text(1024, 1024, 1024, 128, 128, 128), {a, b}, [&] {
    std::fill(o.begin(), o.end(), 0.0f);
    baseline_matmul_tiled(a.data<float>(), b.data<float>(), o.data(), 1024, 1024, 1024);
  });
}
// Compile time of one zoo kernel: a fresh HostJit per iteration (its creation
// not timed), so nothing is cached.
void BM_compile(benchmark::State& state, const std::string& example) {
  std::ifstream f(std::string(TESSERA_EXAMPLES_DIR) + "/" + example);
  std::stringstream ss;
  ss << f.rdbuf();
  Module m = parse_module(ss.str(), example);
  const Op& call = first_pallas_call(m);
  ll::HostJit::CompilePhases total;
  for (auto _ : state) {
    state.PauseTiming();
    auto jit = std::make_unique<ll::HostJit>();
    state.ResumeTiming();
    jit->compile(m, call);
    state.PauseTiming();
    ll::HostJit::CompilePhases p = jit->last_compile_phases();
    total.lower += p.lower;
    total.optimize += p.optimize;
    total.machine_code += p.machine_code;
    jit.reset();
    state.ResumeTiming();
  }
  // Milliseconds per compile in each phase (wall time).
  double n = static_cast<double>(state.iterations());
  state.counters["lower_ms"] = 1e3 * total.lower / n;
  state.counters["opt_ms"] = 1e3 * total.optimize / n;
  state.counters["codegen_ms"] = 1e3 * total.machine_code / n;
}

// The fastest repetition: on a shared machine the minimum is the least noisy
// figure (run with --benchmark_repetitions=N).
double fastest(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

}  // namespace

#define TIMED(bm) BENCHMARK(bm)->Unit(benchmark::kMillisecond)->UseRealTime()->ComputeStatistics("min", fastest)

TIMED(BM_cpp_add);
TIMED(BM_cpp_add_fresh_output);
TIMED(BM_jit_add)->Arg(1)->Arg(2);
TIMED(BM_jit_add_fresh_output)->Arg(1)->Arg(2);
TIMED(BM_interp_add);
TIMED(BM_cpp_matmul);
TIMED(BM_cpp_matmul_tiled);
TIMED(BM_jit_matmul)->Arg(1)->Arg(2);
TIMED(BM_jit_matmul_fresh_output)->Arg(1)->Arg(2);
TIMED(BM_interp_matmul);
TIMED(BM_cpp_softmax);
TIMED(BM_jit_softmax)->Arg(1)->Arg(2);
TIMED(BM_jit_softmax_fresh_output)->Arg(1)->Arg(2);
TIMED(BM_interp_softmax);
#define PAIRED(bm) BENCHMARK(bm)->Unit(benchmark::kMillisecond)->UseManualTime()->MinTime(2.0)
PAIRED(BM_pair_add);
PAIRED(BM_pair_softmax);
PAIRED(BM_pair_matmul);
#define TIMED_COMPILE(name, file) \
  BENCHMARK_CAPTURE(BM_compile, name, std::string(file))->Unit(benchmark::kMillisecond)->UseRealTime()->ComputeStatistics("min", fastest)
TIMED_COMPILE(add, "add.tsr");
TIMED_COMPILE(matmul, "matmul.tsr");
TIMED_COMPILE(softmax, "softmax.tsr");
TIMED_COMPILE(layernorm, "layernorm.tsr");
TIMED_COMPILE(flash_attention, "flash_attention.tsr");
TIMED_COMPILE(cumsum, "cumsum.tsr");
TIMED_COMPILE(row_sum, "row_sum.tsr");
TIMED_COMPILE(gather_rows, "gather_rows.tsr");
BENCHMARK_MAIN();
