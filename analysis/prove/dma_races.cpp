// Obligation 7, DMA races: while a DMA is in flight, nothing touches what it
// writes and nothing writes what it reads.
//
// The interpreter's race detector (interpreter/tpu/races.h, after
// jax/_src/pallas/mosaic/interpret/interpret_pallas_call.py) runs every DMA as
// a thread of its own: the copy is ordered before the core's later accesses
// only once the core waits on the DMA's semaphore. A local DMA's copy is
// queued on its destination semaphore and the first dma_wait on that
// semaphore element runs it and orders it (a remote DMA's source side: its
// source semaphore). So, in program order on every path of one grid step,
// between a dma_start and the first wait on its semaphore element:
//   * no access (by the core or by another DMA) overlaps its destination, and
//   * no write (by the core or another DMA's destination) overlaps its source.
// Regions are boxes over the grid point and unrolled loop counters
// (protocol_trace.h), so the query does not grow with the grid. A strided
// slice is taken as its hull and the rows of a gather / scatter as the whole
// dim: an overlap that only the over-approximation finds is `unknown`, with
// the reason. The destination of a remote DMA lies on another device, whose
// accesses this claim does not model: such a kernel is at best `unknown`.
// Across grid steps a sender's next copy may land while the receiver still
// uses the previous one; that order is not modelled, so a remote DMA in a
// grid of several steps is `unknown`.
#include <algorithm>

#include "analysis/prove/protocol_trace.h"

namespace tessera::prove {

namespace {

// One DMA instance of the trace: its source and destination accesses and the
// semaphore element whose first wait completes each side.
struct Dma {
  int instance = 0;
  const TraceEvent* start = nullptr;     // its first event (names the op and iteration)
  const TraceEvent* src = nullptr;
  const TraceEvent* dst = nullptr;
  const TraceEvent* dst_sem = nullptr;
  const TraceEvent* src_sem = nullptr;  // remote only
  size_t first = 0;                      // index of its first event in the trace
  std::string what() const { return start->what + (start->iteration.empty() ? "" : " (" + start->iteration + ")"); }
};

z3::expr overlap(z3::context& ctx, const TraceEvent& a, const TraceEvent& b) {
  z3::expr o = ctx.bool_val(true);
  for (size_t d = 0; d < a.region.size() && d < b.region.size(); ++d)
    o = o && a.region[d].lo <= b.region[d].hi && b.region[d].lo <= a.region[d].hi;
  return o;
}

bool exact(const TraceEvent& e) {
  return std::all_of(e.region.begin(), e.region.end(), [](const SymRange& r) { return r.exact; });
}

// A candidate race: `access` overlaps `side` of `dma` while it is in flight.
struct Conflict {
  z3::expr bad;
  const Dma* dma;
  const TraceEvent* side;
  const TraceEvent* access;
};

// The receiving side of remote DMAs, on this device (`me`): a copy from any
// sender into this device's Ref is ordered before this device's accesses once
// it waits on the copy's destination semaphore element. That wait completes
// *this* copy when no other signal reaches the element in the step (and every
// step starts at 0: semaphore balance). So, for every sender: the element has
// no other signal, and no access of this device overlapping the copy's region
// comes before its first wait on the element. A violation may still be
// ordered by another semaphore (a barrier), so it is `unknown`, never FAILED.
// Returns why the claim is unknown ("" when the receiving side is proved).
std::string incoming_races(CallContext& c, ProtocolTrace& trace, const std::vector<Dma>& dmas, const std::vector<z3::expr>& facts,
                           int& queries) {
  Obligation balance = prove_semaphore_balance(c);
  queries += balance.queries;
  if (balance.verdict != Verdict::proved)
    return "races on the receiving device of a remote DMA assume semaphore balance, which is not proved";
  std::vector<z3::expr> with_me = facts;
  z3::expr me = trace.process_id(with_me);
  const std::vector<TraceEvent>& evs = trace.events();
  auto at = [&](const z3::expr& x, int64_t sender) { return trace.on(x, c.ctx.int_val(sender)); };
  struct Incoming {
    z3::expr bad;
    std::string what;
  };
  std::vector<Incoming> checks;
  for (const Dma& d : dmas) {
    if (!d.dst || !d.dst->remote || !d.dst_sem || !d.dst_sem->device) continue;
    const TraceEvent& sem = *d.dst_sem;
    for (int64_t s = 0; s < trace.devices(); ++s) {
      z3::expr here = at(sem.path, s) && at(*sem.device, s) == me;
      z3::expr cell = at(sem.cell, s);
      std::string what = d.what() + " from " + trace.process_name(s);
      // Any other signal of the element on this device.
      z3::expr other = c.ctx.bool_val(false);
      for (const TraceEvent& f : evs) {
        if (f.kind != TraceEvent::sem || f.wait || f.sem_key != sem.sem_key) continue;
        if (!f.device) {
          other = other || (f.path && f.cell == cell);
          continue;
        }
        for (int64_t s2 = 0; s2 < trace.devices(); ++s2)
          if (s2 != s || f.instance != sem.instance)
            other = other || (at(f.path, s2) && at(*f.device, s2) == me && at(f.cell, s2) == cell);
      }
      checks.push_back({here && other, "another signal reaches " + sem.sem_name + " on the device " + what + " writes to, so its "
                                       "wait may complete before the copy lands"});
      // Accesses of this device before its first wait on the element.
      z3::expr open = c.ctx.bool_val(true);
      for (const TraceEvent& u : evs) {
        if (u.kind == TraceEvent::sem) {
          if (u.wait && u.sem_key == sem.sem_key) open = open && !(u.path && u.cell == cell);
          continue;
        }
        if (u.root != d.dst->root || u.remote) continue;
        z3::expr o = c.ctx.bool_val(true);
        for (size_t k = 0; k < u.region.size() && k < d.dst->region.size(); ++k)
          o = o && u.region[k].lo <= at(d.dst->region[k].hi, s) && at(d.dst->region[k].lo, s) <= u.region[k].hi;
        std::string by = u.by == TraceEvent::core ? u.op->name() + " " + u.ref_name + where(*u.op) : "the copy of " + u.what;
        checks.push_back({here && open && u.path && o,
                          by + (u.iteration.empty() ? "" : " (" + u.iteration + ")") + " may touch what " + what +
                              " writes before this device waits on " + sem.sem_name + " for it"});
      }
    }
  }
  z3::expr any = c.ctx.bool_val(false);
  for (const Incoming& k : checks) any = any || k.bad;
  std::vector<z3::expr> q = with_me;
  q.push_back(any);
  QueryResult r = c.solver.check(q, "dma_races.incoming");
  ++queries;
  if (r.result == z3::unsat) return "";
  if (r.result == z3::unknown) return "(" + r.reason + ")";
  for (const Incoming& k : checks)
    if (c.eval(*r.model, k.bad)) return "cannot decide: " + k.what + " (ordering across devices by other semaphores is not modelled)";
  return "internal: the counterexample violates no recorded check";
}

// Whether the grid may have more than one point (a dynamic size may be large).
bool may_take_several_steps(const CallContext& c) {
  bool empty = false, several = false;
  for (const Interval& n : c.scope.grid_size_iv) empty = empty || n.hi < 1, several = several || n.hi > 1;
  return several && !empty;
}

}  // namespace

Obligation prove_dma_races(CallContext& c) {
  Timer timer;
  Obligation ob = obligation(c.name, "kernel", "DMA races");
  std::vector<z3::expr> base = c.base_facts;
  std::vector<Sym> point = c.make_point("r", base);
  ProtocolTrace trace(c, point);
  auto finish = [&](Verdict v, std::string detail) {
    ob.verdict = v;
    ob.detail = std::move(detail);
    ob.millis = timer.millis();
    return ob;
  };
  const std::vector<TraceEvent>& evs = trace.events();
  std::vector<Dma> dmas;
  for (size_t i = 0; i < evs.size(); ++i) {
    const TraceEvent& e = evs[i];
    if (e.op->name() != "dma_start") continue;
    if (dmas.empty() || dmas.back().instance != e.instance) dmas.push_back(Dma{e.instance, &e, nullptr, nullptr, nullptr, nullptr, i});
    Dma& d = dmas.back();
    if (e.kind == TraceEvent::access) (e.by == TraceEvent::dma_source ? d.src : d.dst) = &e;
    else (d.dst_sem ? d.src_sem : d.dst_sem) = &e;
  }
  if (dmas.empty()) {
    ob.method = "trivial";
    return finish(Verdict::proved, "no DMA");
  }
  if (!trace.why().empty()) return finish(Verdict::unknown, trace.why());
  if (!trace.accesses_why().empty()) return finish(Verdict::unknown, trace.accesses_why());
  for (const TraceEvent& e : evs)
    if (!e.varies.empty()) return finish(Verdict::unknown, e.varies);
  // Accesses the trace could not unroll matter only on the Refs DMAs copy.
  for (const Dma& d : dmas)
    for (const TraceEvent* side : {d.src, d.dst})
      if (side && !trace.missing_accesses(side->root).empty()) return finish(Verdict::unknown, trace.missing_accesses(side->root));

  std::vector<Conflict> conflicts;
  std::vector<z3::expr> still_open;  // per DMA side: in flight when the step ends
  std::vector<std::string> open_what;
  for (const Dma& d : dmas) {
    for (int side = 0; side < 2; ++side) {
      const TraceEvent* region = side == 0 ? d.src : d.dst;
      const TraceEvent* sem = d.src_sem && side == 0 ? d.src_sem : d.dst_sem;
      if (!region || region->kind != TraceEvent::access || !sem || region->remote) continue;
      z3::expr open = sem->path;
      for (size_t u = d.first; u < evs.size(); ++u) {
        const TraceEvent& e = evs[u];
        if (e.instance == d.instance) continue;
        if (e.kind == TraceEvent::sem) {
          // The first wait on the semaphore element completes the copy.
          if (e.wait && e.sem_key == sem->sem_key) open = (open && !(e.path && e.cell == sem->cell)).simplify();
          if (open.is_false()) break;
          continue;
        }
        if (e.root != region->root || e.remote) continue;
        // The destination: any access; the source: writes only.
        if (side == 0 && !e.write) continue;
        conflicts.push_back({open && e.path && overlap(c.ctx, e, *region), &d, region, &e});
      }
      if (!open.is_false()) {
        still_open.push_back(open);
        open_what.push_back(d.what());
      }
    }
  }
  ob.method = "z3";
  std::vector<z3::expr> facts = base;
  CallContext::add_facts(trace.encoder(), facts, true);  // kernel bounds proves the guards indices rely on
  std::string unknown_reason;
  std::vector<z3::expr> bad;
  for (const Conflict& k : conflicts) bad.push_back(k.bad);
  Obligation failed;
  if (c.sweep(facts, bad, "dma_races", ob, unknown_reason, [&](size_t i, const z3::model& mo) {
    const Conflict& k = conflicts[i];
    const TraceEvent& a = *k.access;
    const TraceEvent& s = *k.side;
    const Dma& d = *k.dma;
    auto it = [](const TraceEvent& e) { return e.iteration.empty() ? std::string() : " (" + e.iteration + ")"; };
    std::string who = a.by == TraceEvent::core ? a.op->name() + " " + a.ref_name + where(*a.op) + it(a)
                                               : "the copy of " + a.what + it(a);
    std::string race = who + (a.write ? " writes " : " reads ") + (a.by == TraceEvent::core ? "it" : a.ref_name) +
                       " while " + d.what() + " is in flight " + (k.side == d.dst ? "writing " : "reading ") +
                       s.ref_name + ", before the wait on " + (k.side == d.dst || !d.src_sem ? d.dst_sem : d.src_sem)->sem_name +
                       " that completes the copy";
    std::vector<std::string> opq = merge_opaque(a.opaque, s.opaque);
    if (!opq.empty() || !exact(a) || !exact(s)) {
      if (unknown_reason.empty())
        unknown_reason = "cannot decide whether " + race + " touch the same elements: " +
                         (!opq.empty() ? "they depend on values the prover does not model (" + opq[0] + ")"
                                       : std::string("a strided slice or the rows of a gather / scatter are over-approximated"));
      return false;
    }
    std::vector<int64_t> gp = c.eval(mo, point);
    ob.grid_points = {gp};
    failed = finish(Verdict::failed, "at grid point " + tuple_str(gp) + ": " + race + ", and the regions overlap");
    return true;
  }))
    return failed;
  if (!unknown_reason.empty()) return finish(Verdict::unknown, unknown_reason);
  // A copy still in flight when the step ends may race with the next step.
  for (size_t k = 0; k < still_open.size(); ++k) {
    std::vector<z3::expr> q = facts;
    q.push_back(still_open[k]);
    QueryResult r = c.solver.check(q, "dma_races.open");
    ob.queries++;
    if (r.result != z3::unsat)
      return finish(Verdict::unknown, r.result == z3::unknown ? "(" + r.reason + ")"
                                                              : open_what[k] + " may still be in flight when the grid step ends "
                                                                               "(see semaphore balance)");
  }
  bool remote = std::any_of(dmas.begin(), dmas.end(), [](const Dma& d) { return d.dst && d.dst->remote; });
  if (remote && may_take_several_steps(c))
    return finish(Verdict::unknown, "a remote DMA of a later grid step may land while the receiving device still reads or "
                                    "receives the copy of an earlier one: ordering of remote copies across grid steps is not "
                                    "modelled (this claim checks the copies of one step)");
  if (remote) {
    std::string why = incoming_races(c, trace, dmas, facts, ob.queries);
    if (!why.empty()) return finish(Verdict::unknown, why);
  }
  return finish(Verdict::proved, std::to_string(dmas.size()) + " DMAs");
}

}  // namespace tessera::prove
