// Batching of pallas_call (jax/_src/pallas/pallas_call.py,
// `_pallas_call_batching_rule`).
//
// The batch becomes a new leading grid axis. Every block mapping gets a new
// index map taking (batch program id, *old parameters) that returns the old
// indices with the batch id inserted at the operand's batch axis, whose block
// dim is Squeezed -- so the kernel sees exactly the blocks it saw before and
// is reused unchanged. Outputs are batched at axis 0; aliased inputs are
// broadcast or moved so they match. vmapped_dims records the new axis,
// dimension_semantics marks it parallel (batch elements are independent) and
// the cost estimate scales by the batch size.
//
// A batched scalar-prefetch operand, dynamic grid size, or `any`/`hbm`
// operand (which the kernel sees whole) cannot become a grid
// axis (it changes the grid or the index maps per element): those calls run
// as an explicit `for` loop over the batch, each iteration calling the
// unbatched pallas_call on one element (`_batch_with_explicit_loop`).
#include <algorithm>
#include <sstream>

#include "ir/control_views.h"
#include "ir/grid_mapping.h"
#include "ir/sparse_core.h"
#include "transforms/vmap.h"

namespace tessera::vmap {
namespace {

using Vals = std::vector<Value>;
using Dims = std::vector<int>;

// The index map of a batched block mapping: (b, *old params) -> old results
// with `b` inserted at result position `insert_at` (or not at all, -1).
BodyPtr batched_index_map(Ctx& c, const GridMapping& g, const BodyPtr& old, int insert_at, int old_arity) {
  std::ostringstream key;
  key << "vmap-index-map:" << old.get() << ":" << insert_at << ":" << old_arity << ":" << g.grid_rank() << ":"
      << g.num_scalar_prefetch();
  for (const Type& t : g.scalar_prefetch_types) key << ":" << t.str();
  if (auto it = c.syms.memo.find(key.str()); it != c.syms.memo.end()) return it->second;

  std::string stem = old ? old->name() + "_vmap" : "vmap_index_map";
  BodyPtr nb = make_body(c.syms.fresh(stem), BodyKind::index_map);
  if (old) nb->set_loc(old->loc());
  Builder b(*nb);
  Var* batch = b.param(Type::scalar(DType::i32), "b");
  std::vector<Type> old_params = g.expected_index_map_params();
  ValueMap map;
  std::vector<Value> outs;
  for (size_t i = 0; i < old_params.size(); ++i) {
    std::string name = old && i < old->params().size() ? old->params()[i]->name
                       : i < static_cast<size_t>(g.grid_rank()) ? "i" + std::to_string(i)
                                                                : "s" + std::to_string(i - g.grid_rank());
    Var* p = b.param(old_params[i], name);
    if (old) map[old->params().at(i)] = p;
  }
  if (old) outs = inline_body(*old, *nb, map);
  else outs.assign(old_arity, Literal::of_int(DType::i32, 0));
  if (insert_at >= 0) outs.insert(outs.begin() + insert_at, Value(batch));
  b.ret(outs);
  c.syms.add(nb);
  c.syms.memo[key.str()] = nb;
  return nb;
}

BlockSpec batch_spec(Ctx& c, const GridMapping& g, const BlockSpec& spec, const Shape& shape, int dim) {
  BlockSpec out = spec;
  std::vector<BlockDim> dims = block_dims(spec, shape);
  if (dim == kNotMapped) {
    if (spec.index_map) out.index_map = batched_index_map(c, g, spec.index_map, -1, index_map_arity(dims));
    return out;
  }
  std::vector<BlockDim> before(dims.begin(), dims.begin() + dim);
  int pos = index_map_arity(before);
  out.index_map = batched_index_map(c, g, spec.index_map, pos, index_map_arity(dims));
  out.block = ad::insert_at(dims, dim, BlockDim::squeezed());
  return out;
}

// Aliased inputs must be batched like their outputs: at axis 0.
void align_aliases(Ctx& c, const GridMapping& g, Vals& x, Dims& d) {
  for (const auto& [in, out] : g.aliases) {
    int k = g.input_operand(static_cast<int>(in));
    if (d[k] == 0) continue;
    x[k] = c.move_to(x[k], d[k], 0);
    d[k] = 0;
  }
}

RuleResult explicit_loop(Ctx& c, const Op& op, const GridMapping& g, Vals x, Dims d) {
  align_aliases(c, g, x, d);
  for (size_t k = 0; k < x.size(); ++k)
    if (d[k] != kNotMapped && x[k].type().is_ref())
      throw Error(op.loc, "vmap: pallas_call with a batched Ref operand cannot be batched by a loop");
  BodyPtr body = make_body((g.name.empty() ? std::string("pallas_call") : g.name) + "_batch_loop", BodyKind::fn);
  Builder b(*body);
  b.set_loc(op.loc);
  Var* i = b.param(Type::scalar(DType::i32), "b");
  Vals consts, inner;
  for (size_t k = 0; k < x.size(); ++k) {
    if (!x[k].is_var()) {
      inner.push_back(x[k]);
      continue;
    }
    consts.push_back(x[k]);
    Var* p = b.param(x[k].type(), x[k].var()->name);
    if (d[k] == kNotMapped) {
      inner.push_back(p);
      continue;
    }
    // Element i of the batch: a size-1 dynamic slice along the batch axis, squeezed.
    const Type& t = x[k].type();
    Vals idx{p};
    std::vector<int64_t> sizes = t.shape();
    for (int a = 0; a < t.rank(); ++a) idx.push_back(a == d[k] ? Value(i) : Literal::of_int(DType::i32, 0));
    sizes[d[k]] = 1;
    Value s = b.emit1("dynamic_slice", idx, {{"slice_sizes", sizes}});
    inner.push_back(ad::squeeze_axis(b, s, d[k]));
  }
  std::vector<Var*> carries;
  for (const Type& t : g.out_types) carries.push_back(b.param(batched_type(t, 0, c.size), "acc"));
  std::vector<Var*> one = b.create(*op.prim, inner, op.params);
  Vals next;
  for (size_t o = 0; o < carries.size(); ++o) {
    Vals upd{carries[o], ad::expand_axis(b, one[o], 0), Value(i)};
    for (int a = 0; a < g.out_types[o].rank(); ++a) upd.push_back(Literal::of_int(DType::i32, 0));
    next.push_back(b.emit1("dynamic_update_slice", upd));
  }
  b.ret(next);

  Vals stacks;
  for (const Type& t : g.out_types) stacks.push_back(c.b.zeros(batched_type(t, 0, c.size)));
  Vals r = ForView::make(c.b, Literal::of_int(DType::i32, 0), Literal::of_int(DType::i32, c.size), consts, stacks, body);
  return {r, Dims(r.size(), 0)};
}

RuleResult pallas_call_rule(Ctx& c, const Op& op, const Vals& x0, const Dims& d0) {
  GridMapping g = grid_mapping(op);
  Vals x = x0;
  Dims d = d0;
  int64_t n = c.size;

  // Batch of one: call once on the element, give the results a unit axis.
  if (n == 1) {
    for (size_t k = 0; k < x.size(); ++k)
      if (d[k] != kNotMapped) {
        if (x[k].type().is_ref()) throw Error(op.loc, "vmap: cannot squeeze the batch axis of a Ref operand");
        x[k] = ad::squeeze_axis(c.b, x[k], d[k]);
      }
    Vals r = c.b.emit(*op.prim, x, op.params);
    for (Value& v : r) v = ad::expand_axis(c.b, v, 0);
    return {r, Dims(r.size(), 0)};
  }

  for (int k = 0; k < g.num_dynamic + g.num_scalar_prefetch(); ++k)
    if (d[k] != kNotMapped) return explicit_loop(c, op, g, x, d);
  // A SparseCore kernel takes Blocked dims only, so a squeezed batch dim is
  // not an option: call the unchanged kernel once per batch element.
  if (is_sparse_core(g.kernel_type)) return explicit_loop(c, op, g, x, d);
  // An `any` / `hbm` operand reaches the kernel whole, not as a block, so a
  // batch block dim cannot hide the batch axis from the kernel's DMAs: loop.
  auto unblocked = [](const BlockSpec& s) { return s.mem == MemSpace::any || s.mem == MemSpace::hbm; };
  for (int i = 0; i < g.num_inputs(); ++i)
    if (d[g.input_operand(i)] != kNotMapped && unblocked(g.in_specs[i])) return explicit_loop(c, op, g, x, d);
  for (const BlockSpec& s : g.out_specs)
    if (unblocked(s)) return explicit_loop(c, op, g, x, d);

  align_aliases(c, g, x, d);
  std::vector<BlockSpec> in_specs, out_specs;
  for (int i = 0; i < g.num_inputs(); ++i)
    in_specs.push_back(batch_spec(c, g, g.in_specs[i], g.in_types[i].shape(), d[g.input_operand(i)]));
  std::vector<Type> out_shapes;
  for (int o = 0; o < g.num_outputs(); ++o) {
    out_specs.push_back(batch_spec(c, g, g.out_specs[o], g.out_types[o].shape(), 0));
    out_shapes.push_back(batched_type(g.out_types[o], 0, n));
  }

  std::vector<int64_t> grid = ad::insert_at(g.grid, 0, n);
  std::vector<std::string> names = g.grid_names;
  if (!names.empty()) {
    std::string fresh = "batch";
    for (int s = 1; std::find(names.begin(), names.end(), fresh) != names.end(); ++s) fresh = "batch_" + std::to_string(s);
    names.insert(names.begin(), fresh);
  }
  std::vector<std::string> sem = g.dimension_semantics;
  if (sem.empty()) sem.assign(g.grid.size(), "arbitrary");
  sem.insert(sem.begin(), "parallel");
  std::vector<int64_t> vmapped{0};
  for (int64_t v : g.vmapped_dims) vmapped.push_back(v + 1);
  std::vector<int64_t> cost = op.param(keys::cost_estimate);
  for (int64_t& v : cost) v *= n;

  Params p = params_with(op, {{"grid", grid},
                       {"grid_names", names},
                       {"in_specs", in_specs},
                       {"out_specs", out_specs},
                       {"out_shapes", out_shapes},
                       {"vmapped_dims", vmapped},
                       {"dimension_semantics", sem},
                       {"cost_estimate", cost}});
  Vals r = c.b.emit(*op.prim, x, p);
  return {r, Dims(r.size(), 0)};
}

}  // namespace

void add_pallas_call_rule(RuleTable<BatchRule>& t) { t.set("pallas_call", pallas_call_rule); }

}  // namespace tessera::vmap
