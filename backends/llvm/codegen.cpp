#include "backends/llvm/codegen.h"

#include <cstdlib>
#include <mutex>

#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/IRReader/IRReader.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/Transforms/IPO/GlobalDCE.h>
#include <llvm/Transforms/IPO/Internalize.h>
#include <llvm/Transforms/InstCombine/InstCombine.h>
#include <llvm/Transforms/Scalar/EarlyCSE.h>
#include <llvm/Transforms/Scalar/LoopUnrollPass.h>
#include <llvm/Transforms/Scalar/SROA.h>
#include <llvm/Transforms/Scalar/SimplifyCFG.h>

#include "ir/diagnostics.h"

namespace tessera::backends::llvm_lowering {
namespace {

constexpr const char* kNvptxTriple = "nvptx64-nvidia-cuda";
constexpr const char* kLibdevice = "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc";

void init_targets() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

}  // namespace

std::unique_ptr<llvm::TargetMachine> target_machine(Target t, int sm) {
  init_targets();
  std::string triple = t == Target::nvptx ? kNvptxTriple : llvm::sys::getDefaultTargetTriple();
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, err);
  if (!target) throw Error("llvm: no target " + triple + ": " + err);
  std::string cpu, features;
  if (t == Target::nvptx) {
    if (sm != 80 && sm != 90) throw Error("ptx: --sm must be 80 or 90, not " + std::to_string(sm));
    cpu = "sm_" + std::to_string(sm);  // LLVM picks the lowest PTX ISA of the sm (7.0, 7.8)
  } else {
    cpu = llvm::sys::getHostCPUName().str();
    llvm::StringMap<bool> host = llvm::sys::getHostCPUFeatures();
    for (const auto& f : host) features += std::string(features.empty() ? "" : ",") + (f.second ? "+" : "-") + f.first().str();
  }
  llvm::TargetOptions opts;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, cpu, features, opts, llvm::Reloc::PIC_, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!tm) throw Error("llvm: cannot create a target machine for " + triple);
  return tm;
}

void configure_module(llvm::Module& module, const llvm::TargetMachine& tm) {
  module.setTargetTriple(tm.getTargetTriple().str());
  module.setDataLayout(tm.createDataLayout());
}

void link_libdevice(llvm::Module& module) {
  bool needed = false;
  for (const llvm::Function& f : module.functions())
    if (f.isDeclaration() && f.getName().starts_with("__nv_")) needed = true;
  if (!needed) return;
  const char* env = std::getenv("TESSERA_LIBDEVICE");
  std::string path = env && *env ? env : kLibdevice;
  // Read lazily: the linker materializes the bodies of the functions the
  // module calls (and what they call), not libdevice's ~350 others.
  llvm::SMDiagnostic diag;
  std::unique_ptr<llvm::Module> lib = llvm::getLazyIRFileModule(path, diag, module.getContext());
  if (!lib)
    throw Error("ptx: cannot read libdevice " + path + " (math functions need it; set TESSERA_LIBDEVICE): " +
                diag.getMessage().str());
  lib->setTargetTriple(module.getTargetTriple());
  lib->setDataLayout(module.getDataLayout());
  if (llvm::Linker::linkModules(module, std::move(lib), llvm::Linker::LinkOnlyNeeded))
    throw Error("ptx: cannot link libdevice " + path);
  // Only the kernels stay visible: the libdevice functions become internal,
  // so O3 inlines them and drops the bodies (no `.func` in the PTX).
  llvm::internalizeModule(module, [](const llvm::GlobalValue& g) {
    const auto* f = llvm::dyn_cast<llvm::Function>(&g);
    return f && !f->isDeclaration() && f->getCallingConv() == llvm::CallingConv::PTX_Kernel;
  });
  // libdevice's __nvvm_reflect("__CUDA_FTZ") asks for this flag: no flush to zero.
  if (!module.getModuleFlag("nvvm-reflect-ftz"))
    module.addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", uint32_t{0});
}

namespace {

bool has_huge_function(const llvm::Module& module) {
  for (const llvm::Function& f : module)
    if (f.hasFnAttribute(kLinearPassesAttr)) return true;
  return false;
}

// The passes whose cost grows with a function's size and nothing else:
// registers for the local variables (SROA), common subexpressions and the
// folds that create no instructions (EarlyCSE), the CFG tidied. No loop
// passes (IndVarSimplify's scalar evolution costs tens of microseconds per
// instruction on a function of a thousand loops), no InstCombine, no
// vectorizers. The target's pipeline-start passes run first (NVPTX:
// NVVMReflect folds libdevice's __nvvm_reflect queries), then the linked
// libdevice functions are simplified once and stay functions: each call site
// calls one (a `.func` in the PTX), where inlining copied the body (tanhf: 17
// instructions) into every call, and the passes and the code generator paid
// for each copy. The body is the same either way, and so are the results.
void run_bounded_pipeline(llvm::Module& module, llvm::PassBuilder& pb, llvm::FunctionAnalysisManager& fam,
                          llvm::ModuleAnalysisManager& mam) {
  llvm::ModulePassManager start;
  pb.invokePipelineStartEPCallbacks(start, llvm::OptimizationLevel::O1);
  start.run(module, mam);
  llvm::FunctionPassManager fpm;
  fpm.addPass(llvm::SROAPass(llvm::SROAOptions::ModifyCFG));
  fpm.addPass(llvm::EarlyCSEPass());
  fpm.addPass(llvm::SimplifyCFGPass());
  for (llvm::Function& f : module)
    if (!f.isDeclaration()) fpm.run(f, fam);
  // The reflect queries' strings and the declarations left unused go.
  llvm::ModulePassManager dce;
  dce.addPass(llvm::GlobalDCEPass());
  dce.run(module, mam);
  // The called functions are made visible (`.visible .func`): NVPTX's call
  // lowering asks, at each call of an internal function, whether its address
  // is taken, a walk over all its uses; with a call in each of 12,500 element
  // loops that walk was 80% of the code generator's time.
  for (llvm::Function& f : module)
    if (!f.isDeclaration() && f.hasLocalLinkage() && f.getName().starts_with("__nv_"))
      f.setLinkage(llvm::GlobalValue::ExternalLinkage);
}

// Unrolling::small_loops: after O3's vectorizers, full unrolling of loops
// of up to 4 iterations only, then the folds it enables.
void add_small_unrolling(llvm::PassBuilder& pb) {
  pb.registerOptimizerLastEPCallback([](llvm::ModulePassManager& mpm, llvm::OptimizationLevel level) {
    llvm::FunctionPassManager fpm;
    fpm.addPass(llvm::LoopUnrollPass(llvm::LoopUnrollOptions(static_cast<int>(level.getSpeedupLevel()))
                                         .setPartial(false)
                                         .setRuntime(false)
                                         .setFullUnrollMaxCount(4)));
    fpm.addPass(llvm::InstCombinePass());
    fpm.addPass(llvm::SimplifyCFGPass());
    mpm.addPass(llvm::createModuleToFunctionPassAdaptor(std::move(fpm)));
  });
}

}  // namespace

void optimize(llvm::Module& module, llvm::TargetMachine& tm, Unrolling unrolling) {
  std::string msg;
  llvm::raw_string_ostream os(msg);
  if (llvm::verifyModule(module, &os)) throw Error("llvm: the lowered module is invalid (a backend bug):\n" + os.str());
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopUnrolling = unrolling == Unrolling::o3;
  llvm::PassBuilder pb(&tm, tuning);
  if (unrolling == Unrolling::small_loops) add_small_unrolling(pb);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  if (!has_huge_function(module)) {
    pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(module, mam);
    return;
  }
  run_bounded_pipeline(module, pb, fam, mam);
  // The same holds for the code generator's optimizations; ptxas (or the
  // JIT's own code generator setting) still optimizes the machine code.
  tm.setOptLevel(llvm::CodeGenOptLevel::None);
}

namespace {

// Upper estimates of the text per IR instruction (the generated kernels print
// 35-56 bytes of IR and 27-46 of PTX per instruction): reserved up front, the
// text is not copied as it grows; pages reserved and not written cost nothing.
constexpr size_t kIrBytesPerInstruction = 64;
constexpr size_t kPtxBytesPerInstruction = 48;

// A buffered stream into a std::string. LLVM's printers write through a
// formatted_raw_ostream that is buffered only when the stream below it is,
// and raw_string_ostream / raw_svector_ostream are not: then every token
// printed is its own write, column count and string append.
class StringStream : public llvm::raw_pwrite_stream {
 public:
  explicit StringStream(std::string& out) : out_(out) {}
  ~StringStream() override { flush(); }

 private:
  void write_impl(const char* ptr, size_t size) override { out_.append(ptr, size); }
  void pwrite_impl(const char* ptr, size_t size, uint64_t offset) override {
    flush();
    out_.replace(offset, size, ptr, size);
  }
  uint64_t current_pos() const override { return out_.size(); }
  size_t preferred_buffer_size() const override { return size_t{64} << 10; }
  std::string& out_;
};

}  // namespace

std::string emit_ptx(llvm::Module& module, llvm::TargetMachine& tm, std::string text) {
  text.reserve(text.size() + module.getInstructionCount() * kPtxBytesPerInstruction);
  {
    StringStream os(text);
    llvm::legacy::PassManager pm;
    // optimize() verified the module; the code generator need not again.
    if (tm.addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::AssemblyFile, /*DisableVerify=*/true))
      throw Error("ptx: the target machine cannot emit PTX");
    pm.run(module);
  }
  return text;
}

std::string print_ir(const llvm::Module& module, std::string text) {
  text.reserve(text.size() + module.getInstructionCount() * kIrBytesPerInstruction);
  {
    StringStream os(text);
    module.print(os, nullptr);
  }
  return text;
}

}  // namespace tessera::backends::llvm_lowering
