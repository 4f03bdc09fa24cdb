// Obligation 4, kernel bounds: every indexed Ref access in the kernel body
// (get, swap, addupdate, load, store, DMA and semaphore operands) stays inside
// its Ref, for every grid point, every loop iteration and every branch taken;
// every multiple_of hint holds, every debug_check's predicate is true and
// every scalar-prefetch read is in bounds (the interpreter stops on each); and the integer code that computes an
// index or decides a path is exact (no overflow, no division by zero).
//
// The kernel is walked once with a symbolic grid point (kernel_walker.h).
// Loop carries and results of ops the prover does not model are opaque: a
// proof over them is sound, a counterexample that depends on them is
// `unknown`. A core_map body is proved the same way, with no grid.
#include "analysis/prove/kernel_walker.h"

namespace tessera::prove {

namespace {

// One claim the query checks: an access entry that intervals could not
// settle (or all of them, when intervals are off), or a guard.
struct Check {
  z3::expr ok;
  z3::expr path;
  std::string what;                  // "get %x at f.tsr:3:4: index outside ..."
  // Values to show in the counterexample, each with its label ("index", "slice start", "size").
  std::vector<std::pair<std::string, Sym>> shown;
  std::vector<std::string> opaque;
  bool done = false;
};

// A slice `ds(s, n)` with a run-time size n (only DMAs have them): 0 <= n and
// the n elements from s fit in the dim, 0 <= s and s + n <= D, as the
// interpreter checks when the DMA runs.
void dynamic_size_checks(CallContext& c, IntEncoder& enc, const Sym& n, const Sym& s, int64_t D, const std::string& what,
                         size_t d, const Type& rt, std::vector<Check>& checks) {
  enc.need(n.deps);
  std::vector<std::string> opaque = merge_opaque(s.opaque, n.opaque);
  std::string dim = " in dimension " + std::to_string(d) + " of " + rt.str();
  if (!(c.opts.use_intervals && n.iv.lo >= 0))
    checks.push_back({n.e >= 0, enc.path(), what + "negative dynamic slice size" + dim, {{"size", n}}, n.opaque});
  // Intervals settle it when the largest start plus the largest size fits.
  bool settled = c.opts.use_intervals && s.iv.lo >= 0 && n.iv.lo >= 0 && s.iv.hi < Interval::kInf &&
                 n.iv.hi < Interval::kInf && s.iv.hi + n.iv.hi <= D;
  if (!settled)
    checks.push_back({s.e >= 0 && s.e + n.e <= c.ctx.int_val(D), enc.path(),
                      what + "slice of dynamic size outside [0, " + std::to_string(D) + ")" + dim,
                      {{"slice start", s}, {"size", n}}, opaque});
}

// The checks of one access: each point index in [0, D), each slice inside the dim.
void access_checks(CallContext& c, IntEncoder& enc, const Access& a, std::vector<Check>& checks) {
  const Op& op = a.op;
  const Value& ref = op.operands.at(a.ix.base);
  Type rt = ref.type();
  std::string refname = ref.is_var() ? "%" + ref.var()->name : "?";
  // The access runs only on its path, at its indices: what they rely on is an obligation.
  enc.need(enc.path_deps());
  // A masked load or store touches only the lanes its mask keeps (the
  // interpreter checks those alone), and the mask is a value the prover does
  // not model: a window reaching past the Ref is `unknown`, never FAILED.
  bool masked = (op.name() == "load" && op.num_main_operands() >= 2) || (op.name() == "store" && op.num_main_operands() == 3);
  size_t first = checks.size();
  for (size_t d = 0; d < a.ix.entries.size() && d < rt.shape().size(); ++d) {
    const IndexEntry& e = a.ix.entries[d];
    if (e.kind == IndexEntry::Full) continue;
    int64_t D = rt.shape()[d];
    const Sym& s = a.starts[d];
    enc.need(s.deps);
    std::string what = op.name() + " " + refname + where(op) + ": ";
    // An indirect entry's start stands for any of its rows (opaque: never settled).
    if (e.kind == IndexEntry::Point || e.kind == IndexEntry::Indirect) {
      bool settled = c.opts.use_intervals && s.iv.within(0, D - 1);
      std::string index = e.kind == IndexEntry::Point ? "index" : "row offset";
      if (!settled)
        checks.push_back({s.e >= 0 && s.e < c.ctx.int_val(D), enc.path(),
                          what + index + " outside [0, " + std::to_string(D) + ") in dimension " + std::to_string(d) + " of " + rt.str(),
                          {{index, s}}, s.opaque});
      continue;
    }
    if (e.has_dynamic_size()) {
      dynamic_size_checks(c, enc, *a.dyn_sizes.at(d), s, D, what, d, rt, checks);
      continue;
    }
    if (e.size <= 0) continue;
    int64_t span = (e.size - 1) * e.stride;  // last element - start
    bool settled = c.opts.use_intervals && s.iv.lo >= 0 && s.iv.hi <= D - 1 - span;
    if (!settled)
      checks.push_back({s.e >= 0 && s.e + c.ctx.int_val(span) < c.ctx.int_val(D), enc.path(),
                        what + "slice of " + std::to_string(e.size) + (e.stride != 1 ? " (stride " + std::to_string(e.stride) + ")" : "") +
                            " outside [0, " + std::to_string(D) + ") in dimension " + std::to_string(d) + " of " + rt.str(),
                        {{"slice start", s}}, s.opaque});
  }
  if (masked)
    for (size_t k = first; k < checks.size(); ++k)
      checks[k].opaque.push_back("the mask of " + op.name() + where(op) + ", which decides the lanes it touches");
}

}  // namespace

Obligation prove_kernel_bounds(CallContext& c) {
  Timer timer;
  Obligation ob = obligation(c.name, "kernel", "bounds");
  if (!c.kernel) throw Error(c.op.loc, c.op.name() + " has no kernel");
  std::vector<z3::expr> base = c.base_facts;
  std::vector<Sym> point = c.make_point("k", base);
  IntEncoder enc(c.scope, c.ctx.bool_val(true));
  enc.set_grid_point(point);
  const Body& kernel = *c.kernel;
  for (int j = 0; j < c.g.num_scalar_prefetch() && j < static_cast<int>(kernel.params().size()); ++j)
    enc.bind_prefetch(kernel.params()[j], j);
  KernelWalker w(c, enc);
  std::vector<Check> access;
  int accesses = 0;
  w.on_access = [&](const Access& a) {
    ++accesses;
    access_checks(c, enc, a, access);
  };
  int debug_checks = 0;
  w.on_debug_check = [&](const Op& op, const Sym& pred) {
    ++debug_checks;
    enc.need(enc.path_deps());
    enc.need(pred.deps);
    z3::expr holds = pred.is_bool() ? pred.e : pred.e != 0;
    if (!(c.opts.use_intervals && !pred.is_bool() && pred.iv.lo > 0))
      access.push_back({holds, enc.path(), "debug_check" + where(op) + ": " + op.param(keys::msg), {}, pred.opaque});
  };
  w.walk(kernel);
  // The guards that are obligations come first: a false hint or an overflow
  // is the cause of whatever an access computed from it does.
  std::vector<Check> checks;
  for (const Guard& gd : enc.guards)
    if (gd.needed && (!gd.settled || !c.opts.use_intervals))
      checks.push_back({gd.ok, gd.path, gd.what + (gd.loc.known() ? " at " + gd.loc.str() : ""), {}, gd.opaque});
  size_t num_guards = checks.size();
  for (Check& ch : access) checks.push_back(std::move(ch));

  ob.method = checks.empty() ? "intervals" : "z3";
  std::string unknown_reason;
  std::vector<z3::expr> q = base;
  // The guards are among the checks here, so they are not assumed.
  CallContext::add_facts(enc, q, false);
  std::vector<z3::expr> bad;
  for (const Check& ch : checks) bad.push_back(ch.path && !ch.ok);
  bool failed = c.sweep(q, bad, "kernel_bounds", ob, unknown_reason, [&](size_t i, const z3::model& mo) {
    Check& ch = checks[i];
    ch.done = true;
    if (!ch.opaque.empty()) {
      if (unknown_reason.empty())
        unknown_reason = "cannot decide " + ch.what + ": it depends on values the prover does not model (" + ch.opaque[0] + ")";
      return false;
    }
    std::vector<int64_t> gp = c.eval(mo, point);
    ob.verdict = Verdict::failed;
    ob.grid_points = {gp};
    ob.detail = "at grid point " + tuple_str(gp) + ": " + ch.what;
    for (size_t k = 0; k < ch.shown.size(); ++k)
      ob.detail += (k ? ", " : " (") + ch.shown[k].first + " " + std::to_string(c.eval(mo, ch.shown[k].second.e)) +
                   (k + 1 == ch.shown.size() ? ")" : "");
    return true;
  });
  if (failed) {
    ob.millis = timer.millis();
    return ob;
  }
  // The guards hold when the last query was unsat and none was set aside.
  bool guard_open = std::any_of(checks.begin(), checks.begin() + static_cast<std::ptrdiff_t>(num_guards),
                                [](const Check& ch) { return ch.done; });
  c.kernel_guards_proved = !guard_open && (unknown_reason.empty() || unknown_reason.starts_with("cannot decide"));
  if (unknown_reason.empty()) {
    ob.verdict = Verdict::proved;
    ob.detail = std::to_string(accesses) + " indexed accesses";
    if (debug_checks) ob.detail += ", " + std::to_string(debug_checks) + " debug checks";
  } else {
    ob.detail = unknown_reason;
  }
  ob.millis = timer.millis();
  return ob;
}

}  // namespace tessera::prove
