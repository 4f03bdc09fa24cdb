// Obligation 4, kernel bounds: every indexed Ref access in the kernel body
// (get, swap, addupdate, load, store, DMA and semaphore operands) stays inside
// its Ref, for every grid point, every loop iteration and every branch taken.
//
// The kernel is walked once with a symbolic grid point. program_id /
// num_programs come from the grid; `for` induction variables range over
// [lo, hi) on the path into the body; `cond` branches add "this branch was
// taken" to the path; `multiple_of` hints become facts; scalar-prefetch reads
// are the same uninterpreted functions as in the index maps. Loop carries and
// results of ops the prover does not model are opaque: a proof over them is
// sound, a counterexample that depends on them is `unknown`.
#include <functional>

#include "analysis/prove/call_context.h"

namespace tessera::prove {

namespace {

// One entry of one indexer that intervals could not settle (or all of them,
// when intervals are off).
struct Check {
  z3::expr ok;
  z3::expr path;
  std::string what;                  // "get %x at f.tsr:3:4, dimension 0 of ref<...>"
  std::vector<Sym> shown;            // values to show in the counterexample
  std::string shown_label;           // "index" / "slice start"
  std::vector<std::string> opaque;
  bool done = false;
};

class Walker {
 public:
  Walker(CallContext& c, IntEncoder& enc) : c_(c), enc_(enc) {}

  void walk(const Body& b) {
    for (const Op& op : b.ops()) step(op);
  }

  std::vector<Check> checks;
  int accesses = 0;

 private:
  z3::context& ctx() { return c_.ctx; }

  // Binds body parameter `p` to what operand `v` holds.
  void bind(const Var* p, const Value& v) {
    if (v.is_var() && enc_.prefetch_of(v.var()) >= 0) return enc_.bind_prefetch(p, enc_.prefetch_of(v.var()));
    Type t = p->type;
    if (!t.is_ref() && t.is_scalar() && (is_int(t.dtype()) || is_bool(t.dtype()))) enc_.bind(p, enc_.value(v));
  }
  void bind_opaque(const Var* p, const std::string& why) {
    Type t = p->type;
    if (!t.is_ref() && t.is_scalar() && (is_int(t.dtype()) || is_bool(t.dtype()))) enc_.bind(p, enc_.opaque(t.dtype(), why));
  }
  void results_opaque(const Op& op, const std::string& why) {
    for (Var* r : op.results) bind_opaque(r, why);
  }
  void with_path(z3::expr cond, const std::function<void()>& f) {
    z3::expr saved = enc_.path();
    enc_.set_path(saved && cond);
    f();
    enc_.set_path(saved);
  }

  std::string where(const Op& op) const { return op.loc.known() ? " at " + op.loc.str() : ""; }

  void record(const Op& op) {
    for (const Indexer& ix : op.indexers) {
      const Value& ref = op.operands.at(ix.base);
      Type rt = ref.type();
      std::string refname = ref.is_var() ? "%" + ref.var()->name : "?";
      ++accesses;
      for (size_t d = 0; d < ix.entries.size() && d < rt.shape().size(); ++d) {
        const IndexEntry& e = ix.entries[d];
        if (e.kind == IndexEntry::Full) continue;
        int64_t D = rt.shape()[d];
        Sym s = e.is_dynamic() ? enc_.value(op.operands.at(e.dyn_start)) : Sym{ctx().int_val(e.start), Interval::of(e.start), {}};
        std::string what = op.name() + " " + refname + where(op) + ": ";
        if (e.kind == IndexEntry::Point) {
          bool settled = c_.opts.use_intervals && s.iv.within(0, D - 1);
          if (!settled)
            checks.push_back({s.e >= 0 && s.e < ctx().int_val(D), enc_.path(),
                              what + "index outside [0, " + std::to_string(D) + ") in dimension " + std::to_string(d) + " of " + rt.str(),
                              {s}, "index", s.opaque});
          continue;
        }
        if (e.size <= 0) continue;
        int64_t span = (e.size - 1) * e.stride;  // last element - start
        bool settled = c_.opts.use_intervals && s.iv.lo >= 0 && s.iv.hi <= D - 1 - span;
        if (!settled)
          checks.push_back({s.e >= 0 && s.e + ctx().int_val(span) < ctx().int_val(D), enc_.path(),
                            what + "slice of " + std::to_string(e.size) + (e.stride != 1 ? " (stride " + std::to_string(e.stride) + ")" : "") +
                                " outside [0, " + std::to_string(D) + ") in dimension " + std::to_string(d) + " of " + rt.str(),
                            {s}, "slice start", s.opaque});
      }
    }
  }

  void step(const Op& op) {
    record(op);
    const std::string& n = op.name();
    if (n == "cond") {
      const auto& branches = op.bodies_param("branches");
      Sym idx = enc_.value(op.operands.at(0));
      int nb = static_cast<int>(branches.size());
      for (int i = 0; i < nb; ++i) {
        z3::expr taken = ctx().bool_val(true);
        if (idx.is_bool()) taken = i == 0 ? !idx.e : idx.e;
        else if (nb > 1) taken = i == 0 ? idx.e <= 0 : i == nb - 1 ? idx.e >= nb - 1 : idx.e == i;
        const Body& b = *branches[i];
        for (size_t p = 0; p < b.params().size() && p + 1 < op.operands.size(); ++p) bind(b.params()[p], op.operands[p + 1]);
        with_path(taken, [&] { walk(b); });
      }
      return results_opaque(op, "the result of cond" + where(op));
    }
    if (n == "for") {
      const Body& b = *op.body_param("body");
      int64_t k = op.int_param("num_consts");
      Sym lo = enc_.value(op.operands.at(0)), hi = enc_.value(op.operands.at(1));
      const auto& ps = b.params();
      z3::expr i = c_.scope.fresh_int(ps.empty() ? "i" : ps[0]->name);
      Interval iv{lo.iv.lo, hi.iv.hi >= Interval::kInf ? Interval::kInf : hi.iv.hi - 1};
      if (!ps.empty()) enc_.bind(ps[0], Sym{i, iv, merge_opaque(lo.opaque, hi.opaque)});
      for (size_t p = 1; p < ps.size(); ++p) {
        if (static_cast<int64_t>(p) <= k) bind(ps[p], op.operands.at(p + 1));
        else bind_opaque(ps[p], "a loop carry of for" + where(op));
      }
      with_path(lo.e <= i && i < hi.e, [&] { walk(b); });
      return results_opaque(op, "the result of for" + where(op));
    }
    if (n == "while" || n == "scan") {
      int64_t k = op.int_param("num_consts");
      std::vector<BodyPtr> bodies = {op.body_param("body")};
      if (n == "while") bodies.push_back(op.body_param("cond"));
      for (const BodyPtr& b : bodies) {
        for (size_t p = 0; p < b->params().size(); ++p) {
          if (static_cast<int64_t>(p) < k && p < op.operands.size()) bind(b->params()[p], op.operands[p]);
          else bind_opaque(b->params()[p], "a loop carry of " + n + where(op));
        }
        walk(*b);
      }
      return results_opaque(op, "the result of " + n + where(op));
    }
    if (n == "run_scoped" || n == "call" || n == "core_map" || n == "pmap") {
      const Body& b = *op.body_param(n == "call" ? "callee" : "body");
      for (size_t p = 0; p < b.params().size(); ++p) {
        if (p < op.operands.size() && n != "pmap") bind(b.params()[p], op.operands[p]);
        else bind_opaque(b.params()[p], "a parameter of " + n + where(op));
      }
      walk(b);
      return results_opaque(op, "the result of " + n + where(op));
    }
    if (n == "pallas_call") return results_opaque(op, "a nested pallas_call" + where(op));
    enc_.encode(op);
  }

  CallContext& c_;
  IntEncoder& enc_;
};

}  // namespace

Obligation prove_kernel_bounds(CallContext& c) {
  Timer timer;
  Obligation ob = obligation(c.name, "kernel", "bounds");
  if (!c.g.kernel) throw Error(c.op.loc, "pallas_call has no kernel");
  std::vector<z3::expr> base = c.base_facts;
  std::vector<Sym> point = c.make_point("k", base);
  IntEncoder enc(c.scope, c.ctx.bool_val(true));
  enc.set_grid_point(point);
  const Body& kernel = *c.g.kernel;
  for (int j = 0; j < c.g.num_scalar_prefetch() && j < static_cast<int>(kernel.params().size()); ++j)
    enc.bind_prefetch(kernel.params()[j], j);
  Walker w(c, enc);
  w.walk(kernel);
  // Well-definedness of the kernel's integer code joins the access checks.
  std::vector<Check> checks = std::move(w.checks);
  for (const Guard& gd : enc.guards)
    if (!gd.settled || !c.opts.use_intervals)
      checks.push_back({gd.ok, gd.path, gd.what + (gd.loc.known() ? " at " + gd.loc.str() : ""), {}, "", gd.opaque});

  ob.method = checks.empty() ? "intervals" : "z3";
  std::string unknown_reason;
  while (true) {
    std::vector<z3::expr> q = base;
    // The guards are among the checks here, so they are not assumed.
    CallContext::add_facts(enc, q, false);
    z3::expr any_bad = c.ctx.bool_val(false);
    int open = 0;
    for (const Check& ch : checks)
      if (!ch.done) any_bad = any_bad || (ch.path && !ch.ok), ++open;
    if (open == 0) break;
    q.push_back(any_bad);
    QueryResult r = c.solver.check(q, "kernel_bounds");
    ob.queries++;
    if (r.result == z3::unsat) break;
    if (r.result == z3::unknown) {
      unknown_reason = "Z3 gave up (" + r.reason + ")";
      break;
    }
    const z3::model& mo = *r.model;
    bool progress = false;
    for (Check& ch : checks) {
      if (ch.done || !c.eval(mo, ch.path) || c.eval(mo, ch.ok)) continue;
      progress = true;
      ch.done = true;
      if (!ch.opaque.empty()) {
        if (unknown_reason.empty())
          unknown_reason = "cannot decide " + ch.what + ": it depends on values the prover does not model (" + ch.opaque[0] + ")";
        continue;
      }
      std::vector<int64_t> gp = c.eval(mo, point);
      ob.verdict = Verdict::failed;
      ob.grid_points = {gp};
      ob.detail = "at grid point " + tuple_str(gp) + ": " + ch.what;
      if (!ch.shown.empty()) ob.detail += " (" + ch.shown_label + " " + std::to_string(c.eval(mo, ch.shown[0].e)) + ")";
      ob.millis = timer.millis();
      return ob;
    }
    if (!progress) {
      unknown_reason = "internal: the counterexample violates no recorded check";
      break;
    }
  }
  if (unknown_reason.empty()) {
    ob.verdict = Verdict::proved;
    ob.detail = std::to_string(w.accesses) + " indexed accesses";
  } else {
    ob.detail = unknown_reason;
  }
  ob.millis = timer.millis();
  return ob;
}

}  // namespace tessera::prove
