// Vector-clock race detection (as in
// jax/_src/pallas/mosaic/interpret/interpret_pallas_call.py): every core, and
// every DMA as its own virtual thread, carries a vector clock; semaphores and barriers carry clocks
// from signaller to waiter (happens-before). Two accesses to overlapping parts
// of one buffer, at least one a write, neither happening before the other,
// are a race: an Error naming both accesses.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "interpreter/region.h"
#include "ir/diagnostics.h"

namespace tessera::interp::tpu {

// Sparse: threads are cores (global core ids) and DMAs (ids from kDmaThread0).
class VectorClock {
 public:
  uint64_t get(int thread) const {
    auto it = c_.find(thread);
    return it == c_.end() ? 0 : it->second;
  }
  void tick(int thread) { ++c_[thread]; }
  void join(const VectorClock& o) {
    for (auto [t, v] : o.c_) {
      uint64_t& mine = c_[t];
      if (v > mine) mine = v;
    }
  }

 private:
  std::map<int, uint64_t> c_;
};

constexpr int kDmaThread0 = 1 << 20;

struct Access {
  int thread = 0;
  uint64_t epoch = 0;  // the thread's own clock entry at the access
  bool write = false;
  Region region;
  std::string what;  // `write by swap on device 0 core 1`
  Loc loc;
};

class RaceDetector {
 public:
  // Checks an access to buffer `key` against earlier ones; throws on a race.
  void check(const std::tuple<int, int, int, int>& key, const std::string& buffer, const Access& a,
             const VectorClock& clock);
  void forget(const std::tuple<int, int, int, int>& key) { log_.erase(key); }

 private:
  std::map<std::tuple<int, int, int, int>, std::vector<Access>> log_;
};

bool regions_overlap(const Region& a, const Region& b);
bool region_contains(const Region& outer, const Region& inner);

}  // namespace tessera::interp::tpu
