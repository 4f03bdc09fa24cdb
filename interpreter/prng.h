// The random-bit generator behind prng_seed / prng_random_bits
// (jax/_src/pallas/mosaic/primitives.py: `prng_seed`, `prng_random_bits`),
// one per core, as the TPU keeps one per core.
//
// The seeds (one or more integers) are folded into a 64-bit key with
// SplitMix64's finalizer, one seed after another; the bits are then the
// SplitMix64 sequence from that key (Steele, Lea and Flood, "Fast splittable
// pseudorandom number generators", OOPSLA 2014): state += 0x9E3779B97F4A7C15,
// output = the high 32 bits of mix(state). The same seeds give the same bits
// on every run; different seeds start unrelated sequences. It is not the
// TPU's hardware generator: kernels may rely on determinism per seed, not on
// the values.
#pragma once

#include <cstdint>
#include <span>

namespace tessera::interp {

class Prng {
 public:
  void seed(std::span<const int64_t> seeds) {
    uint64_t key = 0x5EED5EED5EED5EEDull;
    for (int64_t s : seeds) key = mix(key ^ static_cast<uint64_t>(s));
    state_ = key;
    seeded_ = true;
  }
  bool seeded() const { return seeded_; }
  uint32_t next() {
    state_ += 0x9E3779B97F4A7C15ull;
    return static_cast<uint32_t>(mix(state_) >> 32);
  }

 private:
  static uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t state_ = 0;
  bool seeded_ = false;
};

}  // namespace tessera::interp
