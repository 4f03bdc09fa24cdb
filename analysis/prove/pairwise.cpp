// Obligations 2 and 3, about an output's blocks at several grid points:
// non-revisiting and parallel safety. Both use a few *symbolic* grid points
// (GPUVerify's two-thread reduction), so their cost does not depend on the
// grid's size.
//
// Non-revisiting, for every order the interpreter may use: row-major over
// the grid, each parallel axis's coordinates relabelled by its own permutation
// (a seed), the parallel prefix split into contiguous chunks over any number of
// cores. A core's order is a contiguous piece of the one-core order, so a
// revisit on some core is a revisit on one core. Three points P, Q, R come in
// that order for some seed iff, taking d1 = the first axis where P and Q
// differ and d2 = the first where Q and R differ: P[d1] < Q[d1] if d1 is
// arbitrary, Q[d2] < R[d2] if d2 is arbitrary, and not (d1 == d2 parallel
// and P[d1] == R[d1]) -- the only way one permutation per axis can fail to
// order them. A revisit is such P, Q, R with block(P) == block(R) !=
// block(Q). docs/prove.md has the argument.
#include <functional>

#include "analysis/prove/block_region.h"
#include "analysis/prove/call_context.h"
#include "analysis/prove/schedule_terms.h"

namespace tessera::prove {

namespace {

std::vector<std::string> opaque_of(const std::vector<MapAt*>& maps) {
  std::vector<std::string> out;
  for (MapAt* m : maps)
    for (const Sym& s : m->outputs) out = merge_opaque(out, s.opaque);
  return out;
}

void finish_unknown_or_failed(Obligation& ob, const std::vector<std::string>& opaque, const std::string& detail) {
  if (!opaque.empty()) {
    ob.verdict = Verdict::unknown;
    ob.detail = "cannot decide: the block index depends on values the prover does not model (" + opaque[0] + ")";
    ob.grid_points.clear();
  } else {
    ob.verdict = Verdict::failed;
    ob.detail = detail;
  }
}

// "block (1, 0)", or "overlapping blocks (4,) and (6,)"
std::string written_blocks(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  if (a == b) return "block " + tuple_str(a);
  return "overlapping blocks " + tuple_str(a) + " and " + tuple_str(b);
}

}  // namespace

std::vector<int> parallel_axes(const CallContext& c) {
  std::vector<int> par;
  for (int a = 0; a < c.g.grid_rank(); ++a)
    if (c.g.is_parallel(a) && c.scope.grid_size_iv[a].hi > 1) par.push_back(a);
  return par;
}

namespace {

// The blocks of mappings ma at A and mb at B share an element of their
// buffer. Both mappings index the same padded buffer (aliased buffers must
// pad alike), so padding counts too: the interpreter's race detector watches
// the whole buffer.
z3::expr blocks_overlap(CallContext& c, int ma, const MapAt& A, int mb, const MapAt& B) {
  return regions_overlap(c.ctx, block_region(c.ctx, c.g.geometry(ma), A.outputs),
                         block_region(c.ctx, c.g.geometry(mb), B.outputs));
}

}  // namespace

namespace {

// A counterexample to a parallel-overlap query: the two points, the axis they
// differ on, and the block indices of the two mappings there.
struct Overlap {
  std::vector<int64_t> a, b, block_a, block_b;
  int axis;
};

// Two grid points on different parallel positions whose blocks of mappings
// `ma` (at the first) and `mb` (at the second) share an element of one
// buffer. Blocks race when they overlap, not only when their indices are
// equal: Element and BoundedSlice blocks at different indices can overlap.
Obligation parallel_overlap(CallContext& c, int ma, int mb, const std::string& subject, const std::string& query,
                            const std::function<std::string(const Overlap&)>& message) {
  Timer timer;
  Obligation ob = obligation(c.name, subject, "parallel safety");
  std::vector<int> par = parallel_axes(c);
  if (par.empty()) {
    ob.verdict = Verdict::proved;
    ob.method = "trivial";
    ob.detail = "no parallel axis has more than one point";
    ob.millis = timer.millis();
    return ob;
  }
  std::vector<z3::expr> q = c.base_facts;
  std::vector<Sym> pa = c.make_point("a", q), pb = c.make_point("b", q);
  MapAt A = c.encode_map(ma, pa), B = c.encode_map(mb, pb);
  CallContext::add_facts(*A.enc, q, true);
  CallContext::add_facts(*B.enc, q, true);
  z3::expr differ = c.ctx.bool_val(false);
  for (int a : par) differ = differ || pa[a].e != pb[a].e;
  q.push_back(differ);
  q.push_back(blocks_overlap(c, ma, A, mb, B));
  QueryResult r = c.solver.check(q, subject + "." + query);
  ob.method = "z3";
  ob.queries = 1;
  if (r.result == z3::unsat) ob.verdict = Verdict::proved;
  else if (r.result == z3::unknown) ob.detail = "(" + r.reason + ")";
  else {
    Overlap o{c.eval(*r.model, pa), c.eval(*r.model, pb), c.eval(*r.model, A.outputs), c.eval(*r.model, B.outputs), par[0]};
    for (int x : par)
      if (o.a[x] != o.b[x]) {
        o.axis = x;
        break;
      }
    ob.grid_points = {o.a, o.b};
    finish_unknown_or_failed(ob, opaque_of({&A, &B}), message(o));
  }
  ob.millis = timer.millis();
  return ob;
}

std::string points_differ(const Overlap& o) {
  return "at grid points " + tuple_str(o.a) + " and " + tuple_str(o.b) + ": they differ on parallel axis " +
         std::to_string(o.axis);
}

}  // namespace

// Input `in` is read from the buffer output `out` writes: a point reading a
// block that a point on another parallel position writes races with it.
Obligation prove_alias_parallel_safety(CallContext& c, int in, int out) {
  return parallel_overlap(c, in, c.g.num_inputs() + out, c.subject(in), "alias_parallel_safety", [&](const Overlap& o) {
    return points_differ(o) + ", but " + tuple_str(o.a) + " reads block " + tuple_str(o.block_a) + " of in[" +
           std::to_string(in) + "] while " + tuple_str(o.b) + " writes block " + tuple_str(o.block_b) + " of out[" +
           std::to_string(out) + "], which aliases it (input_output_aliases), and the blocks overlap";
  });
}

Obligation prove_parallel_safety(CallContext& c, int out) {
  int m = c.g.num_inputs() + out;
  return parallel_overlap(c, m, m, c.subject(m), "parallel_safety", [](const Overlap& o) {
    return points_differ(o) + " but both write " + written_blocks(o.block_a, o.block_b);
  });
}

Obligation prove_non_revisiting(CallContext& c, int out) {
  Timer timer;
  int m = c.g.num_inputs() + out;
  Obligation ob = obligation(c.name, c.subject(m), "non-revisiting");
  int k = leading_parallel_axes(c.g);
  int rank = c.g.grid_rank();
  if (!parallel_axes_form_prefix(c.g)) {
    ob.verdict = Verdict::failed;
    ob.method = "trivial";
    ob.detail = "dimensions with parallel semantics must form a prefix of the grid (the interpreter refuses to run it)";
    ob.millis = timer.millis();
    return ob;
  }
  if (rank == 0) {
    ob.verdict = Verdict::proved;
    ob.method = "trivial";
    ob.detail = "a grid of one point";
    ob.millis = timer.millis();
    return ob;
  }
  // Three symbolic points P, Q, R that some seed visits in this order on one
  // core, with block(P) == block(R) != block(Q). See the file comment.
  std::vector<z3::expr> q = c.base_facts;
  std::vector<Sym> P = c.make_point("r1", q), Q = c.make_point("r2", q), R = c.make_point("r3", q);
  std::vector<z3::expr> pq_first, qr_first;  // "axis d is the first on which they differ"
  z3::expr pq_eq = c.ctx.bool_val(true), qr_eq = c.ctx.bool_val(true);
  for (int d = 0; d < rank; ++d) {
    pq_first.push_back(pq_eq && P[d].e != Q[d].e);
    qr_first.push_back(qr_eq && Q[d].e != R[d].e);
    pq_eq = pq_eq && P[d].e == Q[d].e;
    qr_eq = qr_eq && Q[d].e == R[d].e;
  }
  z3::expr pq = c.ctx.bool_val(false), qr = c.ctx.bool_val(false);
  for (int d = 0; d < rank; ++d) {
    // On an arbitrary axis the order is the natural one; a parallel axis may be permuted at will.
    pq = pq || (d < k ? pq_first[d] : pq_first[d] && P[d].e < Q[d].e);
    qr = qr || (d < k ? qr_first[d] : qr_first[d] && Q[d].e < R[d].e);
  }
  q.push_back(pq);
  q.push_back(qr);
  // One permutation of a parallel axis cannot put P[d] before Q[d] and Q[d] before R[d] == P[d].
  for (int d = 0; d < k; ++d) q.push_back(z3::implies(pq_first[d] && qr_first[d], P[d].e != R[d].e));
  MapAt BP = c.encode_map(m, P), BQ = c.encode_map(m, Q), BR = c.encode_map(m, R);
  for (MapAt* b : {&BP, &BQ, &BR}) CallContext::add_facts(*b->enc, q, true);
  // Blocks as the grid schedule (ir/grid_schedule.h) tells them apart.
  Z3Algebra alg{c.ctx};
  q.push_back(same_block(alg, terms(BP.outputs), terms(BR.outputs)));
  q.push_back(!same_block(alg, terms(BP.outputs), terms(BQ.outputs)));
  QueryResult r = c.solver.check(q, ob.subject + ".non_revisiting");
  ob.method = "z3";
  ob.queries = 1;
  if (r.result == z3::unsat) ob.verdict = Verdict::proved;
  else if (r.result == z3::unknown) ob.detail = "(" + r.reason + ")";
  else {
    const z3::model& mo = *r.model;
    std::vector<int64_t> a = c.eval(mo, P), b = c.eval(mo, Q), d = c.eval(mo, R);
    ob.grid_points = {a, b, d};
    // Say which permutation of the parallel axes produces this order.
    std::string order;
    for (int ax = 0; ax < k; ++ax) {
      if (c.eval(mo, pq_first[ax]))
        order += std::string(order.empty() ? "" : ", ") + "axis " + std::to_string(ax) + " visiting " + std::to_string(a[ax]) +
                 " before " + std::to_string(b[ax]);
      if (c.eval(mo, qr_first[ax]))
        order += std::string(order.empty() ? "" : ", ") + "axis " + std::to_string(ax) + " visiting " + std::to_string(b[ax]) +
                 " before " + std::to_string(d[ax]);
    }
    order = order.empty() ? "row-major order on one core" : "one core, a seed permuting parallel " + order;
    finish_unknown_or_failed(ob, opaque_of({&BP, &BQ, &BR}),
                             "at grid points " + tuple_str(a) + ", " + tuple_str(b) + ", " + tuple_str(d) + ": block " +
                                 tuple_str(c.eval(mo, BP.outputs)) + " is written at " + tuple_str(a) +
                                 ", left for block " + tuple_str(c.eval(mo, BQ.outputs)) + " at " + tuple_str(b) +
                                 " and written again at " + tuple_str(d) + " (" + order + ")");
  }
  ob.millis = timer.millis();
  return ob;
}

}  // namespace tessera::prove
