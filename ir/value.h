// SSA values: variables (defined exactly once, by a body parameter or an op
// result) and scalar literals.
#pragma once

#include <cstdint>
#include <string>

#include "ir/diagnostics.h"
#include "ir/type.h"

namespace tessera {

// A variable. Owned by the Body that defines it; everything else holds Var*.
struct Var {
  std::string name;  // a hint; the printer makes names unique
  Type type;
  Loc loc;
};

// A scalar constant. Floats keep their value in `f`, integers and bools in `i`.
struct Literal {
  DType dtype = DType::f32;
  double f = 0.0;
  int64_t i = 0;

  static Literal of_float(DType d, double v) { return Literal{d, v, 0}; }
  static Literal of_int(DType d, int64_t v) { return Literal{d, static_cast<double>(v), v}; }
  double as_double() const { return is_float(dtype) ? f : static_cast<double>(i); }
  int64_t as_int() const { return is_float(dtype) ? static_cast<int64_t>(f) : i; }
  std::string str() const;  // "2.0:f32", "3:i32", "true"
  bool operator==(const Literal& o) const;
};

class Value {
 public:
  Value() = default;
  Value(Var* v) : var_(v) {}  // NOLINT: implicit on purpose, a Var is a Value
  Value(Literal l) : lit_(l) {}  // NOLINT

  bool is_var() const { return var_ != nullptr; }
  bool is_literal() const { return var_ == nullptr; }
  Var* var() const { return var_; }
  const Literal& literal() const { return lit_; }
  const Type& type() const { return var_ ? var_->type : Type::scalar_ref(lit_.dtype); }
  bool operator==(const Value& o) const { return var_ == o.var_ && (var_ || lit_ == o.lit_); }

 private:
  Var* var_ = nullptr;
  Literal lit_;
};

}  // namespace tessera
