// Types: arrays (`f32[128,128]`, rank 0 allowed) and Refs to arrays living in a
// memory space (`ref<f32[8,128], vmem>`). Semaphores are Refs whose element
// type is a semaphore dtype (`ref<dma_sem[2], semaphore>`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/dtype.h"

namespace tessera {

using Shape = std::vector<int64_t>;

// The product of the dims, saturating at INT64_MAX: a type may name more
// elements than int64 counts (f32[2^32, 2^32, 2^32]); creating such an array
// is a run-time error (runtime/array.cpp), counting them is not UB.
int64_t num_elements(const Shape& s);
// a * b and a + b of non-negative counts, saturating at INT64_MAX.
int64_t saturating_mul(int64_t a, int64_t b);
int64_t saturating_add(int64_t a, int64_t b);
std::string shape_str(const Shape& s);  // "(128, 128)", "()"

enum class MemSpace : uint8_t { any, hbm, vmem, smem, vmem_shared, semaphore, index, host };
std::string_view mem_space_name(MemSpace m);
std::optional<MemSpace> parse_mem_space(std::string_view name);

struct ArrayType {
  DType dtype = DType::f32;
  Shape shape;

  int rank() const { return static_cast<int>(shape.size()); }
  int64_t size() const { return num_elements(shape); }
  bool operator==(const ArrayType&) const = default;
};

class Type {
 public:
  Type() = default;
  static Type array(DType dtype, Shape shape) { return Type(ArrayType{dtype, std::move(shape)}, false, MemSpace::any); }
  static Type array(ArrayType a) { return Type(std::move(a), false, MemSpace::any); }
  static Type scalar(DType dtype) { return array(dtype, {}); }
  // The same, as a shared constant: Value::type() of a literal hands it out by
  // reference, so asking a value its type never copies (or allocates).
  static const Type& scalar_ref(DType dtype);
  static Type ref(ArrayType inner, MemSpace space) { return Type(std::move(inner), true, space); }
  static Type ref(DType dtype, Shape shape, MemSpace space) { return ref(ArrayType{dtype, std::move(shape)}, space); }

  bool is_ref() const { return is_ref_; }
  bool is_array() const { return !is_ref_; }
  // The array type itself, or the array a Ref points to.
  const ArrayType& array_type() const { return array_; }
  DType dtype() const { return array_.dtype; }
  const Shape& shape() const { return array_.shape; }
  int rank() const { return array_.rank(); }
  bool is_scalar() const { return !is_ref_ && array_.shape.empty(); }
  MemSpace mem_space() const { return space_; }  // meaningful only for Refs

  std::string str() const;
  bool operator==(const Type& o) const {
    return is_ref_ == o.is_ref_ && array_ == o.array_ && (!is_ref_ || space_ == o.space_);
  }

 private:
  Type(ArrayType a, bool is_ref, MemSpace space) : array_(std::move(a)), is_ref_(is_ref), space_(space) {}
  ArrayType array_;
  bool is_ref_ = false;
  MemSpace space_ = MemSpace::any;
};

}  // namespace tessera
