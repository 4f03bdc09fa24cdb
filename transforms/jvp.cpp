// The jvp pass: `main(primals...) -> outs` becomes
// `main(primals..., tangents...) -> (outs..., tangent outs...)`.
//
// The body transformer walks ops once, in order, keeping a tangent per
// variable (absent = symbolic zero). An op none of whose operands has a
// tangent is copied as is, without consulting its rule: the common case in
// index computations and the reason the pass is linear and fast.
#include "transforms/jvp.h"
#include "transforms/var_table.h"


namespace tessera::jvp {

Value Ctx::instantiate(const Tangent& t, const Type& primal) {
  if (t) return *t;
  return ad::zeros(b, primal);
}

std::vector<bool> differentiable_mask(const std::vector<Type>& types) {
  std::vector<bool> m;
  m.reserve(types.size());
  for (const Type& t : types) m.push_back(differentiable(t));
  return m;
}

std::vector<Value> emit_primal(Ctx& ctx, const Op& op, const std::vector<Value>& x) {
  return ad::copy_op(ctx.b.body(), op, x);
}

RuleTable<JvpRule>& rules() {
  static RuleTable<JvpRule> table = [] {
    RuleTable<JvpRule> t("jvp");
    add_math_rules(t);
    add_structural_rules(t);
    add_state_rules(t);
    add_control_rules(t);
    add_pallas_call_rule(t);
    return t;
  }();
  return table;
}

namespace {

// A tangent whose shape differs from its primal's can only come from a rank-0
// operand of an elementwise op; broadcast it.
Value fit(Builder& b, Value t, const Type& primal) {
  Type tt = t.type();
  if (tt.is_ref() || tt.shape() == primal.shape()) return t;
  if (tt.rank() == 0) return ad::broadcast_scalar(b, t, primal.shape());
  throw Error(b.loc(), "jvp: internal error: tangent " + tt.str() + " does not fit primal " + primal.str());
}

}  // namespace

RuleResult inline_jvp(Ctx& ctx, const Body& src, const std::vector<Value>& params, const std::vector<Tangent>& tangents) {
  // Primal renaming and tangents, keyed by the source body's Vars.
  VarToValue map(src.ops().size() + params.size()), tan(src.ops().size() + params.size());
  // A jvp'd op is about three: reserve once rather than regrow a long body.
  ctx.b.body().ops().reserve(ctx.b.body().ops().size() + 3 * src.ops().size());
  for (size_t i = 0; i < src.params().size(); ++i) {
    map[src.params()[i]] = params[i];
    if (tangents[i]) tan[src.params()[i]] = *tangents[i];
  }
  const RuleTable<JvpRule>& table = rules();
  Body& dst = ctx.b.body();
  std::vector<Value> x;
  std::vector<Tangent> dx;
  for (const Op& op : src.ops()) {
    bool any = false;
    if (tan.size() != 0)
      for (const Value& v : op.operands) any |= v.is_var() && tan.contains(v.var());
    if (!any) {  // no tangent flows through: the op as it is
      copy_op(op, dst, map);
      continue;
    }
    x.clear();
    dx.clear();
    for (const Value& v : op.operands) {
      x.push_back(remap(v, map));
      Tangent t;
      if (v.is_var())
        if (const Value* f = tan.find(v.var())) t = *f;
      dx.push_back(t);
    }
    ctx.b.set_loc(op.loc);
    RuleResult r = table.at(*op.prim, op.loc)(ctx, op, x, dx);
    if (r.primals.size() != op.results.size() || r.tangents.size() != op.results.size())
      throw Error(op.loc, "jvp rule of " + op.name() + " returned the wrong number of results");
    for (size_t k = 0; k < r.primals.size(); ++k) {
      map[op.results[k]] = r.primals[k];
      if (Value v = r.primals[k]; v.is_var() && v.var()->name.empty()) v.var()->name = op.results[k]->name;
      const Type& pt = op.results[k]->type;
      if (!r.tangents[k] || !differentiable(pt)) continue;
      Value t = fit(ctx.b, *r.tangents[k], pt);
      // Name tangents after their primals (%a -> %a_dot) for readable output.
      if (t.is_var() && t.var()->name.empty() && !op.results[k]->name.empty()) t.var()->name = op.results[k]->name + "_dot";
      tan[op.results[k]] = t;
    }
  }
  RuleResult out;
  for (const Value& v : src.outputs()) {
    out.primals.push_back(remap(v, map));
    Tangent t;
    if (v.is_var()) {
      if (const Value* f = tan.find(v.var())) t = *f;
    }
    out.tangents.push_back(t);
  }
  return out;
}

BodyPtr jvp_body_layout(Ctx& ctx, const Body& src, const std::string& name, BodyKind kind, const std::vector<Slot>& params,
                        const std::vector<Slot>& outs) {
  BodyPtr nb = make_body(name, kind);
  nb->set_loc(src.loc());
  Builder b(*nb);
  b.set_loc(src.loc());
  std::vector<Value> p(src.params().size());
  std::vector<Tangent> t(src.params().size());
  for (const Slot& s : params) {
    const Var* sp = src.params().at(s.index);
    Var* v = b.param(sp->type, s.tangent ? sp->name + "_dot" : sp->name);
    if (s.tangent) t[s.index] = Value(v);
    else p[s.index] = Value(v);
  }
  for (size_t i = 0; i < p.size(); ++i)
    if (!p[i].is_var()) throw Error(src.loc(), "jvp: internal error: parameter " + std::to_string(i) + " missing from layout");
  Ctx inner{b, ctx.syms};
  RuleResult r = inline_jvp(inner, src, p, t);
  std::vector<Value> o;
  for (const Slot& s : outs) {
    const Type& pt = src.outputs().at(s.index).type();
    o.push_back(s.tangent ? inner.instantiate(r.tangents[s.index], pt) : r.primals[s.index]);
  }
  b.ret(std::move(o));
  return nb;
}

BodyPtr jvp_body(Ctx& ctx, const Body& src, const std::string& name, BodyKind kind, const std::vector<bool>& has_tangent,
                 const std::vector<bool>& out_tangent) {
  std::vector<Slot> ps, os;
  for (size_t i = 0; i < src.params().size(); ++i) ps.push_back({static_cast<int>(i), false});
  for (size_t i = 0; i < src.params().size(); ++i)
    if (has_tangent[i]) ps.push_back({static_cast<int>(i), true});
  for (size_t i = 0; i < src.outputs().size(); ++i) os.push_back({static_cast<int>(i), false});
  for (size_t i = 0; i < src.outputs().size(); ++i)
    if (out_tangent[i]) os.push_back({static_cast<int>(i), true});
  return jvp_body_layout(ctx, src, name, kind, ps, os);
}

}  // namespace tessera::jvp

namespace tessera {

namespace {

std::vector<bool> wrt_mask(const Body& main, const PassOptions& o) {
  size_t n = main.params().size();
  std::vector<bool> mask(n, false);
  if (!o.has("wrt")) {
    for (size_t i = 0; i < n; ++i) mask[i] = jvp::differentiable(main.params()[i]->type);
    return mask;
  }
  std::vector<int64_t> idx = ad::parse_axes_option(o.get("wrt"), "wrt");
  for (int64_t i : idx) {
    if (i < 0 || i >= static_cast<int64_t>(n))
      throw Error(main.loc(), "jvp: wrt=" + o.get("wrt") + " names input " + std::to_string(i) + " but @" + main.name() +
                                  " has " + std::to_string(n) + " inputs");
    const Var* p = main.params()[i];
    if (!jvp::differentiable(p->type))
      throw Error(main.loc(), "jvp: input " + std::to_string(i) + " (%" + p->name + ": " + p->type.str() +
                                  ") is not floating point and cannot be differentiated");
    mask[i] = true;
  }
  return mask;
}

}  // namespace

Module jvp_pass(const Module& m, const PassOptions& o) {
  BodyPtr main = entry_function(m, o, "jvp");
  ad::SymbolSink syms(m);
  std::vector<bool> has = wrt_mask(*main, o);
  std::vector<bool> outs = jvp::differentiable_mask(main->output_types());
  BodyPtr scratch = make_body("scratch", BodyKind::func);
  Builder b(*scratch);
  jvp::Ctx ctx{b, syms};
  BodyPtr nm = jvp::jvp_body(ctx, *main, main->name(), main->kind(), has, outs);
  return syms.assemble(nm, main->name());
}

}  // namespace tessera
