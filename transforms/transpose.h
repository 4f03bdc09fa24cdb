// Reverse mode: transposition of linear functions (JAX's
// `ad.backward_pass` / `primitive_transposes`), and with linearize, vjp.
//
// A cotangent is std::optional<Value>: nullopt is a *symbolic zero*, never
// materialised unless a consumer needs an actual array. The walk visits the
// ops of a linear body in reverse order, keeping per linear variable the sum
// of the cotangents its uses contributed; each op's rule turns the cotangents
// of its results into cotangents of its linear operands.
//
// State: a linear Ref (a tangent Ref of jvp) is transposed *in place*: the
// transposed body takes a cotangent Ref in its position, and the state rules
// write into it (get -> addupdate into it; swap -> read it, zero it, the read
// is the cotangent of the stored value; addupdate -> get from it).
#pragma once

#include <functional>
#include <optional>
#include <unordered_map>
#include <string>
#include <vector>

#include "ir/primitive.h"
#include "transforms/ad_util.h"

namespace tessera::transpose {

using Cotangent = std::optional<Value>;
class DmaMirror;  // transforms/dma_mirror.h

// Does a value of type `t` carry a cotangent? Floating-point arrays do; a
// linear Ref is handled in place (its cotangent Ref stands for it).
inline bool has_cotangent(const Type& t) { return !t.is_ref() && is_float(t.dtype()); }

struct Ctx {
  Builder& b;
  ad::SymbolSink& syms;
  // Per control op run forward (ForwardRule): the non-linear values its
  // bodies' linear parts read that depend on Ref reads, computed in program
  // order; its transpose rule uses them instead of reading the Refs again.
  std::unordered_map<const Op*, std::vector<Value>> residuals = {};
  // Set while a DMA pipeline is transposed as a pipeline (dma_mirror.h):
  // which DMA ops start / wait for transposed copies. Nested bodies' Ctx
  // (cond, loops) keep it.
  const DmaMirror* dma_mirror = nullptr;

  // The cotangent as an actual value of type `t` (zeros when symbolic).
  Value instantiate(const Cotangent& ct, const Type& t);
  // Accumulation of two contributions; a symbolic zero is the identity.
  Cotangent add(const Cotangent& a, const Cotangent& c);
};

// The transpose of one op. `op` is linear in the operands marked `linear`;
// `x[i]` is non-linear operand i renamed into the new body (for a linear
// array operand: an undefined Value; for a linear Ref operand: the cotangent
// Ref that stands for it). `ct[j]` is the cotangent of op's result j. Returns
// one cotangent per operand: nullopt for non-linear operands, linear Refs
// (written in place) and zero contributions.
using TransposeRule = std::function<std::vector<Cotangent>(Ctx&, const Op& op, const std::vector<Value>& x,
                                                           const std::vector<bool>& linear,
                                                           const std::vector<Cotangent>& ct)>;

// Transposes `src`, linear in the parameters marked `linear`, into a new body
//   name(non-linear params..., cotangents of src's outputs...)
//     -> (cotangents of the linear array params...)
// A linear *Ref* parameter instead takes its cotangent Ref in its own
// position among the leading params and returns nothing (state is transposed
// in place). An output that is not linear (it does not depend on the linear
// params, e.g. an integer) takes no cotangent parameter. Throws a located
// error naming the first op (walking backwards) that is not linear in the
// linear inputs ("transpose: `mul` of two linear values is not linear").
BodyPtr transpose_body(Ctx& ctx, const Body& src, const std::string& name, BodyKind kind, const std::vector<bool>& linear);

// Appends the transpose of `src` to ctx.b: `params[i]` stands for src's
// non-linear param i (for a linear Ref param: its cotangent Ref; ignored for
// a linear array param), `out_ct[j]` is the cotangent of output j. Returns
// one cotangent per param (nullopt for non-linear ones and Refs). The rules
// of nested bodies (cond, loops, run_scoped, call) recurse through here.
// `nonlinear_outs`, when given, receives src's non-linear outputs as computed
// by the forward part (nullopt for linear ones). `given`: values
// of src variables computed earlier (residuals), used instead of recomputing
// them; when given, src's non-linear writes to Refs already ran forward and
// are not repeated.
struct Given {
  std::vector<const Var*> vars;
  std::vector<Value> values;
};
std::vector<Cotangent> inline_transpose(Ctx& ctx, const Body& src, const std::vector<Value>& params,
                                        const std::vector<bool>& linear, const std::vector<Cotangent>& out_ct,
                                        std::vector<std::optional<Value>>* nonlinear_outs = nullptr,
                                        const Given* given = nullptr);

// Which outputs of `src` depend on its parameters marked `linear`; which of
// its Ref parameters end up holding linear contents (linear ones, and those a
// linear value is written into).
std::vector<bool> linear_outputs(const Body& src, const std::vector<bool>& linear);
std::vector<bool> linear_refs(const Body& src, const std::vector<bool>& linear);

// Which non-linear parameters of `src` its transpose reads: those the linear
// ops use, directly or through non-linear ops. A loop records only these of
// its non-linear carries.
std::vector<bool> params_read_by_transpose(const Body& src, const std::vector<bool>& linear);

// `src` restricted to its non-linear part: the same parameters, the ops that
// do not depend on the linear ones, zeros for the linear outputs. Loops run
// it forward to record the non-linear carries their transpose needs.
// `extra_outputs` (src variables) are returned after src's outputs.
BodyPtr nonlinear_part(const Body& src, const std::vector<bool>& linear, const std::string& name,
                       const std::vector<const Var*>& extra_outputs = {});

// The variables of `src` (not parameters) that its linear ops read and whose
// non-linear values depend on reading a Ref: what a transpose must take from
// the forward run rather than recompute later, when the Refs may have
// changed.
std::vector<const Var*> read_residuals(const Body& src, const std::vector<bool>& linear);

// Which results of `op` are linear, given which operands are. By default all
// of them when any operand is; a primitive whose results can be partly
// non-linear (control flow, whose bodies compute primal values beside
// tangents; sort, whose keys ride along) has a RuleSet::linear_results.
std::vector<bool> linear_results(const Op& op, const std::vector<bool>& linear_operands);
using LinearResultsRule = std::function<std::vector<bool>(const Op&, const std::vector<bool>& linear_operands)>;

// Bilinear primitives (mul, div, dot_general) are linear in one operand at a
// time: their check throws the located error for a use linear in both, so
// the walk reports the first such op in program order, before any rule runs.
using LinearityCheck = std::function<void(const Op&, const std::vector<bool>& linear_operands)>;

// The forward part of a control op that computes non-linear results beside
// linear ones and takes a linear Ref (a jvp'd loop reading a tangent Ref):
// the op again with each body cut to its non-linear part (nonlinear_part), so
// it computes the non-linear results without touching the linear Refs. `x`:
// the operands renamed, zeros for linear arrays. Returns the op's results
// (the linear ones zeros).
// It may record residuals in ctx.residuals[&op] for the op's transpose rule.
using ForwardRule = std::function<std::vector<Value>(Ctx&, const Op&, const std::vector<Value>& x,
                                                     const std::vector<bool>& linear_operands)>;

// What transpose keeps per primitive: one entry of one table, whose
// optional parts only some primitives need.
struct RuleSet {
  TransposeRule transpose;
  LinearResultsRule linear_results = {};  // empty: every result linear when any operand is
  LinearityCheck check = {};              // empty: linear in any set of operands
  ForwardRule forward = {};               // empty: no forward part
};
// The table, named "transpose"; a primitive without a rule has a stated
// reason (transpose_coverage.cpp): `no_rule_needed` when it is never linear
// (a linear use of it is "not linear"), `unsupported` when it could be.
RuleTable<RuleSet>& rules();

// The name of the cotangent of `name`: `x_ct`, also for a tangent `x_dot`.
std::string cotangent_name(const std::string& name);

// Why a primitive has no rule: the table's stated reason, read by the
// walk's error for a linear use of it ("no transpose rule yet" when the
// table has none: a primitive registered after the table was filled).
struct NoRule {
  enum Kind { not_linear, unsupported } kind;
  std::string why;
};
NoRule why_no_rule(const Primitive& p);

// Families of rules (one file each), then the reasons of the rest.
void add_linear_rules(RuleTable<RuleSet>& t);      // transpose_rules.cpp
void add_state_rules(RuleTable<RuleSet>& t);       // transpose_state.cpp
void add_dma_rules(RuleTable<RuleSet>& t);         // transpose_dma.cpp
void add_control_rules(RuleTable<RuleSet>& t);     // transpose_control.cpp
void add_pallas_call_rule(RuleTable<RuleSet>& t);  // transpose_pallas_call.cpp
void add_reasons(RuleTable<RuleSet>& t);           // transpose_coverage.cpp

}  // namespace tessera::transpose
