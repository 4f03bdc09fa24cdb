// Throughput of the passes dce, discharge, partial_eval, jvp and vmap on generated bodies
// of 10k, 100k and 1M ops (ops counted in the input, nested bodies included).
// Each reports ops/s; the fitted complexity (BigO) says whether the time grows
// linearly. Each pass runs once untimed before timing, and freed memory stays
// in the process (bench/bench_main.h; `--cold-heap` to measure without):
//   ninja -C build bench/bench_passes && build/bench/bench_passes
#include <benchmark/benchmark.h>

#include <functional>
#include <map>
#include <string>
#include <unordered_set>

#include "bench/gen_module.h"
#include "bench/bench_main.h"
#include "ir/parser.h"
#include "transforms/pass.h"

namespace {

using namespace tessera;

struct Input {
  Module module;
  int64_t ops = 0;
};

// The IR benchmarks' generated module: kernels mixing get/swap with math, and a
// main with one pallas_call per kernel (what discharge and dce see in practice).
const Input& kernels_of(int64_t n) {
  static std::map<int64_t, Input> cache;
  auto it = cache.find(n);
  if (it == cache.end()) {
    bench::GeneratedModule g = bench::generate_module(n);
    it = cache.emplace(n, Input{parse_module(g.text, "gen.tsr"), g.ops}).first;
  }
  return it->second;
}

// One flat function of n elementwise ops on two inputs: a chain on each input,
// mixed every 8 ops; every fourth op is dead. partial_eval with input 0 known
// splits it roughly in half.
const Input& flat_of(int64_t n) {
  static std::map<int64_t, Input> cache;
  auto it = cache.find(n);
  if (it != cache.end()) return it->second;
  std::string t = "func @main(%x: f32[16], %y: f32[16]) -> (f32[16], f32[16]) {\n";
  std::string a = "%x", b = "%y";
  for (int64_t i = 0; i < n; ++i) {
    std::string r = "%v" + std::to_string(i);
    if (i % 4 == 3) t += "  " + r + " = neg " + a + "\n";  // dead
    else if (i % 8 == 0) t += "  " + r + " = add " + b + ", " + a + "\n", b = r;
    else if (i % 2 == 0) t += "  " + r + " = mul " + a + ", 1.5\n", a = r;
    else t += "  " + r + " = sin " + b + "\n", b = r;
  }
  t += "  return " + a + ", " + b + "\n}\n";
  return cache.emplace(n, Input{parse_module(t, "flat.tsr"), n}).first->second;
}

// Ops of every body reachable from the module's symbols, nested ones included.
int64_t count_ops(const Module& m) {
  std::unordered_set<const Body*> seen;
  int64_t n = 0;
  std::function<void(const Body&)> walk = [&](const Body& b) {
    if (!seen.insert(&b).second) return;
    n += static_cast<int64_t>(b.ops().size());
    for (const Op& op : b.ops())
      for (const BodyPtr& nested : op.nested_bodies()) walk(*nested);
  };
  for (const BodyPtr& s : m.symbols()) walk(*s);
  return n;
}

// The kernel module after discharge: each kernel's ops inlined into main's
// grid loop of its pallas_call, as pure array ops.
const Input& discharged_kernels_of(int64_t n) {
  static std::map<int64_t, Input> cache;
  auto it = cache.find(n);
  if (it != cache.end()) return it->second;
  Module d = discharge_pass(kernels_of(n).module, {});
  int64_t ops = count_ops(d);
  return cache.emplace(n, Input{std::move(d), ops}).first->second;
}

void report(benchmark::State& state, int64_t ops) {
  state.counters["ops"] = static_cast<double>(ops);
  state.counters["ops/s"] = benchmark::Counter(static_cast<double>(ops), benchmark::Counter::kIsIterationInvariantRate);
  state.SetComplexityN(ops);
}

// Runs `pass` once untimed (so the heap holds what the pass needs), then times
// it. Freeing the module a pass returns is its owner's cost, not the pass's:
// it is left out of the timing. Reports ops/s over `in`'s ops.
template <class Pass>
void time_pass(benchmark::State& state, const Input& in, Pass pass) {
  { Module warm = pass(); }
  for (auto _ : state) {
    Module out = pass();
    benchmark::DoNotOptimize(out);
    state.PauseTiming();
    { Module drop = std::move(out); }
    state.ResumeTiming();
  }
  report(state, in.ops);
}

void BM_DceKernels(benchmark::State& state) {
  const Input& in = kernels_of(state.range(0));
  time_pass(state, in, [&] { return dce_pass(in.module, {}); });
}

void BM_DceFlat(benchmark::State& state) {
  const Input& in = flat_of(state.range(0));
  time_pass(state, in, [&] { return dce_pass(in.module, {}); });
}

void BM_Discharge(benchmark::State& state) {
  const Input& in = kernels_of(state.range(0));
  time_pass(state, in, [&] { return discharge_pass(in.module, {}); });
}

void BM_PartialEval(benchmark::State& state) {
  const Input& in = flat_of(state.range(0));
  PassOptions o;
  o.values["known"] = "0";
  time_pass(state, in, [&] { return partial_eval_pass(in.module, o); });
}

void BM_Pipeline(benchmark::State& state) {
  const Input& in = kernels_of(state.range(0));
  time_pass(state, in, [&] { return run_pipeline(in.module, "discharge,dce"); });
}

// jvp and vmap (the entry `main`): on the kernel module every pallas_call's
// kernel is transformed by jvp (it doubles each kernel's Refs and math). vmap
// of a pallas_call adds a grid axis and rewrites index maps but reuses the
// kernel untouched, so it runs on the discharged kernel module instead, where
// every kernel op is in main's grid loops and gets its batching rule; ops/s
// counts that module's ops. On the flat function every op gets its rule.
void BM_JvpKernels(benchmark::State& state) {
  const Input& in = kernels_of(state.range(0));
  time_pass(state, in, [&] { return jvp_pass(in.module, {}); });
}

void BM_JvpFlat(benchmark::State& state) {
  const Input& in = flat_of(state.range(0));
  time_pass(state, in, [&] { return jvp_pass(in.module, {}); });
}

PassOptions vmap_options() {
  PassOptions o;
  o.values["axis_size"] = "3";
  return o;
}

void BM_VmapKernels(benchmark::State& state) {
  const Input& in = discharged_kernels_of(state.range(0));
  PassOptions o = vmap_options();
  time_pass(state, in, [&] { return vmap_pass(in.module, o); });
}

void BM_VmapFlat(benchmark::State& state) {
  const Input& in = flat_of(state.range(0));
  PassOptions o = vmap_options();
  o.values["in_axes"] = "0|none";  // one batched input, one not
  time_pass(state, in, [&] { return vmap_pass(in.module, o); });
}

void sizes(benchmark::internal::Benchmark* b) {
  b->Arg(10'000)->Arg(100'000)->Arg(1'000'000)->Unit(benchmark::kMillisecond)->Complexity(benchmark::oN);
}

BENCHMARK(BM_DceKernels)->Apply(sizes);
BENCHMARK(BM_DceFlat)->Apply(sizes);
BENCHMARK(BM_Discharge)->Apply(sizes);
BENCHMARK(BM_PartialEval)->Apply(sizes);
BENCHMARK(BM_Pipeline)->Apply(sizes);
BENCHMARK(BM_JvpKernels)->Apply(sizes);
BENCHMARK(BM_JvpFlat)->Apply(sizes);
BENCHMARK(BM_VmapKernels)->Apply(sizes);
BENCHMARK(BM_VmapFlat)->Apply(sizes);

}  // namespace

int main(int argc, char** argv) {
  return tessera::bench::run_benchmarks(argc, argv);
}
