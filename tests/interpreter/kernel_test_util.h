// Helpers for the array-kernel tests: build one op with the Builder (so the
// shape rule runs), run its kernel, make random arrays, read / write .npy.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "ir/builder.h"
#include "runtime/array.h"
#include "runtime/kernels.h"
#include "tests/interpreter/interp_test_util.h"

namespace ktest {

using namespace tessera;
using namespace tessera::interp;
using I = std::vector<int64_t>;
using itest::values;
using tessera::testing::temp_dir;

// Runs primitive `name` on `args` (one body parameter per argument).
inline std::vector<Array> run_all(const std::string& name, const std::vector<Array>& args, Params params = {}) {
  BodyPtr body = make_body("t", BodyKind::func);
  Builder b(*body);
  std::vector<Value> vals;
  for (const Array& a : args) vals.push_back(b.param(Type::array(a.dtype(), a.shape()), "a"));
  b.create(prim(name), vals, std::move(params));
  const Op& op = b.body().ops().back();
  std::vector<Array> outs = array_kernels().at(*op.prim)(op, args);
  // Every kernel must produce what the shape rule promised.
  REQUIRE(outs.size() == op.results.size());
  for (size_t i = 0; i < outs.size(); ++i) {
    CHECK(outs[i].dtype() == op.results[i]->type.dtype());
    CHECK(outs[i].shape() == op.results[i]->type.shape());
  }
  return outs;
}
inline Array run(const std::string& name, const std::vector<Array>& args, Params params = {}) {
  return run_all(name, args, std::move(params)).at(0);
}

// Random array: floats uniform in [lo, hi), ints uniform in [lo, hi].
inline Array random_array(DType d, Shape s, uint32_t seed, double lo = -4, double hi = 4) {
  std::mt19937 rng(seed);
  Array a(d, std::move(s));
  for (int64_t i = 0; i < a.size(); ++i) {
    if (is_float(d)) a.set(i, std::uniform_real_distribution<double>(lo, hi)(rng));
    else if (is_bool(d)) a.set(i, static_cast<double>(rng() & 1));
    else a.set(i, static_cast<double>(std::uniform_int_distribution<int64_t>(static_cast<int64_t>(lo), static_cast<int64_t>(hi))(rng)));
  }
  return a;
}

// Multi-index of flat index i in shape s.
inline I unflatten(int64_t i, const Shape& s) {
  I idx(s.size());
  for (int d = static_cast<int>(s.size()) - 1; d >= 0; --d) {
    idx[d] = s[d] ? i % s[d] : 0;
    i = s[d] ? i / s[d] : 0;
  }
  return idx;
}
inline int64_t flatten(const I& idx, const Shape& s) {
  int64_t f = 0;
  for (size_t d = 0; d < s.size(); ++d) f = f * s[d] + idx[d];
  return f;
}

inline bool same_value(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

inline void check_equal(const Array& got, const std::vector<double>& want, const char* what = "") {
  REQUIRE(got.size() == static_cast<int64_t>(want.size()));
  for (int64_t i = 0; i < got.size(); ++i) {
    INFO(std::string(what) << " element " << i << ": got " << got.get(i) << " want " << want[i]);
    CHECK(same_value(got.get(i), want[i]));
  }
}

inline void check_close(const Array& got, const std::vector<double>& want, double rtol, double atol, const char* what = "") {
  REQUIRE(got.size() == static_cast<int64_t>(want.size()));
  int bad = 0;
  for (int64_t i = 0; i < got.size() && bad < 10; ++i) {
    double g = got.get(i), w = want[i];
    bool ok = same_value(g, w) || std::fabs(g - w) <= atol + rtol * std::fabs(w);
    if (!ok) {
      ++bad;
      INFO(std::string(what) << " element " << i << ": got " << g << " want " << w);
      CHECK(ok);
    }
  }
  CHECK(bad == 0);
}

// ---- .npy (little-endian f4 / f8 / i4 / i8 / u1 / b1, C order) ---------------
inline std::string npy_descr(DType d) {
  switch (d) {
    case DType::f32: return "<f4";
    case DType::f64: return "<f8";
    case DType::i32: return "<i4";
    case DType::i64: return "<i8";
    case DType::u8: return "|u1";
    case DType::i1: return "|b1";
    default: FAIL("npy: unsupported dtype in tests"); return "";
  }
}

inline void write_npy(const std::string& path, const Array& a) {
  std::string header = "{'descr': '" + npy_descr(a.dtype()) + "', 'fortran_order': False, 'shape': (";
  for (int64_t n : a.shape()) header += std::to_string(n) + ", ";
  header += "), }";
  while ((10 + header.size() + 1) % 64) header += ' ';
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  f.write("\x93NUMPY\x01\x00", 8);
  uint16_t len = static_cast<uint16_t>(header.size());
  f.write(reinterpret_cast<const char*>(&len), 2);
  f << header;
  f.write(static_cast<const char*>(a.raw()), static_cast<std::streamsize>(a.storage_bytes()));
}

inline Array read_npy(const std::string& path, DType d, const Shape& s) {
  std::ifstream f(path, std::ios::binary);
  REQUIRE(f.good());
  char magic[8];
  f.read(magic, 8);
  uint16_t len = 0;
  f.read(reinterpret_cast<char*>(&len), 2);
  std::string header(len, ' ');
  f.read(header.data(), len);
  REQUIRE(header.find(npy_descr(d)) != std::string::npos);
  Array a(d, s);
  f.read(static_cast<char*>(a.raw()), static_cast<std::streamsize>(a.storage_bytes()));
  REQUIRE(f.gcount() == static_cast<std::streamsize>(a.storage_bytes()));
  return a;
}

// Runs a Python snippet with NumPy (only /usr/bin/python3). `dir` is where
// the snippet reads and writes its .npy files.
inline bool numpy_available() { return std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") == 0; }
inline void run_numpy(const std::string& dir, const std::string& code) {
  std::string script = dir + "/script.py";
  std::ofstream(script) << "import numpy as np, os\nos.chdir(" << '"' << dir << '"' << ")\n" << code << "\n";
  REQUIRE(std::system(("/usr/bin/python3 " + script).c_str()) == 0);
}

}  // namespace ktest
