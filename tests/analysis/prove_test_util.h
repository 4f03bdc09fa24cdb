// Helpers shared by the prover tests.
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "analysis/prove/prove.h"
#include "interpreter/interpreter.h"
#include "ir/parser.h"
#include "tests/test_util.h"
#include "verify/verify.h"

namespace tessera::prove::testing {

using namespace tessera::testing;

inline Module parse_verified(const std::string& text) {
  Module m = parse_module(text, "<test>");
  verify_or_throw(m);
  return m;
}

// The reference for brute-force checks: the interpreter's evaluation of index
// map @map at one grid point (it shares no code with the Z3 encoding).
inline std::vector<int64_t> block_at(const Module& m, const std::string& map, const std::vector<int64_t>& point,
                                     const std::vector<interp::Array>& prefetch = {}) {
  return interp::eval_index_map(m, *m.find(map), point, prefetch);
}

inline std::vector<Obligation> prove_text(const std::string& text, Options opts = {}) {
  return prove_module(parse_verified(text), opts);
}

// The single obligation with this subject and kind (fails the test otherwise).
inline Obligation find(const std::vector<Obligation>& obs, const std::string& subject, const std::string& kind) {
  const Obligation* hit = nullptr;
  for (const Obligation& o : obs)
    if (o.subject == subject && o.kind == kind) {
      REQUIRE_MESSAGE(hit == nullptr, "two obligations " << subject << " " << kind);
      hit = &o;
    }
  REQUIRE_MESSAGE(hit != nullptr, "no obligation " << subject << " " << kind);
  return *hit;
}

inline std::string lines(const std::vector<Obligation>& obs) {
  std::string s;
  for (const Obligation& o : obs) s += o.line() + "\n";
  return s;
}

}  // namespace tessera::prove::testing
