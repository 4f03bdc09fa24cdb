// The shared main of the benchmarks, and how they treat malloc's heap.
//
// By default the process keeps the memory it frees (no trimming of the heap
// top, big blocks from the heap rather than fresh mmaps), so figures are the
// steady-state throughput of tessera's code, as in a compiler process that has
// been running a while. Without that, an iteration over a 1M-op module faults
// hundreds of MB of fresh pages in from the kernel, which on a small VM costs
// more than the work itself. `--cold-heap` keeps malloc's defaults.
#pragma once

#include <benchmark/benchmark.h>
#include <malloc.h>

#include <cstring>

namespace tessera::bench {

inline void configure_heap(int& argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--cold-heap") != 0) continue;
    for (int j = i; j + 1 < argc; ++j) argv[j] = argv[j + 1];
    --argc;
    return;
  }
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
}

// The main of a benchmark program: the heap as above, then Google Benchmark.
inline int run_benchmarks(int argc, char** argv) {
  configure_heap(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace tessera::bench
