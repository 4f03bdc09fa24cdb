// Reductions, argmax / argmin and cumsum vs naive references.
#include <limits>

#include "tests/interpreter/kernel_test_util.h"

using namespace ktest;

namespace {

int64_t int_lowest(DType d) { return is_signed_int(d) ? -(int64_t{1} << (int_bits(d) - 1)) : 0; }
int64_t int_highest(DType d) {
  if (is_bool(d)) return 1;
  return is_signed_int(d) ? (int64_t{1} << (int_bits(d) - 1)) - 1
                          : static_cast<int64_t>((uint64_t{1} << int_bits(d)) - 1);
}

// Wraps an int64 into dtype d (two's complement) and returns it as double.
double wrap_to(DType d, int64_t v) {
  Array t(d, {});
  visit(t, [&](auto* p) { p[0] = static_cast<std::remove_pointer_t<decltype(p)>>(v); });
  return t.get(0);
}

// Naive reduction over `axes`: double for floats (then one rounding), int64
// with wrap-around for ints.
std::vector<double> ref_reduce(const Array& x, const I& axes, const std::string& kind) {
  Shape out_shape;
  std::vector<bool> red(x.rank(), false);
  for (int64_t a : axes) red[a] = true;
  for (int d = 0; d < x.rank(); ++d)
    if (!red[d]) out_shape.push_back(x.shape()[d]);
  int64_t n_out = num_elements(out_shape);
  DType dt = x.dtype();
  std::vector<double> acc(n_out);
  std::vector<int64_t> iacc(n_out);
  for (int64_t o = 0; o < n_out; ++o) {
    if (kind == "sum" || kind == "or") acc[o] = 0, iacc[o] = 0;
    else if (kind == "prod") acc[o] = 1, iacc[o] = 1;
    else if (kind == "max") acc[o] = -INFINITY, iacc[o] = is_float(dt) ? 0 : int_lowest(dt);
    else if (kind == "min") acc[o] = INFINITY, iacc[o] = is_float(dt) ? 0 : int_highest(dt);
    else acc[o] = 1, iacc[o] = is_bool(dt) ? 1 : -1;
  }
  for (int64_t i = 0; i < x.size(); ++i) {
    I idx = unflatten(i, x.shape()), oi;
    for (int d = 0; d < x.rank(); ++d)
      if (!red[d]) oi.push_back(idx[d]);
    int64_t o = flatten(oi, out_shape);
    double v = x.get(i);
    int64_t w = is_float(dt) ? 0 : x.get_int(i);
    auto u = [](int64_t q) { return static_cast<uint64_t>(q); };
    if (kind == "sum") acc[o] += v, iacc[o] = static_cast<int64_t>(u(iacc[o]) + u(w));
    else if (kind == "prod") acc[o] *= v, iacc[o] = static_cast<int64_t>(u(iacc[o]) * u(w));
    else if (kind == "max") acc[o] = (std::isnan(acc[o]) || std::isnan(v)) ? NAN : std::max(acc[o], v), iacc[o] = std::max(iacc[o], w);
    else if (kind == "min") acc[o] = (std::isnan(acc[o]) || std::isnan(v)) ? NAN : std::min(acc[o], v), iacc[o] = std::min(iacc[o], w);
    else if (kind == "and") iacc[o] &= w;
    else iacc[o] |= w;
  }
  std::vector<double> out(n_out);
  for (int64_t o = 0; o < n_out; ++o) out[o] = is_float(dt) ? round_double_to(dt, acc[o]) : wrap_to(dt, iacc[o]);
  return out;
}

}  // namespace

TEST_CASE("reduce_sum / prod / max / min over axis sets, several dtypes") {
  Shape shape = {3, 4, 5};
  std::vector<I> axis_sets = {{}, {0}, {1}, {2}, {0, 2}, {1, 2}, {0, 1, 2}, {2, 0}};
  for (DType d : {DType::f32, DType::bf16, DType::f64, DType::i32, DType::i8, DType::u8, DType::u32}) {
    Array x = random_array(d, shape, 21, is_unsigned_int(d) ? 0 : -3, 3);
    for (const I& axes : axis_sets) {
      for (const char* kind : {"sum", "prod", "max", "min"}) {
        INFO(dtype_name(d) << " reduce_" << kind << " axes size " << axes.size());
        Array y = run(std::string("reduce_") + kind, {x}, {{"axes", axes}});
        std::vector<double> want = ref_reduce(x, axes, kind);
        if (is_float(d)) check_close(y, want, d == DType::bf16 ? 8e-3 : 1e-5, 1e-5, kind);
        else check_equal(y, want, kind);
      }
    }
  }
  // bf16 sums accumulate in f32: 256 ones plus 1 stays exact before the final rounding.
  Array ones = Array::from_values(DType::bf16, {257}, std::vector<double>(257, 1.0));
  check_equal(run("reduce_sum", {ones}, {{"axes", I{0}}}), {256});  // 257 rounds (tie) to 256 once at the end
  Array big(DType::bf16, {1024});
  for (int i = 0; i < 1024; ++i) big.set(i, 1.0);
  check_equal(run("reduce_sum", {big}, {{"axes", I{0}}}), {1024});  // a bf16 accumulator would stall at 256
  // NaN propagates through max / min; an empty reduction gives the identity.
  Array n = Array::from_values(DType::f32, {2, 2}, {1, NAN, 3, 4});
  Array mx = run("reduce_max", {n}, {{"axes", I{1}}});
  CHECK(std::isnan(mx.get(0)));
  CHECK(mx.get(1) == 4);
  Array e(DType::f32, {0, 3});
  check_equal(run("reduce_max", {e}, {{"axes", I{0}}}), {-INFINITY, -INFINITY, -INFINITY});
  check_equal(run("reduce_sum", {e}, {{"axes", I{0}}}), {0, 0, 0});
  check_equal(run("reduce_min", {Array(DType::i8, {0})}, {{"axes", I{0}}}), {127});
  check_equal(run("reduce_max", {Array(DType::u32, {0})}, {{"axes", I{0}}}), {0});
  check_equal(run("reduce_prod", {Array(DType::i32, {2, 0})}, {{"axes", I{1}}}), {1, 1});
  check_equal(run("reduce_sum", {Array::scalar(DType::f32, 2.5)}, {{"axes", I{}}}), {2.5});
  // Integer sums wrap.
  check_equal(run("reduce_sum", {Array::from_values(DType::i8, {3}, {100, 100, 100})}, {{"axes", I{0}}}), {44});
}

TEST_CASE("reduce_and / reduce_or on bool and ints") {
  for (DType d : {DType::i1, DType::i32, DType::u8}) {
    Array x = random_array(d, {4, 6}, 31, 0, 255);
    if (d == DType::i1) x.set(3, 1), x.set(9, 0);
    for (const I& axes : std::vector<I>{{0}, {1}, {0, 1}, {}}) {
      for (const char* kind : {"and", "or"}) {
        INFO(dtype_name(d) << " " << kind);
        check_equal(run(std::string("reduce_") + kind, {x}, {{"axes", axes}}), ref_reduce(x, axes, kind), kind);
      }
    }
  }
  check_equal(run("reduce_and", {Array(DType::i1, {0})}, {{"axes", I{0}}}), {1});
  check_equal(run("reduce_and", {Array(DType::i32, {0})}, {{"axes", I{0}}}), {-1});
  check_equal(run("reduce_or", {Array(DType::i1, {0})}, {{"axes", I{0}}}), {0});
}

TEST_CASE("argmax / argmin: first occurrence, NaN wins, index dtype") {
  for (DType d : {DType::f32, DType::i32, DType::u8, DType::i1, DType::bf16}) {
    Array x = random_array(d, {4, 5, 3}, 41, 0, 4);  // many ties
    for (int64_t axis = 0; axis < 3; ++axis) {
      for (bool is_max : {true, false}) {
        INFO(dtype_name(d) << " axis " << axis << (is_max ? " argmax" : " argmin"));
        Array y = run(is_max ? "argmax" : "argmin", {x}, {{"axis", axis}});
        Shape os = x.shape();
        os.erase(os.begin() + axis);
        std::vector<double> want;
        for (int64_t o = 0; o < num_elements(os); ++o) {
          I oi = unflatten(o, os);
          int64_t best = 0;
          double bv = 0;
          for (int64_t k = 0; k < x.shape()[axis]; ++k) {
            I ii = oi;
            ii.insert(ii.begin() + axis, k);
            double v = x.get(flatten(ii, x.shape()));
            if (k == 0 || (is_max ? v > bv : v < bv)) best = k, bv = v;
          }
          want.push_back(static_cast<double>(best));
        }
        check_equal(y, want);
      }
    }
  }
  Array n = Array::from_values(DType::f32, {6}, {1, 5, NAN, 5, NAN, -1});
  check_equal(run("argmax", {n}, {{"axis", int64_t{0}}}), {2});
  check_equal(run("argmin", {n}, {{"axis", int64_t{0}}}), {2});
  Array y = run("argmax", {Array::from_values(DType::f32, {3}, {1, 7, 7})}, {{"axis", int64_t{0}}, {"index_dtype", DType::i64}});
  CHECK(y.dtype() == DType::i64);
  check_equal(y, {1});
  BodyPtr body = make_body("t", BodyKind::func);
  Builder b(*body);
  b.create(prim("argmax"), {b.param(Type::array(DType::f32, {2, 0}), "x")}, {{"axis", int64_t{1}}});
  const Op& op = b.body().ops().back();
  std::vector<Array> args = {Array(DType::f32, {2, 0})};
  CHECK_THROWS_WITH_AS(array_kernels().at(*op.prim)(op, args), doctest::Contains("argmax of an empty axis"), tessera::Error);
  CHECK(run("argmax", {Array(DType::f32, {0, 3})}, {{"axis", int64_t{1}}}).size() == 0);
}

TEST_CASE("cumsum forward and reverse") {
  for (DType d : {DType::f32, DType::bf16, DType::i32, DType::i8, DType::u32}) {
    Array x = random_array(d, {3, 4, 2}, 51, is_unsigned_int(d) ? 0 : -60, 60);
    for (int64_t axis = 0; axis < 3; ++axis) {
      for (bool reverse : {false, true}) {
        INFO(dtype_name(d) << " axis " << axis << " reverse " << reverse);
        Array y = run("cumsum", {x}, {{"axis", axis}, {"reverse", reverse}});
        std::vector<double> want;
        for (int64_t i = 0; i < x.size(); ++i) {
          I idx = unflatten(i, x.shape());
          double s = 0;
          int64_t is = 0;
          int64_t n = x.shape()[axis];
          for (int64_t k = reverse ? idx[axis] : 0; k < (reverse ? n : idx[axis] + 1); ++k) {
            I j = idx;
            j[axis] = k;
            s += x.get(flatten(j, x.shape()));
            is += is_float(d) ? 0 : x.get_int(flatten(j, x.shape()));
          }
          want.push_back(is_float(d) ? round_double_to(d, s) : wrap_to(d, is));
        }
        if (is_float(d)) check_close(y, want, d == DType::bf16 ? 8e-3 : 1e-5, 1e-4);
        else check_equal(y, want);
      }
    }
  }
  check_equal(run("cumsum", {Array::from_values(DType::i8, {3}, {100, 100, 100})}, {{"axis", int64_t{0}}}), {100, -56, 44});
  CHECK(run("cumsum", {Array(DType::f32, {0, 2})}, {{"axis", int64_t{0}}}).size() == 0);
}
