// The transpose rule of pallas_call: the transpose of a kernel is a kernel.
//
// JAX has none ("transposition rules are not implemented for pallas_call");
// this one transposes the tangent kernel that jvp + linearize produce. Its
// residual inputs (primal blocks) stay inputs with their block mappings; its
// tangent inputs become cotangent *outputs* and its tangent outputs cotangent
// *inputs*, on the same blocks. The kernel is `transpose_body` of the tangent
// kernel, linear Refs transposed in place (a `get` of a tangent input block
// becomes an `addupdate` into its cotangent block).
//
// The grid is walked in reverse program order and reordered so that each
// cotangent output block is revisited consecutively (transpose_grid.h): the
// new kernel zeroes it at its first visit and accumulates. Linear scratch (the
// tangent twin of a carry) gets a cotangent twin, zeroed at the first step.
// Cotangent outputs that need different grid orders get one call each;
// outputs that cannot be accumulated in place get partial cotangents, one
// slice per revisit, summed after the call; an output whose blocks do not
// cover its array starts from zeros passed in and aliased to it.
//
// A tangent computed from state the forward kernel carries from step to
// step in non-linear scratch (flash attention's running max) gets that state
// from a checkpoint call (transpose_checkpoint.h). A kernel that moves data
// itself (DMAs, transpose_dma.cpp) first loses the primal pipeline no tangent
// needs (without_primal_movement). Not supported (located errors): dynamic
// grids, input_output_aliases of VMEM outputs to linear inputs, SparseCore
// kernels, primal DMAs in loops that a tangent needs, and tangents computed
// from non-linear state carried in output blocks.
#include <algorithm>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "ir/builder.h"
#include "ir/clone.h"
#include "ir/control_views.h"
#include "ir/effects.h"
#include "ir/grid_mapping.h"
#include "ir/indirect_dma.h"
#include "transforms/dma_mirror.h"
#include "transforms/kernel_split.h"
#include "transforms/pass.h"
#include "transforms/transpose.h"
#include "transforms/transpose_checkpoint.h"
#include "transforms/transpose_grid.h"
#include "transforms/var_table.h"

namespace tessera::transpose {
namespace {

using Vals = std::vector<Value>;

std::function<void(const std::string&)>& note_sink() {
  static std::function<void(const std::string&)> sink;
  return sink;
}

bool reads_state(const Op& op) {
  if (op.prim->family != Family::state) return false;  // the common case, without comparing names
  const std::string& n = op.prim->name;
  return n == "get" || n == "swap" || n == "load";
}

bool reads_contents(const Body& body, const Var* ref);

// Does `op` read the contents of Ref `ref` (a get / load, or a swap whose
// old value is in `used`; none when null)? A `cond` or `run_scoped` hands
// its operands to its bodies' params (fed_bodies); any other op with bodies
// that takes the Ref counts as reading it.
bool op_reads(const Op& op, const Var* ref, const VarSet* used) {
  const std::string& n = op.prim->name;
  for (size_t i = 0; i < op.operands.size(); ++i) {
    if (!op.operands[i].is_var() || op.operands[i].var() != ref) continue;
    if (n == "get" || n == "load") return true;
    if (n == "swap" && i == 0 && !op.results.empty() && used && used->contains(op.results[0])) return true;
    FedBodies fed = fed_bodies(op);
    if (!fed.bodies.empty() && i >= fed.first_operand) {
      for (const BodyPtr& body : fed.bodies)
        if (reads_contents(*body, body->params().at(i - fed.first_operand))) return true;
    } else if (!op.nested_bodies().empty()) {
      return true;
    }
  }
  return false;
}

bool reads_contents(const Body& body, const Var* ref) {
  VarSet used(body.ops().size() + 8);
  for (const Op& op : body.ops())
    for (const Value& v : op.operands)
      if (v.is_var()) used.insert(v.var());
  for (const Value& v : body.outputs())
    if (v.is_var()) used.insert(v.var());
  for (const Op& op : body.ops())
    if (op_reads(op, ref, &used)) return true;
  return false;
}

// A linear op of the tangent kernel must not use a value read from
// non-linear Refs that carry state across grid steps (scratch, output
// blocks): the reversed grid sees that state in the wrong order. Data flow at
// the top level; a linear op with bodies must not read such a Ref inside
// them (reads_contents). Returns the first linear op that does, and the param
// it read.
struct CarriedRead {
  const Op* op = nullptr;
  int param = -1;
};

std::optional<CarriedRead> find_carried_residual(const Body& k, const std::vector<bool>& linear_param,
                                                 const std::vector<char>& carried) {
  size_t n = k.ops().size() + k.params().size() + 8;
  VarTable<int> stale(n);  // value -> the param it was read from
  VarSet lin(n);
  for (size_t p = 0; p < k.params().size(); ++p) {
    if (linear_param[p]) lin.insert(k.params()[p]);
  }
  for (const Op& op : k.ops()) {
    bool is_linear = false;
    int from = -1;
    for (const Value& v : op.operands) {
      if (!v.is_var()) continue;
      is_linear |= lin.contains(v.var());
      if (const int* p = stale.find(v.var())) from = *p;
    }
    if (!is_linear && reads_state(op) && !op.operands.empty() && op.operands[0].is_var())
      for (size_t p = 0; p < k.params().size(); ++p)
        if (carried[p] && k.params()[p] == op.operands[0].var()) from = static_cast<int>(p);
    if (is_linear && from < 0 && !op.nested_bodies().empty())
      for (size_t p = 0; p < k.params().size() && from < 0; ++p)
        if (carried[p] && op_reads(op, k.params()[p], nullptr)) from = static_cast<int>(p);
    if (is_linear) {
      if (from >= 0) return CarriedRead{&op, from};
      for (const Var* r : op.results) lin.insert(r);
      continue;
    }
    if (from >= 0)
      for (const Var* r : op.results) stale[r] = from;
  }
  return std::nullopt;
}

// Does the kernel read a semaphore's count (semaphore_read)? Otherwise a
// semaphore carries no value a tangent could depend on: only the order of
// the DMAs and signals, which the transposed DMAs keep for themselves
// (transpose_dma.cpp).
bool reads_semaphore_count(const Body& body) {
  for (const Op& op : body.ops()) {
    if (op.prim->name == "semaphore_read") return true;
    for (const BodyPtr& inner : op.nested_bodies())
      if (reads_semaphore_count(*inner)) return true;
  }
  return false;
}

// Does some op of `body` (or a body nested in it) write Ref `ref`?
bool writes_ref(const Body& body, const Var* ref) {
  for (const Op& op : body.ops())
    for (auto [operand, bits] : op_effects(op).on_operand)
      if ((bits & (kWrite | kAccum)) && op.operands[operand].is_var() && op.operands[operand].var() == ref) return true;
  return false;
}

// May consecutive grid steps see the same block of mapping m? Not when its
// index map is a projection that reads every axis of more than one step.
bool block_may_stay(const GridMapping& g, int m) {
  AxisUse use = index_map_axis_use(g.spec(m), g.dims(m), g.grid);
  if (!use.projection) return true;
  for (int a = 0; a < g.grid_rank(); ++a)
    if (!use.reads[a] && g.grid[a] != 1) return true;
  return false;
}

Error carried_residual_error(const Body& k, const GridMapping& g, const CarriedRead& r) {
  int s = r.param - g.scratch_param(0);
  if (s >= 0 && is_semaphore(k.params()[r.param]->type.dtype()))
    return Error(r.op->loc, "transpose: pallas_call kernel @" + k.name() + ": this `" + r.op->name() +
                                "` of a tangent uses semaphore scratch " + std::to_string(s) +
                                ": DMAs and semaphores between grid steps have no transpose yet (not supported)");
  bool input = false;
  for (int i = 0; i < g.num_inputs(); ++i) input |= g.input_param(i) == r.param;
  std::string what = s >= 0   ? "scratch " + std::to_string(s)
                     : input ? "input block %" + k.params()[r.param]->name + " (which the kernel writes)"
                             : "output block %" + k.params()[r.param]->name;
  return Error(r.op->loc, "transpose: pallas_call kernel @" + k.name() + ": this `" + r.op->name() +
                              "` of a tangent uses a value read from " + what +
                              ", state the forward kernel carries from grid step to step; the transposed kernel walks "
                              "the grid backwards and cannot recompute it (not supported)");
}

// Does any op of `body` take `v` (nested bodies get it as an operand)?
bool touches(const Body& body, const Var* v) {
  for (const Op& op : body.ops())
    for (const Value& x : op.operands)
      if (x.is_var() && x.var() == v) return true;
  return false;
}

// Which of `body`'s top-level ops to keep: all but the writes into the Refs
// marked `dropped` (carried non-linear output and scratch blocks, cotangents
// another call computes) and the ops only they needed: the transposed kernel need not recompute the primal results
// (check_no_carried_residuals made sure no tangent reads them), and left in,
// they would accumulate across a grid order they were not written for.
std::vector<char> live_ops(const Body& body, const std::vector<char>& dropped) {
  std::unordered_set<const Var*> refs;
  VarSet live(body.ops().size() + body.params().size() + 8);
  for (size_t p = 0; p < body.params().size(); ++p)
    if (dropped[p]) refs.insert(body.params()[p]);
  const std::vector<Op>& ops = body.ops();
  std::vector<char> keep(ops.size(), 0);
  for (size_t k = ops.size(); k-- > 0;) {
    const Op& op = ops[k];
    const std::string& n = op.prim->name;
    bool needed = false;
    for (const Var* r : op.results) needed = needed || live.count(r);
    bool drop = op.prim->family == Family::state && (n == "swap" || n == "addupdate") && op.operands[0].is_var() &&
                refs.count(op.operands[0].var());
    if (!needed && (drop || !has_side_effects(op))) continue;
    keep[k] = 1;
    for (const Value& v : op.operands)
      if (v.is_var()) live.insert(v.var());
  }
  return keep;
}

// The grid axes a `cond` predicate requires at their first step (0) or at
// their last (n - 1, a literal or `num_programs - 1`) for it to hold, when it
// is such an `eq` of a program id or an `and` of them; nullopt otherwise.
enum class Step { first, last };

std::optional<std::vector<int>> visit_axes(const Value& pred, const std::unordered_map<const Var*, const Op*>& def,
                                           const GridMapping& g, Step step) {
  if (!pred.is_var()) return std::nullopt;
  auto it = def.find(pred.var());
  if (it == def.end()) return std::nullopt;
  const Op& op = *it->second;
  if (op.prim->name == "and") {
    auto x = visit_axes(op.operands[0], def, g, step), y = visit_axes(op.operands[1], def, g, step);
    if (!x || !y) return std::nullopt;
    x->insert(x->end(), y->begin(), y->end());
    return x;
  }
  if (op.prim->name != "eq") return std::nullopt;
  std::vector<int> axes = g.kernel_axes();
  auto axis_of = [&](const Value& v, const char* prim) -> int {  // the grid axis of a program_id / num_programs
    if (!v.is_var()) return -1;
    auto d = def.find(v.var());
    if (d == def.end() || d->second->prim->name != prim) return -1;
    int64_t ka = d->second->param(keys::axis);
    return ka >= 0 && ka < static_cast<int64_t>(axes.size()) ? axes[static_cast<size_t>(ka)] : -1;
  };
  auto is_last = [&](const Value& v, int a) {
    if (v.is_literal()) return v.literal().as_int() == g.grid[a] - 1;
    auto d = def.find(v.var());
    if (d == def.end() || d->second->prim->name != "sub") return false;
    const Op& sub = *d->second;
    return axis_of(sub.operands[0], "num_programs") == a && sub.operands[1].is_literal() &&
           sub.operands[1].literal().as_int() == 1;
  };
  for (int side = 0; side < 2; ++side) {
    const Value &id = op.operands[side], &bound = op.operands[1 - side];
    int a = axis_of(id, "program_id");
    if (a < 0) continue;
    if (step == Step::first ? bound.is_literal() && bound.literal().as_int() == 0 : is_last(bound, a))
      return std::vector<int>{a};
  }
  return std::nullopt;
}

// Does `body` access Ref `ref` other than by `addupdate` (whose transpose
// only reads the cotangent)? Any op with bodies taking it counts.
bool accesses_besides_accumulating(const Body& body, const Var* ref) {
  for (const Op& op : body.ops())
    for (size_t i = 0; i < op.operands.size(); ++i) {
      if (!op.operands[i].is_var() || op.operands[i].var() != ref) continue;
      if (op.prim->name == "addupdate" && i == 0) continue;
      FedBodies fed = fed_bodies(op);
      if (!fed.bodies.empty() && i >= fed.first_operand) {
        for (const BodyPtr& inner : fed.bodies)
          if (accesses_besides_accumulating(*inner, inner->params().at(i - fed.first_operand))) return true;
        continue;
      }
      return true;
    }
  return false;
}

// How the tangent kernel touches output o's block, op by op at its top
// level: accumulates into it (`addupdate`, or a `cond` / `run_scoped` whose
// bodies only do that), touches it only inside a `cond` that runs at the
// block's first forward visit (matmul's zeroing at k == 0) or at its last
// (flash attention's write at the last kv step), or otherwise (reads or
// overwrites it).
enum class BlockAccess { accumulate, first_visit, last_visit, other };

std::vector<BlockAccess> output_accesses(const Body& k, const GridMapping& g, int o) {
  const Var* ref = k.params()[g.output_param(o)];
  AxisUse use = index_map_axis_use(g.out_specs[o], g.dims(g.num_inputs() + o), g.grid);
  std::vector<int> ignored;
  for (int a = 0; a < g.grid_rank(); ++a)
    if (!use.reads[a]) ignored.push_back(a);
  std::unordered_map<const Var*, const Op*> def;  // built when a cond needs it
  auto defs = [&]() -> const std::unordered_map<const Var*, const Op*>& {
    if (def.empty())
      for (const Op& op : k.ops())
        for (const Var* r : op.results) def[r] = &op;
    return def;
  };
  std::vector<BlockAccess> out;
  for (const Op& op : k.ops())
    for (size_t i = 0; i < op.operands.size(); ++i) {
      if (!op.operands[i].is_var() || op.operands[i].var() != ref) continue;
      if (op.prim->name == "addupdate" && i == 0) {
        out.push_back(BlockAccess::accumulate);
        continue;
      }
      FedBodies fed = fed_bodies(op);
      if (fed.bodies.empty() || i < fed.first_operand) {
        out.push_back(BlockAccess::other);
        continue;
      }
      if (fed.first_operand == 1) {  // a cond
        auto only_at = [&](Step step) {
          std::optional<std::vector<int>> at = visit_axes(op.operands[0], defs(), g, step);
          bool only = at.has_value();
          for (int a : ignored) only = only && std::find(at->begin(), at->end(), a) != at->end();
          return only;
        };
        if (only_at(Step::first)) {
          out.push_back(BlockAccess::first_visit);
          continue;
        }
        if (only_at(Step::last)) {
          out.push_back(BlockAccess::last_visit);
          continue;
        }
      }
      bool only_accumulates = true;
      for (const BodyPtr& inner : fed.bodies)
        only_accumulates &= !accesses_besides_accumulating(*inner, inner->params().at(i - fed.first_operand));
      out.push_back(only_accumulates ? BlockAccess::accumulate : BlockAccess::other);
    }
  return out;
}

// Forward output o is *stateful* when the transposed kernel writes its
// cotangent block at a visit other than the block's last one (in reverse
// order): the tangent kernel reads or overwrites the tangent block (a `get`
// becomes an accumulation into the cotangent, a `swap` a zeroing) other than
// inside a `cond` that runs only at the block's first forward visit. Its
// revisits must then stay consecutive.
bool stateful_output(const Body& k, const GridMapping& g, int o) {
  for (BlockAccess a : output_accesses(k, g, o))
    if (a == BlockAccess::other || a == BlockAccess::last_visit) return true;
  return false;
}

// Does each branch of the `cond`s taking output o's block touch it with one
// op at most, without nested bodies (so its transpose reads the cotangent
// no more after zeroing it)?
bool touched_once_per_branch(const Body& k, const GridMapping& g, int o) {
  const Var* ref = k.params()[g.output_param(o)];
  for (const Op& op : k.ops())
    for (size_t i = 1; i < op.operands.size(); ++i) {
      if (op.prim->name != "cond" || !op.operands[i].is_var() || op.operands[i].var() != ref) continue;
      for (const BodyPtr& branch : op.param(keys::branches)) {
        int uses = 0;
        for (const Op& inner : branch->ops())
          for (const Value& v : inner.operands)
            if (v.is_var() && v.var() == branch->params().at(i - 1))
              uses += inner.nested_bodies().empty() ? 1 : 2;
        if (uses > 1) return false;
      }
    }
  return true;
}

// Are the transposed kernel's writes into output o's cotangent block (an
// input block of the transposed call) dead? They are when the output is not
// stateful and its first-visit `cond`s come before every accumulation: in
// reverse, their transposes (which read and zero the cotangent) run last at
// the block's last visit, and nothing reads the block after them. So are
// they when the block's only access is one last-visit `cond`: in reverse it
// runs at the block's first visit, and no later visit reads the block.
bool cotangent_writes_dead(const Body& k, const GridMapping& g, int o) {
  std::vector<BlockAccess> accesses = output_accesses(k, g, o);
  if (accesses.size() == 1 && accesses[0] == BlockAccess::last_visit) return touched_once_per_branch(k, g, o);
  bool accumulated = false;
  for (BlockAccess a : accesses) {
    if (a == BlockAccess::other || a == BlockAccess::last_visit || (a == BlockAccess::first_visit && accumulated))
      return false;
    accumulated |= a == BlockAccess::accumulate;
  }
  return true;
}

// `body` without its writes into the Refs `refs`: a swap becomes a get of
// the same region, a store or addupdate goes; also inside the bodies a `cond`
// or `run_scoped` hands them to (other ops with bodies are kept as they are).
BodyPtr without_writes(const Body& body, const std::unordered_set<const Var*>& refs) {
  BodyPtr nb = make_body(body.name(), body.kind());
  nb->set_loc(body.loc());
  Builder b(*nb);
  ValueMap map;
  for (const Var* p : body.params()) map[p] = nb->add_param(p->type, p->name, p->loc);
  for (const Op& op : body.ops()) {
    Vals operands;
    for (const Value& v : op.operands) operands.push_back(remap(v, map));
    const std::string& n = op.prim->name;
    bool into = op.prim->family == Family::state && !op.operands.empty() && op.operands[0].is_var() &&
                refs.count(op.operands[0].var());
    if (into && (n == "swap" || n == "store" || n == "addupdate")) {
      if (n == "swap") {
        b.set_loc(op.loc);
        Vals prefix(operands.begin(), operands.begin() + op.main_operand_index(1));
        map[op.results[0]] = b.emit1("get", prefix, {}, op.indexers);
      }
      continue;
    }
    Params params = op.params;
    FedBodies fed = fed_bodies(op);
    bool changed = false;
    for (BodyPtr& inner : fed.bodies) {
      std::unordered_set<const Var*> inner_refs;
      for (size_t i = fed.first_operand; i < op.operands.size(); ++i)
        if (op.operands[i].is_var() && refs.count(op.operands[i].var()))
          inner_refs.insert(inner->params().at(i - fed.first_operand));
      if (inner_refs.empty()) continue;
      inner = without_writes(*inner, inner_refs);
      changed = true;
    }
    if (changed)
      params = fed.first_operand ? params_with(op, {{"branches", fed.bodies}}) : params_with(op, {{"body", fed.bodies[0]}});
    append_copy(op, *nb, std::move(operands), std::move(params), [&](const Var* r, Var* nr) { map[r] = nr; });
  }
  Vals outs;
  for (const Value& v : body.outputs()) outs.push_back(remap(v, map));
  nb->set_outputs(std::move(outs));
  return nb;
}

// Is mapping m's Ref in `any` / HBM memory, which a kernel reaches by DMA
// only? Its cotangent cannot be zeroed by the kernel: it starts from zeros
// passed in and aliased to it, and the DMAs' transposes accumulate into it
// (transpose_dma.cpp).
bool dma_reached(const GridMapping& g, int m) { return is_hbm_side(g.spec(m).mem); }

// The (input, output) aliases that start an output in `any` / HBM memory
// from a linear input (an embedding bag accumulating into `init`): the
// output's cotangent flows on to that input.
std::vector<std::pair<int, int>> linear_aliases(const GridMapping& g, const std::vector<bool>& linear) {
  std::vector<std::pair<int, int>> out;
  for (auto [i, o] : g.aliases)
    if (linear[g.input_operand(static_cast<int>(i))] && dma_reached(g, g.num_inputs() + static_cast<int>(o)))
      out.push_back({static_cast<int>(i), static_cast<int>(o)});
  return out;
}

// `cond[branches=[fn(r){}, fn(r){swap r, zeros}]] pred, ref`, or the swap
// alone when there is no predicate.
void zero_block(Builder& b, const std::optional<Value>& pred, Value ref) {
  const Type& t = ref.type();
  Type elem = Type::array(t.dtype(), t.shape());
  std::vector<IndexEntry> all;
  auto store_zeros = [&](Builder& in, Value r) { in.swap_discard(r, in.zeros(elem), all); };
  if (!pred) {
    store_zeros(b, ref);
    return;
  }
  BodyPtr skip = make_body("skip", BodyKind::fn), zero = make_body("zero", BodyKind::fn);
  Builder sb(*skip), zb(*zero);
  sb.param(t, "r");
  Var* r = zb.param(t, "r");
  store_zeros(zb, r);
  CondView::make(b, *pred, {ref}, {skip, zero});
}

bool has_dma(const Body& body) {
  for (const Op& op : body.ops()) {
    if (op.name() == "dma_start") return true;
    for (const BodyPtr& n : op.nested_bodies())
      if (has_dma(*n)) return true;
  }
  return false;
}

// Kernel k rewritten for a transpose that mirrors its DMA pipeline
// (dma_mirror.h); nullopt, with a note saying why, when its copies are
// transposed synchronously.
std::optional<MirroredKernel> mirrored_pipeline(const Op& op, const GridMapping& g, const Body& k,
                                                const std::vector<bool>& lin_param) {
  if (!has_dma(k)) return std::nullopt;
  std::vector<ParamRole> roles(k.params().size(), ParamRole::other);
  for (int i = 0; i < g.num_inputs(); ++i) roles[static_cast<size_t>(g.input_param(i))] = ParamRole::input;
  for (auto [i, o] : g.aliases)
    roles[static_cast<size_t>(g.input_param(static_cast<int>(i)))] = ParamRole::aliased_input;
  for (int o = 0; o < g.num_outputs(); ++o) roles[static_cast<size_t>(g.output_param(o))] = ParamRole::output;
  for (size_t s = 0; s < g.scratch_types.size(); ++s)
    roles[static_cast<size_t>(g.scratch_param(static_cast<int>(s)))] = ParamRole::scratch;
  bool one_point = true;
  for (int64_t n : g.grid) one_point = one_point && n == 1;
  std::string why = "the grid has more than one point";
  std::optional<MirroredKernel> m;
  if (one_point) m = mirror_dma_pipeline(k, roles, lin_param, why);
  if (!m && note_sink())
    note_sink()(op.loc.str() + ": note: transpose: the DMAs of kernel @" + k.name() +
                " are transposed synchronously (not as a pipeline): " + why);
  return m;
}

// Emits one transposed pallas_call computing the cotangent outputs of `plan`
// and stores them in `result`.
void emit_call(Ctx& c, const Op& op, const GridMapping& g, const Vals& x, const std::vector<bool>& linear,
               const std::vector<Cotangent>& ct, const std::vector<bool>& lin_param, const std::vector<char>& carried,
               const GridPlan& plan, std::vector<Cotangent>& result, bool first_call) {
  int ni = g.num_inputs(), no = g.num_outputs(), nsp = g.num_scalar_prefetch();
  int ns = static_cast<int>(g.scratch_types.size());
  const Body& k = *g.kernel;
  // The transposed kernel; its program ids are reflected onto the new grid
  // as its ops are copied into the call's kernel below. A DMA pipeline is
  // transposed as a pipeline where its waits pair with their starts.
  std::optional<MirroredKernel> mirrored = mirrored_pipeline(op, g, k, lin_param);
  Ctx kc{c.b, c.syms, {}, mirrored ? &mirrored->mirror : nullptr};
  BodyPtr tk = transpose_body(kc, mirrored ? *mirrored->kernel : k, c.syms.fresh(k.name() + "_transpose_body"),
                              BodyKind::kernel, lin_param);
  // The transposed kernel reads the cotangents of the outputs as input
  // blocks; it leaves out writes into them that nothing reads, so that it
  // writes no input block: such state, carried from step to step, would
  // stop a second transpose (vjp of vjp).
  std::unordered_set<const Var*> read_only;
  std::vector<std::pair<int, int>> passed_on = first_call ? linear_aliases(g, linear) : std::vector<std::pair<int, int>>{};
  auto passes_on = [&](int o) {
    for (auto [i, po] : passed_on)
      if (po == o) return true;
    return false;
  };
  for (int o = 0; o < no; ++o)
    if (lin_param[g.output_param(o)] && !passes_on(o) && cotangent_writes_dead(k, g, o))
      read_only.insert(tk->params()[g.output_param(o)]);
  if (!read_only.empty()) tk = without_writes(*tk, read_only);
  // Cotangents of tangent inputs another call computes: scratch, unwritten.
  std::vector<char> unused = carried;
  std::vector<char> here(ni, 0);
  for (const OutputPlan& out : plan.outputs) here[out.mapping] = 1;
  for (int i = 0; i < ni; ++i) unused[g.input_param(i)] = linear[g.input_operand(i)] && !here[i];
  std::vector<char> keep = live_ops(*tk, unused);

  // Block mappings of the new call and the kernel params that go with them.
  std::vector<BlockSpec> in_specs, out_specs;
  std::vector<Type> out_shapes, scratch;
  Vals operands;
  IntPairs aliases;
  BodyPtr kernel = make_body(c.syms.fresh(k.name() + "_transpose"), BodyKind::kernel);
  kernel->set_loc(k.loc());
  Builder kb(*kernel);
  kb.set_loc(k.loc());
  VarToValue map(tk->ops().size() + tk->params().size() + 8);  // tk's params and values -> the new kernel's
  for (int j = 0; j < g.num_dynamic + nsp; ++j) operands.push_back(x[j]);
  for (int j = 0; j < nsp; ++j) map[tk->params()[j]] = kb.param(tk->params()[j]->type, tk->params()[j]->name);
  // Residual inputs the transposed kernel reads (a gather's tangent needs no
  // primal row), with their forward blocks on the new grid.
  VarSet used(tk->ops().size() + tk->params().size() + 8);
  for (size_t j = 0; j < tk->ops().size(); ++j)
    if (keep[j])
      for (const Value& v : tk->ops()[j].operands)
        if (v.is_var()) used.insert(v.var());
  for (int i = 0; i < ni; ++i) {
    if (linear[g.input_operand(i)] || !used.count(tk->params()[g.input_param(i)])) continue;
    in_specs.push_back(transposed_spec(c.syms, g, plan, i, nullptr));
    operands.push_back(x[g.input_operand(i)]);
    const Var* p = tk->params()[g.input_param(i)];
    map[p] = kb.param(p->type, p->name);
  }
  std::vector<int64_t> ct_input_at(static_cast<size_t>(no), -1);
  for (int o = 0; o < no; ++o) {
    if (!lin_param[g.output_param(o)]) continue;
    ct_input_at[static_cast<size_t>(o)] = static_cast<int64_t>(in_specs.size());
    in_specs.push_back(transposed_spec(c.syms, g, plan, ni + o, nullptr));
    operands.push_back(c.instantiate(ct[o], g.out_types[o]));
    const Var* p = tk->params()[g.output_param(o)];
    map[p] = kb.param(p->type, p->name);
  }
  // Cotangent outputs that start from zeros: the zeros, whole, in `any`
  // memory; where the output's blocks pad its array (element padding, a
  // partial last block), in the output's own blocks, so that both buffers are
  // padded alike, as an alias requires.
  auto partial_type = [&](const OutputPlan& out) {
    Type t = g.in_types[out.mapping];
    if (!out.partial) return t;
    Shape s = t.shape();
    s.insert(s.begin(), out.partial_size);
    return Type::array(t.dtype(), s);
  };
  for (const OutputPlan& out : plan.outputs) {
    if (out.covers) continue;
    Type t = partial_type(out);
    aliases.push_back({static_cast<int64_t>(in_specs.size()), static_cast<int64_t>(&out - plan.outputs.data())});
    operands.push_back(c.b.zeros(t));
    if (g.geometry(out.mapping).is_padded()) {
      in_specs.push_back(transposed_spec(c.syms, g, plan, out.mapping, out.partial ? &out : nullptr));
      kb.param(tk->params()[g.input_param(out.mapping)]->type, "zeros");
      continue;
    }
    BlockSpec whole;
    whole.mem = MemSpace::any;
    in_specs.push_back(whole);
    kb.param(Type::ref(t.dtype(), t.shape(), MemSpace::any), "zeros");
  }
  std::vector<Value> ct_refs;
  for (const OutputPlan& out : plan.outputs) {
    out_specs.push_back(transposed_spec(c.syms, g, plan, out.mapping, out.partial ? &out : nullptr));
    out_shapes.push_back(partial_type(out));
    const Var* p = tk->params()[g.input_param(out.mapping)];
    Var* np = kb.param(p->type, p->name);
    map[p] = np;
    ct_refs.push_back(np);
  }
  // Outputs aliased to a linear input: what is left of their cotangent after
  // the transposed kernel (which resets what the forward overwrote) is the
  // input's cotangent. It comes out of an output aliased to the cotangent
  // input, which the kernel works on in its place.
  for (size_t a = 0; a < passed_on.size(); ++a) {
    int o = passed_on[a].second;
    BlockSpec whole;
    whole.mem = MemSpace::any;
    aliases.push_back({ct_input_at[static_cast<size_t>(o)], static_cast<int64_t>(plan.outputs.size() + a)});
    out_specs.push_back(whole);
    out_shapes.push_back(g.out_types[o]);
    const Var* p = tk->params()[g.output_param(o)];
    map[p] = kb.param(p->type, p->name);
  }
  // Scratch: the forward's (cotangent twins in place of linear ones), then
  // the non-linear output blocks the tangent kernel still writes and the
  // cotangent blocks of tangent inputs another call computes.
  std::vector<Value> linear_scratch_refs;
  for (int s = 0; s < ns; ++s) {
    scratch.push_back(g.scratch_types[s]);
    const Var* p = tk->params()[g.scratch_param(s)];
    Var* np = kb.param(p->type, p->name);
    map[p] = np;
    if (lin_param[g.scratch_param(s)]) linear_scratch_refs.push_back(np);
  }
  // (Only those the transposed body still uses.)
  auto scratch_for = [&](int param) {
    const Var* p = tk->params()[param];
    if (!used.count(p)) return;
    scratch.push_back(p->type);
    map[p] = kb.param(p->type, p->name);
  };
  for (int o = 0; o < no; ++o)
    if (!lin_param[g.output_param(o)]) scratch_for(g.output_param(o));
  for (int i = 0; i < ni; ++i)
    if (linear[g.input_operand(i)] && !here[i]) scratch_for(g.input_param(i));

  // First visits: zero the cotangent blocks and the cotangent scratch.
  // (A cotangent in `any` / HBM memory, which the kernel reaches by DMA only,
  // starts from the zeros aliased to it instead: see dma_reached.)
  for (size_t m = 0; m < plan.outputs.size(); ++m)
    if (!dma_reached(g, plan.outputs[m].mapping)) zero_block(kb, first_visit(kb, plan, plan.outputs[m]), ct_refs[m]);
  if (!linear_scratch_refs.empty()) {
    std::optional<Value> first = first_step(kb, plan, g);
    for (const Value& r : linear_scratch_refs) zero_block(kb, first, r);
  }
  copy_reflected(*tk, keep, *kernel, map, g, plan);
  kb.ret({});
  // Dead values the state rules leave in nested bodies go now, so a later
  // dce keeps this kernel (a module symbol) as it is. (live_ops left none at
  // the top level: without nested bodies from tk there is nothing to do.)
  bool nested = false;
  for (size_t j = 0; j < tk->ops().size() && !nested; ++j) nested = keep[j] && !tk->ops()[j].nested_bodies().empty();
  if (nested) kernel = dce_body(kernel);
  c.syms.add(kernel);

  std::vector<int64_t> cost = op.param(keys::cost_estimate);
  for (int64_t& v : cost) v *= 2;
  Params p = params_with(op, {{"kernel", kernel},
                              {"grid", plan.grid(g)},
                              {"grid_names", plan.grid_names(g)},
                              {"in_specs", in_specs},
                              {"out_specs", out_specs},
                              {"out_shapes", out_shapes},
                              {"scratch", scratch},
                              {"input_output_aliases", g.alias_param(aliases)},
                              {"dimension_semantics", plan.semantics(g)},
                              {"vmapped_dims", std::vector<int64_t>{}},
                              {"cost_estimate", cost}});
  Vals res = c.b.emit(*op.prim, operands, p);
  for (size_t m = 0; m < plan.outputs.size(); ++m) {
    Value r = res[m];
    if (plan.outputs[m].partial) r = c.b.emit1("reduce_sum", {r}, {{"axes", std::vector<int64_t>{0}}});
    result[g.input_operand(plan.outputs[m].mapping)] = r;
  }
  for (size_t a = 0; a < passed_on.size(); ++a)
    result[g.input_operand(passed_on[a].first)] = res[plan.outputs.size() + a];
}

// The kernel's values and Refs that depend on the linear operands: tangent
// inputs, and output blocks an alias starts from a linear input.
KernelTaint linear_taint(const GridMapping& g, const std::vector<bool>& linear) {
  const Body& k = *g.kernel;
  std::vector<char> tainted(k.params().size(), 0);
  for (int i = 0; i < g.num_inputs(); ++i) tainted[g.input_param(i)] = linear[g.input_operand(i)];
  for (auto [i, o] : g.aliases)
    if (linear[g.input_operand(static_cast<int>(i))]) tainted[g.output_param(static_cast<int>(o))] = 1;
  return kernel_taint(k, tainted);
}

// ---- The primal part a DMA-moving tangent kernel need not keep -------------

// Calls `f` on every op of `body` without nested bodies, nested ones included.
void for_each_leaf(const Body& body, const std::function<void(const Op&)>& f) {
  for (const Op& op : body.ops()) {
    if (op.nested_bodies().empty()) f(op);
    for (const BodyPtr& inner : op.nested_bodies()) for_each_leaf(*inner, f);
  }
}

bool has_linear_dma(const Body& k, const KernelTaint& lin) {
  bool found = false;
  for_each_leaf(k, [&](const Op& op) {
    if (op.prim->name != "dma_start") return;
    for (const Value& v : op.operands) found = found || lin.has(v);
  });
  return found;
}

// Does some op of `k` use a linear value (taint `lin`) beside one that
// depends on the Refs `dropped`?
bool linear_op_depends(const Body& k, const KernelTaint& lin, const std::vector<char>& dropped) {
  KernelTaint dep = kernel_taint(k, dropped);
  bool found = false;
  for_each_leaf(k, [&](const Op& op) {
    bool linear = false, depends = false;
    for (const Value& v : op.operands) {
      linear = linear || lin.has(v);
      depends = depends || (dep.has(v) && !lin.has(v));
    }
    found = found || (linear && depends);
  });
  return found;
}

// The tangent kernel of a kernel that moves data itself (a jvp'd DMA
// pipeline) carries its primal pipeline beside the tangent one. The
// transposed kernel replays the primal ops it keeps, loop iterations in
// reverse, which would run the primal DMAs' starts and waits out of order.
// Where no tangent depends on them, the primal outputs and scratch
// (semaphores included) and every op that touches them go: this returns the
// call rebuilt with that kernel, or nullopt when nothing can go.
std::optional<CheckpointedCall> without_primal_movement(const Op& op, const GridMapping& g, const Vals& x,
                                                        const std::vector<bool>& linear, const KernelTaint& lin) {
  const Body& k = *g.kernel;
  if (!has_linear_dma(k, lin)) return std::nullopt;
  std::vector<char> dropped(k.params().size(), 0);
  bool any = false;
  auto consider = [&](int param) {
    if (lin.has(k.params()[param])) return;
    std::vector<char> one(k.params().size(), 0);
    one[param] = 1;
    if (linear_op_depends(k, lin, one)) return;
    dropped[param] = 1;
    any = true;
  };
  for (int o = 0; o < g.num_outputs(); ++o) consider(g.output_param(o));
  for (int s = 0; s < static_cast<int>(g.scratch_types.size()); ++s) consider(g.scratch_param(s));
  if (!any || linear_op_depends(k, lin, dropped)) return std::nullopt;
  KernelTaint taint = kernel_taint(k, dropped);
  BodyPtr part = restrict_kernel(k, taint, k.name());
  BodyPtr kernel = make_body(k.name(), BodyKind::kernel);
  kernel->set_loc(k.loc());
  Builder kb(*kernel);
  kb.set_loc(k.loc());
  VarToValue map(part->ops().size() + k.params().size() + 8);
  size_t kept = 0;
  for (const Var* p : k.params()) {
    Var* np = kb.param(p->type, p->name);
    if (!taint.has(p)) map[part->params()[kept++]] = np;
  }
  for (const Op& o : part->ops()) copy_op(o, *kernel, map);
  kb.ret({});
  CheckpointedCall r;
  r.holder = make_body("without_primal", BodyKind::func);
  Builder hb(*r.holder);
  hb.set_loc(op.loc);
  hb.emit(*op.prim, op.operands, params_with(op, {{"kernel", dce_body(kernel)}}));
  r.op = &r.holder->ops().back();
  r.x = x;
  r.linear = linear;
  return r;
}

// A primal DMA or semaphore op (no linear operand) inside a loop that also
// computes tangents: the transposed loop replays each iteration's primal
// part on its own, iterations in reverse, so a protocol that spans
// iterations (a prefetch waited for in the next one) would run out of order.
// Reached when a tangent needs the primal data moved (dma_pipeline computing
// x * x): without_primal_movement could not drop it.
const Op* primal_movement_in_loop(const Body& k, const KernelTaint& lin) {
  for (const Op& op : k.ops()) {
    if (op.nested_bodies().empty() || !fed_bodies(op).bodies.empty()) continue;  // cond / run_scoped replay in order
    bool linear = false;
    for (const Value& v : op.operands) linear = linear || lin.has(v);
    if (!linear) continue;
    const Op* found = nullptr;
    for (const BodyPtr& inner : op.nested_bodies())
      for_each_leaf(*inner, [&](const Op& leaf) {
        const std::string& n = leaf.prim->name;
        if (found || (n != "dma_start" && n != "dma_wait" && n != "semaphore_signal" && n != "semaphore_wait")) return;
        bool any_linear = false;
        for (const Value& v : leaf.operands) any_linear = any_linear || lin.has(v);
        if (!any_linear) found = &leaf;
      });
    if (found) return found;
  }
  return nullptr;
}

// The linear results: the outputs the kernel writes linear values into. The
// others are primal outputs computed beside the tangents (a jvp'd call that
// linearize could not split, transposed whole by vjp) or integer outputs;
// they have no cotangent.
std::vector<bool> call_results(const Op& op, const std::vector<bool>& linear) {
  GridMapping g = grid_mapping(op);
  KernelTaint taint = linear_taint(g, linear);
  std::vector<bool> out(op.results.size(), false);
  for (int o = 0; o < g.num_outputs(); ++o) out[o] = taint.has(g.kernel->params()[g.output_param(o)]);
  return out;
}

std::vector<Cotangent> transpose_call(Ctx& c, const Op& op, const Vals& x, const std::vector<bool>& linear,
                                      const std::vector<Cotangent>& ct, const std::vector<int>* restored,
                                      bool primal_dropped = false) {
  GridMapping g = grid_mapping(op);
  int ni = g.num_inputs(), no = g.num_outputs(), nsp = g.num_scalar_prefetch();
  int ns = static_cast<int>(g.scratch_types.size());
  std::vector<Cotangent> result(op.operands.size());
  const Body& k = *g.kernel;

  for (int64_t n : g.grid)
    if (n < 0) throw Error(op.loc, "transpose: pallas_call with a dynamic grid size is not supported");
  // SparseCore kernels read and write VMEM only in rows of 16 lanes; the
  // transposed kernel zeroes, reads and accumulates whole blocks and whole
  // DMA regions (the cotangent scratch, the staging of a gather's
  // cotangent), which a SparseCore kernel cannot.
  if (g.kernel_type != "tc")
    throw Error(op.loc, "transpose: pallas_call of a SparseCore kernel (kernel_type=" + g.kernel_type +
                            ") is not supported yet: its transpose would zero and move whole VMEM blocks, and a "
                            "SparseCore kernel reads and writes VMEM in rows of 16 lanes only");
  for (int j = 0; j < g.num_dynamic + nsp; ++j)
    if (linear[j]) throw Error(op.loc, "transpose: pallas_call: a scalar-prefetch operand or grid size is linear");
  // An output aliased to a non-linear input (the zeros a cotangent summed
  // from partials starts from, in a vjp'd program) starts from values the
  // tangent does not depend on: its cotangent stops there. One aliased to a
  // linear input would pass its cotangent on to that input.
  for (auto [i, o] : g.aliases)
    if (linear[g.input_operand(static_cast<int>(i))] && !dma_reached(g, ni + static_cast<int>(o)))
      throw Error(op.loc, "transpose: pallas_call with input_output_aliases is not supported: " +
                              g.describe(ni + static_cast<int>(o)) + " starts from the linear " +
                              g.describe(static_cast<int>(i)) + " (its cotangent would flow to that input)");
  for (int i = 0; i < ni; ++i)
    if (linear[g.input_operand(i)] && x[g.input_operand(i)].is_var() && x[g.input_operand(i)].type().is_ref())
      throw Error(op.loc, "transpose: pallas_call with the linear Ref operand " + g.describe(i) + " is not supported");

  // Linear kernel params: tangent inputs, and the Refs linear values are written into.
  std::vector<bool> lin_param(k.params().size(), false);
  for (int i = 0; i < ni; ++i) lin_param[g.input_param(i)] = linear[g.input_operand(i)];
  // kernel_taint follows writes into nested bodies (a tangent output written
  // in a `cond` at the last step, as flash attention does).
  KernelTaint taint = linear_taint(g, linear);
  for (int o = 0; o < no; ++o) lin_param[g.output_param(o)] = taint.has(k.params()[g.output_param(o)]);
  // (Semaphores carry counts, never linear values, also where a tangent DMA signals them.)
  for (int s = 0; s < ns; ++s) {
    const Var* p = k.params()[g.scratch_param(s)];
    lin_param[g.scratch_param(s)] = taint.has(p) && !is_semaphore(p->type.dtype());
  }

  bool any_ct = false;
  for (int o = 0; o < no; ++o) any_ct |= lin_param[g.output_param(o)] && ct[o].has_value();
  if (!any_ct) return result;  // every linear output has a zero cotangent
  if (!primal_dropped)
    if (std::optional<CheckpointedCall> pruned = without_primal_movement(op, g, x, linear, taint))
      return transpose_call(c, *pruned->op, pruned->x, pruned->linear, ct, restored, true);
  if (const Op* moved = primal_movement_in_loop(k, taint))
    throw Error(moved->loc, "transpose: pallas_call kernel @" + k.name() + ": this `" + moved->name() +
                                "` moves primal data inside a loop that also computes tangents, and a tangent needs that "
                                "data; the transposed loop runs its iterations in reverse, each replaying its own primal "
                                "part, which would take the DMAs and waits between iterations out of order (not supported)");

  // Non-linear state carried from step to step: output blocks, and scratch
  // that a step does not overwrite before using.
  std::vector<char> carried(k.params().size(), 0);
  bool linear_scratch = false;
  for (int o = 0; o < no; ++o) carried[g.output_param(o)] = !lin_param[g.output_param(o)];
  for (int s = 0; s < ns; ++s) {
    size_t p = static_cast<size_t>(g.scratch_param(s));
    bool restored_here = restored && std::find(restored->begin(), restored->end(), s) != restored->end();
    carried.at(p) = !lin_param[p] && !restored_here && !overwritten_at_each_step(k, k.params()[p]) &&
                    (!is_semaphore(k.params()[p]->type.dtype()) || reads_semaphore_count(k));
    linear_scratch |= lin_param[p];
  }
  // So is an input block the kernel writes when consecutive steps may share
  // it: the input is not copied in again, and the next step reads what this
  // one wrote (a cotangent block zeroed by the kernel of an earlier
  // transpose, say).
  for (int i = 0; i < ni; ++i) {
    size_t p = static_cast<size_t>(g.input_param(i));
    carried[p] = !lin_param[p] && block_may_stay(g, i) && writes_ref(k, k.params()[p]);
  }
  if (std::optional<CarriedRead> r = find_carried_residual(k, lin_param, carried)) {
    // A tangent reads carried scratch: checkpoint it (transpose_checkpoint.h)
    // and transpose the rebuilt call, whose scratch is restored every step.
    // (Data only: semaphores carry no values a tangent could read.)
    std::vector<int> saved;
    for (int s = 0; s < ns; ++s) {
      const Var* p = k.params()[g.scratch_param(s)];
      if (carried[g.scratch_param(s)] && !is_semaphore(p->type.dtype()) && reads_contents(k, p)) saved.push_back(s);
    }
    // What checkpoints cannot mend (output blocks, semaphores) is an error.
    std::vector<char> after = carried;
    for (int s : saved) after[static_cast<size_t>(g.scratch_param(s))] = 0;
    if (std::optional<CarriedRead> left = find_carried_residual(k, lin_param, after))
      throw carried_residual_error(k, g, *left);
    if (restored) throw carried_residual_error(k, g, *r);  // a guard: the rebuilt call restores all of `saved`
    // The checkpoint call's operands differ from this call's: its aliases
    // would not carry over.
    if (!g.aliases.empty())
      throw Error(op.loc, "transpose: pallas_call kernel @" + k.name() +
                              " carries scratch from step to step that its tangent reads, and has input_output_aliases "
                              "(the zeros partial cotangents start from, when an earlier vjp made this call): "
                              "checkpointing such a call is not supported");

    if (note_sink())
      note_sink()(op.loc.str() + ": note: transpose: kernel @" + k.name() + " carries " +
                  std::to_string(saved.size()) +
                  " scratch Ref(s) from step to step that its tangent reads; a checkpoint call saves them at every "
                  "grid step for the transposed kernel");
    CheckpointedCall cc = checkpoint_scratch(c, op, g, x, linear, taint, saved);
    std::vector<Cotangent> got = transpose_call(c, *cc.op, cc.x, cc.linear, ct, &saved, primal_dropped);
    got.resize(op.operands.size());
    return got;
  }

  // The grid: one transposed call per grid order the cotangent outputs need.
  // A tangent input the kernel never touches has a zero cotangent: no call
  // computes it.
  std::vector<int> remaining, stateful;
  for (int i = 0; i < ni; ++i) {
    if (!linear[g.input_operand(i)] || !touches(k, k.params()[g.input_param(i)])) continue;
    remaining.push_back(i);
  }
  for (int o = 0; o < no; ++o)
    if (lin_param[g.output_param(o)] && stateful_output(k, g, o)) stateful.push_back(ni + o);
  bool first_call = true;
  while (!remaining.empty()) {
    GridPlan plan = plan_grid(g, remaining, !linear_scratch, stateful);
    if (!plan.unsupported.empty())
      throw Error(op.loc, "transpose: pallas_call: the cotangent of " + plan.unsupported +
                              " is carried from visit to visit of its blocks, and no grid order keeps those visits "
                              "consecutive (not supported)");
    std::vector<int> now, later;
    for (const OutputPlan& out : plan.outputs) (out.conflict ? later : now).push_back(out.mapping);
    if (note_sink())
      for (const std::string& n : plan.notes) note_sink()(op.loc.str() + ": note: " + n);
    if (!later.empty()) plan = plan_grid(g, now, !linear_scratch, stateful);
    for (OutputPlan& out : plan.outputs) out.covers = out.covers && !dma_reached(g, out.mapping);
    emit_call(c, op, g, x, linear, ct, lin_param, carried, plan, result, first_call);
    first_call = false;
    remaining = later;
  }
  return result;
}

}  // namespace

void set_pallas_call_note_sink(std::function<void(const std::string&)> sink) { note_sink() = std::move(sink); }

void add_pallas_call_rule(RuleTable<RuleSet>& t) {
  t.set("pallas_call", {.transpose = [](Ctx& c, const Op& op, const Vals& x, const std::vector<bool>& linear,
                                        const std::vector<Cotangent>& ct) { return transpose_call(c, op, x, linear, ct, nullptr); },
                        .linear_results = call_results});
}

}  // namespace tessera::transpose
