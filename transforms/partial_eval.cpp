// Partial evaluation: split a function into the part computable from its
// known inputs and the part that must wait for the unknown ones.
//
//   partial_eval{known=0|2}   (input positions; `none` for no known input)
//   on entry F (default main; option func=) adds two functions, keeping F:
//     F_known(known inputs...)                -> (known outputs..., residuals...)
//     F_unknown(residuals..., unknown inputs...) -> (unknown outputs...)
//   An output is known when it does not depend on an unknown input. Residuals are
//   the known values the unknown part reads, in order of first use (a known
//   Ref parameter the unknown part uses is passed to F_unknown directly, as a
//   leading residual parameter, never returned).
//   Both parts are swept by dce.
//
// An op is unknown when any operand is. Per-primitive rules (RuleTable
// "partial_eval") refine that; the core_map rule follows
// jax/_src/pallas/core.py's `_core_map_partial_eval_custom` (all unknown ->
// staged; mixed -> staged: known Refs mixed with unknown ones belong to the
// staged computation) but for all operands known: JAX recomputes it in both
// parts ("full remat"), which run here one after the other on the same Refs,
// so its effects would happen twice (an addupdate adds twice); it runs in
// the known part only.
// pallas_call splits its kernel (kernel_split.h), sort its operands, and pmap
// its body: a known pmap computes the residuals, mapped along the axis, that
// an unknown pmap over the same axis reads. Other higher-order ops (cond,
// loops, call) are staged whole when any operand is unknown.
//
// linearize{wrt=...}: jvp (jvp_pass, other options passed on), then partial
// eval with the primal inputs known and the tangents unknown:
//     F_primal(primals...)                 -> (primal outputs..., residuals...)
//     F_tangent(residuals..., tangents...) -> (tangent outputs...)
// Every tangent output is placed in F_tangent, even one known to be zero
// (it is then forwarded as a residual), so F_tangent's signature is stable.
#include <optional>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "ir/builder.h"
#include "ir/clone.h"
#include "ir/grid_mapping.h"
#include "ir/primitive.h"
#include "transforms/ad_util.h"
#include "transforms/kernel_split.h"
#include "transforms/pass.h"
#include "transforms/var_table.h"

namespace tessera {
namespace {

enum class Placement { known, unknown, split };

// Where an output that could have been known became unknown: `op`, staged
// whole although some operands were known, and for a pallas_call, `inner`,
// the op of its kernel where primal and tangent values mix (kernel_split.h's
// where_mixed; null when it cannot say).
struct Lost {
  const Op* op = nullptr;
  const Op* inner = nullptr;
};

// A rule's verdict. For `split`, `known_op` computes the results listed in
// `known_results` (its result i is the op's result known_results[i]) from known
// operands only; the unknown part runs the whole op for the other results.
struct Decision {
  Placement place = Placement::unknown;
  Op known_op;
  std::vector<int> known_results;
  // A split whose unknown part is not the whole op (a pmap): `unknown_op`
  // computes the op's other results, in order, and may read `residuals`,
  // Vars that known_op computes after its known results; they cross to the
  // unknown part as residuals of the function. `owner` holds them.
  std::optional<Op> unknown_op;
  std::vector<Var*> residuals;
  BodyPtr owner;
  // Per result: where inside the op a result that could have been known
  // became unknown (what a linearize error names). Empty when it cannot say.
  std::vector<Lost> lost_inside;
};

Decision placed(Placement p) {
  Decision d;
  d.place = p;
  return d;
}

bool any_true(const std::vector<char>& v) {
  for (char c : v)
    if (c) return true;
  return false;
}

using PeRule = std::function<Decision(const Op&, const std::vector<char>& unknown_operands)>;

Decision core_map_rule(const Op&, const std::vector<char>& unk) {
  return placed(any_true(unk) ? Placement::unknown : Placement::known);  // see the top of the file
}

// pallas_call with known and unknown inputs: when some outputs do not depend
// on the unknown inputs (a jvp'd kernel's primal outputs), the known part runs
// a pallas_call restricted to the known inputs and those outputs; the unknown
// part runs the whole call (recomputing them) for the rest.
Decision pallas_call_rule(const Op& op, const std::vector<char>& unk) {
  GridMapping g = grid_mapping(op);
  Decision d;
  if (!any_true(unk)) return placed(Placement::known);
  for (int j = 0; j < g.num_dynamic + g.num_scalar_prefetch(); ++j)
    if (unk[j]) return d;  // grid sizes / scalar prefetch unknown: staged whole
  const Body& k = *g.kernel;
  std::vector<char> tainted(k.params().size(), 0);
  for (int i = 0; i < g.num_inputs(); ++i) tainted[g.input_param(i)] = unk[g.input_operand(i)];
  for (auto [i, o] : g.aliases)
    if (unk[g.input_operand(static_cast<int>(i))]) tainted[g.output_param(static_cast<int>(o))] = 1;
  KernelTaint t = kernel_taint(k, tainted);
  std::vector<char> known_out(g.num_outputs());
  bool some_known = false;
  d.lost_inside.assign(op.results.size(), Lost{});
  for (int o = 0; o < g.num_outputs(); ++o) {
    const Var* out = k.params()[g.output_param(o)];
    some_known |= known_out[o] = !t.has(out);
    if (!known_out[o]) d.lost_inside[o] = {&op, where_mixed(t, out)};
  }
  if (!some_known) return d;
  for (int i = 0; i < g.num_inputs(); ++i)
    if (op.operands[g.input_operand(i)].type().is_ref()) return d;  // in-place state: staged whole

  BodyPtr kernel = dce_body(restrict_kernel(k, t, k.name() + "_known"));

  std::vector<BlockSpec> in_specs, out_specs;
  std::vector<Type> out_shapes;
  std::vector<int> new_in(g.num_inputs(), -1), new_out(g.num_outputs(), -1);
  d.known_op.prim = op.prim;
  d.known_op.loc = op.loc;
  for (int j = 0; j < g.num_dynamic + g.num_scalar_prefetch(); ++j) d.known_op.operands.push_back(op.operands[j]);
  for (int i = 0; i < g.num_inputs(); ++i) {
    if (unk[g.input_operand(i)]) continue;
    new_in[i] = static_cast<int>(in_specs.size());
    in_specs.push_back(g.in_specs[i]);
    d.known_op.operands.push_back(op.operands[g.input_operand(i)]);
  }
  for (int o = 0; o < g.num_outputs(); ++o) {
    if (!known_out[o]) continue;
    new_out[o] = static_cast<int>(out_specs.size());
    out_specs.push_back(g.out_specs[o]);
    out_shapes.push_back(g.out_types[o]);
    d.known_results.push_back(o);
  }
  std::vector<Type> scratch;
  for (size_t s = 0; s < g.scratch_types.size(); ++s)
    if (!t.has(k.params()[g.scratch_param(static_cast<int>(s))])) scratch.push_back(g.scratch_types[s]);
  IntPairs aliases;
  for (auto [i, o] : g.aliases)
    if (new_in[i] >= 0 && new_out[o] >= 0) aliases.push_back({new_in[i], new_out[o]});
  d.known_op.params = params_with(op, {{"kernel", kernel},
                                       {"in_specs", in_specs},
                                       {"out_specs", out_specs},
                                       {"out_shapes", out_shapes},
                                       {"scratch", scratch},
                                       {"input_output_aliases", g.alias_param(aliases)}});
  d.place = Placement::split;
  return d;
}

// An op whose results depend on some operands only (sort with known keys:
// jvp's tangents ride along as extra operands): the known part runs it on the
// known operands, the unknown part the whole op (kernel_split.h's table).
Decision by_operands_rule(const Op& op, const std::vector<char>& unk) {
  if (!any_true(unk)) return placed(Placement::known);
  std::optional<OperandSplit> s = split_by_operands(op, unk);
  if (!s) return {};
  Decision d;
  d.place = Placement::split;
  d.known_op = std::move(s->known_op);
  d.known_results = std::move(s->known_results);
  return d;
}

Decision pmap_rule(const Op& op, const std::vector<char>& unk);

const RuleTable<PeRule>& pe_rules() {
  static const RuleTable<PeRule> t = [] {
    RuleTable<PeRule> r("partial_eval");
    r.set_default("known when all its operands are known, staged (unknown) otherwise");
    r.set("core_map", core_map_rule);
    r.set("pallas_call", pallas_call_rule);
    r.set("sort", by_operands_rule);
    r.set("pmap", pmap_rule);
    return r;
  }();
  return t;
}
const RuleTableRegistration kRegistered("partial_eval", pe_rules);

// The errors point at the function whose inputs `known` counts.
std::vector<char> parse_known(const PassOptions& o, const Body& f) {
  size_t n = f.params().size();
  std::vector<char> known(n, 0);
  if (!o.has("known")) throw Error(f.loc(), "partial_eval needs the option known=I|J|... (input positions), or known=none");
  std::string s = o.get("known");
  if (s == "none") return known;
  if (s == "all") return std::vector<char>(n, 1);
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, '|')) {
    size_t used = 0;
    int64_t i = -1;
    try {
      i = std::stoll(part, &used);
    } catch (...) {
      used = 0;
    }
    if (used != part.size() || part.empty() || i < 0 || i >= static_cast<int64_t>(n))
      throw Error(f.loc(), "partial_eval: known=" + s + ": '" + part + "' is not an input position of @" + f.name() +
                               (n ? " (0.." + std::to_string(n - 1) + ")" : " (it has no inputs)"));
    known[i] = 1;
  }
  return known;
}

// What to split: the known inputs, the outputs to place in the unknown part
// even if known, the names and kind of the two parts.
struct SplitRequest {
  std::vector<char> known_in, force_unknown_out;
  std::string known_name, unknown_name;
  BodyKind kind = BodyKind::func;
  bool explain_every_output = false;  // fill Split::lost_per_output
};

struct Split {
  BodyPtr known, unknown;
  // For the first output that is unknown although the caller wanted it known
  // (not forced): the op where it stopped being computable from the known
  // inputs, i.e. an op placed whole in the unknown part with known operands
  // too. Null when there is none.
  Lost lost_at;
  int lost_output = -1;
  // With explain_every_output: that op for every unknown output (null for
  // known outputs and where there is none).
  std::vector<Lost> lost_per_output;
  // The interface of the parts: which outputs went to the unknown part; the
  // Ref parameters the unknown part takes first (positions in f's
  // parameters); the residuals, each a parameter of f (its position) or a
  // value the known part computes (-1), in the order the known part returns
  // them after its known outputs and the unknown part takes them.
  std::vector<char> out_unknown;
  std::vector<int> ref_residual_params;
  std::vector<int> residual_params;
};

// The op, walking back from `v` through unknown values, where knowledge was
// lost: the first one met that is staged whole though some operands are known,
// or, for a result of a split op with a body (pmap), where it was lost inside.
Lost where_unknown(const Body& f, const Var* v, const VarSet& unknown, const std::vector<char>& mixed,
                   const std::unordered_map<size_t, std::vector<Lost>>& inside) {
  std::unordered_map<const Var*, size_t> def;
  for (size_t k = 0; k < f.ops().size(); ++k)
    for (const Var* r : f.ops()[k].results) def[r] = k;
  std::vector<const Var*> pending{v};
  std::unordered_set<const Var*> seen{v};
  while (!pending.empty()) {
    const Var* u = pending.back();
    pending.pop_back();
    auto it = def.find(u);
    if (it == def.end()) continue;  // an unknown parameter
    const Op& op = f.ops()[it->second];
    if (auto in = inside.find(it->second); in != inside.end())
      for (size_t r = 0; r < op.results.size(); ++r)
        if (op.results[r] == u && in->second[r].op) return in->second[r];
    if (mixed[it->second]) return {&op, nullptr};
    for (const Value& o : op.operands)
      if (o.is_var() && unknown.count(o.var()) && seen.insert(o.var()).second) pending.push_back(o.var());
  }
  return {};
}

// The Refs of a body and who writes them. A Ref an op makes from another
// (a Ref view) shares its root, so an effect on the view is one on the root.
class RefWrites {
 public:
  explicit RefWrites(const Body& f) {
    for (size_t k = 0; k < f.ops().size(); ++k) {
      const Op& op = f.ops()[k];
      const Var* base = nullptr;
      for (const Value& v : op.operands)
        if (!base && v.is_var() && v.type().is_ref()) base = root(v.var());
      for (const Var* r : op.results)
        if (base && r->type.is_ref()) root_[r] = base;
      for (auto [i, bits] : op_effects(op).on_operand)
        if ((bits & (kWrite | kAccum)) && op.operands[i].is_var()) last_write_[root(op.operands[i].var())] = k;
    }
  }
  const Var* root(const Var* v) const {
    auto it = root_.find(v);
    return it == root_.end() ? v : it->second;
  }
  // Whether an op after op k writes the Ref rooted at r.
  bool written_after(const Var* r, size_t k) const {
    auto it = last_write_.find(r);
    return it != last_write_.end() && it->second > k;
  }

 private:
  std::unordered_map<const Var*, const Var*> root_;
  std::unordered_map<const Var*, size_t> last_write_;
};

// Where each op of a body goes, given which Refs are tainted.
struct Placing {
  VarSet unknown;
  std::vector<Placement> place;
  std::vector<char> mixed;  // staged whole with some known operands
  std::unordered_map<size_t, Decision> splits;
  std::unordered_map<size_t, std::vector<Lost>> inside;  // the rules' lost_inside
};

// The known part runs before the unknown part, so an op placed there runs
// out of program order. For values that is harmless; for Refs it is not: a
// known read after an unknown write would miss it, and an unknown read before
// a known write would see it. So a Ref (its root) is tainted when an op
// placed in the unknown part writes it, or reads it while a later op writes
// it; every op that touches a tainted Ref is placed in the unknown part, in
// program order. Tainting may make more values unknown, hence the fixpoint.
// (JAX keeps the same order by treating a Ref an unknown value is written to
// as unknown: the state rules of jax/_src/state/discharge.py's partial eval.)
Placing place_ops(const Body& f, const std::vector<char>& known_in) {
  RefWrites refs(f);
  VarSet tainted;
  for (;;) {
    Placing p{VarSet(f.ops().size() + f.params().size() + 8), std::vector<Placement>(f.ops().size()),
              std::vector<char>(f.ops().size(), 0), {}, {}};
    for (size_t i = 0; i < f.params().size(); ++i)
      if (!known_in[i]) p.unknown.insert(f.params()[i]);
    bool newly_tainted = false;
    std::vector<char> unk;
    for (size_t k = 0; k < f.ops().size(); ++k) {
      const Op& op = f.ops()[k];
      unk.assign(op.operands.size(), 0);
      bool any = false;
      for (size_t i = 0; i < op.operands.size(); ++i) {
        const Value& v = op.operands[i];
        unk[i] = v.is_var() && (p.unknown.count(v.var()) || (v.type().is_ref() && tainted.count(refs.root(v.var()))));
        any |= unk[i];
      }
      Placement pl = any ? Placement::unknown : Placement::known;
      const Op* staged = pl == Placement::unknown ? &op : nullptr;  // what runs in the unknown part
      if (const PeRule* r = pe_rules().find(*op.prim)) {
        Decision d = (*r)(op, unk);
        pl = d.place;
        staged = pl == Placement::unknown ? &op : nullptr;
        if (!d.lost_inside.empty()) p.inside.emplace(k, std::move(d.lost_inside));
        if (pl == Placement::split) {
          std::vector<char> is_known(op.results.size(), 0);
          for (int kr : d.known_results) is_known[kr] = 1;
          for (size_t res = 0; res < op.results.size(); ++res)
            if (!is_known[res]) p.unknown.insert(op.results[res]);
          const Decision& split = p.splits.emplace(k, std::move(d)).first->second;
          staged = split.unknown_op ? &*split.unknown_op : &op;
        }
      }
      p.place[k] = pl;
      if (pl == Placement::unknown) {
        for (Var* r : op.results) p.unknown.insert(r);
        for (char u : unk) p.mixed[k] |= !u;
      }
      if (!staged) continue;
      for (auto [i, bits] : op_effects(*staged).on_operand) {
        const Value& v = staged->operands[i];
        if (!v.is_var()) continue;
        const Var* root = refs.root(v.var());
        bool reorders = (bits & (kWrite | kAccum)) || ((bits & kRead) && refs.written_after(root, k));
        if (reorders && tainted.insert(root)) newly_tainted = true;
      }
    }
    if (!newly_tainted) return p;
  }
}

Split partial_eval_body(const Body& f, const SplitRequest& req) {
  const std::vector<char>& known_in = req.known_in;
  const std::vector<char>& force_unknown_out = req.force_unknown_out;
  Placing placing = place_ops(f, known_in);
  VarSet& unknown = placing.unknown;
  auto is_unknown = [&](const Value& v) { return v.is_var() && unknown.count(v.var()); };
  std::vector<Placement>& place = placing.place;
  std::vector<char>& mixed = placing.mixed;
  std::unordered_map<size_t, Decision>& splits = placing.splits;
  std::unordered_map<size_t, std::vector<Lost>>& inside = placing.inside;
  // The operands of op k in the unknown part: a split's unknown op, or the op.
  auto unknown_operands = [&](size_t k) -> const std::vector<Value>& {
    if (place[k] == Placement::split)
      if (const std::optional<Op>& u = splits.at(k).unknown_op) return u->operands;
    return f.ops()[k].operands;
  };

  // Liveness per part, so dead ops are never built: first the unknown part
  // (from the unknown outputs), whose live ops decide the residuals, then the
  // known part (from the known outputs and the residuals).
  const auto& ops = f.ops();
  std::vector<char> out_unknown(f.outputs().size());
  for (size_t j = 0; j < f.outputs().size(); ++j) out_unknown[j] = is_unknown(f.outputs()[j]) || force_unknown_out[j];
  std::vector<char> keep_u(ops.size(), 0), keep_k(ops.size(), 0);
  // Each part's live set is later its renaming (old Var -> new Var; a null
  // value: live, not mapped), so a large body pays for one table per part.
  VarTable<Var*> live_u(ops.size() + f.params().size() + 8), live_k(ops.size() + f.params().size() + 8);
  {
    VarTable<Var*>& live = live_u;
    for (size_t j = 0; j < f.outputs().size(); ++j)
      if (out_unknown[j] && f.outputs()[j].is_var()) live.insert(f.outputs()[j].var(), nullptr);
    for (size_t k = ops.size(); k-- > 0;) {
      if (place[k] == Placement::known) continue;
      bool used = false;
      for (Var* r : ops[k].results) used |= unknown.count(r) && live.contains(r);
      if (!used && !has_side_effects(ops[k])) continue;
      keep_u[k] = 1;
      for (const Value& v : unknown_operands(k))
        if (v.is_var()) live.insert(v.var(), nullptr);
    }
  }

  // Residuals: known variables the live unknown part reads.
  std::vector<const Var*> residuals, ref_residuals;
  VarSet is_residual(ops.size() / 4 + f.params().size() + 8);
  auto need = [&](const Value& v) {
    if (!v.is_var() || unknown.count(v.var()) || !is_residual.insert(v.var())) return;
    (v.type().is_ref() ? ref_residuals : residuals).push_back(v.var());
  };
  for (size_t k = 0; k < ops.size(); ++k)
    if (keep_u[k])
      for (const Value& v : unknown_operands(k)) need(v);
  for (size_t j = 0; j < f.outputs().size(); ++j)
    if (force_unknown_out[j]) need(f.outputs()[j]);
  std::unordered_map<const Var*, int> param_index;
  for (size_t p = 0; p < f.params().size(); ++p) param_index[f.params()[p]] = static_cast<int>(p);
  auto param_of = [&](const Var* v) {
    auto it = param_index.find(v);
    return it == param_index.end() ? -1 : it->second;
  };
  for (const Var* r : ref_residuals)
    if (param_of(r) < 0)
      throw Error(f.loc(), "partial_eval: the unknown part needs the Ref %" + r->name +
                               " made in the known part; only Ref parameters can be shared (run discharge first)");
  {
    VarTable<Var*>& live = live_k;
    for (const Var* r : residuals) live.insert(r, nullptr);
    for (const Var* r : ref_residuals) live.insert(r, nullptr);
    for (size_t j = 0; j < f.outputs().size(); ++j)
      if (!out_unknown[j] && f.outputs()[j].is_var()) live.insert(f.outputs()[j].var(), nullptr);
    for (size_t k = ops.size(); k-- > 0;) {
      if (place[k] == Placement::unknown) continue;
      const Decision* d = place[k] == Placement::split ? &splits.at(k) : nullptr;
      bool used = false;
      for (Var* r : ops[k].results) used |= !unknown.count(r) && live.contains(r);
      if (d)
        for (Var* r : d->residuals) used |= live.contains(r);
      if (!used && (d || !has_side_effects(ops[k]))) continue;
      keep_k[k] = 1;
      for (const Value& v : d ? d->known_op.operands : ops[k].operands)
        if (v.is_var()) live.insert(v.var(), nullptr);
    }
  }

  // The known part.
  BodyPtr kb = make_body(req.known_name, req.kind);
  kb->set_loc(f.loc());
  size_t nk = 0, nu = 0;
  for (size_t k = 0; k < ops.size(); ++k) nk += keep_k[k], nu += keep_u[k];
  kb->ops().reserve(nk);
  VarToVar& kmap = live_k;
  for (size_t p = 0; p < f.params().size(); ++p)
    if (known_in[p]) kmap[f.params()[p]] = kb->add_param(f.params()[p]->type, f.params()[p]->name, f.params()[p]->loc);
  for (size_t k = 0; k < f.ops().size(); ++k) {
    if (!keep_k[k]) continue;
    if (place[k] == Placement::split) {
      const Decision& d = splits.at(k);
      Builder kbld(*kb);
      kbld.set_loc(d.known_op.loc);
      std::vector<Value> operands;
      for (const Value& v : d.known_op.operands) operands.push_back(remap(v, kmap));
      std::vector<Var*> made = kbld.create(*d.known_op.prim, operands, d.known_op.params);
      for (size_t i = 0; i < made.size(); ++i) {
        Var* orig = i < d.known_results.size() ? f.ops()[k].results[d.known_results[i]] : d.residuals[i - d.known_results.size()];
        made[i]->name = orig->name;
        kmap[orig] = made[i];
      }
    } else {
      copy_op(f.ops()[k], *kb, kmap);
    }
  }

  std::vector<Value> kouts;
  for (size_t j = 0; j < f.outputs().size(); ++j)
    if (!out_unknown[j]) kouts.push_back(remap(f.outputs()[j], kmap));
  for (const Var* r : residuals) kouts.push_back(remap(Value(const_cast<Var*>(r)), kmap));
  kb->set_outputs(std::move(kouts));

  // The unknown part.
  BodyPtr ub = make_body(req.unknown_name, req.kind);
  ub->set_loc(f.loc());
  ub->ops().reserve(nu);
  VarToVar& umap = live_u;
  for (const Var* r : ref_residuals) umap[r] = ub->add_param(r->type, r->name, r->loc);
  for (const Var* r : residuals) umap[r] = ub->add_param(r->type, r->name.empty() ? "res" : r->name, r->loc);
  for (size_t p = 0; p < f.params().size(); ++p)
    if (!known_in[p]) umap[f.params()[p]] = ub->add_param(f.params()[p]->type, f.params()[p]->name, f.params()[p]->loc);
  for (size_t k = 0; k < f.ops().size(); ++k) {
    if (!keep_u[k]) continue;
    if (place[k] != Placement::split) {
      copy_op(f.ops()[k], *ub, umap);
      continue;
    }
    if (const std::optional<Op>& u = splits.at(k).unknown_op) {
      // Its own op for the unknown results, reading residuals of the known op.
      Builder ubld(*ub);
      ubld.set_loc(u->loc);
      std::vector<Value> operands;
      for (const Value& v : u->operands) operands.push_back(remap(v, umap));
      std::vector<Var*> made = ubld.create(*u->prim, operands, u->params);
      size_t i = 0;
      for (Var* r : f.ops()[k].results)
        if (unknown.count(r)) {
          made[i]->name = r->name;
          umap[r] = made[i++];
        }
      continue;
    }
    // The whole op; its known results come from the known part (residuals).
    std::vector<std::pair<const Var*, Var*>> saved;
    for (Var* r : f.ops()[k].results) {
      Var* const* it = umap.find(r);
      if (!unknown.count(r) && it && *it) saved.emplace_back(r, *it);
    }
    copy_op(f.ops()[k], *ub, umap);
    // Unmapping a Var is mapping it to itself (remap leaves an absent Var as is).
    for (Var* r : f.ops()[k].results)
      if (!unknown.count(r)) umap[r] = r;
    for (auto& [r, v] : saved) umap[r] = v;
  }
  std::vector<Value> uouts;
  for (size_t j = 0; j < f.outputs().size(); ++j)
    if (out_unknown[j]) uouts.push_back(remap(f.outputs()[j], umap));
  ub->set_outputs(std::move(uouts));
  Split split;
  split.known = dce_body(kb);
  split.unknown = dce_body(ub);
  split.out_unknown = out_unknown;
  for (const Var* r : ref_residuals) split.ref_residual_params.push_back(param_of(r));
  for (const Var* r : residuals) split.residual_params.push_back(param_of(r));
  if (req.explain_every_output) split.lost_per_output.assign(f.outputs().size(), Lost{});
  for (size_t j = 0; j < f.outputs().size(); ++j) {
    if (!is_unknown(f.outputs()[j]) || force_unknown_out[j]) continue;
    if (split.lost_output >= 0 && !req.explain_every_output) break;
    Lost at = where_unknown(f, f.outputs()[j].var(), unknown, mixed, inside);
    if (split.lost_output < 0) split.lost_output = static_cast<int>(j), split.lost_at = at;
    if (req.explain_every_output) split.lost_per_output[j] = at;
  }
  return split;
}

// pmap (the map primitive's partial eval in JAX, jax/_src/interpreters/
// partial_eval.py `_closed_call_partial_eval` applied per device): the body
// split with the known operands known; the known part is a pmap of the known
// body over the same axis, returning the residuals stacked along it (out_axes
// 0), and the unknown part a pmap of the unknown body that takes them mapped
// along it (in_axes 0). A residual that is a body parameter (a known input
// the unknown body reads) is passed as that operand, on its own in_axes,
// rather than returned; so are known Ref operands the unknown body uses.
Decision pmap_rule(const Op& op, const std::vector<char>& unk) {
  if (!any_true(unk)) return placed(Placement::known);
  std::vector<char> known_in(unk.size());
  for (size_t i = 0; i < unk.size(); ++i) known_in[i] = !unk[i];
  if (!any_true(known_in)) return placed(Placement::unknown);
  const BodyPtr& body = op.param(keys::body);
  SplitRequest req{known_in, std::vector<char>(body->outputs().size(), 0), body->name() + "_known",
                   body->name() + "_unknown", body->kind(), true};
  Split s = partial_eval_body(*body, req);
  const std::vector<int64_t>& in_axes = op.param(keys::in_axes);
  const std::vector<int64_t>& out_axes = op.param(keys::out_axes);
  int64_t size = op.param(keys::axis_size);
  Decision d;
  d.place = Placement::split;
  d.lost_inside = s.lost_per_output;
  d.owner = make_body("residuals", BodyKind::fn);

  // The known pmap: known operands; known outputs, then the computed residuals.
  std::vector<int64_t> k_in, k_out, u_in, u_out;
  d.known_op.prim = op.prim;
  d.known_op.loc = op.loc;
  for (size_t i = 0; i < unk.size(); ++i)
    if (!unk[i]) d.known_op.operands.push_back(op.operands[i]), k_in.push_back(in_axes[i]);
  std::vector<Value> known_outs;
  size_t num_known_outs = 0;
  for (size_t j = 0; j < s.out_unknown.size(); ++j)
    if (!s.out_unknown[j]) d.known_results.push_back(static_cast<int>(j)), k_out.push_back(out_axes[j]), ++num_known_outs;
  const std::vector<Value>& kouts = s.known->outputs();
  known_outs.assign(kouts.begin(), kouts.begin() + static_cast<std::ptrdiff_t>(num_known_outs));

  // The unknown pmap: known Ref operands, residuals, unknown operands.
  Op u;
  u.prim = op.prim;
  u.loc = op.loc;
  for (int p : s.ref_residual_params) u.operands.push_back(op.operands[p]), u_in.push_back(in_axes[p]);
  for (size_t r = 0; r < s.residual_params.size(); ++r) {
    int p = s.residual_params[r];
    if (p >= 0) {
      u.operands.push_back(op.operands[p]), u_in.push_back(in_axes[p]);
      continue;
    }
    const Value& v = kouts[num_known_outs + r];
    Var* stacked = d.owner->new_var(Type::array(v.type().dtype(), ad::insert_at(v.type().shape(), 0, size)), v.var()->name);
    known_outs.push_back(v);
    k_out.push_back(0);
    d.residuals.push_back(stacked);
    u.operands.push_back(Value(stacked)), u_in.push_back(0);
  }
  for (size_t i = 0; i < unk.size(); ++i)
    if (unk[i]) u.operands.push_back(op.operands[i]), u_in.push_back(in_axes[i]);
  for (size_t j = 0; j < s.out_unknown.size(); ++j)
    if (s.out_unknown[j]) u_out.push_back(out_axes[j]);
  s.known->set_outputs(std::move(known_outs));
  d.known_op.params = params_with(op, {{"body", dce_body(s.known)}, {"in_axes", k_in}, {"out_axes", k_out}});
  u.params = params_with(op, {{"body", s.unknown}, {"in_axes", u_in}, {"out_axes", u_out}});
  d.unknown_op = std::move(u);
  return d;
}

// Restricted kernels (the known half of a split pallas_call, in the body or
// in a split pmap's) become module symbols, so they print as
// `kernel=@k_known` and can be run on their own.
void add_restricted_kernels(const Body& b, Module& out) {
  for (const Op& op : b.ops()) {
    if (op.prim->name == "pallas_call") {
      const BodyPtr& k = op.param(keys::kernel);
      if (out.is_symbol(k.get())) continue;
      k->set_name(out.unique_name(k->name()));
      out.add(k);
    } else if (op.prim->name == "pmap") {
      add_restricted_kernels(*op.param(keys::body), out);
    }
  }
}

Module with_split(const Module& m, const Split& s) {
  Module out;
  for (const BodyPtr& b : m.symbols()) out.add(b);
  add_restricted_kernels(*s.known, out);
  out.add(s.known);
  out.add(s.unknown);
  return out;
}

}  // namespace

Module partial_eval_pass(const Module& m, const PassOptions& o) {
  BodyPtr f = entry_function(m, o, "partial_eval");
  const std::string& name = f->name();
  std::vector<char> known = parse_known(o, *f);
  Split s = partial_eval_body(*f, {known, std::vector<char>(f->outputs().size(), 0), m.unique_name(name + "_known"),
                                   m.unique_name(name + "_unknown"), BodyKind::func, false});
  return with_split(m, s);
}

// Why the kernel of `call` cannot be split: `inner` (kernel_split.h's
// where_mixed) is where primal values come to depend on tangent ones.
std::string mixed_in_kernel(const Op& call, const Op* inner) {
  std::string kernel = "its kernel @" + call.param(keys::kernel)->name();
  if (!inner) return kernel + " computes primal and tangent values through one Ref, so it cannot be split";
  std::string at = "this `" + inner->name() + "`" + (inner->loc.known() ? " (" + inner->loc.str() + ")" : "");
  if (inner->prim->family == Family::state || inner->name() == "dma_start")
      return kernel + " cannot be split: " + at +
             " writes tangent values into a Ref that primal values are read from (both halves would need it)";
  return kernel + " cannot be split: primal values come to depend on tangents in " + at +
         ", which partial_eval cannot split";
}

Module linearize_pass(const Module& m, const PassOptions& o) {
  BodyPtr f = entry_function(m, o, "linearize");
  const std::string& name = f->name();
  size_t num_primals = f->params().size(), num_primal_outs = f->outputs().size();
  Module jm = jvp_pass(m, o);
  BodyPtr j = jm.entry(name);
  if (j->params().size() < num_primals || j->outputs().size() < num_primal_outs)
    throw Error("linearize: jvp of @" + name + " does not have the primal inputs and outputs first");
  std::vector<char> known(j->params().size(), 0), force(j->outputs().size(), 0);
  for (size_t p = 0; p < num_primals; ++p) known[p] = 1;
  for (size_t q = num_primal_outs; q < force.size(); ++q) force[q] = 1;
  Split s = partial_eval_body(*j, {known, force, jm.unique_name(name + "_primal"), jm.unique_name(name + "_tangent"),
                                   BodyKind::func, false});
  // A primal output looks unknown when an op that computes it is staged whole
  // with tangent operands: control flow (cond, loops, discharge's grid loop)
  // has no partial_eval rule, and a pallas_call kernel may compute primal and
  // tangent through one Ref. Then F_primal would lack it: say which op.
  if (s.lost_output >= 0) {
    std::string where = "@" + name;
    if (s.lost_at.op) {
      const Op& op = *s.lost_at.op;
      std::string why = op.name() == "pallas_call"
                            ? mixed_in_kernel(op, s.lost_at.inner)
                            : "partial_eval stages a `" + op.name() + "` whole (it has no rule to split control flow)";
      if (op.name() == "for") why += "; discharge lowers each pallas_call to such a loop: run linearize before discharge";
      throw Error(op.loc, "linearize: primal output " + std::to_string(s.lost_output) + " of @" + name +
                              " comes out of this `" + op.name() + "`, which also takes tangents, and " + why);
    }
    throw Error(f->loc(), "linearize: partial eval could not separate primal output " + std::to_string(s.lost_output) + " of " +
                              where + " from the tangents");
  }
  return with_split(jm, s);
}

}  // namespace tessera
