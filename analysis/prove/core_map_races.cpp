// Obligation 9, core races: two cores of a core_map never touch the same
// elements of a Ref they share, one of them writing, unless something orders
// the two accesses.
//
// Every core of a core_map runs its body on the same Refs (the core_map's
// operands); Refs the body allocates (run_scoped) are each core's own. The
// interpreter's race detector (interpreter/tpu/races.h) runs each core and
// each DMA as a thread: the core_map forks the cores from the caller and joins
// them at its end, and between cores only a semaphore signal (local or
// remote), a DMA's completion signal on a shared semaphore, or a barrier
// orders one core's accesses before another's. Accesses of one core are
// ordered by program order and its DMAs by its waits (the DMA-race claim).
//
// So the claim takes the body's trace (protocol_trace.h: accesses by the core
// and by its DMAs, with paths and regions as functions of the core's index),
// instantiates it for two symbolic cores p != q of one device, and asks for
// two accesses of one shared Ref, at least one a write, both on their paths,
// whose regions overlap. None: proved. One, and the body has no operation
// that can order cores: FAILED, which `run --detect-races` reports on any
// number of host threads (nothing orders the pair, whatever the schedule).
// One, and the body signals or waits on semaphores other than its own DMAs'
// (or a barrier, or a shared semaphore): `unknown`, since whether those
// signals order the pair is not modelled here.
#include <algorithm>

#include "analysis/prove/protocol_trace.h"

namespace tessera::prove {

namespace {

bool exact_region(const TraceEvent& e) {
  return std::all_of(e.region.begin(), e.region.end(), [](const SymRange& r) { return r.exact; });
}

// Why the body's semaphore operations might order accesses of different
// cores ("" when none can: only its own DMAs' local semaphores).
std::string cross_core_order(const std::vector<TraceEvent>& evs, const std::set<const Var*>& shared) {
  for (const TraceEvent& e : evs) {
    if (e.kind != TraceEvent::sem) continue;
    bool dma = e.op->name() == "dma_start" || e.op->name() == "dma_wait";
    if (!dma || e.device || shared.count(static_cast<const Var*>(e.sem_key)))
      return e.what + " may order the cores (" + e.sem_name + ")";
  }
  return "";
}

std::string who(const TraceEvent& e) {
  std::string it = e.iteration.empty() ? "" : " (" + e.iteration + ")";
  if (e.by == TraceEvent::core) return e.op->name() + " " + e.ref_name + where(*e.op) + it;
  return "the copy of " + e.what + it;
}

}  // namespace

Obligation prove_core_map_races(CallContext& c) {
  Timer timer;
  Obligation ob = obligation(c.name, "kernel", "core races");
  auto finish = [&](Verdict v, std::string detail) {
    ob.verdict = v;
    ob.detail = std::move(detail);
    ob.millis = timer.millis();
    return ob;
  };
  int64_t cores = 1;
  for (const std::string& a : c.op.param(keys::mesh_axes)) cores *= c.scope.axis_sizes.at(a);
  std::set<const Var*> shared(c.kernel->params().begin(), c.kernel->params().end());
  std::vector<z3::expr> facts = c.base_facts;
  std::vector<Sym> point = c.make_point("cm", facts);  // a core_map has no grid: empty
  ProtocolTrace trace(c, point, true);
  const std::vector<TraceEvent>& evs = trace.events();
  std::vector<const TraceEvent*> accesses;
  for (const TraceEvent& e : evs)
    if (e.kind == TraceEvent::access && shared.count(e.root)) accesses.push_back(&e);
  bool writes = std::any_of(accesses.begin(), accesses.end(), [](const TraceEvent* e) { return e->write; });
  if (cores < 2 || !writes) {
    ob.method = "trivial";
    return finish(Verdict::proved, cores < 2 ? "one core" : "no core writes a shared Ref");
  }
  if (!trace.why().empty()) return finish(Verdict::unknown, trace.why());
  if (!trace.accesses_why().empty()) return finish(Verdict::unknown, trace.accesses_why());
  for (const Var* r : shared)
    if (!trace.missing_accesses(r).empty()) return finish(Verdict::unknown, trace.missing_accesses(r));
  for (const TraceEvent* e : accesses) {
    if (!e->varies.empty()) return finish(Verdict::unknown, e->varies);
    if (e->remote) return finish(Verdict::unknown, who(*e) + " writes another device's Ref, whose cores this claim does not model");
  }

  // Two cores p != q of one device (cores are the minor part of a process id).
  z3::expr p = c.ctx.int_const("core_p"), q = c.ctx.int_const("core_q");
  z3::expr n = c.ctx.int_val(trace.devices()), per_device = c.ctx.int_val(cores);
  facts.push_back(p >= 0 && p < n && q >= 0 && q < n && p != q && p / per_device == q / per_device);
  std::vector<z3::expr> own;
  CallContext::add_facts(trace.encoder(), own, true);  // kernel bounds proves the guards indices rely on
  for (const z3::expr& f : own) {
    facts.push_back(trace.on(f, p));
    facts.push_back(trace.on(f, q));
  }
  struct Pair {
    const TraceEvent *a, *b;
  };
  std::vector<Pair> pairs;
  std::vector<z3::expr> bad;
  for (size_t i = 0; i < accesses.size(); ++i)
    for (size_t j = i; j < accesses.size(); ++j) {
      const TraceEvent &a = *accesses[i], &b = *accesses[j];
      if (a.root != b.root || !(a.write || b.write)) continue;
      z3::expr o = trace.on(a.path, p) && trace.on(b.path, q);
      for (size_t d = 0; d < a.region.size() && d < b.region.size(); ++d)
        o = o && trace.on(a.region[d].lo, p) <= trace.on(b.region[d].hi, q) &&
            trace.on(b.region[d].lo, q) <= trace.on(a.region[d].hi, p);
      pairs.push_back({&a, &b});
      bad.push_back(o);
    }
  ob.method = "z3";
  std::string ordered = cross_core_order(evs, shared);
  std::string unknown_reason;
  Obligation failed;
  if (c.sweep(facts, bad, "core_map_races", ob, unknown_reason, [&](size_t k, const z3::model& mo) {
        const TraceEvent &a = *pairs[k].a, &b = *pairs[k].b;
        std::string race = trace.process_name(c.eval(mo, p)) + "'s " + who(a) + (a.write ? " writes " : " reads ") +
                           a.ref_name + " and " + trace.process_name(c.eval(mo, q)) + "'s " + who(b) +
                           (b.write ? " writes " : " reads ") + b.ref_name;
        std::vector<std::string> opq = merge_opaque(a.opaque, b.opaque);
        std::string why = !opq.empty() ? "they depend on values the prover does not model (" + opq[0] + ")"
                          : !exact_region(a) || !exact_region(b)
                              ? "a strided slice or the rows of a gather / scatter are over-approximated"
                              : "";
        if (!why.empty()) {
          if (unknown_reason.empty()) unknown_reason = "cannot decide whether " + race + " touch the same elements: " + why;
          return false;
        }
        if (!ordered.empty()) {
          if (unknown_reason.empty())
            unknown_reason = race + ", the same elements, unless a semaphore orders them: " + ordered +
                             ", and ordering across the cores of a core_map is not modelled";
          return false;
        }
        failed = finish(Verdict::failed, race + ", the same elements, and nothing orders them (no semaphore or barrier)");
        return true;
      }))
    return failed;
  if (!unknown_reason.empty()) return finish(Verdict::unknown, unknown_reason);
  return finish(Verdict::proved, std::to_string(accesses.size()) + " accesses of shared Refs");
}

}  // namespace tessera::prove
