// Obligation 1, block bounds: for every grid point (and scalar-prefetch value
// in its declared range), each block index the index map returns is valid for
// the padded array, and evaluating the map itself is well defined (no
// overflow or division by zero in what computes a block index, prefetch reads
// in bounds, multiple_of hints true).
#include "analysis/prove/call_context.h"

namespace tessera::prove {

namespace {

// The conditions one block dim puts on its index-map result(s).
struct DimCheck {
  z3::expr ok;
  bool settled;      // intervals prove ok
  std::string rule;  // for messages
};

std::string kind_str(const BlockDim& b) {
  std::string n = std::to_string(b.size);
  switch (b.kind) {
    case BlockDimKind::Blocked: return "Blocked(" + n + ")";
    case BlockDimKind::Element:
      return "Element(" + n + ", padding=(" + std::to_string(b.pad_lo) + ", " + std::to_string(b.pad_hi) + "))";
    case BlockDimKind::Squeezed: return "Squeezed";
    case BlockDimKind::BoundedSlice: return "BoundedSlice(" + n + ")";
  }
  return "?";
}

// What it takes for a block to lie in its padded array, per dim, read off the
// block geometry the interpreter and discharge use (ir/block_geometry.h).
std::vector<DimCheck> dim_checks(z3::context& ctx, const BlockGeometry& geo, const std::vector<Sym>& out) {
  std::vector<DimCheck> checks;
  size_t k = 0;
  for (size_t d = 0; d < geo.dims.size(); ++d) {
    const DimGeometry& g = geo.dims[d];
    const Sym& i = out.at(k++);
    auto c = [&](int64_t v) { return ctx.int_val(v); };
    std::string where = " in dimension " + std::to_string(d);
    std::string padded = g.padded == g.extent ? std::to_string(g.extent)
                                              : std::to_string(g.padded) + " (the padded extent of " + std::to_string(g.extent) + ")";
    DimGeometry::Range r = g.valid_index();
    if (g.dim.kind == BlockDimKind::BoundedSlice) {
      const Sym& size = out.at(k++);
      bool settled = i.iv.lo >= 0 && size.iv.lo >= 0 && size.iv.hi <= g.dim.size && i.iv.hi + size.iv.hi <= g.padded;
      checks.push_back({i.e >= 0 && size.e >= 0 && size.e <= c(g.dim.size) && i.e + size.e <= c(g.padded), settled,
                        kind_str(g.dim) + " needs start >= 0, 0 <= size <= " + std::to_string(g.dim.size) +
                            " and start + size <= " + padded + where});
      continue;
    }
    std::string rule = g.dim.kind == BlockDimKind::Blocked
                           ? " needs 0 <= index < " + std::to_string(r.hi + 1) + " (blocks of " + std::to_string(g.dim.size) + " in " + padded + ")"
                           : " needs 0 <= index <= " + std::to_string(r.hi) + " (a block of " + std::to_string(g.window()) +
                                 " starting at the index, inside " + padded + ")";
    checks.push_back({i.e >= c(r.lo) && i.e <= c(r.hi), i.iv.within(r.lo, r.hi), kind_str(g.dim) + rule + where});
  }
  return checks;
}

// "block index (2, 4) outside (2, 3) blocks of f32[256,384] padded to (256, 384)"
std::string blocks_message(const BlockGeometry& geo, const Type& array, const std::vector<int64_t>& idx) {
  std::vector<int64_t> nblocks;
  for (const DimGeometry& d : geo.dims) nblocks.push_back(d.valid_index().hi + 1);
  return "block index " + tuple_str(idx) + " outside " + tuple_str(nblocks) + " blocks of " + array.str() + " padded to " +
         tuple_str(geo.padded_shape());
}

// Whether every guard the map needs holds at every point (its arithmetic is
// the program's), whatever its block indices are.
bool guards_hold(CallContext& c, std::vector<z3::expr> q, const IntEncoder& enc, const std::string& subject) {
  z3::expr all = c.ctx.bool_val(true);
  bool settled = true;
  for (const Guard& gd : enc.guards)
    if (gd.needed) all = all && z3::implies(gd.path, gd.ok), settled &= gd.settled;
  if (settled) return true;
  q.push_back(!all);
  return c.solver.check(q, subject + ".guards").result == z3::unsat;
}

}  // namespace

Obligation prove_bounds(CallContext& c, int m) {
  Timer timer;
  Obligation ob = obligation(c.name, c.subject(m), "bounds");
  std::vector<z3::expr> facts = c.base_facts;
  std::vector<Sym> point = c.make_point("p", facts);
  MapAt at = c.encode_map(m, point);
  std::vector<BlockDim> dims = c.g.dims(m);
  BlockGeometry geo = c.g.geometry(m);
  const Type& array = c.g.array(m);
  std::vector<DimCheck> checks = dim_checks(c.ctx, geo, at.outputs);

  bool settled = c.opts.use_intervals;
  for (const DimCheck& d : checks) settled &= d.settled;
  for (const Guard& gd : at.enc->guards) settled &= gd.settled || !gd.needed;
  if (c.map_well_defined.size() <= static_cast<size_t>(m)) c.map_well_defined.resize(m + 1, 0);
  if (settled) {
    ob.verdict = Verdict::proved;
    ob.method = "intervals";
    ob.millis = timer.millis();
    c.map_well_defined[m] = 1;
    return ob;
  }

  std::vector<z3::expr> q = facts;
  CallContext::add_facts(*at.enc, q, false);
  const std::vector<z3::expr> map_facts = q;
  z3::expr all_ok = c.ctx.bool_val(true);
  for (const DimCheck& d : checks) all_ok = all_ok && d.ok;
  for (const Guard& gd : at.enc->guards)
    if (gd.needed) all_ok = all_ok && z3::implies(gd.path, gd.ok);
  q.push_back(!all_ok);
  QueryResult r = c.solver.check(q, ob.subject + ".bounds");
  ob.method = "z3";
  ob.queries = 1;
  if (r.result == z3::unsat) {
    ob.verdict = Verdict::proved;
  } else if (r.result == z3::unknown) {
    ob.detail = "(" + r.reason + ")";
  } else {
    const z3::model& model = *r.model;
    std::vector<int64_t> gp = c.eval(model, point);
    std::vector<int64_t> idx = c.eval(model, at.outputs);
    ob.grid_points = {gp};
    std::vector<std::string> opaque;
    for (const Sym& s : at.outputs) opaque = merge_opaque(opaque, s.opaque);
    std::string what;
    for (const Guard& gd : at.enc->guards)
      if (what.empty() && gd.needed && c.eval(model, gd.path) && !c.eval(model, gd.ok)) {
        what = gd.what + (gd.loc.known() ? " at " + gd.loc.str() : "");
        opaque = gd.opaque;
      }
    if (what.empty()) {
      bool plain = true;
      for (const BlockDim& d : dims) plain &= d.kind == BlockDimKind::Blocked || d.kind == BlockDimKind::Squeezed;
      if (plain) what = blocks_message(geo, array, idx);
      else
        for (const DimCheck& d : checks)
          if (what.empty() && !c.eval(model, d.ok)) what = "index " + tuple_str(idx) + " of " + array.str() + ": " + d.rule;
    }
    if (!c.scope.prefetch.empty()) {
      // Show the scalar-prefetch values the counterexample reads.
      std::string reads;
      for (const Prefetch& p : c.scope.prefetch)
        if (!p.declared) reads += (reads.empty() ? "" : "; ") + p.name + " has no declared range (--assume '" + p.name + " in [lo, hi)')";
      if (!reads.empty()) what += " (" + reads + ")";
    }
    if (!opaque.empty()) {
      ob.detail = "cannot decide: the index depends on values the prover does not model (" + opaque[0] + ")";
    } else {
      ob.verdict = Verdict::failed;
      ob.detail = "at grid point " + tuple_str(gp) + ": " + what;
    }
  }
  c.map_well_defined[m] = ob.verdict == Verdict::proved || guards_hold(c, map_facts, *at.enc, ob.subject);
  ob.millis = timer.millis();
  return ob;
}

}  // namespace tessera::prove
