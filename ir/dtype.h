// Element types.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tessera {

enum class DType : uint8_t {
  f32, bf16, f16, f64,
  i1, i8, i16, i32, i64, u8, u32,
  // Semaphore element types: only ever the element type of a Ref.
  sem, dma_sem, barrier_sem,
};

std::string_view dtype_name(DType d);
std::optional<DType> parse_dtype(std::string_view name);  // accepts "bool" for i1

int dtype_bytes(DType d);  // storage size; semaphores count as 4
bool is_float(DType d);
bool is_int(DType d);      // signed or unsigned integer, not bool
bool is_signed_int(DType d);
bool is_unsigned_int(DType d);
bool is_bool(DType d);
bool is_semaphore(DType d);
int int_bits(DType d);     // bit width of an integer or bool dtype

// The classes of dtypes an op accepts. One definition for the shape rules
// (ir/prims/), the interpreter's kernels and the backends.
enum class DTypeClass : uint8_t {
  floating,     // f32 bf16 f16 f64
  numeric,      // floats and integers
  int_or_bool,  // integers and i1
  integer,      // signed and unsigned integers
  any,          // every array dtype (not semaphores)
};
bool in_class(DTypeClass c, DType d);
std::string_view class_noun(DTypeClass c);  // "a floating-point", for "expects a floating-point dtype"

}  // namespace tessera
