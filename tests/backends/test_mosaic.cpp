// The Mosaic TensorCore emitter's pieces: the --checkable rewrite, the
// literal hook, the memref layouts of kernel parameters, the kernel
// attributes and window parameters, the transform-function symbols every
// window names, the rule table's coverage and the errors the CLI cannot
// reach (the verifier refuses those modules first). The exact text of each
// rule is pinned by the goldens of tests/backends/mosaic/*.test.
#include <doctest/doctest.h>

#include <regex>
#include <set>
#include <string>

#include "tests/test_util.h"
#include "backends/backend.h"
#include "backends/mosaic/constants.h"
#include "backends/mosaic/emit_module.h"
#include "backends/mosaic/kernel_signature.h"
#include "backends/mosaic/rules.h"
#include "backends/mosaic/transforms.h"
#include "backends/mosaic/window_params.h"
#include "ir/parser.h"
#include "ir/primitive.h"

namespace tessera::backends::mosaic {
namespace {

using testing::error_of;

const Op& first_call(const Module& m) {
  for (const Op& op : m.entry()->ops())
    if (op.name() == "pallas_call") return op;
  throw Error("no pallas_call");
}

// A copy kernel over `grid` with the given specs and types, for attribute tests.
std::string copy_module(const std::string& grid, const std::string& in_spec, const std::string& out_spec, const std::string& in_ref,
                        const std::string& out_ref, const std::string& array, const std::string& extra = "") {
  return "kernel @k(%x: " + in_ref + ", %o: " + out_ref + ") {\n}\nfunc @main(%x: " + array + ") -> " + array +
         " {\n  %out = pallas_call[kernel=@k, grid=" + grid + ", in_specs=[" + in_spec + "], out_specs=[" + out_spec +
         "], out_shapes=[" + array + "]" + extra + "] %x\n  return %out\n}\n";
}

// `text` with the kernel's empty body replaced by `ops`.
std::string with_body(std::string text, const std::string& ops) {
  size_t at = text.find("{\n}");
  return text.replace(at, 3, "{\n" + ops + "}");
}

TEST_CASE("--checkable: memory spaces become strings, semaphores i32, nothing else changes") {
  CHECK(checkable("memref<2x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, memref<!tpu.semaphore, "
                  "#tpu.memory_space<semaphore_mem>>, memref<8x128xf32, #tpu.memory_space<vmem>>") ==
        "memref<2xi32, \"semaphore_mem\">, memref<i32, \"semaphore_mem\">, memref<8x128xf32, \"vmem\">");
  CHECK(checkable("tpu.core_type = #tpu.core_type<tc>, #tpu.dimension_semantics<parallel>") ==
        "tpu.core_type = #tpu.core_type<tc>, #tpu.dimension_semantics<parallel>");
  CHECK(checkable("#tpu.memory_space<") == "#tpu.memory_space<");  // unterminated: left alone
}

TEST_CASE("kernel parameters: window memrefs keep squeezed dims as 1; ANY operands are whole arrays") {
  Module m = parse_module(copy_module("(4)", "spec((squeezed, 8, 128), fn(%i: i32) -> (i32, i32, i32) { return %i, 0, 0 })",
                                      "spec(mem=any)", "ref<f32[8,128], vmem>", "ref<f32[4,8,128], any>", "f32[4,8,128]"),
                          "t.tsr");
  GridMapping g = grid_mapping(first_call(m));
  RefView in = operand_view(g, 0), out = operand_view(g, 1);
  CHECK(in.memref_type() == "memref<1x8x128xf32, #tpu.memory_space<vmem>>");
  CHECK(in.dims == std::vector<int>{1, 2});
  CHECK(in.is_unit_dim(0));
  CHECK(out.memref_type() == "memref<4x8x128xf32, #tpu.memory_space<any>>");
  CHECK(is_windowed(g, 0));
  CHECK(!is_windowed(g, 1));
  CHECK(!is_trivial_window(g, 0));
  CHECK(is_trivial_window(g, 1));
  KernelSignature sig = kernel_signature(g, first_call(m));
  CHECK(sig.arguments() ==
        "%arg0: i32, %arg1: memref<1x8x128xf32, #tpu.memory_space<vmem>>, %arg2: memref<4x8x128xf32, #tpu.memory_space<any>>");
  CHECK(window_param(g, 0) == "{transform_indices = @transform_0, window_bounds = array<i64: 1, 8, 128>}");
  CHECK(window_param(g, 1) == "{}");
}

TEST_CASE("kernel attributes: dynamic bounds, default semantics, vmapped axes, Buffered") {
  Module dyn = parse_module(R"(kernel @k(%x: ref<f32[8,128], vmem>, %o: ref<f32[8,128], vmem>) {
}
func @main(%n: i32, %x: f32[64,128]) -> f32[64,128] {
  %out = pallas_call[kernel=@k, grid=(?, 2), vmapped_dims=(1),
                     in_specs=[spec((8, 128), fn(%i: i32, %j: i32) -> (i32, i32) { return %i, 0 }, buffered=1)],
                     out_specs=[spec((8, 128), fn(%i: i32, %j: i32) -> (i32, i32) { return %i, 0 }, buffered=2)],
                     out_shapes=[f32[64,128]]] %n, %x
  return %out
}
)",
                            "t.tsr");
  const Op& call = first_call(dyn);
  CHECK(kernel_attributes(grid_mapping(call), call) ==
        "attributes {dimension_semantics = [#tpu.dimension_semantics<arbitrary>, #tpu.dimension_semantics<parallel>], "
        "iteration_bounds = array<i64: -9223372036854775808, 2>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, "
        "tpu.core_type = #tpu.core_type<tc>, window_params = [{pipeline_mode = #tpu.pipeline_mode<synchronous>, "
        "transform_indices = @transform_0, window_bounds = array<i64: 8, 128>}, {pipeline_mode = "
        "#tpu.pipeline_mode<double_buffered>, transform_indices = @transform_1, window_bounds = array<i64: 8, 128>}]}");
  Module three = parse_module(copy_module("(2)", "spec((8, 128), fn(%i: i32) -> (i32, i32) { return %i, 0 }, buffered=3)",
                                          "spec((8, 128), fn(%i: i32) -> (i32, i32) { return %i, 0 })", "ref<f32[8,128], vmem>",
                                          "ref<f32[8,128], vmem>", "f32[16,128]"),
                              "t.tsr");
  const Op& c3 = first_call(three);
  CHECK(error_of([&] { kernel_attributes(grid_mapping(c3), c3); }) ==
        "t.tsr:4:3: error: mosaic: Buffered(3) of input \"x\": Mosaic pipelines with 1 or 2 buffers");
}

TEST_CASE("every transform function a window names is emitted, and no other (mlir-opt cannot check this)") {
  for (const char* path : {"tests/backends/mosaic/windows.tsr", "tests/backends/mosaic/memory.tsr",
                           "tests/backends/mosaic/control.tsr", "tests/backends/mosaic/dma_sem_ops.tsr", "tests/backends/mosaic/bool_refs.tsr",
                           "tests/backends/mosaic/regions.tsr", "tests/backends/mosaic/core_map.tsr", "examples/gather_rows.tsr"}) {
    Module m = parse_file(std::string(TESSERA_SOURCE_ROOT) + "/" + path);
    std::string text = emit_modules(m, *m.entry());
    size_t start = 0;
    int modules = 0;
    while (start < text.size()) {  // each module on its own: numbers restart per module
      size_t end = text.find("// -----", start);
      if (end == std::string::npos) end = text.size();
      std::string mod = text.substr(start, end - start);
      std::set<std::string> named, defined;
      std::regex ref("transform_indices = @(transform_[0-9]+)"), def("func\\.func @(transform_[0-9]+)");
      for (auto it = std::sregex_iterator(mod.begin(), mod.end(), ref); it != std::sregex_iterator(); ++it) named.insert((*it)[1]);
      for (auto it = std::sregex_iterator(mod.begin(), mod.end(), def); it != std::sregex_iterator(); ++it) defined.insert((*it)[1]);
      CHECK_MESSAGE(named == defined, path << " module " << modules);
      ++modules;
      start = end + 1;
    }
    CHECK(modules >= 1);
  }
}

TEST_CASE("the TensorCore table: rules for the state, control and Pallas families, reasons for the rest") {
  const LoweringTable& t = tensorcore_rules();
  CHECK(t.where() == "on the TensorCore");
  for (const char* p : {"get", "swap", "load", "store", "addupdate", "cond", "for", "while", "scan", "run_scoped", "program_id",
                        "num_programs", "multiple_of", "dma_start", "dma_wait", "semaphore_signal", "semaphore_wait",
                        "semaphore_read", "get_barrier_semaphore", "device_id", "axis_index", "axis_size", "debug_print", "debug_check",
                        "delay", "call", "custom_jvp_call"})
    CHECK_MESSAGE(t.coverage(prim(p)) == LoweringTable::Coverage::rule, p);
  for (const char* p : {"pallas_call", "core_map", "pmap"})
    CHECK_MESSAGE(t.coverage(prim(p)) == LoweringTable::Coverage::unsupported, p);
  // The random bits are value rules (vector_*.cpp), the rest of these families ours.
  for (const Primitive* p : registry().all())
    if ((p->family == Family::state || p->family == Family::pallas || p->family == Family::control) &&
        p->name.rfind("prng_", 0) != 0)
      CHECK_MESSAGE(t.coverage(*p) != LoweringTable::Coverage::pending, p->name);
  CHECK(&find_backend("mosaic")->rules() == &t);
}

TEST_CASE("rule errors the verifier would catch first, in Pallas's words") {
  auto emit = [](const std::string& text) { return error_of([&] {
    Module m = parse_module(text, "t.tsr");
    emit_modules(m, *m.entry());
  }); };
  CHECK(emit(with_body(copy_module("(1)", "spec(mem=any)", "spec()", "ref<f32[8,128], any>", "ref<f32[8,128], vmem>", "f32[8,128]"), "  %v = get %x[:, :]\n")) ==
        "t.tsr:2:3: error: mosaic: Loads are only allowed on VMEM and SMEM references. ANY memory space can only be accessed "
        "using async_copy.");
  CHECK(emit(with_body(copy_module("(1)", "spec()", "spec(mem=hbm)", "ref<f32[8,128], vmem>", "ref<f32[8,128], hbm>", "f32[8,128]"), "  %v = get %x[:, :]\n  %w = swap %o[:, :], %v\n")) ==
        "t.tsr:3:3: error: mosaic: Loads are only allowed on VMEM and SMEM references. ANY memory space can only be accessed "
        "using async_copy.");
  // A window in ANY must be the whole array at block 0 (only DMAs reach it).
  CHECK(emit(copy_module("(2)", "spec((8, 128), fn(%i: i32) -> (i32, i32) { return %i, 0 }, mem=any)", "spec()",
                         "ref<f32[8,128], any>", "ref<f32[16,128], vmem>", "f32[16,128]")) ==
        "t.tsr:4:3: error: mosaic: input \"x\" lives in any, which the kernel reaches only by DMA: its block must be the whole "
        "array at index 0");
  // An axis that is neither a grid axis nor a device axis.
  CHECK(emit(with_body(copy_module("(1)", "spec()", "spec()", "ref<f32[8,128], vmem>", "ref<f32[8,128], vmem>", "f32[8,128]"), "  %d = axis_index[axis_name=x]\n")) ==
        "t.tsr:2:3: error: mosaic: axis `x` is neither a grid axis nor an axis of an enclosing pmap");
  // Index maps have their own small table.
  CHECK(emit(copy_module("(2)", "spec((8, 128), fn(%i: i32) -> (i32, i32) { %e = exp 1.0:f32\n return %i, 0 })", "spec()",
                         "ref<f32[8,128], vmem>", "ref<f32[16,128], vmem>", "f32[16,128]")) ==
        "t.tsr:4:96: error: mosaic: no lowering for `exp` in an index map");
}

TEST_CASE("a Mosaic rule run through a plain EmitContext is an error, not undefined behaviour") {
  Module m = parse_module("func @main(%r: ref<f32[8,128], vmem>) -> f32[8,128] {\n  %v = get %r[:, :]\n  return %v\n}\n", "t.tsr");
  EmitContext plain("mosaic");
  for (Var* p : m.entry()->params()) plain.def(p);
  CHECK(error_of([&] { lower_body(plain, *m.entry(), tensorcore_rules()); }) ==
        "error: mosaic: internal error: a Mosaic rule ran outside the Mosaic driver (its EmitContext is not a KernelContext)");
}

TEST_CASE("axis_index on a grid axis name is its program id") {
  Module m = parse_module(R"(kernel @k(%o: ref<i32[4], smem>) {
  %i = axis_index[axis_name=rows]
  swap %o[0], %i
}
func @main() -> i32[4] {
  %o = pallas_call[kernel=@k, grid=(4), grid_names=(rows), in_specs=[], out_specs=[spec(mem=smem)], out_shapes=[i32[4]]]
  return %o
}
)",
                          "t.tsr");
  std::string text = emit_pallas_call(first_call(m));
  CHECK(text.find("memref.store %arg0, %arg1[%c0] : memref<4xi32, #tpu.memory_space<smem>>") != std::string::npos);
}

TEST_CASE("axis_size is a constant: the grid's size, its iteration bound, or the enclosing pmap's size") {
  Module m = parse_module(R"(kernel @k(%o: ref<i32[4], smem>) {
  %r = axis_size[axis_name=rows]
  %d = axis_size[axis_name=dev]
  %n = mul %r, %d
  swap %o[0], %n
}
kernel @dyn(%o: ref<i32[4], smem>) {
  %r = axis_size[axis_name=rows]
  swap %o[0], %r
}
func @main(%x: f32[3], %g: i32) -> i32[3,4] {
  %out = pmap[axis_name=dev, axis_size=3, in_axes=(0, none), out_axes=(0), body=fn(%xs: f32, %g: i32) -> i32[4] {
    %o = pallas_call[kernel=@k, grid=(4), grid_names=(rows), in_specs=[], out_specs=[spec(mem=smem)], out_shapes=[i32[4]]]
    %p = pallas_call[kernel=@dyn, grid=(?), grid_names=(rows), in_specs=[], out_specs=[spec(mem=smem)], out_shapes=[i32[4]]] %g
    return %o
  }] %x, %g
  return %out
}
)",
                          "t.tsr");
  std::string text = emit_modules(m, *m.entry());
  size_t second = text.find("// -----");
  REQUIRE(second != std::string::npos);
  CHECK(text.substr(0, second).find("%n = arith.muli %c4_i32, %c3_i32 : i32") != std::string::npos);
  CHECK(text.substr(second).find("%r = \"tpu.iteration_bound\"() <{dim = 0 : i32}> : () -> i32") != std::string::npos);
  CHECK(error_of([&] {
          Module bad = parse_module(with_body(copy_module("(1)", "spec()", "spec()", "ref<f32[8,128], vmem>", "ref<f32[8,128], vmem>", "f32[8,128]"),
                                              "  %d = axis_size[axis_name=x]\n"), "t.tsr");
          emit_modules(bad, *bad.entry());
        }) == "t.tsr:2:3: error: mosaic: axis `x` is neither a grid axis nor an axis of an enclosing pmap");
}

}  // namespace
}  // namespace tessera::backends::mosaic
