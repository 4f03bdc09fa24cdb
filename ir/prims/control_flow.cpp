// Higher-order ops with nested bodies: cond, while, scan, for, run_scoped,
// call, core_map and pmap. Bodies are closed: every value they use comes in as
// an operand, so the operand -> body-parameter mapping below is the whole story.
#include <span>

#include "ir/control_views.h"
#include "ir/prims/shape_util.h"

namespace tessera {
using namespace prims;

void prims::add_body_effects(const Body& body, int first_operand, int num_operands, OpEffects& out) {
  Effects fx = compute_effects(body);
  out.io |= fx.io;
  out.comms |= fx.comms;
  for (size_t p = 0; p < fx.on_param.size(); ++p)
    if (fx.on_param[p] && static_cast<int>(p) < num_operands) out.add(first_operand + static_cast<int>(p), fx.on_param[p]);
}

namespace {

std::vector<Type> operand_types(std::span<const Value> operands) {
  std::vector<Type> ts;
  ts.reserve(operands.size());
  for (const Value& v : operands) ts.push_back(v.type());
  return ts;
}

void expect_signature(const Op& op, const Body& b, const std::vector<Type>& params, const std::string& what) {
  if (b.param_types() != params)
    fail(op, what + " takes " + types_str(b.param_types()) + " but is given " + types_str(params));
}

// cond[branches=[...]] %index, args... : branch i (clamped) runs on args.
std::vector<Type> cond(const Op& op) {
  const auto& branches = op.bodies_param("branches");
  if (branches.empty()) fail(op, "needs at least one branch");
  if (op.operands.empty()) fail(op, "needs an index operand");
  Type idx = op.operands[0].type();
  if (!idx.is_scalar() || !(is_bool(idx.dtype()) || idx.dtype() == DType::i32))
    fail(op, "index must be an i32 or bool scalar, got " + idx.str());
  if (is_bool(idx.dtype()) && branches.size() != 2) fail(op, "a bool index needs exactly 2 branches");
  std::vector<Type> args = operand_types(std::span<const Value>(op.operands).subspan(1));
  std::vector<Type> outs = branches[0]->output_types();
  for (size_t i = 0; i < branches.size(); ++i) {
    expect_signature(op, *branches[i], args, "branch " + std::to_string(i));
    if (branches[i]->output_types() != outs)
      fail(op, "branch " + std::to_string(i) + " returns " + types_str(branches[i]->output_types()) + " but branch 0 returns " +
                   types_str(outs));
  }
  return outs;
}

void cond_effects(const Op& op, OpEffects& e) {
  for (const BodyPtr& b : op.bodies_param("branches"))
    add_body_effects(*b, 1, static_cast<int>(op.operands.size()) - 1, e);
}

// while[cond=fn, body=fn, num_consts=k] consts..., carries...
std::vector<Type> while_rule(const Op& op) {
  std::vector<Type> all = operand_types(op.operands);
  const Body& c = *op.body_param("cond");
  const Body& b = *op.body_param("body");
  expect_signature(op, c, all, "cond");
  expect_signature(op, b, all, "body");
  std::vector<Type> carries = operand_types(WhileView(op).operands().carries);
  if (c.output_types() != std::vector<Type>{Type::scalar(DType::i1)}) fail(op, "cond must return one bool scalar");
  if (b.output_types() != carries)
    fail(op, "body returns " + types_str(b.output_types()) + " but the carries are " + types_str(carries));
  for (const Type& t : carries)
    if (t.is_ref()) fail(op, "a Ref cannot be a loop carry; pass it as a constant");
  return carries;
}

void while_effects(const Op& op, OpEffects& e) {
  int n = static_cast<int>(op.operands.size());
  add_body_effects(*op.body_param("cond"), 0, n, e);
  add_body_effects(*op.body_param("body"), 0, n, e);
}

// scan[body=fn, length=n, num_consts=k, num_carry=c, reverse] consts..., carries..., xs...
// body(consts, carries, x slices) -> (carries, y slices); ys are stacked on axis 0.
std::vector<Type> scan(const Op& op) {
  ScanView view(op);
  LoopParts<Value> parts = view.operands();
  int64_t length = view.length;
  if (length < 0) fail(op, "length " + std::to_string(length) + " is negative");
  std::vector<Type> params = operand_types(parts.consts), carries = operand_types(parts.carries);
  params.insert(params.end(), carries.begin(), carries.end());
  for (const Value& v : parts.xs) {
    Type x = v.type();
    if (x.is_ref() || x.rank() == 0 || x.shape()[0] != length)
      fail(op, "scanned operand " + x.str() + " must be an array with leading dimension " + std::to_string(length));
    Shape s(x.shape().begin() + 1, x.shape().end());
    params.push_back(Type::array(x.dtype(), s));
  }
  expect_signature(op, view.body(), params, "body");
  std::vector<Type> outs = view.body().output_types();
  for (size_t i = 0; i < carries.size(); ++i)
    if (outs[i] != carries[i]) fail(op, "carry " + std::to_string(i) + " changes type from " + carries[i].str() + " to " + outs[i].str());
  std::vector<Type> results(outs.begin(), outs.begin() + view.num_carries);
  for (size_t i = view.num_carries; i < outs.size(); ++i) {
    if (outs[i].is_ref()) fail(op, "a scan cannot stack Refs");
    Shape s{length};
    s.insert(s.end(), outs[i].shape().begin(), outs[i].shape().end());
    results.push_back(Type::array(outs[i].dtype(), s));
  }
  return results;
}

void scan_effects(const Op& op, OpEffects& e) {
  ScanView view(op);
  add_body_effects(view.body(), 0, view.num_consts, e);
}

// for[body=fn, num_consts=k] %lo, %hi, consts..., carries... ; body(i, consts, carries) -> carries
std::vector<Type> for_rule(const Op& op) {
  if (op.operands.size() < 2) fail(op, "expects %lo, %hi, then num_consts constants and the carries");
  Type lo = op.operands[0].type(), hi = op.operands[1].type();
  expect_int_scalar(op, lo, "lower bound");
  expect_int_scalar(op, hi, "upper bound");
  if (lo.dtype() != hi.dtype()) fail(op, "bounds differ in dtype");
  std::vector<Type> params{lo};
  for (size_t i = ForView::first_const; i < op.operands.size(); ++i) params.push_back(op.operands[i].type());
  const Body& b = *op.body_param("body");
  expect_signature(op, b, params, "body");
  std::vector<Type> carries = operand_types(ForView(op).operands().carries);
  if (b.output_types() != carries)
    fail(op, "body returns " + types_str(b.output_types()) + " but the carries are " + types_str(carries));
  for (const Type& t : carries)
    if (t.is_ref()) fail(op, "a Ref cannot be a loop carry; pass it as a constant");
  return carries;
}

void for_effects(const Op& op, OpEffects& e) {
  // Body parameter 0 is the induction variable; parameter p >= 1 is operand p + 1.
  Effects fx = compute_effects(*op.body_param("body"));
  e.io |= fx.io;
  e.comms |= fx.comms;
  for (size_t p = 1; p < fx.on_param.size(); ++p)
    if (fx.on_param[p]) e.add(static_cast<int>(p) + 1, fx.on_param[p]);
}

// run_scoped[body=fn] args... ; body(args..., scratch Refs...) -> results.
std::vector<Type> run_scoped(const Op& op) {
  const Body& b = *op.body_param("body");
  std::vector<Type> args = operand_types(op.operands);
  std::vector<Type> params = b.param_types();
  if (params.size() < args.size()) fail(op, "body takes fewer parameters than there are operands");
  for (size_t i = 0; i < args.size(); ++i)
    if (params[i] != args[i]) fail(op, "body parameter " + std::to_string(i) + " is " + params[i].str() + " but the operand is " + args[i].str());
  for (size_t i = args.size(); i < params.size(); ++i)
    if (!params[i].is_ref()) fail(op, "scoped allocation " + params[i].str() + " must be a Ref");
  return b.output_types();
}

void run_scoped_effects(const Op& op, OpEffects& e) {
  add_body_effects(*op.body_param("body"), 0, static_cast<int>(op.operands.size()), e);
}

std::vector<Type> call(const Op& op) {
  const Body& b = *op.body_param("callee");
  expect_signature(op, b, operand_types(op.operands), "@" + b.name());
  return b.output_types();
}

void call_effects(const Op& op, OpEffects& e) {
  add_body_effects(*op.body_param("callee"), 0, static_cast<int>(op.operands.size()), e);
}

// custom_jvp_call[call=fn, jvp=fn] args... (jax.custom_jvp; the primitive
// `custom_jvp_call` of jax/_src/custom_derivatives.py): runs `call`; the jvp
// pass uses `jvp(primals..., tangents...) -> tangents of the results` instead
// of differentiating `call`. Both bodies are pure functions of values, as JAX
// requires of custom_jvp functions (it rejects effects inside them).
std::vector<Type> custom_jvp_call(const Op& op) {
  std::vector<Type> args = operand_types(op.operands);
  for (const Type& t : args)
    if (t.is_ref()) fail(op, "operands must be values, not Refs (read the Ref first), got " + t.str());
  const Body& call = *op.body_param("call");
  const Body& rule = *op.body_param("jvp");
  expect_signature(op, call, args, "call");
  std::vector<Type> primals_and_tangents = args;
  primals_and_tangents.insert(primals_and_tangents.end(), args.begin(), args.end());
  expect_signature(op, rule, primals_and_tangents, "jvp");
  if (rule.output_types() != call.output_types())
    fail(op, "jvp returns " + types_str(rule.output_types()) + " but call returns " + types_str(call.output_types()) +
                 " (one tangent per result, of the result's type)");
  for (const Body* b : {&call, &rule}) {
    Effects fx = compute_effects(*b);
    if (!fx.empty()) fail(op, std::string(b == &call ? "call" : "jvp") + " must be pure, but has effects " + fx.str(*b));
  }
  return call.output_types();
}

// custom_vjp_call[call=fn, fwd=fn, bwd=fn] args... (jax.custom_vjp; the
// primitive `custom_vjp_call` of jax/_src/custom_derivatives.py): runs `call`.
// Reverse mode uses `fwd(args...) -> (results..., residuals...)` for the
// primal and `bwd(residuals..., cotangents of the results...) -> cotangents
// of args...` for the transpose instead of differentiating `call`. The three
// bodies are pure functions of values, as JAX requires.
std::vector<Type> custom_vjp_call(const Op& op) {
  std::vector<Type> args = operand_types(op.operands);
  for (const Type& t : args)
    if (t.is_ref()) fail(op, "operands must be values, not Refs (read the Ref first), got " + t.str());
  const Body& call = *op.body_param("call");
  const Body& fwd = *op.body_param("fwd");
  const Body& bwd = *op.body_param("bwd");
  expect_signature(op, call, args, "call");
  expect_signature(op, fwd, args, "fwd");
  std::vector<Type> outs = call.output_types(), fwd_outs = fwd.output_types();
  if (fwd_outs.size() < outs.size() || !std::equal(outs.begin(), outs.end(), fwd_outs.begin()))
    fail(op, "fwd returns " + types_str(fwd_outs) + ", which must start with call's results " + types_str(outs) +
                 " (then the residuals)");
  std::vector<Type> bwd_in(fwd_outs.begin() + static_cast<long>(outs.size()), fwd_outs.end());
  bwd_in.insert(bwd_in.end(), outs.begin(), outs.end());
  expect_signature(op, bwd, bwd_in, "bwd");
  if (bwd.output_types() != args)
    fail(op, "bwd returns " + types_str(bwd.output_types()) + " but the operands are " + types_str(args) +
                 " (one cotangent per operand, of its type)");
  for (const Body* b : {&call, &fwd, &bwd}) {
    Effects fx = compute_effects(*b);
    if (!fx.empty()) fail(op, b->name() + " must be pure, but has effects " + fx.str(*b));
  }
  return outs;
}

// custom_lin[bwd=fn, num_res=k] residuals..., tangents... (JAX's custom_lin):
// what jvp makes of a custom_vjp_call, linear in the tangents. Its transpose
// is `bwd`; it has no forward rule, so it can be transposed (vjp) but not run.
std::vector<Type> custom_lin(const Op& op) {
  const Body& bwd = *op.body_param("bwd");
  int64_t k = op.int_param("num_res");
  std::vector<Type> in = operand_types(op.operands), params = bwd.param_types();
  if (k < 0 || k > static_cast<int64_t>(params.size())) fail(op, "num_res " + std::to_string(k) + " is out of range for bwd");
  std::vector<Type> want(params.begin(), params.begin() + k);
  std::vector<Type> cts = bwd.output_types();
  want.insert(want.end(), cts.begin(), cts.end());
  if (in != want)
    fail(op, "operands " + types_str(in) + " must be the residuals, then one tangent per result of bwd: " + types_str(want));
  return std::vector<Type>(params.begin() + k, params.end());
}

// core_map[body=fn, mesh_axes=(core), mesh_shape=(2)] refs... : body runs once per core.
std::vector<Type> core_map(const Op& op) {
  const auto& axes = op.idents_param("mesh_axes");
  const auto& shape = op.ints_param("mesh_shape");
  if (axes.size() != shape.size() || axes.empty()) fail(op, "mesh_axes and mesh_shape must be non-empty and of equal length");
  for (int64_t s : shape)
    if (s < 1) fail(op, "mesh sizes must be positive");
  const Body& b = *op.body_param("body");
  expect_signature(op, b, operand_types(op.operands), "body");
  if (!b.outputs().empty()) fail(op, "body must not return values; it communicates through Refs");
  return {};
}

// pmap[body=fn, axis_name=d, axis_size=n, in_axes=(0, none), out_axes=(0)] args...
std::vector<Type> pmap(const Op& op) {
  int64_t size = op.int_param("axis_size");
  if (size < 1) fail(op, "axis_size must be positive");
  const auto& in_axes = op.ints_param("in_axes");
  const auto& out_axes = op.ints_param("out_axes");
  if (in_axes.size() != op.operands.size())
    fail(op, "in_axes has " + std::to_string(in_axes.size()) + " entries for " + std::to_string(op.operands.size()) + " operands");
  std::vector<Type> params;
  for (size_t i = 0; i < op.operands.size(); ++i) {
    Type t = op.operands[i].type();
    if (in_axes[i] < 0) { params.push_back(t); continue; }
    if (t.is_ref()) fail(op, "a Ref operand cannot be mapped");
    check_axis(op, in_axes[i], t.rank(), "in_axes entry");
    if (t.shape()[in_axes[i]] != size)
      fail(op, "operand " + std::to_string(i) + " " + t.str() + " has size " + std::to_string(t.shape()[in_axes[i]]) +
                   " on its mapped axis, not axis_size " + std::to_string(size));
    Shape s = t.shape();
    s.erase(s.begin() + in_axes[i]);
    params.push_back(Type::array(t.dtype(), s));
  }
  const Body& b = *op.body_param("body");
  expect_signature(op, b, params, "body");
  std::vector<Type> outs = b.output_types();
  if (out_axes.size() != outs.size()) fail(op, "out_axes needs one entry per body result");
  std::vector<Type> results;
  for (size_t i = 0; i < outs.size(); ++i) {
    if (outs[i].is_ref()) fail(op, "a pmap body cannot return a Ref");
    check_axis(op, out_axes[i], outs[i].rank() + 1, "out_axes entry");
    Shape s = outs[i].shape();
    s.insert(s.begin() + out_axes[i], size);
    results.push_back(Type::array(outs[i].dtype(), s));
  }
  return results;
}

void pmap_effects(const Op& op, OpEffects& e) {
  Effects fx = compute_effects(*op.body_param("body"));
  e.io |= fx.io;
  e.comms |= fx.comms;
}

}  // namespace

void register_control_flow(Registry& r) {
  using K = ParamKind;
  r.add({"cond", "runs branch `index` (clamped; a bool picks branch 0 for false) on the operands",
         {req("branches", K::Bodies)}, cond, cond_effects, false, {0, 1}});
  r.add({"while", "loops body while cond holds; the first num_consts operands are loop-invariant",
         {req("cond", K::Body), req("body", K::Body), opt("num_consts", K::Int, int64_t{0})}, while_rule, while_effects, false});
  r.add({"scan", "scan over the leading axis of xs with carries, stacking ys",
         {req("body", K::Body), req("length", K::Int), opt("num_consts", K::Int, int64_t{0}),
          opt("num_carry", K::Int, int64_t{0}), opt("reverse", K::Bool, false)},
         scan, scan_effects, false});
  r.add({"for", "for i in [lo, hi): carries = body(i, consts..., carries...)",
         {req("body", K::Body), opt("num_consts", K::Int, int64_t{0})}, for_rule, for_effects, false, {0, 2}});
  r.add({"run_scoped", "allocates scratch Refs (the body's extra parameters) for the body's duration",
         {req("body", K::Body)}, run_scoped, run_scoped_effects, false});
  r.add({"call", "calls a module function", {req("callee", K::Body)}, call, call_effects, false});
  r.add({"custom_jvp_call", "runs `call`; jvp differentiates with the given `jvp` rule instead (jax.custom_jvp)",
         {req("call", K::Body), req("jvp", K::Body)}, custom_jvp_call, nullptr, false});
  r.add({"custom_vjp_call", "runs `call`; reverse mode uses the given `fwd` and `bwd` rules instead (jax.custom_vjp)",
         {req("call", K::Body), req("fwd", K::Body), req("bwd", K::Body)}, custom_vjp_call, nullptr, false});
  r.add({"custom_lin", "the tangent of a custom_vjp_call: linear, transposed by `bwd`; cannot run (jvp of jax.custom_vjp)",
         {req("bwd", K::Body), req("num_res", K::Int)}, custom_lin, nullptr, false});
  r.add({"core_map", "runs the body once per core of a mesh; bodies talk through Refs and semaphores",
         {req("body", K::Body), req("mesh_axes", K::Idents), req("mesh_shape", K::Ints),
          choice("kernel_type", {"tc", "sc_scalar_subcore", "sc_vector_subcore"}, "tc")},
         core_map, run_scoped_effects, false});
  r.add({"pmap", "maps the body over devices along a named axis",
         {req("body", K::Body), req("axis_name", K::Ident), req("axis_size", K::Int), req("in_axes", K::OptInts),
          req("out_axes", K::Ints)},
         pmap, pmap_effects, false});
}

}  // namespace tessera
