// Obligation 1, block bounds: for every grid point (and scalar-prefetch value
// in its declared range), each block index the index map returns is valid for
// the padded array, and evaluating the map itself is well defined (no
// overflow or division by zero in what computes a block index, prefetch reads
// in bounds, multiple_of hints true).
#include "analysis/prove/call_context.h"

namespace tessera::prove {

// Block geometry, the one place the prover states it: where each kind of
// block dim starts in its array dim and how many elements it spans (the
// interpreter's blocks_at in interpreter/pallas_call.cpp; JAX's
// jax/_src/pallas/core.py BlockDim kinds). An Element index is an element
// offset into the array padded by pad_lo.
Extent block_extent(z3::context& ctx, const BlockDim& b, const Sym& idx, const Sym* size) {
  switch (b.kind) {
    case BlockDimKind::Blocked: return {idx.e * ctx.int_val(b.size), ctx.int_val(b.size)};
    case BlockDimKind::Element: return {idx.e - ctx.int_val(b.pad_lo), ctx.int_val(b.size)};
    case BlockDimKind::Squeezed: return {idx.e, ctx.int_val(1)};
    case BlockDimKind::BoundedSlice: return {idx.e, size ? size->e : ctx.int_val(b.size)};
  }
  return {idx.e, ctx.int_val(b.size)};
}

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The conditions one block dim puts on its index-map result(s).
struct DimCheck {
  z3::expr ok;
  bool settled;      // intervals prove ok
  std::string rule;  // for messages
};

std::vector<DimCheck> dim_checks(z3::context& ctx, const std::vector<BlockDim>& dims, const Shape& shape,
                                 const std::vector<Sym>& out) {
  std::vector<DimCheck> checks;
  size_t k = 0;
  for (size_t d = 0; d < dims.size(); ++d) {
    const BlockDim& b = dims[d];
    int64_t D = d < shape.size() ? shape[d] : 0;
    const Sym& i = out.at(k++);
    auto c = [&](int64_t v) { return ctx.int_val(v); };
    std::string where = " in dimension " + std::to_string(d);
    switch (b.kind) {
      case BlockDimKind::Blocked: {
        int64_t n = ceil_div(D, b.size);
        checks.push_back({i.e >= 0 && i.e < c(n), i.iv.within(0, n - 1),
                          "Blocked(" + std::to_string(b.size) + ") needs 0 <= index < " + std::to_string(n) + where});
        break;
      }
      case BlockDimKind::Squeezed:
        checks.push_back({i.e >= 0 && i.e < c(D), i.iv.within(0, D - 1), "Squeezed needs 0 <= index < " + std::to_string(D) + where});
        break;
      case BlockDimKind::Element:
        checks.push_back({i.e >= c(-b.pad_lo) && i.e + c(b.size) <= c(D + b.pad_hi),
                          i.iv.within(-b.pad_lo, D + b.pad_hi - b.size),
                          "Element(" + std::to_string(b.size) + ", padding=(" + std::to_string(b.pad_lo) + ", " +
                              std::to_string(b.pad_hi) + ")) needs " + std::to_string(-b.pad_lo) + " <= index and index + " +
                              std::to_string(b.size) + " <= " + std::to_string(D + b.pad_hi) + where});
        break;
      case BlockDimKind::BoundedSlice: {
        const Sym& size = out.at(k++);
        bool settled = i.iv.lo >= 0 && size.iv.lo > 0 && size.iv.hi <= b.size && i.iv.hi + size.iv.hi <= D;
        checks.push_back({i.e >= 0 && size.e > 0 && size.e <= c(b.size) && i.e + size.e <= c(D), settled,
                          "BoundedSlice(" + std::to_string(b.size) + ") needs start >= 0, 0 < size <= " + std::to_string(b.size) +
                              " and start + size <= " + std::to_string(D) + where});
        break;
      }
    }
  }
  return checks;
}

// "block index (2, 4) outside (2, 3) blocks of f32[256,384] padded to (256, 384)"
std::string blocks_message(const std::vector<BlockDim>& dims, const Type& array, const std::vector<int64_t>& idx) {
  std::vector<int64_t> nblocks, padded;
  for (size_t d = 0; d < dims.size(); ++d) {
    int64_t D = array.shape().at(d);
    if (dims[d].kind == BlockDimKind::Blocked) {
      nblocks.push_back(ceil_div(D, dims[d].size));
      padded.push_back(nblocks.back() * dims[d].size);
    } else {
      nblocks.push_back(D);
      padded.push_back(D);
    }
  }
  return "block index " + tuple_str(idx) + " outside " + tuple_str(nblocks) + " blocks of " + array.str() + " padded to " +
         tuple_str(padded);
}

}  // namespace

Obligation prove_bounds(CallContext& c, int m) {
  Timer timer;
  Obligation ob = obligation(c.name, c.subject(m), "bounds");
  std::vector<z3::expr> facts = c.base_facts;
  std::vector<Sym> point = c.make_point("p", facts);
  MapAt at = c.encode_map(m, point);
  std::vector<BlockDim> dims = c.g.dims(m);
  const Type& array = c.g.array(m);
  std::vector<DimCheck> checks = dim_checks(c.ctx, dims, array.shape(), at.outputs);

  bool settled = c.opts.use_intervals;
  for (const DimCheck& d : checks) settled &= d.settled;
  for (const Guard& gd : at.enc->guards) settled &= gd.settled || !gd.needed;
  if (settled) {
    ob.verdict = Verdict::proved;
    ob.method = "intervals";
    ob.millis = timer.millis();
    return ob;
  }

  std::vector<z3::expr> q = facts;
  CallContext::add_facts(*at.enc, q, false);
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
      if (plain) what = blocks_message(dims, array, idx);
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
  ob.millis = timer.millis();
  return ob;
}

}  // namespace tessera::prove
