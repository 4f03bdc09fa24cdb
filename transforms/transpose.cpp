// The transpose walk (JAX's `ad.backward_pass`): a body linear in some
// parameters becomes its transpose.
//
// 1. Linearity: forward, a value (or Ref) is linear when it depends on a
//    linear parameter; a Ref becomes linear when a linear value is written
//    into it (iterated to a fixpoint, since a loop or a later grid step may
//    read what an earlier one wrote). An op with linear operands must have a
//    transpose rule and float (or Ref) results; the first op in program order
//    that has not is the error.
// 2. Forward: the non-linear ops are copied, in order, into the new body
//    (index arithmetic, residual reads, program ids). An op with linear
//    operands whose results are partly non-linear (a `cond` or loop that
//    computes primal values beside tangents, staged whole by partial_eval) is
//    also copied with its linear operands replaced by zeros: its non-linear
//    results do not depend on them.
// 3. Backward: the linear ops in reverse order, each rule turning its
//    results' cotangents into its operands' cotangents, summed per value.
//    An op whose results all have zero cotangents and that has no effect is
//    skipped: its contribution is zero.
#include "transforms/transpose.h"

#include "ir/effects.h"
#include "transforms/pass.h"
#include "transforms/var_table.h"

namespace tessera::transpose {

Value Ctx::instantiate(const Cotangent& ct, const Type& t) {
  if (ct) return *ct;
  return b.zeros(t);
}

Cotangent Ctx::add(const Cotangent& a, const Cotangent& c) {
  if (!a) return c;
  if (!c) return a;
  return b.binary("add", *a, *c);
}

RuleTable<RuleSet>& rules() {
  static RuleTable<RuleSet> t = [] {
    RuleTable<RuleSet> ts("transpose");
    add_linear_rules(ts);
    add_state_rules(ts);
    add_control_rules(ts);
    add_pallas_call_rule(ts);
    add_reasons(ts);
    return ts;
  }();
  return t;
}
const RuleTableRegistration kRegistered("transpose", rules);

std::vector<bool> linear_results(const Op& op, const std::vector<bool>& linear_operands) {
  if (const RuleSet* r = rules().find(*op.prim); r && r->linear_results) return r->linear_results(op, linear_operands);
  bool any = false;
  for (bool l : linear_operands) any |= l;
  return std::vector<bool>(op.results.size(), any);
}

namespace {

std::string var_name(const Value& v) {
  if (v.is_literal()) return v.literal().str();
  return v.var()->name.empty() ? std::string("a value") : "%" + v.var()->name;
}

bool writes(uint8_t bits) { return bits & (kWrite | kAccum); }

// The linear values and Refs of `src`, and per op whether it is linear.
struct Linearity {
  VarSet vars;
  std::vector<char> op_linear;
  explicit Linearity(size_t n) : vars(n) {}
  bool has(const Value& v) const { return v.is_var() && vars.contains(v.var()); }
};

size_t table_size(const Body& src) { return src.ops().size() + src.params().size() + 8; }

// Fills `lin` (made with table_size(src)); `check`: throw on the first op
// that is not linear in its linear operands.
void analyse(const Body& src, const std::vector<bool>& linear, bool check, Linearity& lin) {
  for (size_t i = 0; i < src.params().size(); ++i)
    if (linear[i]) lin.vars.insert(src.params()[i]);
  lin.op_linear.assign(src.ops().size(), 0);
  const RuleTable<RuleSet>& table = rules();
  std::vector<bool> lin_operands;
  // Values follow SSA order, so one sweep settles them; another sweep is
  // needed only when a Ref became linear (an earlier op may read it).
  for (bool ref_changed = true; ref_changed;) {
    ref_changed = false;
    for (size_t k = 0; k < src.ops().size(); ++k) {
      const Op& op = src.ops()[k];
      bool any = false;
      for (const Value& v : op.operands) any |= lin.has(v);
      if (!any) continue;
      lin.op_linear[k] = 1;
      if (const RuleSet* rule = table.find(*op.prim); rule && rule->linear_results) {
        lin_operands.clear();
        for (const Value& v : op.operands) lin_operands.push_back(lin.has(v));
        std::vector<bool> res = rule->linear_results(op, lin_operands);
        for (size_t r = 0; r < op.results.size(); ++r)
          if (res[r] && lin.vars.insert(op.results[r])) ref_changed |= op.results[r]->type.is_ref();
      } else {
        for (const Var* r : op.results)
          if (lin.vars.insert(r)) ref_changed |= r->type.is_ref();
      }
      // A Ref written with a linear value holds linear contents from then on
      // (also a DMA's destination; never the semaphore it signals).
      if (op.prim->family != Family::state && op.prim->name != "dma_start") continue;
      OpEffects fx = op_effects(op);
      for (auto [operand, bits] : fx.on_operand) {
        const Value& v = op.operands[operand];
        if (writes(bits) && v.is_var() && v.type().is_ref() && !is_semaphore(v.type().dtype()))
          ref_changed |= lin.vars.insert(v.var());
      }
    }
  }
  if (!check) return;
  for (size_t k = 0; k < src.ops().size(); ++k) {
    if (!lin.op_linear[k]) continue;
    const Op& op = src.ops()[k];
    const Value* first = nullptr;
    for (const Value& v : op.operands)
      if (!first && lin.has(v)) first = &v;
    if (!table.find(*op.prim)) {
      NoRule no = why_no_rule(*op.prim);
      std::string head = "transpose: `" + op.name() + "` of the linear value " + var_name(*first);
      if (no.kind == NoRule::unsupported)
        throw Error(op.loc, "transpose: `" + op.name() + "` has no transpose rule (" + no.why + "), but takes the linear value " +
                                var_name(*first));
      throw Error(op.loc, head + " is not linear (" + no.why + ")");
    }
    if (const LinearityCheck& linearity = table.find(*op.prim)->check) {
      lin_operands.clear();
      for (const Value& v : op.operands) lin_operands.push_back(lin.has(v));
      linearity(op, lin_operands);
    }
    for (const Var* r : op.results)
      if (lin.vars.contains(r) && !r->type.is_ref() && !is_float(r->type.dtype()))
        throw Error(op.loc, "transpose: `" + op.name() + "` of the linear value " + var_name(*first) + " gives the " +
                                r->type.str() + " %" + r->name + ", which is not linear");
  }
}

// A cotangent of a rank-0 operand broadcast by an elementwise op is summed
// over the broadcast; a cotangent in another float dtype is converted.
Value fit(Builder& b, Value ct, const Type& t) {
  const Type& c = ct.type();
  if (c.rank() != t.rank()) {
    if (t.rank() != 0) throw Error(b.loc(), "transpose: internal error: cotangent " + c.str() + " does not fit " + t.str());
    std::vector<int64_t> axes;
    for (int d = 0; d < c.rank(); ++d) axes.push_back(d);
    ct = b.emit1("reduce_sum", {ct}, {{"axes", axes}});
  }
  if (ct.type().dtype() != t.dtype()) ct = b.emit1("convert_element_type", {ct}, {{"new_dtype", t.dtype()}});
  return ct;
}

// Does `op` (with bodies) write a Ref that holds non-linear values? Its
// forward part must then run in program order, since later ops may read it.
bool writes_nonlinear_ref(const Op& op, const Linearity& lin) {
  for (auto [operand, bits] : op_effects(op).on_operand)
    if (writes(bits) && !lin.has(op.operands[operand])) return true;
  return false;
}

// Appends the non-linear part of `src` to `b` (map: src params -> values).
// An op with linear operands whose results are partly non-linear is copied
// with its linear operands replaced by zeros: its non-linear results do not
// depend on them. When one of them is a Ref, or when the op writes a Ref
// holding non-linear values (a `cond` initialising primal scratch), its
// forward rule runs the op with its bodies cut to their non-linear parts.
// Does `op` read a Ref (directly or in its bodies)? One holding non-linear values?
bool reads_ref(const Op& op) {
  for (auto [operand, bits] : op_effects(op).on_operand)
    if ((bits & kRead) && op.operands[operand].type().is_ref()) return true;
  return false;
}
bool reads_nonlinear_ref(const Op& op, const Linearity& lin) {
  for (auto [operand, bits] : op_effects(op).on_operand)
    if ((bits & kRead) && op.operands[operand].type().is_ref() && !lin.has(op.operands[operand])) return true;
  return false;
}

// `ctx`: where forward rules run (null inside nonlinear_part, which has no
// transpose to hand residuals to). `given`: see inline_transpose.
void emit_forward(Ctx* ctx, Builder& b, const Body& src, const Linearity& lin, VarToValue& map, const Given* given) {
  Body& dst = b.body();
  const auto& ops = src.ops();
  VarSet preset(given ? given->vars.size() * 2 + 8 : 8);
  if (given)
    for (size_t i = 0; i < given->vars.size(); ++i) {
      map[given->vars[i]] = given->values[i];
      preset.insert(given->vars[i]);
    }
  for (size_t k = 0; k < ops.size(); ++k) {
    const Op& op = ops[k];
    if (!lin.op_linear[k]) {
      bool all_given = !op.results.empty();
      for (const Var* r : op.results) all_given &= preset.contains(r);
      if (all_given || (given && writes_nonlinear_ref(op, lin))) continue;
      copy_op(op, dst, map);
      continue;
    }
    bool mixed = false;
    for (const Var* r : op.results) mixed |= !lin.vars.contains(r);
    const RuleSet* rule = rules().find(*op.prim);
    const ForwardRule* fwd = rule && rule->forward ? &rule->forward : nullptr;
    bool replay = fwd && ctx && (writes_nonlinear_ref(op, lin) || reads_nonlinear_ref(op, lin));
    if (!mixed && !replay) continue;
    std::vector<Value> operands;
    std::vector<bool> lin_operands;
    const Value* linear_ref = nullptr;
    b.set_loc(op.loc);
    for (const Value& v : op.operands) {
      lin_operands.push_back(lin.has(v));
      if (lin.has(v) && !v.type().is_ref()) {
        operands.push_back(b.zeros(v.type()));
        continue;
      }
      operands.push_back(remap(v, map));
      if (lin.has(v) && !linear_ref) linear_ref = &v;
    }
    if (linear_ref || replay) {
      if (!fwd)
        throw Error(op.loc, "transpose: `" + op.name() + "` computes non-linear results and also uses the linear Ref " +
                                var_name(*linear_ref) + "; it cannot be split");
      std::vector<Value> got;
      if (ctx) {
        got = (*fwd)(*ctx, op, operands, lin_operands);
      } else {
        static const Module no_symbols;
        ad::SymbolSink sink(no_symbols);
        Ctx local{b, sink};
        got = (*fwd)(local, op, operands, lin_operands);
      }
      for (size_t r = 0; r < op.results.size(); ++r)
        if (!lin.vars.contains(op.results[r])) map[op.results[r]] = got[r];
      continue;
    }
    append_copy(op, dst, std::move(operands), op.params, [&](const Var* r, Var* nr) {
      if (!lin.vars.contains(r)) map[r] = nr;
    });
  }
}

}  // namespace

BodyPtr nonlinear_part(const Body& src, const std::vector<bool>& linear, const std::string& name,
                       const std::vector<const Var*>& extra_outputs) {
  Linearity lin(table_size(src));
  analyse(src, linear, false, lin);
  BodyPtr nb = make_body(name, src.kind());
  nb->set_loc(src.loc());
  Builder b(*nb);
  b.set_loc(src.loc());
  VarToValue map(table_size(src));
  for (const Var* p : src.params()) map[p] = b.param(p->type, p->name);
  emit_forward(nullptr, b, src, lin, map, nullptr);
  std::vector<Value> outs;
  b.set_loc(src.loc());
  for (const Value& v : src.outputs()) outs.push_back(lin.has(v) ? b.zeros(v.type()) : remap(v, map));
  for (const Var* v : extra_outputs) outs.push_back(remap(Value(const_cast<Var*>(v)), map));
  b.ret(std::move(outs));
  return nb;
}

std::vector<const Var*> read_residuals(const Body& src, const std::vector<bool>& linear) {
  Linearity lin(table_size(src));
  analyse(src, linear, false, lin);
  VarSet from_read(table_size(src)), taken(table_size(src));
  std::vector<const Var*> out;
  const auto& ops = src.ops();
  for (size_t k = 0; k < ops.size(); ++k) {
    const Op& op = ops[k];
    if (lin.op_linear[k]) {
      for (const Value& v : op.operands)
        if (v.is_var() && !lin.has(v) && from_read.contains(v.var()) && taken.insert(v.var())) out.push_back(v.var());
      continue;
    }
    bool read = reads_ref(op);
    for (const Value& v : op.operands) read |= v.is_var() && from_read.contains(v.var());
    if (read)
      for (const Var* r : op.results)
        if (!r->type.is_ref()) from_read.insert(r);
  }
  return out;
}

std::vector<bool> params_read_by_transpose(const Body& src, const std::vector<bool>& linear) {
  Linearity lin(table_size(src));
  analyse(src, linear, false, lin);
  VarSet needed(table_size(src));
  const auto& ops = src.ops();
  auto need_operands = [&](const Op& op) {
    for (const Value& v : op.operands)
      if (v.is_var() && !lin.has(v)) needed.insert(v.var());
  };
  for (size_t k = ops.size(); k-- > 0;) {
    const Op& op = ops[k];
    bool used = lin.op_linear[k] != 0;
    for (const Var* r : op.results) used |= needed.contains(r);
    if (used) need_operands(op);
  }
  std::vector<bool> out;
  for (const Var* p : src.params()) out.push_back(needed.contains(p));
  return out;
}

std::vector<bool> linear_outputs(const Body& src, const std::vector<bool>& linear) {
  Linearity lin(table_size(src));
  analyse(src, linear, false, lin);
  std::vector<bool> out;
  for (const Value& v : src.outputs()) out.push_back(lin.has(v));
  return out;
}

std::vector<bool> linear_refs(const Body& src, const std::vector<bool>& linear) {
  Linearity lin(table_size(src));
  analyse(src, linear, false, lin);
  std::vector<bool> out;
  for (const Var* p : src.params()) out.push_back(p->type.is_ref() && lin.vars.contains(p));
  return out;
}

std::vector<Cotangent> inline_transpose(Ctx& ctx, const Body& src, const std::vector<Value>& params,
                                        const std::vector<bool>& linear, const std::vector<Cotangent>& out_ct,
                                        std::vector<std::optional<Value>>* nonlinear_outs, const Given* given) {
  Linearity lin(table_size(src));
  analyse(src, linear, true, lin);
  Builder& b = ctx.b;
  VarToValue map(src.ops().size() + src.params().size() + 8);
  for (size_t i = 0; i < src.params().size(); ++i)
    if (!linear[i] || src.params()[i]->type.is_ref()) map[src.params()[i]] = params[i];

  emit_forward(&ctx, b, src, lin, map, given);
  if (nonlinear_outs) {
    nonlinear_outs->clear();
    for (const Value& v : src.outputs())
      nonlinear_outs->push_back(lin.has(v) ? std::nullopt : std::optional<Value>(remap(v, map)));
  }

  // Backward.
  VarTable<Value> ct(src.ops().size() + src.params().size() + 8);
  auto accumulate = [&](const Value& v, const Cotangent& c) {
    if (!c || !v.is_var() || !lin.has(v) || v.type().is_ref()) return;
    Value fitted = fit(b, *c, v.type());
    if (Value* have = ct.find(v.var())) *have = b.binary("add", *have, fitted);
    else ct[v.var()] = fitted;
  };
  auto cotangent_of = [&](const Var* v) -> Cotangent {
    const Value* c = ct.find(v);
    return c ? Cotangent(*c) : std::nullopt;
  };
  b.set_loc(src.loc());
  for (size_t j = 0; j < src.outputs().size(); ++j) accumulate(src.outputs()[j], out_ct[j]);
  const RuleTable<RuleSet>& table = rules();
  const auto& ops = src.ops();
  std::vector<Value> x;
  std::vector<bool> lin_operands;
  std::vector<Cotangent> cts;
  for (size_t k = ops.size(); k-- > 0;) {
    if (!lin.op_linear[k]) continue;
    const Op& op = ops[k];
    cts.clear();
    bool any = false;
    for (const Var* r : op.results) {
      cts.push_back(lin.vars.contains(r) ? cotangent_of(r) : std::nullopt);
      any |= cts.back().has_value();
    }
    if (!any && !has_side_effects(op)) continue;
    x.clear();
    lin_operands.clear();
    for (const Value& v : op.operands) {
      bool l = lin.has(v);
      lin_operands.push_back(l);
      x.push_back(l && !v.type().is_ref() ? Value() : remap(v, map));
    }
    b.set_loc(op.loc);
    std::vector<Cotangent> r = table.at(*op.prim, op.loc).transpose(ctx, op, x, lin_operands, cts);
    if (r.size() != op.operands.size())
      throw Error(op.loc, "transpose rule of " + op.name() + " returned the wrong number of cotangents");
    for (size_t i = 0; i < r.size(); ++i)
      if (lin_operands[i]) accumulate(op.operands[i], r[i]);
  }
  std::vector<Cotangent> out;
  for (size_t i = 0; i < src.params().size(); ++i) {
    const Var* p = src.params()[i];
    out.push_back(linear[i] && !p->type.is_ref() ? cotangent_of(p) : std::nullopt);
  }
  return out;
}

std::string cotangent_name(const std::string& n) {
  std::string base = n.size() > 4 && n.compare(n.size() - 4, 4, "_dot") == 0 ? n.substr(0, n.size() - 4) : n;
  return base + "_ct";
}

BodyPtr transpose_body(Ctx& ctx, const Body& src, const std::string& name, BodyKind kind, const std::vector<bool>& linear) {
  BodyPtr nb = make_body(name, kind);
  nb->set_loc(src.loc());
  Builder b(*nb);
  b.set_loc(src.loc());
  std::vector<Value> params(src.params().size());
  for (size_t i = 0; i < src.params().size(); ++i) {
    const Var* p = src.params()[i];
    if (!linear[i]) params[i] = b.param(p->type, p->name);
    else if (p->type.is_ref()) params[i] = b.param(p->type, cotangent_name(p->name));
  }
  std::vector<Cotangent> out_ct(src.outputs().size());
  for (size_t j = 0; j < src.outputs().size(); ++j) {
    const Type& t = src.outputs()[j].type();
    if (has_cotangent(t)) out_ct[j] = Value(b.param(t, "ct" + std::to_string(j)));
  }
  Ctx inner{b, ctx.syms, {}, ctx.dma_mirror};
  std::vector<Cotangent> r = inline_transpose(inner, src, params, linear, out_ct);
  std::vector<Value> outs;
  b.set_loc(src.loc());
  for (size_t i = 0; i < src.params().size(); ++i) {
    const Var* p = src.params()[i];
    if (!linear[i] || p->type.is_ref()) continue;
    Value v = inner.instantiate(r[i], p->type);
    if (v.is_var() && (v.var()->name.empty() || v.var()->name == p->name)) v.var()->name = cotangent_name(p->name);
    outs.push_back(v);
  }
  b.ret(std::move(outs));
  return nb;
}

}  // namespace tessera::transpose
