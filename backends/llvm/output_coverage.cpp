#include "backends/llvm/output_coverage.h"

#include <algorithm>

#include "ir/control_views.h"
#include "ir/grid_schedule.h"

namespace tessera::backends::llvm_lowering {
namespace {

// The blocks tile the padded array (Blocked / Squeezed dims, no element
// padding before the data): how many blocks along each dim, or nothing.
std::optional<std::vector<int64_t>> tiles_per_dim(const GridMapping& g, int m) {
  std::vector<int64_t> tiles;
  for (const DimGeometry& dg : g.geometry(m).dims) {
    BlockDimKind k = dg.dim.kind;
    int64_t window = dg.window();
    if ((k != BlockDimKind::Blocked && k != BlockDimKind::Squeezed) || window <= 0 || dg.pad_lo != 0 ||
        dg.padded % window != 0)
      return std::nullopt;
    tiles.push_back(dg.padded / window);
  }
  return tiles;
}

// Every block is some grid point's: a dim of several blocks takes its index
// straight from a grid axis of as many points, one axis per dim.
bool index_map_visits_every_block(const GridMapping& g, int m, const std::vector<int64_t>& tiles) {
  for (int64_t s : g.grid)
    if (s <= 0) return false;  // dynamic, or no grid point at all
  const BlockSpec& spec = g.spec(m);
  std::vector<int> axis_used(g.grid.size(), 0);
  for (size_t d = 0; d < tiles.size(); ++d) {
    if (tiles[d] <= 1) continue;  // one block: every valid index names it
    if (!spec.index_map) return false;
    const Body& im = *spec.index_map;
    if (im.outputs().size() != tiles.size() || !im.outputs()[d].is_var()) return false;
    const auto& params = im.params();
    auto it = std::find(params.begin(), params.begin() + std::min<size_t>(params.size(), g.grid.size()),
                        im.outputs()[d].var());
    size_t axis = static_cast<size_t>(it - params.begin());
    if (axis >= g.grid.size() || g.grid[axis] != tiles[d] || axis_used[axis]++) return false;
  }
  return true;
}

// Whether the index map of mapping m returns grid axis `axis` for some dim.
bool forwards(const GridMapping& g, int m, int axis) {
  const BlockSpec& spec = g.spec(m);
  if (!spec.index_map) return false;
  const Body& im = *spec.index_map;
  if (axis >= static_cast<int>(im.params().size())) return false;
  const Var* v = im.params()[static_cast<size_t>(axis)];
  return std::any_of(im.outputs().begin(), im.outputs().end(), [v](const Value& x) { return x.var() == v; });
}

bool mentions(const Op& op, const Var* v) {
  return std::any_of(op.operands.begin(), op.operands.end(), [v](const Value& x) { return x.var() == v; });
}

bool used_after(const Body& body, size_t from, const Var* v) {
  for (size_t i = from; i < body.ops().size(); ++i)
    if (mentions(body.ops()[i], v)) return true;
  return std::any_of(body.outputs().begin(), body.outputs().end(), [v](const Value& x) { return x.var() == v; });
}

// The op at `i` is a swap of all of `ref` whose old contents are unused.
bool swaps_whole(const Body& body, size_t i, const Var* ref) {
  const Op& op = body.ops()[i];
  if (op.name() != "swap" || op.operands.empty() || op.operands[0].var() != ref) return false;
  const Indexer* ix = op.indexer_for(0);
  if (!ix || !whole_ref(*ix, ref->type.shape())) return false;
  for (const Var* old : op.results)
    if (used_after(body, i + 1, old)) return false;
  return true;
}

// The first op of `body` that mentions `ref`, or nothing.
std::optional<size_t> first_mention(const Body& body, const Var* ref) {
  for (size_t i = 0; i < body.ops().size(); ++i)
    if (mentions(body.ops()[i], ref)) return i;
  return std::nullopt;
}

// `v` is `eq program_id[axis=a], 0` (either operand order) of `kernel`'s top
// level: the kernel axis a, or nothing.
std::optional<int> first_step_axis(const Body& kernel, const Value& v) {
  auto defining = [&](const Var* x) -> const Op* {
    for (const Op& op : kernel.ops())
      if (std::find(op.results.begin(), op.results.end(), x) != op.results.end()) return &op;
    return nullptr;
  };
  const Op* eq = v.is_var() ? defining(v.var()) : nullptr;
  if (!eq || eq->name() != "eq" || eq->operands.size() != 2) return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    const Value &pid = eq->operands[static_cast<size_t>(side)], &zero = eq->operands[static_cast<size_t>(1 - side)];
    const Op* id = pid.is_var() ? defining(pid.var()) : nullptr;
    if (id && id->name() == "program_id" && zero.is_literal() && zero.literal().as_double() == 0)
      return static_cast<int>(id->param(keys::axis));
  }
  return std::nullopt;
}

// `op` is `cond %first, ...` with %first `program_id(k) == 0` for a grid
// axis k that the output's index map does not forward (its blocks are named
// by the other axes), passing `ref` once, whose taken branch starts by
// swapping all of it; every axis the map ignores (k too) is `arbitrary`, so
// all the points naming one block run on one thread, in grid order. The grid
// is walked row-major (the grid loop of jax/_src/pallas/pallas_call.py,
// interpreter/pallas_call.cpp): among the points naming a block, the first
// has every axis the map ignores, k too, at 0, so the block's first visit
// takes that branch and writes it whole before anything reads it.
bool first_step_init(const GridMapping& g, int m, const Op& op, const Var* ref) {
  if (op.name() != "cond") return false;
  CondView cond(op);
  if (cond.branches().size() != 2 || cond.index().type().dtype() != DType::i1) return false;
  std::optional<int> kernel_axis = first_step_axis(*g.kernel, cond.index());
  std::vector<int> axes = g.kernel_axes();
  if (!kernel_axis || *kernel_axis < 0 || *kernel_axis >= static_cast<int>(axes.size())) return false;
  int axis = axes[static_cast<size_t>(*kernel_axis)];
  if (forwards(g, m, axis)) return false;
  for (int a = 0; a < g.grid_rank(); ++a)  // every point naming a block runs on one thread, in order
    if (!forwards(g, m, a) && g.is_parallel(a) && (a == axis || g.grid[static_cast<size_t>(a)] > 1)) return false;
  auto args = cond.args();
  if (std::count_if(args.begin(), args.end(), [ref](const Value& x) { return x.var() == ref; }) != 1) return false;
  size_t at = static_cast<size_t>(std::find_if(args.begin(), args.end(), [ref](const Value& x) { return x.var() == ref; }) -
                                  args.begin());
  const Body& taken = *cond.branches()[1];
  const Var* inner = taken.params().at(at);
  std::optional<size_t> first = first_mention(taken, inner);
  return first && swaps_whole(taken, *first, inner);
}

// The kernel's first mention of `ref` writes all of it: a top-level swap of
// all of it whose old contents are unused, or the init under `cond` on the
// first step of a reduction axis (first_step_init). Nested bodies are closed:
// they see the Ref only through an operand of the op holding them, which
// would be that mention.
bool first_touch_writes_whole(const GridMapping& g, int m, const Var* ref) {
  const Body& kernel = *g.kernel;
  std::optional<size_t> first = first_mention(kernel, ref);
  return first && (swaps_whole(kernel, *first, ref) || first_step_init(g, m, kernel.ops()[*first], ref));
}

}  // namespace

bool whole_ref(const Indexer& ix, const Shape& ref_shape) {
  if (ix.entries.size() != ref_shape.size()) return false;
  for (size_t d = 0; d < ref_shape.size(); ++d) {
    const IndexEntry& e = ix.entries[d];
    bool whole = e.kind == IndexEntry::Full ||
                 (e.kind == IndexEntry::Slice && !e.is_dynamic() && !e.has_dynamic_size() && e.start == 0 &&
                  e.stride == 1 && e.size == ref_shape[d]);
    if (!whole) return false;
  }
  return true;
}

bool writes_every_element(const GridMapping& g, int output) {
  int m = g.num_inputs() + output;
  for (auto [in, out] : g.aliases)
    if (out == output) return false;
  if (!has_resident_block(g, m) || !g.kernel) return false;
  std::optional<std::vector<int64_t>> tiles = tiles_per_dim(g, m);
  if (!tiles || !index_map_visits_every_block(g, m, *tiles)) return false;
  return first_touch_writes_whole(g, m, g.kernel->params()[static_cast<size_t>(g.output_param(output))]);
}

}  // namespace tessera::backends::llvm_lowering
