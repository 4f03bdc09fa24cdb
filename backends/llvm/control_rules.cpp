#include "backends/llvm/kernel_lowering.h"

namespace tessera::backends::llvm_lowering {

void add_control_rules(LlvmTable&) {}

}  // namespace tessera::backends::llvm_lowering
