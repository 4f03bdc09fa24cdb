// Batching (the vmap pass): the rule table and the body transformer.
//
// Every value of the transformed body has a batch dimension: the axis that
// holds the batch, or kNotMapped when the value is the same for every batch
// element (it is then never broadcast unless a consumer needs it). Rules move
// batch dimensions only when an op needs them somewhere specific.
#pragma once

#include <functional>
#include <vector>

#include "ir/primitive.h"
#include "transforms/ad_util.h"

namespace tessera::vmap {

constexpr int kNotMapped = -1;

struct Ctx {
  Builder& b;
  ad::SymbolSink& syms;
  int64_t size;  // the batch size

  // `v` (batched at `dim`, or not mapped) with its batch dimension at `to`,
  // broadcast along a new axis if it was not mapped.
  Value move_to(Value v, int dim, int to);
};

struct RuleResult {
  std::vector<Value> values;
  std::vector<int> dims;
};
// `x`: op's operands renamed, `dims`: their batch dimensions (at least one mapped).
using BatchRule = std::function<RuleResult(Ctx&, const Op& op, const std::vector<Value>& x, const std::vector<int>& dims)>;

RuleTable<BatchRule>& rules();

// Appends the batched computation of `src` to ctx.b.
RuleResult inline_vmap(Ctx& ctx, const Body& src, const std::vector<Value>& params, const std::vector<int>& dims);

// The type of a value of type `t` batched at `dim`.
Type batched_type(const Type& t, int dim, int64_t size);

// A new body taking src's parameters batched at `in_dims` and returning its
// outputs batched at `out_dims` (kNotMapped entries must come out unbatched).
BodyPtr vmap_body(Ctx& ctx, const Body& src, const std::string& name, BodyKind kind, const std::vector<int>& in_dims,
                  const std::vector<int>& out_dims);

// A fallback for pure ops without a better rule: a scan over the batch that
// runs the unbatched op on one element per iteration.
RuleResult loop_rule(Ctx& ctx, const Op& op, const std::vector<Value>& x, const std::vector<int>& dims);

void add_array_rules(RuleTable<BatchRule>& t);        // vmap_rules.cpp
void add_control_rules(RuleTable<BatchRule>& t);      // vmap_control.cpp
void add_pallas_call_rule(RuleTable<BatchRule>& t);   // vmap_pallas_call.cpp

}  // namespace tessera::vmap
