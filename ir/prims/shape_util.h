// Small helpers shared by the shape rules in ir/prims/.
#pragma once

#include <string>
#include <vector>

#include "ir/builder.h"
#include "ir/ir.h"
#include "ir/primitive.h"

namespace tessera::prims {

[[noreturn]] inline void fail(const Op& op, const std::string& msg) { throw Error(op.loc, op.name() + ": " + msg); }

inline void expect_operands(const Op& op, size_t lo, size_t hi) {
  size_t n = op.num_main_operands();
  if (n < lo || n > hi) {
    std::string want = lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi);
    fail(op, "expects " + want + " operand(s), got " + std::to_string(n));
  }
}
inline void expect_operands(const Op& op, size_t n) { expect_operands(op, n, n); }

// Type of the k-th main operand, required to be an array (not a Ref).
inline const Type& array_operand(const Op& op, int k) {
  const Type& t = op.main_operand(k).type();
  if (t.is_ref()) fail(op, "operand " + std::to_string(k) + " must be an array, got the Ref " + t.str());
  return t;
}

inline const Type& ref_operand(const Op& op, int k) {
  const Type& t = op.main_operand(k).type();
  if (!t.is_ref()) fail(op, "operand " + std::to_string(k) + " must be a Ref, got " + t.str());
  return t;
}

// A rule's single result type, moved (not copied, as a braced list would).
inline std::vector<Type> one_type(Type t) {
  std::vector<Type> out;
  out.reserve(1);
  out.push_back(std::move(t));
  return out;
}

inline void check_axis(const Op& op, int64_t axis, int rank, const char* what = "axis") {
  if (axis < 0 || axis >= rank)
    fail(op, std::string(what) + " " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
}

inline void expect_int_scalar(const Op& op, const Type& t, const std::string& what) {
  if (!t.is_scalar() || !is_int(t.dtype())) fail(op, what + " must be an integer scalar, got " + t.str());
}

inline std::string types_str(const std::vector<Type>& ts) {
  std::string s = "(";
  for (size_t i = 0; i < ts.size(); ++i) s += (i ? ", " : "") + ts[i].str();
  return s + ")";
}

inline ParamSpec req(std::string name, ParamKind kind) { return ParamSpec{std::move(name), kind, true, {}, {}}; }
inline ParamSpec opt(std::string name, ParamKind kind, Param def = {}) {
  return ParamSpec{std::move(name), kind, false, std::move(def), {}};
}
inline ParamSpec choice(std::string name, std::vector<std::string> choices, std::string def) {
  return ParamSpec{std::move(name), ParamKind::Ident, false, Param{std::move(def)}, std::move(choices)};
}

// Effects of a nested body mapped back onto the op's operands: body parameter
// p is operand `first_operand + p` (parameters past the operands are local).
void add_body_effects(const Body& body, int first_operand, int num_operands, OpEffects& out);

}  // namespace tessera::prims
