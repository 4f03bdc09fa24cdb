#include "transforms/kernel_split.h"

#include "ir/clone.h"
#include "ir/effects.h"
#include "ir/primitive.h"

namespace tessera {
namespace {

bool insert(KernelTaint& t, const Var* v) { return t.vars.insert(v).second; }

// A cond whose branch index is known: branch parameter p is operand p + 1 and
// branch output r is result r, so taint flows in and out position by position.
bool is_splittable_cond(const Op& op, const KernelTaint& t) { return op.prim->name == "cond" && !t.has(op.operands[0]); }
// A for loop with known bounds: operands (lo, hi, consts..., carries...), body
// parameters (i, consts..., carries...), body outputs and results the carries.
bool is_splittable_for(const Op& op, const KernelTaint& t) {
  return op.prim->name == "for" && !t.has(op.operands[0]) && !t.has(op.operands[1]);
}
bool is_splittable(const Op& op, const KernelTaint& t) { return is_splittable_cond(op, t) || is_splittable_for(op, t); }

bool propagate(const Body& b, KernelTaint& t);

// Carry r is tainted when its initial value or its next value is; the caller's
// fixpoint takes the next value's taint back to the carry parameter.
bool propagate_for(const Op& op, KernelTaint& t) {
  const BodyPtr& body = op.body_param("body");
  const auto& params = body->params();
  size_t nc = static_cast<size_t>(op.int_param("num_consts"));
  bool grew = false;
  for (size_t p = 1; p < params.size(); ++p)
    if (t.has(op.operands[p + 1])) grew |= insert(t, params[p]);
  grew |= propagate(*body, t);
  for (size_t c = 1; c <= nc; ++c)  // a Ref constant the body writes taint into
    if (t.has(params[c]) && op.operands[c + 1].is_var()) grew |= insert(t, op.operands[c + 1].var());
  for (size_t r = 0; r < op.results.size(); ++r)
    if (t.has(body->outputs()[r]) || t.has(params[1 + nc + r])) {
      grew |= insert(t, params[1 + nc + r]);
      grew |= insert(t, op.results[r]);
    }
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
    if (is_splittable_for(op, t)) {
      grew |= propagate_for(op, t);
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
  for (Var* r : op.results)
    if (!t.has(r)) {
      Var* nr = dst.new_var(r->type, r->name, r->loc);
      c.results.push_back(nr);
      map[r] = nr;
    }
  return c;
}

// The loop over the untainted constants and carries, its body restricted.
Op restrict_for(const Op& op, Body& dst, const KernelTaint& t, ValueMap& map) {
  const BodyPtr& body = op.body_param("body");
  int64_t nc = op.int_param("num_consts"), kept_consts = 0;
  Op l;
  l.prim = op.prim;
  l.loc = op.loc;
  l.params = op.params;
  BodyPtr nb = make_body(body->name(), body->kind());
  nb->set_loc(body->loc());
  const auto& params = body->params();
  map[params[0]] = nb->add_param(params[0]->type, params[0]->name, params[0]->loc);
  l.operands = {remap(op.operands[0], map), remap(op.operands[1], map)};
  for (size_t p = 1; p < params.size(); ++p) {
    if (t.has(params[p])) continue;
    map[params[p]] = nb->add_param(params[p]->type, params[p]->name, params[p]->loc);
    l.operands.push_back(remap(op.operands[p + 1], map));
    kept_consts += static_cast<int64_t>(p) <= nc;
  }
  restrict_ops(*body, *nb, t, map);
  std::vector<Value> outs;
  for (size_t r = 0; r < op.results.size(); ++r)
    if (!t.has(op.results[r])) outs.push_back(remap(body->outputs()[r], map));
  nb->set_outputs(std::move(outs));
  for (NamedParam& p : l.params) {
    if (p.name == "body") p.value = nb;
    if (p.name == "num_consts") p.value = kept_consts;
  }
  for (Var* r : op.results)
    if (!t.has(r)) {
      Var* nr = dst.new_var(r->type, r->name, r->loc);
      l.results.push_back(nr);
      map[r] = nr;
    }
  return l;
}

void restrict_ops(const Body& src, Body& dst, const KernelTaint& t, ValueMap& map) {
  for (const Op& op : src.ops()) {
    bool any = false;
    for (const Value& v : op.operands) any |= t.has(v);
    if (any && is_splittable(op, t)) {
      dst.ops().push_back(is_splittable_cond(op, t) ? restrict_cond(op, dst, t, map) : restrict_for(op, dst, t, map));
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
