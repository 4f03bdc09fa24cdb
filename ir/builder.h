// The one place ops are made. The parser, every pass and the tests build ops
// through here, so schema checks and shape inference run in exactly one spot.
#pragma once

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

  // Appends an op and returns it. `result_names` are hints (may be empty).
  // The reference lives only until the next op is appended to the body (the
  // ops are a vector): copy `results` before emitting more.
  Op& create(const Primitive& p, std::vector<Value> operands, Params params = {},
             std::vector<Indexer> indexers = {}, std::vector<std::string> result_names = {});
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
  static Value literal(DType d, double v) { return is_float(d) ? Literal::of_float(d, v) : Literal::of_int(d, static_cast<int64_t>(v)); }
  // `get %ref[entries]`; dynamic entries refer to operands appended after ref.
  Value get(Value ref, std::vector<IndexEntry> entries = {}, std::vector<Value> dyn = {});
  void swap_discard(Value ref, Value v, std::vector<IndexEntry> entries = {}, std::vector<Value> dyn = {});

 private:
  Body* body_;
  Loc loc_;
};

}  // namespace tessera
