#include "backends/llvm/output_coverage.h"

#include <algorithm>

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

bool mentions(const Op& op, const Var* v) {
  return std::any_of(op.operands.begin(), op.operands.end(), [v](const Value& x) { return x.var() == v; });
}

bool used_after(const Body& body, size_t from, const Var* v) {
  for (size_t i = from; i < body.ops().size(); ++i)
    if (mentions(body.ops()[i], v)) return true;
  return std::any_of(body.outputs().begin(), body.outputs().end(), [v](const Value& x) { return x.var() == v; });
}

// The kernel's first mention of `ref` is a top-level swap of all of it whose
// old contents are unused. Nested bodies are closed: they see the Ref only
// through an operand of the op holding them, which would be that mention.
bool first_touch_writes_whole(const Body& kernel, const Var* ref) {
  const auto& ops = kernel.ops();
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    if (!mentions(op, ref)) continue;
    if (op.name() != "swap" || op.operands.empty() || op.operands[0].var() != ref) return false;
    const Indexer* ix = op.indexer_for(0);
    if (!ix || !whole_ref(*ix, ref->type.shape())) return false;
    for (const Var* old : op.results)
      if (used_after(kernel, i + 1, old)) return false;
    return true;
  }
  return false;
}

}  // namespace

bool writes_every_element(const GridMapping& g, int output) {
  int m = g.num_inputs() + output;
  for (auto [in, out] : g.aliases)
    if (out == output) return false;
  MemSpace mem = g.spec(m).mem;
  if (mem == MemSpace::any || mem == MemSpace::hbm || !g.kernel) return false;
  std::optional<std::vector<int64_t>> tiles = tiles_per_dim(g, m);
  if (!tiles || !index_map_visits_every_block(g, m, *tiles)) return false;
  return first_touch_writes_whole(*g.kernel, g.kernel->params()[static_cast<size_t>(g.output_param(output))]);
}

}  // namespace tessera::backends::llvm_lowering
