// jvp rules of higher-order ops: cond, while, for, scan, run_scoped, call,
// custom_jvp_call, core_map and pmap. Tangents travel as extra operands / carries / results
// placed right after the primal ones of the same group. Loop-carried tangents
// of floating-point carries are always materialised (a symbolic zero cannot
// stay zero across iterations in general); tangents of constants and of
// scanned inputs stay symbolic when zero.
#include <algorithm>
#include <sstream>

#include "ir/control_views.h"
#include "transforms/jvp.h"

namespace tessera::jvp {
namespace {

using Vals = std::vector<Value>;
using Tans = std::vector<Tangent>;

// A body with parameters laid out as `layout` that runs src's primal
// computation only (e.g. a while loop's condition after tangents were added).
BodyPtr primal_only(const Body& src, const std::vector<Slot>& layout) {
  BodyPtr nb = make_body(src.name(), src.kind());
  nb->set_loc(src.loc());
  ValueMap map;
  for (const Slot& s : layout) {
    const Var* p = src.params().at(s.index);
    Var* v = nb->add_param(p->type, s.tangent ? p->name + "_dot" : p->name, p->loc);
    if (!s.tangent) map[p] = v;
  }
  nb->set_outputs(inline_body(src, *nb, map));
  return nb;
}

// Appends slots [first, first + n) as primal slots, then tangent slots of the
// ones selected by `has`.
void group(std::vector<Slot>& out, int first, int n, const std::vector<bool>& has) {
  for (int i = 0; i < n; ++i) out.push_back({first + i, false});
  for (int i = 0; i < n; ++i)
    if (has[i]) out.push_back({first + i, true});
}

std::vector<bool> nonzero(const Tans& dx, size_t from, size_t n) {
  std::vector<bool> m(n);
  for (size_t i = 0; i < n; ++i) m[i] = dx[from + i].has_value();
  return m;
}

// Operands: x[from, from+n), then the tangents selected by `has` (materialised).
void push_group(Ctx& c, Vals& out, const Vals& x, const Tans& dx, size_t from, size_t n, const std::vector<bool>& has) {
  for (size_t i = 0; i < n; ++i) out.push_back(x[from + i]);
  for (size_t i = 0; i < n; ++i)
    if (has[i]) out.push_back(c.instantiate(dx[from + i], x[from + i].type()));
}

// Splits results laid out as (primals of a group of n, tangents of `has`).
size_t take_group(const Vals& res, size_t at, size_t n, const std::vector<bool>& has, RuleResult& out) {
  size_t t = at + n;
  for (size_t i = 0; i < n; ++i) {
    out.primals.push_back(res[at + i]);
    out.tangents.push_back(has[i] ? Tangent(res[t++]) : std::nullopt);
  }
  return t;
}

RuleResult cond_rule(Ctx& c, const Op& op, const Vals& x, const Tans& dx) {
  size_t n = x.size() - 1;
  std::vector<bool> has = nonzero(dx, 1, n);
  std::vector<BodyPtr> branches;
  std::vector<bool> outt;
  for (const BodyPtr& br : op.param(keys::branches)) {
    outt = differentiable_mask(br->output_types());
    branches.push_back(jvp_body(c, *br, br->name(), br->kind(), has, outt));
  }
  Vals args;
  push_group(c, args, x, dx, 1, n, has);
  Vals res = CondView::make(c.b, x[0], args, branches);
  RuleResult r;
  take_group(res, 0, outt.size(), outt, r);
  return r;
}

RuleResult while_rule(Ctx& c, const Op& op, const Vals& x, const Tans& dx) {
  WhileView view(op);
  int k = view.num_consts;
  int nc = static_cast<int>(x.size()) - k;
  std::vector<bool> kh = nonzero(dx, 0, k);
  std::vector<Type> ctypes;
  for (int j = 0; j < nc; ++j) ctypes.push_back(x[k + j].type());
  std::vector<bool> ch = differentiable_mask(ctypes);
  std::vector<Slot> layout, outs;
  group(layout, 0, k, kh);
  group(layout, k, nc, ch);
  group(outs, 0, nc, ch);
  const Body& body = *op.param(keys::body);
  BodyPtr nbody = jvp_body_layout(c, body, body.name(), body.kind(), layout, outs);
  BodyPtr ncond = primal_only(*op.param(keys::cond), layout);
  Vals consts, carries;
  push_group(c, consts, x, dx, 0, k, kh);
  push_group(c, carries, x, dx, k, nc, ch);
  Vals res = WhileView::make(c.b, consts, carries, ncond, nbody);
  RuleResult r;
  take_group(res, 0, nc, ch, r);
  return r;
}

RuleResult for_rule(Ctx& c, const Op& op, const Vals& x, const Tans& dx) {
  ForView view(op);
  int k = view.num_consts;
  int nc = static_cast<int>(x.size()) - 2 - k;
  std::vector<bool> kh = nonzero(dx, 2, k);
  std::vector<Type> ctypes;
  for (int j = 0; j < nc; ++j) ctypes.push_back(x[2 + k + j].type());
  std::vector<bool> ch = differentiable_mask(ctypes);
  std::vector<Slot> layout{{0, false}}, outs;
  group(layout, 1, k, kh);
  group(layout, 1 + k, nc, ch);
  group(outs, 0, nc, ch);
  const Body& body = *op.param(keys::body);
  BodyPtr nbody = jvp_body_layout(c, body, body.name(), body.kind(), layout, outs);
  Vals consts, carries;
  push_group(c, consts, x, dx, 2, k, kh);
  push_group(c, carries, x, dx, 2 + k, nc, ch);
  Vals res = ForView::make(c.b, x[0], x[1], consts, carries, nbody);
  RuleResult r;
  take_group(res, 0, nc, ch, r);
  return r;
}

RuleResult scan_rule(Ctx& c, const Op& op, const Vals& x, const Tans& dx) {
  ScanView view(op);
  int k = view.num_consts;
  int nc = view.num_carries;
  int nx = static_cast<int>(x.size()) - k - nc;
  const Body& body = *op.param(keys::body);
  int ny = static_cast<int>(body.outputs().size()) - nc;
  std::vector<bool> kh = nonzero(dx, 0, k);
  std::vector<Type> ctypes;
  for (int j = 0; j < nc; ++j) ctypes.push_back(x[k + j].type());
  std::vector<bool> ch = differentiable_mask(ctypes);
  std::vector<bool> xh = nonzero(dx, k + nc, nx);
  std::vector<Type> otypes = body.output_types();
  std::vector<bool> yh = differentiable_mask(std::vector<Type>(otypes.begin() + nc, otypes.end()));
  std::vector<Slot> layout, outs;
  group(layout, 0, k, kh);
  group(layout, k, nc, ch);
  group(layout, k + nc, nx, xh);
  group(outs, 0, nc, ch);
  group(outs, nc, ny, yh);
  BodyPtr nbody = jvp_body_layout(c, body, body.name(), body.kind(), layout, outs);
  Vals consts, carries, xs;
  push_group(c, consts, x, dx, 0, k, kh);
  push_group(c, carries, x, dx, k, nc, ch);
  push_group(c, xs, x, dx, k + nc, nx, xh);
  Vals res = ScanView::make(c.b, view.length, consts, carries, xs, nbody, view.reverse);
  RuleResult r;
  size_t at = take_group(res, 0, nc, ch, r);
  take_group(res, at, ny, yh, r);
  return r;
}

// run_scoped: operands and their tangents, then the scratch Refs and a
// tangent scratch Ref for each floating-point one and each DMA semaphore
// (allocated alongside; see has_tangent_scratch).
RuleResult run_scoped_rule(Ctx& c, const Op& op, const Vals& x, const Tans& dx) {
  const Body& body = *op.param(keys::body);
  int n = static_cast<int>(x.size());
  int ns = static_cast<int>(body.params().size()) - n;
  std::vector<bool> ah = nonzero(dx, 0, n);
  std::vector<Type> stypes;
  for (int s = 0; s < ns; ++s) stypes.push_back(body.params()[n + s]->type);
  std::vector<bool> sh;
  for (const Type& t : stypes) sh.push_back(has_tangent_scratch(t));
  std::vector<bool> oh = differentiable_mask(body.output_types());
  std::vector<Slot> layout, outs;
  group(layout, 0, n, ah);
  group(layout, n, ns, sh);
  group(outs, 0, static_cast<int>(oh.size()), oh);
  BodyPtr nbody = jvp_body_layout(c, body, body.name(), body.kind(), layout, outs);
  Vals ops;
  push_group(c, ops, x, dx, 0, n, ah);
  Vals res = c.b.emit(*op.prim, ops, params_with(op, {{"body", nbody}}));
  RuleResult r;
  take_group(res, 0, oh.size(), oh, r);
  return r;
}

std::string mask_key(const void* p, const std::vector<bool>& m) {
  std::ostringstream s;
  s << "jvp:" << p << ":";
  for (bool b : m) s << (b ? '1' : '0');
  return s.str();
}

// call: the callee is differentiated once per tangent pattern into a new
// module function `@f_jvp(primals..., tangents...)`.
RuleResult call_rule(Ctx& c, const Op& op, const Vals& x, const Tans& dx) {
  const BodyPtr& callee = op.param(keys::callee);
  std::vector<bool> has = nonzero(dx, 0, x.size());
  std::vector<bool> oh = differentiable_mask(callee->output_types());
  std::string key = mask_key(callee.get(), has);
  BodyPtr f;
  if (auto it = c.syms.memo.find(key); it != c.syms.memo.end()) {
    f = it->second;
  } else {
    f = jvp_body(c, *callee, c.syms.fresh(callee->name() + "_jvp"), callee->kind(), has, oh);
    c.syms.add(f);
    c.syms.memo[key] = f;
  }
  Vals ops;
  push_group(c, ops, x, dx, 0, x.size(), has);
  Vals res = c.b.emit(*op.prim, ops, params_with(op, {{"callee", f}}));
  RuleResult r;
  take_group(res, 0, oh.size(), oh, r);
  return r;
}

// custom_jvp_call (jax.custom_jvp): the primal is the op itself, kept so
// that a second jvp uses the rule again; the tangents are the user's `jvp`
// body inlined on the primals and the (materialised) tangents. Differentiating
// the inlined rule is what a second-order jvp then does, as in JAX.
RuleResult custom_jvp_call_rule(Ctx& c, const Op& op, const Vals& x, const Tans& dx) {
  RuleResult r;
  r.primals = emit_primal(c, op, x);
  std::vector<bool> differentiable = differentiable_mask(op.param(keys::call)->output_types());
  if (std::none_of(dx.begin(), dx.end(), [](const Tangent& t) { return t.has_value(); })) {
    r.tangents.assign(r.primals.size(), std::nullopt);
    return r;
  }
  const Body& rule = *op.param(keys::jvp);
  ValueMap map;
  for (size_t i = 0; i < x.size(); ++i) {
    map[rule.params()[i]] = x[i];
    map[rule.params()[x.size() + i]] = c.instantiate(dx[i], x[i].type());
  }
  Vals tangents = inline_body(rule, c.b.body(), map);
  for (size_t i = 0; i < tangents.size(); ++i)
    r.tangents.push_back(differentiable[i] ? Tangent(tangents[i]) : std::nullopt);
  return r;
}

// custom_vjp_call (jax.custom_vjp): the primal is the user's `fwd` inlined,
// whose residuals feed a `custom_lin` standing for the tangents: linear in
// them, transposed by `bwd`, and never run (JAX builds the same custom_lin).
// So linearize puts `fwd` in the primal function and custom_lin in the
// tangent one, and transpose turns it into `bwd`.
RuleResult custom_vjp_call_rule(Ctx& c, const Op& op, const Vals& x, const Tans& dx) {
  RuleResult r;
  if (std::none_of(dx.begin(), dx.end(), [](const Tangent& t) { return t.has_value(); })) {
    r.primals = emit_primal(c, op, x);
    r.tangents.assign(r.primals.size(), std::nullopt);
    return r;
  }
  const Body& fwd = *op.param(keys::fwd);
  ValueMap map;
  for (size_t i = 0; i < x.size(); ++i) map[fwd.params()[i]] = x[i];
  Vals outs = inline_body(fwd, c.b.body(), map);
  size_t n = op.results.size();
  r.primals.assign(outs.begin(), outs.begin() + static_cast<long>(n));
  Vals lin_in(outs.begin() + static_cast<long>(n), outs.end());
  for (size_t i = 0; i < x.size(); ++i) lin_in.push_back(c.instantiate(dx[i], x[i].type()));
  Vals t = c.b.emit("custom_lin", lin_in,
                    {{"bwd", op.param(keys::bwd)}, {"num_res", static_cast<int64_t>(outs.size() - n)}});
  std::vector<bool> differentiable = differentiable_mask(op.param(keys::call)->output_types());
  for (size_t i = 0; i < t.size(); ++i) r.tangents.push_back(differentiable[i] ? Tangent(t[i]) : std::nullopt);
  return r;
}

// core_map: the body gets the tangent Refs as extra operands.
RuleResult core_map_rule(Ctx& c, const Op& op, const Vals& x, const Tans& dx) {
  const Body& body = *op.param(keys::body);
  std::vector<bool> has = nonzero(dx, 0, x.size());
  BodyPtr nbody = jvp_body(c, body, body.name(), body.kind(), has, {});
  Vals ops;
  push_group(c, ops, x, dx, 0, x.size(), has);
  c.b.emit(*op.prim, ops, params_with(op, {{"body", nbody}}));
  return {};
}

// pmap (jax/_src/interpreters/pxla.py, `xla_call_jvp_update_params`, the
// map primitive's jvp parameter updater): tangents are mapped like their
// primals, so in_axes / out_axes are extended with the primals' entries.
RuleResult pmap_rule(Ctx& c, const Op& op, const Vals& x, const Tans& dx) {
  const Body& body = *op.param(keys::body);
  std::vector<bool> has = nonzero(dx, 0, x.size());
  std::vector<bool> oh = differentiable_mask(body.output_types());
  BodyPtr nbody = jvp_body(c, body, body.name(), body.kind(), has, oh);
  std::vector<int64_t> in_axes = op.param(keys::in_axes), out_axes = op.param(keys::out_axes);
  for (size_t i = 0; i < has.size(); ++i)
    if (has[i]) in_axes.push_back(op.param(keys::in_axes)[i]);
  for (size_t i = 0; i < oh.size(); ++i)
    if (oh[i]) out_axes.push_back(op.param(keys::out_axes)[i]);
  Vals ops;
  push_group(c, ops, x, dx, 0, x.size(), has);
  Params p = params_with(op, {{"body", nbody}, {"in_axes", in_axes}, {"out_axes", out_axes}});
  Vals res = c.b.emit(*op.prim, ops, p);
  RuleResult r;
  take_group(res, 0, oh.size(), oh, r);
  return r;
}

}  // namespace

void add_control_rules(RuleTable<JvpRule>& t) {
  t.set("cond", cond_rule);
  t.set("while", while_rule);
  t.set("for", for_rule);
  t.set("scan", scan_rule);
  t.set("run_scoped", run_scoped_rule);
  t.set("call", call_rule);
  t.set("custom_jvp_call", custom_jvp_call_rule);
  t.set("custom_vjp_call", custom_vjp_call_rule);
  t.set("core_map", core_map_rule);
  t.set("pmap", pmap_rule);
}

}  // namespace tessera::jvp
