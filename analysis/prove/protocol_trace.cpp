#include "analysis/prove/protocol_trace.h"

#include <algorithm>
#include <map>

#include "ir/effects.h"
#include "ir/indirect_dma.h"

namespace tessera::prove {

namespace {

// Stands for every get_barrier_semaphore result: one semaphore per collective.
const char kBarrier = 0;

// Number of elements an indexer selects (an indirect entry selects `indirect_rows` rows).
z3::expr region_elements(z3::context& ctx, const Access& a, const Shape& shape, int64_t indirect_rows) {
  z3::expr n = ctx.int_val(1);
  for (size_t d = 0; d < shape.size(); ++d) {
    const IndexEntry e = d < a.ix.entries.size() ? a.ix.entries[d] : IndexEntry::full();
    switch (e.kind) {
      case IndexEntry::Full: n = n * ctx.int_val(shape[d]); break;
      case IndexEntry::Point: break;
      case IndexEntry::Indirect: n = n * ctx.int_val(indirect_rows); break;
      case IndexEntry::Slice: n = n * (e.has_dynamic_size() ? a.dyn_sizes.at(d)->e : ctx.int_val(e.size)); break;
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

}  // namespace

z3::expr substituted(z3::expr e, z3::expr_vector& from, z3::expr_vector& to) { return e.substitute(from, to).simplify(); }

std::string branches_taken(const std::vector<TraceEvent>& events, const std::function<bool(const TraceEvent&)>& taken) {
  // One entry per cond and branch, with the loop iterations it was taken in (as semaphore balance lists an op's).
  std::vector<std::pair<std::pair<const Op*, int>, std::vector<std::string>>> seen;
  for (const TraceEvent& ev : events) {
    if (ev.kind != TraceEvent::branch || !taken(ev)) continue;
    std::pair<const Op*, int> key{ev.op, ev.branch_index};
    auto it = std::find_if(seen.begin(), seen.end(), [&](const auto& e) { return e.first == key; });
    if (it == seen.end()) it = seen.insert(seen.end(), {key, {}});
    if (!ev.iteration.empty()) it->second.push_back(ev.iteration);
  }
  std::string s;
  for (const auto& [key, its] : seen) {
    s += (s.empty() ? "" : ", ") + std::string("branch ") + std::to_string(key.second) + " of " + key.first->name() + where(*key.first);
    if (its.empty()) continue;
    s += " (";
    for (size_t k = 0; k < its.size() && k < 3; ++k) s += (k ? "; " : "") + its[k];
    if (its.size() > 3) s += "; ... " + std::to_string(its.size()) + " iterations";
    s += ")";
  }
  return s;
}

ProtocolTrace::ProtocolTrace(CallContext& c, const std::vector<Sym>& point, bool with_plain_accesses) : c_(c) {
  enc_ = std::make_unique<IntEncoder>(c_.scope, c_.ctx.bool_val(true));
  enc_->set_grid_point(point);
  const Body& kernel = *c_.kernel;
  for (int j = 0; j < c_.g.num_scalar_prefetch() && j < static_cast<int>(kernel.params().size()); ++j)
    enc_->bind_prefetch(kernel.params()[j], j);
  KernelWalker w(c_, *enc_);
  walker_ = &w;
  w.on_op = [&](const Op& op, const std::vector<Access>& acc) { on_op(op, acc); };
  w.on_branch = [&](const Op& cond, int index) {
    // Like base_event, but needs no guard: it only names the path.
    TraceEvent ev(c_.ctx);
    ev.kind = TraceEvent::branch;
    ev.op = &cond;
    ev.what = cond.name() + where(cond);
    ev.path = enc_->path();
    ev.loops = w.loops();
    ev.instance = ++next_instance_;
    ev.branch_index = index;
    events_.push_back(std::move(ev));
  };
  w.walk(kernel);
  walker_ = nullptr;
  if (!why_.empty() || (protocol_ops_ == 0 && !with_plain_accesses)) return;
  z3::expr_vector from(c_.ctx), to(c_.ctx);
  if (!unroll(0, events_.size(), 0, from, to, "")) {
    // The semaphore ops alone may still unroll: the accesses are then incomplete.
    accesses_why_ = why_;
    why_.clear();
    flat_.clear();
    std::erase_if(events_, [](const TraceEvent& ev) { return ev.kind == TraceEvent::access; });
    if (!unroll(0, events_.size(), 0, from, to, "")) return;
  }
  mark_varying(point);
}

bool ProtocolTrace::per_process() const {
  return std::any_of(c_.scope.process_axes.begin(), c_.scope.process_axes.end(),
                     [&](const std::string& a) { return c_.scope.axis_symbol.count(a) > 0; });
}

bool ProtocolTrace::cores_are_processes() const {
  return c_.op.name() == "core_map" && c_.op.param(keys::mesh_axes).size() == c_.scope.process_axes.size();
}

int64_t ProtocolTrace::devices() const {
  int64_t n = 1;
  for (const std::string& a : c_.scope.process_axes) n = saturating_mul(n, c_.scope.axis_sizes.at(a));
  return n;
}

// Process p's index on axis k is (p / stride_k) mod size_k, where stride_k is
// the product of the sizes of the axes inside k.
z3::expr ProtocolTrace::on(const z3::expr& x, const z3::expr& p) const {
  const std::vector<std::string>& axes = c_.scope.process_axes;
  z3::expr_vector from(c_.ctx), to(c_.ctx);
  int64_t stride = 1;
  for (size_t k = axes.size(); k-- > 0;) {
    auto sym = c_.scope.axis_symbol.find(axes[k]);
    int64_t size = c_.scope.axis_sizes.at(axes[k]);
    if (sym != c_.scope.axis_symbol.end()) {
      z3::expr i = axes.size() == 1 ? p : z3::mod(stride == 1 ? p : p / c_.ctx.int_val(stride), c_.ctx.int_val(size));
      from.push_back(sym->second);
      to.push_back(i);
    }
    stride = saturating_mul(stride, size);
  }
  if (from.empty()) return x;
  return substituted(x, from, to);
}

int64_t ProtocolTrace::mesh_cores() const {
  int64_t cores = 1;
  if (c_.op.name() == "core_map")
    for (const std::string& a : c_.op.param(keys::mesh_axes)) cores = saturating_mul(cores, c_.scope.axis_sizes.at(a));
  return cores;
}

std::string ProtocolTrace::process_name(int64_t p) const {
  if (c_.op.name() != "core_map" || cores_are_processes()) return std::string(process_word()) + " " + std::to_string(p);
  return "device " + std::to_string(p / mesh_cores()) + " core " + std::to_string(p % mesh_cores());
}

z3::expr ProtocolTrace::flat_index(const std::vector<std::string>& axes, std::vector<z3::expr>& facts) {
  z3::expr id = c_.ctx.int_val(0);
  for (const std::string& a : axes) {
    int64_t size = c_.scope.axis_sizes.at(a);
    auto sym = c_.scope.axis_symbol.find(a);
    if (sym == c_.scope.axis_symbol.end()) {
      sym = c_.scope.axis_symbol.emplace(a, c_.scope.fresh_int("axis_index_" + a)).first;
      facts.push_back(sym->second >= 0 && sym->second < c_.ctx.int_val(size));
    }
    id = id * c_.ctx.int_val(size) + sym->second;
  }
  return id.simplify();
}

z3::expr ProtocolTrace::process_id(std::vector<z3::expr>& facts) { return flat_index(c_.scope.process_axes, facts); }

TraceEvent ProtocolTrace::base_event(const Op& op, TraceEvent::Kind kind) {
  TraceEvent ev(c_.ctx);
  ev.kind = kind;
  ev.op = &op;
  ev.what = op.name() + where(op);
  ev.path = enc_->path();
  ev.opaque = walker_->path_opaque();
  ev.loops = walker_->loops();
  ev.conds = walker_->conds();
  ev.instance = next_instance_;
  enc_->need(enc_->path_deps());
  return ev;
}

void ProtocolTrace::add_sem(const Op& op, int k, const Access* a, z3::expr amount, bool wait, std::optional<Sym> device,
                            const std::vector<std::string>& amount_opaque) {
  TraceEvent ev = base_event(op, TraceEvent::sem);
  ev.amount = wait ? -amount : amount;
  ev.wait = wait;
  ev.opaque = merge_opaque(ev.opaque, amount_opaque);
  const Value& ref = op.main_operand(k);
  const Var* root = a ? a->root : ref.is_var() ? walker_->root(ref.var()) : nullptr;
  if (auto it = scoped_in_loop_.find(root); it != scoped_in_loop_.end() && why_.empty())
    why_ = op.name() + where(op) + " uses a semaphore that run_scoped allocates anew in every iteration of " + it->second;
  bool barrier = barrier_refs_.count(root) > 0;
  ev.sem_key = barrier ? static_cast<const void*>(&kBarrier) : static_cast<const void*>(root);
  ev.sem_name = barrier ? "the barrier semaphore" : ref.is_var() ? "%" + ref.var()->name : "a semaphore";
  if (a) {
    const Shape& shape = ref.type().shape();
    // Row-major flat index of the element; a slice of several semaphores is not one semaphore.
    z3::expr cell = c_.ctx.int_val(0);
    for (size_t d = 0; d < shape.size(); ++d) {
      const IndexEntry e = d < a->ix.entries.size() ? a->ix.entries[d] : IndexEntry::full();
      bool one = e.kind == IndexEntry::Point || (e.kind == IndexEntry::Slice && e.size == 1 && !e.has_dynamic_size()) ||
                 (e.kind == IndexEntry::Full && shape[d] == 1);
      if (!one && why_.empty()) why_ = op.name() + where(op) + " names more than one semaphore of " + ev.sem_name;
      const Sym& s = a->starts.at(d);
      enc_->need(s.deps);
      ev.opaque = merge_opaque(ev.opaque, s.opaque);
      cell = cell * c_.ctx.int_val(shape[d]) + s.e;
      ev.numel *= shape[d];
    }
    ev.cell = cell.simplify();
  }
  if (device) {
    enc_->need(device->deps);
    ev.opaque = merge_opaque(ev.opaque, device->opaque);
    ev.device = device->e;
  }
  events_.push_back(std::move(ev));
}

void ProtocolTrace::add_access(const Op& op, const Access& a, bool read, bool write, TraceEvent::By by, bool remote) {
  TraceEvent ev = base_event(op, TraceEvent::access);
  const Value& ref = op.operands.at(a.ix.base);
  if (auto it = scoped_in_loop_.find(a.root); it != scoped_in_loop_.end() && scoped_why_.empty())
    scoped_why_ = op.name() + where(op) + " accesses a Ref that run_scoped allocates anew in every iteration of " + it->second;
  ev.root = a.root;
  ev.ref_name = ref.is_var() ? "%" + ref.var()->name : "a Ref";
  ev.read = read;
  ev.write = write;
  ev.by = by;
  ev.remote = remote;
  const Shape& shape = ref.type().shape();
  for (size_t d = 0; d < shape.size(); ++d) {
    const IndexEntry e = d < a.ix.entries.size() ? a.ix.entries[d] : IndexEntry::full();
    const Sym& s = a.starts.at(d);
    enc_->need(s.deps);
    ev.opaque = merge_opaque(ev.opaque, s.opaque);
    if (e.kind == IndexEntry::Full) {
      ev.region.push_back({c_.ctx.int_val(0), c_.ctx.int_val(shape[d] - 1), true});
    } else if (e.kind == IndexEntry::Indirect) {
      // The rows of a gather / scatter are data: any row, not all of them.
      ev.region.push_back({c_.ctx.int_val(0), c_.ctx.int_val(shape[d] - 1), false});
      ev.opaque = merge_opaque(ev.opaque, s.opaque);
    } else if (e.has_dynamic_size()) {
      const Sym& n = *a.dyn_sizes.at(d);
      enc_->need(n.deps);
      ev.opaque = merge_opaque(ev.opaque, n.opaque);
      ev.region.push_back({s.e, s.e + n.e - 1, true});
    } else {
      int64_t span = e.kind == IndexEntry::Point ? 0 : std::max<int64_t>(e.size - 1, 0) * e.stride;
      bool dense = e.kind == IndexEntry::Point || e.stride == 1 || e.size <= 1;
      ev.region.push_back({s.e, s.e + c_.ctx.int_val(span), dense});
    }
  }
  events_.push_back(std::move(ev));
}

// In a core_map inside pmaps the processes are (device, core) pairs, the
// core the inner coordinate: a remote signal or copy lands on core `core` of
// device `dev`, or on this core's namesake there (as the interpreter sends it).
Sym ProtocolTrace::on_core(Sym dev, const std::optional<Sym>& core) {
  if (c_.op.name() != "core_map" || cores_are_processes()) return dev;
  int64_t cores = mesh_cores();
  Sym c = core ? *core : Sym{flat_index(c_.op.param(keys::mesh_axes), enc_->facts), Interval::range(0, cores - 1), {}, {}};
  // A core index outside the mesh is a run-time error, not another device's
  // core: such a signal goes to no process (-1).
  z3::expr id = z3::ite(c.e >= 0 && c.e < c_.ctx.int_val(cores), dev.e * c_.ctx.int_val(cores) + c.e, c_.ctx.int_val(-1));
  Sym flat{id, Interval::top(), merge_opaque(dev.opaque, c.opaque), dev.deps};
  flat.deps.insert(flat.deps.end(), c.deps.begin(), c.deps.end());
  return flat;
}

Sym ProtocolTrace::exact_or_opaque(const Sym& v, const std::string& what) {
  // Kernel bounds proves the guards of indices and paths, not of amounts and
  // device ids: one whose integer code may wrap is any value to the model.
  for (int d : v.deps)
    if (!enc_->guards.at(d).settled) return enc_->opaque(DType::i32, what + " relies on integer code that may overflow");
  return v;
}

namespace {

// The access of op's main operand `k` (nullptr when it has no indexer).
const Access* access_of(const Op& op, const std::vector<Access>& acc, int k) {
  int operand = op.main_operand_index(k);
  for (const Access& a : acc)
    if (a.ix.base == operand) return &a;
  return nullptr;
}

}  // namespace

const RuleTable<ProtocolTrace::Rule>& ProtocolTrace::rules() {
  static const RuleTable<Rule> table = [] {
    RuleTable<Rule> t("prove.protocol");
    t.set("dma_start", [](ProtocolTrace& tr, const Op& op, const Acc& acc) { tr.on_dma_start(op, acc); });
    t.set("dma_wait", [](ProtocolTrace& tr, const Op& op, const Acc& acc) { tr.on_dma_wait(op, acc); });
    t.set("semaphore_signal", [](ProtocolTrace& tr, const Op& op, const Acc& acc) { tr.on_semaphore(op, acc, false); });
    t.set("semaphore_wait", [](ProtocolTrace& tr, const Op& op, const Acc& acc) { tr.on_semaphore(op, acc, true); });
    t.set("get_barrier_semaphore", [](ProtocolTrace& tr, const Op& op, const Acc& acc) {
      for (const Var* r : op.results) tr.barrier_refs_.insert(r);
      tr.on_core_accesses(op, acc, false);
    });
    t.set("run_scoped", [](ProtocolTrace& tr, const Op& op, const Acc& acc) {
      tr.note_scoped(op);
      tr.on_core_accesses(op, acc, false);
    });
    // A swap reads the old value even where its effect says only "write".
    t.set("swap", [](ProtocolTrace& tr, const Op& op, const Acc& acc) { tr.on_core_accesses(op, acc, true); });
    t.set_default("its indexed accesses of data Refs are the core's own accesses");
    return t;
  }();
  return table;
}
const RuleTableRegistration kRegistered("prove.protocol", ProtocolTrace::rules);

void ProtocolTrace::on_op(const Op& op, const std::vector<Access>& acc) {
  ++next_instance_;
  if (const Rule* rule = rules().find(*op.prim)) return (*rule)(*this, op, acc);
  on_core_accesses(op, acc, false);
}

// run_scoped inside a loop allocates fresh Refs in every iteration, which
// one root per Ref cannot tell apart.
void ProtocolTrace::note_scoped(const Op& op) {
  if (walker_->loops().empty()) return;
  const Body& b = *op.param(keys::body);
  size_t given = forwarded_operands(op, b).size();
  for (size_t p = given; p < b.params().size(); ++p) scoped_in_loop_[b.params()[p]] = walker_->loops().back().what;
}

// The core's own accesses of data Refs (semaphores are counted, not accessed).
void ProtocolTrace::on_core_accesses(const Op& op, const std::vector<Access>& acc, bool reads_old) {
  for (const Access& a : acc) {
    const Value& ref = op.operands.at(a.ix.base);
    if (!ref.is_var() || !ref.type().is_ref() || is_semaphore(ref.type().dtype())) continue;
    uint8_t bits = op_effects(op).on(a.ix.base);
    bool write = bits & kWrite, read = (bits & (kRead | kAccum)) || reads_old;
    if (read || write) add_access(op, a, read, write, TraceEvent::core, false);
  }
}

void ProtocolTrace::on_dma_start(const Op& op, const std::vector<Access>& acc) {
  ++protocol_ops_;
  // In a core_map outside any pmap there is one device: a remote copy lands on this core.
  bool remote = op.num_main_operands() >= 5 && !cores_are_processes();
  if (const Access* s = access_of(op, acc, 0)) add_access(op, *s, true, false, TraceEvent::dma_source, false);
  if (const Access* d = access_of(op, acc, 1)) add_access(op, *d, false, true, TraceEvent::dma_destination, remote);
  // The bytes copied: read off the dense side (a gather / scatter moves num_rows rows).
  std::optional<IndirectDma> ind = indirect_dma(op);
  int dense = ind && ind->indexed == 0 ? 1 : 0;
  const Access* side = access_of(op, acc, dense);
  Type t = op.main_operand(dense).type();
  z3::expr elements = side ? region_elements(c_.ctx, *side, t.shape(), ind ? ind->num_rows : 0) : c_.ctx.int_val(1);
  std::vector<std::string> opq;
  if (side)
    for (const auto& s : side->dyn_sizes)
      if (s) opq = merge_opaque(opq, s->opaque), enc_->need(s->deps);
  z3::expr bytes = elements * c_.ctx.int_val(dtype_bytes(t.dtype()));
  std::optional<Sym> device;
  if (remote) device = on_core(exact_or_opaque(enc_->value(op.main_operand(4)), "the device id" + where(op)), std::nullopt);
  add_sem(op, 2, access_of(op, acc, 2), bytes, false, device, opq);                    // where the data lands
  if (remote) add_sem(op, 3, access_of(op, acc, 3), bytes, false, std::nullopt, opq);  // the source side, here
}

void ProtocolTrace::on_dma_wait(const Op& op, const std::vector<Access>& acc) {
  ++protocol_ops_;
  const Access* side = access_of(op, acc, 1);
  Type t = op.main_operand(1).type();
  z3::expr elements = side ? region_elements(c_.ctx, *side, t.shape(), 0) : c_.ctx.int_val(1);
  std::vector<std::string> opq;
  if (side)
    for (const auto& s : side->dyn_sizes)
      if (s) opq = merge_opaque(opq, s->opaque), enc_->need(s->deps);
  add_sem(op, 0, access_of(op, acc, 0), elements * c_.ctx.int_val(dtype_bytes(t.dtype())), true, std::nullopt, opq);
}

// semaphore_signal %sem, %inc [, %device [, %core]] / semaphore_wait %sem, %dec
void ProtocolTrace::on_semaphore(const Op& op, const std::vector<Access>& acc, bool wait) {
  ++protocol_ops_;
  Sym amount = exact_or_opaque(enc_->value(op.main_operand(1)), "the amount" + where(op));
  std::optional<Sym> device;
  if (!wait && op.num_main_operands() >= 4) {
    // The cores of a core_map outside any pmap are the processes (one
    // device: its id names this device, any other is a run-time error).
    Sym core = exact_or_opaque(enc_->value(op.main_operand(3)), "the core index" + where(op));
    if (cores_are_processes())
      device = core;
    else if (c_.op.name() == "core_map")
      device = on_core(exact_or_opaque(enc_->value(op.main_operand(2)), "the device id" + where(op)), core);
    else if (why_.empty())
      why_ = "semaphore_signal" + where(op) + " signals another core's semaphore: which core runs a grid step depends on "
             "--cores and the grid order, which the program does not fix";
  } else if (!wait && op.num_main_operands() >= 3 && !cores_are_processes()) {
    device = on_core(exact_or_opaque(enc_->value(op.main_operand(2)), "the device id" + where(op)), std::nullopt);
  }
  add_sem(op, 0, access_of(op, acc, 0), amount.e, wait, device, amount.opaque);
}

bool ProtocolTrace::unroll(size_t b, size_t e, size_t depth, z3::expr_vector& from, z3::expr_vector& to,
                           const std::string& it) {
  constexpr size_t kMaxEvents = 20000;  // bounds the formula, not the grid
  std::map<int, int> instance;          // this iteration's copy of each op visit
  for (size_t i = b; i < e;) {
    const TraceEvent& ev = events_[i];
    if (ev.loops.size() == depth) {
      TraceEvent f = ev;
      f.path = substituted(ev.path, from, to);
      f.cell = substituted(ev.cell, from, to);
      f.amount = substituted(ev.amount, from, to);
      if (ev.device) f.device = substituted(*ev.device, from, to);
      for (SymRange& r : f.region) r.lo = substituted(r.lo, from, to), r.hi = substituted(r.hi, from, to);
      f.iteration = it;
      auto [slot, fresh] = instance.try_emplace(ev.instance, 0);
      if (fresh) slot->second = ++next_instance_;
      f.instance = slot->second;
      if (!f.path.is_false()) flat_.push_back(std::move(f));
      if (flat_.size() > kMaxEvents) {
        why_ = "more than " + std::to_string(kMaxEvents) + " events once the loops are unrolled";
        return false;
      }
      ++i;
      continue;
    }
    const LoopInfo& loop = ev.loops[depth];
    size_t j = i;
    while (j < e && events_[j].loops.size() > depth && events_[j].loops[depth].id == loop.id) ++j;
    int64_t l = 0, h = 0;
    bool known = loop.index.has_value();
    if (known) {
      z3::expr lo = substituted(loop.lo->e, from, to), hi = substituted(loop.hi->e, from, to);
      known = lo.is_numeral_i64(l) && hi.is_numeral_i64(h);
    }
    if (!known) {
      std::string why = " sits in " + loop.what + ", whose trip count is not static";
      bool all_accesses = std::all_of(events_.begin() + static_cast<std::ptrdiff_t>(i), events_.begin() + static_cast<std::ptrdiff_t>(j),
                                      [](const TraceEvent& x) { return x.kind != TraceEvent::sem; });
      if (!all_accesses) {
        why_ = ev.what + why;
        return false;
      }
      // Accesses only: left out, remembering their Refs (a claim about those Refs is then unknown).
      for (size_t k = i; k < j; ++k)
        if (events_[k].kind == TraceEvent::access) unrolled_without_.try_emplace(events_[k].root, events_[k].what + why);
      i = j;
      continue;
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

void ProtocolTrace::mark_varying(const std::vector<Sym>& point) {
  // Symbols that are one value for the whole step: the grid point, dynamic
  // grid sizes, device / core indices and counts. Anything else in an unrolled event was
  // made inside the loop body and stands for a different value per iteration.
  std::set<std::string> fixed;
  for (const Sym& p : point) fixed.insert(p.e.decl().name().str());
  for (const z3::expr& s : c_.scope.grid_size)
    if (s.is_const() && !s.is_numeral()) fixed.insert(s.decl().name().str());
  for (const auto& [name, sym] : c_.scope.axis_symbol) fixed.insert(sym.decl().name().str());
  for (const auto& [name, sym] : c_.scope.axis_size_symbol) fixed.insert(sym.decl().name().str());
  for (TraceEvent& ev : flat_) {
    if (ev.loops.empty() || ev.kind == TraceEvent::branch) continue;  // a branch only names a path
    std::set<std::string> names;
    std::set<unsigned> seen;
    for (const z3::expr* x : {&ev.path, &ev.cell, &ev.amount}) free_consts(*x, names, seen);
    if (ev.device) free_consts(*ev.device, names, seen);
    for (const SymRange& r : ev.region) free_consts(r.lo, names, seen), free_consts(r.hi, names, seen);
    for (const std::string& nm : names)
      if (!fixed.count(nm)) {
        ev.varies = ev.what + " in " + ev.loops.back().what + " depends on a value that may change from one iteration to the next (" +
                    (ev.opaque.empty() ? nm : ev.opaque[0]) + ")";
        break;
      }
  }
}

}  // namespace tessera::prove
