// Ops with bodies: cond, for, while, scan, run_scoped and inlined calls
// (jax/_src/pallas/mosaic/lowering.py, `_cond_lowering_rule`,
// `_scan_lowering_rule`, `_while_lowering_rule`, `_run_scoped_lowering_rule`).
//
// Tessera's bodies are closed; MLIR regions see their enclosing values, so a
// body parameter that receives an operand unchanged is that operand's name
// (KernelContext::forward), and only loop carries become region arguments.
#include "backends/mosaic/constants.h"
#include "backends/mosaic/mlir_types.h"
#include "backends/mosaic/ref_indexing.h"
#include "backends/mosaic/rules.h"
#include <functional>

#include "ir/control_views.h"

namespace tessera::backends::mosaic {
namespace {

using Names = EmitContext::Names;

std::string types_of(const std::vector<Type>& ts) {
  std::vector<std::string> parts;
  for (const Type& t : ts) parts.push_back(value_type(t));
  return join(parts);
}

std::string names_of(KernelContext& ctx, std::span<const Value> vs) {
  std::vector<std::string> parts;
  for (const Value& v : vs) parts.push_back(ctx.use(v));
  return join(parts);
}

std::vector<std::string> use_all(KernelContext& ctx, std::span<const Value> vs) {
  std::vector<std::string> out;
  for (const Value& v : vs) out.push_back(ctx.use(v));
  return out;
}

// The results of a region op: `%r = ` / `%r:2 = ` and each result aliased to
// `%r` / `%r#i`. Empty when there are none.
std::string define_results(KernelContext& ctx, const Op& op) {
  if (op.results.empty()) return "";
  if (op.results.size() == 1) return ctx.def(op.results[0]) + " = ";
  std::string base = ctx.fresh();
  for (size_t i = 0; i < op.results.size(); ++i) ctx.alias(op.results[i], base + "#" + std::to_string(i));
  return base + ":" + std::to_string(op.results.size()) + " = ";
}

void reject_ref_results(KernelContext& ctx, const Op& op) {
  for (const Var* r : op.results)
    if (r->type.is_ref()) throw ctx.error(op, "a body returning a Ref is not lowered");
}

// The body's ops, then `TERMINATOR %outs : types` (nothing when it returns nothing
// and the terminator is implicit).
void lower_region(KernelContext& ctx, const Body& body, const LoweringTable& table, const std::string& terminator,
                  bool implicit_when_empty) {
  lower_body(ctx, body, table);
  if (body.outputs().empty()) {
    if (!implicit_when_empty) ctx.line(terminator + " : () -> ()");
    return;
  }
  std::string outs = names_of(ctx, body.outputs());
  ctx.line(terminator + " " + outs + " : " + types_of(body.output_types()));
}

void emit_region(KernelContext& ctx, const Op& op, const LoweringTable& table, const Body& body, std::span<const Value> args,
                 const std::function<void()>& allocate = {});

// Branches [first, last) of a cond on the i32 `index` (already clamped): `scf.if
// index != 0 { rest } else { branch first }`, nested for more than two
// branches with `index - 1`, as Pallas lowers lax.switch.
void emit_branches(KernelContext& ctx, const Op& op, const LoweringTable& table, const std::string& index,
                   size_t first, const std::string& results, const std::vector<std::string>& args) {
  CondView view(op);
  const auto& branches = view.branches();
  auto branch_body = [&](const Body& b) {
    auto region = ctx.nested(Names::see_enclosing);
    for (size_t i = 0; i < b.params().size(); ++i) ctx.forward(b.params()[i], view.args()[i], args[i]);
    lower_region(ctx, b, table, "scf.yield", true);
  };
  std::string zero = i32_constant(ctx, 0), pred = ctx.fresh();
  ctx.line(pred + " = arith.cmpi ne, " + index + ", " + zero + " : i32");
  std::string result_types = op.results.empty() ? "" : " -> (" + types_of(branches[0]->output_types()) + ")";
  ctx.line(results + "scf.if " + pred + result_types + " {");
  if (first + 2 == branches.size()) {
    branch_body(*branches[first + 1]);
  } else {
    // The rest of the chain is one nested scf.if whose results this region yields.
    auto region = ctx.nested(Names::see_enclosing);
    std::string one = i32_constant(ctx, 1), next = ctx.fresh();
    ctx.line(next + " = arith.subi " + index + ", " + one + " : i32");
    std::string inner = op.results.empty() ? "" : ctx.fresh();
    std::string inner_def = op.results.empty() ? "" : inner + (op.results.size() > 1 ? ":" + std::to_string(op.results.size()) : "") + " = ";
    emit_branches(ctx, op, table, next, first + 1, inner_def, args);
    if (!op.results.empty()) {
      std::vector<std::string> outs;
      for (size_t i = 0; i < op.results.size(); ++i) outs.push_back(op.results.size() > 1 ? inner + "#" + std::to_string(i) : inner);
      ctx.line("scf.yield " + join(outs) + " :" + " " + types_of(branches[0]->output_types()));
    }
  }
  ctx.line("} else {");
  branch_body(*branches[first]);
  ctx.line("}");
}

// cond: a bool picks branch 1 when true (`arith.extui` to i32, as Pallas);
// an i32 index is clamped to the branches first, as tessera's cond does.
void lower_cond(EmitContext& e, const Op& op, const LoweringTable& table) {
  KernelContext& ctx = kernel(e);
  CondView view(op);
  reject_ref_results(ctx, op);
  const auto& branches = view.branches();
  const Value& index = view.index();
  std::string idx = ctx.use(index);
  if (branches.size() == 1) {  // the index is clamped to 0: the one branch runs
    return emit_region(ctx, op, table, *branches[0], view.args());
  }
  std::vector<std::string> args = use_all(ctx, view.args());  // literals become constants before the scf.if
  if (is_bool(index.type().dtype())) {
    std::string widened = ctx.fresh();
    ctx.line(widened + " = arith.extui " + idx + " : i1 to i32");
    idx = widened;
  } else {
    std::string lo = ctx.fresh(), hi = ctx.fresh();
    ctx.line(lo + " = arith.maxsi " + idx + ", " + i32_constant(ctx, 0) + " : i32");
    ctx.line(hi + " = arith.minsi " + lo + ", " + i32_constant(ctx, static_cast<int64_t>(branches.size()) - 1) + " : i32");
    idx = hi;
  }
  emit_branches(ctx, op, table, idx, 0, define_results(ctx, op), args);
}

std::string loop_bound(KernelContext& ctx, const Op& op, const Value& v) {
  if (v.type().dtype() != DType::i32) throw ctx.error(op, "loop bounds of dtype " + v.type().str() + " are not lowered (Mosaic loops count in i32)");
  return ctx.use(v);
}

// `scf.for %i = lo to hi step 1 iter_args(%c = init...) -> (types) : i32 {`;
// `carry_params` are the region's names for the carries.
std::string for_header(const std::string& results, const std::string& iv, const std::string& lo,
                       const std::string& hi, const std::string& step, const std::vector<std::string>& carry_params,
                       const std::vector<std::string>& inits, const std::vector<Type>& carry_types) {
  std::string h = results + "scf.for " + iv + " = " + lo + " to " + hi + " step " + step;
  if (!inits.empty()) {
    std::vector<std::string> pairs;
    for (size_t i = 0; i < inits.size(); ++i) pairs.push_back(carry_params[i] + " = " + inits[i]);
    h += " iter_args(" + join(pairs) + ") -> (" + types_of(carry_types) + ")";
  }
  return h + " : i32 {";
}

void lower_for(EmitContext& e, const Op& op, const LoweringTable& table) {
  KernelContext& ctx = kernel(e);
  ForView loop(op);
  std::string lo = loop_bound(ctx, op, loop.lo()), hi = loop_bound(ctx, op, loop.hi());
  std::string step = i32_constant(ctx, 1);
  std::vector<std::string> consts = use_all(ctx, loop.operands().consts), inits = use_all(ctx, loop.operands().carries);
  std::string results = define_results(ctx, op);
  std::vector<Type> carry_types;
  for (const Value& v : loop.operands().carries) carry_types.push_back(v.type());
  {
    auto region = ctx.nested(Names::see_enclosing, 0);
    LoopParts<Var*> params = loop.params();
    for (size_t i = 0; i < params.consts.size(); ++i) ctx.forward(params.consts[i], loop.operands().consts[i], consts[i]);
    std::vector<std::string> carry_params;
    for (Var* c : params.carries) carry_params.push_back(ctx.def(c));
    ctx.line(for_header(results, ctx.def(loop.index_param()), lo, hi, step, carry_params, inits, carry_types));
    auto body = ctx.indented();
    lower_region(ctx, loop.body(), table, "scf.yield", true);
  }
  ctx.line("}");
}

// scan without xs or ys is a counted loop (what fori_loop traces to); its
// induction variable is unused.
void lower_scan(EmitContext& e, const Op& op, const LoweringTable& table) {
  KernelContext& ctx = kernel(e);
  ScanView scan(op);
  if (scan.num_xs || scan.num_ys())
    throw ctx.error(op, "a scan over xs or stacking ys is not lowered yet (only the fori_loop form, carries alone)");
  std::string lo = i32_constant(ctx, 0), hi = i32_constant(ctx, scan.length), step = i32_constant(ctx, 1);
  std::vector<std::string> consts = use_all(ctx, scan.operands().consts), inits = use_all(ctx, scan.operands().carries);
  std::string results = define_results(ctx, op);
  std::vector<Type> carry_types;
  for (const Value& v : scan.operands().carries) carry_types.push_back(v.type());
  {
    auto region = ctx.nested(Names::see_enclosing, 0);
    LoopParts<Var*> params = scan.params();
    for (size_t i = 0; i < params.consts.size(); ++i) ctx.forward(params.consts[i], scan.operands().consts[i], consts[i]);
    std::vector<std::string> carry_params;
    for (Var* c : params.carries) carry_params.push_back(ctx.def(c));
    ctx.line(for_header(results, ctx.fresh("i"), lo, hi, step, carry_params, inits, carry_types));
    auto body = ctx.indented();
    lower_region(ctx, scan.body(), table, "scf.yield", true);
  }
  ctx.line("}");
}

// `scf.while (%c = init...) : (types) -> (types) { cond; scf.condition(%p) %c... }
// do { ^bb0(%c...): body; scf.yield ... }`
void lower_while(EmitContext& e, const Op& op, const LoweringTable& table) {
  KernelContext& ctx = kernel(e);
  WhileView loop(op);
  std::vector<std::string> consts = use_all(ctx, loop.operands().consts), inits = use_all(ctx, loop.operands().carries);
  std::vector<Type> carry_types;
  for (const Value& v : loop.operands().carries) carry_types.push_back(v.type());
  std::string results = define_results(ctx, op);
  std::string types = "(" + types_of(carry_types) + ")";
  {
    auto region = ctx.nested(Names::see_enclosing, 0);
    LoopParts<Var*> params = loop.cond_params();
    for (size_t i = 0; i < params.consts.size(); ++i) ctx.forward(params.consts[i], loop.operands().consts[i], consts[i]);
    std::vector<std::string> pairs, carry_names;
    for (size_t i = 0; i < params.carries.size(); ++i) {
      carry_names.push_back(ctx.def(params.carries[i]));
      pairs.push_back(carry_names.back() + " = " + inits[i]);
    }
    ctx.line(results + "scf.while (" + join(pairs) + ") : " + types + " -> " + types + " {");
    auto body = ctx.indented();
    lower_body(ctx, loop.cond(), table);
    std::string pred = ctx.use(loop.cond().outputs()[0]);
    ctx.line("scf.condition(" + pred + ")" + (carry_names.empty() ? "" : " " + join(carry_names) + " : " + types_of(carry_types)));
  }
  ctx.line("} do {");
  {
    auto region = ctx.nested(Names::see_enclosing, 0);
    LoopParts<Var*> params = loop.body_params();
    for (size_t i = 0; i < params.consts.size(); ++i) ctx.forward(params.consts[i], loop.operands().consts[i], consts[i]);
    std::vector<std::string> args;
    for (size_t i = 0; i < params.carries.size(); ++i)
      args.push_back(ctx.def(params.carries[i]) + ": " + value_type(carry_types[i]));
    ctx.line("^bb0(" + join(args) + "):");
    auto body = ctx.indented();
    lower_region(ctx, loop.body(), table, "scf.yield", false);
  }
  ctx.line("}");
}

// `"tpu.region"() ({ ...; "tpu.yield"(outs) })`: `body` run once, in a region
// of its own so that its names stay inside. Its first parameters receive
// `args`; `allocate` defines the rest (run_scoped's scratch) inside the region.
void emit_region(KernelContext& ctx, const Op& op, const LoweringTable& table, const Body& body, std::span<const Value> args,
                 const std::function<void()>& allocate) {
  reject_ref_results(ctx, op);
  std::vector<std::string> names = use_all(ctx, args);
  std::string results = define_results(ctx, op);
  ctx.line(results + "\"tpu.region\"() ({");
  {
    auto region = ctx.nested(Names::see_enclosing);
    for (size_t i = 0; i < args.size(); ++i) ctx.forward(body.params()[i], args[i], names[i]);
    if (allocate) allocate();
    lower_body(ctx, body, table);
    if (body.outputs().empty()) ctx.line("\"tpu.yield\"() : () -> ()");
    else ctx.line("\"tpu.yield\"(" + names_of(ctx, body.outputs()) + ") : (" + types_of(body.output_types()) + ") -> ()");
  }
  ctx.line("}) : () -> (" + types_of(op.results.empty() ? std::vector<Type>{} : body.output_types()) + ")");
}

// run_scoped: a `tpu.region` whose scratch Refs are `memref.alloca` (VMEM,
// SMEM) or `tpu.sem_alloc` (semaphores), ending in `tpu.yield`.
void lower_run_scoped(EmitContext& e, const Op& op, const LoweringTable& table) {
  KernelContext& ctx = kernel(e);
  RunScopedView scoped(op);
  emit_region(ctx, op, table, scoped.body(), scoped.args(), [&] {
    for (Var* s : scoped.scratch_params()) {
      RefView view = RefView::of(s->type);
      if (view.space == MemSpace::semaphore)
        ctx.line(ctx.def(s) + " = \"tpu.sem_alloc\"() : () -> " + view.memref_type());
      else if (view.space == MemSpace::vmem || view.space == MemSpace::smem)
        ctx.line(ctx.def(s) + " = memref.alloca() : " + view.memref_type());
      else
        throw ctx.error(op, "run_scoped allocates VMEM, SMEM or semaphores, not " + s->type.str());
      ctx.set_ref_view(s, view);
    }
  });
}

// A call, and a custom_jvp_call's or custom_vjp_call's primal function, run inline as Pallas
// inlines a closed call's jaxpr; the region keeps the callee's names apart,
// so a function called twice is written twice without clashing.
void lower_call(EmitContext& e, const Op& op, const LoweringTable& table) {
  emit_region(kernel(e), op, table, *op.param(keys::callee), op.operands);
}

// custom_jvp_call and custom_vjp_call: their primal function, `call`.
void lower_custom_call(EmitContext& e, const Op& op, const LoweringTable& table) {
  emit_region(kernel(e), op, table, *op.param(keys::call), op.operands);
}

}  // namespace

void add_control_rules(LoweringTable& t) {
  t.set("cond", lower_cond);
  t.set("for", lower_for);
  t.set("scan", lower_scan);
  t.set("while", lower_while);
  t.set("run_scoped", lower_run_scoped);
  t.set("call", lower_call);
  t.set("custom_jvp_call", lower_custom_call);
  t.set("custom_vjp_call", lower_custom_call);
}

}  // namespace tessera::backends::mosaic
