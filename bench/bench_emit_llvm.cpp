// Throughput of `tessera emit llvm` (the optimized IR for the GPU) and
// `tessera emit ptx`: ops/s at 1k, 10k and 100k ops (1M with --huge), for
// two shapes of module from bench/gen_module.h:
//   - chain: one kernel whose ops form one elementwise chain, each op the
//     only use of the previous one (the longest generator chain there is);
//   - module: one pallas_call per 1000-op kernel of independent groups.
// Parsing and verifying are not timed. Equal ops/s at every size mean time
// grows linearly with the program.
//
//   ninja -C build bench/bench_emit_llvm && build/bench/bench_emit_llvm [--huge]
//
// A module that cannot be emitted reports its error instead of a time.
#include <benchmark/benchmark.h>

#include <cstring>
#include <map>
#include <string>

#include "backends/llvm/emit.h"
#include "bench/bench_main.h"
#include "bench/gen_module.h"
#include "ir/parser.h"
#include "verify/verify.h"

namespace {

using tessera::backends::llvm_lowering::emit_llvm_text;
using tessera::backends::llvm_lowering::emit_ptx_text;

enum Shape : int64_t { chain = 0, module = 1 };

struct Parsed {
  tessera::Module module;
  int64_t ops = 0;
  std::string error;  // why it does not verify, if it does not
};

const Parsed& generated(Shape shape, int64_t n) {
  static std::map<std::pair<Shape, int64_t>, Parsed> cache;
  auto key = std::make_pair(shape, n);
  auto it = cache.find(key);
  if (it == cache.end()) {
    tessera::bench::GeneratedModule g = shape == chain ? tessera::bench::generate_chain(n) : tessera::bench::generate_module(n);
    Parsed p{tessera::parse_module(g.text, "gen.tsr"), g.ops, ""};
    if (!tessera::verify_module(p.module).empty()) p.error = "the module does not verify";
    it = cache.emplace(key, std::move(p)).first;
  }
  return it->second;
}

template <class Emit>
void run(benchmark::State& state, Emit emit) {
  auto shape = static_cast<Shape>(state.range(0));
  const Parsed& p = generated(shape, state.range(1));
  state.SetLabel(shape == chain ? "chain" : "module");
  if (!p.error.empty()) {
    state.SkipWithError(p.error.c_str());
    return;
  }
  for (auto _ : state) {
    try {
      benchmark::DoNotOptimize(emit(p.module));
    } catch (const tessera::Error& e) {
      state.SkipWithError(e.formatted().c_str());
      return;
    }
  }
  state.counters["ops"] = static_cast<double>(p.ops);
  state.counters["ops/s"] = benchmark::Counter(static_cast<double>(p.ops), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_EmitLlvm(benchmark::State& state) {
  run(state, [](const tessera::Module& m) { return emit_llvm_text(m, *m.entry(), "nvptx", 80); });
}
void BM_EmitPtx(benchmark::State& state) {
  run(state, [](const tessera::Module& m) { return emit_ptx_text(m, *m.entry(), 80); });
}

void register_sizes(bool huge) {
  for (auto* bm : {benchmark::RegisterBenchmark("BM_EmitLlvm", BM_EmitLlvm), benchmark::RegisterBenchmark("BM_EmitPtx", BM_EmitPtx)}) {
    bm->ArgNames({"shape", "ops"})->Unit(benchmark::kMillisecond);
    for (int64_t shape : {chain, module})
      for (int64_t n : {1'000, 10'000, 100'000}) bm->Args({shape, n});
    if (huge)
      for (int64_t shape : {chain, module}) bm->Args({shape, 1'000'000})->Iterations(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  // --huge adds the 1M-op modules (seconds each, one iteration).
  bool huge = false;
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--huge") == 0) {
      huge = true;
      for (int j = i; j + 1 < argc; ++j) argv[j] = argv[j + 1];
      --argc;
      break;
    }
  register_sizes(huge);
  return tessera::bench::run_benchmarks(argc, argv);
}
