// Helpers shared by the robustness tests (mutants and the property test).
#pragma once

#include <cstdint>
#include <cstdlib>

namespace tessera::robustness {

// An integer from the environment (campaign knobs), or `fallback`.
inline int64_t env_int(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoll(v, nullptr, 10) : fallback;
}

// The sanitizer build runs interpreted programs ~30x slower: default
// campaigns there are smaller.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

}  // namespace tessera::robustness
