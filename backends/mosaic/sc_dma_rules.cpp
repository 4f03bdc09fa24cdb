// DMAs on a SparseCore subcore (jax/_src/pallas/mosaic/sc_lowering.py,
// `_dma_start_lowering_rule`, `_dma_wait_lowering_rule`; ir/indirect_dma.h).
//
// Indirect (gather / scatter) DMAs:
//   dma_start %t[%offs, :], %rows[:, :], %sem
//     "tpu.enqueue_indirect_dma"(%t, %rows, %offs, %sem) <{add = false}>
//   dma_start[add=true] %rows[:, :], %o[%offs, :], %sem
//     "tpu.enqueue_indirect_dma"(%rows, %o, %offs, %sem) <{add = true}>
// Operands: source, target, offsets, semaphore (no segment sizes: only a
// trailing offset filter is optional). The indexed side is the whole Ref
// (the offsets index its major dim, every other dim is full); the other side
// is the memref of its region. Dense local DMAs are `tpu.enqueue_dma` as on
// the TensorCore; remote ones keep the TensorCore rule.
//
// Waits: Pallas's dma_wait carries the copy's source and target, and waits
// with `"tpu.wait_dma2"(sem, src, dst)` or, after an indirect DMA,
// `"tpu.wait_indirect_dma"(sem, src, dst)`. tessera's dma_wait names the
// semaphore and one Ref, so it is paired with the latest DMA started in the
// same body on that semaphore that moves that Ref, and takes that DMA's
// memrefs (defined by the start, so they dominate the wait). A wait with no
// such DMA keeps the TensorCore rule (the Ref as source and destination).
#include "backends/mosaic/dma_region.h"
#include "backends/mosaic/rules.h"
#include "backends/mosaic/sc_rules.h"
#include "ir/indirect_dma.h"

namespace tessera::backends::mosaic {
namespace {

const Var* var_of(const Value& v) { return v.is_var() ? v.var() : nullptr; }

// Remembers the DMA `op` started, under its semaphore.
void record(KernelContext& ctx, const Op& op, const DmaRegion& src, const DmaRegion& dst, bool indirect) {
  const Var* sem = var_of(op.main_operand(2));
  if (!sem) return;
  ctx.started_dmas[sem].push_back(
      {var_of(op.main_operand(0)), var_of(op.main_operand(1)), src.name, src.type, dst.name, dst.type, indirect});
}

void lower_indirect_start(KernelContext& ctx, const Op& op, const IndirectDma& d) {
  const Value& table = op.main_operand(d.indexed);
  DmaRegion indexed{ctx.use(table), ctx.ref_view(table.var()).memref_type()};
  DmaRegion other = dma_region(ctx, op, 1 - d.indexed);
  DmaRegion sem = dma_region(ctx, op, 2);
  const Value& offsets = op.operands.at(static_cast<size_t>(d.offsets));
  std::string offsets_type = ctx.ref_view(offsets.var()).memref_type();
  const DmaRegion& src = d.is_gather() ? indexed : other;
  const DmaRegion& dst = d.is_gather() ? other : indexed;
  ctx.line("\"tpu.enqueue_indirect_dma\"(" + src.name + ", " + dst.name + ", " + ctx.use(offsets) + ", " + sem.name +
           ") <{add = " + (d.add ? "true" : "false") + "}> : (" + src.type + ", " + dst.type + ", " + offsets_type + ", " +
           sem.type + ") -> ()");
  record(ctx, op, src, dst, true);
}

LowerRule sc_dma_start(LowerRule remote) {
  return [remote](EmitContext& e, const Op& op, const LoweringTable& t) {
    KernelContext& ctx = kernel(e);
    if (std::optional<IndirectDma> d = indirect_dma(op)) return lower_indirect_start(ctx, op, *d);
    if (op.num_main_operands() != 3) return remote(e, op, t);
    DmaRegion src = dma_region(ctx, op, 0), dst = dma_region(ctx, op, 1), sem = dma_region(ctx, op, 2);
    ctx.line(enqueue_dma_text(src, dst, sem));
    record(ctx, op, src, dst, false);
  };
}

LowerRule sc_dma_wait(LowerRule unpaired) {
  return [unpaired](EmitContext& e, const Op& op, const LoweringTable& t) {
    KernelContext& ctx = kernel(e);
    const Var* sem_var = var_of(op.main_operand(0));
    const Var* ref = var_of(op.main_operand(1));
    auto it = sem_var ? ctx.started_dmas.find(sem_var) : ctx.started_dmas.end();
    const StartedDma* started = nullptr;
    if (it != ctx.started_dmas.end())
      for (auto s = it->second.rbegin(); s != it->second.rend() && !started; ++s)
        if (s->src_ref == ref || s->dst_ref == ref) started = &*s;
    if (!started) return unpaired(e, op, t);
    DmaRegion sem = dma_region(ctx, op, 0);
    DmaRegion src{started->src, started->src_type}, dst{started->dst, started->dst_type};
    if (!started->indirect) return ctx.line(wait_dma2_text(sem, src, dst));
    ctx.line("\"tpu.wait_indirect_dma\"(" + sem.name + ", " + src.name + ", " + dst.name + ") : (" + sem.type + ", " + src.type +
             ", " + dst.type + ") -> ()");
  };
}

}  // namespace

void add_sc_dma_rules(LoweringTable& t) {
  t.set("dma_start", sc_dma_start(*t.find(prim("dma_start"))));
  t.set("dma_wait", sc_dma_wait(*t.find(prim("dma_wait"))));
}

}  // namespace tessera::backends::mosaic
