// A generator of large, realistic modules for the IR benchmarks: many kernels
// whose bodies mix Ref reads and writes (get/swap with indexers) with
// elementwise math, and a `main` that chains one pallas_call per kernel.
#pragma once

#include <cstdint>
#include <string>

namespace tessera::bench {

struct GeneratedModule {
  std::string text;
  int64_t ops = 0;  // ops in all bodies, nested or not
};

// A module with about `target_ops` ops (within one kernel's worth), in kernels
// of `ops_per_kernel` ops each.
GeneratedModule generate_module(int64_t target_ops, int64_t ops_per_kernel = 1000);

// One kernel that reads a block, applies `ops` - 2 elementwise ops in a chain
// (each the only use of the previous result) and stores the last: the longest
// generator chain a backend can be handed, in a `main` of one pallas_call.
GeneratedModule generate_chain(int64_t ops);

}  // namespace tessera::bench
