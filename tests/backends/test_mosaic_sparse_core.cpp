// The Mosaic SparseCore emitter's pieces (backends/mosaic/sc_*.cpp,
// sparse_core_table.cpp): the table's coverage, the errors in Pallas's words
// that the verifier reaches first (modules emitted here without verifying),
// the pairing of dma_wait with the DMA it waits for, and when a run_scoped
// becomes scratch operands. The exact text is pinned by the goldens of
// tests/backends/mosaic/ (sparse_core, sc_pallas_call, sc_mesh, zoo/sc_*).
#include <doctest/doctest.h>

#include <string>

#include "backends/mosaic/emit_module.h"
#include "backends/mosaic/rules.h"
#include "backends/mosaic/sc_module.h"
#include "ir/primitive.h"
#include "tests/test_util.h"

namespace tessera::backends::mosaic {
namespace {

using testing::error_of;
using testing::parse;
using testing::replace_once;

// The emitted text of `text`, or the formatted error emitting it throws.
std::string emit_text(const std::string& text) {
  std::string out;
  std::string error = error_of([&] {
    Module m = parse(text);
    out = emit_modules(m, *m.entry());
  });
  return error.empty() ? out : error;
}

// A vector-subcore call of kernel `@k` over a (16,) f32 VMEM input and output, with `body`.
std::string sc_call(const std::string& body, const std::string& extra_params = "", const std::string& extra_call = "") {
  return "kernel @k(%x: ref<f32[16], vmem>, %o: ref<f32[16], vmem>" + extra_params + ") {\n" + body +
         "}\nfunc @main(%x: f32[16]) -> f32[16] {\n  %o = pallas_call[kernel=@k, grid=(1), kernel_type=sc_vector_subcore, "
         "in_specs=[spec()], out_specs=[spec()], out_shapes=[f32[16]]" + extra_call + "] %x\n  return %o\n}\n";
}

TEST_CASE("the SparseCore table: a rule or a stated reason for every primitive, SparseCore rules over the shared ones") {
  const LoweringTable& t = sparse_core_rules();
  CHECK(t.where() == "on the SparseCore");
  CHECK(t.pending().empty());
  for (const Primitive* p : registry().all()) {
    CHECK_MESSAGE(t.coverage(*p) != LoweringTable::Coverage::missing, p->name);
    CHECK_MESSAGE(t.coverage(*p) != LoweringTable::Coverage::pending, p->name);
    CHECK_MESSAGE(!t.contradicts(*p), p->name);
  }
  // sort and rev have rules here and none on the TensorCore; the matrix unit is the reverse.
  for (const char* p : {"sort", "rev"}) {
    CHECK_MESSAGE(t.coverage(prim(p)) == LoweringTable::Coverage::rule, p);
    CHECK_MESSAGE(tensorcore_rules().coverage(prim(p)) == LoweringTable::Coverage::unsupported, p);
  }
  CHECK(t.coverage(prim("dot_general")) == LoweringTable::Coverage::unsupported);
}

TEST_CASE("`any` is HBM on the SparseCore; other memory spaces are unchanged") {
  RefView v = RefView::of(Type::ref(ArrayType{DType::f32, {8, 16}}, MemSpace::any));
  CHECK(on_sparse_core(v).memref_type() == "memref<8x16xf32, #tpu.memory_space<hbm>>");
  v.space = MemSpace::vmem_shared;
  CHECK(on_sparse_core(v).memref_type() == "memref<8x16xf32, #tpu.memory_space<vmem_shared>>");
}

TEST_CASE("a core_map over the scalar subcores of 2 cores: one core_parallel axis, an HBM window as an affine map") {
  std::string text = emit_text("func @main(%x: ref<i32[8], any>, %s: ref<i32[8], smem>) {\n  core_map[body=fn(%r: ref<i32[8], any>, "
                               "%t: ref<i32[8], smem>) {\n    %c = axis_index[axis_name=core]\n    swap %t[0], %c\n  }, "
                               "mesh_axes=(core), mesh_shape=(2), kernel_type=sc_scalar_subcore] %x, %s\n}\n");
  CHECK_HAS(text, "func.func @core_map(%arg0: i32, %arg1: memref<8xi32, #tpu.memory_space<hbm>>, %arg2: memref<8xi32, "
                  "#tpu.memory_space<smem>>) attributes {dimension_semantics = [#tpu.dimension_semantics<core_parallel>], "
                  "iteration_bounds = array<i64: 2>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, tpu.core_type = "
                  "#tpu.core_type<sc_scalar_subcore>, window_params = [{transform_indices = affine_map<(d0) -> (0)>}, "
                  "{transform_indices = affine_map<(d0) -> (0)>}]}");
  CHECK_HAS(text, "memref.store %arg0, %arg2[%c0] : memref<8xi32, #tpu.memory_space<smem>>");
}

TEST_CASE("SparseCore errors the verifier reaches first, in Pallas's words") {
  CHECK(emit_text("kernel @k(%n: ref<i32[4], smem>, %o: ref<f32[16], vmem>) {\n}\nfunc @main(%n: i32[4]) -> f32[16] {\n"
                  "  %o = pallas_call[kernel=@k, grid=(1), num_scalar_prefetch=1, kernel_type=sc_vector_subcore, in_specs=[], "
                  "out_specs=[spec()], out_shapes=[f32[16]]] %n\n  return %o\n}\n") ==
        "t.tsr:4:3: error: mosaic: Scalar prefetch not supported.");
  CHECK(emit_text("kernel @k(%h: ref<f32[16], hbm>, %o: ref<f32[16], vmem>) {\n  %v = get %h[:]\n}\nfunc @main(%x: f32[16]) -> "
                  "f32[16] {\n  %o = pallas_call[kernel=@k, grid=(1), kernel_type=sc_vector_subcore, in_specs=[spec(mem=hbm)], "
                  "out_specs=[spec()], out_shapes=[f32[16]]] %x\n  return %o\n}\n") ==
        "t.tsr:2:3: error: mosaic: Get does not support loading from HBM. Copy the data to a core-local memory space, e.g. "
        "VMEM, via `pltpu.async_copy`.");
  CHECK(emit_text(sc_call("  %v = get %x[ds(0, 8, 2)]\n")) == "t.tsr:2:3: error: mosaic: Get only supports slices with stride 1, got (2,)");
  CHECK(emit_text(sc_call("  addupdate %o[0], 1.0\n")) == "t.tsr:2:3: error: mosaic: Swap does not support atomic scalar adds");
  CHECK(emit_text(sc_call("  %v = get %x[0]\n  debug_print[fmt=\"two\"] %v, %v\n")) ==
        "t.tsr:3:3: error: mosaic: pl.debug_print() does not support multiple inputs when lowering to SparseCore");
  CHECK(emit_text("kernel @k(%x: ref<f32[16], vmem>, %o: ref<f32[16], vmem>) {\n}\nfunc @main(%x: f32[1,16]) -> f32[16] {\n"
                  "  %o = pallas_call[kernel=@k, grid=(1), kernel_type=sc_vector_subcore, in_specs=[spec((squeezed, 16), "
                  "fn(%i: i32) -> (i32, i32) { return 0, 0 })], out_specs=[spec()], out_shapes=[f32[16]]] %x\n  return %o\n}\n") ==
        "t.tsr:4:3: error: mosaic: input \"x\": Unsupported block dimension type: squeezed (SparseCore blocks have Blocked "
        "dims only)");
  CHECK(emit_text("func @main(%x: ref<f32[16], hbm>, %n: i32) {\n  core_map[body=fn(%r: ref<f32[16], hbm>, %m: i32) {\n  }, "
                  "mesh_axes=(c), mesh_shape=(2), kernel_type=sc_scalar_subcore] %x, %n\n}\n") ==
        "t.tsr:2:3: error: mosaic: a core_map operand must be a Ref on the SparseCore, got i32");
}

TEST_CASE("a dma_wait takes the source and target of the latest DMA on its semaphore that moves its Ref") {
  std::string sem = ", %h: ref<f32[16], hbm>, %sem: ref<dma_sem, semaphore>";
  std::string call = ", scratch=[ref<f32[16], hbm>, ref<dma_sem, semaphore>]";
  // Two DMAs in flight on one semaphore: each wait names its own.
  std::string text = emit_text(sc_call("  dma_start %x[:], %h[:], %sem\n  dma_start %h[:], %o[:], %sem\n"
                                       "  dma_wait %sem, %x[:]\n  dma_wait %sem, %o[:]\n",
                                       sem, call));
  CHECK_HAS(text, "\"tpu.wait_dma2\"(%arg4, %arg1, %arg3)");
  CHECK_HAS(text, "\"tpu.wait_dma2\"(%arg4, %arg3, %arg2)");
  // A Ref no DMA on the semaphore moves: the TensorCore form, the Ref twice.
  text = emit_text(sc_call("  dma_start %x[:], %h[:], %sem\n  dma_wait %sem, %o[:]\n", sem, call));
  CHECK_HAS(text, "\"tpu.wait_dma2\"(%arg4, %arg2, %arg2)");
  // A DMA started in a nested body is not paired outside it (its memrefs would not dominate the wait).
  text = emit_text(sc_call("  run_scoped[body=fn(%xx: ref<f32[16], vmem>, %hh: ref<f32[16], hbm>, %ss: ref<dma_sem, semaphore>) {\n"
                           "    dma_start %xx[:], %hh[:], %ss\n  }] %x, %h, %sem\n  dma_wait %sem, %x[:]\n",
                           sem, call));
  CHECK_HAS(text, "\"tpu.wait_dma2\"(%arg4, %arg1, %arg1)");
}

TEST_CASE("only a run_scoped that is the whole body over exactly its parameters becomes scratch operands") {
  std::string whole = "  run_scoped[body=fn(%xx: ref<f32[16], vmem>, %oo: ref<f32[16], vmem>, %b: ref<f32[16], vmem>) {\n"
                      "    %v = get %xx[:]\n    swap %b[:], %v\n  }] %x, %o\n";
  std::string text = emit_text(sc_call(whole));
  CHECK_HAS(text, "%arg3: memref<16xf32, #tpu.memory_space<vmem>>) attributes");
  CHECK_HAS(text, "scratch_operands = 1 : i64");
  CHECK(text.find("tpu.region") == std::string::npos);
  // Its parameters in another order: a region, no scratch.
  text = emit_text(sc_call(replace_once(whole, "}] %x, %o", "}] %o, %x")));
  CHECK_HAS(text, "scratch_operands = 0 : i64");
  CHECK_HAS(text, "\"tpu.region\"() ({");
  // Not the only op: a region.
  text = emit_text(sc_call("  %z = get %x[0]\n" + whole));
  CHECK_HAS(text, "scratch_operands = 0 : i64");
  CHECK_HAS(text, "memref.alloca() : memref<16xf32, #tpu.memory_space<vmem>>");
}

}  // namespace
}  // namespace tessera::backends::mosaic
