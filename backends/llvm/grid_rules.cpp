#include "backends/llvm/kernel_lowering.h"

namespace tessera::backends::llvm_lowering {

void add_grid_rules(LlvmTable&) {}

}  // namespace tessera::backends::llvm_lowering
