// Indirect (gather / scatter) DMAs in the IR: `%ref[%offsets, :]` on one side
// of a dma_start, `add=true` for a scatter-add. The text round-trips, the
// typed view reads it back, and every rule of the shape rule (Pallas's
// messages from jax/_src/pallas/mosaic/sc_lowering.py) is an error at the op.
#include "ir/indirect_dma.h"
#include "ir/printer.h"
#include "ir/effects.h"
#include "tests/ir/ir_test_util.h"

using namespace tessera;
using namespace tessera::testing;

namespace {

// A kernel with an HBM table, VMEM rows and offsets; `body` is its one line
// (at t.tsr:5:3).
std::string module_with(const std::string& body) {
  return "kernel @k(%t: ref<f32[64,128], any>, %rows: ref<f32[8,128], vmem>, %idx: ref<i32[8], vmem>,\n"
         "          %idx4: ref<i32[4], vmem>, %fidx: ref<f32[8], vmem>, %sidx: ref<i32[8], smem>,\n"
         "          %idx2: ref<i32[8,1], vmem>, %v2: ref<f32[8,128], vmem>, %sem: ref<dma_sem, semaphore>,\n"
         "          %sems: ref<dma_sem[8], semaphore>, %dev: i32) {\n"
         "  " + body + "\n"
         "}\n";
}

std::string error_in(const std::string& body) { return parse_error(module_with(body)); }

const Op& first_op(const Module& m) { return m.find("k")->ops()[0]; }

}  // namespace

TEST_CASE("indirect dma: a gather, a scatter and a scatter-add parse, print back and read as IndirectDma") {
  Module g = parse(module_with("dma_start %t[%idx, :], %rows[:, :], %sem"));
  auto gd = indirect_dma(first_op(g));
  REQUIRE(gd);
  CHECK(gd->is_gather());
  CHECK(gd->num_rows == 8);
  CHECK(!gd->add);
  CHECK_HAS(print_module(g), "dma_start %t[%idx, :], %rows[:, :], %sem");
  // The offsets Ref is an index operand, not a main operand: still src, dst, sem.
  CHECK(first_op(g).num_main_operands() == 3);

  Module s = parse(module_with("dma_start[add=true] %rows[:, :], %t[%idx, :], %sem"));
  auto sd = indirect_dma(first_op(s));
  REQUIRE(sd);
  CHECK(!sd->is_gather());
  CHECK(sd->add);
  CHECK_HAS(print_module(s), "dma_start[add=true] %rows[:, :], %t[%idx, :], %sem");
  // The offsets are read: an effect on that operand.
  CHECK((op_effects(first_op(s)).on(sd->offsets) & kRead) != 0);

  Module plain = parse(module_with("dma_start %t[0:8, :], %rows[:, :], %sem"));
  CHECK(!indirect_dma(first_op(plain)));
  CHECK(parse(print_module(s)).find("k")->ops()[0].bool_param("add"));
}

TEST_CASE("indirect dma: the shape rule's errors") {
  CHECK(error_in("dma_start %t[%idx, :], %rows[%idx, :], %sem") ==
        "t.tsr:5:3: error: dma_start: Only the source ref can be indexed when doing a gather via `pltpu.async_copy`");
  CHECK(error_in("dma_start %rows[%idx, :], %t[0:8, :], %sem") ==
        "t.tsr:5:3: error: dma_start: Only the destination ref can be indexed when doing a scatter via `pltpu.async_copy`");
  CHECK(error_in("dma_start %v2[%idx, :], %rows[:, :], %sem") ==
        "t.tsr:5:3: error: dma_start: Scatter/gather via `pltpu.async_copy` from VMEM to VMEM is not supported");
  CHECK(error_in("dma_start %t[%idx, 0:128], %rows[:, :], %sem") ==
        "t.tsr:5:3: error: dma_start: Only indexing along the major dimension is supported in scatter/gather via "
        "`pltpu.async_copy`");
  CHECK(error_in("dma_start %t[%fidx, :], %rows[:, :], %sem") ==
        "t.tsr:5:3: error: dma_start: Only int32 indices are supported by scatter/gather via `pltpu.async_copy`, got "
        "ref<f32[8], vmem>");
  CHECK(error_in("dma_start %t[%sidx, :], %rows[:, :], %sem") ==
        "t.tsr:5:3: error: dma_start: Indices for scatter/gather via `pltpu.async_copy` must be in VMEM, got SMEM");
  CHECK(error_in("dma_start %t[%idx2, :], %rows[:, :], %sem") ==
        "t.tsr:5:3: error: dma_start: the offsets of a scatter/gather must be a 1-D Ref, got ref<i32[8,1], vmem>");
  CHECK(error_in("dma_start[add=true] %t[%idx, :], %rows[:, :], %sem") ==
        "t.tsr:5:3: error: dma_start: DMAs with `add=True` accumulate into the destination: only a scatter (the "
        "destination indexed by offsets) may add, not a gather");
  CHECK_HAS(error_in("dma_start[add=true] %rows[:, :], %t[0:8, :], %sem"),
            "t.tsr:5:3: error: dma_start: DMAs with `add=True` must (for now) specify offsets of the majormost dimension");
  // As many offsets as rows on the other side.
  CHECK(error_in("dma_start %t[%idx4, :], %rows[:, :], %sem") ==
        "t.tsr:5:3: error: dma_start: source region (4, 128) and destination region (8, 128) differ");
  CHECK(error_in("dma_start %rows[:, :], %t[%idx, :], %sem, %sem, %dev") ==
        "t.tsr:5:3: error: dma_start: Scatter/gather to or from a remote device via `pltpu.async_copy` is not supported");
  CHECK(error_in("dma_wait %sem, %t[%idx, :]") ==
        "t.tsr:5:3: error: dma_wait: wait for a gather / scatter on its VMEM side (the region without offsets), not on "
        "the rows it indexes");
  CHECK(error_in("%v = get %t[%idx, :]") ==
        "t.tsr:5:3: error: get: indexing by a Ref of offsets (a gather / scatter) is only allowed in dma_start and "
        "dma_wait");
  CHECK(error_in("dma_wait %sems[%idx], %rows[:, :]") ==
        "t.tsr:5:3: error: dma_wait: semaphore cannot be indexed by a Ref of offsets");
}
