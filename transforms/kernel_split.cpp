#include "transforms/kernel_split.h"

#include <optional>

#include "ir/clone.h"
#include "ir/effects.h"
#include "ir/primitive.h"

namespace tessera {
namespace {

bool insert(KernelTaint& t, const Var* v) { return t.vars.insert(v).second; }

// A cond whose branch index is known: branch parameter p is operand p + 1 and
// branch output r is result r, so taint flows in and out position by position.
bool is_splittable_cond(const Op& op, const KernelTaint& t) { return op.prim->name == "cond" && !t.has(op.operands[0]); }

bool propagate(const Body& b, KernelTaint& t);

// Where a loop keeps what: operand operand0 + k feeds parameter param0 + k of
// each body; parameters are (consts..., carries..., xs...) after param0 (`for`
// has its induction variable first); `body` returns (carries..., ys...), the
// op's results in that order.
//   for:   operands (lo, hi, consts..., carries...), body (i, consts..., carries...)
//   while: operands (consts..., carries...), cond and body (consts..., carries...)
//   scan:  operands (consts..., carries..., xs...), body (consts..., carries..., x slices...)
struct LoopShape {
  size_t operand0 = 0, param0 = 0;
  size_t num_consts = 0, num_carry = 0;
  std::vector<BodyPtr> bodies;  // every body that sees the operands (`body` last)
  const Body* pred = nullptr;   // while: the cond, whose output must stay untainted
};

std::optional<LoopShape> loop_shape(const Op& op) {
  const std::string& n = op.name();
  if (n != "for" && n != "while" && n != "scan") return std::nullopt;
  LoopShape s;
  s.num_consts = static_cast<size_t>(op.int_param("num_consts"));
  s.num_carry = n == "scan" ? static_cast<size_t>(op.int_param("num_carry")) : op.results.size();
  s.bodies = {op.body_param("body")};
  if (n == "for") s.operand0 = 2, s.param0 = 1;
  if (n == "while") {
    s.bodies.insert(s.bodies.begin(), op.body_param("cond"));
    s.pred = s.bodies[0].get();
  }
  return s;
}

// A loop is looked into while its trip count stays known: `for` bounds, the
// `while` predicate (a scan's length is a parameter).
bool is_splittable_loop(const Op& op, const KernelTaint& t) {
  std::optional<LoopShape> s = loop_shape(op);
  if (!s) return false;
  if (s->pred) return !t.has(s->pred->outputs()[0]);
  return op.name() == "scan" || (!t.has(op.operands[0]) && !t.has(op.operands[1]));
}

bool is_splittable(const Op& op, const KernelTaint& t) { return is_splittable_cond(op, t) || is_splittable_loop(op, t); }

// Carry r is tainted when its initial value or its next value is; the caller's
// fixpoint takes the next value's taint back to the carry parameters.
bool propagate_loop(const Op& op, KernelTaint& t) {
  LoopShape s = *loop_shape(op);
  const Body& body = *s.bodies.back();
  bool grew = false;
  for (const BodyPtr& b : s.bodies) {
    const auto& params = b->params();
    for (size_t p = s.param0; p < params.size(); ++p)
      if (t.has(op.operands[s.operand0 + p - s.param0])) grew |= insert(t, params[p]);
    grew |= propagate(*b, t);
    for (size_t c = 0; c < s.num_consts; ++c) {  // a Ref constant a body writes taint into
      const Value& operand = op.operands[s.operand0 + c];
      if (t.has(params[s.param0 + c]) && operand.is_var()) grew |= insert(t, operand.var());
    }
  }
  for (size_t r = 0; r < s.num_carry; ++r) {
    size_t p = s.param0 + s.num_consts + r;
    bool tainted = t.has(body.outputs()[r]);
    for (const BodyPtr& b : s.bodies) tainted |= t.has(b->params()[p]);
    if (!tainted) continue;
    for (const BodyPtr& b : s.bodies) grew |= insert(t, b->params()[p]);
    grew |= insert(t, op.results[r]);
  }
  for (size_t r = s.num_carry; r < op.results.size(); ++r)  // scan's stacked ys
    if (t.has(body.outputs()[r])) grew |= insert(t, op.results[r]);
  return grew;
}

bool propagate_cond(const Op& op, KernelTaint& t) {
  bool grew = false;
  for (const BodyPtr& br : op.bodies_param("branches")) {
    const auto& params = br->params();
    for (size_t p = 0; p < params.size(); ++p)
      if (t.has(op.operands[p + 1])) grew |= insert(t, params[p]);
    grew |= propagate(*br, t);
    for (size_t p = 0; p < params.size(); ++p)
      if (t.has(params[p]) && op.operands[p + 1].is_var()) grew |= insert(t, op.operands[p + 1].var());
    for (size_t r = 0; r < op.results.size(); ++r)
      if (t.has(br->outputs()[r])) grew |= insert(t, op.results[r]);
  }
  return grew;
}

// One sweep over `b`'s ops; true when the tainted set grew.
bool propagate(const Body& b, KernelTaint& t) {
  bool grew = false;
  for (const Op& op : b.ops()) {
    if (is_splittable_cond(op, t)) {
      grew |= propagate_cond(op, t);
      continue;
    }
    if (is_splittable_loop(op, t)) {
      grew |= propagate_loop(op, t);
      continue;
    }
    bool any = false;
    for (const Value& v : op.operands) any |= t.has(v);
    if (!any) continue;
    for (Var* r : op.results) grew |= insert(t, r);
    for (auto [operand, bits] : op_effects(op).on_operand)
      if ((bits & (kWrite | kAccum)) && op.operands[operand].is_var()) grew |= insert(t, op.operands[operand].var());
  }
  return grew;
}

void restrict_ops(const Body& src, Body& dst, const KernelTaint& t, ValueMap& map);

// The restricted copy `made` of `op` gets a fresh result in `dst` for each
// untainted result of `op`.
void add_untainted_results(const Op& op, Op& made, Body& dst, const KernelTaint& t, ValueMap& map) {
  for (Var* r : op.results)
    if (!t.has(r)) {
      Var* nr = dst.new_var(r->type, r->name, r->loc);
      made.results.push_back(nr);
      map[r] = nr;
    }
}

// The cond over the untainted operands, with each branch restricted alike.
Op restrict_cond(const Op& op, Body& dst, const KernelTaint& t, ValueMap& map) {
  Op c;
  c.prim = op.prim;
  c.loc = op.loc;
  c.params = op.params;
  c.operands.push_back(remap(op.operands[0], map));
  for (size_t i = 1; i < op.operands.size(); ++i)
    if (!t.has(op.operands[i])) c.operands.push_back(remap(op.operands[i], map));
  std::vector<BodyPtr> branches;
  for (const BodyPtr& br : op.bodies_param("branches")) {
    BodyPtr nb = make_body(br->name(), br->kind());
    nb->set_loc(br->loc());
    for (const Var* p : br->params())
      if (!t.has(p)) map[p] = nb->add_param(p->type, p->name, p->loc);
    restrict_ops(*br, *nb, t, map);
    std::vector<Value> outs;
    for (size_t r = 0; r < op.results.size(); ++r)
      if (!t.has(op.results[r])) outs.push_back(remap(br->outputs()[r], map));
    nb->set_outputs(std::move(outs));
    branches.push_back(std::move(nb));
  }
  for (NamedParam& p : c.params)
    if (p.name == "branches") p.value = std::move(branches);
  add_untainted_results(op, c, dst, t, map);
  return c;
}

// The loop over the untainted constants and carries, its bodies restricted.
Op restrict_loop(const Op& op, Body& dst, const KernelTaint& t, ValueMap& map) {
  LoopShape s = *loop_shape(op);
  const Body& body = *s.bodies.back();
  Op l;
  l.prim = op.prim;
  l.loc = op.loc;
  l.params = op.params;
  for (size_t k = 0; k < s.operand0; ++k) l.operands.push_back(remap(op.operands[k], map));
  int64_t kept_consts = 0, kept_carry = 0;
  for (size_t p = s.param0; p < body.params().size(); ++p) {
    if (t.has(body.params()[p])) continue;
    l.operands.push_back(remap(op.operands[s.operand0 + p - s.param0], map));
    size_t k = p - s.param0;
    kept_consts += k < s.num_consts;
    kept_carry += k >= s.num_consts && k < s.num_consts + s.num_carry;
  }
  std::vector<BodyPtr> restricted;
  for (const BodyPtr& b : s.bodies) {
    BodyPtr nb = make_body(b->name(), b->kind());
    nb->set_loc(b->loc());
    for (size_t p = 0; p < b->params().size(); ++p) {
      const Var* v = b->params()[p];  // kept when `body`'s parameter at p is (the induction variable always)
      if (p < s.param0 || !t.has(body.params()[p])) map[v] = nb->add_param(v->type, v->name, v->loc);
    }
    restrict_ops(*b, *nb, t, map);
    std::vector<Value> outs;
    if (b.get() == s.pred) outs.push_back(remap(b->outputs()[0], map));
    else
      for (size_t r = 0; r < op.results.size(); ++r)
        if (!t.has(op.results[r])) outs.push_back(remap(b->outputs()[r], map));
    nb->set_outputs(std::move(outs));
    restricted.push_back(std::move(nb));
  }
  for (NamedParam& p : l.params) {
    if (p.name == "body") p.value = restricted.back();
    if (p.name == "cond") p.value = restricted.front();
    if (p.name == "num_consts") p.value = kept_consts;
    if (p.name == "num_carry") p.value = kept_carry;
  }
  add_untainted_results(op, l, dst, t, map);
  return l;
}

void restrict_ops(const Body& src, Body& dst, const KernelTaint& t, ValueMap& map) {
  for (const Op& op : src.ops()) {
    bool any = false;
    for (const Value& v : op.operands) any |= t.has(v);
    if (any && is_splittable(op, t)) {
      dst.ops().push_back(is_splittable_cond(op, t) ? restrict_cond(op, dst, t, map) : restrict_loop(op, dst, t, map));
      continue;
    }
    if (!any) copy_op(op, dst, map);
  }
}

}  // namespace

KernelTaint kernel_taint(const Body& kernel, const std::vector<char>& tainted_params) {
  KernelTaint t;
  for (size_t p = 0; p < kernel.params().size(); ++p)
    if (tainted_params[p]) insert(t, kernel.params()[p]);
  while (propagate(kernel, t)) {
  }
  return t;
}

BodyPtr restrict_kernel(const Body& kernel, const KernelTaint& t, std::string name) {
  BodyPtr nk = make_body(std::move(name), kernel.kind());
  nk->set_loc(kernel.loc());
  ValueMap map;
  for (const Var* p : kernel.params())
    if (!t.has(p)) map[p] = nk->add_param(p->type, p->name, p->loc);
  restrict_ops(kernel, *nk, t, map);
  return nk;
}

}  // namespace tessera
