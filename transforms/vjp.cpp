// The reverse-mode passes.
//
//   transpose{func=F, linear=I|J}: adds F_transpose(non-linear inputs...,
//     cotangents of F's float outputs...) -> (cotangents of the linear
//     inputs...). F is NAME_tangent when `linearize` made one for func=NAME
//     (default main), else NAME; the linear inputs of a NAME_tangent are its
//     tangents: the last
//     params(NAME) - params(NAME_primal) of them (F_tangent takes the
//     residuals first). The module keeps F.
//   vjp{wrt=...}: `main(primals...) -> outs` becomes
//     `main(primals..., %ct<i> per float output i...) -> (outs..., cotangents
//     of the wrt inputs...)`: linearize, transpose, and both pieces inlined
//     into one function, swept by dce. wrt defaults to every float input
//     (integer inputs get no cotangent).
#include <string_view>

#include "transforms/pass.h"
#include "transforms/jvp.h"
#include "transforms/transpose.h"

namespace tessera {
namespace {

std::string_view strip_suffix(std::string_view s, std::string_view suffix) {
  if (s.size() > suffix.size() && s.substr(s.size() - suffix.size()) == suffix) return s.substr(0, s.size() - suffix.size());
  return s;
}

// The linear inputs of `f`: the option `linear=`, or its tangents when `f`
// is NAME_tangent made by linearize (NAME and NAME_primal present).
std::vector<bool> linear_mask(const Module& m, const Body& f, const PassOptions& o) {
  size_t n = f.params().size();
  std::vector<bool> lin(n, false);
  if (o.has("linear")) {
    for (int64_t i : ad::parse_axes_option(o.get("linear"), "linear")) {
      if (i < 0 || i >= static_cast<int64_t>(n))
        throw Error(f.loc(), "transpose: linear=" + o.get("linear") + " names input " + std::to_string(i) + " but @" + f.name() +
                                 " has " + std::to_string(n) + " inputs");
      lin[i] = true;
    }
    return lin;
  }
  std::string base(strip_suffix(f.name(), "_tangent"));
  BodyPtr whole = base != f.name() ? m.find(base) : nullptr;
  BodyPtr primal = base != f.name() ? m.find(base + "_primal") : nullptr;
  if (!whole || !primal || whole->params().size() < primal->params().size() ||
      whole->params().size() - primal->params().size() > n)
    throw Error(f.loc(), "transpose: @" + f.name() +
                             " was not made by linearize (no @NAME and @NAME_primal beside @NAME_tangent); say which "
                             "inputs are linear with linear=I|J");
  size_t tangents = whole->params().size() - primal->params().size();
  for (size_t i = n - tangents; i < n; ++i) lin[i] = true;
  return lin;
}

}  // namespace

Module transpose_pass(const Module& m, const PassOptions& o) {
  // func=NAME means NAME_tangent when linearize made one (so that
  // `--func=f --passes=linearize,transpose` transposes f's tangent).
  PassOptions opts = o;
  std::string func = o.get("func", "main");
  if (m.find(func + "_tangent")) opts.values["func"] = func + "_tangent";
  BodyPtr f = entry_function(m, opts, "transpose");
  std::vector<bool> lin = linear_mask(m, *f, o);
  ad::SymbolSink syms(m);
  std::string name = syms.fresh(std::string(strip_suffix(f->name(), "_tangent")) + "_transpose");
  BodyPtr scratch = make_body("scratch", BodyKind::func);
  Builder b(*scratch);
  transpose::Ctx ctx{b, syms};
  BodyPtr t = dce_body(transpose::transpose_body(ctx, *f, name, f->kind(), lin));
  Module out = syms.assemble(f, f->name());
  out.add(t);
  return out;
}

namespace {

// A primal output of the jvp'd function that the transpose walk found linear
// (computed by an op that also takes tangents and could not be split): the
// primal function would lack it.
Error lost_primal_output(const Body& j, const Body& main, size_t k) {
  const Value& v = j.outputs()[k];
  Loc where = main.loc();
  std::string what = "@" + main.name();
  if (v.is_var())
    for (const Op& op : j.ops())
      for (const Var* r : op.results)
        if (r == v.var()) where = op.loc, what = "this `" + op.name() + "`";
  return Error(where, "vjp: primal output " + std::to_string(k) + " of @" + main.name() + " comes out of " + what +
                          " together with tangents, and reverse mode cannot separate it from them (not supported)");
}

// The contract of vjp: `result` returns main's outputs, then one cotangent
// per input marked `wrt`, typed as that input. Nothing else checks it: the
// verifier takes a function's result types from what it returns.
void check_vjp_signature(const Body& main, const Body& result, const std::vector<bool>& wrt) {
  std::vector<Type> want;
  for (const Value& v : main.outputs()) want.push_back(v.type());
  for (size_t i = 0; i < wrt.size(); ++i)
    if (wrt[i]) want.push_back(main.params()[i]->type);
  const std::vector<Value>& got = result.outputs();
  for (size_t k = 0; k < want.size() || k < got.size(); ++k)
    if (k >= want.size() || k >= got.size() || got[k].type() != want[k])
      throw Error(main.loc(), "vjp: internal error: result " + std::to_string(k) + " of the vjp of @" + main.name() +
                                  " is " + (k < got.size() ? got[k].type().str() : std::string("missing")) + ", not " +
                                  (k < want.size() ? want[k].str() : std::string("absent")));
}

// vjp by transposing the jvp directly, with the tangent inputs linear: the
// walk's forward part is the primal computation. Used where partial_eval
// cannot separate primal from tangent values (a cond or loop computing both
// is staged whole): such an op runs forward with zero tangents for its
// primal results, and its transpose rule recomputes the primal part inside.
BodyPtr vjp_of_jvp(const Module& jm, const Body& main, ad::SymbolSink& syms) {
  const Body& j = *jm.entry(main.name());
  size_t np = main.params().size(), num_outs = main.outputs().size();
  BodyPtr nm = make_body(main.name(), main.kind());
  nm->set_loc(main.loc());
  Builder b(*nm);
  b.set_loc(main.loc());
  std::vector<Value> params(j.params().size());
  std::vector<bool> lin(j.params().size(), false);
  for (size_t i = 0; i < np; ++i) params[i] = b.param(main.params()[i]->type, main.params()[i]->name);
  for (size_t i = np; i < j.params().size(); ++i) lin[i] = true;
  std::vector<transpose::Cotangent> out_ct(j.outputs().size());
  size_t t = num_outs;
  for (size_t k = 0; k < num_outs; ++k) {
    const Type& ty = main.outputs()[k].type();
    if (jvp::differentiable(ty)) out_ct[t++] = Value(b.param(ty, "ct" + std::to_string(k)));
  }
  transpose::Ctx ctx{b, syms};
  std::vector<std::optional<Value>> fwd;
  std::vector<transpose::Cotangent> cts = transpose::inline_transpose(ctx, j, params, lin, out_ct, &fwd);
  std::vector<Value> outs;
  for (size_t k = 0; k < num_outs; ++k) {
    if (!fwd[k]) throw lost_primal_output(j, main, k);
    outs.push_back(*fwd[k]);
  }
  b.set_loc(main.loc());
  for (size_t i = np; i < j.params().size(); ++i) outs.push_back(ctx.instantiate(cts[i], j.params()[i]->type));
  b.ret(std::move(outs));
  return dce_body(nm);
}

}  // namespace

Module vjp_pass(const Module& m, const PassOptions& o) {
  BodyPtr main = entry_function(m, o, "vjp");
  for (size_t i = 0; i < main->params().size(); ++i)
    if (main->params()[i]->type.is_ref())
      throw Error(main->loc(), "vjp: input " + std::to_string(i) + " (%" + main->params()[i]->name + ": " +
                                   main->params()[i]->type.str() + ") is a Ref; vjp takes functions of values (run discharge first)");
  std::vector<bool> wrt(main->params().size(), false);  // the inputs that get a cotangent
  if (!o.has("wrt"))
    for (size_t i = 0; i < wrt.size(); ++i) wrt[i] = transpose::has_cotangent(main->params()[i]->type);
  if (o.has("wrt"))
    for (int64_t i : ad::parse_axes_option(o.get("wrt"), "wrt")) {
      if (i < 0 || i >= static_cast<int64_t>(main->params().size()))
        throw Error(main->loc(), "vjp: wrt=" + o.get("wrt") + " names input " + std::to_string(i) + " but @" + main->name() +
                                     " has " + std::to_string(main->params().size()) + " inputs");
      const Var* p = main->params()[i];
      if (!transpose::has_cotangent(p->type))
        throw Error(main->loc(), "vjp: input " + std::to_string(i) + " (%" + p->name + ": " + p->type.str() +
                                     ") is not floating point and gets no cotangent");
      wrt[i] = true;
    }
  const std::string& name = main->name();
  size_t num_outs = main->outputs().size();
  Module lin;
  try {
    lin = linearize_pass(m, o);
  } catch (const Error& e) {
    // linearize cannot split this function (see vjp_of_jvp); a bad option
    // fails again, the same way, in jvp.
    Module jm = jvp_pass(m, o);
    ad::SymbolSink syms(jm);
    BodyPtr whole = vjp_of_jvp(jm, *main, syms);
    check_vjp_signature(*main, *whole, wrt);
    return syms.assemble(whole, name);
  }
  BodyPtr primal = lin.find(name + "_primal");
  BodyPtr tangent = lin.find(name + "_tangent");
  if (!primal || !tangent) throw Error(main->loc(), "vjp: linearize of @" + name + " made no @" + name + "_primal / _tangent");
  PassOptions to;
  to.values["func"] = tangent->name();
  Module tm = transpose_pass(lin, to);
  BodyPtr transposed = tm.symbols().back();

  BodyPtr nm = make_body(name, main->kind());
  nm->set_loc(main->loc());
  Builder b(*nm);
  b.set_loc(main->loc());
  ValueMap map;
  for (size_t i = 0; i < main->params().size(); ++i)
    map[primal->params()[i]] = b.param(main->params()[i]->type, main->params()[i]->name);
  std::vector<Value> cts;
  for (size_t j = 0; j < num_outs; ++j) {
    const Type& t = main->outputs()[j].type();
    if (transpose::has_cotangent(t)) cts.push_back(b.param(t, "ct" + std::to_string(j)));
  }
  std::vector<Value> pouts = inline_body(*primal, *nm, map);
  std::vector<Value> outs(pouts.begin(), pouts.begin() + static_cast<long>(num_outs));
  ValueMap tmap;
  size_t num_res = pouts.size() - num_outs;
  if (transposed->params().size() != num_res + cts.size())
    throw Error(main->loc(), "vjp: internal error: @" + transposed->name() + " takes " +
                                 std::to_string(transposed->params().size()) + " inputs, not " + std::to_string(num_res) +
                                 " residuals and " + std::to_string(cts.size()) + " cotangents");
  for (size_t r = 0; r < num_res; ++r) tmap[transposed->params()[r]] = pouts[num_outs + r];
  for (size_t j = 0; j < cts.size(); ++j) tmap[transposed->params()[num_res + j]] = cts[j];
  std::vector<Value> grads = inline_body(*transposed, *nm, tmap);
  outs.insert(outs.end(), grads.begin(), grads.end());
  b.ret(std::move(outs));
  BodyPtr swept = dce_body(nm);
  check_vjp_signature(*main, *swept, wrt);

  Module out;
  for (const BodyPtr& s : tm.symbols()) {
    const std::string& n = s->name();
    if (n == name || s == primal || s == tangent || s == transposed) continue;
    out.add(s);
  }
  out.add(swept);
  return out;
}

}  // namespace tessera
