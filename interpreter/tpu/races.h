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
#include <unordered_map>
#include <vector>

#include "ir/diagnostics.h"
#include "runtime/region.h"

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
  struct CellHash {
    size_t operator()(const std::vector<int64_t>& c) const {
      size_t h = c.size();
      for (int64_t x : c) h = h * 1000003u ^ static_cast<size_t>(x);
      return h;
    }
  };
  // One buffer's accesses, filed by the cells of a grid over the buffer (a
  // cell is as big as the buffer's first access, typically a block) so that
  // a check looks only at the accesses in its own cells: over a grid of
  // blocks each check is O(1), not O(accesses so far). An access spanning
  // more than kMaxCells cells is filed as `wide` and checked by everyone.
  struct BufferLog {
    std::vector<int64_t> cell;  // cell extent per dim, >= 1
    std::vector<Access> accesses;
    std::vector<char> alive;       // 0: subsumed by a later access
    std::vector<uint64_t> seen;    // the check that last looked at it
    std::unordered_map<std::vector<int64_t>, std::vector<uint32_t>, CellHash> cells;
    std::vector<uint32_t> wide;
    size_t dead = 0;
    // Drops the subsumed accesses once they are most of the log, so memory
    // stays proportional to the live ones.
    void compact();
  };
  static constexpr int64_t kMaxCells = 64;
  // The cells `r` touches (empty when it is wide).
  static std::vector<std::vector<int64_t>> cells_of(const BufferLog& log, const Region& r);
  std::map<std::tuple<int, int, int, int>, BufferLog> log_;
  uint64_t checks_ = 0;
};

bool regions_overlap(const Region& a, const Region& b);
bool region_contains(const Region& outer, const Region& inner);

}  // namespace tessera::interp::tpu
