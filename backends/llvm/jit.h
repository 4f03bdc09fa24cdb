// The host JIT: runs pallas_calls as machine code. Each kernel is lowered for
// the host target (lower_kernel.h), optimized (O3 with small unrolling:
// codegen.h, Unrolling::small_loops) and compiled with LLVM's ORC LLJIT once per (module,
// pallas_call op); a run allocates the outputs as the interpreter would
// (aliased ones start as their input, the others hold uninitialized values
// unless the kernel writes every element first: output_coverage.h), hands
// the kernel one pointer per array (KernelInfo::operand_of_pointer) and a
// 64-byte-aligned workspace of arena_bytes per thread, and calls it over the
// parallel grid points [0, parallel_points), split over `threads` threads on
// disjoint ranges.
//
// No LLVM header is included here: the CLI and the benchmarks include this
// file cheaply. Only code built with TESSERA_HAVE_LLVM may use it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "interpreter/interpreter.h"
#include "ir/ir.h"
#include "runtime/array.h"

namespace llvm {
class LLVMContext;
class Module;
}  // namespace llvm

namespace tessera::backends::llvm_lowering {

struct KernelInfo;

struct JitOptions {
  int threads = 1;           // worker threads per kernel run (results do not depend on it)
  bool uninit_zero = false;  // unwritten outputs hold 0 instead of NaN / int max (RunOptions::Uninit)
  bool check_indices = true; // check dynamic indices inside kernels (LowerOptions::check_indices)
};

class HostJit {
 public:
  explicit HostJit(JitOptions options = {});
  ~HostJit();
  HostJit(const HostJit&) = delete;
  HostJit& operator=(const HostJit&) = delete;

  // Runs pallas_call `call` of `m` on its operand values (dynamic grid sizes,
  // scalar prefetch, inputs: what the interpreter passes) and returns its
  // outputs. Compiles on first use; a kernel that cannot be lowered is a
  // located Error ("ptx: no lowering for ..."). A failed run-time check
  // (run_checks.h: an out-of-bounds block or dynamic index, a revisited
  // output block) throws CheckFailure. `m` must outlive the HostJit's
  // use of it (kernels are cached by the addresses of `m` and `call`).
  std::vector<interp::Array> run(const Module& m, const Op& call, const std::vector<interp::Array>& operands);

  // The same run, into caller-provided output arrays: `outputs` holds one
  // array per output of `call`, of its dtype and shape, each owning its
  // buffer alone (not Array::shared(): so it is no operand's, no view's and
  // no NumPy array's). They end as run() would return them. A repeated call
  // into the same arrays allocates no output buffer and touches no fresh
  // pages. A wrong count, dtype or shape, or a shared array, is an Error
  // located at `call` naming the output, and nothing is written; a failed
  // run-time check throws CheckFailure as run() does, the outputs' contents
  // then unspecified.
  void run_into(const Module& m, const Op& call, const std::vector<interp::Array>& operands,
                std::vector<interp::Array>& outputs);

  // Compiles the kernel of `call` now (run() would on first use); returns the
  // seconds it took (lowering, optimization, machine code), 0 if cached.
  double compile(const Module& m, const Op& call);
  // Where the last compile's time went, in seconds.
  struct CompilePhases {
    double lower = 0, optimize = 0, machine_code = 0;
  };
  CompilePhases last_compile_phases() const;

  // The interpreter hook (interp::RunOptions::pallas_call_executor) that runs
  // every pallas_call of `m` here; a call whose run-time check fails is
  // handed back to the interpreter, which reports the error in its words
  // (or, e.g. under --oob uninitialized, computes it). The HostJit must
  // outlive it.
  interp::PallasCallExecutor executor(const Module& m);

  // Adds an already lowered kernel for `call` (tests: a hand-built module of
  // the kernel ABI). `info.symbol` names its function in `module`.
  void add_lowered(const Module& m, const Op& call, std::unique_ptr<llvm::LLVMContext> context,
                   std::unique_ptr<llvm::Module> module, const KernelInfo& info);

  int kernels_compiled() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::vector<interp::Array> run_kernel(const Module& m, const Op& call, const std::vector<interp::Array>& operands,
                                        std::vector<interp::Array>* into);
};

// Runs function `func` of `m` with every pallas_call compiled by `jit` and the
// ops between kernels interpreted (interp::run_function with the hook set).
std::vector<interp::Array> run_function_jit(HostJit& jit, const Module& m, std::string_view func,
                                            const std::vector<interp::Array>& inputs, interp::RunOptions opts = {});

}  // namespace tessera::backends::llvm_lowering
