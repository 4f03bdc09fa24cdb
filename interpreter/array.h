// Dense arrays: the values the interpreter computes with.
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

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "ir/type.h"

namespace tessera::interp {

class Array {
 public:
  Array() = default;
  // Zero-filled array.
  Array(DType dtype, Shape shape);
  static Array scalar(DType dtype, double value);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t size() const { return size_; }
  ArrayType type() const { return ArrayType{dtype_, shape_}; }
  size_t storage_bytes() const;  // size() * sizeof(storage type)

  template <class T> T* data() { return reinterpret_cast<T*>(buf_->data()); }
  template <class T> const T* data() const { return reinterpret_cast<const T*>(buf_->data()); }
  void* raw() { return buf_->data(); }
  const void* raw() const { return buf_->data(); }

  // Element access through double, for tests, printing and scalar logic.
  double get(int64_t flat) const;
  void set(int64_t flat, double v);
  int64_t get_int(int64_t flat) const;  // exact for integer dtypes

  bool shared() const { return buf_.use_count() > 1; }
  void make_unique_copy();   // detach from other holders of the buffer
  Array copy() const;        // deep copy

 private:
  DType dtype_ = DType::f32;
  Shape shape_;
  int64_t size_ = 0;
  std::shared_ptr<std::vector<std::byte>> buf_;
};

// Size in bytes of one element of the storage type of `d`.
int storage_size(DType d);
// Rounds a float to bf16 / f16 precision (round to nearest even).
float round_to_bf16(float x);
float round_to_f16(float x);

// Calls f(T*) with the storage type of `a`'s dtype: dispatch once per op, then
// a typed loop inside. Example:
//   visit(a, [&](auto* p) { for (int64_t i = 0; i < n; ++i) p[i] += 1; });
template <class F>
decltype(auto) visit(Array& a, F&& f);

}  // namespace tessera::interp
