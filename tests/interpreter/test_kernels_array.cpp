// Array storage, element access, sharing, and bf16 / f16 rounding.
#include <bit>
#include <cfloat>
#include <limits>

#include "interpreter/eval.h"
#include "tests/interpreter/kernel_test_util.h"

using namespace ktest;

TEST_CASE("array: zero fill, scalars, storage types") {
  Array a(DType::f32, {2, 3});
  CHECK(a.size() == 6);
  CHECK(a.storage_bytes() == 24);
  for (int64_t i = 0; i < 6; ++i) CHECK(a.get(i) == 0.0);
  CHECK(storage_size(DType::bf16) == 4);
  CHECK(storage_size(DType::f16) == 4);
  CHECK(storage_size(DType::f64) == 8);
  CHECK(storage_size(DType::i1) == 1);
  CHECK(storage_size(DType::i16) == 2);
  CHECK(storage_size(DType::sem) == 4);
  Array s = Array::scalar(DType::i32, -7);
  CHECK(s.rank() == 0);
  CHECK(s.size() == 1);
  CHECK(s.get_int(0) == -7);
  Array e(DType::f32, {3, 0});
  CHECK(e.size() == 0);
  CHECK(e.storage_bytes() == 0);
  CHECK_THROWS_AS(Array(DType::f32, {-1}), tessera::Error);
}

TEST_CASE("array: set converts like convert_element_type") {
  Array a(DType::i8, {4});
  a.set(0, 300.7);   // saturates
  a.set(1, -2.9);    // truncates toward zero
  a.set(2, std::nan(""));
  a.set(3, -1000);
  CHECK(a.get_int(0) == 127);
  CHECK(a.get_int(1) == -2);
  CHECK(a.get_int(2) == 0);
  CHECK(a.get_int(3) == -128);
  Array b(DType::bf16, {1});
  b.set(0, 1.0 + 1.0 / 256);  // halfway between 1 and 1 + 2^-7: ties to even -> 1
  CHECK(b.get(0) == 1.0);
  Array c(DType::i1, {2});
  c.set(0, 5), c.set(1, 0);
  CHECK(c.get_int(0) == 1);
  CHECK(c.get_int(1) == 0);
  Array i64(DType::i64, {1});
  i64.set(0, 1e30);
  CHECK(i64.get_int(0) == std::numeric_limits<int64_t>::max());
  CHECK_THROWS_AS(Array::from_values(DType::f32, {2}, {1, 2, 3}), tessera::Error);
}

TEST_CASE("array: sharing, unique copies and O(1) reshape") {
  Array a = Array::from_values(DType::f32, {2, 2}, {1, 2, 3, 4});
  Array b = a;
  CHECK(a.shared());
  b.make_unique_copy();
  CHECK(!a.shared());
  b.data<float>()[0] = 9;
  CHECK(a.get(0) == 1);
  Array r = a.reshaped({4});
  CHECK(r.raw() == a.raw());
  CHECK(r.shape() == Shape{4});
  CHECK(r.get(3) == 4);
  CHECK_THROWS_AS(a.reshaped({3}), tessera::Error);
  Array d = a.copy();
  CHECK(d.raw() != a.raw());
  CHECK(values(d) == values(a));
}

TEST_CASE("array: a borrowed buffer is read in place, never written, and not counted") {
  auto owner = std::make_shared<std::vector<float>>(std::vector<float>{1, 2, 3, 4});
  int64_t in_use = memory_in_use();
  Array a = Array::borrowed(DType::f32, {2, 2}, owner->data(), owner);
  CHECK(memory_in_use() == in_use);
  CHECK(a.raw() == owner->data());
  CHECK(a.shared());  // always: writers copy first
  CHECK(a.reshaped({4}).raw() == owner->data());
  CHECK(values(a) == std::vector<double>{1, 2, 3, 4});
  Array b = a;
  b.make_unique_copy();
  CHECK(b.raw() != owner->data());
  b.data<float>()[0] = 9;
  CHECK((*owner)[0] == 1);
  CHECK(owner.use_count() == 2);  // `a` keeps the owner alive
  a = Array();
  CHECK(owner.use_count() == 1);
  CHECK_THROWS_AS(Array::borrowed(DType::f32, {1}, nullptr, nullptr), tessera::Error);
}

TEST_CASE("array: visit dispatches on the storage type") {
  Array a = Array::from_values(DType::u8, {3}, {1, 2, 250});
  visit(a, [&](auto* p) {
    using T = std::remove_pointer_t<decltype(p)>;
    CHECK(std::is_same_v<T, uint8_t>);
    for (int i = 0; i < 3; ++i) p[i] = static_cast<T>(p[i] + 10);  // wraps
  });
  CHECK(values(a) == std::vector<double>{11, 12, 4});
  const Array& c = a;
  int64_t sum = visit(c, [&](const auto* p) { return static_cast<int64_t>(p[0]) + static_cast<int64_t>(p[1]); });
  CHECK(sum == 23);
}

// Independent reference: round to `mant` significand bits with exponent floor
// `emin` by exhaustive search over neighbours in double arithmetic.
double ref_round(double x, int mant, int emin, double maxv) {
  if (!std::isfinite(x) || x == 0) return x;
  double ax = std::fabs(x);
  int e = static_cast<int>(std::floor(std::log2(ax)));
  if (std::ldexp(1.0, e) > ax) --e;
  if (std::ldexp(1.0, e + 1) <= ax) ++e;
  e = std::max(e, emin);
  double q = std::ldexp(1.0, e - mant);
  double lo = std::floor(ax / q) * q, hi = lo + q;
  double r;
  if (ax - lo < hi - ax) r = lo;
  else if (hi - ax < ax - lo) r = hi;
  else r = std::fmod(lo / q, 2.0) == 0 ? lo : hi;
  if (r > maxv) r = INFINITY;
  return std::copysign(r, x);
}

TEST_CASE("array: bf16 / f16 rounding matches an exact reference") {
  const double bf_max = std::ldexp(2.0 - std::ldexp(1.0, -7), 127);
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) {
    float x = std::bit_cast<float>(static_cast<uint32_t>(rng()));
    if (std::isnan(x)) {
      CHECK(std::isnan(round_to_bf16(x)));
      CHECK(std::isnan(round_to_f16(x)));
      continue;
    }
    double want_bf = ref_round(x, 7, -126, bf_max), want_h = ref_round(x, 10, -14, 65504.0);
    INFO("x = " << x);
    REQUIRE(same_value(round_to_bf16(x), want_bf));
    REQUIRE(same_value(round_to_f16(x), want_h));
    REQUIRE(same_value(round_double_to(DType::bf16, x), want_bf));
    REQUIRE(same_value(round_double_to(DType::f16, x), want_h));
  }
  // Edge values.
  CHECK(round_to_f16(65519.0f) == 65504.0f);
  CHECK(std::isinf(round_to_f16(65520.0f)));
  CHECK(round_to_f16(std::ldexp(1.0f, -25)) == 0.0f);  // tie -> even (0)
  CHECK(round_to_f16(3 * std::ldexp(1.0f, -25)) == std::ldexp(1.0f, -23));
  CHECK(std::signbit(round_to_f16(-1e-30f)));
  CHECK(std::isinf(round_to_bf16(FLT_MAX)));
  CHECK(round_to_bf16(-0.0f) == 0.0f);
  CHECK(std::signbit(round_to_bf16(-0.0f)));
  // A NaN whose payload lives only in the low bits must stay NaN, not become inf.
  CHECK(std::isnan(round_to_bf16(std::bit_cast<float>(0x7F800001u))));
  // From double: one rounding (2^24 + 2^16 + 1 would double-round to 2^24 via f32).
  CHECK(round_double_to(DType::bf16, 16777216.0 + 65536.0 + 1.0) == 16777216.0 + 131072.0);
  CHECK(round_double_to(DType::f32, 1e300) == INFINITY);
  CHECK(round_double_to(DType::f32, -1e300) == -INFINITY);
}

TEST_CASE("interpret rules: every primitive has one; the array families run as kernels") {
  // One table dispatches every primitive (interpreter/eval.cpp). Pure
  // families run through an array kernel; state and control ops need the
  // evaluator's Refs and bodies, so they never have one; Pallas ops may
  // (multiple_of) or may not (program_id depends on where the kernel runs).
  const auto& table = array_kernels();
  CHECK(table.pass() == "interpret");
  for (const Primitive* p : registry().all()) {
    INFO(p->name);
    CHECK(tessera::interp::has_interpret_rule(*p));
    switch (p->family) {
      case Family::elementwise:
      case Family::structural:
      case Family::reduction: CHECK(table.find(*p) != nullptr); break;
      case Family::state:
      case Family::control: CHECK(table.find(*p) == nullptr); break;
      case Family::pallas: break;
    }
  }
  CHECK_THROWS_WITH_AS(table.at(prim("get")), doctest::Contains("no interpret rule for primitive get"), tessera::Error);
}
