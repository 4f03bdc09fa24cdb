// From an LLVM module to machine code or text: target machines for the host
// and NVPTX (sm_80, sm_90), the O3 pipeline, libdevice, PTX text.
#pragma once

#include <memory>
#include <string>

#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include "backends/llvm/kernel_lowering.h"

namespace tessera::backends::llvm_lowering {

// The target machine for the host CPU or nvptx64-nvidia-cuda sm_<sm>
// (O3, PTX version chosen for sm: 7.0 for sm_80, 7.8 for sm_90).
std::unique_ptr<llvm::TargetMachine> target_machine(Target t, int sm = 80);
// Sets the module's triple and data layout for `tm`.
void configure_module(llvm::Module& module, const llvm::TargetMachine& tm);
// NVPTX: links the libdevice functions the module calls (LinkOnlyNeeded, then
// internalized so that O3 inlines and drops them). Path:
// /usr/local/cuda/nvvm/libdevice/libdevice.10.bc, or env TESSERA_LIBDEVICE.
// Throws Error when the module calls one and the file is missing.
void link_libdevice(llvm::Module& module);
// A kernel of more tessera ops than this (nested bodies included) is not
// given O3, whose loop passes cost tens of microseconds per IR instruction:
// kernels written by hand (the zoo's largest, flash attention, has under 100
// ops) keep O3, and generated kernels of thousands of ops emit at the rate of
// the linear passes. Counted in tessera ops, not IR instructions: a schedule
// that unrolls a tile (gpu_dot.cpp) makes a few ops thousands of instructions,
// and exactly those need O3 (vector loads from shared memory, registers).
constexpr int64_t kMaxO3Ops = 512;
// The function attribute lower_pallas_call sets on such a kernel; optimize()
// gives a module holding one the linear passes.
constexpr const char* kLinearPassesAttr = "tessera-linear-passes";
// How O3 may unroll loops. `o3` as LLVM has it: NVPTX wants it (the tile
// loops of gpu_dot / gpu_reduce must unroll fully for their accumulators to
// live in registers). `small_loops` (the host JIT): full unrolling of loops of
// at most 4 iterations, after vectorization, and no partial unrolling; O3
// copied each vectorized block loop up to its whole trip count, which made the
// IR and the compile time of softmax and layernorm ~10x for no measured speed
// (docs/backends.md, "the host JIT").
enum class Unrolling { o3, small_loops };
// Verifies the module (an Error with LLVM's message on failure) and runs the
// new pass manager's O3 pipeline for `tm`; when a function is larger than
// kMaxO3Ops (kLinearPassesAttr), a pipeline of linear passes instead (SROA, EarlyCSE,
// SimplifyCFG; libdevice functions stay functions, called), and `tm`'s code
// generator is set to CodeGenOptLevel::None (for emit_ptx).
void optimize(llvm::Module& module, llvm::TargetMachine& tm, Unrolling unrolling = Unrolling::o3);
// PTX text of an NVPTX module that optimize() has verified and optimized
// (the code generator does not verify it again), appended to `text`.
std::string emit_ptx(llvm::Module& module, llvm::TargetMachine& tm, std::string text = {});
// The module's IR text, appended to `text`.
std::string print_ir(const llvm::Module& module, std::string text = {});

}  // namespace tessera::backends::llvm_lowering
