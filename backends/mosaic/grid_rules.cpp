// Where a kernel instance runs: program_id, num_programs, device_id,
// axis_index, axis_size, and the multiple_of hint (jax/_src/pallas/mosaic/lowering.py,
// `_program_id_lowering_rule`, `_num_programs_lowering_rule`,
// `_device_id_lowering_rule`, `_axis_index_rule`, `_multiple_of_lowering_rule`).
#include "backends/mosaic/constants.h"
#include "backends/mosaic/mlir_types.h"
#include "backends/mosaic/rules.h"

namespace tessera::backends::mosaic {
namespace {

int64_t axis_param(KernelContext& ctx, const Op& op) {
  int64_t axis = op.param(keys::axis);
  if (axis < 0 || axis >= static_cast<int64_t>(ctx.grid.size()))
    throw ctx.error(op, "axis " + std::to_string(axis) + " is not an axis of the grid (rank " + std::to_string(ctx.grid.size()) + ")");
  return axis;
}

// program_id(k) is the kernel's k-th argument: no op.
void lower_program_id(EmitContext& e, const Op& op, const LoweringTable&) {
  KernelContext& ctx = kernel(e);
  ctx.alias(op.results[0], ctx.grid_args[axis_param(ctx, op)]);
}

// A static grid size is a constant; a dynamic one is read with tpu.iteration_bound.
void lower_num_programs(EmitContext& e, const Op& op, const LoweringTable&) {
  KernelContext& ctx = kernel(e);
  int64_t axis = axis_param(ctx, op);
  if (ctx.grid[axis] >= 0) {
    ctx.alias(op.results[0], i32_constant(ctx, ctx.grid[axis]));
    return;
  }
  ctx.line(ctx.def(op.results[0]) + " = \"tpu.iteration_bound\"() <{dim = " + std::to_string(axis) + " : i32}> : () -> i32");
}

void lower_device_id(EmitContext& e, const Op& op, const LoweringTable&) {
  e.line(e.def(op.results[0]) + " = \"tpu.device_id\"() : () -> i32");
}

// A grid axis's name is its program id; a device axis (an enclosing pmap)
// is read from the flat device id, the outermost axis the major one:
// (device_id / stride) % size.
void lower_axis_index(EmitContext& e, const Op& op, const LoweringTable&) {
  KernelContext& ctx = kernel(e);
  const std::string& name = op.param(keys::axis_name);
  for (size_t k = 0; k < ctx.grid_names.size(); ++k)
    if (ctx.grid_names[k] == name) return ctx.alias(op.results[0], ctx.grid_args[k]);
  for (size_t k = 0; k < ctx.mesh.size(); ++k) {
    if (ctx.mesh[k].name != name) continue;
    int64_t stride = 1;
    for (size_t j = k + 1; j < ctx.mesh.size(); ++j) stride *= ctx.mesh[j].size;
    std::string id = ctx.fresh("dev");
    ctx.line(id + " = \"tpu.device_id\"() : () -> i32");
    if (stride > 1) {
      std::string q = ctx.fresh();
      ctx.line(q + " = arith.divsi " + id + ", " + i32_constant(ctx, stride) + " : i32");
      id = q;
    }
    if (k > 0) {
      std::string r = ctx.fresh();
      ctx.line(r + " = arith.remsi " + id + ", " + i32_constant(ctx, ctx.mesh[k].size) + " : i32");
      id = r;
    }
    return ctx.alias(op.results[0], id);
  }
  throw ctx.error(op, "axis `" + name + "` is neither a grid axis nor an axis of an enclosing pmap");
}

// axis_size is a constant: the grid's size (or its iteration bound) for a
// grid axis name, the mesh's for a device axis. Pallas folds lax.axis_size
// while tracing, so Mosaic has no op for it.
void lower_axis_size(EmitContext& e, const Op& op, const LoweringTable&) {
  KernelContext& ctx = kernel(e);
  const std::string& name = op.param(keys::axis_name);
  for (size_t k = 0; k < ctx.grid_names.size(); ++k) {
    if (ctx.grid_names[k] != name) continue;
    if (ctx.grid[k] >= 0) return ctx.alias(op.results[0], i32_constant(ctx, ctx.grid[k]));
    ctx.line(ctx.def(op.results[0]) + " = \"tpu.iteration_bound\"() <{dim = " + std::to_string(k) + " : i32}> : () -> i32");
    return;
  }
  for (const MeshAxis& a : ctx.mesh)
    if (a.name == name) return ctx.alias(op.results[0], i32_constant(ctx, a.size));
  throw ctx.error(op, "axis `" + name + "` is neither a grid axis nor an axis of an enclosing pmap");
}

void lower_multiple_of(EmitContext& e, const Op& op, const LoweringTable&) {
  std::string v = e.use(op.operands[0]);
  std::string t = element_type(op.results[0]->type.dtype());
  e.line(e.def(op.results[0]) + " = \"tpu.assume_multiple\"(" + v + ") <{multiple = " + std::to_string(op.param(keys::value)) +
         " : i32}> : (" + t + ") -> " + t);
}

}  // namespace

void add_grid_rules(LoweringTable& t) {
  t.set("program_id", lower_program_id);
  t.set("num_programs", lower_num_programs);
  t.set("device_id", lower_device_id);
  t.set("axis_index", lower_axis_index);
  t.set("axis_size", lower_axis_size);
  t.set("multiple_of", lower_multiple_of);
}

}  // namespace tessera::backends::mosaic
