#include "backends/llvm/emit.h"

#include "backends/llvm/codegen.h"
#include "backends/llvm/lower_kernel.h"

namespace tessera::backends::llvm_lowering {

std::string emit_ptx_text(const Module& m, const Body& entry, int sm) {
  LowerOptions o;
  o.target = Target::nvptx;
  o.sm = sm;
  LoweredModule lm = lower_module(m, entry, o);
  auto tm = target_machine(Target::nvptx, sm);
  link_libdevice(*lm.module);
  optimize(*lm.module, *tm);
  return emit_ptx(*lm.module, *tm);
}

std::string emit_llvm_text(const Module& m, const Body& entry, const std::string& target, int sm) {
  LowerOptions o;
  o.target = target == "host" ? Target::host : Target::nvptx;
  o.sm = sm;
  LoweredModule lm = lower_module(m, entry, o);
  auto tm = target_machine(o.target, sm);
  if (o.target == Target::nvptx) link_libdevice(*lm.module);
  optimize(*lm.module, *tm);
  return print_ir(*lm.module);
}

}  // namespace tessera::backends::llvm_lowering
