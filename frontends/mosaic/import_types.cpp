// MLIR value types as tessera types: scalars are rank-0 arrays, vectors are
// arrays. `index` is i32 (Mosaic computes indices in 32 bits) and `i1` is
// bool. MLIR integers are signless: i8 .. i64 become tessera's signed
// integers, and the ops that read them unsigned (`arith.divui`, `cmpi ult`,
// ...) say so themselves (value_rules_arith.cpp).
#include <algorithm>
#include <map>

#include "frontends/mosaic/import_rules.h"

namespace tessera::mlir_text {

DType import_dtype(const MType& t, const Loc& loc) {
  static const std::map<std::string, DType, std::less<>> dtypes = {
      {"i1", DType::i1},   {"i8", DType::i8},     {"i16", DType::i16}, {"i32", DType::i32},
      {"i64", DType::i64}, {"index", DType::i32}, {"f16", DType::f16}, {"bf16", DType::bf16},
      {"f32", DType::f32}, {"f64", DType::f64},
  };
  auto it = dtypes.find(t.element);
  if (it == dtypes.end()) {
    std::string what = t.text.empty() ? t.element : t.text;
    throw Error(loc, "the element type `" + t.element + "` of `" + what +
                         "` has no tessera dtype (tessera has i1, i8, i16, i32, i64, index as i32, f16, bf16, f32, f64)");
  }
  return it->second;
}

Type import_value_type(const MType& t, const Loc& loc) {
  if (t.is_scalar()) return Type::scalar(import_dtype(t, loc));
  if (!t.is_vector()) throw Error(loc, "`" + t.text + "` is not a value type (a scalar or a vector)");
  if (std::any_of(t.shape.begin(), t.shape.end(), [](int64_t d) { return d < 0; }))
    throw Error(loc, "`" + t.text + "` has a dynamic dimension; vectors have static shapes");
  return Type::array(import_dtype(t, loc), t.shape);
}

void ValueRuleContext::fail(const std::string& message) const { throw Error(op.loc, "`" + op.name + "`: " + message); }

Type ValueRuleContext::result_type(size_t i) const {
  if (i >= op.result_types.size())
    fail("expects a result " + std::to_string(i) + ", but the op has " + std::to_string(op.result_types.size()));
  try {
    return import_value_type(op.result_types[i], op.loc);
  } catch (const Error& e) {
    fail("result " + std::to_string(i) + ": " + e.message());
  }
}

}  // namespace tessera::mlir_text
