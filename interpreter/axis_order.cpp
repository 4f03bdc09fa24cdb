#include "interpreter/axis_order.h"

#include <numeric>
#include <utility>

namespace tessera::interp {

AxisOrder::AxisOrder(int64_t n, std::mt19937_64& rng) {
  if (n < 2) return;  // draws nothing, so the other axes' orders stay as they were
  if (n <= kShuffleLimit) {
    shuffled_.resize(static_cast<size_t>(n));
    std::iota(shuffled_.begin(), shuffled_.end(), int64_t{0});
    for (int64_t i = n - 1; i > 0; --i)
      std::swap(shuffled_[static_cast<size_t>(i)], shuffled_[static_cast<size_t>(rng() % static_cast<uint64_t>(i + 1))]);
    return;
  }
  n_ = n;
  b_ = static_cast<int64_t>(rng() % static_cast<uint64_t>(n));
  do a_ = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(n - 1));
  while (std::gcd(a_, n) != 1);
}

}  // namespace tessera::interp
