// Whether this test binary is built with AddressSanitizer (the CI's clang
// build): there everything runs ~10-30x slower, so heavy tests trim their
// campaigns or skip what is not about memory safety.
#pragma once

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
