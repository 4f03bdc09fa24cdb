// Structural rules for DMAs and semaphores: tpu.enqueue_dma -> dma_start,
// tpu.wait_dma2 -> dma_wait, tpu.sem_signal / sem_wait / sem_read ->
// semaphore_signal / semaphore_wait / semaphore_read. Each memref operand is
// a view (body_translator.h) and becomes an indexed Ref operand.
#include "frontends/mosaic/body_translator.h"

namespace tessera::mlir_text {
namespace {

const std::string& one(const std::vector<std::string>& g, const Operation& op, const char* what) {
  if (g.size() != 1) fail_at(op, std::string("expects one ") + what + " operand");
  return g[0];
}

// `tpu.enqueue_dma`: source, [source_semaphore], target, [target_semaphore],
// [device_id], [core_id], [subcore_id]. A local copy is
// `dma_start src, dst, dst_sem`; a remote one (device_id) adds the source
// semaphore and the device: `dma_start src, dst, dst_sem, src_sem, dev`.
void enqueue_dma(BodyTranslator& t, const Operation& op) {
  if (!op.attr("operandSegmentSizes")) fail_at(op, "expects `operandSegmentSizes`");
  const auto src = op.segment(0), src_sem = op.segment(1), dst = op.segment(2), dst_sem = op.segment(3),
             device = op.segment(4), core = op.segment(5), subcore = op.segment(6);
  if (dst_sem.empty()) fail_at(op, "a DMA without a target semaphore is not imported");
  if (!core.empty() || !subcore.empty()) fail_at(op, "DMAs to another core are not imported yet");
  if (!src_sem.empty() && device.empty()) fail_at(op, "a source semaphore needs a device id (a remote DMA)");
  if (!device.empty() && src_sem.empty())
    fail_at(op, "remote DMAs without a source semaphore are not imported yet");
  OperandList ol;
  ol.add(t.whole(t.ref(one(src, op, "source"), op)));
  ol.add(t.whole(t.ref(one(dst, op, "target"), op)));
  ol.add(t.whole(t.ref(one(dst_sem, op, "target semaphore"), op)));
  if (!device.empty()) {
    ol.add(t.whole(t.ref(one(src_sem, op, "source semaphore"), op)));
    ol.add(t.value(one(device, op, "device id"), op));
  }
  t.builder().emit("dma_start", ol.operands, {}, ol.indexers);
}

// `tpu.wait_dma2`: semaphore, src, dst, [device_id], [core_id]. tessera's
// dma_wait names the semaphore and one region of the copy's size: the dst.
// The device id only says where the copy's other side is; the wait is local.
void wait_dma(BodyTranslator& t, const Operation& op) {
  const auto g = operand_groups(op, 3, 5);
  if (!g[4].empty()) fail_at(op, "waits on DMAs of another core are not imported yet");
  OperandList ol;
  ol.add(t.whole(t.ref(one(g[0], op, "semaphore"), op)));
  ol.add(t.whole(t.ref(one(g[2], op, "dst"), op)));
  t.builder().emit("dma_wait", ol.operands, {}, ol.indexers);
}

// `tpu.sem_signal`: semaphore, amount, [device_id], [core_id], [subcore_id].
void sem_signal(BodyTranslator& t, const Operation& op) {
  const auto g = operand_groups(op, 2, 5);
  if (!g[4].empty()) fail_at(op, "signals to another subcore are not imported yet");
  if (!g[3].empty() && g[2].empty()) fail_at(op, "a core id without a device id is not imported yet");
  OperandList ol;
  ol.add(t.whole(t.ref(one(g[0], op, "semaphore"), op)));
  ol.add(t.value(one(g[1], op, "amount"), op));
  if (!g[2].empty()) ol.add(t.value(g[2][0], op));
  if (!g[3].empty()) ol.add(t.value(g[3][0], op));
  t.builder().emit("semaphore_signal", ol.operands, {}, ol.indexers);
}

void sem_wait(BodyTranslator& t, const Operation& op) {
  if (op.operands.size() != 2) fail_at(op, "expects a semaphore and an amount");
  OperandList ol;
  ol.add(t.whole(t.ref(op.operands[0], op)));
  ol.add(t.value(op.operands[1], op));
  t.builder().emit("semaphore_wait", ol.operands, {}, ol.indexers);
}

void sem_read(BodyTranslator& t, const Operation& op) {
  if (op.operands.size() != 1) fail_at(op, "expects a semaphore");
  OperandList ol;
  ol.add(t.whole(t.ref(op.operands[0], op)));
  t.bind(op.results.at(0), t.builder().emit1("semaphore_read", ol.operands, {}, ol.indexers));
}

}  // namespace

void add_dma_rules(StructuralTable& t) {
  t["tpu.enqueue_dma"] = enqueue_dma;
  t["tpu.wait_dma2"] = wait_dma;
  t["tpu.sem_signal"] = sem_signal;
  t["tpu.sem_wait"] = sem_wait;
  t["tpu.sem_read"] = sem_read;
}

}  // namespace tessera::mlir_text
