#include "backends/mosaic/emit_module.h"

#include <unordered_set>

#include "backends/mosaic/constants.h"
#include "backends/mosaic/kernel_signature.h"
#include "backends/mosaic/ref_indexing.h"
#include "backends/mosaic/rules.h"
#include "backends/mosaic/sc_module.h"
#include "backends/mosaic/transforms.h"
#include "backends/mosaic/window_params.h"
#include "ir/primitive.h"
#include "ir/sparse_core.h"

namespace tessera::backends::mosaic {
namespace {

// Appends the body of a kernel func to `out`: `body`'s ops, whose parameters
// are the func's arguments after the `grid.size()` leading i32 ones (grid or
// mesh indices), laid out as `params`. The context writes into `buffer`, whose
// capacity is kept from kernel to kernel: a module of many kernels reuses one
// allocation instead of growing a fresh string (fresh pages) for each.
void kernel_body(const Body& body, const std::vector<int64_t>& grid, const std::vector<std::string>& grid_names,
                 const std::vector<RefView>& params, const std::vector<MeshAxis>& mesh, const LoweringTable& table,
                 std::string& buffer, std::string& out) {
  KernelContext ctx;
  buffer.clear();
  ctx.text().swap(buffer);
  ctx.literal = scalar_constant;
  ctx.grid = grid;
  ctx.grid_names = grid_names;
  ctx.mesh = mesh;
  int k = 0;
  for (size_t a = 0; a < grid.size(); ++a) ctx.grid_args.push_back(ctx.fresh("arg" + std::to_string(k++)));
  for (size_t p = 0; p < params.size(); ++p) {
    std::string name = ctx.fresh("arg" + std::to_string(k++));
    if (p < body.params().size()) {
      ctx.alias(body.params()[p], name);
      ctx.set_ref_view(body.params()[p], params[p]);
    }
  }
  auto indent = ctx.indented(2);
  lower_body(ctx, body, table);
  ctx.line("return");
  out += ctx.text();
  ctx.text().swap(buffer);
}

// The symbol of the kernel func: the kernel's name, as Pallas uses the
// sanitized kernel function name.
// The kernel's symbol; an inline `fn` kernel has no name of its own.
std::string kernel_symbol(const GridMapping& g) {
  if (g.kernel && !g.kernel->name().empty()) return g.kernel->name();
  return g.name.empty() ? "kernel" : g.name;
}

struct Walker {
  std::string out;
  std::vector<MeshAxis> mesh;
  std::unordered_set<const Body*> visiting;  // a recursive call is walked once per path
  std::unordered_set<const Op*> emitted;     // a function called twice emits its calls once
  std::string buffer;                        // kernel_body's, reused

  void walk(const Body& body) {
    for (const Op& op : body.ops()) {
      const std::string& name = op.name();
      if (name == "pallas_call") {
        if (!emitted.insert(&op).second) continue;
        if (!out.empty()) out += "// -----\n";
        GridMapping g = grid_mapping(op);
        out += "// " + op.loc.str() + ": pallas_call of @" + kernel_symbol(g) + "\n";
        module_of(op, g, out);
        continue;
      }
      if (name == "core_map") {
        if (!emitted.insert(&op).second) continue;
        if (!out.empty()) out += "// -----\n";
        out += "// " + op.loc.str() + ": core_map over (" + join(op.param(keys::mesh_axes)) + ")\n";
        core_map_module(op, out);
        continue;
      }
      if (name == "pmap") mesh.push_back({op.param(keys::axis_name), op.param(keys::axis_size)});
      for (const BodyPtr& b : op.nested_bodies()) {
        if (!visiting.insert(b.get()).second) continue;
        walk(*b);
        visiting.erase(b.get());
      }
      if (name == "pmap") mesh.pop_back();
    }
  }

  // Appends the module of `call` to `text`.
  void module_of(const Op& call, const GridMapping& g, std::string& text) {
    if (is_sparse_core(g.kernel_type)) return sparse_core_module_of(g, call, text);
    KernelSignature sig = kernel_signature(g, call);
    text += "module {\n  func.func @" + kernel_symbol(g) + "(" + sig.arguments() + ") " + kernel_attributes(g, call) + " {\n";
    kernel_body(*g.kernel, g.grid, g.grid_names, sig.params, mesh, tensorcore_rules(), buffer, text);
    text += "  }\n";
    if (g.grid_rank() > 0)
      for (int m = 0; m < g.num_inputs() + g.num_outputs(); ++m)
        if (is_windowed(g, m)) text += transform_function(g, m);
    text += "}\n";
  }

  // Appends the module of a core_map over a TensorCore mesh: the body as a
  // kernel whose leading i32 arguments are the mesh indices (axis_index of a
  // mesh axis is its argument) and whose other arguments are the Refs it is
  // given, whole.
  void core_map_module(const Op& op, std::string& text) {
    if (is_sparse_core(op.param(keys::kernel_type))) return sparse_core_mesh_module(op, text);
    const Body& body = *op.param(keys::body);
    std::vector<RefView> params;
    std::vector<Type> types;
    for (const Value& v : op.operands) {
      if (!v.type().is_ref())
        throw Error(op.loc, "mosaic: a core_map operand must be a Ref on the TensorCore, got " + v.type().str());
      params.push_back(RefView::of(v.type()));
      types.push_back(v.type());
    }
    const std::vector<int64_t>& shape = op.param(keys::mesh_shape);
    std::string args;
    for (size_t k = 0; k < shape.size(); ++k) args += (k ? ", %arg" : "%arg") + std::to_string(k) + ": i32";
    for (size_t p = 0; p < params.size(); ++p) args += ", %arg" + std::to_string(shape.size() + p) + ": " + params[p].memref_type();
    text += "module {\n  func.func @core_map(" + args + ") " + core_map_attributes(shape, types) + " {\n";
    kernel_body(body, shape, op.param(keys::mesh_axes), params, mesh, tensorcore_rules(), buffer, text);
    text += "  }\n}\n";
  }

  // The SparseCore forms (sc_module.h): the same layout, the body through
  // sparse_core_rules(), and a transform function for every block mapping.
  void sparse_core_module_of(const GridMapping& call_grid, const Op& call, std::string& text) {
    ScCallKernel k = sc_call_kernel(call_grid, call);
    text += "module {\n  func.func @" + kernel_symbol(k.grid) + "(" + k.arguments + ") " + k.attributes + " {\n";
    kernel_body(*k.body, k.grid.grid, k.grid.grid_names, k.params, mesh, sparse_core_rules(), buffer, text);
    text += "  }\n";
    for (int m = 0; m < k.grid.num_inputs() + k.grid.num_outputs(); ++m) text += transform_function(k.grid, m);
    text += "}\n";
  }

  void sparse_core_mesh_module(const Op& op, std::string& text) {
    ScMeshKernel k = sc_mesh_kernel(op);
    text += "module {\n  func.func @core_map(" + k.arguments + ") " + k.attributes + " {\n";
    kernel_body(*k.body, k.mesh_shape, op.param(keys::mesh_axes), k.params, mesh, sparse_core_rules(), buffer, text);
    text += "  }\n}\n";
  }
};

}  // namespace

std::string emit_pallas_call(const Op& call) {
  Walker w;
  std::string out;
  w.module_of(call, grid_mapping(call), out);
  return out;
}

std::string emit_modules(const Module&, const Body& entry) {
  Walker w;
  w.walk(entry);
  if (w.out.empty())
    throw Error(entry.loc(), "mosaic: no pallas_call is reachable from @" + entry.name() + ": nothing to emit (pass the function "
                             "that calls the kernel with --func)");
  return w.out;
}

std::string checkable(std::string_view text) {
  static constexpr std::string_view kSpace = "#tpu.memory_space<", kSem = "!tpu.semaphore", kDmaSem = "!tpu.dma_semaphore";
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    if (text.compare(i, kSpace.size(), kSpace) == 0) {
      size_t close = text.find('>', i + kSpace.size());
      if (close != std::string_view::npos) {
        out += "\"" + std::string(text.substr(i + kSpace.size(), close - i - kSpace.size())) + "\"";
        i = close + 1;
        continue;
      }
    }
    if (text.compare(i, kDmaSem.size(), kDmaSem) == 0 || text.compare(i, kSem.size(), kSem) == 0) {
      out += "i32";
      i += text.compare(i, kDmaSem.size(), kDmaSem) == 0 ? kDmaSem.size() : kSem.size();
      continue;
    }
    out += text[i++];
  }
  return out;
}

}  // namespace tessera::backends::mosaic
