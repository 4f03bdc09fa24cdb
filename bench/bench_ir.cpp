// Throughput of the IR's text path on generated modules of 10k, 100k and 1M
// ops: lex, parse, verify, parse+verify, print. Each reports ops/s; the fitted
// complexity (BigO) line says whether the time grows linearly with the size.
//
//   ninja -C build bench/bench_ir && build/bench/bench_ir
//   build/bench/bench_ir --benchmark_filter=ParseVerify   # the headline figure
//   build/bench/bench_ir --emit 1000000 > big.tsr         # the module itself
//
// The parsing benchmarks parse once untimed first, and the process keeps the
// memory it frees (bench/bench_main.h), so the figures are steady-state throughput
// of the IR code; `bench_ir --cold-heap ...` measures the cold heap too.
#include <benchmark/benchmark.h>

#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <vector>

#include "bench/gen_module.h"
#include "bench/bench_main.h"
#include "ir/lexer.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "verify/verify.h"

namespace {

using tessera::bench::GeneratedModule;

// Generated once per size and shared by the benchmarks.
const GeneratedModule& module_of(int64_t n) {
  static std::map<int64_t, GeneratedModule> cache;
  auto it = cache.find(n);
  if (it == cache.end()) it = cache.emplace(n, tessera::bench::generate_module(n)).first;
  return it->second;
}

void report(benchmark::State& state, int64_t ops, size_t bytes) {
  state.counters["ops"] = static_cast<double>(ops);
  state.counters["ops/s"] = benchmark::Counter(static_cast<double>(ops), benchmark::Counter::kIsIterationInvariantRate);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.SetComplexityN(ops);
}

// The lexer alone, streaming tokens as the parser pulls them: the first step
// of parsing, to split parse time.
void BM_Lex(benchmark::State& state) {
  const GeneratedModule& g = module_of(state.range(0));
  auto file = std::make_shared<const std::string>("gen.tsr");
  size_t tokens = 0;
  for (auto _ : state) {
    tessera::Lexer lexer(g.text, file);
    tokens = 1;
    for (tessera::Token t = lexer.next(); t.kind != tessera::Tok::End; t = lexer.next()) {
      benchmark::DoNotOptimize(t);
      ++tokens;
    }
  }
  state.counters["tokens"] = static_cast<double>(tokens);
  report(state, g.ops, g.text.size());
}

// One untimed parse, so the timed ones reuse memory the process already has.
void warm_up(const GeneratedModule& g) { tessera::Module m = tessera::parse_module(g.text, "gen.tsr"); }

void BM_Parse(benchmark::State& state) {
  const GeneratedModule& g = module_of(state.range(0));
  warm_up(g);
  for (auto _ : state) {
    tessera::Module m = tessera::parse_module(g.text, "gen.tsr");
    benchmark::DoNotOptimize(m);
  }
  report(state, g.ops, g.text.size());
}

void BM_Verify(benchmark::State& state) {
  const GeneratedModule& g = module_of(state.range(0));
  tessera::Module m = tessera::parse_module(g.text, "gen.tsr");
  for (auto _ : state) {
    auto diags = tessera::verify_module(m);
    if (!diags.empty()) {
      state.SkipWithError(("generated module does not verify: " + diags[0].str()).c_str());
      break;
    }
    benchmark::DoNotOptimize(diags);
  }
  report(state, g.ops, g.text.size());
}

void BM_ParseVerify(benchmark::State& state) {
  const GeneratedModule& g = module_of(state.range(0));
  warm_up(g);
  for (auto _ : state) {
    tessera::Module m = tessera::parse_module(g.text, "gen.tsr");
    auto diags = tessera::verify_module(m);
    benchmark::DoNotOptimize(diags);
  }
  report(state, g.ops, g.text.size());
}

void BM_Print(benchmark::State& state) {
  const GeneratedModule& g = module_of(state.range(0));
  tessera::Module m = tessera::parse_module(g.text, "gen.tsr");
  size_t bytes = 0;
  for (auto _ : state) {
    std::string text = tessera::print_module(m);
    bytes = text.size();
    benchmark::DoNotOptimize(text);
  }
  report(state, g.ops, bytes);
}

void sizes(benchmark::internal::Benchmark* b) {
  b->Arg(10'000)->Arg(100'000)->Arg(1'000'000)->Unit(benchmark::kMillisecond)->Complexity(benchmark::oN);
}

}  // namespace

BENCHMARK(BM_Lex)->Apply(sizes);
BENCHMARK(BM_Parse)->Apply(sizes);
BENCHMARK(BM_Verify)->Apply(sizes);
BENCHMARK(BM_ParseVerify)->Apply(sizes);
BENCHMARK(BM_Print)->Apply(sizes);

// `bench_ir --emit N` prints the generated module of about N ops instead of
// benchmarking (e.g. to time `tessera verify` on it); anything else goes to
// Google Benchmark.
int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--emit") {
    std::cout << tessera::bench::generate_module(std::stoll(argv[2])).text;
    return 0;
  }
  return tessera::bench::run_benchmarks(argc, argv);
}
