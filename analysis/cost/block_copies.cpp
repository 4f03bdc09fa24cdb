// The bytes a pallas_call's block copies move, as interpreter/pallas_call.cpp
// moves them on one core: an input block is copied in at the first grid point
// and whenever its place changes from the previous point; an output block is
// copied out whenever its place changes before the next point, and at the
// last. Places come from the index maps (evaluated by the interpreter's
// evaluator, which the caller hands in: CostOptions::index_maps) and the one
// block geometry of ir/block_geometry.h.
#include "analysis/cost/cost.h"
#include "ir/grid_mapping.h"

namespace tessera::cost {
namespace {

bool in_hbm(MemSpace s) { return s == MemSpace::any || s == MemSpace::hbm; }

using Place = std::vector<BlockGeometry::Extent>;

bool same_place(const Place& a, const Place& b) {
  if (a.size() != b.size()) return false;
  for (size_t d = 0; d < a.size(); ++d)
    if (a[d].start != b[d].start || a[d].size != b[d].size) return false;
  return true;
}

int64_t place_elements(const Place& p) {
  int64_t n = 1;
  for (const BlockGeometry::Extent& e : p) n *= e.size;
  return n;
}

}  // namespace

CostFigures block_copy_bytes(const Module& m, const Op& op, const std::vector<int64_t>& grid,
                             const std::vector<interp::Array>& prefetch, const IndexMapEvaluators& index_maps) {
  GridMapping g = grid_mapping(op);
  int64_t points = 1;
  for (int64_t s : grid) points *= s;
  CostFigures f;
  if (points <= 0) return f;
  for (int mi = 0; mi < g.num_inputs() + g.num_outputs(); ++mi) {
    const BlockSpec& spec = g.spec(mi);
    if (in_hbm(spec.mem)) continue;  // the kernel gets the HBM array: no block copies
    bool input = mi < g.num_inputs();
    BlockGeometry geo = g.geometry(mi);
    int64_t elem_bytes = dtype_bytes(g.array(mi).dtype());
    IndexMapAt eval;
    if (spec.index_map) {
      if (!index_maps) throw Error(op.loc, "cost: no index-map evaluator given (CostOptions::index_maps)");
      eval = index_maps(m, *spec.index_map, prefetch);
    }
    std::vector<int64_t> point(grid.size(), 0);
    auto place_at = [&](int64_t n) {
      int64_t rest = n;
      for (int d = static_cast<int>(grid.size()) - 1; d >= 0; --d) {
        point[static_cast<size_t>(d)] = rest % grid[static_cast<size_t>(d)];
        rest /= grid[static_cast<size_t>(d)];
      }
      std::vector<int64_t> index = eval ? eval(point) : std::vector<int64_t>(static_cast<size_t>(geo.index_arity()), 0);
      return geo.block_at(index);
    };
    // Each maximal run of consecutive points on one place is one copy (in at
    // its start, out at its end).
    Place prev = place_at(0);
    int64_t bytes = place_elements(prev) * elem_bytes;
    for (int64_t n = 1; n < points; ++n) {
      Place cur = place_at(n);
      if (!same_place(cur, prev)) bytes += place_elements(cur) * elem_bytes;
      prev = std::move(cur);
    }
    (input ? f.bytes_in : f.bytes_out) += bytes;
  }
  return f;
}

}  // namespace tessera::cost
