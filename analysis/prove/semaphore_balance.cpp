// Obligation 6, semaphore balance: every semaphore is back at 0 when a grid
// step ends, and no wait asks for more than the step signalled before it.
//
// The interpreter (interpreter/pallas_call.cpp, after
// jax/_src/pallas/mosaic/interpret/interpret_pallas_call.py) stops with
// "Semaphore ... has non-zero count ... at kernel exit" when signals and waits
// do not match, and reports a deadlock when a wait can never be satisfied.
// Counts are per semaphore element: a dma_start adds the bytes it copies to
// its destination semaphore (on the receiving device for a remote DMA) and,
// when remote, to its source semaphore here; dma_wait subtracts the bytes of
// its region; semaphore_signal / semaphore_wait add and subtract their amount.
//
// The kernel's protocol_trace.h gives each semaphore op as an event: a path
// condition, the semaphore element, a signed amount and, for remote signals,
// the target device, with `for` loops unrolled (the formula grows with trip
// counts, never with the grid). Events that depend on a value changing per
// iteration, or sit in loops without a static trip count, make the claim
// unknown. Remote signals inside a pmap are summed over every sending device
// (the axis size), the receiving device symbolic.
//
// Two queries per semaphore Ref, over a symbolic element:
//   1. exit: the net count of one grid step is 0. Per step balance implies
//      balance at kernel exit. When one step leaves L != 0, the total over a
//      core's steps is non-zero too if no step can leave the opposite sign
//      (asked as a second query); otherwise counts are handed from step to
//      step, which this claim does not model: unknown.
//   2. order (only when 1 holds and no other device signals the Ref): each
//      step starts from 0, so a wait whose amount exceeds what its step
//      signalled before it waits forever: a deadlock on this core.
#include <algorithm>

#include "analysis/prove/protocol_trace.h"

namespace tessera::prove {

namespace {

std::string amount_str(int64_t v) { return std::to_string(v < 0 ? -v : v); }

class Balance {
 public:
  explicit Balance(CallContext& c) : c_(c) {}
  Obligation run();

 private:
  // What `ev` adds to element `cell` of its semaphore on `device` (this device when nullopt).
  z3::expr contribution(const TraceEvent& ev, const z3::expr& cell, const std::optional<z3::expr>& device);
  // The ops that change `cell` on the model's path, with their totals and iterations.
  std::string describe(const z3::model& mo, const std::vector<const TraceEvent*>& evs, const z3::expr& cell);

  CallContext& c_;
  std::optional<z3::expr> me_;       // this device's index on the (single) pmap axis
  int64_t devices_ = 1;
};

z3::expr Balance::contribution(const TraceEvent& ev, const z3::expr& cell, const std::optional<z3::expr>& device) {
  z3::expr zero = c_.ctx.int_val(0);
  auto at = [&](const z3::expr& x, const z3::expr& d) {
    if (!me_) return x;
    z3::expr_vector f(c_.ctx), t(c_.ctx);
    f.push_back(*me_);
    t.push_back(d);
    return substituted(x, f, t);
  };
  if (!device) return z3::ite(ev.path && ev.cell == cell, ev.amount, zero);
  if (!ev.device) return at(z3::ite(ev.path && ev.cell == cell, ev.amount, zero), *device);
  // A remote signal: any device may be the sender.
  z3::expr sum = zero;
  for (int64_t s = 0; s < devices_; ++s)
    sum = sum + at(z3::ite(ev.path && *ev.device == *device && ev.cell == cell, ev.amount, zero), c_.ctx.int_val(s));
  return sum;
}

std::string Balance::describe(const z3::model& mo, const std::vector<const TraceEvent*>& evs, const z3::expr& cell) {
  struct Line {
    int64_t total = 0;
    std::vector<std::string> its;
  };
  std::vector<std::pair<const Op*, Line>> lines;
  for (const TraceEvent* ev : evs) {
    if (!c_.eval(mo, ev->path) || c_.eval(mo, ev->cell) != c_.eval(mo, cell)) continue;
    auto it = std::find_if(lines.begin(), lines.end(), [&](const auto& l) { return l.first == ev->op; });
    if (it == lines.end()) it = lines.insert(lines.end(), {ev->op, Line{}});
    it->second.total += c_.eval(mo, ev->amount);
    if (!ev->iteration.empty()) it->second.its.push_back(ev->iteration);
  }
  std::string s;
  for (const auto& [op, l] : lines) {
    s += s.empty() ? "" : ", ";
    s += op->name() + where(*op) + (l.total < 0 ? " -" : " +") + amount_str(l.total);
    if (!l.its.empty()) {
      s += " (";
      for (size_t k = 0; k < l.its.size() && k < 3; ++k) s += (k ? "; " : "") + l.its[k];
      if (l.its.size() > 3) s += "; ... " + std::to_string(l.its.size()) + " iterations";
      s += ")";
    }
  }
  return s.empty() ? "no signal on this path" : s;
}

Obligation Balance::run() {
  Timer timer;
  Obligation ob = obligation(c_.name, "kernel", "semaphore balance");
  std::vector<z3::expr> base = c_.base_facts;
  std::vector<Sym> point = c_.make_point("b", base);
  ProtocolTrace trace(c_, point);
  auto finish = [&](Verdict v, std::string detail) {
    ob.verdict = v;
    ob.detail = std::move(detail);
    ob.millis = timer.millis();
    return ob;
  };
  if (!trace.any_protocol()) {
    ob.method = "trivial";
    return finish(Verdict::proved, "no DMA or semaphore op");
  }
  if (!trace.why().empty()) return finish(Verdict::unknown, trace.why());
  std::vector<const TraceEvent*> flat;
  for (const TraceEvent& ev : trace.events()) {
    if (ev.kind != TraceEvent::sem) continue;
    if (!ev.varies.empty()) return finish(Verdict::unknown, ev.varies);
    flat.push_back(&ev);
  }
  // Remote signals: the devices of the (single) enclosing pmap axis.
  bool remote = std::any_of(flat.begin(), flat.end(), [](const TraceEvent* ev) { return ev->device.has_value(); });
  if (remote) {
    if (trace.device_axes() != 1)
      return finish(Verdict::unknown, "remote signals with " + std::to_string(trace.device_axes()) +
                                          " enclosing device axes (only one pmap axis is modelled)");
    devices_ = trace.devices();
    me_ = trace.device_symbol();
  }
  ob.method = "z3";
  std::vector<z3::expr> facts = base;
  CallContext::add_facts(trace.encoder(), facts, true);  // kernel bounds proves the guards indices rely on
  bool single_step = true;
  for (const z3::expr& s : c_.scope.grid_size) {
    int64_t v = 0;
    single_step &= s.is_numeral_i64(v) && v == 1;
  }
  // The semaphore Refs, in order of first use.
  std::vector<const void*> sems;
  for (const TraceEvent* ev : flat)
    if (std::find(sems.begin(), sems.end(), ev->sem_key) == sems.end()) sems.push_back(ev->sem_key);
  std::string unknown_reason;
  int k = 0;
  for (const void* sem : sems) {
    std::vector<const TraceEvent*> evs;
    bool incoming = false;  // another device may signal it
    for (const TraceEvent* ev : flat)
      if (ev->sem_key == sem) evs.push_back(ev), incoming |= ev->device.has_value();
    const TraceEvent& first = *evs.front();
    z3::expr cell = c_.scope.fresh_int("sem_cell");
    std::vector<z3::expr> q = facts;
    q.push_back(cell >= 0 && cell < c_.ctx.int_val(first.numel));
    std::optional<z3::expr> device;
    if (remote) {
      device = c_.scope.fresh_int("device");
      q.push_back(*device >= 0 && *device < c_.ctx.int_val(devices_));
    }
    z3::expr net = c_.ctx.int_val(0);
    for (const TraceEvent* ev : evs) net = net + contribution(*ev, cell, device);
    std::vector<std::string> opq;
    for (const TraceEvent* ev : evs) opq = merge_opaque(opq, ev->opaque);
    std::string name = first.sem_name;
    auto cell_name = [&](const z3::model& mo) {
      return name + (first.numel > 1 ? "[" + std::to_string(c_.eval(mo, cell)) + "]" : std::string()) +
             (device ? " on device " + std::to_string(c_.eval(mo, *device)) : std::string());
    };
    // 1. Balance at the end of a step.
    std::vector<z3::expr> q1 = q;
    q1.push_back(net != 0);
    QueryResult r = c_.solver.check(q1, "semaphore_balance." + std::to_string(k++));
    ob.queries++;
    if (r.result == z3::unknown) {
      if (unknown_reason.empty()) unknown_reason = "(" + r.reason + ")";
      continue;
    }
    if (r.result == z3::sat) {
      const z3::model& mo = *r.model;
      std::vector<int64_t> gp = c_.eval(mo, point);
      int64_t left = c_.eval(mo, net);
      std::string detail = "at grid point " + tuple_str(gp) + ": " + cell_name(mo) + " is left at " + std::to_string(left) +
                           " when the step ends (" + describe(mo, evs, cell) + ")";
      if (!opq.empty()) {
        if (unknown_reason.empty())
          unknown_reason = "cannot decide whether " + name + " is balanced: it depends on values the prover does not model (" +
                           opq[0] + ")";
        continue;
      }
      if (!single_step) {
        // Another step leaving the opposite sign could make up for it.
        std::vector<z3::expr> q2 = q;
        q2.push_back(cell == c_.ctx.int_val(c_.eval(mo, cell)));
        if (device) q2.push_back(*device == c_.ctx.int_val(c_.eval(mo, *device)));
        q2.push_back(left > 0 ? net < 0 : net > 0);
        QueryResult r2 = c_.solver.check(q2, "semaphore_balance." + std::to_string(k++));
        ob.queries++;
        if (r2.result != z3::unsat) {
          if (unknown_reason.empty())
            unknown_reason = r2.result == z3::unknown ? "(" + r2.reason + ")"
                             : "cannot decide: " + detail.substr(3) + ", and grid point " +
                                   tuple_str(c_.eval(*r2.model, point)) + " leaves " +
                                   std::to_string(c_.eval(*r2.model, net)) +
                                   ": counts handed from one grid step to the next are not modelled";
          continue;
        }
      }
      ob.grid_points = {gp};
      detail += left > 0 ? ": it is non-zero at kernel exit" : ": a wait takes more than is ever signalled, so it waits forever";
      return finish(Verdict::failed, detail);
    }
    // 2. Order within a step: every step starts at 0 (each ends there, as just
    // proved); unless another device signals this Ref, a wait for more than
    // the step has signalled before it blocks for ever.
    if (incoming) continue;
    z3::expr running = c_.ctx.int_val(0);
    z3::expr any = c_.ctx.bool_val(false);
    std::vector<std::tuple<const TraceEvent*, z3::expr, z3::expr>> blocked;  // wait, blocks, count before it
    for (const TraceEvent* ev : evs) {
      if (ev->wait) {
        z3::expr stuck = ev->path && ev->cell == cell && running < -ev->amount;
        blocked.emplace_back(ev, stuck, running);
        any = any || stuck;
      }
      running = running + contribution(*ev, cell, std::nullopt);
    }
    std::vector<z3::expr> q3 = q;
    q3.push_back(any);
    QueryResult r3 = c_.solver.check(q3, "semaphore_order." + std::to_string(k++));
    ob.queries++;
    if (r3.result == z3::unknown) {
      if (unknown_reason.empty()) unknown_reason = "(" + r3.reason + ")";
      continue;
    }
    if (r3.result == z3::unsat) continue;
    const z3::model& mo = *r3.model;
    for (const auto& [ev, stuck, count] : blocked) {
      if (!c_.eval(mo, stuck)) continue;
      if (!opq.empty()) {
        if (unknown_reason.empty())
          unknown_reason = "cannot decide whether " + ev->what + " can wait forever: it depends on values the prover does not model (" +
                           opq[0] + ")";
        break;
      }
      // The signals before it on this path (events up to the wait).
      std::vector<const TraceEvent*> before;
      for (const TraceEvent* e : evs) {
        if (e == ev) break;
        before.push_back(e);
      }
      std::vector<int64_t> gp = c_.eval(mo, point);
      ob.grid_points = {gp};
      return finish(Verdict::failed, "at grid point " + tuple_str(gp) + ": " + ev->what +
                                         (ev->iteration.empty() ? "" : " (" + ev->iteration + ")") + " waits for " +
                                         amount_str(c_.eval(mo, ev->amount)) +
                                         (ev->op->name() == "dma_wait" ? " bytes" : "") + " on " + cell_name(mo) + ", but the step has " +
                                         std::to_string(c_.eval(mo, count)) +
                                         " there before it (" + describe(mo, before, cell) + "): it waits forever");
    }
  }
  if (!unknown_reason.empty()) return finish(Verdict::unknown, unknown_reason);
  return finish(Verdict::proved, std::to_string(flat.size()) + " semaphore events");
}

}  // namespace

Obligation prove_semaphore_balance(CallContext& c) {
  Balance b(c);
  return b.run();
}

}  // namespace tessera::prove
