// The builder: schema defaults, parameter checks and shape inference in one place.
#include <functional>

#include "ir/builder.h"
#include "ir/printer.h"
#include "tests/ir/ir_test_util.h"

using namespace tessera;
using namespace tessera::testing;

namespace {
std::string build_error(const std::function<void(Builder&)>& f) {
  BodyPtr body = make_body("f", BodyKind::func);
  Builder b(*body);
  b.set_loc(Loc{std::make_shared<const std::string>("b.cpp"), 4, 2});
  try {
    f(b);
  } catch (const Error& e) {
    return e.formatted();
  }
  return "<no error>";
}
}  // namespace

TEST_CASE("builder: ops get result types from the shape rule and the builder's location") {
  BodyPtr body = make_body("f", BodyKind::func);
  Builder b(*body);
  Loc loc{std::make_shared<const std::string>("b.cpp"), 10, 3};
  b.set_loc(loc);
  Var* x = b.param(Type::array(DType::f32, {8, 4}), "x");
  Value y = b.binary("mul", x, b.f32(2.0));
  Value s = b.emit1("reduce_sum", {y}, {{"axes", std::vector<int64_t>{1}}});
  b.ret({s});
  REQUIRE(body->ops().size() == 2);
  CHECK(y.type().str() == "f32[8,4]");
  CHECK(s.type().str() == "f32[8]");
  CHECK(body->ops()[0].loc.str() == "b.cpp:10:3");
  CHECK(body->output_types() == std::vector<Type>{Type::array(DType::f32, {8})});
  CHECK(body->params()[0] == x);
  CHECK(print_body(*body) ==
        "func @f(%x: f32[8,4]) -> f32[8] {\n"
        "  %0: f32[8,4] = mul %x, 2.0:f32\n"
        "  %1: f32[8] = reduce_sum[axes=(1)] %0\n"
        "  return %1\n"
        "}\n");
}

TEST_CASE("builder: create returns the results, which stay valid while more ops are appended") {
  BodyPtr body = make_body("f", BodyKind::func);
  Builder b(*body);
  Var* x = b.param(Type::array(DType::f32, {8}), "x");
  std::vector<Var*> first = b.create(prim("exp"), {x});
  Value v = first[0];
  for (int i = 0; i < 100; ++i) v = b.unary("neg", v);  // the ops vector grows, moving the exp op
  CHECK(body->ops().front().results == first);
  CHECK(first[0]->type.str() == "f32[8]");
  CHECK(b.zeros(Type::array(DType::f32, {2, 3})).type().str() == "f32[2,3]");
  CHECK(b.zeros(Type::scalar(DType::i32)).is_literal());
  Params p = params_with(body->ops().front(), {{"absent", int64_t{1}}});
  CHECK(p.size() == body->ops().front().params.size());  // names the op lacks are ignored
}

TEST_CASE("builder: schema defaults are filled in, in schema order") {
  BodyPtr body = make_body("f", BodyKind::func);
  Builder b(*body);
  Var* x = b.param(Type::array(DType::f32, {8, 4}), "x");
  Var* i = b.param(Type::array(DType::i32, {8}), "i");
  b.create(prim("gather"), {x, i});
  const Op& g = b.body().ops().back();
  CHECK(g.int_param("axis") == 0);
  b.create(prim("sort"), {x}, {{"descending", true}});
  const Op& srt = b.body().ops().back();
  REQUIRE(srt.params.size() == 3);
  CHECK(srt.params[0].name == "dimension");  // schema order, not the order given
  CHECK(srt.params[2].name == "descending");
  CHECK(srt.bool_param("descending"));
  CHECK(srt.int_param("num_keys") == 1);
  b.create(prim("dot_general"), {x, x},
           {{"lhs_contracting", std::vector<int64_t>{0}}, {"rhs_contracting", std::vector<int64_t>{0}}});
  const Op& dot = b.body().ops().back();
  CHECK(dot.ints_param("lhs_batch").empty());
  CHECK(!dot.has_param("preferred_element_type"));  // optional without a default: absent
  CHECK(dot.results[0]->type.str() == "f32[4,4]");
}

TEST_CASE("builder: schema errors name the primitive and the parameter") {
  CHECK(build_error([](Builder& b) {
          Var* x = b.param(Type::array(DType::f32, {8}), "x");
          b.emit("reduce_sum", {x});
        }) == "b.cpp:4:2: error: reduce_sum needs parameter 'axes'");
  CHECK(build_error([](Builder& b) {
          Var* x = b.param(Type::array(DType::f32, {8}), "x");
          b.emit("reduce_sum", {x}, {{"axes", std::vector<int64_t>{0}}, {"keepdims", true}});
        }) == "b.cpp:4:2: error: unknown parameter 'keepdims' for primitive reduce_sum");
  CHECK(build_error([](Builder& b) {
          Var* x = b.param(Type::array(DType::f32, {8}), "x");
          b.emit("reduce_sum", {x}, {{"axes", int64_t{0}}});
        }) == "b.cpp:4:2: error: parameter 'axes' of reduce_sum has the wrong kind of value");
  CHECK(build_error([](Builder& b) {
          Var* x = b.param(Type::array(DType::f32, {8}), "x");
          b.emit("exp", {x}, {}, {Indexer{0, {}}});
        }) == "b.cpp:4:2: error: exp does not take indexed operands");
  CHECK(build_error([](Builder& b) { b.emit("frobnicate", {}); }) == "error: unknown primitive 'frobnicate'");
  std::string err = build_error([](Builder& b) {
    Var* x = b.param(Type::array(DType::f32, {8}), "x");
    b.emit("cumsum", {x}, {{"axis", int64_t{0}}, {"reverse", int64_t{1}}});
  });
  CHECK(err == "b.cpp:4:2: error: parameter 'reverse' of cumsum has the wrong kind of value");
}

TEST_CASE("builder: words outside a parameter's choices are rejected") {
  std::string err = parse_error(
      "kernel @k(%o: ref<f32[8], vmem>) { }\n"
      "func @main() -> f32[8] {\n"
      "  %o = pallas_call[kernel=@k, grid=(1), in_specs=[], out_specs=[spec()], out_shapes=[f32[8]], kernel_type=gpu]\n"
      "  return %o\n}\n");
  CHECK(err == "t.tsr:3:3: error: parameter 'kernel_type' of pallas_call is 'gpu'; expected one of tc, sc_scalar_subcore, sc_vector_subcore");
  err = parse_error(
      "kernel @k(%o: ref<f32[8], vmem>) { }\n"
      "func @main() -> f32[8] {\n"
      "  %o = pallas_call[kernel=@k, grid=(1), in_specs=[], out_specs=[spec()], out_shapes=[f32[8]],"
      " dimension_semantics=(sideways)]\n"
      "  return %o\n}\n");
  CHECK_HAS(err, "t.tsr:3:3: error: parameter 'dimension_semantics' of pallas_call is 'sideways'; expected one of parallel");
}

TEST_CASE("builder: get / swap helpers and dynamic indices") {
  BodyPtr body = make_body("k", BodyKind::kernel);
  Builder b(*body);
  Var* r = b.param(Type::ref(DType::f32, {16, 128}, MemSpace::vmem), "r");
  Var* i = b.param(Type::scalar(DType::i32), "i");
  Value v = b.get(r, {IndexEntry::dyn_slice(0, 8), IndexEntry::full()}, {i});
  CHECK(v.type().str() == "f32[8,128]");
  b.swap_discard(r, v, {IndexEntry::slice(8, 8), IndexEntry::full()});
  b.swap_discard(r, b.f32(0.0), {IndexEntry::point(0)});  // missing trailing entries: whole dims
  const Op& get = body->ops()[0];
  CHECK(get.operands.size() == 2);
  CHECK(get.indexers[0].entries[0].dyn_start == 1);
  CHECK(get.main_operands() == std::vector<int>{0});
  CHECK(body->ops()[2].indexers[0].entries.size() == 2);
  CHECK(print_body(*body) ==
        "// effects: read(%r), write(%r)\n"
        "kernel @k(%r: ref<f32[16,128], vmem>, %i: i32) {\n"
        "  %0: f32[8,128] = get %r[ds(%i, 8), :]\n"
        "  swap %r[8:16, :], %0\n"
        "  swap %r[0, :], 0.0:f32\n"
        "}\n");
}

TEST_CASE("ops: typed parameter access throws clear errors") {
  Module m = parse(one_op_module("%x: f32[8]", "%y = cumsum[axis=0] %x"));
  const Op& op = m.find("f")->ops()[0];
  CHECK(op.int_param("axis") == 0);
  CHECK(!op.bool_param("reverse"));
  try {
    op.int_param("reverse");
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.formatted() == "t.tsr:2:3: error: parameter 'reverse' of cumsum has the wrong kind");
  }
  try {
    op.int_param("nope");
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.message() == "op cumsum has no parameter 'nope'");
  }
  CHECK_THROWS_AS(op.main_operand(1), Error);
}

TEST_CASE("modules: symbols, entry and unique names") {
  Module m = parse("func @main() { }\nfunc @k() { }\n");
  CHECK(m.entry()->name() == "main");
  CHECK(m.entry("k")->name() == "k");
  try {
    m.entry("nope");
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.message() == "no function @nope in module");
  }
  CHECK(m.unique_name("k") == "k_1");
  CHECK(m.unique_name("z") == "z");
  CHECK(m.is_symbol(m.find("k").get()));
  BodyPtr other = make_body("k", BodyKind::func);
  CHECK(!m.is_symbol(other.get()));
  CHECK_THROWS_AS(m.add(other), Error);                              // duplicate name
  CHECK_THROWS_AS(m.add(make_body("", BodyKind::func)), Error);      // no name
}
