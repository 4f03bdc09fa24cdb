#include "analysis/prove/block_region.h"

namespace tessera::prove {

std::vector<SymExtent> block_region(z3::context& ctx, const BlockGeometry& geo, const std::vector<Sym>& index) {
  std::vector<SymExtent> r;
  size_t k = 0;
  for (const DimGeometry& d : geo.dims) {
    const z3::expr& i = index.at(k++).e;
    // DimGeometry::start and window(), symbolically.
    z3::expr start = d.dim.kind == BlockDimKind::Blocked ? i * ctx.int_val(d.dim.size) : i;
    z3::expr size = d.arity() == 2 ? index.at(k++).e : ctx.int_val(d.window());
    r.push_back({start, size});
  }
  return r;
}

z3::expr regions_overlap(z3::context& ctx, const std::vector<SymExtent>& a, const std::vector<SymExtent>& b) {
  z3::expr e = ctx.bool_val(true);
  for (size_t d = 0; d < a.size() && d < b.size(); ++d)
    e = e && a[d].start < b[d].start + b[d].size && b[d].start < a[d].start + a[d].size;
  return e;
}

}  // namespace tessera::prove
