// Runs pallas_calls on an NVIDIA GPU: each kernel is lowered for NVPTX
// (lower_kernel.h), turned into PTX (codegen.h) and loaded with the CUDA
// driver API, which is dlopen'ed from libcuda.so.1 at run time: building
// tessera needs no CUDA, and a machine without a driver gets one clear error.
// Launch: KernelInfo::launch_grid CTAs of KernelInfo::threads threads, every
// array copied to the device and back, a workspace of arena_bytes per CTA,
// shared_bytes of dynamic shared memory per CTA (opted into above 48 KiB).
//
// No LLVM header is included here. Only code built with TESSERA_HAVE_LLVM
// may use it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "interpreter/interpreter.h"
#include "ir/ir.h"
#include "runtime/array.h"

namespace tessera::backends::llvm_lowering {

// Why the CUDA driver cannot be used here ("no CUDA driver (libcuda.so.1:
// cannot open shared object file)", "cuInit failed: ..."), or nullopt when it can.
std::optional<std::string> cuda_unavailable();

// What the runner loads for one pallas_call: its PTX (libdevice linked, O3)
// and how to launch it. Needs no driver (tests check it with ptxas).
struct CudaKernelSource {
  std::string ptx;
  std::string symbol;
  std::vector<int64_t> launch_grid;  // x, y, z CTAs (fewer entries: 1)
  int threads = 0;                   // per CTA
  int64_t arena_bytes = 0;           // workspace per CTA
  int64_t shared_bytes = 0;          // dynamic shared memory per CTA
  std::vector<int> operand_of_pointer;
  std::string check_symbol;             // the check record (run_checks.h), a global of the module
  std::vector<const Op*> checked_ops;   // KernelInfo::checked_ops
};
CudaKernelSource cuda_kernel_source(const Module& m, const Op& call, int sm, int threads, bool check_indices = true,
                                    bool uninit_zero = false);

struct CudaOptions {
  int sm = 0;                // PTX target: 80 or 90; 0: 90 on a compute capability 9.x device, else 80
  int threads = 256;         // threads per CTA
  bool uninit_zero = false;  // unwritten outputs hold 0 instead of NaN / int max
  bool check_indices = true; // check dynamic indices inside kernels (LowerOptions::check_indices)
  int timed_launches = 0;    // after each run, time this many more launches of the kernel alone
};

// What timed_launches measured for one kernel.
struct CudaTiming {
  std::string kernel;     // "@add_kernel"
  double ms_per_launch = 0;
  int launches = 0;
  int64_t array_bytes = 0;  // bytes of every array the kernel gets (each counted once)
};

class CudaRunner {
 public:
  // Loads the driver and makes device 0's primary context current; throws
  // Error with cuda_unavailable()'s message when there is no usable driver.
  explicit CudaRunner(CudaOptions options = {});
  ~CudaRunner();
  CudaRunner(const CudaRunner&) = delete;
  CudaRunner& operator=(const CudaRunner&) = delete;

  // Runs pallas_call `call` of `m` on its operand values; compiles and loads
  // its PTX on first use (cached by the addresses of `m` and `call`). After
  // the launch it reads the kernel's check record (run_checks.h) and throws
  // CheckFailure for the violation it holds; a revisited output block throws
  // before the launch.
  std::vector<interp::Array> run(const Module& m, const Op& call, const std::vector<interp::Array>& operands);
  // The interpreter hook (interp::RunOptions::pallas_call_executor); a call
  // whose check fails is handed back to the interpreter, which reports it.
  interp::PallasCallExecutor executor(const Module& m);

  // "NVIDIA H100 80GB HBM3, sm_90, 132 SMs"
  std::string device() const;
  // Peak DRAM bandwidth from the device's memory clock and bus width, bytes/s.
  double peak_bytes_per_second() const;
  const std::vector<CudaTiming>& timings() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::backends::llvm_lowering
