// What the value rules (value_rules_*.cpp) share: operand and attribute
// readers that fail at the op's location, and the few compositions several
// rule files build on (NaN tests, unsigned order, the combining kinds of
// `vector.multi_reduction`).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "frontends/mosaic/import_rules.h"

namespace tessera::mlir_text::rules {

using RuleMap = std::map<std::string, ValueRule, std::less<>>;

// The rule files' registration functions, assembled by value_rules().
void add_arith_rules(RuleMap& t);   // arith.*, math.*, cf.assert
void add_vector_rules(RuleMap& t);  // vector.* on values
void add_tpu_rules(RuleMap& t);     // tpu.* on values

// ---- Operands -------------------------------------------------------------------
// Fails unless the op has between lo and hi operands.
void expect_operands(const ValueRuleContext& c, size_t lo, size_t hi);
inline void expect_operands(const ValueRuleContext& c, size_t n) { expect_operands(c, n, n); }

// What an operand must hold; `integer` takes i1 too (MLIR's signless integers).
enum class Class { floating, integer, any };
void expect_class(const ValueRuleContext& c, size_t i, Class k);
// expect_operands(n), then every operand of class `k`.
void expect_all(const ValueRuleContext& c, size_t n, Class k);

// ---- Attributes -----------------------------------------------------------------
const Attr* find_attr(const ValueRuleContext& c, std::string_view key);
const Attr& need_attr(const ValueRuleContext& c, std::string_view key);
int64_t int_attr(const ValueRuleContext& c, std::string_view key);
bool bool_attr(const ValueRuleContext& c, std::string_view key, bool absent);
// A list of integers: `array<i64: 1, 2>`, `[1, 2]`, or an integer `dense<...>`.
std::vector<int64_t> ints_attr(const ValueRuleContext& c, std::string_view key);
std::vector<int64_t> ints_of(const ValueRuleContext& c, const Attr& a, std::string_view what);
// A string, or the word of a dialect attribute (`#tpu.reduction_kind<arg_max>` gives "arg_max").
std::string word_attr(const ValueRuleContext& c, std::string_view key);

// ---- Values ---------------------------------------------------------------------
inline DType dtype_of(const Value& v) { return v.type().dtype(); }
// `v` of dtype `d`: integers wrapped to the dtype's width, bools 0 / 1.
Value literal(DType d, double v);
Value int_literal(DType d, int64_t v);
// The smallest value of integer dtype `d` (its sign bit alone).
int64_t int_min(DType d);
// A value of type `t` (an array type) filled with `v`.
Value full(Builder& b, const Type& t, double v);
// The value every element of `v` holds, when `v` is a literal or a broadcast
// of one built in this body; nullopt otherwise.
std::optional<Literal> splat_value(const Builder& b, const Value& v);

Value logical_not(Builder& b, Value x);
Value is_nan(Builder& b, Value x);
// `x` xor the sign bit: unsigned order becomes signed order (and back).
Value flip_sign_bit(Builder& b, Value x);
// max / min of two integers read as unsigned.
Value unsigned_max(Builder& b, Value x, Value y, bool max);
// IEEE maxNum / minNum: a NaN operand gives the other one.
Value nan_ignoring_max(Builder& b, Value x, Value y, bool max);

// a * b + c (math.fma, vector.fma), rounded once where tessera can.
Value fused_multiply_add(Builder& b, Value x, Value y, Value z);

// `a KIND b` for a combining kind of `vector.multi_reduction` ("add",
// "maximumf", "maxui", ...).
Value combine(const ValueRuleContext& c, std::string_view kind, Value a, Value b);
// The identity of `kind` for dtype `d` (combining with it changes nothing;
// +0.0 for a float `add`, as Pallas writes it), or nullopt.
std::optional<Literal> kind_identity(std::string_view kind, DType d);

}  // namespace tessera::mlir_text::rules
