// Registration from outside tessera's sources (docs/embedding.md): a new
// primitive with its interpreter kernel and jvp / vmap rules, and a new pass.
// The installed-library test (test_install.sh) runs the same API from an
// out-of-tree program; these cases pin the orders and errors it relies on.
#include <span>

#include "interpreter/eval.h"
#include "interpreter/interpreter.h"
#include "ir/builder.h"
#include "ir/prims/shape_util.h"
#include "runtime/kernels.h"
#include "tests/test_util.h"
#include "transforms/jvp.h"
#include "transforms/pass.h"
#include "transforms/vmap.h"
#include "verify/verify.h"

using namespace tessera;
using namespace tessera::testing;
using interp::Array;

namespace {

// A float array in, the same type out: the shape rule of the test primitives.
std::vector<Type> same_float_type(const Op& op) {
  prims::expect_operands(op, 1);
  const Type& x = prims::array_operand(op, 0);
  if (!is_float(x.dtype())) prims::fail(op, "expects a floating dtype, got " + x.str());
  return prims::one_type(x);
}

const Primitive& add_primitive(const std::string& name) {
  Primitive p;
  p.name = name;
  p.summary = "a test primitive";
  p.shape = same_float_type;
  return register_primitive(std::move(p));
}

// `scale` times every element.
interp::Kernel scale_kernel(double scale) {
  return [scale](const Op&, std::span<const Array> args) {
    Array y = Array::uninitialized(args[0].dtype(), args[0].shape());
    for (int64_t i = 0; i < y.size(); ++i) y.set(i, scale * args[0].get(i));
    return std::vector<Array>{y};
  };
}

Array vec(std::vector<double> v) { return Array::from_values(DType::f32, {static_cast<int64_t>(v.size())}, v); }

std::vector<double> values(const Array& a) {
  std::vector<double> out;
  for (int64_t i = 0; i < a.size(); ++i) out.push_back(a.get(i));
  return out;
}

PipelineOptions verified() {
  PipelineOptions o;
  o.verify_each = true;
  return o;
}

Module one_op_module(const std::string& prim) {
  return parse("func @main(%x: f32[3]) -> f32[3] {\n  %y = " + prim + " %x\n  return %y\n}\n");
}

}  // namespace

TEST_CASE("register_primitive: a kernel added after the interpreter's first run is found") {
  // The interpreter's own rule table is built by this first run.
  CHECK(values(interp::run_function(one_op_module("neg"), "main", {vec({1, 2, 3})})[0]) == std::vector<double>{-1, -2, -3});

  const Primitive& p = add_primitive("test_double");
  Module m = one_op_module("test_double");
  CHECK(verify_module(m).empty());
  CHECK_FALSE(interp::has_interpret_rule(p));
  CHECK(error_of([&] { interp::run_function(m, "main", {vec({1, 2, 3})}); }) ==
        "t.tsr:2:3: error: no interpret rule for primitive test_double");

  interp::array_kernels().set("test_double", scale_kernel(2));
  CHECK(interp::has_interpret_rule(p));
  CHECK(values(interp::run_function(m, "main", {vec({1, 2, 3})})[0]) == std::vector<double>{2, 4, 6});
}

TEST_CASE("register_primitive: its shape rule's errors are located; bad registrations are errors") {
  add_primitive("test_float_only");
  CHECK(parse_error("func @main(%x: i32[3]) -> i32[3] {\n  %y = test_float_only %x\n  return %y\n}\n") ==
        "t.tsr:2:3: error: test_float_only: expects a floating dtype, got i32[3]");
  CHECK(error_of([] { add_primitive("add"); }) == "error: primitive 'add' registered twice");
  CHECK(error_of([] { add_primitive("test_float_only"); }) == "error: primitive 'test_float_only' registered twice");
  CHECK(error_of([] { register_primitive(Primitive{"test_no_shape", "no shape rule", {}, {}, {}, false}); }) ==
        "error: primitive 'test_no_shape' has no shape rule");
  CHECK(registry().find("test_no_shape") == nullptr);
}

TEST_CASE("register_primitive: jvp and vmap rules set in their tables") {
  add_primitive("test_triple");
  interp::array_kernels().set("test_triple", scale_kernel(3));
  Module m = one_op_module("test_triple");
  // jvp's table exists already (any earlier jvp built it) or is built now:
  // either way a primitive outside every family has no rule until it is set.
  CHECK(error_of([&] { run_pipeline(m, "jvp"); }) == "t.tsr:2:3: error: no jvp rule for primitive test_triple");
  CHECK(error_of([&] { run_pipeline(m, "vmap{axis_size=2}"); }) == "t.tsr:2:3: error: no vmap rule for primitive test_triple");

  // Linear: the tangent is the op applied to the tangent.
  jvp::rules().set("test_triple", [](jvp::Ctx& c, const Op& op, const std::vector<Value>& x, const std::vector<jvp::Tangent>& dx) {
    jvp::RuleResult r{jvp::emit_primal(c, op, x), {std::nullopt}};
    if (dx[0]) r.tangents[0] = c.b.unary("test_triple", *dx[0]);
    return r;
  });
  // Elementwise: the batched op keeps the operand's batch axis.
  vmap::rules().set("test_triple", [](vmap::Ctx& c, const Op&, const std::vector<Value>& x, const std::vector<int>& dims) {
    return vmap::RuleResult{{c.b.unary("test_triple", x[0])}, {dims[0]}};
  });

  Module d = run_pipeline(m, "jvp", verified());
  std::vector<Array> out = interp::run_function(d, "main", {vec({1, 2, 3}), vec({1, 0, -1})});
  CHECK(values(out[0]) == std::vector<double>{3, 6, 9});
  CHECK(values(out[1]) == std::vector<double>{3, 0, -3});
  Module v = run_pipeline(m, "vmap{axis_size=2}", verified());
  Array xs = Array::from_values(DType::f32, {2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK(values(interp::run_function(v, "main", {xs})[0]) == std::vector<double>{3, 6, 9, 12, 15, 18});
}

namespace {

int runs_of_test_pass = 0;

// Counts its runs and returns the module unchanged.
Module count_runs(const Module& m, const PassOptions& o) {
  runs_of_test_pass += static_cast<int>(o.get_int("times", 1));
  return m;
}

}  // namespace

TEST_CASE("register_pass: a registered pass runs in pipelines, with its declared options") {
  register_pass({"test_count", "count the runs", count_runs, {{"times", OptionType::Int, "1", "how much to count"}}});
  REQUIRE(find_pass("test_count") != nullptr);
  CHECK_HAS(describe_passes(), "test_count: count the runs");
  CHECK_HAS(error_of([] { parse_pipeline("no_such_pass"); }), "test_count");

  Module m = one_op_module("neg");
  Module out = run_pipeline(m, "test_count{times=2},dce,test_count", verified());
  CHECK(runs_of_test_pass == 3);
  CHECK(print_module(out) == print_module(m));
  CHECK_HAS(error_of([] { parse_pipeline("test_count{twice=1}"); }), "pass 'test_count' has no option 'twice'");
  CHECK_HAS(error_of([] { parse_pipeline("test_count{times=x}"); }), "option 'times' takes an integer");
}

TEST_CASE("register_pass: bad registrations are errors") {
  CHECK(error_of([] { register_pass({"dce", "again", count_runs, {}}); }) == "error: pass 'dce' registered twice");
  CHECK(error_of([] { register_pass({"two words", "bad name", count_runs, {}}); }) ==
        "error: cannot register pass 'two words': a pass name is letters, digits, '_' and '-'");
  CHECK(error_of([] { register_pass({"", "no name", count_runs, {}}); }) ==
        "error: cannot register pass '': a pass name is letters, digits, '_' and '-'");
  CHECK(error_of([] { register_pass({"test_no_run", "no function", nullptr, {}}); }) == "error: pass 'test_no_run' has no run function");
  CHECK(find_pass("test_no_run") == nullptr);
}
