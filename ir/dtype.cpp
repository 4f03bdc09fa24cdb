#include "ir/dtype.h"

#include <array>

namespace tessera {
namespace {

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  int bytes;
  int bits;
};

constexpr std::array<DTypeInfo, 14> kInfo = {{
    {DType::f32, "f32", 4, 32},    {DType::bf16, "bf16", 2, 16},  {DType::f16, "f16", 2, 16},
    {DType::f64, "f64", 8, 64},    {DType::i1, "bool", 1, 1},     {DType::i8, "i8", 1, 8},
    {DType::i16, "i16", 2, 16},    {DType::i32, "i32", 4, 32},    {DType::i64, "i64", 8, 64},
    {DType::u8, "u8", 1, 8},       {DType::u32, "u32", 4, 32},    {DType::sem, "sem", 4, 32},
    {DType::dma_sem, "dma_sem", 4, 32}, {DType::barrier_sem, "barrier_sem", 4, 32},
}};

const DTypeInfo& info(DType d) { return kInfo[static_cast<size_t>(d)]; }

}  // namespace

std::string_view dtype_name(DType d) { return info(d).name; }

std::optional<DType> parse_dtype(std::string_view name) {
  if (name == "i1") return DType::i1;
  for (const auto& i : kInfo)
    if (i.name == name) return i.dtype;
  return std::nullopt;
}

int dtype_bytes(DType d) { return info(d).bytes; }
bool is_float(DType d) { return d == DType::f32 || d == DType::bf16 || d == DType::f16 || d == DType::f64; }
bool is_signed_int(DType d) { return d == DType::i8 || d == DType::i16 || d == DType::i32 || d == DType::i64; }
bool is_unsigned_int(DType d) { return d == DType::u8 || d == DType::u32; }
bool is_int(DType d) { return is_signed_int(d) || is_unsigned_int(d); }
bool is_bool(DType d) { return d == DType::i1; }
bool is_semaphore(DType d) { return d == DType::sem || d == DType::dma_sem || d == DType::barrier_sem; }
int int_bits(DType d) { return info(d).bits; }

bool in_class(DTypeClass c, DType d) {
  switch (c) {
    case DTypeClass::floating: return is_float(d);
    case DTypeClass::numeric: return is_float(d) || is_int(d);
    case DTypeClass::int_or_bool: return is_int(d) || is_bool(d);
    case DTypeClass::integer: return is_int(d);
    case DTypeClass::any: return !is_semaphore(d);
  }
  return false;
}

std::string_view class_noun(DTypeClass c) {
  switch (c) {
    case DTypeClass::floating: return "a floating-point";
    case DTypeClass::numeric: return "a numeric";
    case DTypeClass::int_or_bool: return "an integer or bool";
    case DTypeClass::integer: return "an integer";
    case DTypeClass::any: return "an array";
  }
  return "";
}

}  // namespace tessera
