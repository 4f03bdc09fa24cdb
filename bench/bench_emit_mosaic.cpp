// Throughput of `tessera emit mosaic`: the Mosaic text of the generated
// modules of 10k, 100k and 1M ops (bench/gen_module.h: one pallas_call per
// 1000-op kernel), and the time to emit each zoo kernel. Parsing and
// verifying are not timed (bench_ir measures them). Each size reports ops/s:
// equal rates at the three sizes mean emission time grows linearly.
//
//   ninja -C build bench/bench_emit_mosaic && build/bench/bench_emit_mosaic
//
// A module that cannot be emitted reports its error instead of a time.
#include <benchmark/benchmark.h>

#include <map>
#include <string>
#include <vector>

#include "backends/mosaic/emit_module.h"
#include "bench/bench_main.h"
#include "bench/gen_module.h"
#include "ir/parser.h"
#include "verify/verify.h"

namespace {

struct Parsed {
  tessera::Module module;
  int64_t ops = 0;
  std::string error;  // why it does not emit, if it does not
};

// Parses, verifies and emits once (untimed): a module that cannot be emitted is reported, not timed.
Parsed prepare(tessera::Module m, int64_t ops) {
  Parsed p{std::move(m), ops, ""};
  try {
    if (!tessera::verify_module(p.module).empty()) p.error = "the module does not verify";
    else tessera::backends::mosaic::emit_modules(p.module, *p.module.entry());
  } catch (const tessera::Error& e) {
    p.error = e.formatted();
  }
  return p;
}

const Parsed& generated(int64_t n) {
  static std::map<int64_t, Parsed> cache;
  auto it = cache.find(n);
  if (it == cache.end()) {
    tessera::bench::GeneratedModule g = tessera::bench::generate_module(n);
    it = cache.emplace(n, prepare(tessera::parse_module(g.text, "gen.tsr"), g.ops)).first;
  }
  return it->second;
}

void BM_EmitMosaic(benchmark::State& state) {
  const Parsed& p = generated(state.range(0));
  if (!p.error.empty()) {
    state.SkipWithError(p.error.c_str());
    return;
  }
  size_t bytes = 0;
  for (auto _ : state) {
    std::string text = tessera::backends::mosaic::emit_modules(p.module, *p.module.entry());
    bytes = text.size();
    benchmark::DoNotOptimize(text);
  }
  state.counters["ops"] = static_cast<double>(p.ops);
  state.counters["ops/s"] = benchmark::Counter(static_cast<double>(p.ops), benchmark::Counter::kIsIterationInvariantRate);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}
// No BigO fit: libbenchmark 1.7 crashes fitting runs that all skipped (when
// emission fails); linear time shows as equal ops/s at the three sizes.
BENCHMARK(BM_EmitMosaic)->Arg(10'000)->Arg(100'000)->Arg(1'000'000)->Unit(benchmark::kMillisecond);

const std::vector<std::string> kZoo = {"add", "cumsum", "dma_pipeline", "flash_attention", "gather_rows", "layernorm",
                                       "matmul", "ring_allreduce", "row_sum", "softmax", "sc_gather_scatter", "sc_sort"};

void BM_EmitZooKernel(benchmark::State& state) {
  static std::map<int64_t, Parsed> cache;
  int64_t k = state.range(0);
  auto it = cache.find(k);
  if (it == cache.end())
    it = cache.emplace(k, prepare(tessera::parse_file(std::string(TESSERA_EXAMPLES_DIR) + "/" + kZoo[k] + ".tsr"), 0)).first;
  const Parsed& p = it->second;
  state.SetLabel(kZoo[k]);
  if (!p.error.empty()) {
    state.SkipWithError(p.error.c_str());
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(tessera::backends::mosaic::emit_modules(p.module, *p.module.entry()));
}
BENCHMARK(BM_EmitZooKernel)->DenseRange(0, 11)->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) { return tessera::bench::run_benchmarks(argc, argv); }
