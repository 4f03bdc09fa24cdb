// The grid side of transposing a pallas_call (see transpose_grid.h).
#include "transforms/transpose_grid.h"

#include <algorithm>
#include <sstream>
#include <unordered_map>

#include "ir/builder.h"
#include "ir/clone.h"
#include "transforms/pass.h"
#include "transforms/var_table.h"

namespace tessera::transpose {
namespace {

// Per value of an index map: the grid axes it depends on.
using AxisSet = std::vector<bool>;

void unite(AxisSet& into, const AxisSet& from) {
  for (size_t a = 0; a < into.size(); ++a) into[a] = into[a] || from[a];
}

bool contains(const std::vector<int>& big, const std::vector<int>& small) {
  for (int a : small)
    if (std::find(big.begin(), big.end(), a) == big.end()) return false;
  return true;
}

// The grid axis an index-map value is a one-to-one function of: a program-id
// parameter, shifted or reflected by constants (`add x, c`, `sub x, c`,
// `sub c, x`: the maps of an earlier transpose read n - 1 - program id).
// `onto`: the value permutes 0..n-1 as the axis does (the axis itself, or
// reflected by n - 1 an even or odd number of times). axis -1: none.
struct AxisOf {
  int axis = -1;
  bool onto = false;
};

AxisOf axis_of(const Body& m, const Value& v, const std::vector<int64_t>& grid) {
  if (!v.is_var()) return {};
  int rank = static_cast<int>(grid.size());
  for (int a = 0; a < rank && a < static_cast<int>(m.params().size()); ++a)
    if (v.var() == m.params()[a]) return {a, true};
  for (const Op& op : m.ops()) {
    if (op.results.size() != 1 || op.results[0] != v.var()) continue;
    const std::string& n = op.prim->name;
    if ((n != "add" && n != "sub") || op.operands.size() != 2) return {};
    const Value &x = op.operands[0], &y = op.operands[1];
    if (x.is_literal() == y.is_literal()) return {};
    const Value& c = x.is_literal() ? x : y;
    AxisOf in = axis_of(m, x.is_literal() ? y : x, grid);
    if (in.axis < 0) return {};
    bool reflect = n == "sub" && x.is_literal() && c.literal().as_int() == grid[in.axis] - 1;
    return {in.axis, in.onto && reflect};
  }
  return {};
}

}  // namespace

AxisUse index_map_axis_use(const BlockSpec& spec, const std::vector<BlockDim>& dims, const std::vector<int64_t>& grid) {
  int grid_rank = static_cast<int>(grid.size());
  AxisUse use;
  use.reads.assign(grid_rank, false);
  for (const BlockDim& d : dims)
    if (d.kind != BlockDimKind::Blocked && d.kind != BlockDimKind::Squeezed) use.projection = false;
  if (!spec.index_map) return use;  // every index 0
  const Body& m = *spec.index_map;
  std::unordered_map<const Var*, AxisSet> dep;
  for (int a = 0; a < grid_rank && a < static_cast<int>(m.params().size()); ++a) {
    AxisSet s(grid_rank, false);
    s[a] = true;
    dep[m.params()[a]] = s;
  }
  // Data flow only: a result depends on every axis any operand depends on (an
  // op with nested bodies counts as one op over its operands).
  for (const Op& op : m.ops()) {
    AxisSet s(grid_rank, false);
    for (const Value& v : op.operands)
      if (v.is_var())
        if (auto it = dep.find(v.var()); it != dep.end()) unite(s, it->second);
    for (const Var* r : op.results) dep[r] = s;
  }
  for (const Value& out : m.outputs()) {
    if (!out.is_var()) continue;
    if (auto it = dep.find(out.var()); it != dep.end()) unite(use.reads, it->second);
    if (axis_of(m, out, grid).axis < 0) use.projection = false;
  }
  return use;
}

namespace {

// Whether a projection map visits every block of mapping m.
bool covers_array(const GridMapping& g, int m) {
  const BlockSpec& spec = g.spec(m);
  BlockGeometry geo = g.geometry(m);
  const Body* map = spec.index_map.get();
  for (size_t d = 0; d < geo.dims.size(); ++d) {
    DimGeometry::Range r = geo.dims[d].valid_index();
    if (r.lo != 0) return false;
    int64_t blocks = r.hi + 1;
    if (!map) {
      if (blocks != 1) return false;
      continue;
    }
    const Value& out = map->outputs().at(d);
    if (out.is_literal()) {
      if (blocks != 1 || out.literal().as_int() != 0) return false;
      continue;
    }
    AxisOf of = axis_of(*map, out, g.grid);
    if (of.axis < 0 || !of.onto || g.grid[of.axis] != blocks) return false;
  }
  return true;
}

}  // namespace

GridPlan plan_grid(const GridMapping& g, const std::vector<int>& ct_outputs, bool may_reorder,
                   const std::vector<int>& stateful_inputs) {
  GridPlan plan;
  int rank = g.grid_rank();
  auto size_of = [&](const std::vector<int>& axes) {
    int64_t n = 1;
    for (int a : axes) n = g.grid[a] < 0 ? -1 : (n < 0 ? -1 : n * g.grid[a]);
    return n;
  };
  for (int m : ct_outputs) {
    OutputPlan out;
    out.mapping = m;
    AxisUse use = index_map_axis_use(g.spec(m), g.dims(m), g.grid);
    for (int a = 0; a < rank; ++a)
      if (!use.reads[a]) out.ignored.push_back(a);
    if (!use.projection) {
      // Any two grid points may share a block: each gets its own slice.
      out.partial = true;
      out.ignored.clear();
      for (int a = 0; a < rank; ++a) out.ignored.push_back(a);
      plan.notes.push_back("transpose: the cotangent of " + g.describe(m) +
                          " is summed from per-grid-point partial cotangents outside the kernel: its index map is not a "
                          "projection of program ids, so grid points may share a block");
    } else {
      out.covers = covers_array(g, m);
    }
    plan.outputs.push_back(out);
  }

  // The chain of nested ignored sets that become suffixes of the new order,
  // kept sorted by size. The stateful inputs' sets come first: every call
  // needs them. An output's set joins when it nests with every set there.
  auto is_suffix = [&](const std::vector<int>& axes) {  // already the innermost forward axes
    bool suffix = true;
    for (size_t t = 0; t < axes.size(); ++t) suffix &= axes[t] == rank - static_cast<int>(axes.size() - t);
    return suffix;
  };
  auto nests_with = [&](const std::vector<std::vector<int>>& sets, const std::vector<int>& axes) {
    for (const std::vector<int>& c : sets)
      if (!contains(c, axes) && !contains(axes, c)) return false;
    return true;
  };
  std::vector<std::vector<int>> chain, required;
  auto join = [&](const std::vector<int>& axes) {
    for (const std::vector<int>& c : chain)
      if (c == axes) return;
    chain.push_back(axes);
    std::stable_sort(chain.begin(), chain.end(), [](const auto& x, const auto& y) { return x.size() < y.size(); });
  };
  for (int m : stateful_inputs) {
    AxisUse use = index_map_axis_use(g.spec(m), g.dims(m), g.grid);
    std::vector<int> ignored;
    for (int a = 0; a < rank; ++a)
      if (!use.reads[a]) ignored.push_back(a);
    if (ignored.empty()) continue;  // each block visited once
    if (!use.projection || !nests_with(chain, ignored) || (!may_reorder && !is_suffix(ignored))) {
      plan.unsupported = g.describe(m);
      continue;
    }
    join(ignored);
  }
  required = chain;
  std::vector<size_t> by_size;
  for (size_t k = 0; k < plan.outputs.size(); ++k)
    if (!plan.outputs[k].partial && !plan.outputs[k].ignored.empty()) by_size.push_back(k);
  std::stable_sort(by_size.begin(), by_size.end(), [&](size_t x, size_t y) {
    return plan.outputs[x].ignored.size() < plan.outputs[y].ignored.size();
  });
  for (size_t k : by_size) {
    OutputPlan& out = plan.outputs[k];
    if (nests_with(chain, out.ignored) && (may_reorder || is_suffix(out.ignored))) {
      join(out.ignored);
      continue;
    }
    if (may_reorder && nests_with(required, out.ignored)) {
      out.conflict = true;
      plan.notes.push_back("transpose: the cotangent of " + g.describe(out.mapping) +
                           " is computed by another transposed kernel: it needs a different grid order");
      continue;
    }
    out.partial = true;
    out.covers = false;
    plan.notes.push_back("transpose: the cotangent of " + g.describe(out.mapping) +
                         " is summed from partial cotangents outside the kernel: " +
                         (may_reorder ? "the cotangent blocks the kernel carries from step to step need another grid order"
                                      : "the kernel carries linear state from step to step, so the grid cannot be "
                                        "reordered"));
  }
  for (OutputPlan& out : plan.outputs)
    if (out.partial) out.partial_size = size_of(out.ignored);

  // New order: the axes no accepted output ignores, then the chain from the
  // largest set inwards; forward order within each group.
  std::vector<char> placed(rank, 0);
  auto place_group = [&](const std::vector<int>& axes) {
    for (int a : axes)
      if (!placed[a]) placed[a] = 1, plan.order.push_back(a);
  };
  std::vector<int> outer;
  std::vector<char> in_chain(rank, 0);
  if (!chain.empty())
    for (int a : chain.back()) in_chain[a] = 1;
  for (int a = 0; a < rank; ++a)
    if (!in_chain[a]) outer.push_back(a);
  place_group(outer);
  for (size_t t = chain.size(); t-- > 0;) {
    std::vector<int> group;
    for (int a : chain[t])
      if (t == 0 || !contains(chain[t - 1], {a})) group.push_back(a);
    place_group(group);
  }
  plan.position.assign(rank, 0);
  for (int p = 0; p < rank; ++p) plan.position[plan.order[p]] = p;
  return plan;
}

std::vector<int64_t> GridPlan::grid(const GridMapping& g) const {
  std::vector<int64_t> out;
  for (int a : order) out.push_back(g.grid[a]);
  return out;
}

std::vector<std::string> GridPlan::grid_names(const GridMapping& g) const {
  if (g.grid_names.empty()) return {};
  std::vector<std::string> out;
  for (int a : order) out.push_back(g.grid_names[a]);
  return out;
}

std::vector<std::string> GridPlan::semantics(const GridMapping& g) const {
  std::vector<std::string> out;
  for (int a : order) {
    bool revisits = false;
    for (const OutputPlan& o : outputs)
      if (!o.partial && !o.conflict) revisits |= std::find(o.ignored.begin(), o.ignored.end(), a) != o.ignored.end();
    out.push_back(revisits || !g.is_parallel(a) ? "arbitrary" : g.dimension_semantics[a]);
  }
  return out;
}

BodyPtr transposed_index_map(ad::SymbolSink& syms, const GridMapping& g, const GridPlan& plan, int m,
                             const OutputPlan* partial) {
  const BodyPtr& old = g.spec(m).index_map;
  // The same map on the same plan is made once (a module of many kernels
  // sharing one index map gets one transposed map).
  std::ostringstream key;
  key << "transpose-index-map:" << old.get() << ":" << index_map_arity(g.dims(m));
  for (int a : plan.order) key << ":" << a << "/" << g.grid[a];
  for (const Type& t : g.scalar_prefetch_types) key << ":" << t.str();
  if (partial)
    for (int a : partial->ignored) key << ":p" << a;
  if (auto it = syms.memo.find(key.str()); it != syms.memo.end()) return it->second;
  BodyPtr nb = make_body(syms.fresh((old ? old->name() : std::string("index_map")) + "_t"), BodyKind::index_map);
  if (old) nb->set_loc(old->loc());
  Builder b(*nb);
  int rank = g.grid_rank();
  std::vector<Type> types = g.expected_index_map_params();
  std::vector<Var*> params;
  for (size_t i = 0; i < types.size(); ++i) {
    std::string name = old && i < old->params().size() ? old->params()[i]->name : "p" + std::to_string(i);
    if (static_cast<int>(i) < rank) name = old ? old->params()[plan.order[i]]->name : "i" + std::to_string(plan.order[i]);
    params.push_back(b.param(types[i], name + (static_cast<int>(i) < rank ? "_t" : "")));
  }
  // Forward axis a at the reflected point: n_a - 1 - new program id.
  std::vector<Value> forward(rank);
  for (int a = 0; a < rank; ++a) forward[a] = b.binary("sub", b.i32(g.grid[a] - 1), params[plan.position[a]]);
  std::vector<Value> outs;
  if (old) {
    ValueMap map;
    for (int a = 0; a < rank; ++a) map[old->params()[a]] = forward[a];
    for (size_t i = rank; i < old->params().size(); ++i) map[old->params()[i]] = params[i];
    outs = inline_body(*old, *nb, map);
  } else {
    outs.assign(index_map_arity(g.dims(m)), b.i32(0));
  }
  if (partial) {
    // Slice of the partial array: the ignored axes' new program ids, row-major.
    std::optional<Value> slice;
    for (int a : partial->ignored) {
      Value pid = params[plan.position[a]];
      slice = slice ? b.binary("add", b.binary("mul", *slice, b.i32(g.grid[a])), pid) : pid;
    }
    if (!slice) slice = b.i32(0);
    outs.insert(outs.begin(), *slice);
  }
  b.ret(outs);
  nb = dce_body(nb);  // the reflected ids of axes the map ignores
  syms.add(nb);
  syms.memo[key.str()] = nb;
  return nb;
}

BlockSpec transposed_spec(ad::SymbolSink& syms, const GridMapping& g, const GridPlan& plan, int m,
                          const OutputPlan* partial) {
  BlockSpec s = g.spec(m);
  if (!s.index_map && !partial) return s;  // every index 0 on any grid: nothing to reflect
  s.index_map = transposed_index_map(syms, g, plan, m, partial);
  if (partial) {
    std::vector<BlockDim> dims = g.dims(m);
    dims.insert(dims.begin(), BlockDim::squeezed());
    s.block = dims;
  }
  return s;
}

namespace {

bool mentions_grid(const Body& body) {
  for (const Op& op : body.ops()) {
    const std::string& n = op.prim->name;
    if (n == "program_id" || n == "num_programs") return true;
    for (const NamedParam& p : op.params) {
      if (const BodyPtr* bp = std::get_if<BodyPtr>(&p.value))
        if (*bp && mentions_grid(**bp)) return true;
      if (const auto* bs = std::get_if<std::vector<BodyPtr>>(&p.value))
        for (const BodyPtr& x : *bs)
          if (x && mentions_grid(*x)) return true;
    }
  }
  return false;
}

BodyPtr reflect(const BodyPtr& body, const GridMapping& g, const GridPlan& plan, const std::string& name);

void reflect_into(const Body& src, const std::vector<char>* keep, Body& dst, VarToValue& map, const GridMapping& g,
                  const GridPlan& plan) {
  Builder b(dst);
  for (size_t i = 0; i < src.ops().size(); ++i) {
    if (keep && !(*keep)[i]) continue;
    const Op& op = src.ops()[i];
    const std::string& n = op.prim->name;
    b.set_loc(op.loc);
    if (n == "program_id" || n == "num_programs") {
      // The kernel numbers the grid axes that are not vmapped; the transposed
      // call has none (every axis visible: its first-visit conditions may
      // need a batch axis).
      std::vector<int> axes = g.kernel_axes();
      int64_t ka = op.param(keys::axis);
      int a = ka >= 0 && ka < static_cast<int64_t>(axes.size()) ? axes[static_cast<size_t>(ka)] : -1;
      if (a >= 0) {
        Value pid = b.emit1(n, {}, {{"axis", static_cast<int64_t>(plan.position[a])}});
        map[op.results[0]] = n == "num_programs" ? pid : b.binary("sub", b.i32(g.grid[a] - 1), pid);
        continue;
      }
    }
    Params params = op.params;
    for (NamedParam& p : params) {
      if (BodyPtr* bp = std::get_if<BodyPtr>(&p.value)) {
        if (*bp && mentions_grid(**bp)) *bp = reflect(*bp, g, plan, (*bp)->name());
      } else if (auto* bs = std::get_if<std::vector<BodyPtr>>(&p.value)) {
        for (BodyPtr& x : *bs)
          if (x && mentions_grid(*x)) x = reflect(x, g, plan, x->name());
      }
    }
    std::vector<Value> operands;
    for (const Value& v : op.operands) operands.push_back(remap(v, map));
    append_copy(op, dst, std::move(operands), std::move(params), [&](const Var* r, Var* nr) { map[r] = nr; });
  }
}

BodyPtr reflect(const BodyPtr& body, const GridMapping& g, const GridPlan& plan, const std::string& name) {
  BodyPtr nb = make_body(name, body->kind());
  nb->set_loc(body->loc());
  VarToValue map(body->ops().size() + body->params().size() + 8);
  for (const Var* p : body->params()) map[p] = nb->add_param(p->type, p->name, p->loc);
  reflect_into(*body, nullptr, *nb, map, g, plan);
  std::vector<Value> outs;
  for (const Value& v : body->outputs()) outs.push_back(remap(v, map));
  nb->set_outputs(std::move(outs));
  return nb;
}

}  // namespace

bool uses_grid(const Body& kernel) { return mentions_grid(kernel); }

void copy_reflected(const Body& src, const std::vector<char>& keep, Body& dst, VarToValue& map, const GridMapping& g,
                    const GridPlan& plan) {
  reflect_into(src, &keep, dst, map, g, plan);
}

BodyPtr reflect_program_ids(const Body& kernel, const GridMapping& g, const GridPlan& plan, const std::string& name) {
  BodyPtr nb = make_body(name, kernel.kind());
  nb->set_loc(kernel.loc());
  VarToValue map(kernel.ops().size() + kernel.params().size() + 8);
  for (const Var* p : kernel.params()) map[p] = nb->add_param(p->type, p->name, p->loc);
  reflect_into(kernel, nullptr, *nb, map, g, plan);
  std::vector<Value> outs;
  for (const Value& v : kernel.outputs()) outs.push_back(remap(v, map));
  nb->set_outputs(std::move(outs));
  return nb;
}

namespace {

std::optional<Value> all_at_zero(Builder& b, const GridPlan& plan, const std::vector<int>& axes) {
  std::optional<Value> cond;
  for (int a : axes) {
    Value pid = b.emit1("program_id", {}, {{"axis", static_cast<int64_t>(plan.position[a])}});
    Value at0 = b.binary("eq", pid, b.i32(0));
    cond = cond ? b.binary("and", *cond, at0) : at0;
  }
  return cond;
}

}  // namespace

std::optional<Value> first_visit(Builder& b, const GridPlan& plan, const OutputPlan& out) {
  if (out.partial) return std::nullopt;  // each block of a partial array is visited once
  return all_at_zero(b, plan, out.ignored);
}

std::optional<Value> first_step(Builder& b, const GridPlan& plan, const GridMapping& g) {
  std::vector<int> sequential;
  for (int a : plan.order)
    if (!g.is_parallel(a)) sequential.push_back(a);
  return all_at_zero(b, plan, sequential);
}

}  // namespace tessera::transpose
