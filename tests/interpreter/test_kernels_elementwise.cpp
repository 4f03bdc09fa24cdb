// Elementwise kernels vs naive references computed in double / int64.
#include <functional>
#include <limits>

#include "tests/interpreter/kernel_test_util.h"

using namespace ktest;

namespace {

double rnd_to(DType d, double v) { return is_float(d) ? round_double_to(d, v) : v; }

// Wraps an exact integer result into dtype d (two's complement).
double wrap(DType d, int64_t v) {
  switch (d) {
    case DType::i8: return static_cast<int8_t>(v);
    case DType::i16: return static_cast<int16_t>(v);
    case DType::i32: return static_cast<int32_t>(v);
    case DType::u8: return static_cast<uint8_t>(v);
    case DType::u32: return static_cast<uint32_t>(v);
    default: return static_cast<double>(v);
  }
}

}  // namespace

TEST_CASE("elementwise: float unary math in f32, bf16, f16 and f64") {
  struct U {
    const char* name;
    std::function<double(double)> f;
    double lo, hi;
  };
  std::vector<U> ops = {
      {"exp", [](double x) { return std::exp(x); }, -5, 5},
      {"log", [](double x) { return std::log(x); }, 0.01, 10},
      {"sqrt", [](double x) { return std::sqrt(x); }, 0, 10},
      {"rsqrt", [](double x) { return 1 / std::sqrt(x); }, 0.01, 10},
      {"tanh", [](double x) { return std::tanh(x); }, -4, 4},
      {"logistic", [](double x) { return 1 / (1 + std::exp(-x)); }, -8, 8},
      {"sin", [](double x) { return std::sin(x); }, -6, 6},
      {"cos", [](double x) { return std::cos(x); }, -6, 6},
      {"floor", [](double x) { return std::floor(x); }, -6, 6},
      {"ceil", [](double x) { return std::ceil(x); }, -6, 6},
      {"round", [](double x) { return std::round(x); }, -6, 6},
      {"exp2", [](double x) { return std::exp2(x); }, -6, 6},
      {"log1p", [](double x) { return std::log1p(x); }, -0.9, 6},
      {"expm1", [](double x) { return std::expm1(x); }, -3, 3},
      {"erf", [](double x) { return std::erf(x); }, -3, 3},
      {"neg", [](double x) { return -x; }, -3, 3},
      {"abs", [](double x) { return std::fabs(x); }, -3, 3},
      {"sign", [](double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; }, -3, 3},
  };
  for (const U& u : ops) {
    for (DType d : {DType::f32, DType::bf16, DType::f16, DType::f64}) {
      INFO(u.name << " " << dtype_name(d));
      Array x = random_array(d, {7, 9}, 11, u.lo, u.hi);
      Array y = run(u.name, {x});
      std::vector<double> want;
      for (double v : values(x)) want.push_back(rnd_to(d, u.f(v)));
      double rtol = d == DType::f32 ? 2e-6 : d == DType::f64 ? 1e-14 : d == DType::bf16 ? 8e-3 : 1e-3;
      check_close(y, want, rtol, 1e-6, u.name);
      if (is_rounded_float(d))
        for (int64_t i = 0; i < y.size(); ++i) CHECK(round_double_to(d, y.get(i)) == y.get(i));
    }
  }
  // Specials: round is half away from zero, sign keeps -0 and NaN.
  Array x = Array::from_values(DType::f32, {4}, {0.5, -2.5, 1.5, -0.0});
  check_equal(run("round", {x}), {1, -3, 2, -0.0});
  Array s = run("sign", {Array::from_values(DType::f32, {3}, {-0.0, std::nan(""), 7})});
  CHECK(std::signbit(s.get(0)));
  CHECK(std::isnan(s.get(1)));
  CHECK(s.get(2) == 1);
}

TEST_CASE("elementwise: integer unary ops wrap") {
  Array x = Array::from_values(DType::i8, {4}, {-128, -5, 0, 127});
  check_equal(run("neg", {x}), {-128, 5, 0, -127});
  check_equal(run("abs", {x}), {-128, 5, 0, 127});
  check_equal(run("sign", {x}), {-1, -1, 0, 1});
  check_equal(run("not", {x}), {127, 4, -1, -128});
  Array u = Array::from_values(DType::u32, {3}, {0, 1, 4294967295.0});
  check_equal(run("neg", {u}), {0, 4294967295.0, 1});
  check_equal(run("abs", {u}), {0, 1, 4294967295.0});
  check_equal(run("sign", {u}), {0, 1, 1});
  Array b = Array::from_values(DType::i1, {2}, {0, 1});
  check_equal(run("not", {b}), {1, 0});
}

TEST_CASE("elementwise: binary arithmetic on floats and ints vs int64 / double reference") {
  for (DType d : {DType::f32, DType::bf16, DType::f64, DType::i32, DType::i8, DType::u8, DType::u32, DType::i16, DType::i64}) {
    INFO(dtype_name(d));
    double lo = is_unsigned_int(d) ? 0 : -120, hi = 120;
    Array a = random_array(d, {5, 6}, 3, lo, hi), b = random_array(d, {5, 6}, 4, lo, hi);
    // Make sure zero divisors and equal operands occur.
    b.set(0, 0), b.set(1, a.get(1));
    for (const char* name : {"add", "sub", "mul", "div", "rem", "max", "min"}) {
      INFO(name);
      Array y = run(name, {a, b});
      std::vector<double> want;
      for (int64_t i = 0; i < a.size(); ++i) {
        double x = a.get(i), z = b.get(i), r = 0;
        std::string n = name;
        if (is_float(d)) {
          r = n == "add" ? x + z : n == "sub" ? x - z : n == "mul" ? x * z : n == "div" ? x / z
            : n == "rem" ? std::fmod(x, z) : n == "max" ? std::max(x, z) : std::min(x, z);
          r = rnd_to(d, r);
        } else {
          int64_t p = a.get_int(i), q = b.get_int(i), v;
          if (n == "add") v = p + q;
          else if (n == "sub") v = p - q;
          else if (n == "mul") v = p * q;
          else if (n == "div") v = q == 0 ? -1 : p / q;
          else if (n == "rem") v = q == 0 ? p : p % q;
          else v = n == "max" ? std::max(p, q) : std::min(p, q);
          r = wrap(d, v);
        }
        want.push_back(r);
      }
      if (d == DType::f32 || d == DType::bf16) check_close(y, want, d == DType::f32 ? 1e-7 : 4e-3, 0, name);
      else check_equal(y, want, name);
    }
  }
}

TEST_CASE("elementwise: integer division edge cases never trap") {
  int32_t mn = std::numeric_limits<int32_t>::min();
  Array a = Array::from_values(DType::i32, {4}, {static_cast<double>(mn), 7, -7, static_cast<double>(mn)});
  Array b = Array::from_values(DType::i32, {4}, {-1, 0, 2, 0});
  check_equal(run("div", {a, b}), {static_cast<double>(mn), -1, -3, -1});
  check_equal(run("rem", {a, b}), {0, 7, -1, static_cast<double>(mn)});
  Array ua = Array::from_values(DType::u32, {2}, {9, 9}), ub = Array::from_values(DType::u32, {2}, {0, 2});
  check_equal(run("div", {ua, ub}), {4294967295.0, 4});
  check_equal(run("rem", {ua, ub}), {9, 1});
  check_equal(run("mul", {Array::from_values(DType::i32, {1}, {65536}), Array::from_values(DType::i32, {1}, {65536})}), {0});
  check_equal(run("add", {Array::from_values(DType::i8, {1}, {127}), Array::from_values(DType::i8, {1}, {1})}), {-128});
  check_equal(run("mul", {Array::from_values(DType::i16, {1}, {-32768}), Array::from_values(DType::i16, {1}, {-32768})}), {0});
}

TEST_CASE("elementwise: float max / min propagate NaN, pow") {
  double nan = std::nan("");
  Array a = Array::from_values(DType::f32, {3}, {nan, 1, 2});
  Array b = Array::from_values(DType::f32, {3}, {1, nan, 3});
  Array mx = run("max", {a, b}), mn = run("min", {a, b});
  CHECK(std::isnan(mx.get(0)));
  CHECK(std::isnan(mx.get(1)));
  CHECK(mx.get(2) == 3);
  CHECK(std::isnan(mn.get(0)));
  CHECK(mn.get(2) == 2);
  Array p = run("pow", {Array::from_values(DType::f32, {3}, {2, 9, -8}), Array::from_values(DType::f32, {3}, {10, 0.5, 2})});
  check_close(p, {1024, 3, 64}, 1e-6, 0);
}

TEST_CASE("elementwise: bitwise ops and shifts with out-of-range amounts") {
  Array a = Array::from_values(DType::i32, {6}, {-16, -16, 5, 1, -1, 12});
  Array s = Array::from_values(DType::i32, {6}, {2, 40, -1, 31, 32, 0});
  check_equal(run("shift_left", {a, s}), {-64, 0, 0, -2147483648.0, 0, 12});
  check_equal(run("shift_right_logical", {a, s}), {1073741820, 0, 0, 0, 0, 12});
  check_equal(run("shift_right_arithmetic", {a, s}), {-4, -1, 0, 0, -1, 12});
  Array u = Array::from_values(DType::u8, {3}, {200, 200, 200});
  Array us = Array::from_values(DType::u8, {3}, {1, 8, 7});
  check_equal(run("shift_left", {u, us}), {144, 0, 0});
  check_equal(run("shift_right_logical", {u, us}), {100, 0, 1});
  check_equal(run("shift_right_arithmetic", {u, us}), {228, 255, 255});  // the bit pattern as signed
  Array x = Array::from_values(DType::i8, {3}, {12, -1, 0}), y = Array::from_values(DType::i8, {3}, {10, 5, 7});
  check_equal(run("and", {x, y}), {8, 5, 0});
  check_equal(run("or", {x, y}), {14, -1, 7});
  check_equal(run("xor", {x, y}), {6, -6, 7});
  Array p = Array::from_values(DType::i1, {4}, {0, 0, 1, 1}), q = Array::from_values(DType::i1, {4}, {0, 1, 0, 1});
  check_equal(run("and", {p, q}), {0, 0, 0, 1});
  check_equal(run("or", {p, q}), {0, 1, 1, 1});
  check_equal(run("xor", {p, q}), {0, 1, 1, 0});
}

TEST_CASE("elementwise: comparisons give bool, NaN compares unordered") {
  double nan = std::nan("");
  for (DType d : {DType::f32, DType::bf16, DType::i32, DType::u32, DType::i1}) {
    INFO(dtype_name(d));
    Array a = random_array(d, {4, 5}, 1, 0, 3), b = random_array(d, {4, 5}, 2, 0, 3);
    if (is_float(d)) a.set(0, nan);
    for (const char* name : {"eq", "ne", "lt", "le", "gt", "ge"}) {
      Array y = run(name, {a, b});
      CHECK(y.dtype() == DType::i1);
      std::vector<double> want;
      std::string n = name;
      for (int64_t i = 0; i < a.size(); ++i) {
        double x = a.get(i), z = b.get(i);
        bool r = n == "eq" ? x == z : n == "ne" ? x != z : n == "lt" ? x < z : n == "le" ? x <= z : n == "gt" ? x > z : x >= z;
        want.push_back(r);
      }
      check_equal(y, want, name);
    }
  }
}

TEST_CASE("elementwise: rank-0 operands broadcast on either side") {
  Array x = Array::from_values(DType::f32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Array two = Array::scalar(DType::f32, 2);
  check_equal(run("sub", {x, two}), {-1, 0, 1, 2, 3, 4});
  check_equal(run("sub", {two, x}), {1, 0, -1, -2, -3, -4});
  check_equal(run("mul", {two, two}), {4});
  check_equal(run("lt", {two, x}), {0, 0, 1, 1, 1, 1});
  // Size-0 and size-1 shapes.
  Array e(DType::f32, {0, 3});
  CHECK(run("add", {e, two}).shape() == Shape{0, 3});
  CHECK(run("exp", {e}).size() == 0);
  Array one = Array::from_values(DType::f32, {1, 1}, {5});
  check_equal(run("add", {one, two}), {7});
}

TEST_CASE("elementwise: bf16 arithmetic rounds every result") {
  Array a = Array::from_values(DType::bf16, {2}, {1, 256});
  Array b = Array::from_values(DType::bf16, {2}, {1.0 / 256, 1});
  // 1 + 2^-8 ties to 1; 256 + 1 ties to 256 (bf16 has 8 significand bits).
  check_equal(run("add", {a, b}), {1, 256});
  Array h = Array::from_values(DType::f16, {1}, {60000});
  CHECK(std::isinf(run("add", {h, h}).get(0)));
}

TEST_CASE("select_n: bool and clamped i32 predicates, broadcasting cases") {
  Array p = Array::from_values(DType::i1, {4}, {0, 1, 1, 0});
  Array a = Array::from_values(DType::f32, {4}, {1, 2, 3, 4}), b = Array::from_values(DType::f32, {4}, {10, 20, 30, 40});
  check_equal(run("select_n", {p, a, b}), {1, 20, 30, 4});
  check_equal(run("select_n", {p, a, Array::scalar(DType::f32, -1)}), {1, -1, -1, 4});
  Array k = Array::from_values(DType::i32, {4}, {-3, 0, 1, 9});
  Array c = Array::from_values(DType::f32, {4}, {100, 200, 300, 400});
  check_equal(run("select_n", {k, a, b, c}), {1, 2, 30, 400});
  check_equal(run("select_n", {Array::scalar(DType::i1, 1), a, b}), {10, 20, 30, 40});
  Array ip = Array::from_values(DType::i8, {2}, {-1, 5}), iq = Array::from_values(DType::i8, {2}, {7, 8});
  check_equal(run("select_n", {Array::from_values(DType::i1, {2}, {1, 0}), ip, iq}), {7, 5});
  check_equal(run("multiple_of", {Array::scalar(DType::i32, 16)}, {{"value", int64_t{8}}}), {16});
}

TEST_CASE("convert_element_type: truncation, saturation, wrap, rounding") {
  auto conv = [](const Array& x, DType d) { return run("convert_element_type", {x}, {{"new_dtype", d}}); };
  double nan = std::nan(""), inf = INFINITY;
  Array f = Array::from_values(DType::f32, {8}, {2.9, -2.9, 1e10, -1e10, nan, inf, -inf, -0.5});
  check_equal(conv(f, DType::i32), {2, -2, 2147483647.0, -2147483648.0, 0, 2147483647.0, -2147483648.0, 0});
  check_equal(conv(f, DType::u8), {2, 0, 255, 0, 0, 255, 0, 0});
  check_equal(conv(f, DType::u32), {2, 0, 4294967295.0, 0, 0, 4294967295.0, 0, 0});
  check_equal(conv(f, DType::i64), {2, -2, 1e10, -1e10, 0, 9223372036854775807.0, -9223372036854775808.0, 0});
  check_equal(conv(f, DType::i1), {1, 1, 1, 1, 1, 1, 1, 1});
  Array i = Array::from_values(DType::i32, {4}, {300, -129, 255, 16777217});
  check_equal(conv(i, DType::i8), {44, 127, -1, 1});
  check_equal(conv(i, DType::u8), {44, 127, 255, 1});
  check_equal(conv(i, DType::f32), {300, -129, 255, 16777216});
  check_equal(conv(i, DType::bf16), {300, -129, 255, 16777216});
  check_equal(conv(Array::from_values(DType::i32, {1}, {16777216 + 65536 + 1}), DType::bf16), {16777216 + 131072});
  Array x = random_array(DType::f32, {100}, 5, -100, 100);
  std::vector<double> wb, wh;
  for (double v : values(x)) wb.push_back(round_double_to(DType::bf16, v)), wh.push_back(round_double_to(DType::f16, v));
  Array xb = conv(x, DType::bf16);
  check_equal(xb, wb);
  check_equal(conv(x, DType::f16), wh);
  check_equal(conv(xb, DType::f32), wb);
  check_equal(conv(Array::from_values(DType::f64, {2}, {1e300, 1 + 1e-12}), DType::f32), {inf, 1});
  check_equal(conv(Array::from_values(DType::i1, {2}, {1, 0}), DType::f32), {1, 0});
  check_equal(conv(Array::from_values(DType::u32, {1}, {4294967295.0}), DType::i32), {-1});
  Array same = conv(x, DType::f32);
  CHECK(same.raw() == x.raw());  // identity conversion shares the buffer
}

TEST_CASE("elementwise: a dtype outside the op's family is an Error") {
  // Build a valid f32 op, then hand the kernel i32 data.
  BodyPtr body = make_body("t", BodyKind::func);
  Builder b(*body);
  Var* x = b.param(Type::array(DType::f32, {2}), "x");
  b.create(prim("exp"), {x});
  const Op& op = b.body().ops().back();
  Array bad = Array::from_values(DType::i32, {2}, {1, 2});
  std::vector<Array> args = {bad};
  CHECK_THROWS_WITH_AS(array_kernels().at(*op.prim)(op, args), doctest::Contains("does not apply to dtype i32"),
                       tessera::Error);
  b.create(prim("add"), {x, x});
  const Op& add = b.body().ops().back();
  std::vector<Array> mismatched = {Array(DType::f32, {2}), Array(DType::f32, {3})};
  CHECK_THROWS_WITH_AS(array_kernels().at(*add.prim)(add, mismatched), doctest::Contains("operand shapes differ"),
                       tessera::Error);
}

TEST_CASE("erf_inv inverts erf to double precision, with exact endpoints and NaN outside [-1, 1]") {
  Array y(DType::f64, {9});
  std::vector<double> ys{-0.999999, -0.9, -0.5, -1e-9, 0.0, 0.3, 0.5, 0.99, 0.999999999};
  for (size_t i = 0; i < ys.size(); ++i) y.set(static_cast<int64_t>(i), ys[i]);
  Array x = run("erf_inv", {y});
  for (size_t i = 0; i < ys.size(); ++i) {
    INFO(ys[i]);
    CHECK(std::fabs(std::erf(x.get(static_cast<int64_t>(i))) - ys[i]) <= 1e-15);
  }
  CHECK(std::fabs(x.get(6) - 0.4769362762044699) <= 1e-15);  // erfinv(0.5), tabulated
  Array ends(DType::f32, {4});
  for (int64_t i = 0; i < 4; ++i) ends.set(i, std::vector<double>{1.0, -1.0, 1.5, -2.0}[i]);
  Array e = run("erf_inv", {ends});
  CHECK(e.get(0) == std::numeric_limits<double>::infinity());
  CHECK(e.get(1) == -std::numeric_limits<double>::infinity());
  CHECK(std::isnan(e.get(2)));
  CHECK(std::isnan(e.get(3)));
}
