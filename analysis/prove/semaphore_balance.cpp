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
// The kernel is walked once at a symbolic grid point (kernel_walker.h), each
// semaphore op becoming an event: a path condition, the semaphore element, a
// signed amount and, for remote signals, the target device. `for` loops with
// static trip counts are unrolled by substituting their induction variable
// (the formula grows with the trip count, never with the grid); events that
// depend on a value changing per iteration, or sit in loops without a static
// trip count, make the claim unknown. Remote signals inside a pmap are summed
// over every sending device (the axis size), the receiving device symbolic.
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
#include <map>
#include <set>

#include "analysis/prove/kernel_walker.h"
#include "ir/indirect_dma.h"

namespace tessera::prove {

namespace {

// One change of one semaphore element by one op (one loop iteration, once unrolled).
struct SemEvent {
  const void* sem = nullptr;         // the semaphore Ref: its root Var, or the barrier semaphore
  std::string sem_name;              // "%in_sem"
  int64_t numel = 1;
  z3::expr path, cell, amount;       // amount is signed: waits subtract
  bool wait = false;
  std::optional<z3::expr> device;    // remote: the device whose semaphore changes
  const Op* op = nullptr;
  std::string what;                  // "dma_wait at f.tsr:3:4"
  std::vector<std::string> opaque;
  std::vector<LoopInfo> loops;       // outermost first (before unrolling)
  std::string iteration;             // "c=3" once unrolled
};

// Stands for every get_barrier_semaphore result: one semaphore per collective.
const char kBarrier = 0;

// Number of elements an indexer selects (an indirect entry selects num_rows rows).
z3::expr region_elements(CallContext& c, const Access& a, const Shape& shape, int64_t indirect_rows) {
  z3::expr n = c.ctx.int_val(1);
  for (size_t d = 0; d < shape.size(); ++d) {
    const IndexEntry e = d < a.ix.entries.size() ? a.ix.entries[d] : IndexEntry::full();
    switch (e.kind) {
      case IndexEntry::Full: n = n * c.ctx.int_val(shape[d]); break;
      case IndexEntry::Point: break;
      case IndexEntry::Indirect: n = n * c.ctx.int_val(indirect_rows); break;
      case IndexEntry::Slice:
        n = n * (e.has_dynamic_size() ? a.dyn_sizes.at(d)->e : c.ctx.int_val(e.size));
        break;
    }
  }
  return n.simplify();
}

// Free constants of `e` (arity-0 uninterpreted symbols), by name.
void free_consts(const z3::expr& e, std::set<std::string>& out, std::set<unsigned>& seen) {
  if (!seen.insert(e.id()).second) return;
  if (e.is_const() && !e.is_numeral() && e.decl().decl_kind() == Z3_OP_UNINTERPRETED) {
    out.insert(e.decl().name().str());
    return;
  }
  if (e.is_app())
    for (unsigned k = 0; k < e.num_args(); ++k) free_consts(e.arg(k), out, seen);
}

// `e` with `from` replaced by `to`, simplified (z3::expr::substitute is not const).
z3::expr subst(z3::expr e, z3::expr_vector& from, z3::expr_vector& to) { return e.substitute(from, to).simplify(); }

std::string amount_str(int64_t v) { return std::to_string(v < 0 ? -v : v); }

class Balance {
 public:
  explicit Balance(CallContext& c) : c_(c) {}

  Obligation run();

 private:
  void on_op(const Op& op, const std::vector<Access>& acc);
  void add_event(const Op& op, int sem_operand, const Access* sem_access, z3::expr amount, bool wait, std::optional<Sym> device,
                 const std::vector<std::string>& amount_opaque);
  // Unrolls the loops of events [b, e) from depth `depth`; false (and why_) when it cannot.
  bool unroll(size_t b, size_t e, size_t depth, z3::expr_vector& from, z3::expr_vector& to, const std::string& it);
  z3::expr contribution(const SemEvent& ev, const z3::expr& cell, const std::optional<z3::expr>& device);
  std::string describe(const z3::model& mo, const std::vector<const SemEvent*>& evs, const z3::expr& cell);

  CallContext& c_;
  std::unique_ptr<IntEncoder> enc_;
  KernelWalker* walker_ = nullptr;
  std::vector<SemEvent> events_, flat_;
  std::string why_;                  // why the claim is unknown before asking Z3
  std::set<const Var*> barrier_refs_;  // get_barrier_semaphore results
  std::optional<z3::expr> me_;       // this device's index on the (single) pmap axis
  int64_t devices_ = 1;
};

void Balance::add_event(const Op& op, int k, const Access* a, z3::expr amount, bool wait, std::optional<Sym> device,
                        const std::vector<std::string>& amount_opaque) {
  SemEvent ev{nullptr, "", 1, enc_->path(), c_.ctx.int_val(0), wait ? -amount : amount, wait, std::nullopt, &op,
              op.name() + where(op), walker_->path_opaque(), walker_->loops(), ""};
  ev.opaque = merge_opaque(ev.opaque, amount_opaque);
  enc_->need(enc_->path_deps());
  const Value& ref = op.main_operand(k);
  const Var* root = a ? a->root : ref.is_var() ? walker_->root(ref.var()) : nullptr;
  bool barrier = barrier_refs_.count(root) > 0;
  ev.sem = barrier ? static_cast<const void*>(&kBarrier) : static_cast<const void*>(root);
  ev.sem_name = barrier ? "the barrier semaphore" : ref.is_var() ? "%" + ref.var()->name : "a semaphore";
  if (a) {
    const Shape& shape = ref.type().shape();
    // Row-major flat index of the element; a slice of several semaphores is not one semaphore.
    z3::expr cell = c_.ctx.int_val(0);
    int64_t numel = 1;
    for (size_t d = 0; d < shape.size(); ++d) {
      const IndexEntry e = d < a->ix.entries.size() ? a->ix.entries[d] : IndexEntry::full();
      bool one = e.kind == IndexEntry::Point || (e.kind == IndexEntry::Slice && e.size == 1 && !e.has_dynamic_size()) ||
                 (e.kind == IndexEntry::Full && shape[d] == 1);
      if (!one && why_.empty()) why_ = op.name() + where(op) + " names more than one semaphore of " + ev.sem_name;
      const Sym& s = a->starts.at(d);
      enc_->need(s.deps);
      ev.opaque = merge_opaque(ev.opaque, s.opaque);
      cell = cell * c_.ctx.int_val(shape[d]) + s.e;
      numel *= shape[d];
    }
    ev.cell = cell.simplify();
    ev.numel = numel;
  }
  if (device) {
    enc_->need(device->deps);
    ev.opaque = merge_opaque(ev.opaque, device->opaque);
    ev.device = device->e;
  }
  events_.push_back(std::move(ev));
}

void Balance::on_op(const Op& op, const std::vector<Access>& acc) {
  const std::string& n = op.name();
  if (n == "get_barrier_semaphore")
    for (const Var* r : op.results) barrier_refs_.insert(r);
  if (n != "dma_start" && n != "dma_wait" && n != "semaphore_signal" && n != "semaphore_wait") return;
  auto access_of = [&](int k) -> const Access* {
    int operand = op.main_operand_index(k);
    for (const Access& a : acc)
      if (a.ix.base == operand) return &a;
    return nullptr;
  };
  auto ref_of = [&](int k) { return op.main_operand(k).type(); };
  if (n == "dma_start") {
    // The bytes copied: read off the dense side (a gather / scatter moves num_rows rows).
    std::optional<IndirectDma> ind = indirect_dma(op);
    int dense = ind && ind->indexed == 0 ? 1 : 0;
    const Access* side = access_of(dense);
    Type t = ref_of(dense);
    z3::expr elements = side ? region_elements(c_, *side, t.shape(), ind ? ind->num_rows : 0) : c_.ctx.int_val(1);
    std::vector<std::string> opq;
    if (side)
      for (const auto& s : side->dyn_sizes)
        if (s) opq = merge_opaque(opq, s->opaque), enc_->need(s->deps);
    z3::expr bytes = elements * c_.ctx.int_val(dtype_bytes(t.dtype()));
    bool remote = op.num_main_operands() >= 5;
    std::optional<Sym> device;
    if (remote) device = enc_->value(op.main_operand(4));
    add_event(op, 2, access_of(2), bytes, false, device, opq);            // destination semaphore, where the data lands
    if (remote) add_event(op, 3, access_of(3), bytes, false, std::nullopt, opq);  // source semaphore, here
    return;
  }
  if (n == "dma_wait") {
    const Access* side = access_of(1);
    Type t = ref_of(1);
    z3::expr elements = side ? region_elements(c_, *side, t.shape(), 0) : c_.ctx.int_val(1);
    std::vector<std::string> opq;
    if (side)
      for (const auto& s : side->dyn_sizes)
        if (s) opq = merge_opaque(opq, s->opaque), enc_->need(s->deps);
    add_event(op, 0, access_of(0), elements * c_.ctx.int_val(dtype_bytes(t.dtype())), true, std::nullopt, opq);
    return;
  }
  // semaphore_signal %sem, %inc [, %device [, %core]] / semaphore_wait %sem, %dec
  Sym amount = enc_->value(op.main_operand(1));
  enc_->need(amount.deps);
  if (n == "semaphore_signal" && op.num_main_operands() >= 4 && why_.empty())
    why_ = "semaphore_signal" + where(op) + " signals another core's semaphore (across cores is not modelled)";
  std::optional<Sym> device;
  if (n == "semaphore_signal" && op.num_main_operands() >= 3) device = enc_->value(op.main_operand(2));
  add_event(op, 0, access_of(0), amount.e, n == "semaphore_wait", device, amount.opaque);
}

bool Balance::unroll(size_t b, size_t e, size_t depth, z3::expr_vector& from, z3::expr_vector& to, const std::string& it) {
  constexpr size_t kMaxEvents = 20000;  // bounds the formula, not the grid
  for (size_t i = b; i < e;) {
    const SemEvent& ev = events_[i];
    if (ev.loops.size() == depth) {
      SemEvent f = ev;
      f.path = subst(ev.path, from, to);
      f.cell = subst(ev.cell, from, to);
      f.amount = subst(ev.amount, from, to);
      if (ev.device) f.device = subst(*ev.device, from, to);
      f.iteration = it;
      if (!f.path.is_false()) flat_.push_back(std::move(f));
      if (flat_.size() > kMaxEvents) {
        why_ = "more than " + std::to_string(kMaxEvents) + " semaphore events once the loops are unrolled";
        return false;
      }
      ++i;
      continue;
    }
    const LoopInfo& loop = ev.loops[depth];
    size_t j = i;
    while (j < e && events_[j].loops.size() > depth && events_[j].loops[depth].id == loop.id) ++j;
    if (!loop.index) {
      why_ = ev.what + " sits in " + loop.what + ", whose trip count is not static";
      return false;
    }
    z3::expr lo = subst(loop.lo->e, from, to), hi = subst(loop.hi->e, from, to);
    int64_t l = 0, h = 0;
    if (!lo.is_numeral_i64(l) || !hi.is_numeral_i64(h)) {
      why_ = ev.what + " sits in " + loop.what + ", whose trip count is not static";
      return false;
    }
    for (int64_t k = l; k < h; ++k) {
      from.push_back(*loop.index);
      to.push_back(c_.ctx.int_val(k));
      std::string sub = (it.empty() ? "" : it + ", ") + loop.index_name + "=" + std::to_string(k);
      bool ok = unroll(i, j, depth + 1, from, to, sub);
      from.pop_back();
      to.pop_back();
      if (!ok) return false;
    }
    i = j;
  }
  return true;
}

// What `ev` adds to element `cell` of its semaphore on `device` (this device when nullopt).
z3::expr Balance::contribution(const SemEvent& ev, const z3::expr& cell, const std::optional<z3::expr>& device) {
  z3::expr zero = c_.ctx.int_val(0);
  auto at = [&](const z3::expr& x, const z3::expr& d) {
    if (!me_) return x;
    z3::expr_vector f(c_.ctx), t(c_.ctx);
    f.push_back(*me_);
    t.push_back(d);
    return subst(x, f, t);
  };
  if (!device) return z3::ite(ev.path && ev.cell == cell, ev.amount, zero);
  if (!ev.device) return at(z3::ite(ev.path && ev.cell == cell, ev.amount, zero), *device);
  // A remote signal: any device may be the sender.
  z3::expr sum = zero;
  for (int64_t s = 0; s < devices_; ++s) {
    z3::expr d = c_.ctx.int_val(s);
    sum = sum + at(z3::ite(ev.path && *ev.device == *device && ev.cell == cell, ev.amount, zero), d);
  }
  return sum;
}

std::string Balance::describe(const z3::model& mo, const std::vector<const SemEvent*>& evs, const z3::expr& cell) {
  // Per op: the total it adds and the iterations it ran in.
  struct Line {
    int64_t total = 0;
    std::vector<std::string> its;
  };
  std::vector<std::pair<const Op*, Line>> lines;
  for (const SemEvent* ev : evs) {
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
  enc_ = std::make_unique<IntEncoder>(c_.scope, c_.ctx.bool_val(true));
  enc_->set_grid_point(point);
  const Body& kernel = *c_.kernel;
  for (int j = 0; j < c_.g.num_scalar_prefetch() && j < static_cast<int>(kernel.params().size()); ++j)
    enc_->bind_prefetch(kernel.params()[j], j);
  KernelWalker w(c_, *enc_);
  walker_ = &w;
  w.on_op = [&](const Op& op, const std::vector<Access>& acc) { on_op(op, acc); };
  w.walk(kernel);
  auto finish = [&](Verdict v, std::string detail) {
    ob.verdict = v;
    ob.detail = std::move(detail);
    ob.millis = timer.millis();
    return ob;
  };
  if (events_.empty()) {
    ob.method = "trivial";
    return finish(Verdict::proved, "no DMA or semaphore op");
  }
  if (!why_.empty()) return finish(Verdict::unknown, why_);
  z3::expr_vector from(c_.ctx), to(c_.ctx);
  if (!unroll(0, events_.size(), 0, from, to, "")) return finish(Verdict::unknown, why_);
  // A value that changes per iteration (a loop carry, a fresh symbol made in
  // the loop body) is one symbol in every unrolled copy: such an event is unknown.
  std::set<std::string> allowed;
  for (const Sym& p : point) allowed.insert(p.e.decl().name().str());
  for (const z3::expr& s : c_.scope.grid_size)
    if (s.is_const() && !s.is_numeral()) allowed.insert(s.decl().name().str());
  for (const auto& [name, sym] : c_.scope.axis_symbol) allowed.insert(sym.decl().name().str());
  for (const SemEvent& ev : flat_) {
    if (ev.loops.empty()) continue;
    std::set<std::string> names;
    std::set<unsigned> seen;
    for (const z3::expr* x : {&ev.path, &ev.cell, &ev.amount}) free_consts(*x, names, seen);
    if (ev.device) free_consts(*ev.device, names, seen);
    for (const std::string& nm : names)
      if (!allowed.count(nm))
        return finish(Verdict::unknown, ev.what + " in " + ev.loops.back().what +
                                            " depends on a value that may change from one iteration to the next (" +
                                            (ev.opaque.empty() ? nm : ev.opaque[0]) + ")");
  }
  // Remote signals: the devices of the (single) enclosing pmap axis.
  bool remote = false;
  for (const SemEvent& ev : flat_) remote |= ev.device.has_value();
  if (remote) {
    std::vector<std::string> pmap_axes;
    for (const auto& [name, size] : c_.scope.axis_sizes) pmap_axes.push_back(name);
    if (pmap_axes.size() != 1)
      return finish(Verdict::unknown, "remote signals with " + std::to_string(pmap_axes.size()) +
                                          " enclosing device axes (only one pmap axis is modelled)");
    devices_ = c_.scope.axis_sizes.begin()->second;
    if (auto it = c_.scope.axis_symbol.find(pmap_axes[0]); it != c_.scope.axis_symbol.end()) me_ = it->second;
  }
  ob.method = "z3";
  std::vector<z3::expr> facts = base;
  CallContext::add_facts(*enc_, facts, true);  // kernel bounds proves the guards indices rely on
  bool single_step = true;
  for (const z3::expr& s : c_.scope.grid_size) {
    int64_t v = 0;
    single_step &= s.is_numeral_i64(v) && v == 1;
  }
  // The semaphore Refs, in order of first use.
  std::vector<const void*> sems;
  for (const SemEvent& ev : flat_)
    if (std::find(sems.begin(), sems.end(), ev.sem) == sems.end()) sems.push_back(ev.sem);
  std::string unknown_reason;
  int k = 0;
  for (const void* sem : sems) {
    std::vector<const SemEvent*> evs;
    bool incoming = false;  // another device may signal it
    for (const SemEvent& ev : flat_)
      if (ev.sem == sem) evs.push_back(&ev), incoming |= ev.device.has_value();
    const SemEvent& first = *evs.front();
    z3::expr cell = c_.scope.fresh_int("sem_cell");
    std::vector<z3::expr> q = facts;
    q.push_back(cell >= 0 && cell < c_.ctx.int_val(first.numel));
    std::optional<z3::expr> device;
    if (remote) {
      device = c_.scope.fresh_int("device");
      q.push_back(*device >= 0 && *device < c_.ctx.int_val(devices_));
    }
    z3::expr net = c_.ctx.int_val(0);
    for (const SemEvent* ev : evs) net = net + contribution(*ev, cell, device);
    std::vector<std::string> opq;
    for (const SemEvent* ev : evs) opq = merge_opaque(opq, ev->opaque);
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
    std::vector<std::tuple<const SemEvent*, z3::expr, z3::expr>> blocked;  // wait, blocks, count before it
    for (const SemEvent* ev : evs) {
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
      std::vector<const SemEvent*> before;
      for (const SemEvent* e : evs) {
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
  return finish(Verdict::proved, std::to_string(flat_.size()) + " semaphore events");
}

}  // namespace

Obligation prove_semaphore_balance(CallContext& c) {
  Balance b(c);
  return b.run();
}

}  // namespace tessera::prove
