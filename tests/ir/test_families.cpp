// Primitive families and dtype classes (ir/primitive.h, ir/dtype.h): every
// primitive belongs to the family of the file that registers it, and an
// elementwise primitive's declared traits are what its shape rule enforces.
#include <set>

#include "ir/primitive.h"
#include "tests/ir/ir_test_util.h"

using namespace tessera;
using namespace tessera::testing;

namespace {

std::set<std::string> names(Family f) {
  std::set<std::string> out;
  for (const Primitive* p : registry().of(f)) out.insert(p->name);
  return out;
}

// An array dtype of each class, and one outside it (if any).
DType member(DTypeClass c) { return c == DTypeClass::integer || c == DTypeClass::int_or_bool ? DType::i32 : DType::f32; }
std::optional<DType> outsider(DTypeClass c) {
  switch (c) {
    case DTypeClass::floating: return DType::i32;
    case DTypeClass::numeric: return DType::i1;
    case DTypeClass::int_or_bool:
    case DTypeClass::integer: return DType::f32;
    case DTypeClass::any: return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

TEST_CASE("families: every primitive is in exactly one, and families are what their files register") {
  size_t total = 0;
  for (Family f : {Family::elementwise, Family::reduction, Family::structural, Family::state, Family::control,
                   Family::pallas})
    total += registry().of(f).size();
  CHECK(total == registry().all().size());
  CHECK(names(Family::state) == std::set<std::string>{"addupdate", "get", "load", "store", "swap"});
  for (const char* n : {"exp", "add", "and", "shift_left", "eq", "select_n", "convert_element_type"})
    CHECK_MESSAGE(names(Family::elementwise).count(n), n);
  for (const char* n : {"for", "while", "scan", "cond", "run_scoped", "call", "core_map", "pmap"})
    CHECK_MESSAGE(names(Family::control).count(n), n);
  for (const char* n : {"pallas_call", "program_id", "dma_start", "semaphore_wait", "multiple_of"})
    CHECK_MESSAGE(names(Family::pallas).count(n), n);
  for (const char* n : {"reduce_sum", "argmax", "cumsum"}) CHECK_MESSAGE(names(Family::reduction).count(n), n);
  CHECK(family_name(Family::elementwise) == "elementwise");
}

TEST_CASE("families: an elementwise primitive's arity, dtype class and bool result are its shape rule's") {
  int checked = 0;
  for (const Primitive* p : registry().of(Family::elementwise)) {
    if (p->arity == 0) continue;  // select_n, convert_element_type: own rules
    INFO(p->name);
    std::string params, operands, attrs;
    DType d = member(p->accepts);
    for (const ParamSpec& s : p->params)  // integer_pow[y=2]
      if (s.required) {
        REQUIRE(s.kind == ParamKind::Int);
        attrs += (attrs.empty() ? "[" : ", ") + s.name + "=2";
      }
    if (!attrs.empty()) attrs += "]";
    for (int i = 0; i < p->arity; ++i) {
      params += std::string(i ? ", " : "") + "%x" + std::to_string(i) + ": " + std::string(dtype_name(d)) + "[8]";
      operands += std::string(i ? ", " : "") + "%x" + std::to_string(i);
    }
    CHECK(result_types(params, p->name + attrs + " " + operands) == std::string(p->to_bool ? "bool" : dtype_name(d)) + "[8]");
    if (std::optional<DType> bad = outsider(p->accepts)) {
      std::string bad_params = params;
      for (size_t k; (k = bad_params.find(std::string(dtype_name(d)) + "[8]")) != std::string::npos;)
        bad_params.replace(k, dtype_name(d).size(), dtype_name(*bad));
      CHECK_HAS(op_error(bad_params, p->name + attrs + " " + operands), "expects " + std::string(class_noun(p->accepts)) + " dtype");
    }
    ++checked;
  }
  CHECK(checked >= 35);
}

TEST_CASE("dtype classes") {
  CHECK(in_class(DTypeClass::floating, DType::bf16));
  CHECK(!in_class(DTypeClass::floating, DType::i8));
  CHECK(in_class(DTypeClass::numeric, DType::u32));
  CHECK(!in_class(DTypeClass::numeric, DType::i1));
  CHECK(in_class(DTypeClass::int_or_bool, DType::i1));
  CHECK(!in_class(DTypeClass::integer, DType::i1));
  CHECK(in_class(DTypeClass::any, DType::f64));
  CHECK(!in_class(DTypeClass::any, DType::sem));
}

TEST_CASE("families: every unary float op gives its derivative or says it is piecewise constant") {
  for (const Primitive* p : registry().of(Family::elementwise)) {
    // neg is linear; not is bitwise; is_finite gives bool; integer_pow's
    // derivative depends on its y, and reduce_precision rounds the tangent
    // with its params, so jvp has a rule of its own for each.
    if (!p->is_nary(1) || p->to_bool || !in_class(p->accepts, DType::f32)) continue;  // integer ops have no tangent
    if (p->name == "neg" || p->name == "not" || p->name == "integer_pow" || p->name == "reduce_precision") continue;
    INFO(p->name);
    bool has_tangent = p->tangent != nullptr;
    CHECK(has_tangent != p->piecewise_constant);
  }
  CHECK(prim("floor").piecewise_constant);
  bool exp_has_tangent = prim("exp").tangent != nullptr;
  CHECK(exp_has_tangent);
  for (const Primitive* p : registry().all())  // the traits belong to unary math only
    if (p->tangent || p->piecewise_constant) CHECK_MESSAGE(p->is_nary(1), p->name);
}
