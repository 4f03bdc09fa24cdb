// Forward-mode differentiation (the jvp pass): the rule table and the body
// transformer the rules recurse through.
//
// A tangent is std::optional<Value>: nullopt is a *symbolic zero*, never
// materialised unless a consumer needs an actual array (a loop carry, a
// select case, a Ref write). Integer, bool and semaphore values always have
// symbolic-zero tangents. A Ref's tangent is a paired tangent Ref of the same
// type; reads and writes through the primal Ref are mirrored on it with the
// same indexer.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "ir/primitive.h"
#include "transforms/ad_util.h"

namespace tessera::jvp {

using Tangent = std::optional<Value>;

// Can values of type `t` carry a (non-zero) tangent?
inline bool differentiable(const Type& t) { return is_float(t.dtype()); }

// Does scratch of type `t` (pallas_call scratch, run_scoped allocations) get
// a tangent twin allocated beside it? Floating-point buffers do, and so do DMA
// semaphores: the copy of a tangent region signals its own semaphore, so a
// wait on the primal semaphore never consumes the tangent copy's bytes.
inline bool has_tangent_scratch(const Type& t) { return differentiable(t) || t.dtype() == DType::dma_sem; }

struct Ctx {
  Builder& b;
  ad::SymbolSink& syms;

  // The tangent as an actual value of `primal`'s type (zeros if symbolic).
  Value instantiate(const Tangent& t, const Type& primal);
};

// A rule appends the primal computation and the tangent computation for `op`
// to ctx.b. `x` are op's operands renamed into the new body, `dx` one tangent
// per operand (for a Ref operand: its tangent Ref, or nullopt). It returns the
// primal results and one tangent per result.
struct RuleResult {
  std::vector<Value> primals;
  std::vector<Tangent> tangents;
};
using JvpRule = std::function<RuleResult(Ctx&, const Op& op, const std::vector<Value>& x, const std::vector<Tangent>& dx)>;

RuleTable<JvpRule>& rules();

// Appends the jvp of `src` to ctx.b, with `params` standing for src's
// parameters and `tangents` for their tangents. Returns src's outputs and
// their tangents.
RuleResult inline_jvp(Ctx& ctx, const Body& src, const std::vector<Value>& params, const std::vector<Tangent>& tangents);

// A new body `name(params..., tangents of the params marked in has_tangent...)
// -> (outs..., tangents of the outputs marked in out_tangent...)`, tangents
// of unmarked outputs dropped, marked ones materialised.
BodyPtr jvp_body(Ctx& ctx, const Body& src, const std::string& name, BodyKind kind, const std::vector<bool>& has_tangent,
                 const std::vector<bool>& out_tangent);

// The same with an explicit layout: each slot names a parameter (or output)
// of `src` and whether it is that value's tangent. Every primal parameter must
// appear; tangent slots of outputs are materialised.
struct Slot {
  int index;
  bool tangent;
};
BodyPtr jvp_body_layout(Ctx& ctx, const Body& src, const std::string& name, BodyKind kind, const std::vector<Slot>& params,
                        const std::vector<Slot>& outs);

// Families of rules (one file each).
void add_math_rules(RuleTable<JvpRule>& t);       // jvp_math.cpp
void add_structural_rules(RuleTable<JvpRule>& t); // jvp_math.cpp
void add_state_rules(RuleTable<JvpRule>& t);      // jvp_state.cpp
void add_control_rules(RuleTable<JvpRule>& t);    // jvp_control.cpp
void add_pallas_call_rule(RuleTable<JvpRule>& t); // jvp_pallas_call.cpp

// Helpers for rules.
std::vector<Value> emit_primal(Ctx& ctx, const Op& op, const std::vector<Value>& x);
std::vector<bool> differentiable_mask(const std::vector<Type>& types);

}  // namespace tessera::jvp
