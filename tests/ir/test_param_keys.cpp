// Every typed param key (ir/param_keys.h) names a param that some primitive
// declares, with the C++ type that primitive's schema stores it as: a key
// whose type drifted from a schema would make `op.param(key)` throw at run
// time instead of failing here.
#include <doctest/doctest.h>

#include <string>

#include "ir/builder.h"
#include "ir/ir.h"
#include "ir/primitive.h"

using namespace tessera;

TEST_CASE("every param key matches the schema of every primitive that declares its name") {
  int checked = 0;
  keys::for_each_key([&](auto key) {
    using T = typename decltype(key)::value_type;
    int declared = 0;
    for (const Primitive* p : registry().all()) {
      const ParamSpec* spec = p->find_param(key.name);
      if (!spec) continue;
      ++declared;
      INFO("param `" << std::string(key.name) << "` of `" << p->name << "`");
      CHECK(holds_kind(Param{T{}}, spec->kind));
    }
    INFO("param `" << std::string(key.name) << "`");
    CHECK(declared > 0);
    ++checked;
  });
  CHECK(checked > 50);
}

TEST_CASE("a typed read gives the param's value, and a missing one the op's error") {
  Body body("f", BodyKind::fn);
  Builder b(body);
  Var* x = b.param(Type::array(DType::f32, {4, 8}), "x");
  Value s = b.emit1("reduce_sum", {x}, {{"axes", std::vector<int64_t>{1}}});
  const Op& op = body.ops().back();
  CHECK(op.param(keys::axes) == std::vector<int64_t>{1});
  CHECK(op.has(keys::axes));
  CHECK_FALSE(op.has(keys::axis));
  CHECK_THROWS_WITH_AS(op.param(keys::axis), doctest::Contains("axis"), Error);
  (void)s;
}
