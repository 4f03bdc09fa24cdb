// Obligation 8, output coverage: every element of an output block that is
// copied out was written by the kernel during the block's visit.
//
// Nothing is copied into an output block (interpreter step 5, as on a TPU,
// where Mosaic copies output blocks out, never in): an element no step of the
// visit writes is copied out with whatever the kernel buffer held, the last
// step's data on this core or uninitialized memory. So the result depends on
// the seed, the number of cores or the fill of uninitialized memory. This
// holds for an output aliased to an input too: its block is not the input's.
//
// A visit is the run of consecutive steps of one parallel position (the
// arbitrary axes in row-major order) with the same block; the block is copied
// out after its last step L. Steps, visits and copies are those of the grid
// schedule (ir/grid_schedule.h: copied_out_after, copied_in_before). The claim: for every such L and every element e
// of its block that lies inside the array (padding is never read back), the
// visit writes e at L or at its first step F (the patterns of Pallas kernels:
// initialise at k == 0 and accumulate, or write at the last k). L is a step
// whose successor S in its position has another block (or L ends the
// position); F is a step whose predecessor P has another block (or F starts
// the position), with F's block and position, no later than L. For an output
// that is not aliased, the interpreter's revisit check makes F and L one
// visit; an aliased output may be revisited, so only L counts there.
//
// A counterexample L, e is FAILED when no step of L's position up to L writes
// e at all: in a run where that position is the first its core runs (one core
// per position, or a seed that puts it first) e holds the uninitialized fill,
// so `--uninit zero` changes the output. A write in a loop, under control the
// prover does not model, or of a region it cannot tell (a gather's rows)
// or a masked store makes a counterexample `unknown`, as does a write at a middle step of the
// visit (the claim follows F and L only).
//
// Five symbolic grid points (L, S, F, P and M for the confirmation), so the
// cost does not depend on the grid's size.
#include "analysis/prove/block_region.h"
#include "analysis/prove/kernel_walker.h"
#include "analysis/prove/schedule_terms.h"
#include "ir/primitive.h"

namespace tessera::prove {

namespace {

// A write to the output block whose path and region are modelled exactly.
struct BlockWrite {
  z3::expr path;
  std::vector<AccessRange> region;
};

// The writes of one grid step to the block of one output.
struct StepWrites {
  std::unique_ptr<IntEncoder> enc;
  std::vector<BlockWrite> exact;
  std::string inexact;  // why some write is not modelled exactly ("" if none)
};

// Walks the kernel at `point` and collects its writes to `block` (the output's kernel parameter).
StepWrites writes_at(CallContext& c, const Var* block, const std::vector<Sym>& point) {
  StepWrites sw;
  sw.enc = std::make_unique<IntEncoder>(c.scope, c.ctx.bool_val(true));
  IntEncoder& enc = *sw.enc;
  enc.set_grid_point(point);
  const Body& kernel = *c.kernel;
  for (int j = 0; j < c.g.num_scalar_prefetch() && j < static_cast<int>(kernel.params().size()); ++j)
    enc.bind_prefetch(kernel.params()[j], j);
  KernelWalker w(c, enc);
  w.on_access = [&](const Access& a) {
    if (a.root != block) return;
    const std::string& n = a.op.name();
    // A DMA writes its destination (the copy lands by the step's dma_wait:
    // semaphore balance); every other op says what it writes in its effects
    // (an accumulation writes the element too; reading it first is the
    // carried-state claim's business).
    bool write = n == "dma_start" ? a.ix.base != a.op.main_operand_index(0)
                                  : n != "dma_wait" && (op_effects(a.op).on(a.ix.base) & (kWrite | kAccum));
    if (!write) return;
    enc.need(enc.path_deps());
    for (const Sym& s : a.starts) enc.need(s.deps);
    std::vector<AccessRange> region = access_ranges(c.ctx, a, a.op.operands.at(a.ix.base).type().shape());
    std::string why;
    if (n == "store" && a.op.num_main_operands() == 3) why = "it is written by a masked store";
    else if (!w.loops().empty()) why = "it is written inside a loop (" + w.loops().back().what + ")";
    else if (!w.path_opaque().empty()) why = "it is written under a condition the prover does not model (" + w.path_opaque()[0] + ")";
    for (const Sym& s : a.starts)
      if (why.empty() && !s.opaque.empty()) why = "it is written at an index the prover does not model (" + s.opaque[0] + ")";
    for (const AccessRange& r : region)
      if (why.empty() && !r.dense) why = "it is written through a strided, gathered or dynamically sized region";
    if (why.empty()) sw.exact.push_back({enc.path(), region});
    else if (sw.inexact.empty()) sw.inexact = "by " + n + where(a.op) + " " + why;
  };
  w.walk(kernel);
  return sw;
}

// The step writes element `e` of the block.
z3::expr covers(z3::context& ctx, const StepWrites& sw, const std::vector<z3::expr>& e) {
  z3::expr any = ctx.bool_val(false);
  for (const BlockWrite& wr : sw.exact) {
    z3::expr in = wr.path;
    for (size_t d = 0; d < e.size() && d < wr.region.size(); ++d) in = in && wr.region[d].lo <= e[d] && e[d] <= wr.region[d].hi;
    any = any || in;
  }
  return any;
}

// Element `e` (one symbol per kernel dim of the block) lies in the block and
// inside the array: the copy-out writes it where the output is read back.
z3::expr visible(CallContext& c, int m, const MapAt& at, const std::vector<z3::expr>& e, const Shape& kernel_shape) {
  BlockGeometry geo = c.g.geometry(m);
  std::vector<SymExtent> region = block_region(c.ctx, geo, at.outputs);
  z3::expr ok = c.ctx.bool_val(true);
  size_t kd = 0;
  for (size_t d = 0; d < geo.dims.size(); ++d) {
    const DimGeometry& dg = geo.dims[d];
    z3::expr pos = region[d].start;
    if (dg.dim.kind != BlockDimKind::Squeezed) {
      if (kd >= e.size()) break;
      ok = ok && e[kd] >= 0 && e[kd] < c.ctx.int_val(kernel_shape.at(kd));
      if (dg.dim.kind == BlockDimKind::BoundedSlice) ok = ok && e[kd] < region[d].size;
      pos = pos + e[kd];
      ++kd;
    }
    ok = ok && pos >= c.ctx.int_val(dg.pad_lo) && pos < c.ctx.int_val(dg.pad_lo + dg.extent);
  }
  return ok;
}

// A dynamic grid axis of size 0 runs no step (on the device whose own size
// it is): "grid axis a has size 0 ..." with `ob` FAILED, the solver's reason
// with `ob` unknown, or "" when every axis has a step.
std::string empty_grid(CallContext& c, Obligation& ob) {
  for (int a = 0; a < c.g.grid_rank(); ++a) {
    if (c.scope.grid_size_iv[a].lo > 0) continue;
    std::vector<z3::expr> q = c.base_facts;
    q.push_back(c.scope.grid_size[a] == 0);
    QueryResult r = c.solver.check(q, "output_coverage.empty");
    ob.queries++;
    ob.method = "z3";
    if (r.result == z3::unsat) continue;
    if (r.result == z3::unknown) {
      ob.verdict = Verdict::unknown;
      return "(" + r.reason + ")";
    }
    std::string on;
    if (c.scope.grid_size_per_device.count(a))
      for (const auto& [axis, sym] : c.scope.axis_symbol) on += (on.empty() ? " on " : ", ") + axis + " " + std::to_string(c.eval(*r.model, sym));
    ob.verdict = Verdict::failed;
    return "grid axis " + std::to_string(a) + " has size 0" + on;
  }
  return "";
}

}  // namespace

Obligation prove_output_coverage(CallContext& c, int out) {
  Timer timer;
  int m = c.g.num_inputs() + out;
  Obligation ob = obligation(c.name, c.subject(m), "output coverage");
  const Body& kernel = *c.kernel;
  int param = c.g.output_param(out);
  if (param >= static_cast<int>(kernel.params().size())) {
    ob.detail = "the kernel has no parameter for this output";
    ob.millis = timer.millis();
    return ob;
  }
  const Var* block = kernel.params()[param];
  const Shape& kernel_shape = block->type.shape();
  bool aliased = false;
  for (const auto& [i, o] : c.g.aliases) aliased |= static_cast<int>(o) == out;
  if (!aliased) {
    std::string empty = empty_grid(c, ob);
    if (!empty.empty()) {
      ob.detail = empty + ": no grid step runs, so no block of " + ob.subject + " is written and it holds uninitialized memory";
      if (ob.verdict != Verdict::failed) ob.detail = empty;
      ob.millis = timer.millis();
      return ob;
    }
  }
  // Visits as the grid schedule (ir/grid_schedule.h) makes them, within one
  // position of the parallel prefix.
  Z3Algebra alg{c.ctx};
  int prefix = leading_parallel_axes(c.g);
  z3::expr zero = c.ctx.int_val(0);

  std::vector<z3::expr> facts = c.base_facts;
  auto point = [&](const char* tag) { return c.make_point(std::string("cover_") + tag, facts); };
  std::vector<Sym> L = point("L"), S = point("S"), F = point("F"), P = point("P");
  MapAt at_L = c.encode_map(m, L), at_S = c.encode_map(m, S), at_F = c.encode_map(m, F), at_P = c.encode_map(m, P);
  for (const MapAt* a : {&at_L, &at_S, &at_F, &at_P}) CallContext::add_facts(*a->enc, facts, true);
  std::vector<z3::expr> e;
  for (size_t d = 0; d < kernel_shape.size(); ++d) e.push_back(c.ctx.int_const(("cover_e_" + std::to_string(d)).c_str()));
  StepWrites w_L = writes_at(c, block, L), w_F = writes_at(c, block, F);
  CallContext::add_facts(*w_L.enc, facts, true);
  CallContext::add_facts(*w_F.enc, facts, true);

  // L ends a visit; F starts the same one (not aliased: no revisits).
  const std::vector<z3::expr>& sizes = c.scope.grid_size;
  z3::expr ends = copied_out_after(alg, terms(L), terms(S), terms(at_L.outputs), terms(at_S.outputs), sizes, zero, prefix);
  z3::expr unwritten = visible(c, m, at_L, e, kernel_shape) && !covers(c.ctx, w_L, e);
  if (!aliased) {
    z3::expr starts = copied_in_before(alg, terms(P), terms(F), terms(at_P.outputs), terms(at_F.outputs), sizes, zero, prefix);
    unwritten = unwritten && starts && not_after_in_position(alg, terms(F), terms(L), prefix) &&
                same_block(alg, terms(at_F.outputs), terms(at_L.outputs)) && !covers(c.ctx, w_F, e);
  }
  std::vector<z3::expr> q = facts;
  q.push_back(ends);
  q.push_back(unwritten);
  QueryResult res = c.solver.check(q, "output_coverage");
  ob.queries++;
  ob.method = "z3";
  auto finish = [&](Verdict v, std::string detail) {
    ob.verdict = v;
    ob.detail = std::move(detail);
    ob.millis = timer.millis();
    return ob;
  };
  if (res.result == z3::unsat) return finish(Verdict::proved, "");
  if (res.result == z3::unknown) return finish(Verdict::unknown, "(" + res.reason + ")");

  const z3::model& mo = *res.model;
  std::vector<int64_t> gp = c.eval(mo, L), elem, blk = c.eval(mo, at_L.outputs);
  for (const z3::expr& x : e) elem.push_back(c.eval(mo, x));
  std::string what = "element " + tuple_str(elem) + " of block " + tuple_str(blk) + " of " + ob.subject;
  std::string inexact = !w_L.inexact.empty() ? w_L.inexact : w_F.inexact;
  if (!inexact.empty())
    return finish(Verdict::unknown, "cannot decide whether " + what + " is written before its copy-out after grid point " +
                                        tuple_str(gp) + ": " + inexact);

  // Confirm: no step M of L's position up to L writes e, for any block.
  std::vector<z3::expr> confirm = q;
  for (size_t k = 0; k < L.size(); ++k) confirm.push_back(L[k].e == c.ctx.int_val(gp[k]));
  for (size_t d = 0; d < e.size(); ++d) confirm.push_back(e[d] == c.ctx.int_val(elem[d]));
  std::vector<Sym> M = c.make_point("cover_M", confirm);
  MapAt at_M = c.encode_map(m, M);
  StepWrites w_M = writes_at(c, block, M);
  CallContext::add_facts(*at_M.enc, confirm, true);
  CallContext::add_facts(*w_M.enc, confirm, true);
  confirm.push_back(not_after_in_position(alg, terms(M), terms(L), prefix));
  confirm.push_back(covers(c.ctx, w_M, e));
  QueryResult again = c.solver.check(confirm, "output_coverage_confirm");
  ob.queries++;
  if (again.result == z3::unknown) return finish(Verdict::unknown, "(" + again.reason + ")");
  if (again.result == z3::sat) {
    std::vector<int64_t> mp = c.eval(*again.model, M), mb = c.eval(*again.model, at_M.outputs);
    std::string by = mb == blk ? "an earlier step of its visit, grid point " + tuple_str(mp) +
                                     ", writes it (the claim follows only a visit's first and last steps)"
                               : "it holds what grid point " + tuple_str(mp) + " wrote there for block " + tuple_str(mb) +
                                     " (the same in every run of the interpreter, but not written in this visit)";
    return finish(Verdict::unknown, "cannot decide whether " + what + " is written before its copy-out after grid point " +
                                        tuple_str(gp) + ": " + by);
  }
  BlockGeometry geo = c.g.geometry(m);
  for (const DimGeometry& dg : geo.dims)
    if (dg.dim.kind != BlockDimKind::Blocked && dg.dim.kind != BlockDimKind::Squeezed)
      return finish(Verdict::unknown, "no step writes " + what + " before its copy-out after grid point " + tuple_str(gp) +
                                          ", but another block of this output may overlap it and be copied out later");
  ob.grid_points = {gp};
  return finish(Verdict::failed,
                "at grid point " + tuple_str(gp) + ": " + what +
                    " is copied out after this step, but no step of this parallel position up to it writes the element: it "
                    "holds the uninitialized fill or what the core's previous step left, which depend on --uninit, the "
                    "seed and the number of cores");
}

}  // namespace tessera::prove
