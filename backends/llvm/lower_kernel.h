// A pallas_call as one LLVM function (the kernel ABI of docs/backends.md,
// "PTX / LLVM"), and the walk that lowers every pallas_call of a function.
//
// Operands of the function, in order: one pointer per array operand of the
// pallas_call in GridMapping order (scalar prefetch, inputs, outputs: whole
// arrays, row-major), then `workspace`. Elements as they lie in memory:
// bf16 as its 2 bytes (the top half of the f32 bits), f16 as IEEE half,
// bool as one byte 0 / 1, the others as their C types (the interpreter's
// Arrays keep bf16 / f16 as float: a runner converts).
//   host:  void NAME(ptr a0, ..., ptr workspace, i64 begin, i64 end)
//          runs the parallel grid points with linear index in [begin, end)
//          (row-major over the parallel axes), each with its arbitrary axes
//          as inner loops; `workspace` is arena_bytes of 64-byte aligned
//          scratch owned by the calling thread.
//   nvptx: ptx_kernel void NAME(ptr addrspace(1) a0, ..., ptr addrspace(1) workspace)
//          parallel axes -> ctaid.x/y/z (more than 3: the leading ones
//          collapsed into x); arbitrary axes -> loops inside the CTA;
//          `threads` threads per CTA; the CTA's arena is
//          workspace + linear_cta * arena_bytes; shared_bytes of dynamic
//          shared memory per CTA (the extern array NAME_shared).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "backends/llvm/kernel_lowering.h"
#include "ir/ir.h"

namespace tessera::backends::llvm_lowering {

struct KernelInfo {
  std::string symbol;
  std::vector<int64_t> launch_grid;  // x, y, z (NVPTX); the parallel axes' sizes collapsed likewise on the host
  int threads = 1;
  int64_t arena_bytes = 0;           // per grid point (host thread / CTA)
  int64_t shared_bytes = 0;          // NVPTX: dynamic shared memory per CTA (Lowering::shared_alloc)
  int64_t parallel_points = 1;       // product of the parallel axes
  std::vector<int> operand_of_pointer;  // pallas_call operand of each array pointer (-1: an output)
  const Op* op = nullptr;            // the pallas_call it came from
  // The check record (run_checks.h): a global of kCheckWords i64, and the
  // ops whose dynamic indices it checks (its kCheckWhich for those).
  std::string check_symbol;
  std::vector<const Op*> checked_ops;
  // The output block kept in registers across the arbitrary axes
  // (resident_output.h), if any: its kernel param and the f32 elements
  // each thread holds.
  std::string resident_output;
  int64_t resident_elements = 0;
};

struct LowerOptions {
  Target target = Target::host;
  int sm = 80;
  int threads = 256;
  // Dynamic indices inside the kernel are checked at run time (run_checks.h);
  // false leaves them unchecked (faster; an out-of-range index then reads or
  // writes whatever lies there). Block indices are always checked.
  bool check_indices = true;
  // Uninitialized memory (scratch, run_scoped, padding) reads as 0 instead of
  // NaN / the integer's largest value / true (RunOptions::Uninit::zero).
  bool uninit_zero = false;
  // Whose messages errors carry: null picks ptx_table() for nvptx and
  // llvm_table() for the host; `tessera emit llvm` passes llvm_table().
  const LlvmTable* rules = nullptr;
};

// Appends the function for `call` (a pallas_call op of `m`) to `module`.
KernelInfo lower_pallas_call(llvm::Module& module, const Module& m, const Op& call, const LowerOptions& o);

// What the runner needs to know of a kernel, for a reader: one line per
// fact, e.g. "add_kernel: pallas_call at examples/add.tsr:19:3, grid (8, 4)";
// the last names the check record (scripts/gpu_run.py reads it).
std::vector<std::string> describe_kernel(const KernelInfo& k);

// Every pallas_call reached from `entry` (through `call` and control flow), in
// program order. Ops outside kernels are not lowered (the host side is the
// interpreter's). The module has the target's triple and data layout.
struct LoweredModule {
  std::unique_ptr<llvm::LLVMContext> context;  // declared first: destroyed last
  std::unique_ptr<llvm::Module> module;
  std::vector<KernelInfo> kernels;
};
LoweredModule lower_module(const Module& m, const Body& entry, const LowerOptions& o);

}  // namespace tessera::backends::llvm_lowering
