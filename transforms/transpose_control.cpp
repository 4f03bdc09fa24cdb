// Transpose rules of control flow, and which results of a control op are
// linear (a body may compute primal values beside tangents: partial_eval
// stages a loop or cond with tangent operands whole).
//
//   cond      the same cond over transposed branches.
//   for/scan  a loop running backwards over the transposed body (JAX's
//             `_scan_transpose`, jax/_src/lax/control_flow/loops.py): the
//             cotangents of linear carries are carried, those of linear
//             constants accumulated. Non-linear carries the body reads are
//             first recorded per iteration by a forward loop over the body's
//             non-linear part (residuals stacked as scan outputs), so a `for`
//             with such carries needs static bounds.
//   while     with a trip count known on entry (cond `lt %i, %n`, the body
//             adding 1 to %i), as the equivalent `for`; otherwise an error.
//   call      a transposed copy of the callee, made once per linearity mask.
//   pmap      a pmap of the transposed body; cotangents of unmapped linear
//             inputs are summed over the devices.
#include <algorithm>
#include <sstream>

#include "ir/control_views.h"
#include "transforms/transpose.h"

namespace tessera::transpose {
namespace {

using Vals = std::vector<Value>;

// v[from, to): the parts of an operand list assembled in op order.
Vals part(const Vals& v, size_t from, size_t to) { return Vals(v.begin() + static_cast<long>(from), v.begin() + static_cast<long>(to)); }
using Cts = std::vector<Cotangent>;
using Mask = std::vector<bool>;

Mask slice_mask(const Mask& m, size_t from, size_t n) {
  return Mask(m.begin() + static_cast<long>(from), m.begin() + static_cast<long>(from + n));
}

Mask concat(Mask a, const Mask& c) {
  a.insert(a.end(), c.begin(), c.end());
  return a;
}


bool is_linear_array(const Mask& lin, const Value& v, size_t i) { return lin[i] && !v.type().is_ref(); }

// ---- cond ----------------------------------------------------------------------

Mask cond_results(const Op& op, const Mask& lin) {
  Mask args = slice_mask(lin, 1, lin.size() - 1);
  Mask out(op.results.size(), false);
  for (const BodyPtr& br : op.param(keys::branches)) {
    Mask o = linear_outputs(*br, args);
    for (size_t j = 0; j < out.size(); ++j) out[j] = out[j] || o[j];
  }
  return out;
}

// cond %p, args...: cond %p, (non-linear args, cotangent Refs), cotangents of
// the linear results -> cotangents of the linear array args.
Cts cond_rule(Ctx& c, const Op& op, const Vals& x, const Mask& lin, const Cts& ct) {
  if (lin[0]) throw Error(op.loc, "transpose: `cond` is not linear in its branch index");
  size_t n = x.size() - 1;
  Mask args = slice_mask(lin, 1, n);
  Mask outs = cond_results(op, lin);
  Vals operands{x[0]};
  for (size_t i = 0; i < n; ++i)
    if (!is_linear_array(lin, op.operands[1 + i], 1 + i)) operands.push_back(x[1 + i]);
  std::vector<size_t> out_ct;
  for (size_t j = 0; j < outs.size(); ++j)
    if (outs[j] && has_cotangent(op.results[j]->type)) {
      out_ct.push_back(j);
      operands.push_back(c.instantiate(ct[j], op.results[j]->type));
    }
  std::vector<size_t> which;
  for (size_t i = 0; i < n; ++i)
    if (is_linear_array(lin, op.operands[1 + i], 1 + i)) which.push_back(i);
  // Residuals the forward part recorded (cond_forward): every branch takes
  // them all and uses its own.
  auto saved = c.residuals.find(&op);
  Vals residuals = saved == c.residuals.end() ? Vals{} : saved->second;
  operands.insert(operands.end(), residuals.begin(), residuals.end());
  std::vector<BodyPtr> branches;
  size_t at = 0;
  for (const BodyPtr& br : op.param(keys::branches)) {
    BodyPtr nb = make_body(br->name(), br->kind());
    nb->set_loc(br->loc());
    Builder b(*nb);
    b.set_loc(br->loc());
    Vals params(n);
    for (size_t i = 0; i < n; ++i) {
      const Var* p = br->params()[i];
      if (!is_linear_array(lin, op.operands[1 + i], 1 + i)) params[i] = b.param(p->type, args[i] ? cotangent_name(p->name) : p->name);
    }
    Cts octs(br->outputs().size());
    for (size_t j : out_ct) octs[j] = Value(b.param(br->outputs()[j].type(), "ct" + std::to_string(j)));
    Vals rparams;
    for (const Value& v : residuals) rparams.push_back(b.param(v.type(), "res"));
    Given given;
    if (!residuals.empty()) {
      given.vars = read_residuals(*br, args);
      given.values.assign(rparams.begin() + static_cast<long>(at), rparams.begin() + static_cast<long>(at + given.vars.size()));
      at += given.vars.size();
    }
    Ctx inner{b, c.syms, {}, c.dma_mirror};
    Cts r = inline_transpose(inner, *br, params, args, octs, nullptr, residuals.empty() ? nullptr : &given);
    Vals res;
    for (size_t i : which) res.push_back(inner.instantiate(r[i], br->params()[i]->type));
    b.ret(res);
    branches.push_back(nb);
  }
  Vals got = CondView::make(c.b, operands[0], part(operands, 1, operands.size()), branches);
  Cts r(op.operands.size());
  for (size_t k = 0; k < which.size(); ++k) r[1 + which[k]] = got[k];
  return r;
}

// ---- loops ---------------------------------------------------------------------

// Carries linear on entry or made linear by the body, to a fixpoint. The
// body's params are (`before`, carries, `after`): for's index and consts,
// scan's consts and xs.
Mask loop_carries(const Body& body, const Mask& before, Mask carries, const Mask& after = {}) {
  for (;;) {
    Mask out = linear_outputs(body, concat(concat(before, carries), after));
    bool changed = false;
    for (size_t j = 0; j < carries.size(); ++j)
      if (out[j] && !carries[j]) carries[j] = true, changed = true;
    if (!changed) return carries;
  }
}

// lo + hi - 1 - v: iteration v of the reversed loop replays that iteration of the forward one.
Value reversed_index(Builder& b, Value v, const Value& lo, const Value& hi) {
  Value one = Builder::literal(v.type().dtype(), 1);
  return b.binary("sub", b.binary("sub", b.binary("add", lo, hi), one), v);
}

// A stack [n, ...t] of one carry, its slice at `at`, and an update at `at`.
Type stacked(const Type& t, int64_t n) {
  Shape s{n};
  s.insert(s.end(), t.shape().begin(), t.shape().end());
  return Type::array(t.dtype(), s);
}

Value stack_put(Builder& b, Value stack, Value v, Value at) {
  Value e = b.emit1("expand_dims", {v}, {{"dimensions", std::vector<int64_t>{0}}});
  Vals ops{stack, e, at};
  for (int d = 0; d < v.type().rank(); ++d) ops.push_back(Builder::literal(at.type().dtype(), 0));
  return b.emit1("dynamic_update_slice", ops);
}

Value stack_get(Builder& b, Value stack, Value at) {
  Shape sizes = stack.type().shape();
  sizes[0] = 1;
  Vals ops{stack, at};
  for (int d = 1; d < stack.type().rank(); ++d) ops.push_back(Builder::literal(at.type().dtype(), 0));
  Value s = b.emit1("dynamic_slice", ops, {{"slice_sizes", sizes}});
  return b.emit1("squeeze", {s}, {{"dimensions", std::vector<int64_t>{0}}});
}

Mask for_results(const Op& op, const Mask& lin) {
  ForView v(op);
  Mask consts = slice_mask(lin, 2, v.num_consts);
  Mask carries = slice_mask(lin, v.first_carry(), v.num_carries);
  return loop_carries(v.body(), concat(Mask{false}, consts), carries);
}

// for[body] %lo, %hi, consts..., carries...
Cts for_rule(Ctx& c, const Op& op, const Vals& x, const Mask& lin, const Cts& ct) {
  ForView view(op);
  Builder& B = c.b;
  int k = view.num_consts, nc = view.num_carries;
  const Body& body = view.body();
  Mask kl = slice_mask(lin, 2, k);
  Mask cl = for_results(op, lin);
  Mask body_lin = concat(concat(Mask{false}, kl), cl);
  // Non-linear carries the body reads: recorded per iteration.
  std::vector<int> rec;
  Mask read = params_read_by_transpose(body, body_lin);
  for (int j = 0; j < nc; ++j)
    if (!cl[j] && read[1 + k + j]) rec.push_back(j);
  Value lo = x[0], hi = x[1];
  std::vector<Value> stacks;
  int64_t n = 0;
  if (!rec.empty()) {
    if (!lo.is_literal() || !hi.is_literal())
      throw Error(op.loc, "transpose: this loop carries non-linear values its transpose must replay backwards, which "
                          "needs a static trip count (it has " + std::string(lo.is_literal() ? "a dynamic upper" : "a dynamic lower") +
                          " bound); use a `scan`");
    n = std::max<int64_t>(0, hi.literal().as_int() - lo.literal().as_int());
    // The forward loop: (i, consts, recorded carries' stacks, non-linear carries).
    BodyPtr nl = nonlinear_part(body, body_lin, body.name() + "_fwd");
    BodyPtr fb = make_body(body.name() + "_record", body.kind());
    fb->set_loc(body.loc());
    Builder b(*fb);
    b.set_loc(op.loc);
    ValueMap map;
    Var* i = b.param(body.params()[0]->type, "i");
    map[nl->params()[0]] = i;
    for (int q = 0; q < k; ++q) map[nl->params()[1 + q]] = b.param(nl->params()[1 + q]->type, nl->params()[1 + q]->name);
    Vals carries(nc), sts;
    for (int j = 0; j < nc; ++j) {
      const Var* p = nl->params()[1 + k + j];
      if (!cl[j]) carries[j] = map[p] = b.param(p->type, p->name);
    }
    for (int j : rec) sts.push_back(b.param(stacked(body.params()[1 + k + j]->type, n), "stack"));
    for (int j = 0; j < nc; ++j)
      if (cl[j]) map[nl->params()[1 + k + j]] = b.zeros(nl->params()[1 + k + j]->type);
    Vals outs = inline_body(*nl, *fb, map);
    Vals fouts;
    for (int j = 0; j < nc; ++j)
      if (!cl[j]) fouts.push_back(outs[j]);
    Value at = b.binary("sub", Value(i), lo);
    for (size_t r = 0; r < rec.size(); ++r) fouts.push_back(stack_put(b, sts[r], carries[rec[r]], at));
    b.ret(fouts);
    Vals fops{lo, hi};
    for (int q = 0; q < k; ++q) fops.push_back(kl[q] && !op.operands[2 + q].type().is_ref() ? B.zeros(op.operands[2 + q].type()) : x[2 + q]);
    for (int j = 0; j < nc; ++j)
      if (!cl[j]) fops.push_back(x[2 + k + j]);
    for (int j : rec) fops.push_back(B.zeros(stacked(body.params()[1 + k + j]->type, n)));
    Vals got = ForView::make(B, lo, hi, part(fops, 2, 2 + k), part(fops, 2 + k, fops.size()), fb);
    int nnl = static_cast<int>(got.size() - rec.size());
    stacks.assign(got.begin() + nnl, got.end());
  }

  // The reversed loop: (j, consts: non-linear consts / cotangent Refs, lo, hi,
  // stacks; carries: accumulated cotangents of linear array consts,
  // cotangents of linear carries).
  std::vector<int> kct, cct;
  for (int q = 0; q < k; ++q)
    if (kl[q] && !op.operands[2 + q].type().is_ref()) kct.push_back(q);
  for (int j = 0; j < nc; ++j)
    if (cl[j]) cct.push_back(j);
  BodyPtr rb = make_body(body.name() + "_transpose", body.kind());
  rb->set_loc(body.loc());
  Builder b(*rb);
  b.set_loc(op.loc);
  Var* jv = b.param(body.params()[0]->type, "j");
  Vals params(1 + k + nc), rops{lo, hi};
  std::vector<int> kept_consts;
  for (int q = 0; q < k; ++q) {
    if (kl[q] && !op.operands[2 + q].type().is_ref()) continue;
    const Var* p = body.params()[1 + q];
    params[1 + q] = b.param(p->type, kl[q] ? cotangent_name(p->name) : p->name);
    rops.push_back(x[2 + q]);
  }
  // Static bounds fold into the reversed index; dynamic ones are passed in.
  bool static_bounds = lo.is_literal() && hi.is_literal();
  Value lov = lo, hiv = hi;
  if (!static_bounds) {
    lov = b.param(lo.type(), "lo");
    hiv = b.param(hi.type(), "hi");
    rops.push_back(lo);
    rops.push_back(hi);
  }
  Vals sts;
  for (size_t r = 0; r < rec.size(); ++r) {
    sts.push_back(b.param(stacks[r].type(), "stack"));
    rops.push_back(stacks[r]);
  }
  int num_consts = static_cast<int>(rops.size()) - 2;
  Vals acc, cts;
  for (int q : kct) {
    acc.push_back(b.param(op.operands[2 + q].type(), cotangent_name(body.params()[1 + q]->name)));
    rops.push_back(B.zeros(op.operands[2 + q].type()));
  }
  for (int j : cct) {
    cts.push_back(b.param(op.results[j]->type, cotangent_name(body.params()[1 + k + j]->name)));
    rops.push_back(c.instantiate(ct[j], op.results[j]->type));
  }
  Value iv;
  if (static_bounds) {
    int64_t last = lo.literal().as_int() + hi.literal().as_int() - 1;
    iv = b.binary("sub", Builder::literal(lo.type().dtype(), static_cast<double>(last)), jv);
  } else {
    iv = reversed_index(b, jv, lov, hiv);
  }
  params[0] = iv;
  if (!rec.empty()) {
    Value at = static_bounds && lo.literal().as_int() == 0 ? iv : b.binary("sub", iv, lov);
    for (size_t r = 0; r < rec.size(); ++r) params[1 + k + rec[r]] = stack_get(b, sts[r], at);
  }
  for (int j = 0; j < nc; ++j)
    if (!cl[j] && std::find(rec.begin(), rec.end(), j) == rec.end()) params[1 + k + j] = b.zeros(body.params()[1 + k + j]->type);
  Cts octs(nc);
  for (size_t s = 0; s < cct.size(); ++s) octs[cct[s]] = cts[s];
  Ctx inner{b, c.syms, {}, c.dma_mirror};
  Cts r = inline_transpose(inner, body, params, body_lin, octs);
  Vals routs;
  for (size_t s = 0; s < kct.size(); ++s) routs.push_back(inner.add(acc[s], r[1 + kct[s]]).value());
  for (int j : cct) routs.push_back(inner.instantiate(r[1 + k + j], body.params()[1 + k + j]->type));
  b.ret(routs);
  const size_t first_carry = 2 + static_cast<size_t>(num_consts);
  Vals got = ForView::make(B, rops[0], rops[1], part(rops, 2, first_carry), part(rops, first_carry, rops.size()), rb);
  Cts res(op.operands.size());
  for (size_t s = 0; s < kct.size(); ++s) res[2 + kct[s]] = got[s];
  for (size_t s = 0; s < cct.size(); ++s)
    if (lin[2 + k + cct[s]]) res[2 + k + cct[s]] = got[kct.size() + s];
  return res;
}

Mask scan_results(const Op& op, const Mask& lin) {
  ScanView v(op);
  Mask consts = slice_mask(lin, 0, v.num_consts);
  Mask carries = slice_mask(lin, v.first_carry(), v.num_carries);
  Mask xs = slice_mask(lin, v.first_x(), v.num_xs);
  carries = loop_carries(v.body(), consts, carries, xs);
  Mask out = linear_outputs(v.body(), concat(concat(consts, carries), xs));
  for (int j = 0; j < v.num_carries; ++j) out[j] = carries[j];
  return out;
}

// scan[body, length, reverse] consts..., carries..., xs... -> carries..., ys...
Cts scan_rule(Ctx& c, const Op& op, const Vals& x, const Mask& lin, const Cts& ct) {
  ScanView view(op);
  Builder& B = c.b;
  int k = view.num_consts, nc = view.num_carries, nx = view.num_xs, ny = view.num_ys();
  int64_t n = view.length;
  const Body& body = view.body();
  Mask kl = slice_mask(lin, 0, k), xl = slice_mask(lin, view.first_x(), nx);
  Mask outs = scan_results(op, lin);
  Mask cl = slice_mask(outs, 0, nc), yl = slice_mask(outs, nc, ny);
  Mask body_lin = concat(concat(kl, cl), xl);
  auto linear_array = [&](int operand) { return lin[operand] && !op.operands[operand].type().is_ref(); };
  std::vector<int> rec;
  Mask read = params_read_by_transpose(body, body_lin);
  for (int j = 0; j < nc; ++j)
    if (!cl[j] && read[k + j]) rec.push_back(j);
  Vals stacks;
  if (!rec.empty()) {
    // Forward: consts, non-linear carries, xs -> non-linear carries, the recorded carries as ys.
    BodyPtr nl = nonlinear_part(body, body_lin, body.name() + "_fwd");
    BodyPtr fb = make_body(body.name() + "_record", body.kind());
    fb->set_loc(body.loc());
    Builder b(*fb);
    b.set_loc(op.loc);
    ValueMap map;
    for (int q = 0; q < k; ++q) map[nl->params()[q]] = b.param(nl->params()[q]->type, nl->params()[q]->name);
    Vals carries(nc);
    for (int j = 0; j < nc; ++j)
      if (!cl[j]) carries[j] = map[nl->params()[k + j]] = b.param(nl->params()[k + j]->type, nl->params()[k + j]->name);
    for (int q = 0; q < nx; ++q) map[nl->params()[k + nc + q]] = b.param(nl->params()[k + nc + q]->type, "x");
    for (int j = 0; j < nc; ++j)
      if (cl[j]) map[nl->params()[k + j]] = b.zeros(nl->params()[k + j]->type);
    Vals o = inline_body(*nl, *fb, map);
    Vals fouts;
    for (int j = 0; j < nc; ++j)
      if (!cl[j]) fouts.push_back(o[j]);
    for (int j : rec) fouts.push_back(carries[j]);
    b.ret(fouts);
    Vals fops;
    for (int q = 0; q < k; ++q) fops.push_back(linear_array(q) ? B.zeros(op.operands[q].type()) : x[q]);
    int nnl = 0;
    for (int j = 0; j < nc; ++j)
      if (!cl[j]) fops.push_back(x[k + j]), ++nnl;
    for (int q = 0; q < nx; ++q) fops.push_back(linear_array(k + nc + q) ? B.zeros(op.operands[k + nc + q].type()) : x[k + nc + q]);
    Vals got = ScanView::make(B, n, part(fops, 0, k), part(fops, k, k + nnl), part(fops, k + nnl, fops.size()), fb,
                              view.reverse);
    stacks.assign(got.begin() + nnl, got.end());
  }

  // Backward: consts (non-linear, cotangent Refs); carries (accumulated
  // cotangents of linear array consts, cotangents of linear carries); xs
  // (non-linear xs, recorded carries, cotangents of linear ys) -> ys:
  // cotangents of linear xs.
  BodyPtr rb = make_body(body.name() + "_transpose", body.kind());
  rb->set_loc(body.loc());
  Builder b(*rb);
  b.set_loc(op.loc);
  Vals params(k + nc + nx), rops;
  std::vector<int> kct, cct, xct, yct;
  for (int q = 0; q < k; ++q) {
    if (linear_array(q)) {
      kct.push_back(q);
      continue;
    }
    params[q] = b.param(body.params()[q]->type, kl[q] ? cotangent_name(body.params()[q]->name) : body.params()[q]->name);
    rops.push_back(x[q]);
  }
  int rk = static_cast<int>(rops.size());
  Vals acc, cts;
  for (int q : kct) {
    acc.push_back(b.param(op.operands[q].type(), cotangent_name(body.params()[q]->name)));
    rops.push_back(B.zeros(op.operands[q].type()));
  }
  for (int j = 0; j < nc; ++j)
    if (cl[j]) {
      cct.push_back(j);
      cts.push_back(b.param(op.results[j]->type, cotangent_name(body.params()[k + j]->name)));
      rops.push_back(c.instantiate(ct[j], op.results[j]->type));
    }
  int rc = static_cast<int>(rops.size()) - rk;
  for (int q = 0; q < nx; ++q) {
    if (linear_array(k + nc + q)) {
      xct.push_back(q);
      continue;
    }
    params[k + nc + q] = b.param(body.params()[k + nc + q]->type, body.params()[k + nc + q]->name);
    rops.push_back(x[k + nc + q]);
  }
  for (size_t r = 0; r < rec.size(); ++r) {
    params[k + rec[r]] = b.param(body.params()[k + rec[r]]->type, body.params()[k + rec[r]]->name);
    rops.push_back(stacks[r]);
  }
  for (int j = 0; j < nc; ++j)
    if (!cl[j] && std::find(rec.begin(), rec.end(), j) == rec.end()) params[k + j] = b.zeros(body.params()[k + j]->type);
  Cts octs(nc + ny);
  for (size_t s = 0; s < cct.size(); ++s) octs[cct[s]] = cts[s];
  for (int q = 0; q < ny; ++q) {
    const Type& t = body.outputs()[nc + q].type();
    if (!yl[q] || !has_cotangent(t)) continue;
    yct.push_back(q);
    octs[nc + q] = Value(b.param(t, "ct_y"));
    rops.push_back(c.instantiate(ct[nc + q], op.results[nc + q]->type));
  }
  Ctx inner{b, c.syms, {}, c.dma_mirror};
  Cts r = inline_transpose(inner, body, params, body_lin, octs);
  Vals routs;
  for (size_t s = 0; s < kct.size(); ++s) routs.push_back(inner.add(acc[s], r[kct[s]]).value());
  for (int j : cct) routs.push_back(inner.instantiate(r[k + j], body.params()[k + j]->type));
  for (int q : xct) routs.push_back(inner.instantiate(r[k + nc + q], body.params()[k + nc + q]->type));
  b.ret(routs);
  Vals got = ScanView::make(B, n, part(rops, 0, rk), part(rops, rk, rk + rc), part(rops, rk + rc, rops.size()), rb,
                            !view.reverse);
  Cts res(op.operands.size());
  for (size_t s = 0; s < kct.size(); ++s) res[kct[s]] = got[s];
  for (size_t s = 0; s < cct.size(); ++s)
    if (lin[k + cct[s]]) res[k + cct[s]] = got[kct.size() + s];
  for (size_t s = 0; s < xct.size(); ++s) res[k + nc + xct[s]] = got[kct.size() + cct.size() + s];
  return res;
}

// ---- while ---------------------------------------------------------------------

// The carry a while loop counts with, when its trip count is known on entry:
// cond is `lt %carry, %bound` (bound a constant or literal) and the body
// returns that carry plus 1. -1 when not. `bound_operand`: the op's operand
// holding the bound, or -1 when it is the literal `*bound`.
int counter_carry(const WhileView& v, Value* bound, int* bound_operand) {
  const Body& cond = v.cond();
  if (cond.ops().size() != 1 || cond.outputs().size() != 1) return -1;
  const Op& lt = cond.ops()[0];
  if (lt.name() != "lt" || !cond.outputs()[0].is_var() || cond.outputs()[0].var() != lt.results[0]) return -1;
  const Value& a = lt.operands[0];
  int carry = -1;
  for (int j = 0; j < v.num_carries; ++j)
    if (a.is_var() && a.var() == cond.params()[v.num_consts + j]) carry = j;
  if (carry < 0) return -1;
  const Value& bnd = lt.operands[1];
  *bound_operand = -1;
  if (bnd.is_literal()) *bound = bnd;
  else {
    int q = -1;
    for (int i = 0; i < v.num_consts; ++i)
      if (bnd.is_var() && bnd.var() == cond.params()[i]) q = i;
    if (q < 0) return -1;
    *bound = v.op.operands[q];
    *bound_operand = q;
  }
  const Body& body = v.body();
  const Value& next = body.outputs()[carry];
  const Var* p = body.params()[v.num_consts + carry];
  for (const Op& op : body.ops()) {
    if (op.results.size() != 1 || !next.is_var() || op.results[0] != next.var() || op.name() != "add") continue;
    for (int s = 0; s < 2; ++s) {
      const Value& u = op.operands[s];
      const Value& one = op.operands[1 - s];
      if (u.is_var() && u.var() == p && one.is_literal() && one.literal().as_int() == 1) return carry;
    }
  }
  return -1;
}

// The `for` equivalent to a counting while loop: bounds (counter's initial
// value, bound), the same consts and carries; the body reads the counter from
// the index (so the transpose need not record it).
Op as_for(const Op& op, int carry, const Value& bound) {
  WhileView v(op);
  const Body& body = v.body();
  BodyPtr fb = make_body(body.name(), body.kind());
  fb->set_loc(body.loc());
  Var* i = fb->add_param(body.params()[v.num_consts + carry]->type, "i", body.loc());
  ValueMap map;
  for (const Var* p : body.params()) map[p] = fb->add_param(p->type, p->name, p->loc);
  map[body.params()[v.num_consts + carry]] = i;
  fb->set_outputs(inline_body(body, *fb, map));
  Op f;
  f.prim = &prim("for");
  f.loc = op.loc;
  f.operands = {op.operands[v.num_consts + carry], bound};
  f.operands.insert(f.operands.end(), op.operands.begin(), op.operands.end());
  f.params = {{"body", fb}, {"num_consts", int64_t{v.num_consts}}};
  f.results = op.results;
  return f;
}

[[noreturn]] void unknown_trip_count(const Op& op) {
  throw Error(op.loc, "transpose: this `while` has no trip count known on entry (its cond is not `lt` of a carry the "
                      "body increments by 1, against a constant); its transpose would need to record every iteration: "
                      "write it as a `for` or `scan`");
}

Mask while_results(const Op& op, const Mask& lin) {
  WhileView v(op);
  Mask consts = slice_mask(lin, 0, v.num_consts);
  Mask carries = slice_mask(lin, v.first_carry(), v.num_carries);
  return loop_carries(v.body(), consts, carries);
}

Cts while_rule(Ctx& c, const Op& op, const Vals& x, const Mask& lin, const Cts& ct) {
  WhileView v(op);
  Value bound;
  int bound_operand = -1;
  int carry = counter_carry(v, &bound, &bound_operand);
  if (carry < 0) unknown_trip_count(op);
  Op f = as_for(op, carry, bound);
  Vals fx{x[v.num_consts + carry], bound_operand >= 0 ? x[bound_operand] : bound};
  fx.insert(fx.end(), x.begin(), x.end());
  Mask flin{false, false};
  flin.insert(flin.end(), lin.begin(), lin.end());
  Cts r = for_rule(c, f, fx, flin, ct);
  return Cts(r.begin() + 2, r.end());
}

// ---- call and pmap -------------------------------------------------------------

std::string mask_key(const void* p, const Mask& m) {
  std::ostringstream s;
  s << "transpose:" << p << ":";
  for (bool b : m) s << (b ? '1' : '0');
  return s.str();
}

Mask call_results(const Op& op, const Mask& lin) { return linear_outputs(*op.param(keys::callee), lin); }

// call @f args: call @f_transpose (non-linear args, cotangent Refs,
// cotangents of f's float results) -> cotangents of the linear array args.
Cts call_rule(Ctx& c, const Op& op, const Vals& x, const Mask& lin, const Cts& ct) {
  const BodyPtr& callee = op.param(keys::callee);
  std::string key = mask_key(callee.get(), lin);
  BodyPtr f;
  if (auto it = c.syms.memo.find(key); it != c.syms.memo.end()) {
    f = it->second;
  } else {
    f = transpose_body(c, *callee, c.syms.fresh(callee->name() + "_transpose"), callee->kind(), lin);
    c.syms.add(f);
    c.syms.memo[key] = f;
  }
  Vals operands;
  std::vector<size_t> which;
  for (size_t i = 0; i < x.size(); ++i) {
    if (is_linear_array(lin, op.operands[i], i)) which.push_back(i);
    else operands.push_back(x[i]);
  }
  for (size_t j = 0; j < op.results.size(); ++j)
    if (has_cotangent(op.results[j]->type)) operands.push_back(c.instantiate(ct[j], op.results[j]->type));
  Vals got = c.b.emit(*op.prim, operands, params_with(op, {{"callee", f}}));
  Cts r(op.operands.size());
  for (size_t k = 0; k < which.size(); ++k) r[which[k]] = got[k];
  return r;
}

Mask pmap_results(const Op& op, const Mask& lin) { return linear_outputs(*op.param(keys::body), lin); }

// pmap: the transposed body mapped the same way (cotangents of results on
// their out_axes); an unmapped linear input's cotangent comes out mapped on
// axis 0 and is summed over the devices.
Cts pmap_rule(Ctx& c, const Op& op, const Vals& x, const Mask& lin, const Cts& ct) {
  const Body& body = *op.param(keys::body);
  const auto& in_axes = op.param(keys::in_axes);
  const auto& out_axes = op.param(keys::out_axes);
  BodyPtr t = transpose_body(c, body, body.name() + "_transpose", body.kind(), lin);
  Vals operands;
  std::vector<int64_t> nin, nout;
  std::vector<size_t> which;
  for (size_t i = 0; i < x.size(); ++i) {
    if (is_linear_array(lin, op.operands[i], i)) {
      which.push_back(i);
      nout.push_back(in_axes[i] < 0 ? 0 : in_axes[i]);
      continue;
    }
    operands.push_back(x[i]);
    nin.push_back(in_axes[i]);
  }
  for (size_t j = 0; j < op.results.size(); ++j)
    if (has_cotangent(op.results[j]->type)) {
      operands.push_back(c.instantiate(ct[j], op.results[j]->type));
      nin.push_back(out_axes[j]);
    }
  Vals got = c.b.emit(*op.prim, operands, params_with(op, {{"body", t}, {"in_axes", nin}, {"out_axes", nout}}));
  Cts r(op.operands.size());
  for (size_t s = 0; s < which.size(); ++s) {
    Value g = got[s];
    if (in_axes[which[s]] < 0) g = c.b.emit1("reduce_sum", {g}, {{"axes", std::vector<int64_t>{0}}});
    r[which[s]] = g;
  }
  return r;
}

// ---- forward parts (ForwardRule) -------------------------------------------------

// cond: its branches' non-linear parts, each also returning the residuals
// of every branch (its own, zeros in the others' places).
Vals cond_forward(Ctx& c, const Op& op, const Vals& x, const Mask& lin) {
  Mask args = slice_mask(lin, 1, lin.size() - 1);
  const auto& brs = op.param(keys::branches);
  std::vector<std::vector<const Var*>> res;
  std::vector<Type> types;
  for (const BodyPtr& br : brs) {
    res.push_back(read_residuals(*br, args));
    for (const Var* v : res.back()) types.push_back(v->type);
  }
  std::vector<BodyPtr> branches;
  size_t at = 0;
  for (size_t i = 0; i < brs.size(); ++i) {
    BodyPtr nl = nonlinear_part(*brs[i], args, brs[i]->name(), res[i]);
    // Pad to the common output list: zeros for the other branches' residuals.
    size_t nout = brs[i]->outputs().size();
    Vals outs(nl->outputs().begin(), nl->outputs().begin() + static_cast<long>(nout));
    Builder nb(*nl);
    nb.set_loc(op.loc);
    for (size_t t = 0; t < types.size(); ++t)
      outs.push_back(t >= at && t < at + res[i].size() ? nl->outputs()[nout + t - at] : nb.zeros(types[t]));
    at += res[i].size();
    nb.ret(outs);
    branches.push_back(nl);
  }
  Vals got = CondView::make(c.b, x[0], part(x, 1, x.size()), branches);
  size_t n = op.results.size();
  if (!types.empty()) c.residuals[&op] = Vals(got.begin() + static_cast<long>(n), got.end());
  return Vals(got.begin(), got.begin() + static_cast<long>(n));
}

Vals for_forward(Ctx& c, const Op& op, const Vals& x, const Mask& lin) {
  Builder& b = c.b;
  ForView v(op);
  Mask mask = concat(concat(Mask{false}, slice_mask(lin, 2, v.num_consts)), for_results(op, lin));
  return b.emit(*op.prim, x, params_with(op, {{"body", nonlinear_part(v.body(), mask, v.body().name())}}));
}

Vals scan_forward(Ctx& c, const Op& op, const Vals& x, const Mask& lin) {
  Builder& b = c.b;
  ScanView v(op);
  Mask outs = scan_results(op, lin);
  Mask mask = concat(concat(slice_mask(lin, 0, v.num_consts), slice_mask(outs, 0, v.num_carries)),
                     slice_mask(lin, v.first_x(), v.num_xs));
  return b.emit(*op.prim, x, params_with(op, {{"body", nonlinear_part(v.body(), mask, v.body().name())}}));
}

Vals while_forward(Ctx& c, const Op& op, const Vals& x, const Mask& lin) {
  Builder& b = c.b;
  WhileView v(op);
  Mask mask = concat(slice_mask(lin, 0, v.num_consts), while_results(op, lin));
  return b.emit(*op.prim, x,
                params_with(op, {{"cond", nonlinear_part(v.cond(), mask, v.cond().name())},
                                 {"body", nonlinear_part(v.body(), mask, v.body().name())}}));
}

// custom_lin (jvp's stand-in for a custom_vjp_call's tangents): its
// transpose is the user's `bwd` on the residuals and the cotangents of its
// results (JAX transposes custom_lin the same way).
Cts custom_lin_rule(Ctx& c, const Op& op, const Vals& x, const Mask& lin, const Cts& ct) {
  auto k = static_cast<size_t>(op.param(keys::num_res));
  for (size_t i = 0; i < k; ++i)
    if (lin[i])
      throw Error(op.loc, "transpose: residual " + std::to_string(i) + " of custom_lin is linear; only its tangents may be");
  Cts r(op.operands.size());
  if (std::none_of(ct.begin(), ct.end(), [](const Cotangent& t) { return t.has_value(); })) return r;
  const Body& bwd = *op.param(keys::bwd);
  ValueMap map;
  for (size_t i = 0; i < k; ++i) map[bwd.params()[i]] = x[i];
  for (size_t j = 0; j < ct.size(); ++j) map[bwd.params()[k + j]] = c.instantiate(ct[j], op.results[j]->type);
  Vals cts = inline_body(bwd, c.b.body(), map);
  for (size_t i = 0; i < cts.size(); ++i)
    if (lin[k + i]) r[k + i] = cts[i];
  return r;
}

}  // namespace

void add_control_rules(RuleTable<RuleSet>& t) {
  t.set("custom_lin", {custom_lin_rule});
  t.set("cond", {.transpose = cond_rule, .linear_results = cond_results, .forward = cond_forward});
  t.set("for", {.transpose = for_rule, .linear_results = for_results, .forward = for_forward});
  t.set("scan", {.transpose = scan_rule, .linear_results = scan_results, .forward = scan_forward});
  t.set("while", {.transpose = while_rule, .linear_results = while_results, .forward = while_forward});
  t.set("call", {.transpose = call_rule, .linear_results = call_results});
  t.set("pmap", {.transpose = pmap_rule, .linear_results = pmap_results});
}

}  // namespace tessera::transpose
