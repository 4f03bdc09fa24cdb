// The host JIT (jit.h): ORC LLJIT over the host target, one JITDylib per
// compiled kernel (kernels may share a symbol name), libm and the other
// process symbols resolved from the running process.
#include "backends/llvm/jit.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>

#include "backends/llvm/codegen.h"
#include "backends/llvm/kernel_args.h"
#include "backends/llvm/lower_kernel.h"
#include "backends/llvm/run_checks.h"
#include "ir/grid_mapping.h"

namespace tessera::backends::llvm_lowering {
namespace {

// What jit.cpp adds next to every kernel: `void SYMBOL.packed(ptr args,
// i64 begin, i64 end)` loads the kernel's pointers (then the workspace) from
// `args` and calls it, so the runner calls kernels of any arity one way.
using PackedKernel = void (*)(void* const* args, int64_t begin, int64_t end);

std::string packed_name(const std::string& symbol) { return symbol + ".packed"; }

std::string llvm_message(llvm::Error e) { return llvm::toString(std::move(e)); }

void add_packed_entry(llvm::Module& module, const KernelInfo& info) {
  llvm::Function* kernel = module.getFunction(info.symbol);
  size_t pointers = info.operand_of_pointer.size() + 1;  // arrays, then the workspace
  if (!kernel || kernel->arg_size() != pointers + 2)
    throw Error("internal error: the lowered module has no function @" + info.symbol + " with " +
                std::to_string(pointers) + " pointers and (begin, end)");
  llvm::LLVMContext& ctx = module.getContext();
  llvm::Type* ptr = llvm::PointerType::getUnqual(ctx);
  llvm::Type* i64 = llvm::Type::getInt64Ty(ctx);
  auto* type = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr, i64, i64}, false);
  auto* entry = llvm::Function::Create(type, llvm::Function::ExternalLinkage, packed_name(info.symbol), module);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", entry));
  std::vector<llvm::Value*> args;
  for (size_t i = 0; i < pointers; ++i)
    args.push_back(b.CreateLoad(ptr, b.CreateConstInBoundsGEP1_64(ptr, entry->getArg(0), i)));
  args.push_back(entry->getArg(1));
  args.push_back(entry->getArg(2));
  b.CreateCall(kernel, args);
  b.CreateRetVoid();
}

// 64-byte-aligned scratch for one thread; its initial bytes make unwritten
// f32/f64 scratch read as NaN (all ones), or as 0 with uninit_zero.
struct Workspace {
  explicit Workspace(int64_t bytes, bool zero) {
    size_t n = static_cast<size_t>(std::max<int64_t>(bytes, 64) + 63) / 64 * 64;
    data = static_cast<std::byte*>(::operator new(n, std::align_val_t{64}));
    std::memset(data, zero ? 0 : 0xFF, n);
  }
  ~Workspace() { ::operator delete(data, std::align_val_t{64}); }
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  std::byte* data;
};

// run_into's outputs: one per output of `call`, of its type, owned alone.
void check_output_arrays(const Op& call, const std::vector<interp::Array>& outputs) {
  GridMapping g = grid_mapping(call);
  std::string kernel = " (kernel @" + g.kernel->name() + ")";
  if (outputs.size() != g.out_types.size())
    throw Error(call.loc, "jit: run_into was given " + std::to_string(outputs.size()) + " output arrays, the pallas_call has " +
                              std::to_string(g.out_types.size()) + kernel);
  for (size_t i = 0; i < outputs.size(); ++i) {
    const interp::Array& a = outputs[i];
    std::string which = "jit: " + g.describe(g.num_inputs() + static_cast<int>(i));
    if (a.type() != g.out_types[i].array_type())
      throw Error(call.loc, which + " is " + g.out_types[i].str() + ", the array given is " +
                                Type::array(a.type()).str() + kernel);
    if (a.shared())
      throw Error(call.loc, which + ": the array given shares its buffer (with another array, a view or borrowed "
                                    "memory), which the kernel would write through" + kernel);
  }
}

struct Compiled {
  PackedKernel fn = nullptr;
  KernelInfo info;
  int64_t* check_record = nullptr;  // run_checks.h; null for a hand-built module without one
  // One run at a time per kernel: the check record is the kernel's global.
  std::shared_ptr<std::mutex> running = std::make_shared<std::mutex>();
};

}  // namespace

struct HostJit::Impl {
  JitOptions options;
  std::unique_ptr<llvm::orc::LLJIT> jit;
  // The optimizer's view of the host (CPU, features, cost model), made once:
  // detecting the host's features for a new one costs milliseconds per kernel.
  std::unique_ptr<llvm::TargetMachine> tm;
  std::mutex mu;  // the cache and the LLJIT (the interpreter may run devices on several threads)
  std::map<std::pair<const Module*, const Op*>, Compiled> kernels;
  int next_dylib = 0;
  HostJit::CompilePhases phases;

  const Compiled& get(const Module& m, const Op& call);
  void add(const Module& m, const Op& call, std::unique_ptr<llvm::LLVMContext> context,
           std::unique_ptr<llvm::Module> module, const KernelInfo& info);
};

HostJit::HostJit(JitOptions options) : impl_(std::make_unique<Impl>()) {
  static std::once_flag native_once;
  std::call_once(native_once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  impl_->options = options;
  auto host = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!host) throw Error("jit: cannot target the host CPU: " + llvm_message(host.takeError()));
  host->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  // The process's symbols (libm's expf, ...) are linked into every JITDylib
  // LLJIT creates (LLJITBuilder's LinkProcessSymbolsByDefault).
  auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(*host)).create();
  if (!jit) throw Error("jit: cannot create the ORC JIT: " + llvm_message(jit.takeError()));
  impl_->jit = std::move(*jit);
  impl_->tm = target_machine(Target::host);
}

HostJit::~HostJit() = default;

void HostJit::Impl::add(const Module& m, const Op& call, std::unique_ptr<llvm::LLVMContext> context,
                        std::unique_ptr<llvm::Module> module, const KernelInfo& info) {
  module->setDataLayout(jit->getDataLayout());
  module->setTargetTriple(jit->getTargetTriple().str());
  add_packed_entry(*module, info);
  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(*module, &os)) throw Error(call.loc, "jit: internal error: invalid LLVM module: " + problems);
  auto dylib = jit->createJITDylib("kernel" + std::to_string(next_dylib++));
  if (!dylib) throw Error(call.loc, "jit: " + llvm_message(dylib.takeError()));
  llvm::orc::ThreadSafeModule tsm(std::move(module), llvm::orc::ThreadSafeContext(std::move(context)));
  if (llvm::Error e = jit->addIRModule(*dylib, std::move(tsm))) throw Error(call.loc, "jit: " + llvm_message(std::move(e)));
  auto address = jit->lookup(*dylib, packed_name(info.symbol));
  if (!address) throw Error(call.loc, "jit: " + llvm_message(address.takeError()));
  Compiled compiled{address->toPtr<PackedKernel>(), info};
  if (!info.check_symbol.empty()) {
    auto record = jit->lookup(*dylib, info.check_symbol);
    if (!record) throw Error(call.loc, "jit: " + llvm_message(record.takeError()));
    compiled.check_record = record->toPtr<int64_t*>();
  }
  kernels[{&m, &call}] = std::move(compiled);
}

const Compiled& HostJit::Impl::get(const Module& m, const Op& call) {
  auto it = kernels.find({&m, &call});
  if (it != kernels.end()) return it->second;
  auto context = std::make_unique<llvm::LLVMContext>();
  auto module = std::make_unique<llvm::Module>("tessera_jit", *context);
  configure_module(*module, *tm);
  LowerOptions lo;
  lo.target = Target::host;
  lo.check_indices = options.check_indices;
  lo.uninit_zero = options.uninit_zero;
  auto seconds_since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  auto start = std::chrono::steady_clock::now();
  KernelInfo info = lower_pallas_call(*module, m, call, lo);
  phases.lower = seconds_since(start);
  start = std::chrono::steady_clock::now();
  optimize(*module, *tm, Unrolling::small_loops);
  phases.optimize = seconds_since(start);
  start = std::chrono::steady_clock::now();
  add(m, call, std::move(context), std::move(module), info);  // the lookup runs the code generator
  phases.machine_code = seconds_since(start);
  return kernels.at({&m, &call});
}

void HostJit::add_lowered(const Module& m, const Op& call, std::unique_ptr<llvm::LLVMContext> context,
                          std::unique_ptr<llvm::Module> module, const KernelInfo& info) {
  std::lock_guard<std::mutex> guard(impl_->mu);
  impl_->add(m, call, std::move(context), std::move(module), info);
}

double HostJit::compile(const Module& m, const Op& call) {
  std::lock_guard<std::mutex> guard(impl_->mu);
  if (impl_->kernels.count({&m, &call})) return 0;
  auto start = std::chrono::steady_clock::now();
  impl_->get(m, call);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

HostJit::CompilePhases HostJit::last_compile_phases() const {
  std::lock_guard<std::mutex> guard(impl_->mu);
  return impl_->phases;
}

int HostJit::kernels_compiled() const {
  std::lock_guard<std::mutex> guard(impl_->mu);
  return static_cast<int>(impl_->kernels.size());
}

std::vector<interp::Array> HostJit::run(const Module& m, const Op& call, const std::vector<interp::Array>& operands) {
  return run_kernel(m, call, operands, nullptr);
}

void HostJit::run_into(const Module& m, const Op& call, const std::vector<interp::Array>& operands,
                       std::vector<interp::Array>& outputs) {
  check_output_arrays(call, outputs);
  run_kernel(m, call, operands, &outputs);
}

std::vector<interp::Array> HostJit::run_kernel(const Module& m, const Op& call,
                                               const std::vector<interp::Array>& operands,
                                               std::vector<interp::Array>* into) {
  Compiled k;
  {
    std::lock_guard<std::mutex> guard(impl_->mu);
    k = impl_->get(m, call);
  }
  if (std::optional<Error> revisit = revisit_error(m, call, operands)) throw CheckFailure(*revisit);
  const JitOptions& o = impl_->options;
  std::lock_guard<std::mutex> one_run(*k.running);
  if (k.check_record) std::fill(k.check_record, k.check_record + kCheckWords, 0);
  KernelArrays arrays(call, k.info.operand_of_pointer, operands, o.uninit_zero, into);
  std::vector<void*> pointers = arrays.pointers();
  pointers.push_back(nullptr);  // the workspace, per thread

  int64_t points = k.info.parallel_points;
  int threads = static_cast<int>(std::clamp<int64_t>(o.threads, 1, std::max<int64_t>(points, 1)));
  auto run_range = [&](int64_t begin, int64_t end) {
    Workspace ws(k.info.arena_bytes, o.uninit_zero);
    std::vector<void*> args = pointers;
    args.back() = ws.data;
    k.fn(args.data(), begin, end);
  };
  if (threads == 1) {
    run_range(0, points);
  } else {
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t)
      workers.emplace_back(run_range, points * t / threads, points * (t + 1) / threads);
    for (std::thread& w : workers) w.join();
  }
  if (k.check_record)
    if (std::optional<Error> failed = check_record_error(call, k.info.checked_ops, k.check_record))
      throw CheckFailure(*failed);
  return arrays.outputs();
}

interp::PallasCallExecutor HostJit::executor(const Module& m) {
  return [this, &m](const Op& call, const std::vector<interp::Array>& operands) -> std::optional<std::vector<interp::Array>> {
    try {
      return run(m, call, operands);
    } catch (const CheckFailure&) {
      return std::nullopt;  // the interpreter runs it: its error, in its words
    }
  };
}

std::vector<interp::Array> run_function_jit(HostJit& jit, const Module& m, std::string_view func,
                                            const std::vector<interp::Array>& inputs, interp::RunOptions opts) {
  opts.pallas_call_executor = jit.executor(m);
  return interp::run_function(m, func, inputs, opts);
}

}  // namespace tessera::backends::llvm_lowering
