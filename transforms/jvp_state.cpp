// jvp rules of the state primitives. A Ref with a tangent Ref is mirrored:
// the same indexer (same dynamic index operands) selects the same region of
// the tangent Ref, so reads give tangents and writes store tangents.
#include "transforms/jvp.h"

namespace tessera::jvp {
namespace {

using Vals = std::vector<Value>;
using Tans = std::vector<Tangent>;

std::string ref_name(const Op& op) {
  const Value& r = op.main_operand(0);
  return r.is_var() && !r.var()->name.empty() ? "%" + r.var()->name : "its Ref operand";
}

[[noreturn]] void lost_tangent(const Op& op) {
  throw Error(op.loc, "jvp: " + op.name() + " writes a value that has a tangent into " + ref_name(op) +
                          ", which has no tangent Ref (differentiate with respect to that Ref too)");
}

// The op re-emitted on the tangent Ref, with the value operands at the given
// main-operand positions replaced.
void emit_on_tangent_ref(Ctx& c, const Op& op, const Vals& x, Value tref, const std::vector<std::pair<int, Value>>& repl,
                         Vals* results) {
  Vals ops = x;
  std::vector<int> main = op.main_operands();
  ops[main[0]] = tref;
  for (const auto& [k, v] : repl) ops[main[k]] = v;
  Vals r = ad::emit_like(c.b, op, ops);
  if (results) *results = r;
}

RuleResult get_rule(Ctx& c, const Op& op, const Vals& x, const Tans& dx) {
  Vals y = emit_primal(c, op, x);
  int base = op.main_operand_index(0);
  if (!dx[base]) return {y, {std::nullopt}};
  Vals t;
  emit_on_tangent_ref(c, op, x, *dx[base], {}, &t);
  return {y, {t[0]}};
}

// swap %r[idx], %v: the tangent Ref receives v's tangent (zeros if none) and
// the old tangent contents are the result's tangent.
RuleResult swap_rule(Ctx& c, const Op& op, const Vals& x, const Tans& dx) {
  Vals y = emit_primal(c, op, x);
  std::vector<int> main = op.main_operands();
  const Tangent& tref = dx[main[0]];
  const Tangent& tv = dx[main[1]];
  if (!tref) {
    if (tv) lost_tangent(op);
    return {y, {std::nullopt}};
  }
  Vals t;
  emit_on_tangent_ref(c, op, x, *tref, {{1, c.instantiate(tv, x[main[1]].type())}}, &t);
  return {y, {t[0]}};
}

RuleResult addupdate_rule(Ctx& c, const Op& op, const Vals& x, const Tans& dx) {
  emit_primal(c, op, x);
  std::vector<int> main = op.main_operands();
  const Tangent& tref = dx[main[0]];
  const Tangent& tv = dx[main[1]];
  if (!tv) return {{}, {}};
  if (!tref) lost_tangent(op);
  emit_on_tangent_ref(c, op, x, *tref, {{1, *tv}}, nullptr);
  return {{}, {}};
}

// load %r[idx], %mask, %other: masked-off lanes read `other`, so their
// tangent is other's tangent.
RuleResult load_rule(Ctx& c, const Op& op, const Vals& x, const Tans& dx) {
  Vals y = emit_primal(c, op, x);
  std::vector<int> main = op.main_operands();
  const Tangent& tref = dx[main[0]];
  if (!tref) {
    if (main.size() == 3 && dx[main[2]])
      throw Error(op.loc, "jvp: load with a differentiated `other` from " + ref_name(op) + ", which has no tangent Ref");
    return {y, {std::nullopt}};
  }
  std::vector<std::pair<int, Value>> repl;
  if (main.size() == 3) repl.push_back({2, c.instantiate(dx[main[2]], x[main[2]].type())});
  Vals t;
  emit_on_tangent_ref(c, op, x, *tref, repl, &t);
  return {y, {t[0]}};
}

RuleResult store_rule(Ctx& c, const Op& op, const Vals& x, const Tans& dx) {
  emit_primal(c, op, x);
  std::vector<int> main = op.main_operands();
  const Tangent& tref = dx[main[0]];
  const Tangent& tv = dx[main[1]];
  if (!tref) {
    if (tv) lost_tangent(op);
    return {{}, {}};
  }
  emit_on_tangent_ref(c, op, x, *tref, {{1, c.instantiate(tv, x[main[1]].type())}}, nullptr);
  return {{}, {}};
}

// dma_start %src, %dst, %dst_sem[, %src_sem, %device]: a DMA between Refs
// with tangents is mirrored by a second DMA between their tangent Refs (same
// indexers, same device), signalling the tangent semaphores; dma_wait mirrors
// the wait. Tangent semaphores are allocated beside the primal ones
// (has_tangent_scratch), so each wait consumes exactly its own copy's bytes.
RuleResult dma_start_rule(Ctx& c, const Op& op, const Vals& x, const Tans& dx) {
  emit_primal(c, op, x);
  std::vector<int> main = op.main_operands();
  const Tangent& tsrc = dx[main[0]];
  const Tangent& tdst = dx[main[1]];
  if (!tdst) {
    if (tsrc)
      throw Error(op.loc, "jvp: dma_start copies the differentiated " + ref_name(op) +
                              " into a Ref with no tangent Ref (differentiate with respect to that Ref too)");
    return {{}, {}};
  }
  if (!tsrc)
    throw Error(op.loc, "jvp: dma_start copies " + ref_name(op) +
                            ", which has no tangent Ref, into a differentiated Ref: its tangent would be zeros, which "
                            "this rule does not copy yet (differentiate with respect to " + ref_name(op) + " too)");
  std::vector<std::pair<int, Value>> repl{{1, *tdst}};
  // Semaphores: dst_sem (main operand 2) and, for a remote copy, src_sem (3).
  for (int k = 2; k < static_cast<int>(main.size()) && k <= 3; ++k) {
    if (!x[main[k]].type().is_ref()) continue;
    if (!dx[main[k]])
      throw Error(op.loc, "jvp: dma_start signals a semaphore that has no tangent semaphore; allocate it as "
                          "pallas_call scratch or in run_scoped so jvp can allocate one beside it");
    repl.push_back({k, *dx[main[k]]});
  }
  emit_on_tangent_ref(c, op, x, *tsrc, repl, nullptr);
  return {{}, {}};
}

// dma_wait %sem, %ref: when the waited region has a tangent Ref, the copy it
// waits for had a tangent copy (dma_start_rule), signalling sem's tangent.
RuleResult dma_wait_rule(Ctx& c, const Op& op, const Vals& x, const Tans& dx) {
  emit_primal(c, op, x);
  std::vector<int> main = op.main_operands();
  const Tangent& tsem = dx[main[0]];
  const Tangent& tref = dx[main[1]];
  if (tsem && tref) emit_on_tangent_ref(c, op, x, *tsem, {{1, *tref}}, nullptr);
  return {{}, {}};
}

}  // namespace

void add_state_rules(RuleTable<JvpRule>& t) {
  t.set("get", get_rule);
  t.set("swap", swap_rule);
  t.set("addupdate", addupdate_rule);
  t.set("load", load_rule);
  t.set("store", store_rule);
  t.set("dma_start", dma_start_rule);
  t.set("dma_wait", dma_wait_rule);
}

}  // namespace tessera::jvp
