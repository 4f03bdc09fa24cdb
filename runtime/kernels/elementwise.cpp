// Elementwise kernels: unary math, binary arithmetic, bitwise ops, shifts,
// comparisons, clamp, select_n and multiple_of. Rank-0 operands broadcast.
//
// Integer semantics (defined for every input, never undefined behaviour):
//   add / sub / mul / neg / abs wrap around (two's complement);
//   div rounds toward zero; x / 0 = -1 (all bits set: the unsigned maximum),
//   INT_MIN / -1 = INT_MIN; rem takes the dividend's sign, x % 0 = x,
//   INT_MIN % -1 = 0 (the values XLA's CPU and GPU backends produce);
//   shift amounts are read as unsigned: an amount >= the bit width gives 0 for
//   shift_left / shift_right_logical and the sign fill (0 or -1) for
//   shift_right_arithmetic.
// Float semantics: IEEE; max / min propagate NaN; rem is fmod (C's, as
// lax.rem: the dividend's sign); `round` rounds half away from zero
// (lax.round's default; rounding_method=to_nearest_even rounds them to even); sign keeps NaN and +-0; nextafter keeps subnormals
// (a TPU may flush them).
#include <bit>
#include <cmath>
#include <limits>
#include <numbers>

#include "runtime/float_bits.h"
#include "runtime/kernels/util.h"

namespace tessera::interp::kern {
namespace {

template <class T>
constexpr bool is_fp = std::is_floating_point_v<T>;

// ---- unary functors ----------------------------------------------------------
// erf_inv: Giles' approximation ("Approximating the erfinv function", GPU
// Computing Gems, 2011) in double, then two Newton steps on erf; exact
// endpoints: erf_inv(+-1) = +-inf, NaN outside [-1, 1].
double erf_inv(double y) {
  if (!(y >= -1 && y <= 1)) return std::numeric_limits<double>::quiet_NaN();
  if (y == 1 || y == -1) return y * std::numeric_limits<double>::infinity();
  double w = -std::log((1 - y) * (1 + y)), p;
  if (w < 5) {
    w -= 2.5;
    p = 2.81022636e-08;
    for (double c : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503, -0.00417768164,
                     0.246640727, 1.50140941})
      p = c + p * w;
  } else {
    w = std::sqrt(w) - 3;
    p = -0.000200214257;
    for (double c : {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047,
                     1.00167406, 2.83297682})
      p = c + p * w;
  }
  double x = p * y;
  for (int k = 0; k < 2; ++k) x -= (std::erf(x) - y) / (2 / std::sqrt(std::numbers::pi) * std::exp(-x * x));
  return x;
}

#define TESSERA_FLOAT_UNARY(Name, expr) \
  struct Name {                         \
    template <class T> T operator()(T x) const { return expr; } \
  };
TESSERA_FLOAT_UNARY(Exp, std::exp(x))
TESSERA_FLOAT_UNARY(Log, std::log(x))
TESSERA_FLOAT_UNARY(Sqrt, std::sqrt(x))
TESSERA_FLOAT_UNARY(Rsqrt, T(1) / std::sqrt(x))
TESSERA_FLOAT_UNARY(Tanh, std::tanh(x))
TESSERA_FLOAT_UNARY(Logistic, T(1) / (T(1) + std::exp(-x)))
TESSERA_FLOAT_UNARY(Sin, std::sin(x))
TESSERA_FLOAT_UNARY(Cos, std::cos(x))
TESSERA_FLOAT_UNARY(Tan, std::tan(x))
TESSERA_FLOAT_UNARY(Floor, std::floor(x))
TESSERA_FLOAT_UNARY(Ceil, std::ceil(x))
TESSERA_FLOAT_UNARY(Round, std::round(x))
TESSERA_FLOAT_UNARY(Exp2, std::exp2(x))
TESSERA_FLOAT_UNARY(Log1p, std::log1p(x))
TESSERA_FLOAT_UNARY(Expm1, std::expm1(x))
TESSERA_FLOAT_UNARY(Erf, std::erf(x))
TESSERA_FLOAT_UNARY(Cbrt, std::cbrt(x))
TESSERA_FLOAT_UNARY(ErfInv, static_cast<T>(erf_inv(static_cast<double>(x))))
TESSERA_FLOAT_UNARY(Reciprocal, T(1) / x)  // exact, also for approx=true
#undef TESSERA_FLOAT_UNARY

struct Neg {
  template <class T> T operator()(T x) const {
    if constexpr (is_fp<T>) return -x;
    else return static_cast<T>(WrapT<T>(0) - WrapT<T>(x));
  }
};
struct Abs {
  template <class T> T operator()(T x) const {
    if constexpr (is_fp<T>) return std::fabs(x);
    else if constexpr (std::is_signed_v<T>) return x < 0 ? static_cast<T>(WrapT<T>(0) - WrapT<T>(x)) : x;
    else return x;
  }
};
struct Sign {
  template <class T> T operator()(T x) const {
    if constexpr (is_fp<T>) return x > 0 ? T(1) : x < 0 ? T(-1) : x;  // NaN, +0, -0 unchanged
    else if constexpr (std::is_signed_v<T>) return static_cast<T>((x > 0) - (x < 0));
    else return static_cast<T>(x != 0);
  }
};
struct PopCount {
  template <class T> T operator()(T x) const { return static_cast<T>(std::popcount(static_cast<std::make_unsigned_t<T>>(x))); }
};
struct CountLeadingZeros {
  template <class T> T operator()(T x) const { return static_cast<T>(std::countl_zero(static_cast<std::make_unsigned_t<T>>(x))); }
};
struct BitNot {
  template <class T> T operator()(T x) const { return static_cast<T>(~x); }
};
struct LogicalNot {
  template <class T> T operator()(T x) const { return static_cast<T>(x ^ 1); }
};

// ---- binary functors ---------------------------------------------------------
struct Add {
  template <class T> T operator()(T a, T b) const {
    if constexpr (is_fp<T>) return a + b;
    else return static_cast<T>(WrapT<T>(a) + WrapT<T>(b));
  }
};
struct Sub {
  template <class T> T operator()(T a, T b) const {
    if constexpr (is_fp<T>) return a - b;
    else return static_cast<T>(WrapT<T>(a) - WrapT<T>(b));
  }
};
struct Mul {
  template <class T> T operator()(T a, T b) const {
    if constexpr (is_fp<T>) return a * b;
    else return static_cast<T>(WrapT<T>(a) * WrapT<T>(b));
  }
};
struct Square {
  template <class T> T operator()(T x) const { return Mul{}(x, x); }
};
struct Div {
  template <class T> T operator()(T a, T b) const {
    if constexpr (is_fp<T>) {
      return a / b;
    } else {
      if (b == 0) return static_cast<T>(-1);
      if constexpr (std::is_signed_v<T>)
        if (a == std::numeric_limits<T>::min() && b == T(-1)) return a;
      return static_cast<T>(a / b);
    }
  }
};
struct Rem {
  template <class T> T operator()(T a, T b) const {
    if constexpr (is_fp<T>) {
      return std::fmod(a, b);
    } else {
      if (b == 0) return a;
      if constexpr (std::is_signed_v<T>)
        if (b == T(-1)) return 0;
      return static_cast<T>(a % b);
    }
  }
};
struct Max {
  template <class T> T operator()(T a, T b) const {
    if constexpr (is_fp<T>) return a != a ? a : b != b ? b : a > b ? a : b;
    else return a > b ? a : b;
  }
};
struct Min {
  template <class T> T operator()(T a, T b) const {
    if constexpr (is_fp<T>) return a != a ? a : b != b ? b : a < b ? a : b;
    else return a < b ? a : b;
  }
};
struct Pow {
  template <class T> T operator()(T a, T b) const { return std::pow(a, b); }
};
struct Atan2 {
  template <class T> T operator()(T a, T b) const { return std::atan2(a, b); }
};
struct NextAfter {
  template <class T> T operator()(T a, T b) const { return std::nextafter(a, b); }
};
// For bf16 and f16 data, which arrays keep as float (only ever called with T = float).
template <uint16_t (*Bits)(float), float (*FromBits)(uint16_t)>
struct NextAfter16 {
  template <class T> T operator()(T a, T b) const {
    return static_cast<T>(nextafter16<Bits, FromBits>(static_cast<float>(a), static_cast<float>(b)));
  }
};
struct And {
  template <class T> T operator()(T a, T b) const { return static_cast<T>(a & b); }
};
struct Or {
  template <class T> T operator()(T a, T b) const { return static_cast<T>(a | b); }
};
struct Xor {
  template <class T> T operator()(T a, T b) const { return static_cast<T>(a ^ b); }
};
template <class T>
constexpr unsigned kBits = sizeof(T) * 8;
struct ShiftLeft {
  template <class T> T operator()(T a, T b) const {
    using U = std::make_unsigned_t<T>;
    U amount = static_cast<U>(b);
    return amount >= kBits<T> ? T(0) : static_cast<T>(WrapT<T>(static_cast<U>(a)) << amount);
  }
};
struct ShiftRightLogical {
  template <class T> T operator()(T a, T b) const {
    using U = std::make_unsigned_t<T>;
    U amount = static_cast<U>(b);
    return amount >= kBits<T> ? T(0) : static_cast<T>(static_cast<U>(a) >> amount);
  }
};
struct ShiftRightArithmetic {
  template <class T> T operator()(T a, T b) const {
    using U = std::make_unsigned_t<T>;
    using S = std::make_signed_t<T>;
    U amount = static_cast<U>(b);
    S sa = static_cast<S>(a);
    if (amount >= kBits<T>) return static_cast<T>(sa < 0 ? S(-1) : S(0));
    return static_cast<T>(static_cast<S>(sa >> amount));
  }
};
struct Eq { template <class T> bool operator()(T a, T b) const { return a == b; } };
struct Ne { template <class T> bool operator()(T a, T b) const { return a != b; } };
struct Lt { template <class T> bool operator()(T a, T b) const { return a < b; } };
struct Le { template <class T> bool operator()(T a, T b) const { return a <= b; } };
struct Gt { template <class T> bool operator()(T a, T b) const { return a > b; } };
struct Ge { template <class T> bool operator()(T a, T b) const { return a >= b; } };

// ---- loops -------------------------------------------------------------------
template <class T, class F, class R>
void map1(const T* __restrict x, T* __restrict o, int64_t n, F f, R r) {
  for_n(n, [=](int64_t i) { o[i] = r(f(x[i])); });
}

// AS / BS: operand a / b is rank 0 and broadcasts.
template <bool AS, bool BS, class T, class O, class F, class R>
void map2(const T* __restrict a, const T* __restrict b, O* __restrict o, int64_t n, F f, R r) {
  for_n(n, [=](int64_t i) { o[i] = static_cast<O>(r(f(a[AS ? 0 : i], b[BS ? 0 : i]))); });
}

// Shape of elementwise operands: rank-0 ones broadcast, the others must agree.
Shape result_shape(const Op& op, std::span<const Array> args) {
  const Shape* shape = nullptr;
  for (const Array& a : args) {
    if (a.rank() == 0) continue;
    if (!shape) shape = &a.shape();
    else if (a.shape() != *shape) fail(op, "operand shapes differ: " + shape_str(*shape) + " vs " + shape_str(a.shape()));
  }
  return shape ? *shape : Shape{};
}

template <DTypeClass Fam, class F>
Kernel unary_kernel() {
  return [](const Op& op, std::span<const Array> args) -> std::vector<Array> {
    expect_args(op, args, 1);
    const Array& x = args[0];
    Array out = Array::uninitialized(x.dtype(), x.shape());
    visit_family<Fam>(op, x.dtype(), [&](auto tag, auto rnd) {
      using T = typename decltype(tag)::type;
      map1(x.data<T>(), out.data<T>(), x.size(), F{}, rnd);
    });
    return {out};
  };
}

template <DTypeClass Fam, class F, bool ToBool = false>
Kernel binary_kernel() {
  return [](const Op& op, std::span<const Array> args) -> std::vector<Array> {
    expect_args(op, args, 2);
    const Array &a = args[0], &b = args[1];
    if (a.dtype() != b.dtype())
      fail(op, "operand dtypes differ: " + std::string(dtype_name(a.dtype())) + " vs " + std::string(dtype_name(b.dtype())));
    Shape shape = result_shape(op, args);
    Array out = Array::uninitialized(ToBool ? DType::i1 : a.dtype(), shape);
    int64_t n = out.size();
    bool as = a.rank() == 0 && n != 1, bs = b.rank() == 0 && n != 1;
    visit_family<Fam>(op, a.dtype(), [&](auto tag, auto rnd) {
      using T = typename decltype(tag)::type;
      using O = std::conditional_t<ToBool, uint8_t, T>;
      using R = std::conditional_t<ToBool, NoRound, decltype(rnd)>;
      const T *pa = a.data<T>(), *pb = b.data<T>();
      O* po = out.data<O>();
      if (as && bs) map2<true, true>(pa, pb, po, n, F{}, R{});
      else if (as) map2<true, false>(pa, pb, po, n, F{}, R{});
      else if (bs) map2<false, true>(pa, pb, po, n, F{}, R{});
      else map2<false, false>(pa, pb, po, n, F{}, R{});
    });
    return {out};
  };
}

std::vector<Array> not_kernel(const Op& op, std::span<const Array> args) {
  expect_args(op, args, 1);
  const Array& x = args[0];
  Array out = Array::uninitialized(x.dtype(), x.shape());
  bool logical = is_bool(x.dtype());
  visit_family<DTypeClass::int_or_bool>(op, x.dtype(), [&](auto tag, auto rnd) {
    using T = typename decltype(tag)::type;
    if (logical) map1(x.data<T>(), out.data<T>(), x.size(), LogicalNot{}, rnd);
    else map1(x.data<T>(), out.data<T>(), x.size(), BitNot{}, rnd);
  });
  return {out};
}

std::vector<Array> is_finite_kernel(const Op& op, std::span<const Array> args) {
  expect_args(op, args, 1);
  const Array& x = args[0];
  Array out = Array::uninitialized(DType::i1, x.shape());
  visit_family<DTypeClass::floating>(op, x.dtype(), [&](auto tag, auto) {
    using T = typename decltype(tag)::type;
    const T* __restrict px = x.data<T>();
    uint8_t* __restrict po = out.data<uint8_t>();
    for_n(x.size(), [=](int64_t i) { po[i] = std::isfinite(px[i]) ? 1 : 0; });
  });
  return {out};
}

// clamp lo, x, hi = min(max(x, lo), hi), XLA's definition (hi wins when
// lo > hi), with Max / Min's NaN propagation; rank-0 operands broadcast.
std::vector<Array> clamp_kernel(const Op& op, std::span<const Array> args) {
  expect_args(op, args, 3);
  for (const Array& a : args.subspan(1))
    if (a.dtype() != args[0].dtype())
      fail(op, "operand dtypes differ: " + std::string(dtype_name(args[0].dtype())) + " vs " + std::string(dtype_name(a.dtype())));
  Array out = Array::uninitialized(args[1].dtype(), result_shape(op, args));
  visit_family<DTypeClass::numeric>(op, out.dtype(), [&](auto tag, auto) {
    using T = typename decltype(tag)::type;
    const T *lo = args[0].data<T>(), *x = args[1].data<T>(), *hi = args[2].data<T>();
    int64_t sl = args[0].rank() == 0 ? 0 : 1, sx = args[1].rank() == 0 ? 0 : 1, sh = args[2].rank() == 0 ? 0 : 1;
    T* __restrict o = out.data<T>();
    for_n(out.size(), [=](int64_t i) { o[i] = Min{}(Max{}(x[i * sx], lo[i * sl]), hi[i * sh]); });
  });
  return {out};
}

// round: halves away from zero (std::round), or, with
// rounding_method=to_nearest_even, to the even neighbour: a half is
// 2 * round(x / 2) (exact: only |x| < 2^52 has halves).
std::vector<Array> round_kernel(const Op& op, std::span<const Array> args) {
  if (op.param(keys::rounding_method) != "to_nearest_even") return unary_kernel<DTypeClass::floating, Round>()(op, args);
  expect_args(op, args, 1);
  const Array& x = args[0];
  Array out = Array::uninitialized(x.dtype(), x.shape());
  visit_family<DTypeClass::floating>(op, x.dtype(), [&](auto tag, auto rnd) {
    using T = typename decltype(tag)::type;
    auto to_even = [](T v) { return std::fabs(v - std::trunc(v)) == T(0.5) ? T(2) * std::round(v / T(2)) : std::round(v); };
    map1(x.data<T>(), out.data<T>(), x.size(), to_even, rnd);
  });
  return {out};
}

// integer_pow[y] x: x ** y by squaring, in the dtype (integers wrap, as mul
// does); a negative y is 1 / x ** -y (floats only, checked by the shape rule).
std::vector<Array> integer_pow_kernel(const Op& op, std::span<const Array> args) {
  expect_args(op, args, 1);
  const Array& x = args[0];
  int64_t y = op.param(keys::y);
  Array out = Array::uninitialized(x.dtype(), x.shape());
  visit_family<DTypeClass::numeric>(op, x.dtype(), [&](auto tag, auto rnd) {
    using T = typename decltype(tag)::type;
    uint64_t e = static_cast<uint64_t>(y < 0 ? -y : y);
    auto pow = [=](T base) {
      T acc = T(1);
      for (uint64_t k = e; k; k >>= 1, base = Mul{}(base, base))
        if (k & 1) acc = Mul{}(acc, base);
      if constexpr (is_fp<T>)
        if (y < 0) acc = T(1) / acc;
      return acc;
    };
    map1(x.data<T>(), out.data<T>(), x.size(), pow, rnd);
  });
  return {out};
}

// nextafter steps by one unit of the dtype: of the storage type for f32 and
// f64, of the 16-bit pattern for bf16 and f16 (kept as floats).
std::vector<Array> nextafter_kernel(const Op& op, std::span<const Array> args) {
  static const Kernel wide = binary_kernel<DTypeClass::floating, NextAfter>();
  static const Kernel bf16 = binary_kernel<DTypeClass::floating, NextAfter16<bf16_bits, bf16_from_bits>>();
  static const Kernel f16 = binary_kernel<DTypeClass::floating, NextAfter16<f16_bits, f16_from_bits>>();
  DType d = args.empty() ? DType::f32 : args[0].dtype();
  return (d == DType::bf16 ? bf16 : d == DType::f16 ? f16 : wide)(op, args);
}

// XLA's ReducePrecision on the bits U of a float F with src_e exponent and
// src_m mantissa bits (xla/service/elemental_ir_emitter.cc): the mantissa
// rounded to m bits, to nearest even (a carry may bump the exponent); then an
// exponent above the e-bit format's range gives a signed infinity and one at
// or below its smallest normal a signed zero (its subnormals flush). A NaN
// stays itself, except with m = 0, where XLA gives infinity.
template <class U>
U reduce_precision_pattern(U bits, int src_e, int src_m, int64_t e, int64_t m) {
  if (m < src_m) {
    int drop = src_m - static_cast<int>(m);
    U last = U(1) << drop;  // the lowest mantissa bit kept
    U bias = ((last >> 1) - 1) + ((bits & last) >> drop);
    bits = (bits + bias) & ~(last - 1);
  }
  if (e < src_e) {
    U sign = U(1) << (sizeof(U) * 8 - 1);
    U exp_mask = ((U(1) << src_e) - 1) << src_m;
    U bias = (U(1) << (src_e - 1)) - 1, reduced_bias = (U(1) << (e - 1)) - 1;
    U exponent = bits & exp_mask;
    if (exponent > (bias + reduced_bias) << src_m) bits = (bits & sign) | exp_mask;
    else if (exponent <= (bias - reduced_bias) << src_m) bits &= sign;
  }
  return bits;
}

template <class U, class F>
F reduce_precision_bits(F x, int src_e, int src_m, int64_t e, int64_t m) {
  if (x != x) return m > 0 ? x : std::numeric_limits<F>::infinity();
  return std::bit_cast<F>(reduce_precision_pattern(std::bit_cast<U>(x), src_e, src_m, e, m));
}

// reduce_precision[exponent_bits, mantissa_bits]: on the f32 bits for f32 and
// bf16 (whose 7 mantissa bits are the f32's high ones), on the f16 bits for
// f16, on the f64 bits for f64.
std::vector<Array> reduce_precision_kernel(const Op& op, std::span<const Array> args) {
  expect_args(op, args, 1);
  const Array& x = args[0];
  int64_t e = op.param(keys::exponent_bits), m = op.param(keys::mantissa_bits);
  if (e < 1 || m < 0) fail(op, "needs exponent_bits >= 1 and mantissa_bits >= 0");
  Array out = Array::uninitialized(x.dtype(), x.shape());
  switch (x.dtype()) {
    case DType::f32:
    case DType::bf16: {
      int64_t mm = x.dtype() == DType::bf16 ? std::min<int64_t>(m, 7) : m;
      map1(x.data<float>(), out.data<float>(), x.size(),
           [=](float v) { return reduce_precision_bits<uint32_t>(v, 8, 23, e, mm); }, NoRound{});
      break;
    }
    case DType::f16:
      map1(x.data<float>(), out.data<float>(), x.size(), [=](float v) {
        if (v != v) return m > 0 ? v : std::numeric_limits<float>::infinity();
        return f16_from_bits(reduce_precision_pattern<uint16_t>(f16_bits(v), 5, 10, e, m));
      }, NoRound{});
      break;
    case DType::f64:
      map1(x.data<double>(), out.data<double>(), x.size(),
           [=](double v) { return reduce_precision_bits<uint64_t>(v, 11, 52, e, m); }, NoRound{});
      break;
    default: fail(op, "does not apply to dtype " + std::string(dtype_name(x.dtype())));
  }
  return {out};
}

// select_n p, c0, c1, ...: case p[i] (bool: false -> c0; i32: clamped into
// range, as out-of-range predicates are otherwise undefined in lax).
std::vector<Array> select_n_kernel(const Op& op, std::span<const Array> args) {
  if (args.size() < 2) fail(op, "needs a predicate and at least one case");
  const Array& pred = args[0];
  if (!is_bool(pred.dtype()) && pred.dtype() != DType::i32)
    fail(op, "predicate must be bool or i32, got " + std::string(dtype_name(pred.dtype())));
  int ncases = static_cast<int>(args.size()) - 1;
  DType dt = args[1].dtype();
  for (int c = 1; c <= ncases; ++c)
    if (args[c].dtype() != dt) fail(op, "case dtypes differ");
  Shape shape = result_shape(op, args);
  Array out = Array::uninitialized(dt, shape);
  int64_t n = out.size();
  visit_dtype(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = out.data<T>();
    std::vector<const T*> cs(ncases);
    std::vector<int64_t> cstride(ncases);
    for (int c = 0; c < ncases; ++c) {
      cs[c] = args[c + 1].data<T>();
      cstride[c] = args[c + 1].rank() == 0 ? 0 : 1;
    }
    int64_t ps = pred.rank() == 0 ? 0 : 1;
    if (is_bool(pred.dtype()) && ncases == 2 && ps == 1 && cstride[0] == 1 && cstride[1] == 1) {
      const uint8_t* __restrict p = pred.data<uint8_t>();
      const T* __restrict c0 = cs[0];
      const T* __restrict c1 = cs[1];
      for_n(n, [=](int64_t i) { o[i] = p[i] ? c1[i] : c0[i]; });
      return;
    }
    for (int64_t i = 0; i < n; ++i) {
      int c;
      if (is_bool(pred.dtype())) c = pred.data<uint8_t>()[i * ps] ? 1 : 0;
      else c = static_cast<int>(std::clamp<int32_t>(pred.data<int32_t>()[i * ps], 0, ncases - 1));
      if (c >= ncases) c = ncases - 1;
      o[i] = cs[c][i * cstride[c]];
    }
  });
  return {out};
}

}  // namespace

void register_elementwise_kernels(RuleTable<Kernel>& t) {
  using F = DTypeClass;
  t.set("exp", unary_kernel<F::floating, Exp>());
  t.set("log", unary_kernel<F::floating, Log>());
  t.set("sqrt", unary_kernel<F::floating, Sqrt>());
  t.set("rsqrt", unary_kernel<F::floating, Rsqrt>());
  t.set("tanh", unary_kernel<F::floating, Tanh>());
  t.set("logistic", unary_kernel<F::floating, Logistic>());
  t.set("sin", unary_kernel<F::floating, Sin>());
  t.set("cos", unary_kernel<F::floating, Cos>());
  t.set("tan", unary_kernel<F::floating, Tan>());
  t.set("floor", unary_kernel<F::floating, Floor>());
  t.set("ceil", unary_kernel<F::floating, Ceil>());
  t.set("round", round_kernel);
  t.set("exp2", unary_kernel<F::floating, Exp2>());
  t.set("log1p", unary_kernel<F::floating, Log1p>());
  t.set("expm1", unary_kernel<F::floating, Expm1>());
  t.set("erf", unary_kernel<F::floating, Erf>());
  t.set("cbrt", unary_kernel<F::floating, Cbrt>());
  t.set("erf_inv", unary_kernel<F::floating, ErfInv>());
  t.set("reciprocal", unary_kernel<F::floating, Reciprocal>());
  t.set("is_finite", is_finite_kernel);
  t.set("integer_pow", integer_pow_kernel);
  t.set("reduce_precision", reduce_precision_kernel);
  t.set("neg", unary_kernel<F::numeric, Neg>());
  t.set("abs", unary_kernel<F::numeric, Abs>());
  t.set("square", unary_kernel<F::numeric, Square>());
  t.set("sign", unary_kernel<F::numeric, Sign>());
  t.set("not", not_kernel);
  t.set("population_count", unary_kernel<F::integer, PopCount>());
  t.set("clz", unary_kernel<F::integer, CountLeadingZeros>());

  t.set("add", binary_kernel<F::numeric, Add>());
  t.set("sub", binary_kernel<F::numeric, Sub>());
  t.set("mul", binary_kernel<F::numeric, Mul>());
  t.set("div", binary_kernel<F::numeric, Div>());
  t.set("rem", binary_kernel<F::numeric, Rem>());
  t.set("max", binary_kernel<F::numeric, Max>());
  t.set("min", binary_kernel<F::numeric, Min>());
  t.set("pow", binary_kernel<F::floating, Pow>());
  t.set("atan2", binary_kernel<F::floating, Atan2>());
  t.set("nextafter", nextafter_kernel);
  t.set("clamp", clamp_kernel);
  t.set("and", binary_kernel<F::int_or_bool, And>());
  t.set("or", binary_kernel<F::int_or_bool, Or>());
  t.set("xor", binary_kernel<F::int_or_bool, Xor>());
  t.set("shift_left", binary_kernel<F::integer, ShiftLeft>());
  t.set("shift_right_logical", binary_kernel<F::integer, ShiftRightLogical>());
  t.set("shift_right_arithmetic", binary_kernel<F::integer, ShiftRightArithmetic>());
  t.set("eq", binary_kernel<F::any, Eq, true>());
  t.set("ne", binary_kernel<F::any, Ne, true>());
  t.set("lt", binary_kernel<F::any, Lt, true>());
  t.set("le", binary_kernel<F::any, Le, true>());
  t.set("gt", binary_kernel<F::any, Gt, true>());
  t.set("ge", binary_kernel<F::any, Ge, true>());

  t.set("select_n", select_n_kernel);
  // A hint for provers and backends: the value itself, when the hint holds.
  t.set("multiple_of", [](const Op& op, std::span<const Array> args) -> std::vector<Array> {
    expect_args(op, args, 1);
    int64_t m = op.param(keys::value);
    for (int64_t i = 0; i < args[0].size(); ++i)
      if (args[0].get_int(i) % m != 0)
        throw Error(op.loc, "multiple_of: the hint is false: " + std::to_string(args[0].get_int(i)) + " is not a multiple of " +
                                std::to_string(m));
    return {args[0]};
  });
}

}  // namespace tessera::interp::kern
