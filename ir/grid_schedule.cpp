// The grid schedule of a pallas_call: see grid_schedule.h.
#include "ir/grid_schedule.h"

#include <algorithm>

namespace tessera {

int leading_parallel_axes(const GridMapping& g) {
  int k = 0;
  while (k < g.grid_rank() && g.is_parallel(k)) ++k;
  return k;
}

bool parallel_axes_form_prefix(const GridMapping& g) {
  for (int a = leading_parallel_axes(g); a < g.grid_rank(); ++a)
    if (g.is_parallel(a)) return false;
  return true;
}

std::optional<GridOrder> grid_order(const GridMapping& g, const std::vector<int64_t>& sizes) {
  GridOrder o;
  o.sizes = sizes;
  o.parallel = leading_parallel_axes(g);
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (__builtin_mul_overflow(o.steps, sizes[d], &o.steps)) return std::nullopt;
    if (static_cast<int>(d) < o.parallel) o.positions *= sizes[d];
  }
  return o;
}

GridOrder::Range GridOrder::core_steps(int core, int cores) const {
  if (steps == 0 || cores <= 0) return {};
  // Each core takes ceil(positions / cores) whole positions, in order.
  int64_t per_core = (positions + cores - 1) / cores * (steps / positions);
  int64_t first = std::min(core * per_core, steps);
  return {first, std::min(first + per_core, steps)};
}

std::vector<int64_t> GridOrder::coords(int64_t step) const {
  std::vector<int64_t> c(sizes.size());
  for (size_t d = sizes.size(); d-- > 0;) {
    c[d] = step % sizes[d];
    step /= sizes[d];
  }
  return c;
}

void GridOrder::advance(std::vector<int64_t>& c) const {
  for (size_t d = sizes.size(); d-- > 0;) {
    if (++c[d] < sizes[d]) return;
    c[d] = 0;
  }
}

bool has_resident_block(const GridMapping& g, int m) {
  MemSpace s = g.spec(m).mem;
  return s != MemSpace::any && s != MemSpace::hbm;
}

StepResidency residency_at(bool first, bool last, const std::vector<int64_t>& previous, const std::vector<int64_t>& current,
                           const std::vector<int64_t>& next) {
  ConcreteAlgebra a;
  StepResidency r;
  r.copy_in = copies_in(a, first, previous, current);
  r.copy_out = copies_out(a, last, current, next);
  r.carried = carried(a, first, previous, current);
  return r;
}

}  // namespace tessera
