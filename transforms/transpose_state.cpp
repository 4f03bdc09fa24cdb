// Transpose rules of the state primitives. A linear Ref is transposed in
// place: its cotangent Ref (same type) stands for it, and each access is
// turned around on the same region (same indexer, same dynamic indices):
//   get r[i]            ->  addupdate ct_r[i], ct
//   swap r[i], v        ->  ct_v = swap ct_r[i], ct_old   (reads and resets)
//   addupdate r[i], v   ->  ct_v = get ct_r[i]
//   load / store        ->  the same, through their masks
// (jax/_src/state/primitives.py: _get_transpose, _swap_transpose,
// _addupdate_transpose). run_scoped allocates a zeroed cotangent scratch for
// each scratch Ref that holds linear values.
#include "ir/control_views.h"
#include "transforms/transpose.h"

namespace tessera::transpose {
namespace {

using Vals = std::vector<Value>;
using Cts = std::vector<Cotangent>;
using Mask = std::vector<bool>;

// The Ref and its dynamic index operands (everything before the first value
// operand), which keep their positions so the op's indexers still fit.
Vals ref_prefix(const Op& op, const Vals& x) {
  std::vector<int> main = op.main_operands();
  size_t end = main.size() > 1 ? static_cast<size_t>(main[1]) : x.size();
  return Vals(x.begin(), x.begin() + static_cast<long>(end));
}

Vals with(Vals v, std::initializer_list<Value> more) {
  v.insert(v.end(), more);
  return v;
}

void expect_linear_ref(const Op& op, const Mask& lin) {
  if (!lin[op.main_operand_index(0)])
    throw Error(op.loc, "transpose: `" + op.name() + "` writes a linear value into a Ref that is not linear");
}

Cts get_rule(Ctx& c, const Op& op, const Vals& x, const Mask&, const Cts& ct) {
  Cts r(op.operands.size());
  if (ct[0]) c.b.emit("addupdate", with(ref_prefix(op, x), {*ct[0]}), {}, op.indexers);
  return r;
}

Cts swap_rule(Ctx& c, const Op& op, const Vals& x, const Mask& lin, const Cts& ct) {
  expect_linear_ref(op, lin);
  Cts r(op.operands.size());
  int v = op.main_operand_index(1);
  Value old = c.instantiate(ct[0], op.results[0]->type);
  Value got = c.b.emit1("swap", with(ref_prefix(op, x), {old}), {}, op.indexers);
  if (lin[v]) r[v] = got;
  return r;
}

Cts addupdate_rule(Ctx& c, const Op& op, const Vals& x, const Mask& lin, const Cts&) {
  expect_linear_ref(op, lin);
  Cts r(op.operands.size());
  int v = op.main_operand_index(1);
  if (lin[v]) r[v] = c.b.emit1("get", ref_prefix(op, x), {}, op.indexers);
  return r;
}

// load r[i], mask, other: lanes on the mask read r, the others `other`. The
// cotangent Ref is touched only on the mask (masked lanes may lie outside
// the Ref: the forward never read them): a masked load, add, masked store.
Cts load_rule(Ctx& c, const Op& op, const Vals& x, const Mask& lin, const Cts& ct) {
  Cts r(op.operands.size());
  if (!ct[0]) return r;
  std::vector<int> main = op.main_operands();
  Builder& b = c.b;
  const Type& t = op.results[0]->type;
  Value zero = b.zeros(t);
  Value mask = main.size() >= 2 ? x[main[1]] : Value();
  if (lin[main[0]]) {
    Vals prefix = ref_prefix(op, x);
    if (main.size() >= 2) {
      Value have = b.emit1("load", with(prefix, {mask, zero}), {}, op.indexers);
      b.emit("store", with(prefix, {b.binary("add", have, *ct[0]), mask}), {}, op.indexers);
    } else {
      b.emit("addupdate", with(prefix, {*ct[0]}), {}, op.indexers);
    }
  }
  if (main.size() == 3 && lin[main[2]]) r[main[2]] = b.emit1("select_n", {mask, *ct[0], zero});
  return r;
}

// store r[i], v, mask: lanes on the mask are overwritten by v. Their
// cotangent is read and reset on the mask only (a masked load and store:
// masked-off lanes may lie outside the Ref).
Cts store_rule(Ctx& c, const Op& op, const Vals& x, const Mask& lin, const Cts&) {
  expect_linear_ref(op, lin);
  Cts r(op.operands.size());
  std::vector<int> main = op.main_operands();
  Builder& b = c.b;
  Vals prefix = ref_prefix(op, x);
  Value got;
  if (main.size() == 3) {
    const Value& mask = x[main[2]];
    Value zero = b.zeros(Type::array(op.operands[main[0]].type().dtype(), mask.type().shape()));
    got = b.emit1("load", with(prefix, {mask, zero}), {}, op.indexers);
    b.emit("store", with(prefix, {zero, mask}), {}, op.indexers);
  } else {
    got = b.emit1("get", prefix, {}, op.indexers);
    b.emit("swap", with(prefix, {b.zeros(got.type())}), {}, op.indexers);
  }
  if (lin[main[1]]) r[main[1]] = got;  // summed by the walk if v was a broadcast scalar
  return r;
}

// run_scoped[body] args...: body(args..., scratch...) -> results. The
// transposed body takes the non-linear args (and the cotangent Refs of linear
// Ref args), then the cotangents of the linear results, then the scratch:
// the original Refs where they hold non-linear values (recomputed), zeroed
// cotangent Refs where they hold linear ones. It returns the cotangents of
// the linear array args.
// The body's linear params: the linear args, and the scratch Refs a linear
// value is written into.
Mask run_scoped_mask(const Op& op, const Mask& lin) {
  const Body& body = *op.param(keys::body);
  Mask body_lin(body.params().size(), false);
  for (size_t i = 0; i < lin.size(); ++i) body_lin[i] = lin[i];
  Mask refs = linear_refs(body, body_lin);
  for (size_t s = lin.size(); s < body_lin.size(); ++s) body_lin[s] = refs[s];
  return body_lin;
}

Cts run_scoped_rule(Ctx& c, const Op& op, const Vals& x, const Mask& lin, const Cts& ct) {
  const Body& body = *op.param(keys::body);
  size_t n = x.size(), np = body.params().size();
  Mask body_lin = run_scoped_mask(op, lin);
  Mask outs = linear_outputs(body, body_lin);
  auto saved = c.residuals.find(&op);
  Vals residuals = saved == c.residuals.end() ? Vals{} : saved->second;

  BodyPtr nb = make_body(body.name(), body.kind());
  nb->set_loc(body.loc());
  Builder b(*nb);
  b.set_loc(body.loc());
  Vals params(np), operands;
  for (size_t i = 0; i < n; ++i) {
    const Var* p = body.params()[i];
    if (lin[i] && !p->type.is_ref()) continue;
    params[i] = b.param(p->type, lin[i] ? cotangent_name(p->name) : p->name);
    operands.push_back(x[i]);
  }
  Cts out_ct(body.outputs().size());
  for (size_t j = 0; j < outs.size(); ++j) {
    const Type& t = body.outputs()[j].type();
    if (!outs[j] || !has_cotangent(t)) continue;
    out_ct[j] = Value(b.param(t, "ct" + std::to_string(j)));
    operands.push_back(c.instantiate(ct[j], t));
  }
  Vals rparams;
  for (const Value& v : residuals) {
    rparams.push_back(b.param(v.type(), "res"));
    operands.push_back(v);
  }
  for (size_t s = n; s < np; ++s) {
    const Var* p = body.params()[s];
    params[s] = b.param(p->type, body_lin[s] ? cotangent_name(p->name) : p->name);
    if (body_lin[s]) b.swap_discard(params[s], b.zeros(Type::array(p->type.dtype(), p->type.shape())));
  }
  Ctx inner{b, c.syms};
  Given given{read_residuals(body, body_lin), rparams};
  Cts r = inline_transpose(inner, body, params, body_lin, out_ct, nullptr, residuals.empty() ? nullptr : &given);
  Vals results;
  std::vector<size_t> which;
  for (size_t i = 0; i < n; ++i)
    if (lin[i] && !body.params()[i]->type.is_ref()) {
      results.push_back(inner.instantiate(r[i], body.params()[i]->type));
      which.push_back(i);
    }
  b.ret(results);
  Vals got = c.b.emit(*op.prim, operands, params_with(op, {{"body", nb}}));
  Cts res(op.operands.size());
  for (size_t k = 0; k < which.size(); ++k) res[which[k]] = got[k];
  return res;
}

std::vector<bool> run_scoped_results(const Op& op, const Mask& lin) {
  const Body& body = *op.param(keys::body);
  Mask body_lin(body.params().size(), false);
  for (size_t i = 0; i < lin.size(); ++i) body_lin[i] = lin[i];
  return linear_outputs(body, body_lin);
}

// The forward part: the body cut to its non-linear part, the linear scratch
// (whose Refs it never touches) still allocated.
Vals run_scoped_forward(Ctx& c, const Op& op, const Vals& x, const Mask& lin) {
  const Body& body = *op.param(keys::body);
  Mask body_lin = run_scoped_mask(op, lin);
  std::vector<const Var*> res = read_residuals(body, body_lin);
  Vals got = c.b.emit(*op.prim, x, params_with(op, {{"body", nonlinear_part(body, body_lin, body.name(), res)}}));
  size_t n = op.results.size();
  if (!res.empty()) c.residuals[&op] = Vals(got.begin() + static_cast<long>(n), got.end());
  return Vals(got.begin(), got.begin() + static_cast<long>(n));
}

}  // namespace

void add_state_rules(RuleTable<RuleSet>& t) {
  t.set("get", {get_rule});
  t.set("swap", {swap_rule});
  t.set("addupdate", {addupdate_rule});
  t.set("load", {load_rule});
  t.set("store", {store_rule});
  t.set("run_scoped", {.transpose = run_scoped_rule, .linear_results = run_scoped_results, .forward = run_scoped_forward});
  add_dma_rules(t);
}

}  // namespace tessera::transpose
