#include "interpreter/eval.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <new>
#include <sstream>

#include "ir/control_views.h"
#include "ir/indirect_dma.h"
#include "ir/op_cost.h"
#include "ir/sparse_core.h"
#include "ir/primitive.h"
#include "verify/verify.h"

namespace tessera::interp {

// ---- Plans: a body compiled once to slot indices ---------------------------------------------
// How the interpreter runs each primitive: one rule table ("interpret")
// keyed by primitive, like every pass's. Pure array ops share one rule that
// calls their kernel from runtime/kernels/; ops on Refs, the TPU model and
// control flow have a rule each (exec_rules() below).
struct Exec;
using ExecRule = void (Exec::*)();

struct Operand {
  int slot = -1;  // -1: a literal
  Val lit;
};

struct OpPlan {
  const Op* op = nullptr;
  ExecRule rule = nullptr;
  std::vector<Operand> in;
  std::vector<int> out;
  std::vector<bool> out_used;
  std::vector<int> release;  // slots whose last use is this op
  std::vector<int> main;     // main operand positions
  const Kernel* kernel = nullptr;
  OpCost cost;               // of one execution (ir/op_cost.h), for --stats
  int64_t work = 0;          // of one execution, toward --max-work (op_work)
};

struct BodyPlan {
  int nslots = 0;
  std::vector<int> params;
  std::vector<OpPlan> ops;
  std::vector<Operand> outs;
};

namespace {

const RuleTable<ExecRule>& exec_rules();
ExecRule array_rule();  // runs the op's array kernel

// What one execution of `op` charges toward --max-work: the elements of its
// array operands and results (read and written) plus what it computes.
int64_t op_work(const Op& op, const OpCost& cost) {
  int64_t w = saturating_add(cost.flops, cost.transcendentals);
  for (const Value& v : op.operands)
    if (v.type().is_array()) w = saturating_add(w, num_elements(v.type().shape()));
  for (const Var* r : op.results)
    if (r->type.is_array()) w = saturating_add(w, num_elements(r->type.shape()));
  return w;
}

Val literal_val(const Literal& l) {
  Array a = Array::uninitialized(l.dtype, {});
  if (is_float(l.dtype)) a.set(0, l.f);
  else visit(a, [&](auto* p) { *p = static_cast<std::remove_pointer_t<decltype(p)>>(l.i); });
  return Val{a, nullptr};
}

std::unique_ptr<BodyPlan> build_plan(const Body& b) {
  auto p = std::make_unique<BodyPlan>();
  std::unordered_map<const Var*, int> slot;
  std::vector<int> last_use;
  auto new_slot = [&](const Var* v) {
    int s = p->nslots++;
    slot[v] = s;
    last_use.push_back(-1);
    return s;
  };
  auto operand = [&](const Value& v, int use_at) {
    Operand o;
    if (v.is_literal()) {
      o.lit = literal_val(v.literal());
      return o;
    }
    auto it = slot.find(v.var());
    if (it == slot.end()) throw Error(b.loc(), "@" + b.name() + ": use of a variable %" + v.var()->name + " before its definition");
    o.slot = it->second;
    last_use[o.slot] = std::max(last_use[o.slot], use_at);
    return o;
  };
  for (const Var* v : b.params()) p->params.push_back(new_slot(v));
  const auto& ops = b.ops();
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    OpPlan o;
    o.op = &op;
    // A primitive without a rule of its own is pure: its array kernel runs
    // it. Looked up here, not copied into exec_rules(), so a kernel an
    // embedding program adds later is found (docs/embedding.md).
    const ExecRule* rule = exec_rules().find(*op.prim);
    if (!rule) o.kernel = &array_kernels().at(*op.prim, op.loc);
    o.rule = rule ? *rule : array_rule();
    for (const Value& v : op.operands) o.in.push_back(operand(v, static_cast<int>(i)));
    for (const Var* r : op.results) o.out.push_back(new_slot(r));
    o.main = op.main_operands();
    o.cost = op_cost(op);
    o.work = op_work(op, o.cost);
    p->ops.push_back(std::move(o));
  }
  int end = static_cast<int>(ops.size());
  for (const Value& v : b.outputs()) p->outs.push_back(operand(v, end));
  for (int s = 0; s < p->nslots; ++s)
    if (last_use[s] >= 0 && last_use[s] < end) p->ops[last_use[s]].release.push_back(s);
  for (auto& o : p->ops)
    for (int s : o.out) o.out_used.push_back(last_use[s] >= 0);
  return p;
}

int64_t scalar_int(const Val& v, const Op& op, const char* what) {
  if (v.is_ref() || v.arr.size() != 1) throw Error(op.loc, op.name() + ": " + what + " must be a scalar");
  return v.arr.get_int(0);
}

bool is_hbm(MemSpace s) { return s == MemSpace::any || s == MemSpace::hbm; }

std::string format_scalar(const Array& a, int64_t i) {
  if (is_float(a.dtype())) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", a.get(i));
    return buf;
  }
  if (is_bool(a.dtype())) return a.get_int(i) ? "true" : "false";
  return std::to_string(a.get_int(i));
}

std::string format_array(const Array& a) {
  if (a.rank() == 0) return format_scalar(a, 0);
  std::string s = "[";
  int64_t n = std::min<int64_t>(a.size(), 32);
  for (int64_t i = 0; i < n; ++i) s += (i ? ", " : "") + format_scalar(a, i);
  if (a.size() > n) s += ", ...";
  return s + "]";
}

}  // namespace

Region resolve_indexer(const Indexer* ix, const Shape& shape, const std::vector<const Val*>& operands) {
  Region r = full_region(shape);
  if (!ix) return r;
  for (size_t d = 0; d < ix->entries.size() && d < shape.size(); ++d) {
    const IndexEntry& e = ix->entries[d];
    // The rows of a gather / scatter are data (the DMA takes them from the
    // offsets Ref); the region counts them as a dense [0, n) for sizes.
    if (e.is_indirect()) {
      r[d] = Sel{0, e.size, 1, true};
      continue;
    }
    int64_t start = e.start;
    if (e.is_dynamic()) start = operands.at(e.dyn_start)->arr.get_int(0);
    switch (e.kind) {
      case IndexEntry::Indirect:
      case IndexEntry::Full: break;
      case IndexEntry::Point: r[d] = Sel{start, 1, 1, false}; break;
      case IndexEntry::Slice: {
        // A dynamic size is the run-time value (checked by the op), not the static bound.
        int64_t size = e.has_dynamic_size() ? operands.at(e.dyn_size)->arr.get_int(0) : e.size;
        r[d] = Sel{start, size, e.stride, true};
        break;
      }
    }
  }
  return r;
}

// ---- Interp ----------------------------------------------------------------------------------
namespace {
RunOptions with_cores(RunOptions o, int cores) {
  o.cores = std::max(1, cores);
  return o;
}
}  // namespace

Interp::Interp(const Module& m, const RunOptions& opts, int cores_per_device, Timeline* timeline)
    : module_(m),
      opts_(with_cores(opts, cores_per_device)),
      timeline_(timeline),
      machine_(opts_, sched_, timeline),
      sched_(opts.grid_seed.value_or(0)) {}

Interp::~Interp() = default;

std::string Interp::where(const Ctx& c) const {
  if (c.num_devices() <= 1 && opts_.cores <= 1) return "";
  return " (device " + std::to_string(c.device) + ", core " + std::to_string(c.core) + ")";
}

std::shared_ptr<tpu::BarrierState> Interp::device_group(const Op* pmap, int size) {
  auto& g = groups_[pmap];
  if (!g) {
    g = std::make_shared<tpu::BarrierState>();
    g->size = size;
  }
  return g;
}

const BodyPlan& Interp::plan(const Body& b) {
  std::lock_guard<std::mutex> lock(plans_mu_);
  auto it = plans_.find(&b);
  if (it != plans_.end()) return *it->second;
  auto p = build_plan(b);
  const BodyPlan& ref = *p;
  plans_.emplace(&b, std::move(p));
  return ref;
}

// ---- Op execution ----------------------------------------------------------------------------
struct Exec {
  Interp& in;
  const OpPlan& p;
  std::vector<Val>& env;
  Ctx& ctx;

  const Op& op() const { return *p.op; }
  const Val& operand(int k) const {
    const Operand& o = p.in[k];
    return o.slot < 0 ? o.lit : env[o.slot];
  }
  const Val& main(int k) const { return operand(p.main[k]); }
  int nmain() const { return static_cast<int>(p.main.size()); }
  void set(int k, Val v) { env[p.out[k]] = std::move(v); }
  [[noreturn]] void fail(const std::string& msg) const { throw Error(op().loc, op().name() + ": " + msg); }
  int gc() const { return in.global_core(ctx); }

  std::vector<const Val*> operand_ptrs() const {
    std::vector<const Val*> v(p.in.size());
    for (size_t k = 0; k < p.in.size(); ++k) v[k] = &operand(static_cast<int>(k));
    return v;
  }
  std::vector<Val> operands(size_t from, size_t to) const {
    std::vector<Val> v;
    for (size_t k = from; k < to; ++k) v.push_back(operand(static_cast<int>(k)));
    return v;
  }

  // The buffer and region of main operand k (a Ref with its indexer).
  tpu::MemBuffer& ref_of(int k) const {
    const Val& v = main(k);
    if (!v.is_ref()) fail("operand " + std::to_string(k) + " is not a Ref");
    if (v.ref->freed) fail("use of " + v.ref->describe() + " after its run_scoped has ended");
    return *v.ref;
  }
  Region region_of(int k) const {
    tpu::MemBuffer& b = ref_of(k);
    const Indexer* ix = op().indexer_for(p.main[k]);
    Region r = resolve_indexer(ix, b.data.shape(), operand_ptrs());
    // A negative dynamic size selects nothing sensible, whatever --oob says
    // (start + size past the dim is an out-of-bounds access like any other).
    for (size_t d = 0; ix && d < ix->entries.size() && d < r.size(); ++d)
      if (ix->entries[d].has_dynamic_size() && r[d].size < 0)
        fail("dynamic slice size " + std::to_string(r[d].size) + " in dimension " + std::to_string(d) + " of " +
             b.describe() + " is negative");
    return r;
  }
  void no_hbm(int k) const {
    MemSpace s = main(k).ref->space;
    if (is_hbm(s))
      fail("the Ref " + main(k).ref->describe() + " is in " + std::string(mem_space_name(s)) +
           " memory and cannot be read or written directly; copy it to or from VMEM with dma_start / dma_wait");
  }
  std::string who() const {
    return op().name() + " on device " + std::to_string(ctx.device) + " core " + std::to_string(ctx.core);
  }

  void run() { (this->*p.rule)(); }

  // Rules too small for a section of their own.
  void plain_swap() { swap(false); }
  void addupdate() { swap(true); }
  void device_id() { set(0, Val{Array::scalar(DType::i32, ctx.device), nullptr}); }
  void delay() { in.sched().maybe_yield(); }
  void call() { outputs(in.eval(*op().param(keys::callee), operands(0, p.in.size()), ctx)); }
  // custom_jvp_call runs its `call` body; the `jvp` rule only matters to the jvp pass.
  void custom_jvp_call() { outputs(in.eval(*op().param(keys::call), operands(0, p.in.size()), ctx)); }
  // custom_vjp_call runs its `call` body; `fwd` and `bwd` only matter to reverse mode.
  void custom_vjp_call() { outputs(in.eval(*op().param(keys::call), operands(0, p.in.size()), ctx)); }
  // As JAX's custom_lin: a custom_vjp function has no forward-mode rule.
  void custom_lin() {
    fail("the jvp of a custom_vjp_call has no tangent to compute (jax.custom_vjp defines reverse mode only): "
         "differentiate it with vjp, or give the function a custom_jvp_call instead");
  }
  void pallas_call() {
    check_sparse_core();
    if (executed_elsewhere()) return;
    outputs(run_pallas_call(in, op(), operands(0, p.in.size()), ctx));
  }
  // RunOptions::pallas_call_executor: a pallas_call whose operands are all
  // arrays may run outside the interpreter; true when it did.
  bool executed_elsewhere() {
    const PallasCallExecutor& run_elsewhere = in.opts().pallas_call_executor;
    if (!run_elsewhere) return false;
    std::vector<Array> args;
    for (size_t k = 0; k < p.in.size(); ++k) {
      const Val& v = operand(static_cast<int>(k));
      if (v.is_ref()) return false;
      args.push_back(v.arr);
    }
    std::optional<std::vector<Array>> results = run_elsewhere(op(), args);
    if (!results) return false;
    if (results->size() != p.out.size())
      fail("the pallas_call executor returned " + std::to_string(results->size()) + " outputs, expected " +
           std::to_string(p.out.size()));
    std::vector<Val> vals;
    for (Array& a : *results) vals.push_back(Val{std::move(a), nullptr});
    outputs(std::move(vals));
    return true;
  }
  // A SparseCore kernel runs only if Mosaic SC could lower it (an unverified
  // module, e.g. `tessera run --no-verify`, still gets the verifier's message).
  void check_sparse_core() const {
    if (!is_sparse_core(op().param(keys::kernel_type))) return;
    std::vector<Diagnostic> problems = sparse_core_problems(op());
    if (!problems.empty()) throw Error(problems[0].loc, problems[0].message);
  }

  void outputs(std::vector<Val> vals) {
    for (size_t i = 0; i < p.out.size() && i < vals.size(); ++i) env[p.out[i]] = std::move(vals[i]);
  }

  void array() {
    std::vector<Array> args;
    args.reserve(p.in.size());
    for (size_t k = 0; k < p.in.size(); ++k) {
      const Val& v = operand(static_cast<int>(k));
      if (v.is_ref()) fail("an array kernel got a Ref operand");
      args.push_back(v.arr);
    }
    std::vector<Array> outs = (*p.kernel)(op(), args);
    if (outs.size() != p.out.size()) fail("kernel returned " + std::to_string(outs.size()) + " results");
    for (size_t i = 0; i < outs.size(); ++i) env[p.out[i]] = Val{std::move(outs[i]), nullptr};
  }

  std::string oob(const char* verb, const char* noun, tpu::MemBuffer& b, const Region& r) const {
    return std::string("Out-of-bounds ") + noun + " of " + b.describe() + ": " + verb + " " + region_str(r) +
           " but buffer has shape " + shape_str(b.data.shape());
  }

  void get() {
    tpu::MemBuffer& b = ref_of(0);
    no_hbm(0);
    Region r = region_of(0);
    bool ok = region_in_bounds(r, b.data.shape());
    if (!ok && in.opts().oob == RunOptions::Oob::raise) fail(oob("reading", "read", b, r));
    in.machine().on_read(b, r, gc(), who(), op().loc);
    set(0, Val{read_region(b.data, r, true, in.machine().uninit_zero()), nullptr});
  }

  void load() {
    tpu::MemBuffer& b = ref_of(0);
    no_hbm(0);
    Region r = region_of(0);
    in.machine().on_read(b, r, gc(), who(), op().loc);
    if (nmain() == 1) {
      bool ok = region_in_bounds(r, b.data.shape());
      if (!ok && in.opts().oob == RunOptions::Oob::raise) fail(oob("reading", "read", b, r));
      set(0, Val{read_region(b.data, r, true, in.machine().uninit_zero()), nullptr});
      return;
    }
    Array out;
    const Array* other = nmain() == 3 ? &main(2).arr : nullptr;
    bool ok = masked_read_region(b.data, r, main(1).arr, other, in.machine().uninit_zero(), out);
    if (!ok && in.opts().oob == RunOptions::Oob::raise) fail(oob("reading", "masked read", b, r));
    set(0, Val{out, nullptr});
  }

  // swap (returns the old contents) or addupdate (accumulate).
  void swap(bool accumulate) {
    tpu::MemBuffer& b = ref_of(0);
    no_hbm(0);
    Region r = region_of(0);
    const Array& value = main(1).arr;
    if (!region_in_bounds(r, b.data.shape())) fail(oob("swapping", accumulate ? "accumulate" : "swap", b, r));
    in.machine().on_write(b, r, gc(), who(), op().loc);
    if (accumulate) {
      accumulate_region(b.writable(), r, value);
      return;
    }
    if (!p.out.empty() && p.out_used[0]) set(0, Val{read_region(b.data, r), nullptr});
    if (region_is_full(r, b.data.shape()) && value.size() == b.data.size() && (value.rank() > 0 || b.data.rank() == 0)) {
      b.data = value.reshaped(b.data.shape());  // share: copy-on-write on the next partial write
    } else {
      write_region(b.writable(), r, value);
    }
  }

  void store() {
    tpu::MemBuffer& b = ref_of(0);
    no_hbm(0);
    Region r = region_of(0);
    const Array& value = main(1).arr;
    in.machine().on_write(b, r, gc(), who(), op().loc);
    if (nmain() == 2) {
      if (!region_in_bounds(r, b.data.shape())) fail(oob("writing", "write", b, r));
      write_region(b.writable(), r, value);
      return;
    }
    if (!masked_write_region(b.writable(), r, value, main(2).arr)) fail(oob("swapping", "masked swap", b, r));
  }

  // The grid axis program_id / num_programs[axis=a] names: vmapped axes skipped.
  int kernel_grid_axis() const {
    if (!ctx.kernel) fail("used outside a pallas_call kernel");
    int64_t axis = op().param(keys::axis);
    const std::vector<int>& axes = ctx.kernel->kernel_axes;
    if (axis < 0 || axis >= static_cast<int64_t>(axes.size()))
      fail("axis " + std::to_string(axis) + " is out of range for a kernel grid of rank " + std::to_string(axes.size()));
    return axes[axis];
  }
  void program_id() { set(0, Val{Array::scalar(DType::i32, static_cast<double>(grid_point(kernel_grid_axis()))), nullptr}); }
  void num_programs() {
    int g = kernel_grid_axis();  // first: it checks there is a kernel
    set(0, Val{Array::scalar(DType::i32, static_cast<double>(ctx.kernel->grid[g])), nullptr});
  }

  // The current grid point's index along grid axis g (program_id, axis_index
  // of a grid name). An index map is given the ids as parameters instead.
  int64_t grid_point(int g) const {
    if (ctx.kernel->in_index_map)
      fail("an index map cannot read the grid point: it gets the program ids as its parameters");
    if (g < 0 || g >= static_cast<int>(ctx.kernel->point.size())) fail("no grid point is being run");
    return ctx.kernel->point[g];
  }

  // axis_index / axis_size of a name: a grid name of the kernel (its program
  // id, the grid's size), else an enclosing core_map mesh or pmap axis.
  void named_axis() {
    const std::string& name = op().param(keys::axis_name);
    bool size = op().name() == "axis_size";
    auto put = [&](int64_t v) { set(0, Val{Array::scalar(DType::i32, static_cast<double>(v)), nullptr}); };
    if (ctx.kernel && ctx.kernel->grid_names) {
      const std::vector<std::string>& names = *ctx.kernel->grid_names;
      auto it = std::find(names.begin(), names.end(), name);
      if (it != names.end()) {
        int g = static_cast<int>(it - names.begin());
        return put(size ? ctx.kernel->grid[static_cast<size_t>(g)] : grid_point(g));
      }
    }
    for (const std::vector<Axis>* axes : {&ctx.mesh, &ctx.axes})
      for (const Axis& a : *axes)
        if (a.name == name) return put(size ? a.size : a.index);
    fail("unknown axis name '" + name + "' (not bound by an enclosing pmap, core_map or pallas_call grid_names)");
  }

  void prng_seed() {
    std::vector<int64_t> seeds;
    for (int k = 0; k < nmain(); ++k) seeds.push_back(main(k).arr.get_int(0));
    in.prng(ctx).seed(seeds);
  }
  void prng_random_bits() {
    Prng& g = in.prng(ctx);
    if (!g.seeded()) fail("no prng_seed has run on this core" + in.where(ctx) + " before it");
    Array out = Array::uninitialized(DType::i32, op().param(keys::shape));
    int32_t* bits = out.data<int32_t>();
    for (int64_t i = 0; i < out.size(); ++i) bits[i] = static_cast<int32_t>(g.next());
    set(0, Val{std::move(out), nullptr});
  }

  void debug_check() {
    if (in.opts().debug_checks && main(0).arr.get(0) == 0) fail("check failed: " + op().param(keys::msg));
  }

  void debug_print() {
    std::string fmt = op().param(keys::fmt);
    std::string out;
    int next = 0;
    for (size_t i = 0; i < fmt.size(); ++i) {
      if (fmt[i] == '{' && i + 1 < fmt.size() && fmt[i + 1] == '}' && next < nmain()) {
        out += format_array(main(next++).arr);
        ++i;
      } else {
        out += fmt[i];
      }
    }
    for (; next < nmain(); ++next) out += " " + format_array(main(next).arr);
    std::cout << out << "\n" << std::flush;
  }

  // ---- semaphores and DMAs ----
  int64_t semaphore_id(int k) const {
    tpu::MemBuffer& b = ref_of(k);
    if (!b.is_semaphore()) fail("operand " + std::to_string(k) + " is not a semaphore Ref");
    Region r = region_of(k);
    if (!region_in_bounds(r, b.data.shape()))
      fail("semaphore index " + region_str(r) + " out of bounds for semaphores of shape " + shape_str(b.data.shape()));
    return read_region(b.data, r).data<int32_t>()[0];
  }
  std::string sem_where() const {
    std::string s = " in " + op().name();
    if (op().loc.known()) s += " at " + op().loc.str();
    return s + " on device " + std::to_string(ctx.device) + " core " + std::to_string(ctx.core);
  }
  int target_device(int k) const {
    int64_t d = scalar_int(main(k), op(), "device id");
    if (d < 0 || d >= ctx.num_devices())
      fail("device id " + std::to_string(d) + " is out of range: there are " + std::to_string(ctx.num_devices()) + " device(s)");
    return static_cast<int>(d);
  }

  void dma_start() {
    tpu::MemBuffer& src = ref_of(0);
    tpu::MemBuffer& dst = ref_of(1);
    if (src.is_semaphore() || dst.is_semaphore()) fail("cannot copy semaphores");
    tpu::Machine::DmaRequest req;
    req.src = main(0).ref;
    req.src_region = region_of(0);
    req.dst_region = region_of(1);
    req.dst_device = ctx.device;
    req.dst_core = ctx.core;
    req.dst_space = dst.space;
    req.dst_id = dst.id;
    req.dst_name = dst.describe();
    req.dst_sem = semaphore_id(2);
    int src_gc = gc();
    req.src_gc = src_gc;
    if (nmain() == 5) {
      req.src_sem = semaphore_id(3);
      req.dst_device = target_device(4);
    }
    req.dst_gc = in.machine().global_core(req.dst_device, ctx.core);
    req.loc = op().loc;
    req.where = sem_where();
    req.issuer = who();
    if (auto ind = indirect_dma(op())) {
      // The offsets are read when the DMA starts (a read the race detector sees).
      const Val& ov = operand(ind->offsets);
      if (!ov.is_ref() || ov.ref->freed) fail("the offsets of a gather / scatter are not a live Ref");
      const tpu::MemBuffer& offsets = *ov.ref;
      in.machine().on_read(offsets, full_region(offsets.data.shape()), gc(), who(), op().loc);
      req.indexed = ind->is_gather() ? tpu::Machine::DmaRequest::Rows::src : tpu::Machine::DmaRequest::Rows::dst;
      req.add = ind->add;
      req.offsets_name = offsets.describe();
      for (int64_t i = 0; i < offsets.data.size(); ++i) req.rows.push_back(offsets.data.get_int(i));
    }
    if (region_elements(req.src_region) != region_elements(req.dst_region))
      fail("source region " + region_str(req.src_region) + " and destination region " + region_str(req.dst_region) +
           " differ in size");
    CostFigures moved;
    moved.bytes_dma = region_elements(req.src_region) * dtype_bytes(src.data.dtype());
    in.count(ctx, moved);
    in.charge(op().loc, region_elements(req.src_region));
    in.machine().dma_start(req, src_gc);
  }

  void dma_wait() {
    int64_t sem = semaphore_id(0);
    tpu::MemBuffer& b = ref_of(1);
    Region r = region_of(1);
    int64_t bytes = region_elements(r) * dtype_bytes(b.data.dtype());
    in.machine().wait(sem, gc(), bytes, true, sem_where());
  }

  void sem_signal() {
    int64_t sem = semaphore_id(0);
    int64_t inc = scalar_int(main(1), op(), "increment");
    int dev = nmain() >= 3 ? target_device(2) : ctx.device;
    int core = ctx.core;
    if (nmain() >= 4) {
      int64_t c = scalar_int(main(3), op(), "core index");
      if (c < 0 || c >= in.opts().cores)
        fail("core index " + std::to_string(c) + " is out of range: there are " + std::to_string(in.opts().cores) +
             " core(s) per device");
      core = static_cast<int>(c);
    }
    auto& m = in.machine();
    const tpu::VectorClock* clock = nullptr;
    if (in.opts().detect_races) clock = &m.clock(gc());
    m.signal(sem, m.global_core(dev, core), inc, clock);
    if (in.opts().detect_races) m.clock(gc()).tick(gc());
  }

  void sem_wait() {
    int64_t sem = semaphore_id(0);
    int64_t dec = scalar_int(main(1), op(), "decrement");
    in.machine().wait(sem, gc(), dec, false, sem_where());
  }

  void sem_read() {
    int64_t sem = semaphore_id(0);
    int64_t v = in.machine().semaphore(sem).count[gc()];
    set(0, Val{Array::scalar(DType::i32, static_cast<double>(v)), nullptr});
  }

  void barrier_sem() {
    if (!ctx.kernel || ctx.kernel->collective_id < 0)
      fail("needs a pallas_call with a collective_id (the barrier semaphore belongs to a collective kernel)");
    set(0, Val{Array(), in.machine().barrier_semaphore(ctx.device, ctx.kernel->collective_id)});
  }

  // ---- control flow ----
  void cond() {
    CondView v(op());
    const auto& branches = v.branches();
    const Val& idx = operand(0);
    int64_t i = idx.arr.get_int(0);
    if (is_bool(idx.arr.dtype())) i = i != 0;
    i = std::clamp<int64_t>(i, 0, static_cast<int64_t>(branches.size()) - 1);
    outputs(in.eval(*branches[i], operands(1, p.in.size()), ctx));
  }

  void while_loop() {
    WhileView v(op());
    size_t k = static_cast<size_t>(v.first_carry());
    const Body& c = v.cond();
    const Body& b = v.body();
    std::vector<Val> all = operands(0, p.in.size());
    while (true) {
      std::vector<Val> r = in.eval(c, all, ctx);
      if (r.at(0).arr.get_int(0) == 0) break;
      std::vector<Val> carries = in.eval(b, all, ctx);
      for (size_t i = 0; i < carries.size(); ++i) all[k + i] = std::move(carries[i]);
    }
    outputs(std::vector<Val>(all.begin() + static_cast<std::ptrdiff_t>(k), all.end()));
  }

  void scan() {
    ScanView v(op());
    int64_t length = v.length;
    size_t c = static_cast<size_t>(v.num_carries);
    bool reverse = v.reverse;
    const Body& b = v.body();
    std::vector<Val> consts = operands(0, v.first_carry()), carries = operands(v.first_carry(), v.first_x()),
                     xs = operands(v.first_x(), p.in.size());
    std::vector<Array> ys;
    for (size_t j = c; j < op().results.size(); ++j) {
      const Type& t = op().results[j]->type;
      ys.push_back(Array::uninitialized(t.dtype(), t.shape()));
    }
    for (int64_t step = 0; step < length; ++step) {
      int64_t i = reverse ? length - 1 - step : step;
      std::vector<Val> args = consts;
      args.insert(args.end(), carries.begin(), carries.end());
      for (const Val& x : xs) args.push_back(Val{take_index(x.arr, 0, i), nullptr});
      std::vector<Val> r = in.eval(b, std::move(args), ctx);
      for (size_t j = 0; j < c; ++j) carries[j] = std::move(r[j]);
      for (size_t j = 0; j < ys.size(); ++j) put_index(ys[j], 0, i, r[c + j].arr);
    }
    std::vector<Val> out = carries;
    for (Array& y : ys) out.push_back(Val{std::move(y), nullptr});
    outputs(std::move(out));
  }

  void for_loop() {
    ForView v(op());
    const Val& lo = operand(0);
    int64_t a = lo.arr.get_int(0), z = operand(1).arr.get_int(0);
    DType idt = lo.arr.dtype();
    const Body& b = v.body();
    std::vector<Val> consts = operands(ForView::first_const, v.first_carry()), carries = operands(v.first_carry(), p.in.size());
    for (int64_t i = a; i < z; ++i) {
      std::vector<Val> args;
      args.reserve(1 + consts.size() + carries.size());
      args.push_back(Val{Array::scalar(idt, static_cast<double>(i)), nullptr});
      args.insert(args.end(), consts.begin(), consts.end());
      args.insert(args.end(), carries.begin(), carries.end());
      carries = in.eval(b, std::move(args), ctx);
    }
    outputs(std::move(carries));
  }

  void run_scoped() {
    RunScopedView view(op());
    const Body& b = view.body();
    std::vector<Val> args = operands(0, p.in.size());
    std::vector<tpu::BufferRef> scoped;
    auto& m = in.machine();
    for (const Var* v : view.scratch_params()) {
      const Type& t = v->type;
      std::string name = "run_scoped \"" + v->name + "\"";
      if (is_semaphore(t.dtype()) || t.mem_space() == MemSpace::semaphore) {
        args.push_back(Val{Array(), m.allocate_semaphores(ctx.device, ctx.core, t.dtype(), t.shape(), name)});
        continue;
      }
      if (is_hbm(t.mem_space()) && !in.opts().allow_hbm_scoped)
        fail("Cannot allocate HBM in `run_scoped` (the scratch Ref %" + v->name + " is in " +
             std::string(mem_space_name(t.mem_space())) + " memory; pass --allow-hbm-scoped to allow it)");
      tpu::BufferRef buf = m.allocate(ctx.device, ctx.core, t.mem_space(), uninitialized_array(t.dtype(), t.shape(), m.uninit_zero()), name);
      scoped.push_back(buf);
      args.push_back(Val{Array(), buf});
    }
    std::vector<Val> r = in.eval(b, std::move(args), ctx);
    for (auto& buf : scoped) m.free(buf);
    outputs(std::move(r));
  }

  // ---- cores and devices ----
  void core_map() {
    check_sparse_core();
    const auto& names = op().param(keys::mesh_axes);
    const auto& shape = op().param(keys::mesh_shape);
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    const Body& b = *op().param(keys::body);
    std::vector<Val> args = operands(0, p.in.size());
    auto ctx_for = [&](int64_t c) {
      Ctx cc = ctx;
      cc.core = static_cast<int>(c);
      cc.scope = &op();
      cc.mesh.clear();
      int64_t rest = c;
      std::vector<Axis> axes(names.size());
      for (int d = static_cast<int>(names.size()) - 1; d >= 0; --d) {
        axes[d] = Axis{names[d], shape[d], rest % shape[d]};
        rest /= shape[d];
      }
      cc.mesh = axes;
      return cc;
    };
    // The cores start after what this thread did and it continues after
    // everything they did (their DMAs waited for included), as for the cores
    // of a pallas_call.
    std::vector<int> cores_gc;
    for (int64_t c = 0; c < n; ++c) cores_gc.push_back(in.machine().global_core(ctx.device, static_cast<int>(c)));
    if (in.opts().stats) in.opts().stats->count_run(&op());
    in.machine().fork_clocks(gc(), cores_gc);
    std::vector<int> tasks;
    Interp& interp = in;
    for (int64_t c = 1; c < n; ++c) {
      Ctx cc = ctx_for(c);
      tasks.push_back(in.sched().spawn("device " + std::to_string(ctx.device) + " core " + std::to_string(c),
                                       [&interp, &b, args, cc]() mutable { interp.eval(b, args, cc); }));
    }
    Ctx c0 = ctx_for(0);
    in.eval(b, args, c0);
    in.sched().join(tasks);
    in.machine().join_clocks(gc(), cores_gc);
  }

  void pmap() {
    const std::string& name = op().param(keys::axis_name);
    int64_t n = op().param(keys::axis_size);
    const auto& in_axes = op().param(keys::in_axes);
    const auto& out_axes = op().param(keys::out_axes);
    const Body& b = *op().param(keys::body);
    std::vector<Val> all = operands(0, p.in.size());
    auto group = in.device_group(&op(), static_cast<int>(n * ctx.num_devices()));
    std::vector<std::vector<Val>> results(static_cast<size_t>(n));
    auto args_for = [&](int64_t i) {
      std::vector<Val> a;
      for (size_t j = 0; j < all.size(); ++j) {
        if (in_axes[j] < 0) a.push_back(all[j]);
        else a.push_back(Val{take_index(all[j].arr, static_cast<int>(in_axes[j]), i), nullptr});
      }
      return a;
    };
    auto ctx_for = [&](int64_t i) {
      Ctx cc = ctx;
      cc.axes.push_back(Axis{name, n, i});
      cc.device = static_cast<int>(ctx.device * n + i);
      cc.core = 0;
      cc.devices = group;
      return cc;
    };
    std::vector<int> tasks;
    Interp& interp = in;
    for (int64_t i = 1; i < n; ++i) {
      Ctx cc = ctx_for(i);
      std::vector<Val> a = args_for(i);
      std::vector<Val>* slot = &results[static_cast<size_t>(i)];
      tasks.push_back(in.sched().spawn("device " + std::to_string(cc.device) + " core 0",
                                       [&interp, &b, a, cc, slot]() mutable { *slot = interp.eval(b, a, cc); }));
    }
    // Device 0 of this axis runs on the calling task, which a nested pmap's
    // report would otherwise name after the outer device.
    Ctx c0 = ctx_for(0);
    struct Named {
      tpu::Scheduler& s;
      std::string outer;
      ~Named() { s.rename_current(std::move(outer)); }
    } named{in.sched(), in.sched().rename_current("device " + std::to_string(c0.device) + " core 0")};
    results[0] = in.eval(b, args_for(0), c0);
    in.sched().join(tasks);
    std::vector<Val> outs;
    for (size_t j = 0; j < p.out.size(); ++j) {
      const Type& t = op().results[j]->type;
      Array whole = Array::uninitialized(t.dtype(), t.shape());
      for (int64_t i = 0; i < n; ++i) put_index(whole, static_cast<int>(out_axes[j]), i, results[static_cast<size_t>(i)].at(j).arr);
      outs.push_back(Val{whole, nullptr});
    }
    outputs(std::move(outs));
  }
};

namespace {

const RuleTable<ExecRule>& exec_rules() {
  static const RuleTable<ExecRule> table = [] {
    RuleTable<ExecRule> t("interpret");
    t.set("get", &Exec::get);
    t.set("load", &Exec::load);
    t.set("swap", &Exec::plain_swap);
    t.set("store", &Exec::store);
    t.set("addupdate", &Exec::addupdate);
    t.set("program_id", &Exec::program_id);
    t.set("num_programs", &Exec::num_programs);
    t.set("axis_index", &Exec::named_axis);
    t.set("axis_size", &Exec::named_axis);
    t.set("device_id", &Exec::device_id);
    t.set("dma_start", &Exec::dma_start);
    t.set("dma_wait", &Exec::dma_wait);
    t.set("semaphore_signal", &Exec::sem_signal);
    t.set("semaphore_wait", &Exec::sem_wait);
    t.set("semaphore_read", &Exec::sem_read);
    t.set("get_barrier_semaphore", &Exec::barrier_sem);
    t.set("debug_print", &Exec::debug_print);
    t.set("debug_check", &Exec::debug_check);
    t.set("prng_seed", &Exec::prng_seed);
    t.set("prng_random_bits", &Exec::prng_random_bits);
    t.set("delay", &Exec::delay);
    t.set("cond", &Exec::cond);
    t.set("while", &Exec::while_loop);
    t.set("scan", &Exec::scan);
    t.set("for", &Exec::for_loop);
    t.set("run_scoped", &Exec::run_scoped);
    t.set("call", &Exec::call);
    t.set("custom_jvp_call", &Exec::custom_jvp_call);
    t.set("custom_vjp_call", &Exec::custom_vjp_call);
    t.set("custom_lin", &Exec::custom_lin);
    t.set("core_map", &Exec::core_map);
    t.set("pmap", &Exec::pmap);
    t.set("pallas_call", &Exec::pallas_call);
    t.set_default("runs through its array kernel (interpreter.kernels)",
                  [](const Primitive& p) { return array_kernels().find(p) != nullptr; });
    return t;
  }();
  return table;
}
const RuleTableRegistration kRegistered("interpreter", exec_rules);

ExecRule array_rule() { return &Exec::array; }

}  // namespace

bool has_interpret_rule(const Primitive& p) { return exec_rules().find(p) || array_kernels().find(p); }

std::vector<Val> Interp::eval(const Body& b, std::vector<Val> args, Ctx& ctx) {
  const BodyPlan& p = plan(b);
  if (args.size() != p.params.size())
    throw Error(b.loc(), "@" + b.name() + " takes " + std::to_string(p.params.size()) + " argument(s), got " +
                             std::to_string(args.size()));
  std::vector<Val> env(static_cast<size_t>(p.nslots));
  for (size_t i = 0; i < args.size(); ++i) env[p.params[i]] = std::move(args[i]);
  // --stats: the ops of this body, added up here and counted once at its end
  // (index maps compute addresses, not kernel work: not counted).
  bool counting = opts_.stats && !(ctx.kernel && ctx.kernel->in_index_map);
  CostFigures done;
  for (const OpPlan& o : p.ops) {
    if (counting) done += o.cost;
    step(o.op->loc, o.work);
    try {
      Exec{*this, o, env, ctx}.run();
    } catch (const Error& e) {
      if (e.loc().known()) throw;
      throw Error(o.op->loc, o.op->name() + ": " + e.message());
    } catch (const std::bad_alloc&) {
      // Below the memory limit, but the machine has no more.
      throw Error(o.op->loc, o.op->name() + ": out of memory (" + bytes_str(memory_in_use()) +
                                 " of arrays in use; tessera run --max-memory sets the limit checked before allocating)");
    }
    for (int s : o.release) env[s] = Val{};
  }
  if (counting) count(ctx, done);
  std::vector<Val> out;
  out.reserve(p.outs.size());
  for (const Operand& o : p.outs) out.push_back(o.slot < 0 ? o.lit : env[o.slot]);
  return out;
}

void RunStats::add(const Op* scope, const CostFigures& f) {
  std::lock_guard<std::mutex> lock(mu_);
  at(scope).figures += f;
}

void RunStats::count_run(const Op* scope) {
  std::lock_guard<std::mutex> lock(mu_);
  ++at(scope).runs;
}

RunStats::Scope& RunStats::at(const Op* scope) {
  for (Scope& s : scopes_)
    if (s.op == scope) return s;
  scopes_.push_back(Scope{scope, 0, {}});
  return scopes_.back();
}

std::vector<RunStats::Scope> RunStats::scopes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return scopes_;
}

CostFigures RunStats::total() const {
  std::lock_guard<std::mutex> lock(mu_);
  CostFigures t;
  for (const Scope& s : scopes_) t += s.figures;
  return t;
}

}  // namespace tessera::interp
