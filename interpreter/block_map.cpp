#include "interpreter/block_map.h"

#include <map>
#include <set>

#include "interpreter/interpreter.h"
#include "runtime/region.h"

namespace tessera::interp {

int64_t BlockMap::num_points() const {
  int64_t n = 1;
  for (int64_t s : grid) n *= s;
  return n;
}

std::vector<int64_t> BlockMap::point(int64_t n) const {
  std::vector<int64_t> p(grid.size());
  for (size_t d = grid.size(); d-- > 0;) {
    p[d] = grid[d] > 0 ? n % grid[d] : 0;
    n = grid[d] > 0 ? n / grid[d] : 0;
  }
  return p;
}

int64_t BlockMap::number(const std::vector<int64_t>& p) const {
  if (p.size() != grid.size()) return -1;
  int64_t n = 0;
  for (size_t d = 0; d < grid.size(); ++d) {
    if (p[d] < 0 || p[d] >= grid[d]) return -1;
    n = n * grid[d] + p[d];
  }
  return n;
}

std::vector<const Op*> pallas_calls(const Body& f) {
  std::vector<const Op*> out;
  std::set<const Body*> seen;
  auto walk = [&](auto&& self, const Body& b) -> void {
    if (!seen.insert(&b).second) return;
    for (const Op& op : b.ops()) {
      if (op.name() == "pallas_call") {
        out.push_back(&op);
        continue;  // its kernel and index maps hold no pallas_call to draw
      }
      for (const BodyPtr& nb : op.nested_bodies()) self(self, *nb);
    }
  };
  walk(walk, f);
  return out;
}

namespace {

bool is_hbm(MemSpace s) { return s == MemSpace::any || s == MemSpace::hbm; }

// Whether an in-bounds block reaches into the padding around the data.
bool reaches_padding(const BlockGeometry& geo, const std::vector<BlockGeometry::Extent>& ext) {
  for (size_t d = 0; d < ext.size(); ++d) {
    const DimGeometry& g = geo.dims[d];
    if (ext[d].size > 0 && (ext[d].start < g.pad_lo || ext[d].start + ext[d].size > g.pad_lo + g.extent)) return true;
  }
  return false;
}

OperandBlocks operand_blocks(const Module& m, const GridMapping& g, int mi, const BlockMap& bm,
                             const std::vector<Array>& prefetch) {
  OperandBlocks ob;
  bool in = mi < g.num_inputs();
  int k = in ? mi : mi - g.num_inputs();
  ob.subject = (in ? "in[" : "out[") + std::to_string(k) + "]";
  ob.is_output = !in;
  int param = in ? g.input_param(k) : g.output_param(k);
  if (g.kernel && param < static_cast<int>(g.kernel->params().size())) ob.name = g.kernel->params()[param]->name;
  ob.array = g.array(mi);
  ob.geo = g.geometry(mi);
  const BlockSpec& spec = g.spec(mi);
  ob.whole = is_hbm(spec.mem);
  if (spec.index_map) ob.index_map = "@" + spec.index_map->name();
  if (ob.whole) return ob;

  int64_t n = bm.num_points();
  ob.block_of_point.assign(static_cast<size_t>(n), -1);
  std::optional<IndexMapEvaluator> eval;
  if (spec.index_map) eval.emplace(m, *spec.index_map, prefetch);
  std::map<std::vector<int64_t>, int> by_place;  // (start, size) per dim -> block
  for (int64_t p = 0; p < n; ++p) {
    std::vector<int64_t> index;
    try {
      index = eval ? (*eval)(bm.point(p)) : std::vector<int64_t>(ob.geo.index_arity(), 0);
    } catch (const Error& e) {
      ob.failures.emplace_back(p, e.message());
      continue;
    }
    if (static_cast<int>(index.size()) != ob.geo.index_arity()) {
      ob.failures.emplace_back(p, "the index map returned " + std::to_string(index.size()) + " values, expected " +
                                      std::to_string(ob.geo.index_arity()));
      continue;
    }
    std::vector<BlockGeometry::Extent> ext = ob.geo.block_at(index);
    std::vector<int64_t> place;
    for (const auto& e : ext) place.insert(place.end(), {e.start, e.size});
    auto [it, fresh] = by_place.emplace(place, static_cast<int>(ob.blocks.size()));
    if (fresh) {
      MappedBlock b;
      b.index = index;
      b.extent = ext;
      b.in_bounds = ob.geo.in_bounds(index);
      b.partial = b.in_bounds && reaches_padding(ob.geo, ext);
      ob.blocks.push_back(std::move(b));
    }
    MappedBlock& b = ob.blocks[static_cast<size_t>(it->second)];
    if (b.points.empty() || b.points.back() != p - 1) ++b.runs;
    b.points.push_back(p);
    ob.block_of_point[static_cast<size_t>(p)] = it->second;
  }
  return ob;
}

}  // namespace

BlockMap block_map(const Module& m, const Op& op, const std::string& call_name, const std::vector<Array>& prefetch) {
  GridMapping g = grid_mapping(op);
  BlockMap bm;
  bm.call = call_name;
  bm.kernel = g.kernel ? "@" + g.kernel->name() : "";
  bm.grid_names = g.grid_names;
  bm.semantics = g.dimension_semantics;
  int64_t points = 1;
  for (size_t d = 0; d < g.grid.size(); ++d) {
    if (g.grid[d] < 0)
      throw Error(op.loc, "pallas_call " + call_name + ": grid axis " + std::to_string(d) +
                              " has a dynamic size; a block map needs a static grid");
    if (__builtin_mul_overflow(points, g.grid[d], &points) || points > kMaxBlockMapPoints)
      throw Error(op.loc, "pallas_call " + call_name + ": the grid " + ints_str(g.grid) + " has more than " +
                              std::to_string(kMaxBlockMapPoints) + " points, too many to draw");
  }
  bm.grid = g.grid;
  if (static_cast<int>(prefetch.size()) != g.num_scalar_prefetch())
    throw Error(op.loc, "pallas_call " + call_name + ": its index maps take " + std::to_string(g.num_scalar_prefetch()) +
                            " scalar-prefetch operand(s), got values for " + std::to_string(prefetch.size()));
  for (int mi = 0; mi < g.num_inputs() + g.num_outputs(); ++mi) bm.operands.push_back(operand_blocks(m, g, mi, bm, prefetch));
  return bm;
}

}  // namespace tessera::interp
