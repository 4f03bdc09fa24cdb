// Helpers for the interpreter tests: parse + verify a module, run a function,
// compare against references computed with plain loops in the test.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "interpreter/interpreter.h"
#include "ir/parser.h"
#include "runtime/array.h"
#include "tests/test_util.h"
#include "verify/verify.h"

namespace itest {

using namespace tessera;
using namespace tessera::interp;
using namespace tessera::testing;

inline Module parse_checked(const std::string& text) {
  Module m = parse_module(text, "test.tsr");
  std::vector<Diagnostic> d = verify_module(m);
  for (const auto& x : d) MESSAGE(x.str());
  REQUIRE(d.empty());
  return m;
}

inline std::vector<Array> run(const std::string& text, const std::vector<Array>& in, const RunOptions& o = {}) {
  Module m = parse_checked(text);
  return run_function(m, "main", in, o);
}

// The message of the Error the run throws ("" if it does not throw).
inline std::string run_error(const std::string& text, const std::vector<Array>& in, const RunOptions& o = {}) {
  Module m = parse_checked(text);
  try {
    run_function(m, "main", in, o);
  } catch (const Error& e) {
    return e.formatted();
  }
  return "";
}

inline Module load_example(const std::string& name) {
  Module m = parse_file(example_path(name).string());
  std::vector<Diagnostic> d = verify_module(m);
  for (const auto& x : d) MESSAGE(x.str());
  REQUIRE(d.empty());
  return m;
}

inline Array random(DType d, Shape s, uint64_t seed, double lo = -1, double hi = 1) {
  Array a(d, s);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  for (int64_t i = 0; i < a.size(); ++i) a.set(i, is_float(d) ? u(rng) : std::floor(u(rng)));
  return a;
}

inline Array iota(DType d, Shape s, double scale = 1) {
  Array a(d, s);
  for (int64_t i = 0; i < a.size(); ++i) a.set(i, static_cast<double>(i) * scale);
  return a;
}

inline std::vector<double> values(const Array& a) {
  std::vector<double> v(static_cast<size_t>(a.size()));
  for (int64_t i = 0; i < a.size(); ++i) v[static_cast<size_t>(i)] = a.get(i);
  return v;
}

// Max |a - ref| relative to max(1, |ref|), and a CHECK against tol.
inline void check_close(const Array& a, const std::vector<double>& ref, double tol) {
  REQUIRE(a.size() == static_cast<int64_t>(ref.size()));
  double worst = 0;
  int64_t at = -1;
  for (int64_t i = 0; i < a.size(); ++i) {
    double r = ref[static_cast<size_t>(i)];
    double e = std::fabs(a.get(i) - r) / std::max(1.0, std::fabs(r));
    if (!(e <= worst)) {
      worst = e;
      at = i;
    }
  }
  INFO("worst error " << worst << " at flat index " << at);
  CHECK(worst <= tol);
}

inline bool contains(const std::string& s, const std::string& part) {
  if (s.find(part) != std::string::npos) return true;
  MESSAGE("'" << s << "' does not contain '" << part << "'");
  return false;
}

}  // namespace itest
