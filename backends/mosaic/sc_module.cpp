#include "backends/mosaic/sc_module.h"

#include "backends/mosaic/kernel_signature.h"
#include "backends/mosaic/ref_indexing.h"
#include "backends/mosaic/window_params.h"
#include "ir/control_views.h"

namespace tessera::backends::mosaic {
namespace {

std::string core_type(const std::string& kernel_type) { return "tpu.core_type = #tpu.core_type<" + kernel_type + ">"; }

// `%argK: memref<...>`, then ` {sc.persistent}` when `persistent`.
std::string memref_argument(int k, const RefView& v, bool persistent) {
  return "%arg" + std::to_string(k) + ": " + v.memref_type() + (persistent ? " {sc.persistent}" : "");
}

std::string i32_arguments(size_t n) {
  std::string out;
  for (size_t k = 0; k < n; ++k) out += (k ? ", %arg" : "%arg") + std::to_string(k) + ": i32";
  return out;
}

// The run_scoped that is a kernel body's only op and receives exactly the
// body's parameters, in order: its allocations live as long as the kernel,
// so they are scratch operands (`pl.kernel`'s scratch_shapes; on a
// pallas_call, the VMEM scratch the verifier asks to write this way).
const Op* whole_kernel_run_scoped(const Body& body) {
  if (body.ops().size() != 1 || body.ops().front().name() != "run_scoped" || !body.outputs().empty()) return nullptr;
  RunScopedView scoped(body.ops().front());
  if (scoped.args().size() != body.params().size()) return nullptr;
  for (size_t i = 0; i < scoped.args().size(); ++i)
    if (!scoped.args()[i].is_var() || scoped.args()[i].var() != body.params()[i]) return nullptr;
  return &scoped.op;
}

// Hoists the allocations of `body`'s whole-kernel run_scoped, if it has one,
// into scratch arguments numbered from `arg`; returns the body to lower.
const Body* hoist_scratch(const Body& body, int& arg, std::string& args, std::vector<RefView>& params, size_t& scratch) {
  const Op* scoped_op = whole_kernel_run_scoped(body);
  if (!scoped_op) return &body;
  RunScopedView scoped(*scoped_op);
  for (Var* s : scoped.scratch_params()) {
    RefView view = on_sparse_core(RefView::of(s->type));
    args += ", " + memref_argument(arg++, view, false);
    params.push_back(view);
    ++scratch;
  }
  return &scoped.body();
}

}  // namespace

RefView on_sparse_core(RefView view) {
  if (view.space == MemSpace::any) view.space = MemSpace::hbm;
  return view;
}

ScCallKernel sc_call_kernel(const GridMapping& call_grid, const Op& call) {
  ScCallKernel k{call_grid, nullptr, {}, {}, {}};
  GridMapping& g = k.grid;
  if (g.num_scalar_prefetch()) throw Error(call.loc, "mosaic: Scalar prefetch not supported.");
  if (!g.dimension_semantics.empty() && static_cast<int>(g.dimension_semantics.size()) != g.grid_rank())
    throw Error(call.loc, "mosaic: Length of grid does not match length of dimension semantics.");
  if (g.grid.empty()) {
    g.grid = {1};
    g.dimension_semantics = {"arbitrary"};
    g.vmapped_dims.clear();
  }
  int mappings = g.num_inputs() + g.num_outputs();
  std::string args = i32_arguments(g.grid.size());
  std::vector<std::string> windows;
  int arg = g.grid_rank();
  for (int m = 0; m < mappings; ++m) {
    for (const BlockDim& d : g.dims(m))
      if (d.kind != BlockDimKind::Blocked)
        throw Error(call.loc, "mosaic: " + g.describe(m) + ": Unsupported block dimension type: " +
                                  (d.kind == BlockDimKind::Squeezed ? "squeezed" : d.kind == BlockDimKind::Element ? "element" : "bounded") +
                                  " (SparseCore blocks have Blocked dims only)");
    if (!is_windowed(g, m) && !is_trivial_window(g, m))
      throw Error(call.loc, "mosaic: " + g.describe(m) + " lives in " + std::string(mem_space_name(g.spec(m).mem)) +
                                ", which the kernel reaches only by DMA: its block must be the whole array at index 0");
    RefView v = on_sparse_core(operand_view(g, m));
    bool persistent = v.space == MemSpace::hbm || v.space == MemSpace::semaphore;
    args += ", " + memref_argument(arg++, v, persistent);
    windows.push_back("{transform_indices = @transform_" + std::to_string(m) + ", window_bounds = " + i64_array(v.memref_shape) +
                      "}");
    k.params.push_back(v);
  }
  size_t scratch = g.scratch_types.size();
  for (const Type& t : g.scratch_types) {
    RefView v = on_sparse_core(RefView::of(t));
    args += ", " + memref_argument(arg++, v, false);
    k.params.push_back(v);
  }
  k.body = hoist_scratch(*g.kernel, arg, args, k.params, scratch);
  k.arguments = args;
  k.attributes = "attributes {dimension_semantics = " + dimension_semantics_attr(g) + ", iteration_bounds = " +
                 iteration_bounds_attr(g) + ", scratch_operands = " + std::to_string(scratch) + " : i64, " +
                 core_type(g.kernel_type) + ", window_params = [" + join(windows) + "]}";
  return k;
}

ScMeshKernel sc_mesh_kernel(const Op& op) {
  ScMeshKernel k;
  k.body = op.param(keys::body).get();
  k.mesh_shape = op.param(keys::mesh_shape);
  const std::string& kernel_type = op.param(keys::kernel_type);
  static const char* kSemantics[] = {"core_parallel", "subcore_parallel"};
  if (k.mesh_shape.size() > 2)
    throw Error(op.loc, "mosaic: a SparseCore mesh has at most two axes (cores, subcores), got " +
                            std::to_string(k.mesh_shape.size()));
  std::vector<std::string> semantics, windows;
  std::string dims;
  for (size_t a = 0; a < k.mesh_shape.size(); ++a) {
    semantics.push_back(std::string("#tpu.dimension_semantics<") + kSemantics[a] + ">");
    dims += (a ? ", d" : "d") + std::to_string(a);
  }
  std::string args = i32_arguments(k.mesh_shape.size());
  int arg = static_cast<int>(k.mesh_shape.size());
  for (const Value& v : op.operands) {
    if (!v.type().is_ref())
      throw Error(op.loc, "mosaic: a core_map operand must be a Ref on the SparseCore, got " + v.type().str());
    RefView view = on_sparse_core(RefView::of(v.type()));
    args += ", " + memref_argument(arg++, view, false);
    std::vector<std::string> zeros(static_cast<size_t>(v.type().rank()), "0");
    windows.push_back("{transform_indices = affine_map<(" + dims + ") -> (" + join(zeros) + ")>}");
    k.params.push_back(view);
  }
  size_t scratch = 0;
  k.body = hoist_scratch(*k.body, arg, args, k.params, scratch);
  k.arguments = args;
  k.attributes = "attributes {dimension_semantics = [" + join(semantics) + "], iteration_bounds = " + i64_array(k.mesh_shape) +
                 ", scalar_prefetch = 0 : i64, scratch_operands = " + std::to_string(scratch) + " : i64, " +
                 core_type(kernel_type) + ", window_params = [" + join(windows) + "]}";
  return k;
}

}  // namespace tessera::backends::mosaic
