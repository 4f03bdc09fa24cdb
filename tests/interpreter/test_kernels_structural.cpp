// Structural kernels, gather and sort vs naive index-by-index references.
#include <algorithm>
#include <numeric>

#include "tests/interpreter/kernel_test_util.h"

using namespace ktest;

TEST_CASE("broadcast_in_dim") {
  for (DType d : {DType::f32, DType::i8, DType::i1, DType::f64, DType::i16}) {
    Array x = random_array(d, {3, 1}, 1, -9, 9);
    Array y = run("broadcast_in_dim", {x}, {{"shape", I{2, 3, 4}}, {"broadcast_dimensions", I{1, 2}}});
    std::vector<double> want;
    for (int64_t i = 0; i < y.size(); ++i) {
      I idx = unflatten(i, {2, 3, 4});
      want.push_back(x.get(idx[1]));
    }
    check_equal(y, want);
  }
  Array s = Array::scalar(DType::bf16, 1.5);
  check_equal(run("broadcast_in_dim", {s}, {{"shape", I{2, 2}}, {"broadcast_dimensions", I{}}}), {1.5, 1.5, 1.5, 1.5});
  Array e = run("broadcast_in_dim", {s}, {{"shape", I{0, 2}}, {"broadcast_dimensions", I{}}});
  CHECK(e.size() == 0);
}

TEST_CASE("reshape / squeeze / expand_dims share the buffer") {
  Array x = random_array(DType::f32, {2, 1, 6}, 2);
  Array r = run("reshape", {x}, {{"new_sizes", I{3, 4}}});
  CHECK(r.raw() == x.raw());
  check_equal(r, values(x));
  Array s = run("squeeze", {x}, {{"dimensions", I{1}}});
  CHECK(s.shape() == Shape{2, 6});
  check_equal(s, values(x));
  Array e = run("expand_dims", {x}, {{"dimensions", I{0, 4}}});
  CHECK(e.shape() == Shape{1, 2, 1, 6, 1});
  check_equal(e, values(x));
  Array z = run("reshape", {Array(DType::i32, {0, 4})}, {{"new_sizes", I{4, 0}}});
  CHECK(z.shape() == Shape{4, 0});
  check_equal(run("reshape", {Array::scalar(DType::i32, 3)}, {{"new_sizes", I{1, 1}}}), {3});
}

TEST_CASE("transpose: every permutation of a rank-3 array, and large tiled planes") {
  Shape shape = {3, 4, 5};
  I perm = {0, 1, 2};
  for (DType d : {DType::f32, DType::i8, DType::i64, DType::bf16}) {
    Array x = random_array(d, shape, 3, -50, 50);
    do {
      Array y = run("transpose", {x}, {{"permutation", perm}});
      Shape os = {shape[perm[0]], shape[perm[1]], shape[perm[2]]};
      CHECK(y.shape() == os);
      std::vector<double> want;
      for (int64_t i = 0; i < y.size(); ++i) {
        I o = unflatten(i, os), in(3);
        for (int k = 0; k < 3; ++k) in[perm[k]] = o[k];
        want.push_back(x.get(flatten(in, shape)));
      }
      check_equal(y, want);
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
  for (Shape s : {Shape{67, 131}, Shape{5, 40, 33}}) {
    Array x = random_array(DType::f32, s, 4);
    I p(s.size());
    std::iota(p.rbegin(), p.rend(), 0);  // full reversal of dims
    Array y = run("transpose", {x}, {{"permutation", p}});
    Shape os(s.rbegin(), s.rend());
    std::vector<double> want;
    for (int64_t i = 0; i < y.size(); ++i) {
      I o = unflatten(i, os);
      I in(o.rbegin(), o.rend());
      want.push_back(x.get(flatten(in, s)));
    }
    check_equal(y, want);
  }
}

TEST_CASE("iota") {
  Array y = run("iota", {}, {{"dtype", DType::i32}, {"shape", I{2, 3}}, {"dimension", int64_t{1}}});
  check_equal(y, {0, 1, 2, 0, 1, 2});
  Array z = run("iota", {}, {{"dtype", DType::f32}, {"shape", I{3, 2}}, {"dimension", int64_t{0}}});
  check_equal(z, {0, 0, 1, 1, 2, 2});
  Array b = run("iota", {}, {{"dtype", DType::bf16}, {"shape", I{300}}, {"dimension", int64_t{0}}});
  CHECK(b.get(257) == 256);  // bf16 cannot hold 257
  CHECK(b.get(299) == 300);
  Array w = run("iota", {}, {{"dtype", DType::i8}, {"shape", I{200}}, {"dimension", int64_t{0}}});
  CHECK(w.get(130) == -126);
}

TEST_CASE("concatenate") {
  Array a = random_array(DType::i32, {2, 3}, 1, -9, 9), b = random_array(DType::i32, {2, 1}, 2, -9, 9);
  Array c = random_array(DType::i32, {2, 0}, 3);
  Array y = run("concatenate", {a, c, b}, {{"dimension", int64_t{1}}});
  std::vector<double> want;
  for (int r = 0; r < 2; ++r) {
    for (int k = 0; k < 3; ++k) want.push_back(a.get(r * 3 + k));
    want.push_back(b.get(r));
  }
  check_equal(y, want);
  Array y0 = run("concatenate", {a, a}, {{"dimension", int64_t{0}}});
  std::vector<double> w0 = values(a);
  w0.insert(w0.end(), w0.begin(), w0.end());
  check_equal(y0, w0);
}

TEST_CASE("slice with strides") {
  Array x = random_array(DType::f32, {7, 8}, 5);
  Array y = run("slice", {x}, {{"start_indices", I{1, 2}}, {"limit_indices", I{7, 8}}, {"strides", I{2, 3}}});
  CHECK(y.shape() == Shape{3, 2});
  std::vector<double> want;
  for (int i = 1; i < 7; i += 2)
    for (int j = 2; j < 8; j += 3) want.push_back(x.get(i * 8 + j));
  check_equal(y, want);
  Array e = run("slice", {x}, {{"start_indices", I{3, 3}}, {"limit_indices", I{3, 8}}});
  CHECK(e.shape() == Shape{0, 5});
}

TEST_CASE("dynamic_slice and dynamic_update_slice clamp their starts") {
  Array x = random_array(DType::i32, {5, 6}, 6, -99, 99);
  auto i32 = [](int v) { return Array::scalar(DType::i32, v); };
  for (auto [r, c] : std::vector<std::pair<int, int>>{{1, 2}, {4, 5}, {-3, 100}, {0, 0}}) {
    Array y = run("dynamic_slice", {x, i32(r), i32(c)}, {{"slice_sizes", I{2, 3}}});
    int r0 = std::clamp(r, 0, 3), c0 = std::clamp(c, 0, 3);
    std::vector<double> want;
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) want.push_back(x.get((r0 + i) * 6 + c0 + j));
    check_equal(y, want);
    Array u = random_array(DType::i32, {2, 3}, 7, -9, 9);
    Array z = run("dynamic_update_slice", {x, u, i32(r), Array::scalar(DType::i64, c)});
    std::vector<double> wz = values(x);
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) wz[(r0 + i) * 6 + c0 + j] = u.get(i * 3 + j);
    check_equal(z, wz);
    CHECK(x.get(0) == values(x)[0]);  // operand untouched
  }
  Array s = Array::scalar(DType::f32, 4);
  check_equal(run("dynamic_update_slice", {s, Array::scalar(DType::f32, 9)}), {9});
}

TEST_CASE("pad: positive, negative and mixed") {
  Array x = random_array(DType::f32, {3, 4}, 8);
  Array v = Array::scalar(DType::f32, -1);
  for (auto [lo, hi] : std::vector<std::pair<I, I>>{{{1, 2}, {0, 1}}, {{-1, 0}, {1, -2}}, {{-3, 0}, {0, 0}}, {{0, -4}, {2, 0}}}) {
    Array y = run("pad", {x, v}, {{"low", lo}, {"high", hi}});
    Shape os = {3 + lo[0] + hi[0], 4 + lo[1] + hi[1]};
    CHECK(y.shape() == os);
    std::vector<double> want;
    for (int64_t i = 0; i < y.size(); ++i) {
      I o = unflatten(i, os);
      int64_t a = o[0] - lo[0], b = o[1] - lo[1];
      want.push_back(a >= 0 && a < 3 && b >= 0 && b < 4 ? x.get(a * 4 + b) : -1);
    }
    check_equal(y, want);
  }
  Array b = Array::from_values(DType::i1, {2}, {1, 1});
  check_equal(run("pad", {b, Array::scalar(DType::i1, 0)}, {{"low", I{1}}, {"high", I{1}}}), {0, 1, 1, 0});
}

TEST_CASE("rev") {
  Array x = random_array(DType::u8, {3, 4, 2}, 9, 0, 255);
  Array y = run("rev", {x}, {{"dimensions", I{0, 2}}});
  std::vector<double> want;
  for (int64_t i = 0; i < y.size(); ++i) {
    I o = unflatten(i, {3, 4, 2});
    want.push_back(x.get(flatten({2 - o[0], o[1], 1 - o[2]}, {3, 4, 2})));
  }
  check_equal(y, want);
  check_equal(run("rev", {Array(DType::f32, {0})}, {{"dimensions", I{0}}}), {});
}

TEST_CASE("gather clamps indices") {
  Array x = random_array(DType::f32, {3, 5, 2}, 10);
  Array idx = Array::from_values(DType::i32, {4}, {4, -7, 2, 99});
  Array y = run("gather", {x, idx}, {{"axis", int64_t{1}}});
  CHECK(y.shape() == Shape{3, 4, 2});
  std::vector<double> want;
  for (int64_t i = 0; i < y.size(); ++i) {
    I o = unflatten(i, {3, 4, 2});
    int64_t c = std::clamp<int64_t>(idx.get_int(o[1]), 0, 4);
    want.push_back(x.get(flatten({o[0], c, o[2]}, {3, 5, 2})));
  }
  check_equal(y, want);
  Array g0 = run("gather", {Array::from_values(DType::i8, {3}, {7, 8, 9}), Array::from_values(DType::u8, {2}, {2, 0})});
  check_equal(g0, {9, 7});
  BodyPtr body = make_body("t", BodyKind::func);
  Builder b(*body);
  b.create(prim("gather"), {b.param(Type::array(DType::f32, {0, 2}), "x"), b.param(Type::array(DType::i32, {1}), "i")});
  const Op& op = b.body().ops().back();
  std::vector<Array> args = {Array(DType::f32, {0, 2}), Array(DType::i32, {1})};
  CHECK_THROWS_WITH_AS(array_kernels().at(*op.prim)(op, args), doctest::Contains("empty axis"), tessera::Error);
}

TEST_CASE("sort: stable, several operands, num_keys, descending, NaN last") {
  double nan = std::nan("");
  Array k = Array::from_values(DType::f32, {7}, {3, nan, -1, 3, -0.0, 0.0, -INFINITY});
  Array v = Array::from_values(DType::i32, {7}, {0, 1, 2, 3, 4, 5, 6});
  auto outs = run_all("sort", {k, v}, {{"num_keys", int64_t{1}}});
  check_equal(outs[0], {-INFINITY, -1, -0.0, 0.0, 3, 3, nan});
  check_equal(outs[1], {6, 2, 4, 5, 0, 3, 1});
  auto desc = run_all("sort", {k, v}, {{"descending", true}});
  check_equal(desc[1], {1, 0, 3, 5, 4, 2, 6});  // equal keys keep their order
  // Two keys, along dimension 0 of a 2-D array, with a random reference.
  for (DType d : {DType::i32, DType::u8, DType::bf16}) {
    Array a = random_array(d, {20, 3}, 11, 0, 3), b = random_array(DType::i8, {20, 3}, 12, -3, 3);
    Array c = random_array(DType::f32, {20, 3}, 13);
    auto s = run_all("sort", {a, b, c}, {{"dimension", int64_t{0}}, {"num_keys", int64_t{2}}});
    for (int col = 0; col < 3; ++col) {
      std::vector<int> p(20);
      std::iota(p.begin(), p.end(), 0);
      std::stable_sort(p.begin(), p.end(), [&](int x, int y) {
        double ax = a.get(x * 3 + col), ay = a.get(y * 3 + col);
        if (ax != ay) return ax < ay;
        return b.get(x * 3 + col) < b.get(y * 3 + col);
      });
      for (int r = 0; r < 20; ++r) {
        CHECK(s[0].get(r * 3 + col) == a.get(p[r] * 3 + col));
        CHECK(s[1].get(r * 3 + col) == b.get(p[r] * 3 + col));
        CHECK(s[2].get(r * 3 + col) == c.get(p[r] * 3 + col));
      }
    }
  }
  Array i = Array::from_values(DType::i64, {4}, {5, -9223372036854775807.0, 0, 4611686018427387904.0});
  check_equal(run("sort", {i}), {-9223372036854775807.0, 0, 5, 4611686018427387904.0});
  check_equal(run("sort", {Array::from_values(DType::i1, {3}, {1, 0, 1})}, {{"descending", true}}), {1, 1, 0});
  CHECK(run("sort", {Array(DType::f32, {0})}).size() == 0);
}
