// Typed views of control ops (ir/control_views.h): each names the operand and
// body-parameter layout of its op by role.
#include "ir/control_views.h"
#include "tests/ir/ir_test_util.h"

using namespace tessera;
using namespace tessera::testing;

namespace {

// The single op of `stmt` in a function with parameters `params`.
const Op& only_op(const Module& m) { return m.find("f")->ops().back(); }

std::vector<std::string> names(std::span<const Value> vs) {
  std::vector<std::string> out;
  for (const Value& v : vs) out.push_back(v.is_var() ? v.var()->name : "literal");
  return out;
}
std::vector<std::string> names(std::span<Var* const> vs) {
  std::vector<std::string> out;
  for (const Var* v : vs) out.push_back(v->name);
  return out;
}
using Names = std::vector<std::string>;

}  // namespace

TEST_CASE("control views: for, while and scan split operands and body parameters alike") {
  Module f = parse(one_op_module("%r: ref<f32[8], vmem>, %acc: f32",
                                 "for[body=fn(%i: i32, %rr: ref<f32[8], vmem>, %a: f32) -> f32 { %v = get %rr[%i]\n"
                                 " %s = add %a, %v\n return %s }, num_consts=1] 0:i32, 8:i32, %r, %acc"));
  ForView fv(only_op(f));
  CHECK(fv.num_consts == 1);
  CHECK(fv.num_carries == 1);
  CHECK(fv.first_carry() == 3);
  CHECK(names(fv.operands().consts) == Names{"r"});
  CHECK(names(fv.operands().carries) == Names{"acc"});
  CHECK(fv.index_param()->name == "i");
  CHECK(names(fv.params().consts) == Names{"rr"});
  CHECK(names(fv.params().carries) == Names{"a"});

  Module w = parse(one_op_module("%n: i32, %x: f32",
                                 "while[cond=fn(%k: i32, %c: f32) -> bool { %t = lt %c, 10.0\n return %t },"
                                 " body=fn(%k2: i32, %c2: f32) -> f32 { %d = add %c2, 1.0\n return %d }, num_consts=1] %n, %x"));
  WhileView wv(only_op(w));
  CHECK(names(wv.operands().consts) == Names{"n"});
  CHECK(names(wv.operands().carries) == Names{"x"});
  CHECK(names(wv.cond_params().carries) == Names{"c"});
  CHECK(names(wv.body_params().consts) == Names{"k2"});

  Module s = parse(one_op_module("%k: f32, %c: f32, %xs: f32[5,3]",
                                 "scan[body=fn(%kk: f32, %cc: f32, %x: f32[3]) -> (f32, f32[3]) { return %cc, %x },"
                                 " length=5, num_consts=1, num_carry=1] %k, %c, %xs"));
  ScanView sv(only_op(s));
  CHECK(sv.length == 5);
  CHECK(!sv.reverse);
  CHECK(sv.first_x() == 2);
  CHECK(sv.num_ys() == 1);
  CHECK(names(sv.operands().xs) == Names{"xs"});
  CHECK(names(sv.params().xs) == Names{"x"});
  CHECK(names(sv.params().carries) == Names{"cc"});
}

TEST_CASE("control views: cond and run_scoped") {
  Module c = parse(one_op_module("%p: i32, %x: f32[8]",
                                 "cond[branches=[fn(%a: f32[8]) -> f32[8] { return %a }, fn(%b: f32[8]) -> f32[8] { return %b }]] %p, %x"));
  CondView cv(only_op(c));
  CHECK(cv.index().var()->name == "p");
  CHECK(names(cv.args()) == Names{"x"});
  CHECK(cv.branches().size() == 2);
  Module r = parse(one_op_module(
      "%x: f32[8]", "run_scoped[body=fn(%a: f32[8], %s: ref<f32[8], vmem>) -> f32[8] { swap %s[:], %a\n %b = get %s[:]\n return %b }] %x"));
  RunScopedView rv(only_op(r));
  CHECK(names(rv.arg_params()) == Names{"a"});
  CHECK(names(rv.scratch_params()) == Names{"s"});
}

TEST_CASE("control views: a layout that does not fit is an Error at the op, not an out-of-range read") {
  Module f = parse(one_op_module("%acc: f32", "for[body=fn(%i: i32, %a: f32) -> f32 { return %a }] 0:i32, 8:i32, %acc"));
  Op op = only_op(f);
  op.set_param("num_consts", int64_t{5});
  CHECK_THROWS_WITH_AS(ForView{op}, doctest::Contains("num_consts = 5 does not fit its 1 operands"), Error);
}
