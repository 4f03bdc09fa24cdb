// The order in which --grid-seed visits one parallel grid axis: position i
// of the loop visits coordinate at(i), a permutation of [0, n).
//
// Axes of up to a million points get a Fisher-Yates shuffle. Longer ones get
// a random affine bijection i -> (a * i + b) mod n (a coprime with n), which
// needs no memory: a mutated or generated kernel with a grid of 2^31 points
// must not allocate 16 GiB before its first iteration.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace tessera::interp {

class AxisOrder {
 public:
  AxisOrder() = default;  // the identity
  AxisOrder(int64_t n, std::mt19937_64& rng);

  int64_t at(int64_t i) const {
    if (!shuffled_.empty()) return shuffled_[static_cast<size_t>(i)];
    if (n_ == 0) return i;
    return static_cast<int64_t>((static_cast<unsigned __int128>(a_) * static_cast<uint64_t>(i) + static_cast<uint64_t>(b_)) %
                                static_cast<uint64_t>(n_));
  }

  static constexpr int64_t kShuffleLimit = int64_t{1} << 20;

 private:
  std::vector<int64_t> shuffled_;
  int64_t a_ = 1, b_ = 0, n_ = 0;  // n_ == 0: identity (or shuffled)
};

}  // namespace tessera::interp
