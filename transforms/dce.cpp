// Dead code elimination.
//
// A backward sweep over each body: an op is kept when one of its results is
// used or when it has a side effect (has_side_effects in ir/effects.h: writes,
// accumulations, I/O and comms are never dropped). Nested bodies are swept too,
// and a body is rebuilt only when something in it changed, so untouched bodies
// stay shared.
//
// Per-primitive rules (RuleTable "dce") shrink higher-order ops:
//   cond      unused results are removed from every branch, then operands no
//             branch reads any more are dropped;
//   for,
//   while     a carry whose result is unused and that the live part of the body
//             (and, for while, the cond) never reads is removed, to a fixpoint;
//             unused constants are dropped;
//   scan      as for, plus unused stacked outputs (ys) and unread xs.
// Other ops keep their signature; only their nested bodies are swept.
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "ir/builder.h"
#include "ir/clone.h"
#include "ir/control_views.h"
#include "ir/primitive.h"
#include "transforms/pass.h"
#include "transforms/var_table.h"

namespace tessera {
namespace {

using Mask = std::vector<char>;

// A replacement for an op: `op` uses operands of the original body; its
// results are created when the body is rebuilt. result_map[i] is the new result
// index of old result i, or -1 when it was removed.
struct Rewrite {
  Op op;
  std::vector<int> result_map;
};

class Dce;
using DceRule = std::function<std::optional<Rewrite>(const Op&, const Mask& used, Dce&)>;

class Dce {
 public:
  // `b` with dead ops removed; the same pointer when nothing changed.
  BodyPtr simplify(const BodyPtr& b) {
    auto it = memo_.find(b.get());
    if (it != memo_.end()) return it->second;
    Mask all_out(b->outputs().size(), 1), all_params(b->params().size(), 1);
    BodyPtr r = shrink(*b, all_out, all_params, nullptr);
    if (!r) r = b;
    memo_[b.get()] = r;
    return r;
  }

  // Sweeps `b` keeping the outputs in keep_out. Fills `params_used` (if given)
  // with the parameters the live ops and kept outputs read. Returns a new body
  // with only keep_out outputs and keep_params parameters (the caller drops only
  // unused ones), or null when it would equal `b`.
  // Memoized: the rules ask about a nested body more than once (a cond's
  // branches once for the parameters they read, once to rebuild; a loop body
  // once per fixpoint round), and each walk would ask its own nested bodies
  // again, making the pass exponential in the nesting depth.
  BodyPtr shrink(const Body& b, const Mask& keep_out, const Mask& keep_params, Mask* params_used);

 private:
  struct Shrunk {
    BodyPtr body;
    Mask params_used;
  };
  BodyPtr shrink_once(const Body& b, const Mask& keep_out, const Mask& keep_params, Mask* params_used);
  std::unordered_map<const Body*, BodyPtr> memo_;
  std::unordered_map<std::string, Shrunk> shrunk_;  // key: body address, keep_out, keep_params
};

const RuleTable<DceRule>& dce_rules();

bool has_nested(const Op& op) {
  for (const NamedParam& p : op.params)
    if (std::holds_alternative<BodyPtr>(p.value) || std::holds_alternative<std::vector<BodyPtr>>(p.value)) return true;
  return false;
}

// Op with its nested bodies swept; nullopt when none changed.
std::optional<Op> sweep_nested(const Op& op, Dce& dce) {
  bool changed = false;
  Params params = op.params;
  for (NamedParam& p : params) {
    if (auto* b = std::get_if<BodyPtr>(&p.value); b && *b) {
      BodyPtr nb = dce.simplify(*b);
      if (nb != *b) *b = nb, changed = true;
    } else if (auto* bs = std::get_if<std::vector<BodyPtr>>(&p.value)) {
      for (BodyPtr& x : *bs) {
        if (!x) continue;
        BodyPtr nb = dce.simplify(x);
        if (nb != x) x = nb, changed = true;
      }
    }
  }
  if (!changed) return std::nullopt;
  Op copy;
  copy.prim = op.prim;
  copy.operands = op.operands;
  copy.params = std::move(params);
  copy.indexers = op.indexers;
  copy.loc = op.loc;
  return copy;
}

BodyPtr Dce::shrink(const Body& b, const Mask& keep_out, const Mask& keep_params, Mask* params_used) {
  std::string key(reinterpret_cast<const char*>(&b), sizeof(&b));
  key.append(keep_out.begin(), keep_out.end());
  key += '|';
  key.append(keep_params.begin(), keep_params.end());
  auto it = shrunk_.find(key);
  if (it == shrunk_.end()) {
    Shrunk s;
    s.body = shrink_once(b, keep_out, keep_params, &s.params_used);
    it = shrunk_.emplace(std::move(key), std::move(s)).first;
  }
  if (params_used) *params_used = it->second.params_used;
  return it->second.body;
}

BodyPtr Dce::shrink_once(const Body& b, const Mask& keep_out, const Mask& keep_params, Mask* params_used) {
  const auto& ops = b.ops();
  // One table serves both phases: during the sweep a key present is a live
  // Var; the rebuild then maps old Vars to new ones in the same table (a null
  // value: not mapped), so a large body pays for one table, not two.
  VarTable<Var*> live(ops.size() + b.params().size() + 8);
  for (size_t i = 0; i < b.outputs().size(); ++i)
    if (keep_out[i] && b.outputs()[i].is_var()) live.insert(b.outputs()[i].var(), nullptr);

  std::vector<char> keep(ops.size(), 0);
  std::unordered_map<size_t, Rewrite> rewrites;  // sparse: most ops are copied as they are
  bool changed = false;
  Mask used;
  for (size_t k = ops.size(); k-- > 0;) {
    const Op& op = ops[k];
    bool any_used = false;
    used.assign(op.results.size(), 0);
    for (size_t r = 0; r < op.results.size(); ++r)
      if (live.contains(op.results[r])) used[r] = 1, any_used = true;
    if (!any_used && !has_side_effects(op)) {
      changed = true;
      continue;
    }
    keep[k] = 1;
    const Op* effective = &op;
    std::optional<Rewrite> rw;
    if (const DceRule* rule = dce_rules().find(*op.prim)) {
      rw = (*rule)(op, used, *this);
    } else if (has_nested(op)) {
      if (auto swept = sweep_nested(op, *this)) {
        rw = Rewrite{std::move(*swept), {}};
        for (size_t r = 0; r < op.results.size(); ++r) rw->result_map.push_back(static_cast<int>(r));
      }
    }
    if (rw) effective = &rewrites.emplace(k, std::move(*rw)).first->second.op, changed = true;
    for (const Value& v : effective->operands)
      if (v.is_var()) live.insert(v.var(), nullptr);
  }
  if (params_used) {
    params_used->assign(b.params().size(), 0);
    for (size_t p = 0; p < b.params().size(); ++p) (*params_used)[p] = live.contains(b.params()[p]);
  }
  for (char c : keep_out) changed |= !c;
  for (char c : keep_params) changed |= !c;
  if (!changed) return nullptr;

  BodyPtr nb = make_body(b.name(), b.kind());
  nb->set_loc(b.loc());
  size_t kept = 0;
  for (char c : keep) kept += c;
  nb->ops().reserve(kept);
  VarToVar& map = live;
  for (size_t p = 0; p < b.params().size(); ++p)
    if (keep_params[p]) map[b.params()[p]] = nb->add_param(b.params()[p]->type, b.params()[p]->name, b.params()[p]->loc);
  Builder builder(*nb);
  for (size_t k = 0; k < ops.size(); ++k) {
    if (!keep[k]) continue;
    const Op& op = ops[k];
    if (auto it = rewrites.find(k); it != rewrites.end()) {
      Rewrite& rw = it->second;
      std::vector<Value> operands;
      for (const Value& v : rw.op.operands) operands.push_back(remap(v, map));
      builder.set_loc(op.loc);
      std::vector<Var*> made = builder.create(*rw.op.prim, std::move(operands), rw.op.params, rw.op.indexers);
      for (size_t r = 0; r < op.results.size(); ++r) {
        int nr = rw.result_map[r];
        if (nr < 0) continue;
        made[nr]->name = op.results[r]->name;
        map[op.results[r]] = made[nr];
      }
      continue;
    }
    copy_op(op, *nb, map);
  }
  std::vector<Value> outs;
  for (size_t i = 0; i < b.outputs().size(); ++i)
    if (keep_out[i]) outs.push_back(remap(b.outputs()[i], map));
  nb->set_outputs(std::move(outs));
  return nb;
}

// ---- rules ------------------------------------------------------------------------

Op copy_header(const Op& op) {
  Op c;
  c.prim = op.prim;
  c.params = op.params;
  c.loc = op.loc;
  return c;
}

std::optional<Rewrite> cond_rule(const Op& op, const Mask& used, Dce& dce) {
  const auto& branches = op.param(keys::branches);
  size_t nargs = op.operands.size() - 1;
  Mask all_params(nargs, 1), any_read(nargs, 0), pu;
  for (const BodyPtr& br : branches) {
    dce.shrink(*br, used, all_params, &pu);
    for (size_t i = 0; i < nargs; ++i) any_read[i] |= pu[i];
  }
  std::vector<BodyPtr> nbs;
  bool changed = false;
  for (const BodyPtr& br : branches) {
    BodyPtr nb = dce.shrink(*br, used, any_read, nullptr);
    changed |= nb != nullptr;
    nbs.push_back(nb ? nb : br);
  }
  if (!changed) return std::nullopt;
  Rewrite rw{copy_header(op), {}};
  rw.op.set(keys::branches, nbs);
  rw.op.operands.push_back(op.operands[0]);
  for (size_t i = 0; i < nargs; ++i)
    if (any_read[i]) rw.op.operands.push_back(op.operands[1 + i]);
  int next = 0;
  for (char u : used) rw.result_map.push_back(u ? next++ : -1);
  return rw;
}

// Shared by for / while / scan: which carries stay, as a fixpoint over the
// body (and cond) reads. `carry_param0` is the body parameter of carry 0,
// `carry_out0` the body output of carry 0; `extra_outs` marks other outputs
// kept (scan's ys).
Mask live_carries(const std::vector<const Body*>& bodies, const std::vector<int>& carry_param0, int carry_out0,
                  int num_carry, Mask keep_carry, const Mask& extra_outs, Dce& dce) {
  while (true) {
    bool grew = false;
    for (size_t bi = 0; bi < bodies.size(); ++bi) {
      const Body& b = *bodies[bi];
      Mask keep_out(b.outputs().size(), 0), pu;
      if (bi == 0) {
        for (int c = 0; c < num_carry; ++c) keep_out[carry_out0 + c] = keep_carry[c];
        for (size_t i = 0; i < extra_outs.size(); ++i) keep_out[i] |= extra_outs[i];
      } else {
        keep_out.assign(b.outputs().size(), 1);  // a while's cond
      }
      Mask all_params(b.params().size(), 1);
      dce.shrink(b, keep_out, all_params, &pu);
      for (int c = 0; c < num_carry; ++c)
        if (pu[carry_param0[bi] + c] && !keep_carry[c]) keep_carry[c] = 1, grew = true;
    }
    if (!grew) return keep_carry;
  }
}

std::optional<Rewrite> for_rule(const Op& op, const Mask& used, Dce& dce) {
  const Body& body = *op.param(keys::body);
  ForView view(op);
  int k = view.num_consts;
  int nc = view.num_carries;
  Mask keep_carry = live_carries({&body}, {1 + k}, 0, nc, used, {}, dce);
  // Which constants does the live body read?
  Mask keep_out(keep_carry), pu, keep_params(body.params().size(), 1);
  dce.shrink(body, keep_out, keep_params, &pu);
  for (int i = 0; i < k; ++i) keep_params[1 + i] = pu[1 + i];
  for (int c = 0; c < nc; ++c) keep_params[1 + k + c] = keep_carry[c];
  BodyPtr nb = dce.shrink(body, keep_out, keep_params, nullptr);
  if (!nb) return std::nullopt;
  Rewrite rw{copy_header(op), {}};
  rw.op.set(keys::body, nb);
  int new_k = 0;
  for (int i = 0; i < k; ++i) new_k += keep_params[1 + i];
  rw.op.set(keys::num_consts, int64_t{new_k});
  rw.op.operands = {op.operands[0], op.operands[1]};
  for (int i = 0; i < k; ++i)
    if (keep_params[1 + i]) rw.op.operands.push_back(op.operands[2 + i]);
  int next = 0;
  for (int c = 0; c < nc; ++c) {
    if (keep_carry[c]) rw.op.operands.push_back(op.operands[2 + k + c]);
    rw.result_map.push_back(keep_carry[c] ? next++ : -1);
  }
  return rw;
}

std::optional<Rewrite> while_rule(const Op& op, const Mask& used, Dce& dce) {
  const Body& body = *op.param(keys::body);
  const Body& cond = *op.param(keys::cond);
  WhileView view(op);
  int k = view.num_consts;
  int nc = view.num_carries;
  Mask keep_carry = live_carries({&body, &cond}, {k, k}, 0, nc, used, {}, dce);
  Mask pu_body, pu_cond, all_b(body.params().size(), 1), all_c(cond.params().size(), 1), cond_out(1, 1);
  dce.shrink(body, keep_carry, all_b, &pu_body);
  dce.shrink(cond, cond_out, all_c, &pu_cond);
  Mask keep_params(body.params().size(), 1);
  for (int i = 0; i < k; ++i) keep_params[i] = pu_body[i] || pu_cond[i];
  for (int c = 0; c < nc; ++c) keep_params[k + c] = keep_carry[c];
  BodyPtr nb = dce.shrink(body, keep_carry, keep_params, nullptr);
  BodyPtr ncnd = dce.shrink(cond, cond_out, keep_params, nullptr);
  if (!nb && !ncnd) return std::nullopt;
  Rewrite rw{copy_header(op), {}};
  rw.op.set(keys::body, nb ? nb : op.param(keys::body));
  rw.op.set(keys::cond, ncnd ? ncnd : op.param(keys::cond));
  int new_k = 0;
  for (int i = 0; i < k; ++i)
    if (keep_params[i]) rw.op.operands.push_back(op.operands[i]), ++new_k;
  rw.op.set(keys::num_consts, int64_t{new_k});
  int next = 0;
  for (int c = 0; c < nc; ++c) {
    if (keep_carry[c]) rw.op.operands.push_back(op.operands[k + c]);
    rw.result_map.push_back(keep_carry[c] ? next++ : -1);
  }
  return rw;
}

std::optional<Rewrite> scan_rule(const Op& op, const Mask& used, Dce& dce) {
  const Body& body = *op.param(keys::body);
  ScanView view(op);
  int k = view.num_consts;
  int nc = view.num_carries;
  int nx = view.num_xs;
  int ny = static_cast<int>(body.outputs().size()) - nc;
  Mask used_carry(used.begin(), used.begin() + nc);
  Mask extra(body.outputs().size(), 0);
  for (int y = 0; y < ny; ++y) extra[nc + y] = used[nc + y];
  Mask keep_carry = live_carries({&body}, {k}, 0, nc, used_carry, extra, dce);
  Mask keep_out = extra;
  for (int c = 0; c < nc; ++c) keep_out[c] = keep_carry[c];
  Mask pu, keep_params(body.params().size(), 1);
  dce.shrink(body, keep_out, keep_params, &pu);
  for (int i = 0; i < k; ++i) keep_params[i] = pu[i];
  for (int c = 0; c < nc; ++c) keep_params[k + c] = keep_carry[c];
  for (int x = 0; x < nx; ++x) keep_params[k + nc + x] = pu[k + nc + x];
  BodyPtr nb = dce.shrink(body, keep_out, keep_params, nullptr);
  if (!nb) return std::nullopt;
  Rewrite rw{copy_header(op), {}};
  rw.op.set(keys::body, nb);
  int new_k = 0, new_c = 0;
  for (int i = 0; i < k; ++i)
    if (keep_params[i]) rw.op.operands.push_back(op.operands[i]), ++new_k;
  for (int c = 0; c < nc; ++c)
    if (keep_carry[c]) rw.op.operands.push_back(op.operands[k + c]), ++new_c;
  for (int x = 0; x < nx; ++x)
    if (keep_params[k + nc + x]) rw.op.operands.push_back(op.operands[k + nc + x]);
  rw.op.set(keys::num_consts, int64_t{new_k});
  rw.op.set(keys::num_carry, int64_t{new_c});
  int next = 0;
  for (int c = 0; c < nc; ++c) rw.result_map.push_back(keep_carry[c] ? next++ : -1);
  for (int y = 0; y < ny; ++y) rw.result_map.push_back(used[nc + y] ? next++ : -1);
  return rw;
}

const RuleTable<DceRule>& dce_rules() {
  static const RuleTable<DceRule> table = [] {
    RuleTable<DceRule> t("dce");
    t.set("cond", cond_rule);
    t.set("for", for_rule);
    t.set("while", while_rule);
    t.set("scan", scan_rule);
    t.set_default("kept when a result is used or it has effects (its nested bodies swept), dropped otherwise");
    return t;
  }();
  return table;
}
const RuleTableRegistration kRegistered("dce", dce_rules);

}  // namespace

BodyPtr dce_body(const BodyPtr& b) {
  Dce dce;
  return dce.simplify(b);
}

Module dce_pass(const Module& m, const PassOptions& o) {
  if (o.has("func")) entry_function(m, o, "dce");  // must exist; every symbol is simplified
  Dce dce;
  Module out;
  // One memo for the whole module: a symbol and every call site naming it get
  // the same replacement body.
  for (const BodyPtr& s : m.symbols()) out.add(dce.simplify(s));
  return out;
}

}  // namespace tessera
