#include "backends/mosaic/window_params.h"

#include "backends/mosaic/kernel_signature.h"
#include "backends/mosaic/ref_indexing.h"

namespace tessera::backends::mosaic {

std::string dimension_semantics_attr(const GridMapping& g) {
  std::vector<std::string> parts;
  for (int k = 0; k < g.grid_rank(); ++k) {
    std::string s = k < static_cast<int>(g.dimension_semantics.size()) ? g.dimension_semantics[k] : "arbitrary";
    for (int64_t v : g.vmapped_dims)
      if (v == k && g.dimension_semantics.empty()) s = "parallel";  // vmapped axes are parallel by default
    parts.push_back("#tpu.dimension_semantics<" + s + ">");
  }
  return "[" + join(parts) + "]";
}

std::string iteration_bounds_attr(const GridMapping& g) {
  std::string out = "array<i64";
  for (size_t k = 0; k < g.grid.size(); ++k)
    out += (k ? ", " : ": ") + (g.grid[k] < 0 ? std::string(kDynamicBound) : std::to_string(g.grid[k]));
  return out + ">";
}

namespace {

std::string pipeline_mode(const GridMapping& g, int m) {
  const BlockSpec& spec = g.spec(m);
  if (spec.buffer_count == 1 || (spec.mem == MemSpace::vmem && is_trivial_window(g, m))) return "synchronous";
  if (spec.buffer_count == 2) return "double_buffered";
  return "";
}

// `#tpu.element_window<[lo...],[hi...]>` when some dim is an Element dim.
std::string window_kind(const GridMapping& g, int m) {
  BlockGeometry geo = g.geometry(m);
  bool any = false;
  std::vector<std::string> lo, hi;
  for (const DimGeometry& d : geo.dims) {
    bool element = d.dim.kind == BlockDimKind::Element;
    any |= element;
    lo.push_back(std::to_string(element ? d.dim.pad_lo : 0));
    hi.push_back(std::to_string(element ? d.dim.pad_hi : 0));
  }
  return any ? "#tpu.element_window<[" + join(lo) + "],[" + join(hi) + "]>" : "";
}

}  // namespace

std::string window_param(const GridMapping& g, int m) {
  if (!is_windowed(g, m)) return "{}";
  std::vector<std::string> attrs;
  std::string mode = pipeline_mode(g, m);
  if (!mode.empty()) attrs.push_back("pipeline_mode = #tpu.pipeline_mode<" + mode + ">");
  attrs.push_back("transform_indices = @transform_" + std::to_string(m));
  attrs.push_back("window_bounds = " + i64_array(g.geometry(m).window()));
  std::string kind = window_kind(g, m);
  if (!kind.empty()) attrs.push_back("window_kind = " + kind);
  return "{" + join(attrs) + "}";
}

std::string kernel_attributes(const GridMapping& g, const Op& call) {
  int mappings = g.num_inputs() + g.num_outputs();
  if (!g.dimension_semantics.empty() && static_cast<int>(g.dimension_semantics.size()) != g.grid_rank())
    throw Error(call.loc, "mosaic: Length of grid does not match length of dimension semantics.");
  for (int m = 0; m < mappings; ++m)
    if (g.spec(m).buffer_count > 2)
      throw Error(call.loc, "mosaic: Buffered(" + std::to_string(g.spec(m).buffer_count) + ") of " + g.describe(m) +
                                ": Mosaic pipelines with 1 or 2 buffers");
  std::vector<std::string> attrs{"dimension_semantics = " + dimension_semantics_attr(g)};
  if (g.grid_rank() > 0) attrs.push_back("iteration_bounds = " + iteration_bounds_attr(g));
  attrs.push_back("scalar_prefetch = " + std::to_string(g.num_scalar_prefetch()) + " : i64");
  attrs.push_back("scratch_operands = " + std::to_string(g.scratch_types.size()) + " : i64");
  attrs.push_back("tpu.core_type = #tpu.core_type<tc>");
  if (g.grid_rank() > 0) {
    std::vector<std::string> windows;
    for (int m = 0; m < mappings; ++m) windows.push_back(window_param(g, m));
    attrs.push_back("window_params = [" + join(windows) + "]");
  } else {
    for (int m = 0; m < mappings; ++m)
      if (!is_trivial_window(g, m))
        throw Error(call.loc, "mosaic: Non-trivial windowing is not supported for grid-free pallas_call. (" + g.describe(m) + ")");
  }
  return "attributes {" + join(attrs) + "}";
}

std::string core_map_attributes(const std::vector<int64_t>& mesh_shape, const std::vector<Type>& operands) {
  std::vector<std::string> semantics, windows;
  std::string dims;
  for (size_t k = 0; k < mesh_shape.size(); ++k) {
    semantics.push_back("#tpu.dimension_semantics<core_parallel>");
    dims += (k ? ", d" : "d") + std::to_string(k);
  }
  for (const Type& t : operands) {
    MemSpace m = t.mem_space();
    if (m == MemSpace::any || m == MemSpace::hbm || m == MemSpace::semaphore) {
      windows.push_back("{}");
      continue;
    }
    std::vector<std::string> zeros(static_cast<size_t>(t.rank()), "0");
    windows.push_back("{transform_indices = affine_map<(" + dims + ") -> (" + join(zeros) + ")>}");
  }
  return "attributes {dimension_semantics = [" + join(semantics) + "], iteration_bounds = " + i64_array(mesh_shape) +
         ", scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, tpu.core_type = #tpu.core_type<tc>, window_params = [" +
         join(windows) + "]}";
}

}  // namespace tessera::backends::mosaic
