// A primitive and a pass defined outside tessera, registered at start-up and
// used like tessera's own (docs/embedding.md walks through it):
//   softplus(x) = log(1 + exp(x)): a shape rule, an interpreter kernel and a
//     derivative, from which jvp and vmap give it their rules;
//   expand_softplus: a pass that rewrites softplus(x) into log1p(exp(x)).
#include <tessera/interpreter/interpreter.h>
#include <tessera/runtime/kernels.h>
#include <tessera/ir/builder.h>
#include <tessera/ir/clone.h>
#include <tessera/ir/parser.h>
#include <tessera/ir/prims/shape_util.h>
#include <tessera/ir/printer.h>
#include <tessera/transforms/pass.h>
#include <tessera/verify/verify.h>

#include <cmath>
#include <cstdio>

using namespace tessera;
using interp::Array;

// softplus as an elementwise primitive on floats. The family and traits are
// what tessera's own unary math ops have (ir/prims/elementwise.cpp): vmap
// batches every elementwise primitive pointwise, and jvp's rule for the unary
// ones applies `tangent`.
void register_softplus() {
  Primitive p;
  p.name = "softplus";
  p.summary = "log(1 + exp(x)), elementwise";
  p.shape = [](const Op& op) {  // errors are located at the op: file:line:col
    prims::expect_operands(op, 1);
    const Type& x = prims::array_operand(op, 0);
    if (!is_float(x.dtype())) prims::fail(op, "expects a floating dtype, got " + x.str());
    return prims::one_type(x);
  };
  p.family = Family::elementwise;
  p.arity = 1;
  p.accepts = DTypeClass::floating;
  // d softplus(x) = logistic(x) dx, written with tessera's primitives.
  p.tangent = [](Builder& b, Value x, Value, Value dx) { return b.binary("mul", dx, b.unary("logistic", x)); };
  register_primitive(std::move(p));

  // The interpreter's kernel: whole arrays in, whole arrays out.
  interp::array_kernels().set("softplus", [](const Op&, std::span<const Array> args) {
    Array y = Array::uninitialized(args[0].dtype(), args[0].shape());
    for (int64_t i = 0; i < y.size(); ++i) y.set(i, std::log1p(std::exp(args[0].get(i))));
    return std::vector<Array>{y};
  });
}

// The pass: a new body for the function `func` (default main) with every
// softplus replaced, the other ops copied; the other symbols are shared.
Module expand_softplus(const Module& m, const PassOptions& o) {
  BodyPtr f = entry_function(m, o, "expand_softplus");
  BodyPtr g = make_body(f->name(), f->kind());
  g->set_loc(f->loc());
  Builder b(*g);
  ValueMap map;
  for (const Var* x : f->params()) map[x] = b.param(x->type, x->name);
  for (const Op& op : f->ops()) {
    b.set_loc(op.loc);
    if (op.name() == "softplus") map[op.results[0]] = b.unary("log1p", b.unary("exp", remap(op.operands[0], map)));
    else copy_op(op, *g, map);
  }
  std::vector<Value> outs;
  for (const Value& v : f->outputs()) outs.push_back(remap(v, map));
  b.ret(outs);
  Module out;
  for (const BodyPtr& s : m.symbols()) out.add(s == f ? g : s);
  return out;
}

int main() try {
  register_softplus();
  register_pass({"expand_softplus", "rewrite softplus(x) as log1p(exp(x))", expand_softplus,
                 {{"func", OptionType::Symbol, "main", "the function to rewrite"}}});

  Module m = parse_module(R"(
func @main(%x: f32[4]) -> f32[4] {
  %y = softplus %x
  return %y
}
)", "softplus.tsr");
  verify_or_throw(m);
  PipelineOptions checked;
  checked.verify_each = true;  // verify what each pass makes
  Array x = Array::from_values(DType::f32, {4}, {-2, 0, 1, 3});
  Array y = interp::run_function(m, "main", {x})[0];

  // jvp: @main(x, dx) -> (y, dy); with dx = 1, dy is the derivative.
  Module d = run_pipeline(m, "jvp", checked);
  Array dy = interp::run_function(d, "main", {x, Array::from_values(DType::f32, {4}, {1, 1, 1, 1})})[1];

  // vmap: @main takes f32[2,4], one row per batch element.
  Module v = run_pipeline(m, "vmap{axis_size=2}", checked);
  Array xs = Array::from_values(DType::f32, {2, 4}, {-2, 0, 1, 3, 3, 1, 0, -2});
  Array ys = interp::run_function(v, "main", {xs})[0];

  // The new pass, in a pipeline with tessera's dce.
  Module e = run_pipeline(m, "expand_softplus,dce", checked);
  std::fputs(print_module(e).c_str(), stdout);
  Array y2 = interp::run_function(e, "main", {x})[0];

  bool ok = true;
  for (int64_t i = 0; i < 4; ++i) {
    double xi = x.get(i), want = std::log1p(std::exp(xi)), slope = 1 / (1 + std::exp(-xi));
    std::printf("x = %4g  softplus = %.6f  expanded = %.6f  derivative = %.6f  batched = %.6f %.6f\n", xi, y.get(i),
                y2.get(i), dy.get(i), ys.get(i), ys.get(7 - i));
    ok = ok && std::abs(y.get(i) - want) < 1e-6 && std::abs(y2.get(i) - want) < 1e-6 &&
         std::abs(dy.get(i) - slope) < 1e-6 && ys.get(i) == y.get(i) && ys.get(7 - i) == y.get(i);
  }

  // A shape-rule error is located like any other.
  try {
    verify_or_throw(parse_module("func @main(%i: i32[4]) -> i32[4] {\n  %y = softplus %i\n  return %y\n}\n", "bad.tsr"));
    ok = false;
  } catch (const Error& err) {
    std::printf("%s\n", err.formatted().c_str());
  }
  std::printf(ok ? "ok\n" : "MISMATCH\n");
  return ok ? 0 : 1;
} catch (const Error& e) {
  std::fprintf(stderr, "%s\n", e.formatted().c_str());
  return 1;
}
