// pmap and core_map: named axes and devices. `axis_index` must name an axis
// bound by an enclosing pmap / core_map (or, in a kernel, the enclosing
// pallas_call's grid_names); remote DMAs and signals name a device, so they
// need an enclosing pmap or core_map; `program_id` needs an enclosing
// pallas_call, and not inside an index map, which gets the program ids as
// its parameters (jax/_src/pallas/core.py: `*program_ids, *scalar_prefetch`).
#include <algorithm>
#include <set>

#include "verify/check.h"

namespace tessera::verify_detail {
namespace {

bool bound(const Context& ctx, const std::string& name) {
  return std::find(ctx.axis_names.begin(), ctx.axis_names.end(), name) != ctx.axis_names.end();
}

std::string bound_list(const Context& ctx) {
  if (ctx.axis_names.empty()) return "no named axes are bound here";
  std::string s = "bound here:";
  for (size_t i = 0; i < ctx.axis_names.size(); ++i) s += (i ? ", " : " ") + ctx.axis_names[i];
  return s;
}

// dma_start with src_sem and device id, or semaphore_signal with a device id.
bool is_remote(const Op& op) {
  if (op.name() == "dma_start") return op.main_operands().size() == 5;
  if (op.name() == "semaphore_signal") return op.main_operands().size() >= 3;
  return false;
}

void check_new_axis(const Op& op, const Context& ctx, const std::string& name, Diags& out) {
  if (bound(ctx, name))
    report(out, op.loc, op.name() + " binds axis '" + name + "', which an enclosing op already binds; use a new name");
}

}  // namespace

void check_map_params(const Op& op, Diags& out) {
  if (op.name() == "pmap") {
    for (int64_t a : op.ints_param("in_axes"))
      if (a < -1) report(out, op.loc, "pmap in_axes entry " + std::to_string(a) + " is invalid; use an axis >= 0 or none");
  } else if (op.name() == "core_map") {
    std::set<std::string> seen;
    for (const std::string& a : op.idents_param("mesh_axes"))
      if (!seen.insert(a).second) report(out, op.loc, "core_map mesh_axes names axis '" + a + "' twice");
  }
}

void check_in_context(const Op& op, const Context& ctx, Diags& out) {
  const std::string& n = op.name();
  if (n == "axis_index") {
    const std::string& name = op.str_param("axis_name");
    bool grid_axis = std::find(ctx.grid_names.begin(), ctx.grid_names.end(), name) != ctx.grid_names.end();
    if (bound(ctx, name)) return;
    if (ctx.in_index_map && grid_axis)
      report(out, op.loc, "axis_index of grid axis '" + name + "' inside an index map: an index map gets the program ids "
                              "as its parameters; use the parameter of that axis");
    else
      report(out, op.loc, "axis_index names axis '" + name + "', but no enclosing pmap or core_map binds it (" +
                              bound_list(ctx) + ")");
  } else if (n == "program_id" || n == "num_programs") {
    int64_t axis = op.int_param("axis");
    if (ctx.grid_rank < 0)
      report(out, op.loc, n + " is only meaningful inside a pallas_call kernel or index map");
    else if (n == "program_id" && ctx.in_index_map)
      report(out, op.loc, "program_id inside an index map: an index map gets the program ids as its parameters; use "
                          "the parameter of axis " + std::to_string(axis));
    else if (axis < 0 || axis >= ctx.grid_rank)
      report(out, op.loc, n + " axis " + std::to_string(axis) + " is out of range for a grid of rank " +
                              std::to_string(ctx.grid_rank));
  } else if (n == "pmap") {
    check_new_axis(op, ctx, op.str_param("axis_name"), out);
  } else if (n == "core_map") {
    for (const std::string& a : op.idents_param("mesh_axes")) check_new_axis(op, ctx, a, out);
  } else if (!ctx.distributed && is_remote(op)) {
    report(out, op.loc, "remote " + n + " (with a device id) is only valid inside a pmap or core_map");
  }
}

Context nested_context(const Op& op, const Body& nested, const Context& outer) {
  Context c = outer;
  c.fallback = op.loc;
  const std::string& n = op.name();
  try {
    if (n == "pallas_call") {
      c.in_kernel = true;
      c.grid_rank = static_cast<int>(op.ints_param("grid").size());
      c.grid_names = op.idents_param("grid_names");
      // Every nested body of a pallas_call but its kernel is an index map.
      c.in_index_map = &nested != op.body_param("kernel").get();
      if (!c.in_index_map) c.axis_names.insert(c.axis_names.end(), c.grid_names.begin(), c.grid_names.end());
    } else if (n == "pmap") {
      c.distributed = true;
      c.axis_names.push_back(op.str_param("axis_name"));
    } else if (n == "core_map") {
      c.distributed = true;
      c.in_kernel = true;
      c.in_index_map = false;
      c.grid_rank = -1;
      c.grid_names.clear();
      for (const std::string& a : op.idents_param("mesh_axes")) c.axis_names.push_back(a);
    }
  } catch (const Error&) {
    // Malformed params are reported by the type check; keep the outer context.
  }
  return c;
}

}  // namespace tessera::verify_detail
