#include "backends/llvm/lower_kernel.h"

namespace tessera::backends::llvm_lowering {

KernelInfo lower_pallas_call(llvm::Module&, const Module&, const Op& call, const LowerOptions&) {
  throw Error(call.loc, "ptx: pallas_call is not lowered yet");
}

LoweredModule lower_module(const Module&, const Body& entry, const LowerOptions&) {
  throw Error(entry.loc(), "ptx: not lowered yet");
}

}  // namespace tessera::backends::llvm_lowering
