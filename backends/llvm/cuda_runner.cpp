// The CUDA runner (cuda_runner.h). The driver API is resolved with dlsym from
// libcuda.so.1 (not libcuda.so: in a toolkit that name is the stub, whose
// cuInit fails), using the versioned names cuda.h #defines (cuMemAlloc_v2 ...;
// the unversioned cuMemAlloc is the legacy 32-bit one). The primary context
// of device 0 avoids cuCtxCreate's versioning.
#include "backends/llvm/cuda_runner.h"

#include <dlfcn.h>

#include <map>
#include <mutex>
#include <utility>

#include "backends/llvm/codegen.h"
#include "backends/llvm/kernel_args.h"
#include "backends/llvm/lower_kernel.h"
#include "backends/llvm/run_checks.h"

namespace tessera::backends::llvm_lowering {
namespace {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;

// Attribute and option numbers from cuda.h.
constexpr int kAttrMultiprocessors = 16, kAttrMemoryClockKhz = 36, kAttrBusWidthBits = 37, kAttrMajor = 75,
              kAttrMinor = 76;
constexpr int kJitErrorLogBuffer = 5, kJitErrorLogBufferBytes = 6;
constexpr int kAttrMaxDynamicSharedBytes = 8;       // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
constexpr int64_t kDefaultSharedBytes = 48 * 1024;  // what a launch may use without opting in

// The driver entry points tessera uses, resolved once.
struct Driver {
  CUresult (*cuInit)(unsigned) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*cuDeviceGetName)(char*, int, CUdevice) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuModuleLoadDataEx)(CUmodule*, const void*, unsigned, int*, void**) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int) = nullptr;
  CUresult (*cuModuleGetGlobal_v2)(CUdeviceptr*, size_t*, CUmodule, const char*) = nullptr;
  CUresult (*cuMemAlloc_v2)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*cuMemFree_v2)(CUdeviceptr) = nullptr;
  CUresult (*cuMemcpyHtoD_v2)(CUdeviceptr, const void*, size_t) = nullptr;
  CUresult (*cuMemcpyDtoH_v2)(void*, CUdeviceptr, size_t) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                             void**, void**) = nullptr;
  CUresult (*cuCtxSynchronize)() = nullptr;
  CUresult (*cuEventCreate)(CUevent*, unsigned) = nullptr;
  CUresult (*cuEventRecord)(CUevent, CUstream) = nullptr;
  CUresult (*cuEventSynchronize)(CUevent) = nullptr;
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent) = nullptr;
  CUresult (*cuEventDestroy_v2)(CUevent) = nullptr;
  CUresult (*cuGetErrorString)(CUresult, const char**) = nullptr;

  std::string error;  // why the driver is unusable ("" when it is)
  CUdevice device = 0;
  CUcontext context = nullptr;

  Driver() {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      // dlerror: "libcuda.so.1: cannot open shared object file: No such file or directory".
      std::string why = dlerror();
      size_t last = why.rfind(": ");
      if (last != std::string::npos && last > why.find(": ")) why.resize(last);
      error = "no CUDA driver (" + why + ")";
      return;
    }
    bool ok = true;
    auto load = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      if (!fn && ok) {
        ok = false;
        error = "the CUDA driver libcuda.so.1 lacks " + std::string(name);
      }
    };
    load(cuInit, "cuInit");
    load(cuDeviceGet, "cuDeviceGet");
    load(cuDeviceGetName, "cuDeviceGetName");
    load(cuDeviceGetAttribute, "cuDeviceGetAttribute");
    load(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    load(cuCtxSetCurrent, "cuCtxSetCurrent");
    load(cuModuleLoadDataEx, "cuModuleLoadDataEx");
    load(cuModuleGetFunction, "cuModuleGetFunction");
    load(cuFuncSetAttribute, "cuFuncSetAttribute");
    load(cuModuleGetGlobal_v2, "cuModuleGetGlobal_v2");
    load(cuMemAlloc_v2, "cuMemAlloc_v2");
    load(cuMemFree_v2, "cuMemFree_v2");
    load(cuMemcpyHtoD_v2, "cuMemcpyHtoD_v2");
    load(cuMemcpyDtoH_v2, "cuMemcpyDtoH_v2");
    load(cuLaunchKernel, "cuLaunchKernel");
    load(cuCtxSynchronize, "cuCtxSynchronize");
    load(cuEventCreate, "cuEventCreate");
    load(cuEventRecord, "cuEventRecord");
    load(cuEventSynchronize, "cuEventSynchronize");
    load(cuEventElapsedTime, "cuEventElapsedTime");
    load(cuEventDestroy_v2, "cuEventDestroy_v2");
    load(cuGetErrorString, "cuGetErrorString");
    if (!ok) return;
    // The stub library of a toolkit (no GPU) fails here with 34, CUDA_ERROR_STUB_LIBRARY.
    if (CUresult r = cuInit(0)) error = "CUDA driver: cuInit failed: " + describe(r);
    else if (CUresult r2 = cuDeviceGet(&device, 0)) error = "CUDA driver: no device 0: " + describe(r2);
    else if (CUresult r3 = cuDevicePrimaryCtxRetain(&context, device)) error = "CUDA driver: no context: " + describe(r3);
  }

  std::string describe(CUresult r) const {
    const char* s = nullptr;
    if (cuGetErrorString) cuGetErrorString(r, &s);
    return std::to_string(r) + (s ? " (" + std::string(s) + ")" : "");
  }
  void check(CUresult r, const Op& op, const std::string& what) const {
    if (r != 0) throw Error(op.loc, "cuda: " + what + " failed: " + describe(r));
  }
  int attribute(int attr) const {
    int v = 0;
    cuDeviceGetAttribute(&v, attr, device);
    return v;
  }
};

// One process-wide driver: dlopen and cuInit once.
const Driver& driver() {
  static Driver d;
  return d;
}

// Device memory freed when it goes out of scope (errors included).
class DeviceBuffer {
 public:
  DeviceBuffer(const Driver& d, const Op& op, size_t bytes, const std::string& what) : d_(d) {
    d_.check(d_.cuMemAlloc_v2(&ptr_, std::max<size_t>(bytes, 1)), op, "cuMemAlloc of " + std::to_string(bytes) + " bytes for " + what);
  }
  ~DeviceBuffer() {
    if (ptr_) d_.cuMemFree_v2(ptr_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  CUdeviceptr& ptr() { return ptr_; }

 private:
  const Driver& d_;
  CUdeviceptr ptr_ = 0;
};

struct Loaded {
  CUfunction fn = nullptr;
  KernelInfo info;
  CUdeviceptr check_record = 0;  // run_checks.h: the kernel's global
};

}  // namespace

CudaKernelSource cuda_kernel_source(const Module& m, const Op& call, int sm, int threads, bool check_indices,
                                    bool uninit_zero) {
  std::unique_ptr<llvm::TargetMachine> tm = target_machine(Target::nvptx, sm);
  llvm::LLVMContext context;
  llvm::Module module("tessera_cuda", context);
  configure_module(module, *tm);
  LowerOptions lo;
  lo.target = Target::nvptx;
  lo.sm = sm;
  lo.threads = threads;
  lo.check_indices = check_indices;
  lo.uninit_zero = uninit_zero;
  KernelInfo info = lower_pallas_call(module, m, call, lo);
  link_libdevice(module);
  optimize(module, *tm);
  return CudaKernelSource{emit_ptx(module, *tm), info.symbol,       info.launch_grid,        info.threads,
                          info.arena_bytes,       info.shared_bytes, info.operand_of_pointer, info.check_symbol,
                          info.checked_ops};
}

std::optional<std::string> cuda_unavailable() {
  const Driver& d = driver();
  if (d.error.empty()) return std::nullopt;
  return d.error;
}

struct CudaRunner::Impl {
  CudaOptions options;
  std::mutex mu;
  std::map<std::pair<const Module*, const Op*>, Loaded> kernels;
  std::vector<CudaTiming> timings;

  const Loaded& get(const Module& m, const Op& call);
};

CudaRunner::CudaRunner(CudaOptions options) : impl_(std::make_unique<Impl>()) {
  if (std::optional<std::string> why = cuda_unavailable()) throw Error(*why);
  impl_->options = options;
  if (impl_->options.sm == 0) impl_->options.sm = driver().attribute(kAttrMajor) >= 9 ? 90 : 80;
}

CudaRunner::~CudaRunner() = default;

const Loaded& CudaRunner::Impl::get(const Module& m, const Op& call) {
  auto it = kernels.find({&m, &call});
  if (it != kernels.end()) return it->second;
  const Driver& d = driver();
  CudaKernelSource source =
      cuda_kernel_source(m, call, options.sm, options.threads, options.check_indices, options.uninit_zero);
  const std::string& ptx = source.ptx;  // NUL-terminated by c_str()
  std::string log(16384, '\0');
  int opts[2] = {kJitErrorLogBuffer, kJitErrorLogBufferBytes};
  void* vals[2] = {log.data(), reinterpret_cast<void*>(log.size())};
  CUmodule cu_module = nullptr;
  d.check(d.cuCtxSetCurrent(d.context), call, "cuCtxSetCurrent");
  if (CUresult r = d.cuModuleLoadDataEx(&cu_module, ptx.c_str(), 2, opts, vals))
    throw Error(call.loc, "cuda: the driver rejected the PTX of @" + source.symbol + ": " + d.describe(r) + "\n" +
                          log.substr(0, log.find('\0')));
  Loaded k;
  k.info.symbol = source.symbol;
  k.info.launch_grid = source.launch_grid;
  k.info.threads = source.threads;
  k.info.arena_bytes = source.arena_bytes;
  k.info.shared_bytes = source.shared_bytes;
  k.info.operand_of_pointer = source.operand_of_pointer;
  k.info.check_symbol = source.check_symbol;
  k.info.checked_ops = source.checked_ops;
  d.check(d.cuModuleGetFunction(&k.fn, cu_module, source.symbol.c_str()), call, "cuModuleGetFunction(" + source.symbol + ")");
  // Above 48 KiB of dynamic shared memory a kernel must opt in.
  if (source.shared_bytes > kDefaultSharedBytes)
    d.check(d.cuFuncSetAttribute(k.fn, kAttrMaxDynamicSharedBytes, static_cast<int>(source.shared_bytes)), call,
            "cuFuncSetAttribute(" + source.symbol + ", MAX_DYNAMIC_SHARED_SIZE_BYTES, " +
                std::to_string(source.shared_bytes) + ")");
  size_t record_bytes = 0;
  d.check(d.cuModuleGetGlobal_v2(&k.check_record, &record_bytes, cu_module, source.check_symbol.c_str()), call,
          "cuModuleGetGlobal(" + source.check_symbol + ")");
  return kernels[{&m, &call}] = k;
}

std::vector<interp::Array> CudaRunner::run(const Module& m, const Op& call, const std::vector<interp::Array>& operands) {
  std::lock_guard<std::mutex> guard(impl_->mu);
  const Driver& d = driver();
  const Loaded& k = impl_->get(m, call);
  if (std::optional<Error> revisit = revisit_error(m, call, operands)) throw CheckFailure(*revisit);
  d.check(d.cuCtxSetCurrent(d.context), call, "cuCtxSetCurrent");
  // The check record starts clear; the first violation of the launch lands in it.
  std::vector<int64_t> record(kCheckWords, 0);
  d.check(d.cuMemcpyHtoD_v2(k.check_record, record.data(), record.size() * sizeof(int64_t)), call,
          "clearing the check record of @" + k.info.symbol);
  KernelArrays arrays(call, k.info.operand_of_pointer, operands, impl_->options.uninit_zero);
  // Every array goes to the device; the outputs come back.
  std::vector<std::unique_ptr<DeviceBuffer>> buffers;
  std::vector<std::pair<void*, size_t>> copy_back;  // host buffer, pointer index
  int64_t array_bytes = 0;
  for (size_t i = 0; i < arrays.pointers().size(); ++i) {
    std::string what = "array " + std::to_string(i) + " of @" + k.info.symbol;
    size_t bytes = arrays.bytes()[i];
    buffers.push_back(std::make_unique<DeviceBuffer>(d, call, bytes, what));
    d.check(d.cuMemcpyHtoD_v2(buffers.back()->ptr(), arrays.pointers()[i], bytes), call, "cuMemcpyHtoD of " + what);
    array_bytes += static_cast<int64_t>(bytes);
    if (k.info.operand_of_pointer[i] < 0) copy_back.emplace_back(arrays.pointers()[i], i);
  }
  std::vector<int64_t> grid = k.info.launch_grid;
  grid.resize(3, 1);
  int64_t ctas = grid[0] * grid[1] * grid[2];
  buffers.push_back(std::make_unique<DeviceBuffer>(d, call, static_cast<size_t>(k.info.arena_bytes * ctas), "the workspace"));
  std::vector<void*> params;
  for (auto& b : buffers) params.push_back(&b->ptr());
  auto launch = [&] {
    if (ctas == 0) return;
    d.check(d.cuLaunchKernel(k.fn, static_cast<unsigned>(grid[0]), static_cast<unsigned>(grid[1]),
                             static_cast<unsigned>(grid[2]), static_cast<unsigned>(k.info.threads), 1, 1,
                             static_cast<unsigned>(k.info.shared_bytes), nullptr,
                             params.data(), nullptr),
            call, "cuLaunchKernel of @" + k.info.symbol);
  };
  launch();
  d.check(d.cuCtxSynchronize(), call, "running @" + k.info.symbol);
  d.check(d.cuMemcpyDtoH_v2(record.data(), k.check_record, record.size() * sizeof(int64_t)), call,
          "reading the check record of @" + k.info.symbol);
  if (std::optional<Error> failed = check_record_error(call, k.info.checked_ops, record.data())) throw CheckFailure(*failed);
  for (auto [host, i] : copy_back)
    d.check(d.cuMemcpyDtoH_v2(host, buffers[i]->ptr(), arrays.bytes()[i]), call, "cuMemcpyDtoH of an output");

  if (int n = impl_->options.timed_launches; n > 0) {
    launch();  // warm up
    CUevent start = nullptr, stop = nullptr;
    d.check(d.cuEventCreate(&start, 0), call, "cuEventCreate");
    d.check(d.cuEventCreate(&stop, 0), call, "cuEventCreate");
    d.check(d.cuEventRecord(start, nullptr), call, "cuEventRecord");
    for (int i = 0; i < n; ++i) launch();
    d.check(d.cuEventRecord(stop, nullptr), call, "cuEventRecord");
    d.check(d.cuEventSynchronize(stop), call, "cuEventSynchronize");
    float ms = 0;
    d.check(d.cuEventElapsedTime(&ms, start, stop), call, "cuEventElapsedTime");
    d.cuEventDestroy_v2(start);
    d.cuEventDestroy_v2(stop);
    impl_->timings.push_back(CudaTiming{"@" + k.info.symbol, ms / n, n, array_bytes});
  }
  return arrays.outputs();
}

interp::PallasCallExecutor CudaRunner::executor(const Module& m) {
  return [this, &m](const Op& call, const std::vector<interp::Array>& operands) -> std::optional<std::vector<interp::Array>> {
    try {
      return run(m, call, operands);
    } catch (const CheckFailure&) {
      return std::nullopt;  // the interpreter runs it: its error, in its words
    }
  };
}

std::string CudaRunner::device() const {
  const Driver& d = driver();
  char name[256] = {0};
  d.cuDeviceGetName(name, sizeof(name), d.device);
  return std::string(name) + ", sm_" + std::to_string(d.attribute(kAttrMajor)) + std::to_string(d.attribute(kAttrMinor)) +
         ", " + std::to_string(d.attribute(kAttrMultiprocessors)) + " SMs";
}

double CudaRunner::peak_bytes_per_second() const {
  const Driver& d = driver();
  // Double data rate: two transfers per memory clock.
  return 2.0 * d.attribute(kAttrMemoryClockKhz) * 1e3 * d.attribute(kAttrBusWidthBits) / 8;
}

const std::vector<CudaTiming>& CudaRunner::timings() const { return impl_->timings; }

}  // namespace tessera::backends::llvm_lowering
