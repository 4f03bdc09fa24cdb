// DMAs and semaphores (jax/_src/pallas/mosaic/lowering.py,
// `_dma_start_lowering_rule`, `_dma_wait_lowering_rule`,
// `_semaphore_*_lowering_rule`): every indexed Ref operand becomes a
// `tpu.memref_slice` (i32 starts) of the region, then a `tpu.memref_squeeze`
// when an integer index (or a squeezed block dim) drops a dim: Mosaic wants
// rank-0 semaphores and source / target of equal shape.
#include "backends/mosaic/constants.h"
#include "backends/mosaic/dma_region.h"
#include "backends/mosaic/mlir_types.h"
#include "backends/mosaic/ref_indexing.h"
#include "backends/mosaic/rules.h"
#include "ir/indirect_dma.h"

namespace tessera::backends::mosaic {
// Main operand k of `op` (a Ref with an optional indexer) as the memref of its
// region. A dynamic size (`ds(start, %n)`) is a `dynamic_sizes` operand of
// the slice and a `?` extent.
DmaRegion dma_region(KernelContext& ctx, const Op& op, int k) {
  const Value& r = op.main_operand(k);
  RefView view = ctx.ref_view(r.var());
  std::vector<DimIndex> idx = memref_indices(op, view, op.indexer_for(op.main_operand_index(k)));
  if (is_whole(idx, view)) return {ctx.use(r), view.memref_type()};
  for (const DimIndex& d : idx)
    if (d.stride != 1) throw ctx.error(op, "strided DMA regions are not lowered yet");
  std::vector<std::string> starts = i32_starts(ctx, idx), sizes;
  std::vector<bool> dynamic, kept_dynamic;
  for (const DimIndex& d : idx) {
    bool dyn = d.dyn_size && d.dyn_size->is_var();
    dynamic.push_back(dyn);
    if (d.kept) kept_dynamic.push_back(dyn);
    if (dyn) sizes.push_back(ctx.use(*d.dyn_size));
  }
  Shape rs = read_shape(idx);
  for (size_t i = 0; i < idx.size(); ++i)
    if (idx[i].dyn_size && !idx[i].dyn_size->is_var()) rs[i] = idx[i].dyn_size->literal().as_int();
  std::string src = ctx.use(r), out = ctx.fresh();
  std::string sliced_type = memref_type(rs, dynamic, view.dtype, view.space);
  std::string types = view.memref_type();
  for (size_t i = 0; i < starts.size() + sizes.size(); ++i) types += ", i32";
  ctx.line(out + " = \"tpu.memref_slice\"(" + src + ", " + join(starts) + (sizes.empty() ? "" : ", " + join(sizes)) +
           ") <{operandSegmentSizes = array<i32: 1, " + std::to_string(starts.size()) + ", " + std::to_string(sizes.size()) +
           ">}> : (" + types + ") -> " + sliced_type);
  Shape vs;
  for (size_t i = 0; i < idx.size(); ++i)
    if (idx[i].kept) vs.push_back(rs[i]);
  if (vs.size() == rs.size()) return {out, sliced_type};
  std::string squeezed = ctx.fresh(), squeezed_type = memref_type(vs, kept_dynamic, view.dtype, view.space);
  ctx.line(squeezed + " = \"tpu.memref_squeeze\"(" + out + ") : (" + sliced_type + ") -> " + squeezed_type);
  return {squeezed, squeezed_type};
}

std::string enqueue_dma_text(const DmaRegion& src, const DmaRegion& dst, const DmaRegion& sem) {
  return "\"tpu.enqueue_dma\"(" + src.name + ", " + dst.name + ", " + sem.name +
         ") <{operandSegmentSizes = array<i32: 1, 0, 1, 1, 0, 0, 0>, priority = 0 : i32}> : (" + src.type + ", " + dst.type +
         ", " + sem.type + ") -> ()";
}

std::string wait_dma2_text(const DmaRegion& sem, const DmaRegion& src, const DmaRegion& dst) {
  return "\"tpu.wait_dma2\"(" + sem.name + ", " + src.name + ", " + dst.name +
         ") <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (" + sem.type + ", " + src.type + ", " + dst.type + ") -> ()";
}

namespace {

using Sliced = DmaRegion;

// Gather / scatter DMAs name rows through an offsets Ref: SparseCore's
// `tpu.enqueue_indirect_dma`, which the TensorCore does not have.
void reject_indirect(KernelContext& ctx, const Op& op) {
  if (has_indirect_index(op))
    throw ctx.error(op, "indirect (gather / scatter) DMAs run on the SparseCore only (tpu.enqueue_indirect_dma), "
                        "not on the TensorCore");
}

std::string i32_operand(KernelContext& ctx, const Value& v) { return ctx.use(v); }

// dma_start src, dst, dst_sem [, src_sem, device_id]: operands of
// tpu.enqueue_dma are source, [source_semaphore], target, [target_semaphore],
// [device_id], [core_id], [subcore_id].
void lower_dma_start(EmitContext& e, const Op& op, const LoweringTable&) {
  KernelContext& ctx = kernel(e);
  reject_indirect(ctx, op);
  bool remote = op.num_main_operands() == 5;
  Sliced src = dma_region(ctx, op, 0), dst = dma_region(ctx, op, 1), dst_sem = dma_region(ctx, op, 2);
  if (!remote) {
    ctx.line(enqueue_dma_text(src, dst, dst_sem));
    return;
  }
  Sliced src_sem = dma_region(ctx, op, 3);
  std::string dev = i32_operand(ctx, op.main_operand(4));
  ctx.line("\"tpu.enqueue_dma\"(" + src.name + ", " + src_sem.name + ", " + dst.name + ", " + dst_sem.name + ", " + dev +
           ") <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0>, priority = 0 : i32}> : (" + src.type + ", " +
           src_sem.type + ", " + dst.type + ", " + dst_sem.type + ", i32) -> ()");
}

// dma_wait sem, ref: tpu.wait_dma2 takes the semaphore, a source and a
// destination, and waits for the destination's bytes; tessera names one Ref,
// passed as both. Pallas slices the Ref before the semaphore.
void lower_dma_wait(EmitContext& e, const Op& op, const LoweringTable&) {
  KernelContext& ctx = kernel(e);
  reject_indirect(ctx, op);
  Sliced ref = dma_region(ctx, op, 1), sem = dma_region(ctx, op, 0);
  ctx.line(wait_dma2_text(sem, ref, ref));
}

// semaphore_signal sem, inc [, device_id [, core_index]]
void lower_semaphore_signal(EmitContext& e, const Op& op, const LoweringTable&) {
  KernelContext& ctx = kernel(e);
  Sliced sem = dma_region(ctx, op, 0);
  std::vector<std::string> args{sem.name};
  std::string types = sem.type;
  for (size_t k = 1; k < op.num_main_operands(); ++k) {
    args.push_back(i32_operand(ctx, op.main_operand(static_cast<int>(k))));
    types += ", i32";
  }
  bool dev = op.num_main_operands() >= 3, core = op.num_main_operands() >= 4;
  ctx.line("\"tpu.sem_signal\"(" + join(args) + ") <{operandSegmentSizes = array<i32: 1, 1, " + (dev ? "1" : "0") + ", " +
           (core ? "1" : "0") + ", 0>}> : (" + types + ") -> ()");
}

void lower_semaphore_wait(EmitContext& e, const Op& op, const LoweringTable&) {
  KernelContext& ctx = kernel(e);
  Sliced sem = dma_region(ctx, op, 0);
  std::string n = i32_operand(ctx, op.main_operand(1));
  ctx.line("\"tpu.sem_wait\"(" + sem.name + ", " + n + ") : (" + sem.type + ", i32) -> ()");
}

void lower_semaphore_read(EmitContext& e, const Op& op, const LoweringTable&) {
  KernelContext& ctx = kernel(e);
  Sliced sem = dma_region(ctx, op, 0);
  ctx.line(ctx.def(op.results[0]) + " = \"tpu.sem_read\"(" + sem.name + ") : (" + sem.type + ") -> i32");
}

// The collective's barrier semaphore (the custom call then needs its collective_id).
void lower_get_barrier_semaphore(EmitContext& e, const Op& op, const LoweringTable&) {
  KernelContext& ctx = kernel(e);
  RefView view = RefView::of(op.results[0]->type);
  ctx.line(ctx.def(op.results[0]) + " = \"tpu.sem_barrier\"() : () -> " + view.memref_type());
  ctx.set_ref_view(op.results[0], view);
}

}  // namespace

void add_dma_rules(LoweringTable& t) {
  t.set("dma_start", lower_dma_start);
  t.set("dma_wait", lower_dma_wait);
  t.set("semaphore_signal", lower_semaphore_signal);
  t.set("semaphore_wait", lower_semaphore_wait);
  t.set("semaphore_read", lower_semaphore_read);
  t.set("get_barrier_semaphore", lower_get_barrier_semaphore);
}

}  // namespace tessera::backends::mosaic
