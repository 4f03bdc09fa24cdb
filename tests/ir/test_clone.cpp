// clone_body and inline_body: copies share nothing mutable with the source.
#include "ir/builder.h"
#include "ir/clone.h"
#include "tests/ir/ir_test_util.h"

using namespace tessera;
using namespace tessera::testing;

namespace {
const char* kText =
    "func @f(%x: f32[8], %r: ref<f32[8], vmem>) -> f32[8] {\n"
    "  %a: f32[8] = get %r[:]\n"
    "  %b: f32[8] = add %x, %a\n"
    "  %c: f32[8] = cond[branches=[fn(%p: f32[8]) -> f32[8] { return %p }]] 0:i32, %b\n"
    "  return %c\n"
    "}\n";

std::string body_text(const Body& b) {
  std::string s = print_body(b);
  return s.substr(s.find('(', s.find(" @")));  // drop the effects line and the name
}
}  // namespace

TEST_CASE("clone_body: same text, fresh variables, shared nested bodies") {
  Module m = parse(kText);
  const Body& src = *m.find("f");
  BodyPtr copy = clone_body(src, "g");
  CHECK(copy->name() == "g");
  CHECK(copy->kind() == BodyKind::func);
  CHECK(body_text(*copy) == body_text(src));
  REQUIRE(copy->ops().size() == 3);
  for (size_t i = 0; i < src.params().size(); ++i) CHECK(copy->params()[i] != src.params()[i]);
  for (size_t i = 0; i < src.ops().size(); ++i) {
    CHECK(copy->ops()[i].results[0] != src.ops()[i].results[0]);
    CHECK(copy->ops()[i].loc.str() == src.ops()[i].loc.str());
  }
  // Operands point at the copy's own variables.
  CHECK(copy->ops()[1].operands[0].var() == copy->params()[0]);
  CHECK(copy->ops()[1].operands[1].var() == copy->ops()[0].results[0]);
  CHECK(copy->outputs()[0].var() == copy->ops()[2].results[0]);
  // Bodies are immutable, so nested ones are shared rather than copied.
  CHECK(copy->ops()[2].bodies_param("branches")[0] == src.ops()[2].bodies_param("branches")[0]);
}

TEST_CASE("inline_body: splices ops into another body, renaming through the map") {
  Module m = parse(kText);
  const Body& src = *m.find("f");
  BodyPtr dst = make_body("h", BodyKind::func);
  Builder b(*dst);
  Var* x = b.param(Type::array(DType::f32, {8}), "y");
  Var* r = b.param(Type::ref(DType::f32, {8}, MemSpace::vmem), "s");
  Value pre = b.unary("neg", x);
  ValueMap map{{src.params()[0], pre}, {src.params()[1], r}};
  std::vector<Value> outs = inline_body(src, *dst, map);
  b.ret(outs);
  REQUIRE(dst->ops().size() == 4);
  CHECK(dst->ops()[2].operands[0] == pre);
  CHECK(dst->ops()[1].operands[0].var() == r);
  CHECK(map.count(src.ops()[0].results[0]) == 1);
  CHECK(outs[0].var() == dst->ops()[3].results[0]);
  CHECK(print_body(*dst) ==
        "// effects: read(%s)\n"
        "func @h(%y: f32[8], %s: ref<f32[8], vmem>) -> f32[8] {\n"
        "  %0: f32[8] = neg %y\n"
        "  %a: f32[8] = get %s[:]\n"
        "  %b: f32[8] = add %0, %a\n"
        "  %c: f32[8] = cond[\n"
        "      branches=[fn(%p: f32[8]) -> f32[8] {\n"
        "        return %p\n"
        "      }]\n"
        "  ] 0:i32, %b\n"
        "  return %c\n"
        "}\n");
  // Literals and unmapped values pass through remap unchanged.
  CHECK(remap(Literal::of_int(DType::i32, 3), map) == Value(Literal::of_int(DType::i32, 3)));
  CHECK(remap(x, map) == Value(x));
}
