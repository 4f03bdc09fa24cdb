// Checks that depend on the ops around an op: named axes, devices and program
// ids. `axis_index` must name an axis bound by an enclosing pmap / core_map
// (or, in a kernel, the enclosing pallas_call's grid_names); remote DMAs and
// signals name a device, so they need an enclosing pmap or core_map;
// `program_id` needs an enclosing pallas_call, and not inside an index map,
// which gets the program ids as its parameters (jax/_src/pallas/core.py,
// `GridMapping`: `*program_ids, *scalar_prefetch`).
//
// One table entry per primitive of the control and Pallas families: the
// checks it needs, or why it needs none. A new primitive of those families
// without an entry fails the coverage test (tests/verify), so the question
// "does this depend on where it is used?" is asked once, here. The other
// families are context-free: they compute on values or on the Refs they are
// given, whose memory spaces memory_spaces.cpp checks.
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

void check_new_axis(const Op& op, const Context& ctx, const std::string& name, Diags& out) {
  if (bound(ctx, name))
    report(out, op.loc, op.name() + " binds axis '" + name + "', which an enclosing op already binds; use a new name");
}

// ---- axis_index, axis_size, program_id, num_programs -------------------------------------

void axis_index_in_context(const Op& op, const Context& ctx, Diags& out) {
  const std::string& name = op.param(keys::axis_name);
  if (bound(ctx, name)) return;
  bool grid_axis = std::find(ctx.grid_names.begin(), ctx.grid_names.end(), name) != ctx.grid_names.end();
  if (ctx.in_index_map && grid_axis)
    report(out, op.loc, op.name() + " of grid axis '" + name + "' inside an index map: an index map gets the program ids "
                            "as its parameters; use " + (op.name() == "axis_size" ? "num_programs" : "the parameter") +
                            " of that axis");
  else
    report(out, op.loc, op.name() + " names axis '" + name + "', but no enclosing pmap or core_map binds it (" +
                            bound_list(ctx) + ")");
}

void grid_query_in_context(const Op& op, const Context& ctx, Diags& out) {
  const std::string& n = op.name();
  int64_t axis = op.param(keys::axis);
  if (ctx.grid_rank < 0)
    report(out, op.loc, n + " is only meaningful inside a pallas_call kernel or index map");
  else if (n == "program_id" && ctx.in_index_map)
    report(out, op.loc, "program_id inside an index map: an index map gets the program ids as its parameters; use "
                        "the parameter of axis " + std::to_string(axis));
  else if (axis < 0 || axis >= ctx.grid_rank)
    report(out, op.loc, n + " axis " + std::to_string(axis) + " is out of range for a grid of rank " +
                            std::to_string(ctx.grid_rank));
}

// ---- remote DMAs and signals --------------------------------------------------

// dma_start with src_sem and device id, or semaphore_signal with a device id.
template <size_t RemoteOperands>
void remote_in_context(const Op& op, const Context& ctx, Diags& out) {
  if (!ctx.distributed && op.main_operands().size() >= RemoteOperands)
    report(out, op.loc, "remote " + op.name() + " (with a device id) is only valid inside a pmap or core_map");
}

// ---- pmap, core_map, pallas_call: what they bind for their bodies -------------

void pmap_params(const Op& op, Diags& out) {
  for (int64_t a : op.param(keys::in_axes))
    if (a < -1) report(out, op.loc, "pmap in_axes entry " + std::to_string(a) + " is invalid; use an axis >= 0 or none");
}
void pmap_in_context(const Op& op, const Context& ctx, Diags& out) {
  check_new_axis(op, ctx, op.param(keys::axis_name), out);
}
void pmap_enter(const Op& op, const Body&, Context& c) {
  c.distributed = true;
  c.axis_names.push_back(op.param(keys::axis_name));
}

void core_map_params(const Op& op, Diags& out) {
  std::set<std::string> seen;
  for (const std::string& a : op.param(keys::mesh_axes))
    if (!seen.insert(a).second) report(out, op.loc, "core_map mesh_axes names axis '" + a + "' twice");
}
void core_map_in_context(const Op& op, const Context& ctx, Diags& out) {
  for (const std::string& a : op.param(keys::mesh_axes)) check_new_axis(op, ctx, a, out);
}
void core_map_enter(const Op& op, const Body&, Context& c) {
  c.distributed = true;
  c.in_kernel = true;
  c.in_index_map = false;
  c.grid_rank = -1;
  c.grid_names.clear();
  for (const std::string& a : op.param(keys::mesh_axes)) c.axis_names.push_back(a);
}

void pallas_call_enter(const Op& op, const Body& nested, Context& c) {
  c.in_kernel = true;
  c.grid_rank = static_cast<int>(op.param(keys::grid).size());
  c.grid_names = op.param(keys::grid_names);
  // Every nested body of a pallas_call but its kernel is an index map.
  c.in_index_map = &nested != op.param(keys::kernel).get();
  if (!c.in_index_map) c.axis_names.insert(c.axis_names.end(), c.grid_names.begin(), c.grid_names.end());
}

ContextRule checks(void (*in_context)(const Op&, const Context&, Diags&)) { return {.in_context = in_context}; }
ContextRule context_free(const char* why) { return {.not_checked = why}; }

}  // namespace

const RuleTable<ContextRule>& context_rules() {
  static const RuleTable<ContextRule> table = [] {
    RuleTable<ContextRule> t("verifier context");
    t.set_default("no context to check or enter: it may appear anywhere", [](const Primitive& p) {
      return p.family != Family::control && p.family != Family::pallas;
    });
    t.set("axis_index", checks(axis_index_in_context));
    t.set("axis_size", checks(axis_index_in_context));
    t.set("program_id", checks(grid_query_in_context));
    t.set("num_programs", checks(grid_query_in_context));
    t.set("dma_start", checks(remote_in_context<5>));
    t.set("semaphore_signal", checks(remote_in_context<3>));
    t.set("pmap", {pmap_params, pmap_in_context, pmap_enter, nullptr});
    t.set("core_map", {core_map_params, core_map_in_context, core_map_enter, nullptr});
    t.set("pallas_call", {.enter = pallas_call_enter});

    const char* inherits = "its bodies run where it runs: they inherit the enclosing context";
    for (const char* n : {"for", "while", "scan", "cond", "run_scoped", "call", "custom_jvp_call", "custom_vjp_call", "custom_lin"})
      t.set(n, context_free(inherits));
    const char* local = "acts on Refs it is given; their memory spaces are checked in memory_spaces.cpp";
    for (const char* n : {"dma_wait", "semaphore_wait", "semaphore_read"}) t.set(n, context_free(local));
    t.set("device_id", context_free("this device's id: 0 outside a pmap or core_map, as on one device"));
    t.set("get_barrier_semaphore",
          context_free("the call's collective barrier; not checked against the call's collective_id (not modelled)"));
    t.set("multiple_of", context_free("a hint on a value; the interpreter checks it where it runs"));
    t.set("debug_print", context_free("prints anywhere"));
    for (const char* n : {"prng_seed", "prng_random_bits"})
      t.set(n, context_free("a per-core generator: each core (or function run) has its own"));
    t.set("debug_check", context_free("checks anywhere; `prove` proves the ones in kernels"));
    t.set("delay", context_free("only spends time; valid anywhere"));
    return t;
  }();
  return table;
}
const RuleTableRegistration kRegistered("verify.context", context_rules);

void check_map_params(const Op& op, Diags& out) {
  if (const ContextRule* r = context_rules().find(*op.prim); r && r->params) r->params(op, out);
}

void check_in_context(const Op& op, const Context& ctx, Diags& out) {
  if (const ContextRule* r = context_rules().find(*op.prim); r && r->in_context) r->in_context(op, ctx, out);
}

Context nested_context(const Op& op, const Body& nested, const Context& outer) {
  Context c = outer;
  c.fallback = op.loc;
  const ContextRule* r = context_rules().find(*op.prim);
  if (!r || !r->enter) return c;
  try {
    r->enter(op, nested, c);
  } catch (const Error&) {
    // Malformed params are reported by the type check; keep the outer context.
    c = outer;
    c.fallback = op.loc;
  }
  return c;
}

}  // namespace tessera::verify_detail
