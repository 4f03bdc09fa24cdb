// The walk behind compute_cost: every op of a function, kernels once per grid
// point, loops once per trip, with the scalar values known at that point
// (program ids, loop indices, literals and what pure ops compute from them,
// by the interpreter's own array kernels) deciding trip counts and conds.
#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

#include "analysis/cost/cost.h"
#include "analysis/cost/walk.h"
#include "analysis/prove/prove.h"
#include "ir/control_views.h"
#include "ir/grid_mapping.h"
#include "runtime/kernels.h"

namespace tessera::cost {
namespace {

using interp::Array;
using Known = std::optional<Array>;

// Pure ops are evaluated only for results this small: scalars and indices,
// never a kernel's data.
constexpr int64_t kMaxKnownElements = 64;

// What a walk adds up, per kernel op (null: outside any kernel).
struct Entry {
  CostFigures figures;
  int64_t runs = 0;
  bool exact = true;
  std::vector<std::string> notes;
  void note(const std::string& n) {
    exact = false;
    if (std::find(notes.begin(), notes.end(), n) == notes.end()) notes.push_back(n);
  }
};
using Tally = std::map<const Op*, Entry>;

void add_into(Tally& to, const Tally& from, int64_t times = 1) {
  for (const auto& [op, e] : from) {
    Entry& t = to[op];
    CostFigures f = e.figures;
    t.figures.flops += f.flops * times;
    t.figures.transcendentals += f.transcendentals * times;
    t.figures.bytes_in += f.bytes_in * times;
    t.figures.bytes_out += f.bytes_out * times;
    t.figures.bytes_dma += f.bytes_dma * times;
    t.runs += e.runs * times;
    for (const std::string& n : e.notes) t.note(n);
    t.exact = t.exact && e.exact;
  }
}

// Component-wise maximum: an upper bound of whichever branch runs.
void max_into(Tally& to, const Tally& from) {
  for (const auto& [op, e] : from) {
    Entry& t = to[op];
    t.figures.flops = std::max(t.figures.flops, e.figures.flops);
    t.figures.transcendentals = std::max(t.figures.transcendentals, e.figures.transcendentals);
    t.figures.bytes_in = std::max(t.figures.bytes_in, e.figures.bytes_in);
    t.figures.bytes_out = std::max(t.figures.bytes_out, e.figures.bytes_out);
    t.figures.bytes_dma = std::max(t.figures.bytes_dma, e.figures.bytes_dma);
    t.runs = std::max(t.runs, e.runs);
    for (const std::string& n : e.notes) t.note(n);
    t.exact = t.exact && e.exact;
  }
}

// Thrown by a walk without the grid point when something it cannot decide
// (a cond, a trip count) might depend on the point: the kernel is then walked
// at every point.
struct NeedsPoint {};

// A core_map or pmap axis around a body: its name, this core's (device's) index and its size.
struct NamedAxis {
  std::string name;
  int64_t index = 0, size = 1;
};

// Where a body runs: the grid point of its kernel (if known), named axes.
struct Env {
  bool probing = false;  // walking a kernel without its grid point
  const Op* scope = nullptr;
  const std::vector<int64_t>* grid = nullptr;  // the kernel's grid
  const std::vector<int64_t>* point = nullptr;  // null: not known
  const std::vector<int>* kernel_axes = nullptr;
  const std::vector<std::string>* grid_names = nullptr;
  std::vector<NamedAxis> axes;  // core_map and pmap axes, outermost first
  int64_t device = 0;
};

class Walker;
using Rule = void (Walker::*)(const Op&, std::vector<Known>&);

class Walker {
 public:
  Walker(const Module& m, const CostOptions& opts, DynamicSizes& sizes) : m_(m), opts_(opts), sizes_(sizes) {}

  std::vector<Known> walk(const Body& b, std::vector<Known> args, const Env& env, Tally& t);

  // Kernels in the order first reached, with their names.
  std::vector<const Op*> order;

 private:
  friend const RuleTable<Rule>& walk_rules();
  Known value(const Value& v) const;
  Known known_int(int64_t v, DType d = DType::i32) const { return Array::scalar(d, static_cast<double>(v)); }
  std::vector<Known> values(const Op& op, size_t from, size_t to) const {
    std::vector<Known> r;
    for (size_t k = from; k < to; ++k) r.push_back(value(op.operands[k]));
    return r;
  }
  // One step of the walk: an op, a loop trip, a core or device (so that an
  // empty body repeated 2^31 times stops too).
  void tick(const Op& op) {
    if (++walked_ > opts_.max_walk_ops)
      throw Error(op.loc, "cost: more than " + std::to_string(opts_.max_walk_ops) +
                              " steps to walk (ops, per grid point, loop trip, core and device)");
  }
  static std::optional<int64_t> int_of(const Known& k) {
    if (!k || k->size() != 1) return std::nullopt;
    return k->get_int(0);
  }
  void count(const CostFigures& f) { (*tally_)[env_->scope].figures += f; }
  void reached(const Op& op) {
    if (std::find(order.begin(), order.end(), &op) == order.end()) order.push_back(&op);
  }

  void pure(const Op& op, std::vector<Known>& out);
  void program_id(const Op& op, std::vector<Known>& out);
  void num_programs(const Op& op, std::vector<Known>& out);
  void axis_index(const Op& op, std::vector<Known>& out);
  void device_id(const Op& op, std::vector<Known>& out);
  void dma_start(const Op& op, std::vector<Known>& out);
  void cond(const Op& op, std::vector<Known>& out);
  void for_loop(const Op& op, std::vector<Known>& out);
  void while_loop(const Op& op, std::vector<Known>& out);
  void scan(const Op& op, std::vector<Known>& out);
  void run_scoped(const Op& op, std::vector<Known>& out);
  void call(const Op& op, std::vector<Known>& out);
  void custom_jvp_call(const Op& op, std::vector<Known>& out);
  void core_map(const Op& op, std::vector<Known>& out);
  void pmap(const Op& op, std::vector<Known>& out);
  void pallas_call(const Op& op, std::vector<Known>& out);
  // The kernel axis program_id / num_programs[axis=a] means.
  int grid_axis(const Op& op) const;

  const Module& m_;
  const CostOptions& opts_;
  DynamicSizes& sizes_;
  int64_t walked_ = 0;
  // The walk in progress (set by walk()).
  std::unordered_map<const Var*, Array>* known_ = nullptr;
  const Env* env_ = nullptr;
  Tally* tally_ = nullptr;
};

const RuleTable<Rule>& walk_rules() {
  static const RuleTable<Rule> table = [] {
    RuleTable<Rule> t("cost");
    t.set_default("costed by cost.op; its results known where its array kernel computes them from known values");
    t.set("program_id", &Walker::program_id);
    t.set("num_programs", &Walker::num_programs);
    t.set("axis_index", &Walker::axis_index);
    t.set("axis_size", &Walker::axis_index);
    t.set("device_id", &Walker::device_id);
    t.set("dma_start", &Walker::dma_start);
    t.set("cond", &Walker::cond);
    t.set("for", &Walker::for_loop);
    t.set("while", &Walker::while_loop);
    t.set("scan", &Walker::scan);
    t.set("run_scoped", &Walker::run_scoped);
    t.set("call", &Walker::call);
    t.set("custom_jvp_call", &Walker::custom_jvp_call);
    t.set("custom_vjp_call", &Walker::custom_jvp_call);  // the same: its `call` runs
    t.set("core_map", &Walker::core_map);
    t.set("pmap", &Walker::pmap);
    t.set("pallas_call", &Walker::pallas_call);
    return t;
  }();
  return table;
}
const RuleTableRegistration kRegistered("cost.walker", walk_rules);

Known Walker::value(const Value& v) const {
  if (v.is_literal()) {
    const Literal& l = v.literal();
    return Array::scalar(l.dtype, is_float(l.dtype) ? l.f : static_cast<double>(l.i));
  }
  auto it = known_->find(v.var());
  if (it == known_->end()) return std::nullopt;
  return it->second;
}

std::vector<Known> Walker::walk(const Body& b, std::vector<Known> args, const Env& env, Tally& t) {
  std::unordered_map<const Var*, Array> known;
  for (size_t i = 0; i < args.size() && i < b.params().size(); ++i)
    if (args[i]) known.emplace(b.params()[i], std::move(*args[i]));
  auto* saved_known = known_;
  const Env* saved_env = env_;
  Tally* saved_tally = tally_;
  known_ = &known;
  env_ = &env;
  tally_ = &t;
  for (const Op& op : b.ops()) {
    tick(op);
    t[env.scope].figures += op_cost(op);
    std::vector<Known> out(op.results.size());
    const Rule* rule = walk_rules().find(*op.prim);
    (this->*(rule ? *rule : &Walker::pure))(op, out);
    // Restore what a nested walk changed.
    known_ = &known;
    env_ = &env;
    tally_ = &t;
    for (size_t i = 0; i < out.size(); ++i)
      if (out[i]) known[op.results[i]] = std::move(*out[i]);
  }
  std::vector<Known> outs;
  for (const Value& v : b.outputs()) outs.push_back(value(v));
  known_ = saved_known;
  env_ = saved_env;
  tally_ = saved_tally;
  return outs;
}

// A pure op whose operands are known small values: the interpreter's kernel computes it.
void Walker::pure(const Op& op, std::vector<Known>& out) {
  const interp::Kernel* kernel = interp::array_kernels().find(*op.prim);
  if (!kernel) return;
  for (const Var* r : op.results)
    if (r->type.is_ref() || num_elements(r->type.shape()) > kMaxKnownElements) return;
  std::vector<Array> args;
  for (const Value& v : op.operands) {
    Known k = value(v);
    if (!k) return;
    args.push_back(std::move(*k));
  }
  try {
    std::vector<Array> r = (*kernel)(op, args);
    for (size_t i = 0; i < r.size() && i < out.size(); ++i) out[i] = std::move(r[i]);
  } catch (const Error&) {
    // Left unknown: the interpreter reports it when it runs.
  }
}

int Walker::grid_axis(const Op& op) const {
  int64_t axis = op.param(keys::axis);
  if (!env_->kernel_axes || axis < 0 || axis >= static_cast<int64_t>(env_->kernel_axes->size())) return -1;
  return (*env_->kernel_axes)[static_cast<size_t>(axis)];
}

void Walker::program_id(const Op& op, std::vector<Known>& out) {
  int a = grid_axis(op);
  if (a >= 0 && env_->point) out[0] = known_int((*env_->point)[static_cast<size_t>(a)]);
}

void Walker::num_programs(const Op& op, std::vector<Known>& out) {
  int a = grid_axis(op);
  if (a >= 0 && env_->grid) out[0] = known_int((*env_->grid)[static_cast<size_t>(a)]);
}

// axis_index / axis_size: of a grid axis name, the point's index or the
// grid's size; of a core_map or pmap axis, the innermost one of that name.
void Walker::axis_index(const Op& op, std::vector<Known>& out) {
  const std::string& name = op.param(keys::axis_name);
  bool size = op.name() == "axis_size";
  if (env_->grid_names) {
    const auto& names = *env_->grid_names;
    auto it = std::find(names.begin(), names.end(), name);
    if (it != names.end()) {
      const std::vector<int64_t>* at = size ? env_->grid : env_->point;
      if (at) out[0] = known_int((*at)[static_cast<size_t>(it - names.begin())]);
      return;
    }
  }
  for (auto it = env_->axes.rbegin(); it != env_->axes.rend(); ++it)
    if (it->name == name) {
      out[0] = known_int(size ? it->size : it->index);
      return;
    }
}

void Walker::device_id(const Op&, std::vector<Known>& out) { out[0] = known_int(env_->device); }

// The bytes of the source region (main operand 0 with its indexer).
void Walker::dma_start(const Op& op, std::vector<Known>&) {
  int k = op.main_operands().at(0);
  const Type& ref = op.operands[static_cast<size_t>(k)].type();
  const Indexer* ix = op.indexer_for(k);
  int64_t elements = num_elements(ref.shape());
  if (ix) {
    Shape s = indexed_shape(*ix, ref.shape());
    elements = num_elements(s);
    if (has_dynamic_size(*ix)) {
      elements = 1;
      for (size_t d = 0; d < ix->entries.size() && d < ref.shape().size(); ++d) {
        const IndexEntry& e = ix->entries[d];
        int64_t n = ref.shape()[d];
        if (e.kind == IndexEntry::Point) n = 1;
        else if (e.kind == IndexEntry::Slice || e.kind == IndexEntry::Indirect) n = e.size;
        if (e.has_dynamic_size()) {
          std::optional<int64_t> v = int_of(value(op.operands[static_cast<size_t>(e.dyn_size)]));
          if (!v && env_->probing) throw NeedsPoint{};
          if (!v) throw Error(op.loc, "cost: the size of this DMA depends on data (a dynamic slice size)");
          n = *v;
        }
        elements *= n;
      }
    }
  }
  CostFigures f;
  f.bytes_dma = elements * dtype_bytes(ref.dtype());
  count(f);
}

void Walker::cond(const Op& op, std::vector<Known>& out) {
  CondView v(op);
  const auto& branches = v.branches();
  std::vector<Known> args = values(op, 1, op.operands.size());
  Known index = value(v.index());
  if (std::optional<int64_t> i = int_of(index)) {
    int64_t n = static_cast<int64_t>(branches.size()) - 1;
    int64_t pick = is_bool(index->dtype()) ? (*i != 0) : std::clamp<int64_t>(*i, 0, n);
    out = walk(*branches[static_cast<size_t>(pick)], args, *env_, *tally_);
    out.resize(op.results.size());
    return;
  }
  if (env_->probing) throw NeedsPoint{};
  Tally most;
  for (const BodyPtr& b : branches) {
    Tally one;
    walk(*b, args, *env_, one);
    max_into(most, one);
  }
  most[env_->scope].note(op.loc.str() + ": cond on a value known only at run time: its most costly branch counted");
  add_into(*tally_, most);
}

void Walker::for_loop(const Op& op, std::vector<Known>& out) {
  ForView v(op);
  std::optional<int64_t> lo = int_of(value(v.lo())), hi = int_of(value(v.hi()));
  if ((!lo || !hi) && env_->probing) throw NeedsPoint{};
  if (!lo || !hi) throw Error(op.loc, "cost: the trip count of this for loop depends on data");
  DType idt = v.lo().type().dtype();
  std::vector<Known> consts = values(op, ForView::first_const, static_cast<size_t>(v.first_carry()));
  std::vector<Known> carries = values(op, static_cast<size_t>(v.first_carry()), op.operands.size());
  for (int64_t i = *lo; i < *hi; ++i) {
    tick(op);
    std::vector<Known> args{known_int(i, idt)};
    args.insert(args.end(), consts.begin(), consts.end());
    args.insert(args.end(), carries.begin(), carries.end());
    carries = walk(v.body(), std::move(args), *env_, *tally_);
  }
  carries.resize(op.results.size());
  out = std::move(carries);
}

void Walker::while_loop(const Op& op, std::vector<Known>& out) {
  WhileView v(op);
  size_t k = static_cast<size_t>(v.first_carry());
  std::vector<Known> all = values(op, 0, op.operands.size());
  while (true) {
    tick(op);
    std::vector<Known> r = walk(v.cond(), all, *env_, *tally_);
    std::optional<int64_t> go = r.empty() ? std::nullopt : int_of(r[0]);
    if (!go && env_->probing) throw NeedsPoint{};
    if (!go) throw Error(op.loc, "cost: the trip count of this while loop depends on data");
    if (*go == 0) break;
    std::vector<Known> carries = walk(v.body(), all, *env_, *tally_);
    for (size_t i = 0; i < carries.size() && k + i < all.size(); ++i) all[k + i] = std::move(carries[i]);
  }
  out.assign(all.begin() + static_cast<std::ptrdiff_t>(k), all.end());
  out.resize(op.results.size());
}

void Walker::scan(const Op& op, std::vector<Known>& out) {
  ScanView v(op);
  std::vector<Known> consts = values(op, 0, static_cast<size_t>(v.first_carry()));
  std::vector<Known> carries = values(op, static_cast<size_t>(v.first_carry()), static_cast<size_t>(v.first_x()));
  size_t c = carries.size();
  for (int64_t step = 0; step < v.length; ++step) {
    tick(op);
    std::vector<Known> args = consts;
    args.insert(args.end(), carries.begin(), carries.end());
    args.resize(args.size() + static_cast<size_t>(v.num_xs));  // the slices of xs: data
    std::vector<Known> r = walk(v.body(), std::move(args), *env_, *tally_);
    r.resize(std::max(r.size(), c));
    carries.assign(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(c));
  }
  carries.resize(op.results.size());
  out = std::move(carries);
}

void Walker::run_scoped(const Op& op, std::vector<Known>& out) {
  RunScopedView v(op);
  std::vector<Known> args = values(op, 0, op.operands.size());
  args.resize(v.body().params().size());
  out = walk(v.body(), std::move(args), *env_, *tally_);
  out.resize(op.results.size());
}

void Walker::call(const Op& op, std::vector<Known>& out) {
  out = walk(*op.param(keys::callee), values(op, 0, op.operands.size()), *env_, *tally_);
  out.resize(op.results.size());
}

void Walker::custom_jvp_call(const Op& op, std::vector<Known>& out) {
  out = walk(*op.param(keys::call), values(op, 0, op.operands.size()), *env_, *tally_);
  out.resize(op.results.size());
}

// The body once per core of the mesh, axis_index naming the core.
void Walker::core_map(const Op& op, std::vector<Known>&) {
  reached(op);
  const auto& names = op.param(keys::mesh_axes);
  const auto& shape = op.param(keys::mesh_shape);
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<Known> args = values(op, 0, op.operands.size());
  Tally& t = *tally_;
  const Env& outer = *env_;
  t[&op].runs += 1;
  for (int64_t c = 0; c < n; ++c) {
    tick(op);
    Env env = outer;
    env.scope = &op;
    int64_t rest = c;
    std::vector<NamedAxis> axes(names.size());
    for (int d = static_cast<int>(names.size()) - 1; d >= 0; --d) {
      axes[static_cast<size_t>(d)] = {names[static_cast<size_t>(d)], rest % shape[static_cast<size_t>(d)], shape[static_cast<size_t>(d)]};
      rest /= shape[static_cast<size_t>(d)];
    }
    env.axes.insert(env.axes.end(), axes.begin(), axes.end());
    walk(*op.param(keys::body), args, env, t);
  }
}

// The body once per device, axis_index and device_id naming it.
void Walker::pmap(const Op& op, std::vector<Known>&) {
  const std::string& name = op.param(keys::axis_name);
  int64_t n = op.param(keys::axis_size);
  const auto& in_axes = op.param(keys::in_axes);
  std::vector<Known> all = values(op, 0, op.operands.size());
  const Env& outer = *env_;
  Tally& t = *tally_;
  for (int64_t i = 0; i < n; ++i) {
    tick(op);
    Env env = outer;
    env.axes.push_back({name, i, n});
    env.device = outer.device * n + i;
    std::vector<Known> args = all;
    for (size_t j = 0; j < args.size() && j < in_axes.size(); ++j)
      if (in_axes[j] >= 0) args[j].reset();  // a slice of data
    walk(*op.param(keys::body), std::move(args), env, t);
  }
}

void Walker::pallas_call(const Op& op, std::vector<Known>&) {
  reached(op);
  GridMapping g = grid_mapping(op);
  std::vector<int64_t> grid = g.grid;
  int dyn = 0;
  for (size_t a = 0; a < grid.size(); ++a) {
    if (grid[a] >= 0) continue;
    const Value& operand = op.operands[static_cast<size_t>(dyn++)];
    std::optional<int64_t> size = int_of(value(operand));
    if (!size) {
      if (!operand.is_var())
        throw Error(op.loc, "cost: grid axis " + std::to_string(a) + " has a size known only at run time");
      size = sizes_.size_of(operand.var());
    }
    grid[a] = *size;
  }
  int64_t points = 1;
  for (int64_t s : grid) {
    if (s < 0 || (s > 0 && points > kMaxGridPoints / s))
      throw Error(op.loc, "cost: grids of more than " + std::to_string(kMaxGridPoints) + " points are not supported");
    points *= s;
  }
  std::vector<Array> prefetch;
  if (g.num_scalar_prefetch() > 0) {
    if (!opts_.prefetch) throw Error(op.loc, "cost: the values of this pallas_call's scalar-prefetch operands are needed");
    prefetch = opts_.prefetch(op);
  }
  Tally& outer_tally = *tally_;
  const Env& outer = *env_;
  Entry& entry = outer_tally[&op];
  entry.runs += 1;
  entry.figures += block_copy_bytes(m_, op, grid, prefetch, opts_.index_maps);

  std::vector<int> kernel_axes = g.kernel_axes();
  Env env = outer;
  env.scope = &op;
  env.grid = &grid;
  env.kernel_axes = &kernel_axes;
  env.grid_names = &g.grid_names;
  std::vector<Known> args(g.kernel->params().size());  // Refs: nothing known
  // First without the grid point: when nothing depends on it, every point costs the same.
  auto* known = known_;
  try {
    Tally any;
    env.point = nullptr;
    env.probing = true;
    walk(*g.kernel, args, env, any);
    add_into(outer_tally, any, points);
    return;
  } catch (const NeedsPoint&) {
    known_ = known;
    env_ = &outer;
    tally_ = &outer_tally;
  }
  std::vector<int64_t> point(grid.size(), 0);
  env.point = &point;
  env.probing = false;
  Tally all;
  for (int64_t n = 0; n < points; ++n) {
    tick(op);
    int64_t rest = n;
    for (int d = static_cast<int>(grid.size()) - 1; d >= 0; --d) {
      point[static_cast<size_t>(d)] = rest % grid[static_cast<size_t>(d)];
      rest /= grid[static_cast<size_t>(d)];
    }
    walk(*g.kernel, args, env, all);
  }
  add_into(outer_tally, all);
}

KernelCost kernel_cost(const Op* op, const Entry& e) {
  KernelCost k;
  k.op = op;
  k.runs = e.runs;
  k.figures = e.figures;
  k.exact = e.exact;
  k.notes = e.notes;
  if (!op) return k;
  k.name = cost_scope_name(*op);
  if (op->name() == "pallas_call") {
    k.call = prove::call_name(*op);
    k.grid = op->param(keys::grid);
  } else {
    k.call = op->name();
  }
  return k;
}

}  // namespace

CostReport walk_cost(const Module& m, const Body& f, const CostOptions& opts, DynamicSizes& sizes) {
  CostReport r;
  r.function = f.name();
  Walker w(m, opts, sizes);
  Tally t;
  Env env;
  std::vector<Known> args(f.params().size());
  w.walk(f, std::move(args), env, t);
  r.outside = kernel_cost(nullptr, t[nullptr]);
  r.outside.name = "outside kernels";
  for (const Op* op : w.order) r.kernels.push_back(kernel_cost(op, t[op]));
  return r;
}

CostFigures CostReport::total() const {
  CostFigures t = outside.figures;
  for (const KernelCost& k : kernels) t += k.figures;
  return t;
}

bool CostReport::exact() const {
  bool e = outside.exact;
  for (const KernelCost& k : kernels) e = e && k.exact;
  return e;
}

}  // namespace tessera::cost
