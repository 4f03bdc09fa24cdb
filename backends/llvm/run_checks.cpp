#include "backends/llvm/run_checks.h"

#include <algorithm>
#include <map>

#include "interpreter/interpreter.h"
#include "ir/grid_mapping.h"
#include "runtime/region.h"

namespace tessera::backends::llvm_lowering {
namespace {

std::vector<int64_t> words(const int64_t* record, int at, size_t n) {
  return std::vector<int64_t>(record + at, record + at + static_cast<int>(n));
}

// The interpreter's copy_in / copy_out message (interpreter/pallas_call.cpp).
std::string block_index_message(const GridMapping& g, int mapping, const std::vector<int64_t>& point,
                                const std::vector<int64_t>& index) {
  BlockGeometry geo = g.geometry(mapping);
  interp::Region region;
  std::vector<BlockGeometry::Extent> extent = geo.block_at(index);
  for (size_t d = 0; d < extent.size(); ++d)
    region.push_back(interp::Sel{extent[d].start, extent[d].size, 1, geo.dims[d].dim.kind != BlockDimKind::Squeezed});
  bool input = mapping < g.num_inputs();
  std::string name = g.describe(mapping);
  Shape shape = g.array(mapping).shape(), padded = geo.padded_shape();
  std::string pad_note = padded == shape ? "" : " (padded to " + shape_str(padded) + ")";
  return "Out-of-bounds block index " + interp::ints_str(index) + " for " + name + " in iteration " +
         interp::ints_str(point) + ": " + (input ? "reading " : "writing ") + interp::region_str(region) + " but " +
         (input ? "input" : "output") + " has shape " + shape_str(shape) + pad_note + " (kernel @" + g.kernel->name() + ")";
}

// Whether the index map only forwards grid indices (each at most once) and
// constants: then its block changes exactly when one of those axes moves.
std::optional<std::vector<int>> forwarded_axes(const Body& map, int grid_rank) {
  if (!map.ops().empty()) return std::nullopt;
  std::vector<int> axes;
  for (const Value& v : map.outputs()) {
    if (v.is_literal()) continue;
    int a = -1;
    for (int p = 0; p < grid_rank; ++p)
      if (map.params()[p] == v.var()) a = p;
    if (a < 0 || std::find(axes.begin(), axes.end(), a) != axes.end()) return std::nullopt;
    axes.push_back(a);
  }
  return axes;
}

// A forwarding index map revisits iff an axis it ignores (of size > 1) lies
// outside one it forwards (of size > 1): the forwarded axis then cycles again.
bool forwarding_revisits(const std::vector<int>& axes, const std::vector<int64_t>& grid) {
  int innermost_ignored_outer = -1;
  for (int a = 0; a < static_cast<int>(grid.size()); ++a) {
    bool forwarded = std::find(axes.begin(), axes.end(), a) != axes.end();
    if (grid[a] <= 1) continue;
    if (!forwarded) innermost_ignored_outer = a;
    else if (innermost_ignored_outer >= 0) return true;
  }
  return false;
}

}  // namespace

std::optional<Error> check_record_error(const Op& call, const std::vector<const Op*>& checked_ops, const int64_t* record) {
  GridMapping g = grid_mapping(call);
  size_t rank = std::min<size_t>(g.grid.size(), kMaxCheckedAxes);
  std::vector<int64_t> point = words(record, kCheckPoint, rank);
  int64_t which = record[kCheckWhich];
  switch (static_cast<CheckKind>(record[kCheckKind])) {
    case CheckKind::none: return std::nullopt;
    case CheckKind::block_index: {
      int mapping = static_cast<int>(which);
      BlockGeometry geo = g.geometry(mapping);
      size_t arity = std::min<size_t>(static_cast<size_t>(geo.index_arity()), kMaxCheckedValues);
      return Error(call.loc, block_index_message(g, mapping, point, words(record, kCheckValues, arity)));
    }
    case CheckKind::hint: {
      if (which < 0 || which >= static_cast<int64_t>(checked_ops.size())) break;
      const Op& op = *checked_ops[static_cast<size_t>(which)];
      return Error(op.loc, "multiple_of: the hint is false: " + std::to_string(record[kCheckValues]) +
                               " is not a multiple of " + std::to_string(op.param(keys::value)) + " (in kernel @" +
                               g.kernel->name() + " in iteration " + interp::ints_str(point) + ")");
    }
    case CheckKind::dynamic_index: {
      if (which < 0 || which >= static_cast<int64_t>(checked_ops.size())) break;
      const Op& op = *checked_ops[static_cast<size_t>(which)];
      return Error(op.loc, op.name() + ": out-of-bounds dynamic index in iteration " + interp::ints_str(point) +
                               " (kernel @" + g.kernel->name() + ")");
    }
  }
  return Error(call.loc, "internal error: unknown check record kind " + std::to_string(record[kCheckKind]));
}

std::optional<Error> revisit_error(const Module& m, const Op& call, const std::vector<interp::Array>& operands) {
  GridMapping g = grid_mapping(call);
  int rank = g.grid_rank();
  int64_t points = 1;
  for (int64_t s : g.grid) {
    if (s < 0) return std::nullopt;  // dynamic grids are refused when lowering
    points *= s;
  }
  std::vector<bool> aliased(g.num_outputs(), false);
  for (auto [in, out] : g.aliases) aliased[static_cast<size_t>(out)] = true;
  std::vector<interp::Array> prefetch;
  for (int j = 0; j < g.num_scalar_prefetch(); ++j) prefetch.push_back(operands.at(g.scalar_prefetch_operand(j)));
  for (int o = 0; o < g.num_outputs(); ++o) {
    int mapping = g.num_inputs() + o;
    const BlockSpec& spec = g.spec(mapping);
    if (aliased[o] || !spec.index_map || spec.mem == MemSpace::any || spec.mem == MemSpace::hbm) continue;
    std::optional<std::vector<int>> axes = forwarded_axes(*spec.index_map, rank);
    if (axes && !forwarding_revisits(*axes, g.grid)) continue;
    // Walk the grid as one core does (interpreter/pallas_call.cpp run_core).
    interp::IndexMapEvaluator eval(m, *spec.index_map, prefetch);
    struct Visit {
      std::vector<int64_t> first, last;
    };
    std::map<std::vector<int64_t>, Visit> seen;
    std::vector<int64_t> point(rank, 0), current;
    for (int64_t n = 0; n < points; ++n) {
      std::vector<int64_t> index;
      try {
        index = eval(point);
      } catch (const Error&) {
        return std::nullopt;  // the kernel's own checks (or the interpreter) report it
      }
      if (n > 0 && index == current) {
        seen[index].last = point;
      } else if (auto f = seen.find(index); f != seen.end()) {
        BlockGeometry geo = g.geometry(mapping);
        interp::Region region;
        std::vector<BlockGeometry::Extent> extent = geo.block_at(index);
        for (size_t d = 0; d < extent.size(); ++d)
          region.push_back(interp::Sel{extent[d].start, extent[d].size, 1, geo.dims[d].dim.kind != BlockDimKind::Squeezed});
        std::string name = g.describe(mapping);
        return Error(call.loc, "Revisited block " + interp::region_str(region) + " of output " +
                                   name.substr(name.find(' ') + 1) + " in iteration " + interp::ints_str(point) +
                                   ". The block was previously visited in iterations " + interp::ints_str(f->second.first) +
                                   " through " + interp::ints_str(f->second.last) + " . (kernel @" + g.kernel->name() + ")");
      } else {
        seen[index] = Visit{point, point};
        current = index;
      }
      for (int d = rank - 1; d >= 0; --d) {
        if (++point[d] < g.grid[d]) break;
        point[d] = 0;
      }
    }
  }
  return std::nullopt;
}

}  // namespace tessera::backends::llvm_lowering
