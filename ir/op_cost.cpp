#include "ir/op_cost.h"

namespace tessera {
namespace {

int64_t result_elements(const Op& op) {
  int64_t n = 0;
  for (const Var* r : op.results) n = saturating_add(n, num_elements(r->type.shape()));
  return n;
}

OpCost no_cost(const Op&) { return {}; }

OpCost elementwise(const Op& op) {
  int64_t n = result_elements(op);
  if (op.prim->transcendental) return {0, n};
  return {n, 0};
}

// reduce_* and argmax / argmin: combining n elements into one takes n - 1 steps.
OpCost reduction(const Op& op) {
  int64_t in = num_elements(op.main_operand(0).type().shape());
  int64_t out = num_elements(op.results.at(0)->type.shape());
  return {in > out ? in - out : 0, 0};
}

OpCost cumsum(const Op& op) {
  const Shape& s = op.main_operand(0).type().shape();
  int64_t n = num_elements(s);
  int64_t axis = op.int_param("axis");
  int64_t len = axis >= 0 && axis < static_cast<int64_t>(s.size()) ? s[static_cast<size_t>(axis)] : 1;
  int64_t lines = len > 0 ? n / len : 0;
  return {n - lines, 0};
}

OpCost dot_general(const Op& op) {
  const Shape& lhs = op.main_operand(0).type().shape();
  int64_t contracted = 1;
  for (int64_t d : op.ints_param("lhs_contracting"))
    if (d >= 0 && d < static_cast<int64_t>(lhs.size())) contracted = saturating_mul(contracted, lhs[static_cast<size_t>(d)]);
  return {saturating_mul(2, saturating_mul(result_elements(op), contracted)), 0};
}

// addupdate %ref[...], %value: one add per element of the value.
OpCost addupdate(const Op& op) { return {num_elements(op.main_operand(1).type().shape()), 0}; }

CostRule family_rule(const Primitive& p) {
  switch (p.family) {
    case Family::elementwise: return &elementwise;
    case Family::reduction: return &reduction;
    default: return &no_cost;
  }
}

}  // namespace

std::string figures_str(const CostFigures& f) {
  return "flops " + std::to_string(f.flops) + ", transcendentals " + std::to_string(f.transcendentals) + ", bytes in " +
         std::to_string(f.bytes_in) + ", out " + std::to_string(f.bytes_out) + ", dma " + std::to_string(f.bytes_dma);
}

std::string cost_scope_name(const Op& op) {
  std::string name = op.name();
  if (op.has_param("kernel")) name += " @" + op.body_param("kernel")->name();
  if (op.loc.known()) name += " (line " + std::to_string(op.loc.line) + ")";
  return name;
}

const RuleTable<CostRule>& cost_rules() {
  static const RuleTable<CostRule> table = [] {
    RuleTable<CostRule> t("cost");
    for (const Primitive* p : registry().all()) t.set(p->name, family_rule(*p));
    // multiple_of is a hint (Pallas family, no work); these have rules of their own.
    t.set("cumsum", &cumsum);
    t.set("dot_general", &dot_general);
    t.set("addupdate", &addupdate);
    return t;
  }();
  return table;
}
const RuleTableRegistration kRegistered("cost.op", cost_rules);

OpCost op_cost(const Op& op) {
  const CostRule* rule = cost_rules().find(*op.prim);
  return (rule ? *rule : family_rule(*op.prim))(op);
}

}  // namespace tessera
