// The bytes a pallas_call's block copies move, as interpreter/pallas_call.cpp
// moves them on one core: the grid schedule of ir/grid_schedule.h copies an
// input block in at the first step and whenever it moves, and an output block
// out whenever it is about to move and after the last step. Places come from
// the index maps (evaluated by the interpreter's evaluator, which the caller
// hands in: CostOptions::index_maps) and the one block geometry of
// ir/block_geometry.h.
#include "analysis/cost/cost.h"
#include "ir/grid_mapping.h"
#include "ir/grid_schedule.h"

namespace tessera::cost {
namespace {

// Where a block lies: (start, size) per dim, as the schedule compares it.
using Place = std::vector<int64_t>;

Place place_of(const std::vector<BlockGeometry::Extent>& extents) {
  Place p;
  for (const BlockGeometry::Extent& e : extents) p.insert(p.end(), {e.start, e.size});
  return p;
}

int64_t place_elements(const Place& p) {
  int64_t n = 1;
  for (size_t d = 1; d < p.size(); d += 2) n *= p[d];
  return n;
}

}  // namespace

CostFigures block_copy_bytes(const Module& m, const Op& op, const std::vector<int64_t>& grid,
                             const std::vector<interp::Array>& prefetch, const IndexMapEvaluators& index_maps) {
  GridMapping g = grid_mapping(op);
  std::optional<GridOrder> order = grid_order(g, grid);
  if (!order) throw Error(op.loc, "cost: the grid of pallas_call " + g.name + " has more than 2^63 points");
  CostFigures f;
  if (order->steps <= 0) return f;
  for (int mi = 0; mi < g.num_inputs() + g.num_outputs(); ++mi) {
    if (!has_resident_block(g, mi)) continue;  // the kernel gets the HBM array: no block copies
    const BlockSpec& spec = g.spec(mi);
    bool input = mi < g.num_inputs();
    BlockGeometry geo = g.geometry(mi);
    int64_t elem_bytes = dtype_bytes(g.array(mi).dtype());
    IndexMapAt eval;
    if (spec.index_map) {
      if (!index_maps) throw Error(op.loc, "cost: no index-map evaluator given (CostOptions::index_maps)");
      eval = index_maps(m, *spec.index_map, prefetch);
    }
    std::vector<int64_t> point = order->coords(0);
    auto place_at = [&](const std::vector<int64_t>& p) {
      std::vector<int64_t> index = eval ? eval(p) : std::vector<int64_t>(static_cast<size_t>(geo.index_arity()), 0);
      return place_of(geo.block_at(index));
    };
    // One core runs every step: its first is step 0, its last steps - 1.
    Place prev, cur = place_at(point), next;
    int64_t bytes = 0;
    for (int64_t n = 0; n < order->steps; ++n) {
      bool last = n + 1 == order->steps;
      if (!last) {
        order->advance(point);
        next = place_at(point);
      }
      StepResidency r = residency_at(n == 0, last, prev, cur, next);
      if (input ? r.copy_in : r.copy_out) bytes += place_elements(cur) * elem_bytes;
      prev = std::move(cur);
      cur = std::move(next);
    }
    (input ? f.bytes_in : f.bytes_out) += bytes;
  }
  return f;
}

}  // namespace tessera::cost
