// Shared by the differential tests of the passes: zoo examples, random inputs,
// comparison of interpreter results, batch slicing / stacking for vmap, and
// walks over every body of a module.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "interpreter/interpreter.h"
#include "tests/test_util.h"

namespace tessera::testing {

using interp::Array;

// Calls f on every body reachable from the module (nested ones included).
inline void each_body(const Module& m, const std::function<void(const Body&)>& f) {
  std::unordered_set<const Body*> seen;
  std::function<void(const Body&)> walk = [&](const Body& b) {
    if (!seen.insert(&b).second) return;
    f(b);
    for (const Op& op : b.ops())
      for (const BodyPtr& n : op.nested_bodies()) walk(*n);
  };
  for (const BodyPtr& s : m.symbols()) walk(*s);
}

// True when a Ref-typed value is left anywhere in the module (after discharge: never).
inline bool has_ref_anywhere(const Module& m) {
  bool found = false;
  each_body(m, [&](const Body& b) {
    for (const Var* p : b.params()) found |= p->type.is_ref();
    for (const Op& op : b.ops()) {
      for (const Var* r : op.results) found |= r->type.is_ref();
      for (const Value& v : op.operands) found |= v.type().is_ref();
    }
  });
  return found;
}

inline Module example(const std::string& name) { return parse_module(example_text(name), name); }

// Floats uniform in [-2, 2); integers in [0, int_hi).
inline Array random_array(const Type& t, uint32_t seed, int int_hi = 8) {
  std::mt19937 gen(seed);
  std::vector<double> vals(num_elements(t.shape()));
  if (is_float(t.dtype())) {
    std::uniform_real_distribution<double> u(-2.0, 2.0);
    for (double& v : vals) v = u(gen);
  } else {
    std::uniform_int_distribution<int> u(0, int_hi - 1);
    for (double& v : vals) v = u(gen);
  }
  return Array::from_values(t.dtype(), t.shape(), vals);
}

inline std::vector<Array> random_inputs(const Body& f, uint32_t seed) {
  std::vector<Array> in;
  for (const Var* p : f.params()) in.push_back(random_array(p->type, seed++));
  return in;
}

// Elementwise |a - b| / (1 + |b|) <= tol; reports the worst error.
inline void require_close(const Array& a, const Array& b, double tol = 1e-5) {
  REQUIRE(a.dtype() == b.dtype());
  REQUIRE(a.shape() == b.shape());
  double worst = 0;
  int64_t bad = -1;
  for (int64_t i = 0; i < a.size(); ++i) {
    double x = a.get(i), y = b.get(i);
    double err = std::abs(x - y) / (1.0 + std::abs(y));
    if (!(err <= tol) && bad < 0) bad = i;
    if (err > worst) worst = err;
  }
  INFO("worst relative error " << worst << " at first bad element " << bad);
  CHECK(bad < 0);
}

// Element `b` of `a` along `axis` (that axis removed).
inline Array batch_element(const Array& a, int64_t b, int64_t axis = 0) {
  Shape inner = a.shape();
  int64_t n = inner[axis];
  inner.erase(inner.begin() + axis);
  int64_t outer = 1, rest = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= a.shape()[d];
  for (size_t d = axis + 1; d < a.shape().size(); ++d) rest *= a.shape()[d];
  Array out(a.dtype(), inner);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t r = 0; r < rest; ++r) out.set(o * rest + r, a.get((o * n + b) * rest + r));
  return out;
}

// Stacks equal-shaped arrays along a new axis `axis`.
inline Array stack(const std::vector<Array>& parts, int64_t axis) {
  Shape s = parts.at(0).shape();
  int64_t n = static_cast<int64_t>(parts.size());
  int64_t outer = 1, rest = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= s[d];
  for (size_t d = axis; d < s.size(); ++d) rest *= s[d];
  s.insert(s.begin() + axis, n);
  Array out(parts[0].dtype(), s);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t b = 0; b < n; ++b)
      for (int64_t r = 0; r < rest; ++r) out.set((o * n + b) * rest + r, parts[b].get(o * rest + r));
  return out;
}

}  // namespace tessera::testing
