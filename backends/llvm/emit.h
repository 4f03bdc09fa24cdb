// The `ptx` and `llvm` entries of backends/backend.h: the text of a function's
// kernels. Declared without LLVM types, so backend.cpp includes it in every
// build; defined in emit.cpp when tessera is built with LLVM 19.
#pragma once

#include <string>

#include "ir/ir.h"

namespace tessera::backends::llvm_lowering {

// PTX for sm_<sm> (80 or 90): one .entry per pallas_call reached from `entry`.
std::string emit_ptx_text(const Module& m, const Body& entry, int sm);
// The optimized LLVM IR for "nvptx" or "host".
std::string emit_llvm_text(const Module& m, const Body& entry, const std::string& target, int sm);

}  // namespace tessera::backends::llvm_lowering
