// The shared main of the benchmarks, and how they treat malloc's heap.
//
// The benchmarks link mimalloc like every tessera executable (root
// meson.build), so they measure what the CLI does. Where it is missing (glibc's
// malloc), the process keeps the memory it frees by default (no trimming of the
// heap top, big blocks from the heap rather than fresh mmaps), so an iteration
// over a 1M-op module does not fault hundreds of MB of fresh pages in again;
// `--cold-heap` keeps glibc's defaults. (mallopt does not affect mimalloc.)
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
