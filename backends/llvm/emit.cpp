#include "backends/llvm/emit.h"

#include "backends/llvm/codegen.h"
#include "backends/llvm/lower_kernel.h"

namespace tessera::backends::llvm_lowering {
namespace {

// Only kernels are compiled; a function without one has nothing to emit.
LoweredModule lower_kernels(const Module& m, const Body& entry, const LowerOptions& o, const char* target) {
  LoweredModule lm = lower_module(m, entry, o);
  if (lm.kernels.empty())
    throw Error(entry.loc(), std::string(target) + ": @" + entry.name() +
                                 " has no pallas_call to lower (the ops around kernels run in the interpreter)");
  return lm;
}

// The kernels' descriptions as comment lines.
std::string kernel_comments(const LoweredModule& lm, const std::string& prefix) {
  std::string out;
  for (const KernelInfo& k : lm.kernels)
    for (const std::string& line : describe_kernel(k)) out += prefix + "tessera: " + line + "\n";
  return out;
}

}  // namespace

std::string emit_ptx_text(const Module& m, const Body& entry, int sm) {
  LowerOptions o;
  o.target = Target::nvptx;
  o.sm = sm;
  LoweredModule lm = lower_kernels(m, entry, o, "ptx");
  auto tm = target_machine(Target::nvptx, sm);
  link_libdevice(*lm.module);
  optimize(*lm.module, *tm);
  return emit_ptx(*lm.module, *tm, kernel_comments(lm, "// "));
}

std::string emit_llvm_text(const Module& m, const Body& entry, const std::string& target, int sm) {
  LowerOptions o;
  o.target = target == "host" ? Target::host : Target::nvptx;
  o.sm = sm;
  o.rules = &llvm_table();
  LoweredModule lm = lower_kernels(m, entry, o, "llvm");
  auto tm = target_machine(o.target, sm);
  if (o.target == Target::nvptx) link_libdevice(*lm.module);
  optimize(*lm.module, *tm);
  return print_ir(*lm.module, kernel_comments(lm, "; "));
}

}  // namespace tessera::backends::llvm_lowering
