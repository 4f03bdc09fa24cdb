// Lowering::math_call: one table from tessera's math function names to what
// each target calls.
//
// Host: the LLVM intrinsic where one exists (it becomes the libm call or an
// instruction), else the libm function (`tanhf` / `tanh`), which the JIT
// resolves in the process; both are the functions the interpreter calls
// (std::exp(float) is expf), so host results match it bit for bit.
// NVPTX: LLVM 19 cannot select most math intrinsics (exp, log, sin, ...), so
// those call libdevice (`__nv_expf` / `__nv_exp`, linked by codegen.cpp); the
// ones it selects natively (sqrt.rn, cvt.rmi, abs, ...) stay intrinsics.
// libdevice's functions differ from glibc's by a few ulp at most (CUDA's
// programming guide lists them: expf 2 ulp, tanhf 2 ulp, erff 2 ulp, ...).
#include <llvm/IR/Intrinsics.h>

#include "backends/llvm/value_helpers.h"

namespace tessera::backends::llvm_lowering {
namespace {

struct MathFn {
  const char* name;
  int arity;
  llvm::Intrinsic::ID intrinsic;  // not_intrinsic: a library call on the host
  bool native_on_nvptx;           // the intrinsic selects on NVPTX (no libdevice)
};

const MathFn kMath[] = {
    {"exp", 1, llvm::Intrinsic::exp, false},       {"exp2", 1, llvm::Intrinsic::exp2, false},
    {"log", 1, llvm::Intrinsic::log, false},       {"sin", 1, llvm::Intrinsic::sin, false},
    {"cos", 1, llvm::Intrinsic::cos, false},       {"pow", 2, llvm::Intrinsic::pow, false},
    {"sqrt", 1, llvm::Intrinsic::sqrt, true},      {"floor", 1, llvm::Intrinsic::floor, true},
    {"ceil", 1, llvm::Intrinsic::ceil, true},      {"rint", 1, llvm::Intrinsic::rint, true},
    {"round", 1, llvm::Intrinsic::round, true},    {"trunc", 1, llvm::Intrinsic::trunc, true},
    {"fabs", 1, llvm::Intrinsic::fabs, true},      {"tanh", 1, llvm::Intrinsic::not_intrinsic, false},
    {"tan", 1, llvm::Intrinsic::not_intrinsic, false},   {"log1p", 1, llvm::Intrinsic::not_intrinsic, false},
    {"expm1", 1, llvm::Intrinsic::not_intrinsic, false}, {"erf", 1, llvm::Intrinsic::not_intrinsic, false},
    {"cbrt", 1, llvm::Intrinsic::not_intrinsic, false},  {"atan2", 2, llvm::Intrinsic::not_intrinsic, false},
    {"fmod", 2, llvm::Intrinsic::not_intrinsic, false},  {"nextafter", 2, llvm::Intrinsic::not_intrinsic, false},
};

const MathFn* find_math(std::string_view name) {
  for (const MathFn& m : kMath)
    if (name == m.name) return &m;
  return nullptr;
}

// A pure external function (libm or libdevice): no memory effects, so it can
// be hoisted and CSE'd like the instruction it stands for.
llvm::FunctionCallee declare_pure(llvm::Module& m, const std::string& name, llvm::Type* t, int arity) {
  std::vector<llvm::Type*> params(static_cast<size_t>(arity), t);
  llvm::FunctionCallee callee = m.getOrInsertFunction(name, llvm::FunctionType::get(t, params, false));
  if (auto* f = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
    f->setDoesNotAccessMemory();
    f->setDoesNotThrow();
    f->setWillReturn();
  }
  return callee;
}

}  // namespace

llvm::Value* Lowering::math_call(std::string_view fn_name, DType dtype, const std::vector<llvm::Value*>& args) {
  const MathFn* m = find_math(fn_name);
  if (!m) throw error(current_op(), "no math function `" + std::string(fn_name) + "`");
  if (static_cast<int>(args.size()) != m->arity)
    throw error(current_op(), "math function `" + std::string(fn_name) + "` takes " + std::to_string(m->arity) + " operand(s)");
  llvm::Type* t = compute_type(dtype);
  if (!t->isFloatingPointTy()) throw error(current_op(), "math function `" + std::string(fn_name) + "` needs a float dtype");
  const bool f32 = t->isFloatTy();
  if (m->intrinsic != llvm::Intrinsic::not_intrinsic && (target == Target::host || m->native_on_nvptx))
    return b.CreateCall(intrinsic(m->intrinsic, {t}), args);
  std::string name = target == Target::nvptx ? "__nv_" + std::string(m->name) : std::string(m->name);
  if (f32) name += "f";
  return b.CreateCall(declare_pure(module, name, t, m->arity), args);
}

}  // namespace tessera::backends::llvm_lowering
