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
//   2. order (once 1 holds): each step starts from 0, so a wait whose amount
//      exceeds what its step signalled before it waits forever: a deadlock on
//      this core. With remote signals (a pmap), the signals counted are those
//      every device sends at an earlier position of the (common) program:
//      see `deadlock` below for why that is sound, and how a wait it does not
//      cover is confirmed by running the protocol at the counterexample.
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "analysis/prove/protocol_trace.h"

namespace tessera::prove {

namespace {

std::string amount_str(int64_t v) { return std::to_string(v < 0 ? -v : v); }

// The semaphore Refs the events change, in order of first use.
std::vector<const void*> semaphores(const std::vector<const TraceEvent*>& flat) {
  std::vector<const void*> sems;
  for (const TraceEvent* ev : flat)
    if (std::find(sems.begin(), sems.end(), ev->sem_key) == sems.end()) sems.push_back(ev->sem_key);
  return sems;
}

class Balance {
 public:
  explicit Balance(CallContext& c) : c_(c) {}
  Obligation run();

 private:
  // What `ev` adds to element `cell` of its semaphore on `device` (this device when nullopt).
  z3::expr contribution(const TraceEvent& ev, const z3::expr& cell, const std::optional<z3::expr>& device);
  // The ops that change `cell` on the model's path, with their totals and iterations.
  std::string describe(const z3::model& mo, const std::vector<const TraceEvent*>& evs, const z3::expr& cell);
  // "; path: branch 1 of cond at ..." for the branches the model takes (on device `d`), or "".
  // Only the conds that decide whether one of `evs` runs; with `until`, only the branches before that event.
  std::string path_of(const z3::model& mo, const std::optional<z3::expr>& d, const std::vector<const TraceEvent*>& evs,
                      const TraceEvent* until = nullptr);
  // `x` on device `d` (x itself without a pmap).
  z3::expr at(const z3::expr& x, const z3::expr& d);
  // The protocol run concretely, each device going as far as it can: at the
  // model's grid point (`one_point`), at every point of the grid in the
  // interpreter's order (`whole_grid`), every point on its own from zero
  // counts (`each_point`), or each parallel position on its own
  // (`per_position`, below).
  enum class Mode { one_point, whole_grid, each_point, per_position };
  struct Run {
    bool decided = false;  // every path, amount, element and target was a number
    // The values the model chose that the run depends on (scalar prefetch:
    // "flag[0] = 1 on dev 0, ..."), "" when none: a run that finishes is a
    // proof only without them, one that blocks is a counterexample with them.
    std::string chosen;
    std::string stuck;     // who is blocked and where; "" when every device finished
    std::vector<int64_t> stuck_point;
    // Counts left at the end, per (device, semaphore, element): after a run
    // of the whole grid, what the interpreter finds at kernel exit.
    std::map<std::tuple<int64_t, const void*, int64_t>, int64_t> count;
  };
  Run run(const z3::model& mo, const std::vector<const TraceEvent*>& flat, Mode mode);
  // The run of the whole grid, made once per claim: every grid point and
  // device are substituted, so it is the same for every semaphore asked about.
  const Run& whole_grid(const z3::model& mo, const std::vector<const TraceEvent*>& flat) {
    if (!whole_grid_) whole_grid_ = run(mo, flat, Mode::whole_grid);
    return *whole_grid_;
  }
  std::optional<Run> whole_grid_;
  // Whether every grid point's step runs to its end on its own, from zero
  // counts on every device (made once per claim, as whole_grid).
  bool each_point_runs(const z3::model& mo, const std::vector<const TraceEvent*>& flat) {
    if (!each_point_) {
      Run r = run(mo, flat, Mode::each_point);
      each_point_ = r.decided && r.stuck.empty();
    }
    return *each_point_;
  }
  std::optional<bool> each_point_;
  // With parallel axes: each parallel position (the steps
  // with the same parallel coordinates, in the interpreter's order along the
  // arbitrary axes) runs from zero counts, as on a core of its own. Any
  // order of the positions, interleaved on one core or split over several,
  // adds up such runs on each core's semaphores: counts never go negative,
  // so if no position blocks, a wait always finds at least what its own
  // position signalled before it (and, the grid being balanced, every count
  // ends at zero). If one blocks, giving it a core of its own (`run
  // --cores`) shows it. With several devices, each position runs on every
  // device at once, from zero counts: the devices share the order and the
  // core split (a remote signal reaches the same core there), so the same
  // holds per core, lock-step across devices, and by the argument of `run`
  // for every interleaving of them. Null when not decided or not applicable.
  std::optional<Run> per_position(const z3::model& mo, const std::vector<const TraceEvent*>& flat);

  // Every remote signal and copy targets an existing device (core): FAILED
  // detail naming the first that may not, else "" (`unknown` gets why not).
  std::string out_of_range(const std::vector<z3::expr>& facts, const std::vector<const TraceEvent*>& flat, Obligation& ob,
                           std::string& unknown);
  // The values of the model that `x` depends on beyond the grid point and
  // the process, added to `out` ("flag[0] = 1 on dev 1": a per-device
  // operand's value on device 1 of axis dev). With `prefetch_only`, only
  // scalar-prefetch reads.
  void chosen_values(const z3::model& mo, const z3::expr& x, std::set<std::string>& out, bool prefetch_only = false) const;

  // A protocol written for any device count (it reads axis_size of its
  // device axis): the two queries again with the count a symbol N, 2 <= N <=
  // kMaxAxisSize. "" when both hold for every N, else why not.
  std::string for_every_count(const std::vector<z3::expr>& base, const std::vector<Sym>& point, int& queries);

  CallContext& c_;
  const ProtocolTrace* trace_ = nullptr;
  std::vector<Sym> point_;           // the symbolic grid point the trace is at
  bool per_process_ = false;         // the kernel reads its device's (core's) index
  int64_t devices_ = 1;
  std::string word_ = "device";     // what the processes are: the devices of a pmap, or the cores of a core_map
  // "device 3", "core 1", or "device 1 core 0" for a core_map inside pmaps.
  std::string process(int64_t p) const { return trace_->process_name(p); }
};

std::string Balance::path_of(const z3::model& mo, const std::optional<z3::expr>& d, const std::vector<const TraceEvent*>& evs,
                             const TraceEvent* until) {
  std::set<const Op*> deciding;
  for (const TraceEvent* ev : evs) deciding.insert(ev->conds.begin(), ev->conds.end());
  std::string b = branches_taken(trace_->events(), [&](const TraceEvent& ev) {
    int64_t v = 0;
    if ((until && &ev > until) || !deciding.count(ev.op)) return false;
    return mo.eval(z3::ite(d ? at(ev.path, *d) : ev.path, c_.ctx.int_val(1), c_.ctx.int_val(0)), true).is_numeral_i64(v) && v == 1;
  });
  return b.empty() ? "" : "; path: " + b;
}

z3::expr Balance::at(const z3::expr& x, const z3::expr& d) {
  return per_process_ ? trace_->on(x, d) : x;
}

// Why a wait the order query cannot cover is a real deadlock (or not): a
// semaphore is waited on only by the core that owns it, and signals never
// block, so a wait that can go on stays able to until its core takes it. The
// protocol is then confluent (as a Kahn network): every schedule runs the
// same events, and one greedy run that blocks shows a deadlock in all of
// them. The run is concrete: each device of the axis in turn, at the grid
// point of the model, or over the whole grid in the interpreter's order
// (row-major, the last axis fastest: counts handed from one step to the
// next are then counted as they happen). It decides only where every path,
// amount, element and target evaluates to a number, and for grids of at most
// kMaxRunEvents events in all.
constexpr int64_t kMaxRunEvents = int64_t{1} << 18;

Balance::Run Balance::run(const z3::model& mo, const std::vector<const TraceEvent*>& flat, Mode mode) {
  const bool whole_grid = mode != Mode::one_point;
  Run r;
  std::set<std::string> chosen;
  auto num = [&](const z3::expr& x, int64_t& v) {
    if (!x.simplify().is_numeral()) chosen_values(mo, x, chosen);
    return mo.eval(x, false).simplify().is_numeral_i64(v);
  };
  // The grid points to run, as values of the point's symbols (one: the model's).
  std::vector<std::vector<int64_t>> points;
  if (!whole_grid) {
    points.push_back(c_.eval(mo, point_));
  } else {
    std::vector<int64_t> sizes;
    int64_t total = 1;
    for (const z3::expr& g : c_.scope.grid_size) {
      int64_t v = 0;
      if (!g.is_numeral_i64(v) || v < 0) return r;
      sizes.push_back(v);
      total *= v;
      if (total * devices_ * static_cast<int64_t>(flat.size()) > kMaxRunEvents) return r;
    }
    std::vector<int64_t> p(sizes.size(), 0);
    for (int64_t n = 0; n < total; ++n) {
      int64_t rest = n;
      for (int d = static_cast<int>(sizes.size()) - 1; d >= 0; --d) {
        p[static_cast<size_t>(d)] = rest % sizes[static_cast<size_t>(d)];
        rest /= sizes[static_cast<size_t>(d)];
      }
      points.push_back(p);
    }
  }
  struct Step {
    const TraceEvent* ev;
    size_t point;
    bool on = false;
    int64_t target = 0, cell = 0, amount = 0;
  };
  std::vector<std::vector<Step>> prog(static_cast<size_t>(devices_));
  for (size_t pi = 0; pi < points.size(); ++pi) {
    z3::expr_vector from(c_.ctx), to(c_.ctx);
    for (size_t a = 0; a < point_.size(); ++a) {
      from.push_back(point_[a].e);
      to.push_back(c_.ctx.int_val(points[pi][a]));
    }
    auto here = [&](const z3::expr& x, const z3::expr& dev) {
      z3::expr_vector f = from, t = to;
      return substituted(at(x, dev), f, t);
    };
    for (int64_t d = 0; d < devices_; ++d) {
      z3::expr dev = c_.ctx.int_val(d);
      for (const TraceEvent* ev : flat) {
        Step st{ev, pi};
        int64_t on = 0;
        if (!ev->opaque.empty() || !num(z3::ite(here(ev->path, dev), c_.ctx.int_val(1), c_.ctx.int_val(0)), on)) return r;
        st.on = on == 1;
        st.target = d;
        if (st.on && (!num(here(ev->cell, dev), st.cell) || !num(here(ev->amount, dev), st.amount) ||
                      (ev->device && !num(here(*ev->device, dev), st.target))))
          return r;
        if (st.on && (st.target < 0 || st.target >= devices_)) return r;
        if (st.on) prog[static_cast<size_t>(d)].push_back(st);
      }
    }
  }
  r.decided = true;
  for (const std::string& v : chosen) r.chosen += (r.chosen.empty() ? "" : ", ") + v;
  if (mode == Mode::per_position && devices_ == 1) {
    // Counts per parallel position (its parallel coordinates), each from 0.
    std::vector<int> par = parallel_axes(c_);
    std::map<std::vector<int64_t>, std::map<std::tuple<int64_t, const void*, int64_t>, int64_t>> counts;
    for (const Step& st : prog[0]) {
      std::vector<int64_t> position;
      for (int a : par) position.push_back(points[st.point][static_cast<size_t>(a)]);
      int64_t& n = counts[position][{st.target, st.ev->sem_key, st.cell}];
      if (st.ev->wait && n < -st.amount) {
        r.stuck = "grid point " + tuple_str(points[st.point]) + " waits in " + st.ev->what +
                  (st.ev->iteration.empty() ? "" : " (" + st.ev->iteration + ")") + " for " + amount_str(st.amount) +
                  " on " + st.ev->sem_name + (st.ev->numel > 1 ? "[" + std::to_string(st.cell) + "]" : "") +
                  ", which holds " + std::to_string(n);
        r.stuck_point = points[st.point];
        return r;
      }
      n += st.amount;
    }
    // No position blocked: each ends at its net count, which is never
    // negative, and they add up to the whole grid's, 0 (checked before).
    return r;
  }
  // Each device as far as it can go through `steps`, counting in r.count;
  // false (and r.stuck saying who waits where) when some device blocks.
  auto greedy = [&](const std::vector<std::vector<Step>>& steps) {
    std::vector<size_t> pos(static_cast<size_t>(devices_), 0);
    for (bool moved = true; moved;) {
      moved = false;
      for (size_t d = 0; d < pos.size(); ++d)
        for (; pos[d] < steps[d].size(); ++pos[d], moved = true) {
          const Step& st = steps[d][pos[d]];
          int64_t& n = r.count[{st.target, st.ev->sem_key, st.cell}];
          if (st.ev->wait && n < -st.amount) break;
          n += st.amount;
        }
    }
    std::string path;
    for (size_t d = 0; d < pos.size(); ++d) {
      if (pos[d] == steps[d].size()) continue;
      const Step& st = steps[d][pos[d]];
      const TraceEvent& ev = *st.ev;
      std::string who = devices_ > 1 || per_process_ ? process(d) + " " : "";
      std::string where = whole_grid && !c_.scope.grid_size.empty() ? " at grid point " + tuple_str(points[st.point]) : "";
      r.stuck += std::string(r.stuck.empty() ? "" : "; ") + who + "waits in " + ev.what +
                 (ev.iteration.empty() ? "" : " (" + ev.iteration + ")") + where + " for " + amount_str(st.amount) + " on " +
                 ev.sem_name + (ev.numel > 1 ? "[" + std::to_string(st.cell) + "]" : "") + ", which holds " +
                 std::to_string(r.count[{st.target, ev.sem_key, st.cell}]);
      if (r.stuck_point.empty()) {  // the first blocked one: its path
        r.stuck_point = points[st.point];
        if (!whole_grid) {
          std::string taken = path_of(mo, c_.ctx.int_val(static_cast<int64_t>(d)), flat, &ev);
          if (!taken.empty()) path = " (" + who + "took " + taken.substr(8) + ")";
        }
      }
    }
    r.stuck += path;
    return r.stuck.empty();
  };
  if (mode == Mode::one_point || mode == Mode::whole_grid) {
    greedy(prog);
    return r;
  }
  // Each grid point, or each parallel position, on its own on every device,
  // from zero counts: the steps sorted into groups (in order of first use).
  std::vector<int> par = parallel_axes(c_);
  std::map<std::vector<int64_t>, size_t> group_of;
  std::vector<size_t> group(points.size());
  for (size_t pi = 0; pi < points.size(); ++pi) {
    std::vector<int64_t> key = points[pi];
    if (mode == Mode::per_position) {
      key.clear();
      for (int a : par) key.push_back(points[pi][static_cast<size_t>(a)]);
    }
    group[pi] = group_of.emplace(std::move(key), group_of.size()).first->second;
  }
  std::vector<std::vector<std::vector<Step>>> groups(group_of.size(), std::vector<std::vector<Step>>(prog.size()));
  for (size_t d = 0; d < prog.size(); ++d)
    for (const Step& st : prog[d]) groups[group[st.point]][d].push_back(st);
  for (const std::vector<std::vector<Step>>& one : groups) {
    r.count.clear();
    if (!greedy(one)) return r;
  }
  return r;
}

std::optional<Balance::Run> Balance::per_position(const z3::model& mo, const std::vector<const TraceEvent*>& flat) {
  if (parallel_axes(c_).empty()) return std::nullopt;
  Run r = run(mo, flat, Mode::per_position);
  if (!r.decided) return std::nullopt;
  return r;
}

void Balance::chosen_values(const z3::model& mo, const z3::expr& x, std::set<std::string>& out, bool prefetch_only) const {
  std::vector<z3::expr> todo{x};
  std::set<unsigned> seen;
  while (!todo.empty()) {
    z3::expr e = todo.back();
    todo.pop_back();
    if (!e.is_app() || !seen.insert(e.id()).second) continue;
    z3::func_decl f = e.decl();
    if (f.decl_kind() != Z3_OP_UNINTERPRETED) {
      for (unsigned k = 0; k < e.num_args(); ++k) todo.push_back(e.arg(k));
      continue;
    }
    auto p = std::find_if(c_.scope.prefetch.begin(), c_.scope.prefetch.end(),
                          [&](const Prefetch& q) { return z3::eq(q.fn, f); });
    if (p == c_.scope.prefetch.end() ? prefetch_only : p->computed) continue;
    std::string name = p == c_.scope.prefetch.end() ? f.name().str() : p->name;
    size_t skip = p == c_.scope.prefetch.end() ? 0 : p->per_device.size();
    if (e.num_args() > skip) {
      name += "[";
      for (unsigned k = static_cast<unsigned>(skip); k < e.num_args(); ++k)
        name += (k > skip ? ", " : "") + std::to_string(c_.eval(mo, e.arg(k)));
      name += "]";
    }
    std::string on;
    for (size_t k = 0; k < skip; ++k)
      on += (k ? ", " : " on ") + p->per_device[k] + " " + std::to_string(c_.eval(mo, e.arg(static_cast<unsigned>(k))));
    out.insert(name + " = " + std::to_string(c_.eval(mo, e)) + on);
  }
}

std::string Balance::out_of_range(const std::vector<z3::expr>& facts, const std::vector<const TraceEvent*>& flat, Obligation& ob,
                                  std::string& unknown) {
  for (const TraceEvent* ev : flat) {
    if (!ev->device) continue;
    z3::expr sender = c_.scope.fresh_int("sender");
    std::vector<z3::expr> q = facts;
    q.push_back(sender >= 0 && sender < c_.ctx.int_val(devices_));
    z3::expr to = at(*ev->device, sender);
    q.push_back(at(ev->path, sender) && (to < 0 || to >= c_.ctx.int_val(devices_)));
    QueryResult r = c_.solver.check(q, "semaphore_balance.target_range");
    ob.queries++;
    if (r.result == z3::unsat) continue;
    if (r.result == z3::unknown || !ev->opaque.empty()) {
      if (unknown.empty())
        unknown = r.result == z3::unknown ? "(" + r.reason + ")"
                                          : "cannot decide whether " + ev->what + " targets an existing " + word_ +
                                                ": it depends on values the prover does not model (" + ev->opaque[0] + ")";
      continue;
    }
    const z3::model& mo = *r.model;
    std::vector<int64_t> gp = c_.eval(mo, point_);
    int64_t target = c_.eval(mo, to);
    // In a core_map inside pmaps a core index outside the mesh maps to no process (-1).
    bool inner_core = c_.op.name() == "core_map" && !trace_->cores_are_processes();
    std::string whom = target < 0 && inner_core ? "a core outside the mesh" : process(target);
    std::set<std::string> values;
    z3::expr from = c_.ctx.int_val(c_.eval(mo, sender));
    chosen_values(mo, at(ev->path, from), values, true);
    chosen_values(mo, at(*ev->device, from), values, true);
    std::string with;
    for (const std::string& v : values) with += (with.empty() ? " (with " : ", ") + v;
    ob.grid_points = {gp};
    return (c_.scope.grid_size.empty() ? std::string() : "at grid point " + tuple_str(gp) + ", ") + ev->what +
           (ev->iteration.empty() ? "" : " (" + ev->iteration + ")") + " on " + process(c_.eval(mo, sender)) + " targets " +
           whom + ", which does not exist (there are " + std::to_string(devices_) + " " + word_ + "s)" +
           (with.empty() ? "" : with + ")") + ": the run stops there";
  }
  return "";
}

z3::expr Balance::contribution(const TraceEvent& ev, const z3::expr& cell, const std::optional<z3::expr>& device) {
  z3::expr zero = c_.ctx.int_val(0);
  if (!device) return z3::ite(ev.path && ev.cell == cell, ev.amount, zero);
  if (!ev.device) return at(z3::ite(ev.path && ev.cell == cell, ev.amount, zero), *device);
  // A remote signal: any device may be the sender.
  z3::expr sum = zero;
  for (int64_t s = 0; s < devices_; ++s)
    sum = sum + at(z3::ite(ev.path && *ev.device == *device && ev.cell == cell, ev.amount, zero), c_.ctx.int_val(s));
  return sum;
}

// Signals to other devices are counted through their inverse: when the
// target t(s) of a signal is a permutation of [0, N) (checked first: no two
// senders share a target, none falls outside), each device d receives it
// from exactly one sender s, with t(s) = d. A fresh symbol with those facts
// stands for s, so a query over a symbolic d has the same models as the sum
// over every sender that a known device count allows.
std::string Balance::for_every_count(const std::vector<z3::expr>& base, const std::vector<Sym>& point, int& queries) {
  const std::string axis = c_.scope.process_axes[0];
  z3::expr n = c_.scope.fresh_int("axis_size_" + axis);
  c_.scope.axis_size_symbol.emplace(axis, n);
  struct Restore {
    Scope& s;
    const std::string& a;
    ~Restore() { s.axis_size_symbol.erase(a); }
  } restore{c_.scope, axis};
  ProtocolTrace trace(c_, point);
  if (!trace.why().empty()) return trace.why();
  std::vector<const TraceEvent*> flat;
  for (const TraceEvent& ev : trace.events())
    if (ev.kind == TraceEvent::sem) {
      if (!ev.varies.empty()) return ev.varies;
      if (!ev.opaque.empty()) return "it depends on values the prover does not model (" + ev.opaque[0] + ")";
      flat.push_back(&ev);
    }
  std::vector<z3::expr> facts = base;
  CallContext::add_facts(trace.encoder(), facts, true);
  facts.push_back(n >= 2 && n <= c_.ctx.int_val(kMaxAxisSize));
  auto count_of = [&](const z3::model& mo) { return std::to_string(c_.eval(mo, n)) + " " + word_ + "s"; };
  // A counterexample with as few devices as there is one (up to 8): it reads better.
  auto ask = [&](std::vector<z3::expr> q, z3::expr claim, const std::string& label) {
    q.push_back(claim);
    ++queries;
    QueryResult r = c_.solver.check(q, "semaphore_balance.every_count." + label);
    if (r.result != z3::sat) return r;
    for (int most = 2; most <= 8; ++most) {
      std::vector<z3::expr> few = q;
      few.push_back(n <= most);
      ++queries;
      QueryResult small = c_.solver.check(few, "semaphore_balance.every_count." + label + ".at_most_" + std::to_string(most));
      if (small.result == z3::sat) return small;
    }
    return r;
  };
  // Each target a permutation of the devices.
  for (const TraceEvent* ev : flat) {
    if (!ev->device) continue;
    z3::expr s1 = c_.scope.fresh_int("sender"), s2 = c_.scope.fresh_int("sender");
    std::vector<z3::expr> q = facts;
    q.push_back(s1 >= 0 && s1 < n && s2 >= 0 && s2 < n);
    z3::expr t1 = at(*ev->device, s1), t2 = at(*ev->device, s2);
    QueryResult r = ask(q, t1 < 0 || t1 >= n || (s1 < s2 && t1 == t2), "permutation");
    if (r.result == z3::unknown) return "(" + r.reason + ")";
    if (r.result == z3::sat) {
      const z3::model& mo = *r.model;
      int64_t to = c_.eval(mo, t1);
      std::string what = to < 0 || to >= c_.eval(mo, n)
                             ? process(c_.eval(mo, s1)) + " would signal " + process(to)
                             : word_ + "s " + std::to_string(c_.eval(mo, s1)) + " and " + std::to_string(c_.eval(mo, s2)) +
                                   " would both signal " + process(to);
      return "the target of " + ev->what + " is not a permutation of the " + word_ + "s: with " + count_of(mo) + ", " + what;
    }
  }
  int k = 0;
  for (const void* sem : semaphores(flat)) {
    z3::expr cell = c_.scope.fresh_int("sem_cell"), device = c_.scope.fresh_int("device");
    std::vector<z3::expr> q = facts;
    q.push_back(device >= 0 && device < n);
    std::vector<const TraceEvent*> evs;
    for (const TraceEvent* ev : flat)
      if (ev->sem_key == sem) evs.push_back(ev);
    q.push_back(cell >= 0 && cell < c_.ctx.int_val(evs.front()->numel));
    const std::string& name = evs.front()->sem_name;
    // What `ev` adds to `cell` on `device`: sent by the device itself, or by the one sender whose target it is.
    auto contribution = [&](const TraceEvent& ev) {
      z3::expr on = z3::ite(ev.path && ev.cell == cell, ev.amount, c_.ctx.int_val(0));
      if (!ev.device) return at(on, device);
      z3::expr s = c_.scope.fresh_int("sender");
      q.push_back(s >= 0 && s < n && at(*ev.device, s) == device);
      return at(on, s);
    };
    z3::expr net = c_.ctx.int_val(0), running = c_.ctx.int_val(0), blocked = c_.ctx.bool_val(false);
    for (const TraceEvent* ev : evs) {
      if (ev->wait) blocked = blocked || at(ev->path && ev->cell == cell && running < -ev->amount, device);
      z3::expr add = contribution(*ev);
      net = net + add;
      running = running + add;
    }
    QueryResult r = ask(q, net != 0, "exit." + std::to_string(k));
    if (r.result == z3::unknown) return "(" + r.reason + ")";
    if (r.result == z3::sat)
      return "with " + count_of(*r.model) + ", " + name + " on " + process(c_.eval(*r.model, device)) +
             " is left at " + std::to_string(c_.eval(*r.model, net)) + " when a step ends";
    r = ask(q, blocked, "order." + std::to_string(k++));
    if (r.result == z3::unknown) return "(" + r.reason + ")";
    if (r.result == z3::sat)
      return "with " + count_of(*r.model) + ", a wait on " + name + " on " + process(c_.eval(*r.model, device)) + " may need a signal that another " + word_ +
             " sends later in the program, which this proof does not follow";
  }
  return "";
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
  point_ = point;
  ProtocolTrace trace(c_, point);
  trace_ = &trace;
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
  // Remote signals: the devices of the enclosing pmaps (or the cores of a core_map).
  bool remote = std::any_of(flat.begin(), flat.end(), [](const TraceEvent* ev) { return ev->device.has_value(); });
  if (remote) {
    devices_ = trace.devices();
    per_process_ = trace.per_process();
    word_ = trace.process_word();
    // Devices that compute their own grid size may run different numbers of
    // steps; every argument below has them run the same grid.
    if (!c_.scope.grid_size_per_device.empty()) {
      const auto& [a, along] = *c_.scope.grid_size_per_device.begin();
      return finish(Verdict::unknown, "the size of grid axis " + std::to_string(a) + " is computed on each device (it may differ along " +
                                          along[0] + "), so the devices may run different numbers of grid steps, which this "
                                          "claim does not model");
    }
  }
  ob.method = "z3";
  std::vector<z3::expr> facts = base;
  CallContext::add_facts(trace.encoder(), facts, true);  // kernel bounds proves the guards indices rely on
  std::string unknown_reason;
  if (remote) {
    std::string bad = out_of_range(facts, flat, ob, unknown_reason);
    if (!bad.empty()) return finish(Verdict::failed, bad);
  }
  // Written for any device count: try every count first. The proof covers
  // 2 to kMaxAxisSize devices; any other count given is checked as given.
  std::string every_count;
  const std::string axis = remote && trace.device_axes() == 1 ? c_.scope.process_axes[0] : "";
  if (!axis.empty() && per_process_ && c_.scope.axis_size_read.count(axis)) {
    every_count = for_every_count(base, point, ob.queries);
    bool covered = devices_ >= 2 && devices_ <= kMaxAxisSize;
    if (every_count.empty() && covered)
      return finish(Verdict::proved, std::to_string(flat.size()) + " semaphore events, for every " + word_ + " count from 2 to " +
                                         std::to_string(kMaxAxisSize) + " (the kernel reads axis_size of " + axis + ")");
    if (every_count.empty())
      every_count = "; for the " + std::to_string(devices_) + " " + word_ + (devices_ == 1 ? "" : "s") +
                    " given, which the proof for every count from 2 to " + std::to_string(kMaxAxisSize) + " does not cover";
    else
      every_count = "; for the " + std::to_string(devices_) + " " + word_ + "s given, not for every count (the kernel reads axis_size of " +
                    axis + "): " + every_count;
  }
  bool single_step = true;
  for (const z3::expr& s : c_.scope.grid_size) {
    int64_t v = 0;
    single_step &= s.is_numeral_i64(v) && v == 1;
  }
  std::vector<const void*> sems = semaphores(flat);
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
             (device ? " on " + process(c_.eval(mo, *device)) : std::string());
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
      std::set<std::string> values;
      chosen_values(mo, net, values, true);
      std::string with;
      for (const std::string& v : values) with += (with.empty() ? ", with " : ", ") + v;
      std::string detail = "at grid point " + tuple_str(gp) + ": " + cell_name(mo) + " is left at " + std::to_string(left) +
                           " when the step ends (" + describe(mo, evs, cell) + path_of(mo, device, evs) + with + ")";
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
          // Counts handed from one step to the next: run the whole grid.
          const Run& whole = r2.result == z3::sat ? whole_grid(mo, flat) : Run{};
          if (!whole.decided) {
            if (unknown_reason.empty())
              unknown_reason = r2.result == z3::unknown ? "(" + r2.reason + ")"
                               : "cannot decide: " + detail.substr(3) + ", and grid point " +
                                     tuple_str(c_.eval(*r2.model, point)) + " leaves " +
                                     std::to_string(c_.eval(*r2.model, net)) +
                                     ": counts are handed from one grid step to the next, and the grid is too large "
                                     "(or its protocol depends on values the prover does not model) to be run step by step";
            continue;
          }
          if (!whole.stuck.empty()) {
            ob.grid_points = {whole.stuck_point};
            std::string who = remote ? "every " + word_ + " that has not finished is blocked: " : "the kernel blocks: it ";
            return finish(Verdict::failed, "running the grid in order, " + who + whole.stuck + ": it waits forever");
          }
          for (const auto& [key, left_at_exit] : whole.count) {
            const auto& [dev, sem_key, elem] = key;
            if (sem_key != sem || left_at_exit == 0) continue;
            return finish(Verdict::failed, "running the grid in order, " + name + (first.numel > 1 ? "[" + std::to_string(elem) + "]" : "") +
                                               (remote ? " on " + process(dev) : "") + " is left at " +
                                               std::to_string(left_at_exit) + " at kernel exit");
          }
          // A run on values the model chose proves nothing for the others.
          if (!whole.chosen.empty()) {
            if (unknown_reason.empty())
              unknown_reason = "counts are handed from one grid step to the next, and the grid runs to its end in order only for "
                               "the values of one model (" + whole.chosen + "): the protocol depends on them";
            continue;
          }
          // Balanced at exit, whatever the order (the sum of every step's
          // counts); no deadlock in the interpreter's order, the only one
          // when no axis is parallel. With parallel axes: per position.
          if (parallel_axes(c_).empty()) continue;
          if (std::optional<Run> each = per_position(mo, flat)) {
            if (each->stuck.empty()) continue;
            ob.grid_points = {each->stuck_point};
            return finish(Verdict::failed,
                          "counts are handed between parallel positions: running each position on a core of its own "
                          "(as another order of the parallel axes, or more cores, may), " +
                              each->stuck + ": it waits forever");
          }
          if (unknown_reason.empty())
            unknown_reason = name + " is balanced at kernel exit and the grid runs to its end in order, but counts are "
                             "handed from one grid step to the next, so another order of the parallel axes might block";
          continue;
        }
      }
      ob.grid_points = {gp};
      detail += left > 0 ? ": it is non-zero at kernel exit" : ": a wait takes more than is ever signalled, so it waits forever";
      return finish(Verdict::failed, detail);
    }
    // 2. Order within a step: every step starts at 0 (each ends there, as just
    // proved), so a wait for more than the step has signalled before it blocks
    // for ever. With signals from other devices, `running` counts what every
    // device signals at an earlier position of the program. That suffices:
    // were some devices blocked for ever, take the blocked wait at the
    // earliest position; every device has run all events before it, so its
    // semaphore holds at least `running`, and it could go on. A wait it does
    // not cover may still be satisfied by a later signal of another device:
    // the concrete run (`deadlock`) decides.
    z3::expr running = c_.ctx.int_val(0);
    z3::expr any = c_.ctx.bool_val(false);
    std::vector<std::tuple<const TraceEvent*, z3::expr, z3::expr>> blocked;  // wait, blocks, count before it
    for (const TraceEvent* ev : evs) {
      if (ev->wait) {
        z3::expr stuck = incoming ? at(ev->path && ev->cell == cell && running < -ev->amount, *device)
                                  : ev->path && ev->cell == cell && running < -ev->amount;
        blocked.emplace_back(ev, stuck, running);
        any = any || stuck;
      }
      running = running + contribution(*ev, cell, incoming ? device : std::nullopt);
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
    if (incoming) {
      std::vector<int64_t> gp = c_.eval(mo, point);
      Run here = run(mo, flat, Mode::one_point);
      if (!here.decided) {
        if (unknown_reason.empty())
          unknown_reason = "cannot decide whether " + name + " on " + process(c_.eval(mo, *device)) +
                           " can wait forever: a wait there may need a signal another " + word_ + " sends later in the program, "
                           "and the protocol at grid point " + tuple_str(gp) + " depends on values the prover does not model" +
                           (opq.empty() ? std::string() : " (" + opq[0] + ")");
        continue;
      }
      // A run on values the model chose (scalar prefetch) proves nothing for the others.
      std::string model_only = "cannot decide whether " + name + " on " + process(c_.eval(mo, *device)) +
                               " can wait forever: a wait there may need a signal another " + word_ +
                               " sends later in the program, and the run that follows the protocol decides it only for the "
                               "values of one model (" + here.chosen + ")";
      if (here.stuck.empty() && single_step) {  // the one grid step runs to its end on every device
        if (!here.chosen.empty() && unknown_reason.empty()) unknown_reason = model_only;
        continue;
      }
      std::string with = here.chosen.empty() ? "" : " (with " + here.chosen + ")";
      if (single_step) {
        ob.grid_points = {gp};
        return finish(Verdict::failed, (c_.scope.grid_size.empty() ? std::string() : "at grid point " + tuple_str(gp) + ", ") +
                                           "every " + word_ + " that has not finished is blocked: " + here.stuck +
                                           ": a deadlock across " + word_ + "s" + with);
      }
      // Several steps: a later step of another device may send what a wait
      // needs. Run the whole grid.
      const Run& whole = whole_grid(mo, flat);
      if (whole.decided && !whole.stuck.empty()) {
        ob.grid_points = {whole.stuck_point};
        return finish(Verdict::failed, "running the grid in order, every " + word_ + " that has not finished is blocked: " +
                                           whole.stuck + ": a deadlock across " + word_ + "s" +
                                           (whole.chosen.empty() ? "" : " (with " + whole.chosen + ")"));
      }
      if (whole.decided && !whole.chosen.empty()) {
        if (unknown_reason.empty()) unknown_reason = model_only;
        continue;
      }
      if (whole.decided && parallel_axes(c_).empty()) continue;  // the one order runs to its end
      // With parallel axes: every step is balanced (query 1 above, for each
      // semaphore), so when the devices go through the grid in lock-step,
      // whatever order of the steps they share, each step starts from zero
      // counts. If every step then runs to its end on its own, each such
      // order does; and since signals never block and a wait that can go on
      // stays able to, every interleaving of the devices runs as the
      // lock-step one does. (The devices share the order and core split, as
      // they run the same kernel: the assumption the whole-grid run makes.)
      if (whole.decided && each_point_runs(mo, flat)) continue;
      if (unknown_reason.empty())
        unknown_reason = "cannot decide whether " + name + " on " + process(c_.eval(mo, *device)) +
                         " can wait forever at grid point " + tuple_str(gp) + ": a wait may need a signal another " + word_ +
                         " sends in a later grid step" +
                         (whole.decided ? "; the grid runs to its end in order, but another order of its parallel axes might block"
                                        : ", and the grid is too large (or its protocol depends on values the prover does not model) "
                                          "to be run step by step");
      continue;
    }
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
                                         " there before it (" + describe(mo, before, cell) + path_of(mo, std::nullopt, evs, ev) +
                                         "): it waits forever");
    }
  }
  if (!unknown_reason.empty()) return finish(Verdict::unknown, unknown_reason + every_count);
  return finish(Verdict::proved, std::to_string(flat.size()) + " semaphore events" + every_count);
}

}  // namespace

Obligation prove_semaphore_balance(CallContext& c) {
  Balance b(c);
  return b.run();
}

}  // namespace tessera::prove
