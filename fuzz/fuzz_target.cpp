// One libFuzzer target. fuzz/meson.build builds this file once per check of
// fuzz/checks.h, naming it with TESSERA_FUZZ_TARGET: fuzz_parse, fuzz_passes,
// fuzz_run, fuzz_prove, fuzz_import. A broken rule aborts, so that libFuzzer saves the
// input as a crash (scripts/fuzz.sh, docs/fuzzing.md).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz/checks.h"

#ifndef TESSERA_FUZZ_TARGET
#error "TESSERA_FUZZ_TARGET names the check (fuzz/meson.build)"
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const tessera::fuzz::Target& target = tessera::fuzz::target(TESSERA_FUZZ_TARGET);
  std::string bug = target.check(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!bug.empty()) {
    std::fprintf(stderr, "\ntessera fuzz_%s: %s\n", target.name, bug.c_str());
    std::abort();
  }
  return 0;
}
