// Shared helpers of the array kernels (internal to runtime/kernels/).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "runtime/array.h"
#include "runtime/kernels.h"

namespace tessera::interp::kern {

[[noreturn]] inline void fail(const Op& op, const std::string& msg) { throw Error(op.loc, op.name() + ": " + msg); }

// Runs f(i) for i in [0, n). The fixed-size inner loop lets g++ -O2 (whose
// "very cheap" vectorizer needs a trip count that is a multiple of the vector
// width) vectorize it; the remainder runs scalar.
template <class F>
inline __attribute__((always_inline)) void for_n(int64_t n, F&& f) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int k = 0; k < 16; ++k) f(i + k);
  for (; i < n; ++i) f(i);
}

// Rounding applied to each result stored in a float buffer: none for
// f32 / f64 / ints, to bf16 or f16 precision for those dtypes.
struct NoRound {
  template <class T> T operator()(T x) const { return x; }
};
struct RoundBf16 {
  float operator()(float x) const { return round_to_bf16(x); }
};
struct RoundF16 {
  float operator()(float x) const { return round_to_f16(x); }
};

// Calls f(Tag<StorageType>{}, Round{}) for dtype d, instantiating only the
// storage types of family `F` (so e.g. `exp` is never compiled for ints).
// A dtype outside the family is an Error naming the op.
template <DTypeClass F, class Fn>
decltype(auto) visit_family(const Op& op, DType d, Fn&& f) {
  if (!in_class(F, d)) fail(op, "does not apply to dtype " + std::string(dtype_name(d)));
  if constexpr (F == DTypeClass::floating || F == DTypeClass::numeric || F == DTypeClass::any) {
    if (d == DType::f32) return f(Tag<float>{}, NoRound{});
    if (d == DType::bf16) return f(Tag<float>{}, RoundBf16{});
    if (d == DType::f16) return f(Tag<float>{}, RoundF16{});
    if (d == DType::f64) return f(Tag<double>{}, NoRound{});
  }
  if constexpr (F != DTypeClass::floating) {
    switch (d) {
      case DType::i8: return f(Tag<int8_t>{}, NoRound{});
      case DType::i16: return f(Tag<int16_t>{}, NoRound{});
      case DType::i32: return f(Tag<int32_t>{}, NoRound{});
      case DType::i64: return f(Tag<int64_t>{}, NoRound{});
      case DType::u8: return f(Tag<uint8_t>{}, NoRound{});
      case DType::u32: return f(Tag<uint32_t>{}, NoRound{});
      default: break;
    }
  }
  if constexpr (F == DTypeClass::int_or_bool || F == DTypeClass::any) {
    if (d == DType::i1) return f(Tag<uint8_t>{}, NoRound{});
  }
  fail(op, "does not apply to dtype " + std::string(dtype_name(d)));
}

// Unsigned type to do wrapping integer arithmetic of T in (at least 32 bits,
// so that uint16 * uint16 never promotes to a signed int that overflows).
template <class T>
using WrapT = std::conditional_t<(sizeof(T) < 4), uint32_t, std::make_unsigned_t<T>>;

// Row-major strides (in elements) of a dense array of `shape`.
std::vector<int64_t> dense_strides(const Shape& shape);

// The general data-movement engine behind the structural kernels: for every
// index vector i over `shape`,
//   dst[sum_d i_d * dst_strides[d]] = src[sum_d i_d * src_strides[d]]
// (strides in elements, may be 0 or negative; pointers point at index 0).
// Dims are merged where both sides are contiguous, contiguous rows use
// memcpy and transposing copies are tiled for the cache.
void copy_strided(int elem_size, const Shape& shape, void* dst, std::vector<int64_t> dst_strides, const void* src,
                  std::vector<int64_t> src_strides);

// Sets every element of `a` to the (storage-typed) element at `value`.
void fill_with(Array& a, const void* value);

// The kernels of each family register themselves in the table.
void register_elementwise_kernels(RuleTable<Kernel>& t);
void register_convert_kernels(RuleTable<Kernel>& t);
void register_structural_kernels(RuleTable<Kernel>& t);
void register_reduction_kernels(RuleTable<Kernel>& t);
void register_dot_kernels(RuleTable<Kernel>& t);
void register_sort_gather_kernels(RuleTable<Kernel>& t);

// Operand count check shared by the kernels.
inline void expect_args(const Op& op, std::span<const Array> args, size_t lo, size_t hi) {
  if (args.size() < lo || args.size() > hi)
    fail(op, "kernel got " + std::to_string(args.size()) + " operand(s), expected " + std::to_string(lo) +
                 (hi != lo ? " to " + std::to_string(hi) : ""));
}
inline void expect_args(const Op& op, std::span<const Array> args, size_t n) { expect_args(op, args, n, n); }

}  // namespace tessera::interp::kern
