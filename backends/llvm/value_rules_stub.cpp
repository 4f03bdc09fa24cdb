// Temporary: the value rules and math_call are written in the llvm-values
// branch (value_*.cpp, math.cpp), which deletes this file.
#include "backends/llvm/kernel_lowering.h"

namespace tessera::backends::llvm_lowering {

void add_elementwise_rules(LlvmTable&) {}
void add_convert_rules(LlvmTable&) {}
void add_shape_rules(LlvmTable&) {}
void add_reduce_rules(LlvmTable&) {}
void add_dot_rules(LlvmTable&) {}

llvm::Value* Lowering::math_call(std::string_view fn_name, DType, const std::vector<llvm::Value*>&) {
  throw error(current_op(), "no math function `" + std::string(fn_name) + "` yet");
}

}  // namespace tessera::backends::llvm_lowering
