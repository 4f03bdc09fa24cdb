#include "backends/llvm/table.h"

namespace tessera::backends::llvm_lowering {
namespace {

LlvmTable make_table(std::string target) {
  LlvmTable t(std::move(target));
  add_memory_rules(t);
  add_control_rules(t);
  add_grid_rules(t);
  add_elementwise_rules(t);
  add_convert_rules(t);
  add_shape_rules(t);
  add_reduce_rules(t);
  add_dot_rules(t);
  add_unsupported_reasons(t);
  return t;
}

}  // namespace

const LlvmRule& LlvmTable::at(const Op& op) const {
  if (const LlvmRule* r = find(*op.prim)) return *r;
  std::string why = reason(*op.prim);
  // e.g. "no lowering for `dma_start` (TPU-only)".
  std::string tail = why == kTpuOnly ? " (TPU-only)" : why.empty() ? "" : ": " + why;
  throw Error(op.loc, target() + ": no lowering for `" + op.name() + "`" + tail);
}

const LlvmTable& ptx_table() {
  static const LlvmTable t = make_table("ptx");
  return t;
}

const LlvmTable& llvm_table() {
  static const LlvmTable t = make_table("llvm");
  return t;
}

}  // namespace tessera::backends::llvm_lowering

namespace tessera::backends::llvm_lowering {

// Why a primitive has no lowering. Pallas-Triton rejects the same things
// (`jax/_src/pallas/triton/lowering.py` has no rules for DMAs, semaphores or
// meshes); a GPU has no equivalent of the TPU's DMA engines and semaphores.
void add_unsupported_reasons(LlvmTable& t) {
  for (const char* p : {"dma_start", "dma_wait", "semaphore_signal", "semaphore_wait", "semaphore_read",
                        "get_barrier_semaphore", "prng_seed", "prng_random_bits", "axis_index", "axis_size", "device_id", "pmap",
                        "core_map"})
    t.unsupported(p, kTpuOnly);
  t.unsupported("pallas_call", "a kernel cannot launch a kernel");
  t.unsupported("debug_print", "compiled kernels do not print (run it with --backend=interp)");
  t.unsupported("debug_check", "compiled kernels cannot stop with the check's message (run it with --backend=interp)");
  t.unsupported("custom_lin", "the jvp of a custom_vjp_call has no forward rule to run (transpose it: vjp)");
}

}  // namespace tessera::backends::llvm_lowering
