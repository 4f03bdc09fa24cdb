// The jvp pass: `main(primals...) -> outs` becomes
// `main(primals..., tangents...) -> (outs..., tangent outs...)`.
//
// The body transformer is the shared walk of transforms/body_rewrite.h with a
// tangent per variable (absent = symbolic zero): an op none of whose operands
// has a tangent is copied as is, without consulting its rule, the common case
// in index computations and the reason the pass is linear and fast.
#include "transforms/jvp.h"

#include "transforms/body_rewrite.h"

namespace tessera::jvp {

Value Ctx::instantiate(const Tangent& t, const Type& primal) {
  if (t) return *t;
  return b.zeros(primal);
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
    t.unsupported("custom_lin", "it is the tangent of a custom_vjp_call, which only transpose (by `bwd`) consumes");
    return t;
  }();
  return table;
}
const RuleTableRegistration kRegistered("jvp", rules);

namespace {

// A tangent whose shape differs from its primal's can only come from a rank-0
// operand of an elementwise op; broadcast it.
Value fit(Builder& b, Value t, const Type& primal) {
  Type tt = t.type();
  if (tt.is_ref() || tt.shape() == primal.shape()) return t;
  if (tt.rank() == 0) return b.broadcast_scalar(t, primal.shape());
  throw Error(b.loc(), "jvp: internal error: tangent " + tt.str() + " does not fit primal " + primal.str());
}

// jvp's side of the body walk (transforms/body_rewrite.h): a tangent per
// variable, absent for a symbolic zero.
struct JvpWalk {
  using Info = Tangent;
  static constexpr const char* pass = "jvp";
  static constexpr size_t ops_per_op = 3;
  static bool present(const Tangent& t) { return t.has_value(); }
  static Tangent absent() { return std::nullopt; }
  static const std::vector<Value>& values(const RuleResult& r) { return r.primals; }
  static const std::vector<Tangent>& infos(const RuleResult& r) { return r.tangents; }

  Ctx& ctx;
  const RuleTable<JvpRule>& table = rules();

  RuleResult rule(const Op& op, const std::vector<Value>& x, const std::vector<Tangent>& dx) {
    return table.at(*op.prim, op.loc)(ctx, op, x, dx);
  }
  Tangent adopt(const Var* primal, const Tangent& t) {
    if (!t || !differentiable(primal->type)) return std::nullopt;
    Value ft = fit(ctx.b, *t, primal->type);
    // Name tangents after their primals (%a -> %a_dot) for readable output.
    if (ft.is_var() && ft.var()->name.empty() && !primal->name.empty()) ft.var()->name = primal->name + "_dot";
    return ft;
  }
};

}  // namespace

RuleResult inline_jvp(Ctx& ctx, const Body& src, const std::vector<Value>& params, const std::vector<Tangent>& tangents) {
  JvpWalk walk{ctx};
  Rewritten<Tangent> r = rewrite_body(walk, ctx.b, src, params, tangents);
  return {std::move(r.values), std::move(r.infos)};
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
