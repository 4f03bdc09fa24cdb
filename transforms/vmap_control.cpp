// Batching rules of higher-order ops. Results of a batched control-flow op are
// batched at axis 0 (every branch / iteration must agree on one layout).
#include <sstream>

#include "ir/control_views.h"
#include "transforms/vmap.h"

namespace tessera::vmap {
namespace {

using Vals = std::vector<Value>;
using Dims = std::vector<int>;

RuleResult at0(Vals v) { return {v, Dims(v.size(), 0)}; }

bool has_effects(const Body& b) {
  Effects fx = compute_effects(b);
  return !fx.empty();
}

// `pred` (batched at 0, shape [N]) broadcast to the batched shape of `like`.
Value broadcast_pred(Ctx& c, Value pred, const Type& like) {
  if (like.rank() <= 1) return pred;
  return c.b.emit1("broadcast_in_dim", {pred}, {{"shape", like.shape()}, {"broadcast_dimensions", std::vector<int64_t>{0}}});
}

// cond with a batched index: every branch runs on the whole batch and
// select_n picks per batch element (only sound for pure branches).
RuleResult cond_rule(Ctx& c, const Op& op, const Vals& x, const Dims& d) {
  const auto& branches = op.param(keys::branches);
  Vals args(x.begin() + 1, x.end());
  Dims adims(d.begin() + 1, d.end());
  if (d[0] == kNotMapped) {
    Dims outd(branches[0]->outputs().size(), 0);
    std::vector<BodyPtr> nb;
    for (const BodyPtr& br : branches) nb.push_back(vmap_body(c, *br, br->name(), br->kind(), adims, outd));
    return at0(CondView::make(c.b, x[0], args, nb));
  }
  for (const BodyPtr& br : branches)
    if (has_effects(*br))
      throw Error(op.loc, "vmap: cond with a batched index and branches that have effects is not supported");
  std::vector<Vals> outs;
  for (const BodyPtr& br : branches) {
    RuleResult r = inline_vmap(c, *br, args, adims);
    Vals o;
    for (size_t i = 0; i < r.values.size(); ++i) o.push_back(c.move_to(r.values[i], r.dims[i], 0));
    outs.push_back(o);
  }
  Value idx = c.move_to(x[0], d[0], 0);
  if (!is_bool(idx.type().dtype())) {
    int64_t last = static_cast<int64_t>(branches.size()) - 1;
    DType t = idx.type().dtype();
    idx = c.b.binary("max", c.b.binary("min", idx, Literal::of_int(t, last)), Literal::of_int(t, 0));
  }
  Vals res;
  for (size_t i = 0; i < outs[0].size(); ++i) {
    Vals ops{broadcast_pred(c, idx, outs[0][i].type())};
    for (const Vals& o : outs) ops.push_back(o[i]);
    res.push_back(c.b.emit1("select_n", ops));
  }
  return at0(res);
}

// A body computing `src` batched with given input dims, returning its outputs
// at 0 after `extra` outputs computed by `tail` (used for while's predicate).
RuleResult while_rule(Ctx& c, const Op& op, const Vals& x, const Dims& d) {
  WhileView view(op);
  int k = view.num_consts;
  int nc = static_cast<int>(x.size()) - k;
  Dims in(d.begin(), d.begin() + k);
  for (int j = 0; j < nc; ++j) in.push_back(0);
  const Body& cond = *op.param(keys::cond);
  const Body& body = *op.param(keys::body);
  Vals ops(x.begin(), x.begin() + k);
  for (int j = 0; j < nc; ++j) ops.push_back(c.move_to(x[k + j], d[k + j], 0));

  // Is the predicate batched? Batch the condition once to find out.
  BodyPtr probe = make_body(cond.name(), cond.kind());
  Builder pb(*probe);
  Ctx pc{pb, c.syms, c.size};
  Vals pp;
  for (size_t i = 0; i < in.size(); ++i) pp.push_back(pb.param(batched_type(cond.params()[i]->type, in[i], c.size), cond.params()[i]->name));
  RuleResult pr = inline_vmap(pc, cond, pp, in);
  Dims carries0(nc, 0);
  BodyPtr nbody;
  if (pr.dims[0] == kNotMapped) {
    pb.ret(pr.values);
    nbody = vmap_body(c, body, body.name(), body.kind(), in, carries0);
    return at0(c.b.emit(*op.prim, ops, params_with(op, {{"cond", probe}, {"body", nbody}})));
  }
  // Batched predicate: loop while any element continues; finished elements
  // keep their carries.
  pb.ret({pb.emit1("reduce_or", {pr.values[0]}, {{"axes", std::vector<int64_t>{0}}})});
  nbody = make_body(body.name(), body.kind());
  Builder bb(*nbody);
  Ctx bc{bb, c.syms, c.size};
  Vals bp;
  for (size_t i = 0; i < in.size(); ++i) bp.push_back(bb.param(batched_type(body.params()[i]->type, in[i], c.size), body.params()[i]->name));
  RuleResult keep = inline_vmap(bc, cond, bp, in);
  Value pred = bc.move_to(keep.values[0], keep.dims[0], 0);
  RuleResult next = inline_vmap(bc, body, bp, in);
  Vals outs;
  for (int j = 0; j < nc; ++j) {
    Value nv = bc.move_to(next.values[j], next.dims[j], 0);
    outs.push_back(bb.emit1("select_n", {broadcast_pred(bc, pred, nv.type()), bp[k + j], nv}));
  }
  bb.ret(outs);
  return at0(c.b.emit(*op.prim, ops, params_with(op, {{"cond", probe}, {"body", nbody}})));
}

RuleResult for_rule(Ctx& c, const Op& op, const Vals& x, const Dims& d) {
  if (d[0] != kNotMapped || d[1] != kNotMapped)
    throw Error(op.loc, "vmap: a for loop with batched bounds is not supported (use while)");
  ForView view(op);
  int k = view.num_consts;
  int nc = static_cast<int>(x.size()) - 2 - k;
  Dims in{kNotMapped};
  for (int i = 0; i < k; ++i) in.push_back(d[2 + i]);
  for (int j = 0; j < nc; ++j) in.push_back(0);
  const Body& body = *op.param(keys::body);
  BodyPtr nbody = vmap_body(c, body, body.name(), body.kind(), in, Dims(nc, 0));
  Vals ops(x.begin(), x.begin() + 2 + k);
  for (int j = 0; j < nc; ++j) ops.push_back(c.move_to(x[2 + k + j], d[2 + k + j], 0));
  return at0(c.b.emit(*op.prim, ops, params_with(op, {{"body", nbody}})));
}

// scan: scanned inputs carry the batch at axis 1 (axis 0 is the scan axis),
// so their slices are batched at 0; stacked outputs come out batched at 1.
RuleResult scan_rule(Ctx& c, const Op& op, const Vals& x, const Dims& d) {
  ScanView view(op);
  int k = view.num_consts;
  int nc = view.num_carries;
  int nx = static_cast<int>(x.size()) - k - nc;
  const Body& body = *op.param(keys::body);
  int ny = static_cast<int>(body.outputs().size()) - nc;
  Dims in(d.begin(), d.begin() + k);
  Vals ops(x.begin(), x.begin() + k);
  for (int j = 0; j < nc; ++j) in.push_back(0), ops.push_back(c.move_to(x[k + j], d[k + j], 0));
  for (int j = 0; j < nx; ++j) {
    int dj = d[k + nc + j];
    in.push_back(dj == kNotMapped ? kNotMapped : 0);
    ops.push_back(dj == kNotMapped ? x[k + nc + j] : c.move_to(x[k + nc + j], dj, 1));
  }
  BodyPtr nbody = vmap_body(c, body, body.name(), body.kind(), in, Dims(nc + ny, 0));
  Vals r = c.b.emit(*op.prim, ops, params_with(op, {{"body", nbody}}));
  Dims od(nc, 0);
  for (int j = 0; j < ny; ++j) od.push_back(1);
  return {r, od};
}

// run_scoped: the scratch Refs are batched too (one scratch per element).
RuleResult run_scoped_rule(Ctx& c, const Op& op, const Vals& x, const Dims& d) {
  const Body& body = *op.param(keys::body);
  Dims in = d;
  for (size_t s = x.size(); s < body.params().size(); ++s) in.push_back(0);
  BodyPtr nbody = vmap_body(c, body, body.name(), body.kind(), in, Dims(body.outputs().size(), 0));
  return at0(c.b.emit(*op.prim, x, params_with(op, {{"body", nbody}})));
}

std::string dims_key(const void* p, const Dims& d) {
  std::ostringstream s;
  s << "vmap:" << p;
  for (int v : d) s << ":" << v;
  return s.str();
}

RuleResult call_rule(Ctx& c, const Op& op, const Vals& x, const Dims& d) {
  const BodyPtr& callee = op.param(keys::callee);
  std::string key = dims_key(callee.get(), d);
  BodyPtr f;
  if (auto it = c.syms.memo.find(key); it != c.syms.memo.end()) {
    f = it->second;
  } else {
    f = vmap_body(c, *callee, c.syms.fresh(callee->name() + "_vmap"), callee->kind(), d,
                  Dims(callee->outputs().size(), 0));
    c.syms.add(f);
    c.syms.memo[key] = f;
  }
  return at0(c.b.emit(*op.prim, x, params_with(op, {{"callee", f}})));
}

// custom_jvp_call: both bodies are batched alike (jax/_src/custom_derivatives.py
// batches `fun` and `jvp` together). The rule's tangent parameters are
// batched like their primals, and every result is batched at 0 so that the
// rule's tangents and the call's results agree.
RuleResult custom_jvp_call_rule(Ctx& c, const Op& op, const Vals& x, const Dims& d) {
  const Body& call = *op.param(keys::call);
  const Body& rule = *op.param(keys::jvp);
  Dims primals_and_tangents = d;
  primals_and_tangents.insert(primals_and_tangents.end(), d.begin(), d.end());
  Dims outs(call.outputs().size(), 0);
  BodyPtr ncall = vmap_body(c, call, call.name(), call.kind(), d, outs);
  BodyPtr nrule = vmap_body(c, rule, rule.name(), rule.kind(), primals_and_tangents, outs);
  return at0(c.b.emit(*op.prim, x, params_with(op, {{"call", ncall}, {"jvp", nrule}})));
}

// Every operand with the batch axis at 0: an unbatched one broadcast, so that
// a body's per-example results (bwd's cotangents) line up with its operands;
// the broadcast's transpose then sums an unbatched operand's cotangents.
Vals batched_at_0(Ctx& c, const Vals& x, const Dims& d) {
  Vals ops;
  for (size_t i = 0; i < x.size(); ++i)
    ops.push_back(d[i] == kNotMapped ? ad::broadcast_new_axis(c.b, x[i], c.size, 0) : c.move_to(x[i], d[i], 0));
  return ops;
}

// A body with every parameter and result batched at 0.
BodyPtr vmap_all_at_0(Ctx& c, const Body& b) {
  return vmap_body(c, b, b.name(), b.kind(), Dims(b.params().size(), 0), Dims(b.outputs().size(), 0));
}

// custom_vjp_call: call, fwd and bwd batched together, as JAX batches a
// custom_vjp function's fwd and bwd (jax/_src/custom_derivatives.py).
RuleResult custom_vjp_call_rule(Ctx& c, const Op& op, const Vals& x, const Dims& d) {
  Params p = params_with(op, {{"call", vmap_all_at_0(c, *op.param(keys::call))},
                              {"fwd", vmap_all_at_0(c, *op.param(keys::fwd))},
                              {"bwd", vmap_all_at_0(c, *op.param(keys::bwd))}});
  return at0(c.b.emit(*op.prim, batched_at_0(c, x, d), p));
}

// custom_lin (a custom_vjp_call after jvp): its bwd batched the same way.
RuleResult custom_lin_rule(Ctx& c, const Op& op, const Vals& x, const Dims& d) {
  return at0(c.b.emit(*op.prim, batched_at_0(c, x, d), params_with(op, {{"bwd", vmap_all_at_0(c, *op.param(keys::bwd))}})));
}

// pmap (the map primitive `xla_pmap` of jax/_src/interpreters/pxla.py; nested
// maps in `MapTrace.process_map`): the vmapped batch axis goes in front of the body's view of
// every operand; mapped axes shift behind it; out_axes shift by one so the
// results keep the batch at 0.
RuleResult pmap_rule(Ctx& c, const Op& op, const Vals& x, const Dims& d) {
  const Body& body = *op.param(keys::body);
  std::vector<int64_t> in_axes = op.param(keys::in_axes);
  std::vector<int64_t> out_axes = op.param(keys::out_axes);
  Vals ops;
  Dims in;
  for (size_t i = 0; i < x.size(); ++i) {
    if (d[i] == kNotMapped) {
      ops.push_back(x[i]);
      in.push_back(kNotMapped);
      continue;
    }
    if (x[i].type().is_ref()) throw Error(op.loc, "vmap: pmap over a batched Ref is not supported");
    ops.push_back(c.move_to(x[i], d[i], 0));
    in.push_back(0);
    if (in_axes[i] >= 0) in_axes[i] += 1;
  }
  for (int64_t& a : out_axes) a += 1;
  BodyPtr nbody = vmap_body(c, body, body.name(), body.kind(), in, Dims(body.outputs().size(), 0));
  return at0(c.b.emit(*op.prim, ops, params_with(op, {{"body", nbody}, {"in_axes", in_axes}, {"out_axes", out_axes}})));
}

RuleResult core_map_rule(Ctx&, const Op& op, const Vals&, const Dims&) {
  throw Error(op.loc, "vmap: core_map over batched Refs is not supported (discharge it to a pallas_call first)");
}

}  // namespace

void add_control_rules(RuleTable<BatchRule>& t) {
  t.set("cond", cond_rule);
  t.set("while", while_rule);
  t.set("for", for_rule);
  t.set("scan", scan_rule);
  t.set("run_scoped", run_scoped_rule);
  t.set("call", call_rule);
  t.set("custom_jvp_call", custom_jvp_call_rule);
  t.set("custom_vjp_call", custom_vjp_call_rule);
  t.set("custom_lin", custom_lin_rule);
  t.set("pmap", pmap_rule);
  t.set("core_map", core_map_rule);
}

}  // namespace tessera::vmap
