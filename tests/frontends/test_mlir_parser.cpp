// The MLIR text parser (frontends/mosaic/mlir_ast.h): JAX 0.11.2's own
// output and `tessera emit mosaic` output parse into the generic shape; a
// pretty form and the generic form of an op give the same Operation; bad
// text gives a located error and never a crash.
#include <chrono>
#include <cmath>
#include <functional>
#include <sstream>

#include "frontends/mosaic/mlir_ast.h"
#include "tests/test_util.h"

#ifndef MLIR_CORPUS_DIR
#error "MLIR_CORPUS_DIR is not defined (tests/frontends/meson.build)"
#endif

namespace {

using namespace tessera;
using namespace tessera::mlir_text;
using tessera::testing::read_file;

std::filesystem::path corpus(const std::string& rel) { return std::filesystem::path(MLIR_CORPUS_DIR) / rel; }

std::vector<ModuleAst> parse_corpus(const std::string& rel) {
  return parse_mlir(read_file(corpus(rel)), "corpus/" + rel);
}

std::vector<std::filesystem::path> files_in(const std::string& dir) {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::directory_iterator(corpus(dir)))
    if (e.path().extension() != ".md") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

const Func& func_named(const ModuleAst& m, const std::string& name) {
  for (const Func& f : m.funcs)
    if (f.name == name) return f;
  FAIL("no func @" << name);
  return m.funcs.front();
}

// Every op of a region, depth first, in text order.
void walk(const Region& r, const std::function<void(const Operation&)>& f) {
  for (const Block& b : r.blocks)
    for (const Operation& op : b.ops) {
      f(op);
      for (const Region& inner : op.regions) walk(inner, f);
    }
}

// The first op named `name` whose first result is `result` ("" for any).
const Operation& find_op(const Func& fn, const std::string& name, const std::string& result = "") {
  const Operation* found = nullptr;
  walk(fn.body, [&](const Operation& op) {
    if (found == nullptr && op.name == name && (result.empty() || (!op.results.empty() && op.results[0] == result)))
      found = &op;
  });
  REQUIRE_MESSAGE(found != nullptr, "no " << name << " defining %" << result << " in @" << fn.name);
  return *found;
}

std::vector<std::string> type_texts(const std::vector<MType>& ts) {
  std::vector<std::string> out;
  for (const MType& t : ts) out.push_back(t.text);
  return out;
}

std::vector<int64_t> segments(const Operation& op) {
  const Attr* a = op.attr("operandSegmentSizes");
  REQUIRE(a != nullptr);
  REQUIRE(a->kind == Attr::DenseArray);
  CHECK(a->type.element == "i32");
  return a->ints;
}

// ---- An Operation as text, everything but locations and entry-block labels,
// to compare the pretty and the generic form of one op. --------------------------
std::string attr_text(const Attr& a) {
  std::ostringstream o;
  switch (a.kind) {
    case Attr::Unit: o << "unit"; break;
    case Attr::Bool: o << (a.b ? "true" : "false"); break;
    case Attr::Int: o << a.i << " : " << a.type.text; break;
    case Attr::Float: o << a.f << " : " << a.type.text; break;
    case Attr::String: o << '"' << a.s << '"'; break;
    case Attr::Symbol: o << '@' << a.s; break;
    case Attr::Array:
      o << '[';
      for (const Attr& x : a.list) o << attr_text(x) << ", ";
      o << ']';
      break;
    case Attr::DenseArray:
    case Attr::Dense:
      o << (a.kind == Attr::Dense ? "dense<" : "array<") << a.type.text << ":";
      for (int64_t x : a.ints) o << ' ' << x;
      for (double x : a.floats) o << ' ' << x;
      o << '>';
      break;
    case Attr::Dict:
      o << '{';
      for (const auto& [k, v] : a.dict) o << k << " = " << attr_text(v) << ", ";
      o << '}';
      break;
    case Attr::Dialect: o << '#' << a.s << '<' << a.text << '>'; break;
    case Attr::TypeAttr: o << "type " << a.type.text; break;
  }
  return o.str();
}

std::string op_text(const Operation& op);

std::string region_text(const Region& r) {
  std::string s = "{";
  for (size_t b = 0; b < r.blocks.size(); ++b) {
    s += b == 0 ? "" : r.blocks[b].label;
    s += "(";
    for (const BlockArg& a : r.blocks[b].args) s += a.name + ": " + a.type.text + ", ";
    s += ") ";
    for (const Operation& op : r.blocks[b].ops) s += op_text(op) + "; ";
  }
  return s + "}";
}

std::string op_text(const Operation& op) {
  std::ostringstream o;
  for (const std::string& r : op.results) o << '%' << r << ' ';
  o << "= " << op.name << '(';
  for (const std::string& v : op.operands) o << '%' << v << ", ";
  o << ") : (";
  for (const MType& t : op.operand_types) o << t.text << ", ";
  o << ") -> (";
  for (const MType& t : op.result_types) o << t.text << ", ";
  o << ") {";
  for (const auto& [k, v] : op.attrs) o << k << " = " << attr_text(v) << ", ";
  o << '}';
  for (const Region& r : op.regions) o << ' ' << region_text(r);
  return o.str();
}

// The one op of `line` inside a func.
Operation single_op(const std::string& line) {
  const std::string text = "module {\n  func.func @f() {\n    " + line + "\n    return\n  }\n}\n";
  std::vector<ModuleAst> ms = parse_mlir(text, "t.mlir");
  REQUIRE(ms.size() == 1);
  REQUIRE(ms[0].funcs.size() == 1);
  const Block& b = ms[0].funcs[0].body.blocks.at(0);
  REQUIRE(b.ops.size() == 2);
  return b.ops[0];
}

std::string error_of(const std::string& text) {
  try {
    parse_mlir(text, "t.mlir");
  } catch (const Error& e) {
    return e.formatted();
  }
  return "<no error>";
}

// A text with `body` as the body of one func.
std::string in_func(const std::string& body) { return "module {\n  func.func @f(%a: i32) {\n" + body + "\n  }\n}\n"; }

}  // namespace

// ---- JAX 0.11.2's output ------------------------------------------------------------

TEST_CASE("zoo: every pallas_call(debug=True) text parses after its jaxpr, or says it has no module") {
  int parsed = 0;
  for (const auto& path : files_in("zoo")) {
    const std::string name = path.stem().string();
    CAPTURE(name);
    const std::string text = read_file(path);
    if (name == "cumsum" || name == "gather_rows" || name == "halo") {
      CHECK(error_of(text) == "t.mlir:1:1: error: no `module` in the text");
      continue;
    }
    const std::vector<ModuleAst> ms = parse_mlir(text, path.string());
    REQUIRE(ms.size() == 1);
    const Func& k = func_named(ms[0], "k");
    CHECK(k.attr("iteration_bounds") != nullptr);
    CHECK(k.attr("window_params") != nullptr);
    CHECK(ms[0].leading_comment.empty());  // the jaxpr's prose line before `module` is no comment
    ++parsed;
  }
  CHECK(parsed == 7);
}

TEST_CASE("zoo: kernel attributes of add (grid, window params, dimension semantics)") {
  const std::vector<ModuleAst> ms = parse_corpus("zoo/add.txt");
  const ModuleAst& m = ms.at(0);
  CHECK(m.funcs.size() == 4);  // kernel and three index maps
  const Func& k = func_named(m, "k");
  CHECK(k.args.size() == 5);
  CHECK(k.args[2].name == "x");
  CHECK(k.args[2].type.kind == MType::MemRef);
  CHECK(k.args[2].type.shape == std::vector<int64_t>{128, 128});
  CHECK(k.args[2].type.element == "f32");
  CHECK(k.args[2].type.memory_space == "vmem");
  const Attr* grid = k.attr("iteration_bounds");
  REQUIRE(grid != nullptr);
  CHECK(grid->kind == Attr::DenseArray);
  CHECK(grid->ints == std::vector<int64_t>{8, 4});
  CHECK(grid->type.element == "i64");
  const Attr* sem = k.attr("dimension_semantics");
  REQUIRE(sem != nullptr);
  REQUIRE(sem->list.size() == 2);
  CHECK(sem->list[0].kind == Attr::Dialect);
  CHECK(sem->list[0].s == "tpu.dimension_semantics");
  CHECK(sem->list[0].text == "parallel");
  const Attr* windows = k.attr("window_params");
  REQUIRE(windows != nullptr);
  REQUIRE(windows->list.size() == 3);
  const Attr* ti = windows->list[0].find("transform_indices");
  REQUIRE(ti != nullptr);
  CHECK(ti->kind == Attr::Symbol);
  CHECK(ti->s == "transform_0");
  CHECK(windows->list[0].find("window_bounds")->ints == std::vector<int64_t>{128, 128});
  CHECK(k.attr("scalar_prefetch")->i == 0);
  CHECK(k.attr("tpu.core_type")->text == "tc");
  const Func& t0 = func_named(m, "transform_0");
  CHECK(type_texts(t0.results) == std::vector<std::string>{"i32", "i32"});
  const Operation& ret = t0.body.blocks.at(0).ops.back();
  CHECK(ret.name == "func.return");
  CHECK(ret.operands.size() == 2);
}

TEST_CASE("zoo: dma_pipeline's enqueue_dma and wait_dma2 in ODS operand order with segment sizes") {
  const std::vector<ModuleAst> ms = parse_corpus("zoo/dma_pipeline.txt");
  const Func& k = func_named(ms.at(0), "k");
  CHECK(k.attr("scratch_operands")->i == 4);
  CHECK(k.args[5].type.element == "!tpu.dma_semaphore");
  CHECK(k.args[5].type.is_semaphore_element());
  CHECK(k.args[5].type.memory_space == "semaphore_mem");
  const Operation& dma = find_op(k, "tpu.enqueue_dma");
  CHECK(dma.operands == std::vector<std::string>{"dma_start3A_3", "dma_start3A_2", "dma_start3A_0"});
  CHECK(segments(dma) == std::vector<int64_t>{1, 0, 1, 1, 0, 0, 0});
  CHECK(dma.segment(0) == std::vector<std::string>{"dma_start3A_3"});
  CHECK(dma.segment(1).empty());
  CHECK(dma.segment(3) == std::vector<std::string>{"dma_start3A_0"});
  REQUIRE(dma.operand_types.size() == 3);
  CHECK(dma.operand_types[0].memory_space == "any");
  CHECK(dma.operand_types[2].shape.empty());
  CHECK(dma.operand_types[2].is_semaphore_element());
  CHECK(dma.result_types.empty());
  const Operation& wait = find_op(k, "tpu.wait_dma2");
  CHECK(wait.operands == std::vector<std::string>{"dma_wait3A_16", "dma_wait3A_19", "dma_wait3A_18"});
  CHECK(segments(wait) == std::vector<int64_t>{1, 1, 1, 0, 0});
  const Operation& slice = find_op(k, "tpu.memref_slice", "dma_start3A_1");
  CHECK(slice.operands == std::vector<std::string>{"in_buf", "c0_i32", "c0_i32", "c0_i32"});
  CHECK(segments(slice) == std::vector<int64_t>{1, 3, 0});
  CHECK(slice.segment(1).size() == 3);
  CHECK(type_texts(slice.operand_types) ==
        std::vector<std::string>{"memref<2x128x128xf32, #tpu.memory_space<vmem>>", "i32", "i32", "i32"});
  CHECK(slice.result_types.at(0).shape == std::vector<int64_t>{1, 128, 128});
  // The loop without iter_args: its scf.yield is implicit in the text.
  const Operation& loop = find_op(k, "scf.for");
  CHECK(loop.operands == std::vector<std::string>{"c0_i32", "c16_i32", "c1_i32"});
  REQUIRE(loop.regions.size() == 1);
  const Block& body = loop.regions[0].blocks.at(0);
  CHECK(body.args.size() == 1);
  CHECK(body.args[0].name == "scan3A");
  CHECK(body.args[0].type.text == "i32");
  CHECK(body.ops.back().name == "scf.yield");
  const Operation& store = find_op(k, "tpu.vector_store");
  CHECK(store.operands == std::vector<std::string>{"swap3A_22", "out_buf", "swap3A", "c0", "c0"});
  CHECK(segments(store) == std::vector<int64_t>{1, 1, 3, 0});
  CHECK(store.attr("strides")->kind == Attr::DenseArray);
  CHECK(store.attr("strides")->ints.empty());
  const Operation& cst = find_op(k, "arith.constant", "cst");
  const Attr* v = cst.attr("value");
  REQUIRE(v != nullptr);
  CHECK(v->kind == Attr::Dense);
  CHECK(v->floats == std::vector<double>{2.0});  // a splat
  CHECK(v->type.shape == std::vector<int64_t>{128, 128});
  CHECK(cst.result_types.at(0).text == "vector<128x128xf32>");
}

TEST_CASE("production: every kernel parses, with its funcs and kernel attributes") {
  const std::vector<std::pair<std::string, size_t>> expected = {
      {"flash_attention_bwd_0.mlir", 7}, {"flash_attention_bwd_1.mlir", 10}, {"flash_attention_bwd_2.mlir", 9},
      {"flash_attention_fwd_0.mlir", 5}, {"matmul_0.mlir", 4},               {"paged_attention_0.mlir", 5}};
  for (const auto& entry : expected) {  // no structured bindings: CAPTURE is a lambda (clang 14)
    const std::string& file = entry.first;
    const size_t funcs = entry.second;
    CAPTURE(file);
    const std::vector<ModuleAst> ms = parse_corpus("production/" + file);
    REQUIRE(ms.size() == 1);
    CHECK(ms[0].funcs.size() == funcs);
  }
  const std::vector<ModuleAst> paged = parse_corpus("production/paged_attention_0.mlir");
  const Func& k = paged[0].funcs.at(0);
  CHECK(k.name == "paged_flash_attention_kernel_inline_seq_dim");
  CHECK(k.attr("iteration_bounds")->ints == std::vector<int64_t>{1, 4, 8});
  CHECK(k.attr("scalar_prefetch")->i == 4);
  std::vector<std::string> words;
  for (const Attr& a : k.attr("dimension_semantics")->list) words.push_back(a.text);
  CHECK(words == std::vector<std::string>{"parallel", "arbitrary", "arbitrary"});
  const Attr* windows = k.attr("window_params");
  REQUIRE(windows->list.size() == 6);
  CHECK(windows->list[1].kind == Attr::Dict);
  CHECK(windows->list[1].dict.empty());  // an ANY operand
  CHECK(windows->list[5].find("transform_indices")->s == "transform_5");
}

TEST_CASE("production: paged attention's scf.for iter_args, 3-result scf.if and -inf constant") {
  const std::vector<ModuleAst> ms = parse_corpus("production/paged_attention_0.mlir");
  const Func& k = ms[0].funcs.at(0);
  const Operation& loop = find_op(k, "scf.for", "245");
  CHECK(loop.operands == std::vector<std::string>{"238", "244", "c1_i32_186", "237"});
  CHECK(type_texts(loop.operand_types) == std::vector<std::string>{"i32", "i32", "i32", "i32"});
  CHECK(type_texts(loop.result_types) == std::vector<std::string>{"i32"});
  const Block& body = loop.regions.at(0).blocks.at(0);
  REQUIRE(body.args.size() == 2);
  CHECK(body.args[0].name == "arg18");
  CHECK(body.args[1].name == "arg19");
  CHECK(body.args[1].type.text == "i32");
  CHECK(body.ops.back().name == "scf.yield");
  CHECK(body.ops.back().operands.size() == 1);

  const Operation& branch = find_op(k, "scf.if", "225#0");
  CHECK(branch.results == std::vector<std::string>{"225#0", "225#1", "225#2"});
  CHECK(type_texts(branch.result_types) == std::vector<std::string>{"i32", "i32", "i32"});
  REQUIRE(branch.regions.size() == 2);
  CHECK(branch.regions[0].blocks.at(0).ops.back().operands.size() == 3);
  CHECK(branch.regions[1].blocks.at(0).ops.back().name == "scf.yield");
  // A later use of a multi-result value keeps its `#N`.
  bool used = false;
  walk(k.body, [&](const Operation& op) {
    for (const std::string& v : op.operands) used = used || v == "225#1";
  });
  CHECK(used);

  const Operation& trace = find_op(k, "tpu.trace_start");  // an op with no pretty form: generic in the text
  CHECK(trace.attr("message")->s == "gd,td->gt");
  CHECK(trace.attr("level")->i == 10);
  CHECK(trace.attr("level")->type.text == "i32");
  const Operation& ninf = find_op(k, "arith.constant", "cst");
  const Attr* v = ninf.attr("value");
  REQUIRE(v->kind == Attr::Float);
  CHECK(std::isinf(v->f));
  CHECK(v->f < 0);
  CHECK(v->type.text == "f32");
}

TEST_CASE("production: flash attention's multi_reduction, cmpf and dense -inf splat") {
  const std::vector<ModuleAst> ms = parse_corpus("production/flash_attention_fwd_0.mlir");
  const Func& k = ms[0].funcs.at(0);
  const Operation& red = find_op(k, "vector.multi_reduction", "41");
  CHECK(red.operands == std::vector<std::string>{"40", "cst_27"});
  CHECK(red.attr("kind")->kind == Attr::String);
  CHECK(red.attr("kind")->s == "maximumf");
  CHECK(red.attr("reduction_dims")->kind == Attr::DenseArray);
  CHECK(red.attr("reduction_dims")->ints == std::vector<int64_t>{1});
  CHECK(red.attr("reduction_dims")->type.element == "i64");
  CHECK(type_texts(red.operand_types) == std::vector<std::string>{"vector<128x128xf32>", "vector<128xf32>"});
  CHECK(red.result_types.at(0).text == "vector<128xf32>");
  const Attr* splat = find_op(k, "arith.constant", "cst_27").attr("value");
  REQUIRE(splat->kind == Attr::Dense);
  REQUIRE(splat->floats.size() == 1);
  CHECK(std::isinf(splat->floats[0]));
  const Operation& cmp = find_op(k, "arith.cmpf");
  CHECK(cmp.attr("predicate")->i == 1);  // oeq
  CHECK(cmp.result_types.at(0).text == "vector<128x128xi1>");
  CHECK(cmp.result_types.at(0).element == "i1");
  const Operation& mm = find_op(k, "tpu.matmul");
  CHECK(mm.operands.size() == 3);
  CHECK(mm.attr("dimension_numbers")->s == "tpu.dot_dimension_numbers");
  CHECK(mm.attr("dimension_numbers")->text == "[1], [1], [0], [0], [0, 0, 1, 0], [], []");
  CHECK(mm.attr("transpose_lhs_hint")->kind == Attr::Bool);
}

// ---- `tessera emit mosaic` output -------------------------------------------------------

TEST_CASE("emitted: every committed `tessera emit mosaic` text parses, comment line kept") {
  for (const auto& path : files_in("emitted")) {
    CAPTURE(path.filename().string());
    const std::vector<ModuleAst> ms = parse_mlir(read_file(path), path.string());
    REQUIRE(!ms.empty());
    for (const ModuleAst& m : ms) {
      CHECK(m.leading_comment.rfind("// ", 0) == 0);
      CHECK(m.leading_comment.find(": pallas_call of @") != std::string::npos);
    }
  }
}

TEST_CASE("emitted: several modules in one text, each with its own comment") {
  const std::vector<ModuleAst> ms = parse_corpus("emitted/mosaic_windows.mlir");
  REQUIRE(ms.size() == 2);
  CHECK(ms[0].leading_comment == "// tests/backends/mosaic/windows.tsr:31:3: pallas_call of @window_kernel");
  CHECK(ms[1].leading_comment == "// tests/backends/mosaic/windows.tsr:37:3: pallas_call of @copy");
  CHECK(ms[0].funcs.at(0).name == "window_kernel");
  CHECK(ms[1].funcs.at(0).name == "copy");
  CHECK(ms[1].loc.line == 46);
  const Attr* kind = ms[0].funcs[0].attr("window_params")->list.at(0).find("window_kind");
  REQUIRE(kind != nullptr);
  CHECK(kind->text == "[2, 0],[2, 0]");
}

TEST_CASE("emitted: generic tpu ops, tpu.region, scf.while") {
  const std::vector<ModuleAst> ms = parse_corpus("emitted/mosaic_control.mlir");
  const Func& k = ms.at(0).funcs.at(0);
  const Operation& loop = find_op(k, "scf.while", "done");
  CHECK(loop.operands == std::vector<std::string>{"true"});
  CHECK(type_texts(loop.result_types) == std::vector<std::string>{"i1"});
  REQUIRE(loop.regions.size() == 2);
  CHECK(loop.regions[0].blocks.at(0).args.at(0).name == "p");
  CHECK(loop.regions[0].blocks[0].ops.at(0).name == "scf.condition");
  CHECK(loop.regions[0].blocks[0].ops[0].operands == std::vector<std::string>{"p", "p"});
  CHECK(loop.regions[1].blocks.at(0).label == "^bb0");
  CHECK(loop.regions[1].blocks[0].args.at(0).type.text == "i1");
  const Operation& region = find_op(k, "tpu.region");
  REQUIRE(region.regions.size() == 1);
  const Block& b = region.regions[0].blocks.at(0);
  CHECK(b.ops.back().name == "tpu.yield");
  const Operation& sem = find_op(k, "tpu.sem_alloc");
  CHECK(sem.result_types.at(0).is_semaphore_element());
  const Operation& store = find_op(k, "tpu.vector_store");
  CHECK(segments(store) == std::vector<int64_t>{1, 1, 2, 0});
  CHECK(store.operand_types.size() == 4);

  const std::vector<ModuleAst> sems = parse_corpus("emitted/mosaic_dma_sem_ops.mlir");
  const Operation& signal = find_op(sems.at(0).funcs.at(0), "tpu.sem_signal");
  CHECK(segments(signal).size() == 5);
}

// ---- Pretty and generic forms give one Operation ------------------------------------------

TEST_CASE("pretty and generic forms of an op give the same Operation") {
  const std::string vmem = "memref<8x128xf32, #tpu.memory_space<vmem>>";
  const std::string any = "memref<8x128xf32, #tpu.memory_space<any>>";
  const std::string sem = "memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>";
  const std::string rsem = "memref<!tpu.semaphore, #tpu.memory_space<semaphore_mem>>";
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"%r = arith.addf %a, %b : vector<8x128xf32>",
       "%r = \"arith.addf\"(%a, %b) : (vector<8x128xf32>, vector<8x128xf32>) -> vector<8x128xf32>"},
      {"%r = arith.cmpi slt, %a, %b : i32", "%r = \"arith.cmpi\"(%a, %b) <{predicate = 2 : i64}> : (i32, i32) -> i1"},
      {"%r = arith.cmpf ogt, %a, %b : vector<8xf32>",
       "%r = \"arith.cmpf\"(%a, %b) <{predicate = 2 : i64}> : (vector<8xf32>, vector<8xf32>) -> vector<8xi1>"},
      {"%r = arith.cmpi 4, %a, %b : i32", "%r = arith.cmpi sgt, %a, %b : i32"},
      {"%c = arith.constant 7 : i32", "%c = \"arith.constant\"() <{value = 7 : i32}> : () -> i32"},
      {"%c = arith.constant 0xFF800000 : f32", "%c = \"arith.constant\"() <{value = 0xFF800000 : f32}> : () -> f32"},
      {"%r = arith.select %c, %a, %b : i32", "%r = \"arith.select\"(%c, %a, %b) : (i1, i32, i32) -> i32"},
      {"%r = arith.select %c, %a, %b : vector<8xi1>, vector<8xf32>",
       "%r = \"arith.select\"(%c, %a, %b) : (vector<8xi1>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>"},
      {"%r = arith.extui %a : i1 to i32", "%r = \"arith.extui\"(%a) : (i1) -> i32"},
      {"%r = arith.index_cast %a : i32 to index", "%r = \"arith.index_cast\"(%a) : (i32) -> index"},
      {"%r = math.exp %a : vector<8xf32>", "%r = \"math.exp\"(%a) : (vector<8xf32>) -> vector<8xf32>"},
      {"%v = vector.load %m[%i, %j] : " + vmem + ", vector<8x128xf32>",
       "%v = \"vector.load\"(%m, %i, %j) : (" + vmem + ", index, index) -> vector<8x128xf32>"},
      {"vector.store %v, %m[%i, %j] : " + vmem + ", vector<8x128xf32>",
       "\"vector.store\"(%v, %m, %i, %j) : (vector<8x128xf32>, " + vmem + ", index, index) -> ()"},
      {"%v = vector.broadcast %s : f32 to vector<8x128xf32>",
       "%v = \"vector.broadcast\"(%s) : (f32) -> vector<8x128xf32>"},
      {"%r = vector.multi_reduction <add>, %x, %acc [1] : vector<8x128xf32> to vector<8xf32>",
       "%r = \"vector.multi_reduction\"(%x, %acc) <{kind = #vector.kind<add>, reduction_dims = array<i64: 1>}> : "
       "(vector<8x128xf32>, vector<8xf32>) -> vector<8xf32>"},
      {"%s = vector.extract %v[0, 0] : f32 from vector<1x1xf32>",
       "%s = \"vector.extract\"(%v) <{static_position = array<i64: 0, 0>}> : (vector<1x1xf32>) -> f32"},
      {"%t = vector.transpose %v, [1, 0] : vector<8x128xf32> to vector<128x8xf32>",
       "%t = \"vector.transpose\"(%v) <{permutation = array<i64: 1, 0>}> : (vector<8x128xf32>) -> vector<128x8xf32>"},
      {"%x = memref.load %m[%i] : memref<4xi32, #tpu.memory_space<smem>>",
       "%x = \"memref.load\"(%m, %i) : (memref<4xi32, #tpu.memory_space<smem>>, index) -> i32"},
      {"memref.store %x, %m[%i] : memref<4xi32, #tpu.memory_space<smem>>",
       "\"memref.store\"(%x, %m, %i) : (i32, memref<4xi32, #tpu.memory_space<smem>>, index) -> ()"},
      {"%b = memref.alloca() : " + vmem,
       "%b = \"memref.alloca\"() <{operandSegmentSizes = array<i32: 0, 0>}> : () -> " + vmem},
      {"tpu.vector_store %m[%i, %j], %v {strides = array<i32>} : " + vmem + ", vector<8x128xf32>,",
       "\"tpu.vector_store\"(%v, %m, %i, %j) <{operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>}> : "
       "(vector<8x128xf32>, " + vmem + ", index, index) -> ()"},
      {"tpu.vector_store %m[%i, %j], %v masked %k {strides = array<i32>} : " + vmem +
           ", vector<8x128xf32>, vector<8x128xi1>",
       "\"tpu.vector_store\"(%v, %m, %i, %j, %k) <{operandSegmentSizes = array<i32: 1, 1, 2, 1>, strides = "
       "array<i32>}> : (vector<8x128xf32>, " + vmem + ", index, index, vector<8x128xi1>) -> ()"},
      {"%v = tpu.vector_load %m[%i, %j] {strides = array<i32>} : " + vmem + ", vector<8x128xf32>,",
       "%v = \"tpu.vector_load\"(%m, %i, %j) <{operandSegmentSizes = array<i32: 1, 2, 0>, strides = array<i32>}> : (" +
           vmem + ", index, index) -> vector<8x128xf32>"},
      {"%r = tpu.matmul %a, %b, %c {dimension_numbers = #tpu.dot_dimension_numbers<[1], [0], [0], [1], [0, 0, 1, 1], "
       "[], []>, transpose_lhs_hint = false} : vector<8x128xf32>, vector<128x128xf32>, vector<8x128xf32> -> "
       "vector<8x128xf32>",
       "%r = \"tpu.matmul\"(%a, %b, %c) <{dimension_numbers = #tpu.dot_dimension_numbers<[1], [0], [0], [1], [0, 0, 1, "
       "1], [], []>, transpose_lhs_hint = false}> : (vector<8x128xf32>, vector<128x128xf32>, vector<8x128xf32>) -> "
       "vector<8x128xf32>"},
      {"%i = tpu.iota {dimensions = array<i32: 0>} : vector<8x128xi32>",
       "%i = \"tpu.iota\"() <{dimensions = array<i32: 0>}> : () -> vector<8x128xi32>"},
      {"%t = tpu.transpose %v, [1, 0] : vector<8x128xf32> -> vector<128x8xf32>",
       "%t = \"tpu.transpose\"(%v) <{permutation = array<i64: 1, 0>}> : (vector<8x128xf32>) -> vector<128x8xf32>"},
      {"%s = tpu.memref_slice %m[%i, %j] : " + any + " -> memref<4x128xf32, #tpu.memory_space<any>>",
       "%s = \"tpu.memref_slice\"(%m, %i, %j) <{operandSegmentSizes = array<i32: 1, 2, 0>}> : (" + any +
           ", i32, i32) -> memref<4x128xf32, #tpu.memory_space<any>>"},
      {"%q = tpu.memref_squeeze %m : memref<1x128xf32, #tpu.memory_space<vmem>> -> memref<128xf32, "
       "#tpu.memory_space<vmem>>",
       "%q = \"tpu.memref_squeeze\"(%m) : (memref<1x128xf32, #tpu.memory_space<vmem>>) -> memref<128xf32, "
       "#tpu.memory_space<vmem>>"},
      {"tpu.enqueue_dma source(%a : " + vmem + ") target(%b : " + any + ") source_semaphore(%s : " + sem +
           ") target_semaphore(%t : " + sem + ") device_id(%d)",
       "\"tpu.enqueue_dma\"(%a, %s, %b, %t, %d) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0>}> : (" + vmem +
           ", " + sem + ", " + any + ", " + sem + ", i32) -> ()"},
      {"tpu.wait_dma2 semaphore(%s : " + sem + ") src(%a : " + any + ") dst(%b : " + vmem + ")",
       "\"tpu.wait_dma2\"(%s, %a, %b) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (" + sem + ", " + any +
           ", " + vmem + ") -> ()"},
      {"tpu.sem_signal %s, %n device_id %d : " + rsem,
       "\"tpu.sem_signal\"(%s, %n, %d) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (" + rsem +
           ", i32, i32) -> ()"},
      {"tpu.sem_wait %s, %n : " + rsem, "\"tpu.sem_wait\"(%s, %n) : (" + rsem + ", i32) -> ()"},
      {"%v = tpu.sem_read %s : " + rsem + " -> i32", "%v = \"tpu.sem_read\"(%s) : (" + rsem + ") -> i32"},
      {"%d = tpu.device_id : i32", "%d = \"tpu.device_id\"() : () -> i32"},
      {"%n = tpu.iteration_bound 1 : i32", "%n = \"tpu.iteration_bound\"() <{dim = 1 : i32}> : () -> i32"},
      {"%m = tpu.assume_multiple %a, 16 : i32",
       "%m = \"tpu.assume_multiple\"(%a) <{multiple = 16 : i32}> : (i32) -> i32"},
      {"%r:2 = scf.if %c -> (i32, f32) {\n scf.yield %a, %x : i32, f32\n } else {\n scf.yield %b, %y : i32, f32\n }",
       "%r:2 = \"scf.if\"(%c) ({\n \"scf.yield\"(%a, %x) : (i32, f32) -> ()\n }, {\n \"scf.yield\"(%b, %y) : (i32, "
       "f32) -> ()\n }) : (i1) -> (i32, f32)"},
      {"scf.if %c {\n tpu.sem_wait %s, %n : " + rsem + "\n }",
       "\"scf.if\"(%c) ({\n \"tpu.sem_wait\"(%s, %n) : (" + rsem + ", i32) -> ()\n \"scf.yield\"() : () -> ()\n }, {\n "
       "}) : (i1) -> ()"},
      {"%r = scf.for %i = %lo to %hi step %st iter_args(%acc = %x) -> (i32) : i32 {\n %n = arith.addi %acc, %i : "
       "i32\n scf.yield %n : i32\n }",
       "%r = \"scf.for\"(%lo, %hi, %st, %x) ({\n ^bb0(%i: i32, %acc: i32):\n %n = \"arith.addi\"(%acc, %i) : (i32, "
       "i32) -> i32\n \"scf.yield\"(%n) : (i32) -> ()\n }) : (i32, i32, i32, i32) -> i32"},
  };
  for (const auto& pair : pairs) {
    const std::string& pretty = pair.first;
    CAPTURE(pretty);
    CHECK(op_text(single_op(pretty)) == op_text(single_op(pair.second)));
  }
}

// ---- Syntax details ---------------------------------------------------------------------------

TEST_CASE("syntax: module attributes, func signatures, locations, aliases") {
  const std::string text = R"(#map = affine_map<(d0, d1) -> (d0, d1)>
!sem = !tpu.dma_semaphore
#loc = loc("k.py":3:4)
module attributes {stable_mosaic.version = 11 : i64} {
  func.func @f(%a: i32 {tpu.x = 1 : i32} loc("k.py":1:1), %m: memref<8x128xf32, strided<[128, 1], offset: ?>, #tpu.memory_space<vmem>>, %s: memref<2x!sem, #tpu.memory_space<semaphore_mem>>) -> i32 attributes {k = #map, flag} {
    %0 = "test.op"(%a) {layout = #map} : (i32) -> i32 loc(#loc)
    func.return %0 : i32 loc(#loc)
  } loc(#loc)
  func.func private @decl(i32) -> (i32, f32)
} loc(#loc)
#loc1 = loc("after")
)";
  const std::vector<ModuleAst> ms = parse_mlir(text, "t.mlir");
  REQUIRE(ms.size() == 1);
  CHECK(ms[0].attrs.at(0).first == "stable_mosaic.version");
  const Func& f = ms[0].funcs.at(0);
  CHECK(f.args.size() == 3);
  CHECK(f.arg_attrs.at(0).at(0).first == "tpu.x");
  CHECK(f.args[1].type.memory_space == "vmem");
  CHECK(f.args[1].type.shape == std::vector<int64_t>{8, 128});
  CHECK(f.args[2].type.element == "!tpu.dma_semaphore");
  CHECK(type_texts(f.results) == std::vector<std::string>{"i32"});
  CHECK(f.attr("k")->kind == Attr::Dialect);
  CHECK(f.attr("k")->s == "affine_map");
  CHECK(f.attr("k")->text == "(d0, d1) -> (d0, d1)");
  CHECK(f.attr("flag")->kind == Attr::Unit);
  CHECK(f.body.blocks.at(0).args.size() == 3);  // the entry block holds the arguments too
  const Operation& op = f.body.blocks[0].ops.at(0);
  CHECK(op.name == "test.op");  // any op name parses in generic form
  CHECK(op.loc.line == 6);
  CHECK(op.loc.col == 5);
  const Func& decl = ms[0].funcs.at(1);
  CHECK(decl.body.blocks.empty());
  CHECK(type_texts(decl.results) == std::vector<std::string>{"i32", "f32"});
}

TEST_CASE("syntax: attribute values") {
  const Operation op = single_op(
      R"("test.attrs"() {s = "a\"b\\c\0Ad", bf = 0xFF80 : bf16, h = 0x3C00 : f16, d = 0x3FF0000000000000 : f64, )"
      R"(neg = -3 : i8, big = 255 : i8, fl = -1.5e+01 : f32, blob = dense<"0x0000803F00000040"> : vector<2xf32>, )"
      R"(nest = dense<[[1, 2], [3, 4]]> : vector<2x2xi32>, bools = array<i1: true, false>, empty = array<i32>, )"
      R"(sym = @a::@b, ty = vector<4xf32>, fn = (i32) -> (), u, dl = #tpu.x<a<b>, [c]>, bt = dense<true> : vector<8xi1>} : () -> ())");
  CHECK(op.attr("s")->s == "a\"b\\c\nd");
  CHECK(std::isinf(op.attr("bf")->f));
  CHECK(op.attr("h")->f == 1.0);
  CHECK(op.attr("d")->f == 1.0);
  CHECK(op.attr("neg")->i == -3);
  CHECK(op.attr("big")->i == 255);
  CHECK(op.attr("fl")->f == -15.0);
  CHECK(op.attr("blob")->floats == std::vector<double>{1.0, 2.0});
  CHECK(op.attr("nest")->ints == std::vector<int64_t>{1, 2, 3, 4});
  CHECK(op.attr("bools")->ints == std::vector<int64_t>{1, 0});
  CHECK(op.attr("empty")->ints.empty());
  CHECK(op.attr("empty")->type.element == "i32");
  CHECK(op.attr("sym")->s == "a::@b");
  CHECK(op.attr("ty")->type.text == "vector<4xf32>");
  CHECK(op.attr("fn")->type.kind == MType::Function);
  CHECK(op.attr("u")->kind == Attr::Unit);
  CHECK(op.attr("dl")->text == "a<b>, [c]");
  CHECK(op.attr("bt")->ints == std::vector<int64_t>{1});
}

TEST_CASE("syntax: block labels, successors, multi-result groups, 0-d and dynamic types") {
  const Operation op = single_op(
      "%r:2, %s = \"test.multi\"(%x) ({\n ^bb0(%a: i32):\n \"test.br\"() [^bb1] : () -> ()\n ^bb1:\n "
      "\"test.end\"() : () -> ()\n }) : (vector<f32>) -> (i32, memref<?x128xf32>, index)");
  CHECK(op.results == std::vector<std::string>{"r#0", "r#1", "s"});
  CHECK(op.operand_types.at(0).kind == MType::Vector);
  CHECK(op.operand_types.at(0).shape.empty());
  CHECK(op.result_types.at(1).shape == std::vector<int64_t>{-1, 128});
  REQUIRE(op.regions.at(0).blocks.size() == 2);
  CHECK(op.regions[0].blocks[0].label == "^bb0");
  CHECK(op.regions[0].blocks[0].ops.at(0).successors == std::vector<std::string>{"^bb1"});
  CHECK(op.regions[0].blocks[1].label == "^bb1");
  CHECK(op.segment(0).size() == 1);
  CHECK(op.segment(1).empty());
}

// ---- Malformed input ---------------------------------------------------------------------------------

TEST_CASE("malformed text gives a located error naming what was expected") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"just prose\n", "t.mlir:1:1: error: no `module` in the text"},
      {in_func("    %r = arith.addf %a, %b i32"),
       "t.mlir:3:28: error: expected `:` after the operands of `arith.addf`, found `i32`"},
      {in_func("    %r = foo.bar %a : i32"),
       "t.mlir:3:10: error: unknown op `foo.bar` (no import rule; generic form `\"foo.bar\"(...)` is accepted)"},
      {in_func("    %r = arith.cmpi less, %a, %a : i32"), "t.mlir:3:21: error: unknown predicate `less` of `arith.cmpi`"},
      {in_func("    %c = arith.constant 300 : i8"), "t.mlir:3:25: error: integer `300` is out of range for `i8`"},
      {in_func("    %c = arith.constant 99999999999999999999 : i64"),
       "t.mlir:3:25: error: integer `99999999999999999999` is out of range for `i64`"},
      {in_func("    %c = arith.constant 0x1FF800000 : f32"),
       "t.mlir:3:25: error: hexadecimal float literal `0x1FF800000` does not fit `f32`"},
      {in_func("    \"test.s\"() {s = \"abc} : () -> ()"), "t.mlir:3:21: error: unterminated string"},
      {in_func("    %r = \"test.x\"(%a) : (i32, i32) -> i32"),
       "t.mlir:3:25: error: `test.x` has 1 operands but its type lists 2"},
      {in_func("    %r, %s = arith.addi %a, %a : i32"), "t.mlir:3:14: error: `arith.addi` gives 1 results but 2 names are bound"},
      {in_func("    %v = vector.load %m[%a : memref<8xf32>, vector<8xf32>"),
       "t.mlir:3:28: error: expected `]` to close the index list after the base of `vector.load`, found `:`"},
      {in_func("    tpu.enqueue_dma source(%a : memref<8xf32>) target(%a : memref<8xf32>)"),
       "t.mlir:4:3: error: expected `target_semaphore(...)` of `tpu.enqueue_dma`, found `}`"},
      {in_func("    %x = \"test.t\"() : () -> vector<8xq32>"),
       "t.mlir:3:38: error: expected a type as the element type of `vector<...>`, found `q32`"},
      {in_func("    %x = \"test.t\"() : () -> vector<8x128f32>"),
       "t.mlir:3:41: error: expected `x` after a dimension size"},
      {"module {\n  func.func @f() {\n    \"test.op\"() : () -> ()\n", "t.mlir:2:18: error: region is not closed: expected `}` before the end of the text"},
      {"module {\n  func.func @f() {\n    \"test.op\"() \x01 : () -> ()\n  }\n}\n",
       "t.mlir:3:17: error: unexpected character byte 0x01"},
      {std::string("module {\n  func.func @f() {\n    \"test.op\"() \0 : () -> ()\n  }\n}\n", 51),
       "t.mlir:3:17: error: unexpected character byte 0x00"},
      {"module {\n  %x = arith.constant 1 : i32\n}\n", "t.mlir:2:3: error: expected `func.func` or `}` in the module body, found `%x`"},
      {in_func("    %x = \"test.t\"() {a = #undefined} : () -> ()"), "t.mlir:3:26: error: undefined attribute alias `#undefined`"},
      {in_func("    %x = \"test.t\"() {a = dense<[1, 2, 3]> : vector<2xi32>} : () -> ()"),
       "t.mlir:3:26: error: `dense<...>` holds 3 values but `vector<2xi32>` has 2"},
  };
  for (const auto& c : cases) {
    const std::string& text = c.first;
    CAPTURE(text);
    CHECK(error_of(text) == c.second);
  }
}

TEST_CASE("nesting deeper than the limit is an error, not a stack overflow") {
  std::string attrs(100000, '[');
  CHECK_HAS(error_of(in_func("    \"test.t\"() {a = " + attrs + "} : () -> ()")), "nesting deeper than 256 levels");
  std::string regions;
  for (int i = 0; i < 400; ++i) regions += "\"test.r\"() ({\n";
  CHECK_HAS(error_of(in_func(regions)), "nesting deeper than 256 levels");
  std::string types = "    \"test.t\"() : () -> ";
  types += std::string(1000, '(');
  CHECK_HAS(error_of(in_func(types)), "nesting deeper than 256 levels");
  std::string dense = "    \"test.t\"() {a = dense<" + std::string(100000, '[') + "> : vector<2xi32>} : () -> ()";
  CHECK_HAS(error_of(in_func(dense)), "nesting deeper than 256 levels");
}

TEST_CASE("truncated and mutated corpus texts give errors, never crashes") {
  // Every prefix cut at a line boundary and every 97th byte, and byte
  // mutations at spread positions: each parses or throws tessera::Error.
  const std::string text = read_file(corpus("zoo/dma_pipeline.txt"));
  size_t errors = 0;
  auto attempt = [&](const std::string& t) {
    try {
      parse_mlir(t, "m.mlir");
    } catch (const Error& e) {
      CHECK(e.loc().known());
      ++errors;
    }
  };
  for (size_t cut = 0; cut < text.size(); cut += 97) attempt(text.substr(0, cut));
  const std::string mutations = std::string("\0{}()<>[]%\"#!^@:=,-x9", 22);
  for (size_t pos = text.find("module {"); pos < text.size(); pos += 131)
    for (char m : mutations) {
      std::string t = text;
      t[pos] = m;
      attempt(t);
    }
  CHECK(errors > 50);
}

TEST_CASE("parsing is linear: a 40000-op body parses quickly") {
  std::string body;
  for (int i = 0; i < 40000; ++i)
    body += "    %v" + std::to_string(i) + " = arith.addi %a, %a : i32\n";
  const std::string text = in_func(body);
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<ModuleAst> ms = parse_mlir(text, "big.mlir");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(ms.at(0).funcs.at(0).body.blocks.at(0).ops.size() == 40000);
  CHECK(seconds < 5.0);  // about 0.1 s; a quadratic parse would take minutes
}
