// Dense arrays: the values the interpreter, the compiled backends' runners
// and `tessera cost` compute with (runtime/ sits below all three; the names
// keep the namespace tessera::interp, the interpreter being their first user).
//
// Elements are stored row-major and contiguous in a "storage type" chosen per
// dtype so kernels run tight, typed loops:
//   f32, bf16, f16 -> float  (bf16 / f16 values are kept rounded to their
//                             precision after every op, as hardware would)
//   f64 -> double, i8 -> int8_t, i16 -> int16_t, i32 -> int32_t, i64 -> int64_t,
//   u8 -> uint8_t, u32 -> uint32_t, bool -> uint8_t (0 / 1),
//   sem / dma_sem / barrier_sem -> int32_t
// Arrays share their buffer on copy (cheap to pass around); call
// `make_unique_copy()` before writing to one that may be shared.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "ir/diagnostics.h"
#include "ir/type.h"
#include "runtime/memory_limit.h"

namespace tessera::interp {

// Allocator for array buffers: 64-byte aligned (whole cache lines, SIMD
// friendly) and leaving elements uninitialized on resize, so a kernel that
// overwrites its whole output does not pay for zero-filling it first. It
// counts the bytes it holds for the memory limit (runtime/memory_limit.h).
template <class T>
struct BufferAllocator {
  using value_type = T;
  BufferAllocator() = default;
  template <class U> BufferAllocator(const BufferAllocator<U>&) {}  // NOLINT: rebind
  T* allocate(size_t n) {
    // nothrow, then throw: mimalloc's throwing `new` aborts when out of
    // memory; std::bad_alloc lets the evaluator report it at the op.
    T* p = static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{64}, std::nothrow));
    if (!p) throw std::bad_alloc();
    detail::count_allocated(n * sizeof(T));
    return p;
  }
  void deallocate(T* p, size_t n) {
    // Counted before the delete: g++ 12 otherwise moves the vector's size
    // computation past it and reports a use after free (-Wuse-after-free).
    detail::count_freed(n * sizeof(T));
    ::operator delete(p, std::align_val_t{64});
  }
  template <class U> void construct(U* p) { ::new (static_cast<void*>(p)) U; }  // default-init: no zeroing
  template <class U, class... A> void construct(U* p, A&&... a) { ::new (static_cast<void*>(p)) U(std::forward<A>(a)...); }
  template <class U> bool operator==(const BufferAllocator<U>&) const { return true; }
};
using Buffer = std::vector<std::byte, BufferAllocator<std::byte>>;

class Array {
 public:
  Array() = default;
  // Zero-filled array.
  Array(DType dtype, Shape shape);
  static Array scalar(DType dtype, double value);
  // Array whose elements are unspecified (for kernels that write every element).
  // Every array buffer is made here: an array past the memory limit
  // (runtime/memory_limit.h) is an Error naming its type.
  static Array uninitialized(DType dtype, Shape shape);
  // Array holding `values` (row-major, converted as Array::set does).
  static Array from_values(DType dtype, Shape shape, const std::vector<double>& values);
  // Array over memory tessera does not own (a NumPy array's, python/arrays.cpp):
  // no copy is made and `owner` keeps the memory alive. `data` must hold
  // size() elements of the storage type, row-major. The memory is never written
  // (shared() is true, so a writer copies first) and does not count toward the
  // memory limit: tessera did not allocate it.
  static Array borrowed(DType dtype, Shape shape, const void* data, std::shared_ptr<const void> owner);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t size() const { return size_; }
  ArrayType type() const { return ArrayType{dtype_, shape_}; }
  size_t storage_bytes() const;  // size() * sizeof(storage type)

  template <class T> T* data() { return reinterpret_cast<T*>(raw()); }
  template <class T> const T* data() const { return reinterpret_cast<const T*>(raw()); }
  void* raw() { return buf_ ? buf_->data() : const_cast<void*>(borrowed_data_); }
  const void* raw() const { return buf_ ? buf_->data() : borrowed_data_; }

  // Element access through double, for tests, printing and scalar logic.
  // set() converts as convert_element_type does (round to bf16 / f16, float to
  // integer truncates toward zero and saturates, NaN -> 0).
  double get(int64_t flat) const;
  void set(int64_t flat, double v);
  int64_t get_int(int64_t flat) const;  // exact for integer dtypes

  bool shared() const { return borrowed_owner_ != nullptr || buf_.use_count() > 1; }
  void make_unique_copy();   // detach from other holders of the buffer
  Array copy() const;        // deep copy
  // The same elements viewed with another shape of equal size; shares the
  // buffer (O(1): reshape, squeeze, expand_dims cost nothing).
  Array reshaped(Shape new_shape) const;

 private:
  DType dtype_ = DType::f32;
  Shape shape_;
  int64_t size_ = 0;
  std::shared_ptr<Buffer> buf_;                   // owned elements, or null
  std::shared_ptr<const void> borrowed_owner_;    // or borrowed ones (Array::borrowed)
  const void* borrowed_data_ = nullptr;
};

// Size in bytes of one element of the storage type of `d`.
int storage_size(DType d);

// Rounds a float to bf16 / f16 precision (round to nearest even; NaN stays
// NaN, overflow gives infinity, f16 subnormals are kept). Inline and branch
// light so kernels can fuse them into vectorized loops.
inline float round_to_bf16(float x) {
  uint32_t u = std::bit_cast<uint32_t>(x);
  uint32_t r = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
  if (x != x) r = u | 0x00400000u;  // keep NaN a (quiet) NaN, never inf
  return std::bit_cast<float>(r);
}
inline float round_to_f16(float x) {
  uint32_t u = std::bit_cast<uint32_t>(x);
  uint32_t sign = u & 0x80000000u, a = u ^ sign;
  if (a >= 0x7F800000u) return x;  // inf, NaN
  if (a < 0x38800000u) {           // below 2^-14: f16 subnormal, quantum 2^-24
    float f = std::bit_cast<float>(a);
    f = (f + 0.5f) - 0.5f;  // ulp(0.5f) is 2^-24: rounds to a multiple of it
    return std::bit_cast<float>(std::bit_cast<uint32_t>(f) | sign);
  }
  a = (a + 0xFFFu + ((a >> 13) & 1u)) & ~0x1FFFu;
  if (a >= 0x47800000u) a = 0x7F800000u;  // >= 65536: past f16's max (65504)
  return std::bit_cast<float>(a | sign);
}
// Rounds a double straight to the precision of float dtype `d` (one rounding,
// no double rounding through f32). Used for conversions from f64 and ints.
double round_double_to(DType d, double x);

// True for the dtypes stored as float but narrower (bf16, f16).
inline bool is_rounded_float(DType d) { return d == DType::bf16 || d == DType::f16; }

// Type tag for dispatch: visit_dtype calls f(Tag<StorageType>{}).
template <class T>
struct Tag {
  using type = T;
};

template <class F>
decltype(auto) visit_dtype(DType d, F&& f) {
  switch (d) {
    case DType::f32:
    case DType::bf16:
    case DType::f16: return f(Tag<float>{});
    case DType::f64: return f(Tag<double>{});
    case DType::i8: return f(Tag<int8_t>{});
    case DType::i16: return f(Tag<int16_t>{});
    case DType::i32:
    case DType::sem:
    case DType::dma_sem:
    case DType::barrier_sem: return f(Tag<int32_t>{});
    case DType::i64: return f(Tag<int64_t>{});
    case DType::u8:
    case DType::i1: return f(Tag<uint8_t>{});
    case DType::u32: return f(Tag<uint32_t>{});
  }
  throw Error("unknown dtype");
}

// Calls f(T*) with the storage type of `a`'s dtype: dispatch once per op, then
// a typed loop inside. Example:
//   visit(a, [&](auto* p) { for (int64_t i = 0; i < n; ++i) p[i] += 1; });
template <class F>
decltype(auto) visit(Array& a, F&& f) {
  return visit_dtype(a.dtype(), [&](auto tag) -> decltype(auto) {
    using T = typename decltype(tag)::type;
    return f(a.data<T>());
  });
}
template <class F>
decltype(auto) visit(const Array& a, F&& f) {
  return visit_dtype(a.dtype(), [&](auto tag) -> decltype(auto) {
    using T = typename decltype(tag)::type;
    return f(a.data<T>());
  });
}

}  // namespace tessera::interp
