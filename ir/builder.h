// The one place ops are made. The parser, every pass and the tests build ops
// through here, so schema checks and shape inference run in exactly one spot.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "ir/ir.h"
#include "ir/primitive.h"

namespace tessera {

// Fills schema defaults into `op.params`, orders them as the schema does and
// checks kinds, required params and allowed words. Throws Error at op.loc.
void normalize_params(Op& op);
// Runs the primitive's shape rule (params must be normalized).
std::vector<Type> infer_result_types(const Op& op);

class Builder {
 public:
  explicit Builder(Body& body) : body_(&body) {}

  Body& body() const { return *body_; }
  void set_loc(Loc loc) { loc_ = std::move(loc); }
  const Loc& loc() const { return loc_; }

  Var* param(Type type, std::string name) { return body_->add_param(std::move(type), std::move(name), loc_); }

  // Appends an op and returns its results. `result_names` are hints (may be
  // empty). No Op& is handed out: the body keeps its ops in a vector, so a
  // reference would die at the next append; Vars are owned by the body and
  // stay put.
  std::vector<Var*> create(const Primitive& p, std::vector<Value> operands, Params params = {},
                           std::vector<Indexer> indexers = {}, std::vector<std::string> result_names = {});
  // create() with the results as Values, by primitive or by name.
  std::vector<Value> emit(const Primitive& p, std::vector<Value> operands, Params params = {},
                          std::vector<Indexer> indexers = {});
  std::vector<Value> emit(std::string_view prim_name, std::vector<Value> operands, Params params = {},
                          std::vector<Indexer> indexers = {});
  // emit() for a single-result op.
  Value emit1(std::string_view prim_name, std::vector<Value> operands, Params params = {},
              std::vector<Indexer> indexers = {});
  void ret(std::vector<Value> outputs) { body_->set_outputs(std::move(outputs)); }

  // Conveniences for the most common ops.
  Value binary(std::string_view prim_name, Value a, Value b) { return emit1(prim_name, {a, b}); }
  Value unary(std::string_view prim_name, Value a) { return emit1(prim_name, {a}); }
  Value i32(int64_t v) { return Literal::of_int(DType::i32, v); }
  Value f32(double v) { return Literal::of_float(DType::f32, v); }
  // A scalar literal of dtype `d` holding `v`.
  static Value literal(DType d, double v) { return is_float(d) ? Literal::of_float(d, v) : Literal::of_int(d, static_cast<int64_t>(v)); }
  // `x` (rank 0) broadcast to `shape`; `x` itself when `shape` is rank 0.
  Value broadcast_scalar(Value x, const Shape& shape);
  // An array of type `t` (an array type) filled with `v`; a literal when rank 0.
  Value full(const Type& t, double v) { return broadcast_scalar(literal(t.dtype(), v), t.shape()); }
  Value zeros(const Type& t) { return full(t, 0.0); }
  // `get %ref[entries]`; dynamic entries refer to operands appended after ref.
  Value get(Value ref, std::vector<IndexEntry> entries = {}, std::vector<Value> dyn = {});
  void swap_discard(Value ref, Value v, std::vector<IndexEntry> entries = {}, std::vector<Value> dyn = {});

 private:
  // The op just appended, for the methods above to read before anything else
  // is appended (never handed out).
  const Op& append(const Primitive& p, std::vector<Value> operands, Params params, std::vector<Indexer> indexers,
                   std::vector<std::string> result_names);

  Body* body_;
  Loc loc_;
};

// `op`'s params with the named ones replaced (names it lacks are ignored):
// the params of an op rebuilt with, say, a new body.
Params params_with(const Op& op, std::initializer_list<NamedParam> changes);

}  // namespace tessera
