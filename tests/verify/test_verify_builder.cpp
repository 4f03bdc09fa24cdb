// The verifier on modules built (and then broken) by hand in C++: the SSA,
// typing and convention violations a pass could produce but the parser would
// already reject in text.
#include <doctest/doctest.h>

#include <algorithm>

#include "ir/builder.h"
#include "verify/verify.h"

using namespace tessera;

namespace {

Loc at(int line, int col = 1) { return Loc{std::make_shared<const std::string>("built"), line, col}; }

// The diagnostics of `m`, and whether one contains `text` (at `loc` if given).
bool has_diag(const Module& m, const std::string& text, const Loc* loc = nullptr) {
  std::vector<Diagnostic> diags = verify_module(m);
  std::string all;
  for (const Diagnostic& d : diags) all += "  " + d.str() + "\n";
  INFO("diagnostics:\n" << (all.empty() ? "  (none)\n" : all));
  bool found = std::any_of(diags.begin(), diags.end(), [&](const Diagnostic& d) {
    return d.message.find(text) != std::string::npos && (!loc || (d.loc.line == loc->line && d.loc.col == loc->col));
  });
  CHECK_MESSAGE(found, "wanted a diagnostic containing: " << text);
  return found;
}

Type f32s(Shape s) { return Type::array(DType::f32, std::move(s)); }

// func @main(%x: f32[8]) -> f32[8] { %a = add %x, %x ; %b = mul %a, %a ; return %b }
struct Chain {
  Module m;
  BodyPtr main = make_body("main", BodyKind::func);
  Var* x;
  Chain() {
    Builder b(*main);
    b.set_loc(at(1));
    x = b.param(f32s({8}), "x");
    b.set_loc(at(2));
    Value a = b.binary("add", x, x);
    b.set_loc(at(3));
    Value c = b.binary("mul", a, a);
    b.ret({c});
    m.add(main);
  }
};

// A pallas_call add over f32[16,128] in blocks of (8, 128), grid (2, 1).
struct Call {
  Module m;
  BodyPtr ij = make_body("ij", BodyKind::index_map);
  BodyPtr kernel = make_body("k", BodyKind::kernel);
  BodyPtr main = make_body("main", BodyKind::func);
  Op* call = nullptr;

  explicit Call(BodyPtr index_map = nullptr) {
    Builder bi(*ij);
    Var* i = bi.param(Type::scalar(DType::i32), "i");
    Var* j = bi.param(Type::scalar(DType::i32), "j");
    bi.ret({i, j});
    Builder bk(*kernel);
    Var* x = bk.param(Type::ref(DType::f32, {8, 128}, MemSpace::vmem), "x");
    Var* o = bk.param(Type::ref(DType::f32, {8, 128}, MemSpace::vmem), "o");
    bk.swap_discard(o, bk.get(x));
    Builder bm(*main);
    bm.set_loc(at(10));
    Var* arr = bm.param(f32s({16, 128}), "x");
    BlockSpec spec{std::vector<BlockDim>{BlockDim::blocked(8), BlockDim::blocked(128)}, index_map ? index_map : ij, MemSpace::vmem, 0};
    std::vector<Var*> out = bm.create(prim("pallas_call"), {arr},
                                      {{"kernel", kernel}, {"grid", std::vector<int64_t>{2, 1}}, {"in_specs", std::vector<BlockSpec>{spec}},
                                       {"out_specs", std::vector<BlockSpec>{spec}}, {"out_shapes", std::vector<Type>{f32s({16, 128})}}});
    bm.ret({out[0]});
    call = &main->ops().back();
    m.add(ij);
    m.add(kernel);
    m.add(main);
  }
  BlockSpec& in_spec() { return std::get<std::vector<BlockSpec>>(const_cast<Param&>(call->param("in_specs")))[0]; }
};

}  // namespace

TEST_CASE("well-formed built modules verify cleanly") {
  CHECK(verify_module(Chain().m).empty());
  CHECK(verify_module(Call().m).empty());
}

TEST_CASE("SSA: a value used before its definition") {
  Chain c;
  std::swap(c.main->ops()[0], c.main->ops()[1]);  // mul %a, %a now comes before %a = add
  Loc loc = at(3);
  has_diag(c.m, "a value of type f32[8] is used before it is defined", &loc);
}

TEST_CASE("SSA: an op using its own result") {
  Chain c;
  Op& add = c.main->ops()[0];
  add.operands[1] = add.results[0];
  Loc loc = at(2);
  has_diag(c.m, "is used before it is defined", &loc);
}

TEST_CASE("SSA: a value defined twice") {
  Chain c;
  c.main->ops().insert(c.main->ops().begin() + 1, c.main->ops()[0]);  // the same result Var again
  has_diag(c.m, "is defined twice");
}

TEST_CASE("SSA: a value from another body (a capture)") {
  Chain c;
  Chain other;
  c.main->ops()[0].operands[0] = other.x;
  Loc loc = at(2);
  has_diag(c.m, "%x is not defined in function @main; bodies are closed", &loc);
}

TEST_CASE("SSA: an index map capturing a value of its caller") {
  Call c;
  Var* outer = c.main->params()[0];
  // The index map returns a value computed from the caller's %x.
  Builder b(*c.ij);
  b.set_loc(at(5));
  Value s = b.emit1("reduce_sum", {outer}, {{"axes", std::vector<int64_t>{0, 1}}});
  (void)s;
  has_diag(c.m, "(an index map must not capture values)");
}

TEST_CASE("SSA: an output that is not defined in the body") {
  Chain c;
  Chain other;
  c.main->set_outputs({other.main->outputs()[0]});
  has_diag(c.m, "output a value of type f32[8] is not defined in function @main");
}

TEST_CASE("types: a result type that disagrees with the shape rule") {
  Chain c;
  c.main->ops()[0].results[0]->type = f32s({4});
  Loc loc = at(2);
  has_diag(c.m, "of add has type f32[4], but its shape rule gives f32[8]", &loc);
}

TEST_CASE("types: an operand swapped for one the shape rule rejects") {
  Chain c;
  BodyPtr other = make_body("other", BodyKind::func);
  Var* i = c.main->add_param(Type::scalar(DType::i32), "i");
  c.main->ops()[0].operands[1] = i;
  Loc loc = at(2);
  has_diag(c.m, "add", &loc);
  // The error comes from the shape rule, so it names the operand types.
  has_diag(c.m, "i32");
}

TEST_CASE("types: a result count that disagrees with the shape rule") {
  Chain c;
  c.main->ops()[1].results.clear();
  c.main->set_outputs({c.main->ops()[0].results[0]});
  has_diag(c.m, "mul gives 1 result(s), but the op has 0");
}

TEST_CASE("types: unknown, missing and mistyped params") {
  Chain c;
  c.main->ops()[0].params.push_back({"bogus", int64_t{1}});
  has_diag(c.m, "unknown parameter 'bogus' for primitive add");

  Call k;
  k.call->set_param("grid", std::string("big"));
  has_diag(k.m, "parameter 'grid' of pallas_call has the wrong kind of value");

  Call k2;
  auto& ps = k2.call->params;
  ps.erase(std::remove_if(ps.begin(), ps.end(), [](const NamedParam& p) { return p.name == "name"; }), ps.end());
  has_diag(k2.m, "pallas_call lacks parameter 'name'");

  Call k3;
  k3.call->set_param("dimension_semantics", std::vector<std::string>{"sideways", "parallel"});
  has_diag(k3.m, "contains 'sideways', which is not an allowed word");
}

TEST_CASE("types: a body param that holds no body") {
  Call c;
  c.call->set_param("kernel", BodyPtr{});
  Loc loc = at(10);
  has_diag(c.m, "parameter 'kernel' of pallas_call holds no body", &loc);
}

TEST_CASE("an op without a primitive") {
  Chain c;
  c.main->ops()[1].prim = nullptr;
  has_diag(c.m, "an op has no primitive");
}

TEST_CASE("recursive bodies are reported, not followed forever") {
  Module m;
  BodyPtr f = make_body("f", BodyKind::func);
  BodyPtr g = make_body("g", BodyKind::func);
  Builder bf(*f), bg(*g);
  bf.create(prim("call"), {}, {{"callee", g}});
  bg.create(prim("call"), {}, {{"callee", f}});
  m.add(f);
  m.add(g);
  has_diag(m, "refers to itself; bodies may not be recursive");
  f->ops().clear();  // break the shared_ptr cycle so the leak checker stays quiet
  g->ops().clear();
}

TEST_CASE("pallas_call: a squeezed block dim of size 2") {
  Call c;
  c.in_spec().block->at(0) = BlockDim{BlockDimKind::Squeezed, 2, 0, 0};
  Loc loc = at(10);
  has_diag(c.m, "block dim 0 of input \"x\" is squeezed but has size 2", &loc);
}

TEST_CASE("pallas_call: a negative buffer count") {
  Call c;
  c.in_spec().buffer_count = -1;
  has_diag(c.m, "has buffered=-1; it must be at least 1");
}

TEST_CASE("pallas_call: a plain fn as index map must still return integers and be pure") {
  BodyPtr fmap = make_body("fmap", BodyKind::fn);
  Builder b(*fmap);
  Var* i = b.param(Type::scalar(DType::i32), "i");
  b.param(Type::scalar(DType::i32), "j");
  b.emit("debug_print", {i}, {{"fmt", std::string("{}")}});
  b.ret({i, Literal::of_float(DType::f32, 0.0)});
  Call c(fmap);
  c.m.add(fmap);
  Loc loc = at(10);
  has_diag(c.m, "fn @fmap of input \"x\" returns f32 at position 1; index maps must return integer scalars", &loc);
  has_diag(c.m, "fn @fmap of input \"x\" has effects io; index maps must be pure", &loc);
}

TEST_CASE("pallas_call: a kernel given as a function that returns values") {
  Call c;
  BodyPtr f = make_body("kf", BodyKind::func);
  Builder b(*f);
  b.param(Type::ref(DType::f32, {8, 128}, MemSpace::vmem), "x");
  b.param(Type::ref(DType::f32, {8, 128}, MemSpace::vmem), "o");
  b.ret({Literal::of_int(DType::i32, 0)});
  c.call->set_param("kernel", f);
  has_diag(c.m, "function @kf returns values; a pallas_call kernel returns nothing");
}

TEST_CASE("pallas_call: an output aliased twice by the same input") {
  Call c;
  c.call->set_param("input_output_aliases", IntPairs{{0, 0}, {0, 0}});
  has_diag(c.m, "is aliased more than once");
}

TEST_CASE("diagnostics come sorted by location and without repeats") {
  Chain c;
  c.main->ops()[1].results[0]->type = f32s({2});
  c.main->ops()[0].results[0]->type = f32s({4});
  std::vector<Diagnostic> diags = verify_module(c.m);
  REQUIRE(diags.size() >= 2);
  for (size_t k = 1; k < diags.size(); ++k) {
    CHECK(diags[k - 1].loc.line <= diags[k].loc.line);
    CHECK(!(diags[k - 1].loc.line == diags[k].loc.line && diags[k - 1].message == diags[k].message));
  }
}

TEST_CASE("pallas_call: a dynamic grid size without its operand") {
  Call c;
  c.call->set_param("grid", std::vector<int64_t>{-1, 1});  // `?` needs an i32 operand first
  Loc loc = at(10);
  has_diag(c.m, "expects 1 dynamic grid size(s)", &loc);
}

TEST_CASE("pallas_call: an index map reached through two mappings is checked for each") {
  Call c;
  // @ij now takes one program id, but the grid (2, 1) passes two.
  BodyPtr one = make_body("one", BodyKind::index_map);
  Builder b(*one);
  Var* i = b.param(Type::scalar(DType::i32), "i");
  b.ret({i, i});
  auto& specs_in = std::get<std::vector<BlockSpec>>(const_cast<Param&>(c.call->param("in_specs")));
  auto& specs_out = std::get<std::vector<BlockSpec>>(const_cast<Param&>(c.call->param("out_specs")));
  specs_in[0].index_map = one;
  specs_out[0].index_map = one;
  c.m.add(one);
  has_diag(c.m, "index map @one of input \"x\" takes (i32), but the grid (2, 1) passes (i32, i32)");
  has_diag(c.m, "index map @one of output \"o\" takes (i32)");
}
