#include "transforms/kernel_split.h"

#include <array>
#include <optional>
#include <span>
#include <unordered_set>

#include "ir/builder.h"
#include "ir/clone.h"
#include "ir/control_views.h"
#include "ir/effects.h"
#include "ir/primitive.h"

namespace tessera {
namespace {

// `v` tainted by `op` (its result, or a Ref it writes), or, with `from`, by
// the value that flows into it (a loop carry, a branch's parameter or result).
bool insert(KernelTaint& t, const Var* v, const Op* op, const Value& from = Value()) {
  if (!t.vars.insert(v)) return false;
  if (op) t.cause.insert(v, {op, from.is_var() ? from.var() : nullptr});
  return true;
}

// A cond whose branch index is known: branch parameter p is operand p + 1 and
// branch output r is result r, so taint flows in and out position by position.
bool is_splittable_cond(const Op& op, const KernelTaint& t) {
  return op.prim->family == Family::control && op.prim->name == "cond" && !t.has(op.operands[0]);
}

// A run_scoped is a cond with one branch and no predicate: body parameter p
// is operand p (the scoped allocations follow), output r is result r.
bool is_scope(const Op& op) { return op.prim->family == Family::control && op.prim->name == "run_scoped"; }

using Branches = FedBodies;
Branches branches_of(const Op& op) { return fed_bodies(op); }

bool propagate(const Body& b, KernelTaint& t);

// sort with known keys: the known operands sorted alone give the same
// permutation, so their results stay known (jvp's sort carries the tangents
// as extra non-key operands).
std::optional<OperandSplit> sort_split(const Op& op, const std::vector<char>& unk) {
  for (int64_t k = 0; k < op.param(keys::num_keys); ++k)
    if (unk[k]) return std::nullopt;
  OperandSplit s;
  s.known_op.prim = op.prim;
  s.known_op.loc = op.loc;
  s.known_op.params = op.params;
  for (size_t i = 0; i < op.operands.size(); ++i)
    if (!unk[i]) {
      s.known_op.operands.push_back(op.operands[i]);
      s.known_results.push_back(static_cast<int>(i));
    }
  return s;
}

using OperandSplitRule = std::optional<OperandSplit> (*)(const Op&, const std::vector<char>&);

const RuleTable<OperandSplitRule>& operand_split_rules() {
  static const RuleTable<OperandSplitRule> t = [] {
    RuleTable<OperandSplitRule> r("operand split");
    r.set("sort", sort_split);
    r.set_default("not split by operands: it stays whole on one side");
    return r;
  }();
  return t;
}
const RuleTableRegistration kRegistered("kernel_split", operand_split_rules);

std::vector<char> tainted_operands(const Op& op, const KernelTaint& t) {
  std::vector<char> u(op.operands.size());
  for (size_t i = 0; i < u.size(); ++i) u[i] = t.has(op.operands[i]);
  return u;
}

// The op restricted to its untainted operands, when it has a rule for that
// (checked first: most ops have none, and this runs in every sweep).
std::optional<OperandSplit> split_untainted(const Op& op, const KernelTaint& t) {
  if (!operand_split_rules().find(*op.prim)) return std::nullopt;
  return split_by_operands(op, tainted_operands(op, t));
}

// A loop read through its view (ir/control_views.h): the operands that feed
// its bodies by role, and each body with the parameters they feed. Every body
// returns (carries..., ys...), the op's results in that order, but a while's
// cond, which returns its predicate.
struct Fed {
  const Body* body;
  const Var* index = nullptr;  // for: the induction variable
  LoopParts<Var*> params;
};

struct Loop {
  std::span<const Value> bounds;  // for: lo and hi; empty otherwise
  LoopParts<Value> operands;
  int num_carries = 0;
  std::vector<Fed> bodies;      // every body the operands feed (`body` last)
  const Body* pred = nullptr;   // while: the cond, whose output must stay untainted
};

std::optional<Loop> loop_of(const Op& op) {
  if (op.prim->family != Family::control) return std::nullopt;  // the common case, without comparing names
  const std::string& n = op.name();
  if (n == "for") {
    ForView v(op);
    return Loop{std::span<const Value>(op.operands).first(ForView::first_const), v.operands(), v.num_carries,
                {{&v.body(), v.index_param(), v.params()}}};
  }
  if (n == "while") {
    WhileView v(op);
    return Loop{{}, v.operands(), v.num_carries,
                {{&v.cond(), nullptr, v.cond_params()}, {&v.body(), nullptr, v.body_params()}},
                &v.cond()};
  }
  if (n == "scan") {
    ScanView v(op);
    return Loop{{}, v.operands(), v.num_carries, {{&v.body(), nullptr, v.params()}}};
  }
  return std::nullopt;
}

// The parts of a loop's operand or parameter list, in order.
template <class T>
std::array<std::span<const T>, 3> in_order(const LoopParts<T>& p) {
  return {p.consts, p.carries, p.xs};
}

// A loop is looked into while its trip count stays known: `for` bounds, the
// `while` predicate (a scan's length is a parameter).
bool is_splittable_loop(const Op& op, const KernelTaint& t) {
  std::optional<Loop> l = loop_of(op);
  if (!l) return false;
  if (l->pred) return !t.has(l->pred->outputs()[0]);
  for (const Value& b : l->bounds)
    if (t.has(b)) return false;
  return true;
}

bool is_splittable_branches(const Op& op, const KernelTaint& t) { return is_splittable_cond(op, t) || is_scope(op); }

bool is_splittable(const Op& op, const KernelTaint& t) { return is_splittable_branches(op, t) || is_splittable_loop(op, t); }

// Carry r is tainted when its initial value or its next value is; the caller's
// fixpoint takes the next value's taint back to the carry parameters.
bool propagate_loop(const Op& op, KernelTaint& t) {
  Loop l = *loop_of(op);
  const Body& body = *l.bodies.back().body;
  bool grew = false;
  for (const Fed& f : l.bodies) {
    auto operands = in_order(l.operands);
    auto params = in_order(f.params);
    for (size_t part = 0; part < operands.size(); ++part)
      for (size_t i = 0; i < operands[part].size(); ++i)
        if (t.has(operands[part][i])) grew |= insert(t, params[part][i], &op, operands[part][i]);
    grew |= propagate(*f.body, t);
    for (size_t c = 0; c < l.operands.consts.size(); ++c) {  // a Ref constant a body writes taint into
      const Value& operand = l.operands.consts[c];
      if (t.has(f.params.consts[c]) && operand.is_var()) grew |= insert(t, operand.var(), &op, Value(f.params.consts[c]));
    }
  }
  for (int r = 0; r < l.num_carries; ++r) {
    bool tainted = t.has(body.outputs()[r]);
    for (const Fed& f : l.bodies) tainted |= t.has(f.params.carries[r]);
    if (!tainted) continue;
    Value from = t.has(body.outputs()[r]) ? body.outputs()[r] : l.operands.carries[r];
    for (const Fed& f : l.bodies) grew |= insert(t, f.params.carries[r], &op, from);
    grew |= insert(t, op.results[r], &op, from);
  }
  for (size_t r = l.num_carries; r < op.results.size(); ++r)  // scan's stacked ys
    if (t.has(body.outputs()[r])) grew |= insert(t, op.results[r], &op, body.outputs()[r]);
  return grew;
}

// A cond with a known predicate, or a run_scoped: taint flows in and out
// position by position (a run_scoped's allocations have no operand).
bool propagate_branches(const Op& op, KernelTaint& t) {
  bool grew = false;
  Branches bs = branches_of(op);
  size_t first = bs.first_operand, num_fed = op.operands.size() - first;
  for (const BodyPtr& br : bs.bodies) {
    const auto& params = br->params();
    for (size_t p = 0; p < num_fed; ++p)
      if (t.has(op.operands[p + first])) grew |= insert(t, params[p], &op, op.operands[p + first]);
    grew |= propagate(*br, t);
    for (size_t p = 0; p < num_fed; ++p)
      if (t.has(params[p]) && op.operands[p + first].is_var())
        grew |= insert(t, op.operands[p + first].var(), &op, Value(params[p]));
    for (size_t r = 0; r < op.results.size(); ++r)
      if (t.has(br->outputs()[r])) grew |= insert(t, op.results[r], &op, br->outputs()[r]);
  }
  return grew;
}

// One sweep over `b`'s ops; true when the tainted set grew.
bool propagate(const Body& b, KernelTaint& t) {
  bool grew = false;
  for (const Op& op : b.ops()) {
    if (is_splittable_branches(op, t)) {
      grew |= propagate_branches(op, t);
      continue;
    }
    if (is_splittable_loop(op, t)) {
      grew |= propagate_loop(op, t);
      continue;
    }
    bool any = false;
    for (const Value& v : op.operands) any |= t.has(v);
    if (!any) continue;
    if (std::optional<OperandSplit> s = split_untainted(op, t)) {
      std::vector<char> known(op.results.size(), 0);
      for (int r : s->known_results) known[r] = 1;
      for (size_t r = 0; r < op.results.size(); ++r)
        if (!known[r]) grew |= insert(t, op.results[r], &op);
      continue;
    }
    for (Var* r : op.results) grew |= insert(t, r, &op);
    for (auto [operand, bits] : op_effects(op).on_operand)
      if ((bits & (kWrite | kAccum)) && op.operands[operand].is_var()) grew |= insert(t, op.operands[operand].var(), &op);
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

// The cond (or run_scoped) over the untainted operands, with each branch
// restricted alike (a run_scoped keeps its untainted allocations).
Op restrict_branches(const Op& op, Body& dst, const KernelTaint& t, ValueMap& map) {
  Op c;
  c.prim = op.prim;
  c.loc = op.loc;
  Branches bs = branches_of(op);
  if (bs.first_operand) c.operands.push_back(remap(op.operands[0], map));
  for (size_t i = bs.first_operand; i < op.operands.size(); ++i)
    if (!t.has(op.operands[i])) c.operands.push_back(remap(op.operands[i], map));
  std::vector<BodyPtr> branches;
  for (const BodyPtr& br : bs.bodies) {
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
  c.params = bs.first_operand ? params_with(op, {{"branches", std::move(branches)}})
                              : params_with(op, {{"body", std::move(branches.front())}});
  add_untainted_results(op, c, dst, t, map);
  return c;
}

// The loop over the untainted constants and carries, its bodies restricted.
// A parameter of any body stays when `body`'s parameter in its place does.
Op restrict_loop(const Op& op, Body& dst, const KernelTaint& t, ValueMap& map) {
  Loop l = *loop_of(op);
  auto kept = in_order(l.bodies.back().params);
  auto operands = in_order(l.operands);
  Op r;
  r.prim = op.prim;
  r.loc = op.loc;
  for (const Value& v : l.bounds) r.operands.push_back(remap(v, map));
  std::array<int64_t, 3> num_kept{};
  for (size_t part = 0; part < operands.size(); ++part)
    for (size_t i = 0; i < operands[part].size(); ++i)
      if (!t.has(kept[part][i])) r.operands.push_back(remap(operands[part][i], map)), ++num_kept[part];
  std::vector<BodyPtr> restricted;
  for (const Fed& f : l.bodies) {
    const Body& b = *f.body;
    BodyPtr nb = make_body(b.name(), b.kind());
    nb->set_loc(b.loc());
    auto add = [&](const Var* v) { map[v] = nb->add_param(v->type, v->name, v->loc); };
    if (f.index) add(f.index);
    auto params = in_order(f.params);
    for (size_t part = 0; part < params.size(); ++part)
      for (size_t i = 0; i < params[part].size(); ++i)
        if (!t.has(kept[part][i])) add(params[part][i]);
    restrict_ops(b, *nb, t, map);
    std::vector<Value> outs;
    if (&b == l.pred) outs.push_back(remap(b.outputs()[0], map));
    else
      for (size_t k = 0; k < op.results.size(); ++k)
        if (!t.has(op.results[k])) outs.push_back(remap(b.outputs()[k], map));
    nb->set_outputs(std::move(outs));
    restricted.push_back(std::move(nb));
  }
  r.params = params_with(op, {{"body", restricted.back()},
                              {"cond", restricted.front()},
                              {"num_consts", num_kept[0]},
                              {"num_carry", num_kept[1]}});
  add_untainted_results(op, r, dst, t, map);
  return r;
}

void restrict_ops(const Body& src, Body& dst, const KernelTaint& t, ValueMap& map) {
  for (const Op& op : src.ops()) {
    bool any = false;
    for (const Value& v : op.operands) any |= t.has(v);
    if (any && is_splittable(op, t)) {
      dst.ops().push_back(is_splittable_branches(op, t) ? restrict_branches(op, dst, t, map)
                                                        : restrict_loop(op, dst, t, map));
      continue;
    }
    if (!any) {
      copy_op(op, dst, map);
    } else if (std::optional<OperandSplit> s = split_untainted(op, t)) {
      Op& made = dst.ops().emplace_back(std::move(s->known_op));
      for (Value& v : made.operands) v = remap(v, map);
      add_untainted_results(op, made, dst, t, map);
    }
  }
}

}  // namespace

std::optional<OperandSplit> split_by_operands(const Op& op, const std::vector<char>& unknown_operands) {
  const OperandSplitRule* r = operand_split_rules().find(*op.prim);
  return r ? (*r)(op, unknown_operands) : std::nullopt;
}

FedBodies fed_bodies(const Op& op) {
  if (op.prim->family != Family::control) return {};
  if (op.prim->name == "run_scoped") return {{op.param(keys::body)}, 0};
  if (op.prim->name == "cond") return {op.param(keys::branches), 1};
  return {};
}

KernelTaint kernel_taint(const Body& kernel, const std::vector<char>& tainted_params) {
  KernelTaint t;
  for (size_t p = 0; p < kernel.params().size(); ++p)
    if (tainted_params[p]) insert(t, kernel.params()[p], nullptr);
  while (propagate(kernel, t)) {
  }
  return t;
}

const Op* where_mixed(const KernelTaint& t, const Var* v) {
  // A Ref met on the way (not `v` itself) that an op wrote taint into: if no
  // op mixes, that write is where the Ref came to hold both.
  const Op* shared_write = nullptr;
  // A walk over the causes, depth first in operand order; loop carries make
  // them cyclic, so each value is followed once.
  std::vector<const Var*> pending{v};
  std::unordered_set<const Var*> seen{v};
  auto follow = [&](const Var* x) {
    if (seen.insert(x).second) pending.push_back(x);
  };
  while (!pending.empty()) {
    const Var* u = pending.back();
    pending.pop_back();
    const KernelTaint::Cause* c = t.cause.find(u);
    if (!c) continue;  // a tainted parameter
    if (c->from) {
      follow(c->from);
      continue;
    }
    const Op& op = *c->op;
    if (u != v && u->type.is_ref() && !shared_write) shared_write = &op;
    if (op.prim->family == Family::control) return &op;  // taint from a nested body it does not split
    OpEffects e = op_effects(op);
    auto written = [&](size_t i) {
      for (auto [operand, bits] : e.on_operand)
        if (static_cast<size_t>(operand) == i && (bits & (kWrite | kAccum))) return true;
      return false;
    };
    std::vector<const Var*> next;
    for (size_t i = 0; i < op.operands.size(); ++i) {
      const Value& x = op.operands[i];
      if (!x.is_var() || written(i)) continue;
      if (t.has(x)) next.push_back(x.var());
      else if (is_float(x.type().dtype())) return &op;  // untainted data meets tainted data here
    }
    for (size_t i = next.size(); i-- > 0;) follow(next[i]);
  }
  return shared_write;
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
