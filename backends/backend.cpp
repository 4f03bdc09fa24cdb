#include "backends/backend.h"

#include "backends/mosaic/emit_module.h"
#if TESSERA_HAVE_LLVM
#include "backends/llvm/emit.h"
#include "backends/llvm/table.h"
#endif
#include "backends/mosaic/rules.h"

namespace tessera::backends {
namespace {

#if TESSERA_HAVE_LLVM
const RuleTableBase& ptx_rules() { return llvm_lowering::ptx_table(); }
const RuleTableBase& llvm_rules() { return llvm_lowering::llvm_table(); }
std::string emit_ptx(const Module& m, const Body& entry, const EmitOptions& o) {
  return llvm_lowering::emit_ptx_text(m, entry, o.sm);
}
std::string emit_llvm(const Module& m, const Body& entry, const EmitOptions& o) {
  if (o.llvm_target != "nvptx" && o.llvm_target != "host")
    throw Error("llvm: --target must be nvptx or host, not '" + o.llvm_target + "'");
  return llvm_lowering::emit_llvm_text(m, entry, o.llvm_target, o.sm);
}
#else
// Built without LLVM 19: the targets exist, and say why they cannot run.
constexpr const char* kNoLlvm = "tessera was built without LLVM 19 (meson option llvm)";
LoweringTable without_llvm(std::string target) {
  LoweringTable t(std::move(target));
  t.set_pending(kNoLlvm);
  return t;
}
const RuleTableBase& ptx_rules() {
  static const LoweringTable t = without_llvm("ptx");
  return t;
}
const RuleTableBase& llvm_rules() {
  static const LoweringTable t = without_llvm("llvm");
  return t;
}
std::string emit_ptx(const Module&, const Body&, const EmitOptions&) { throw Error(kNoLlvm); }
std::string emit_llvm(const Module&, const Body&, const EmitOptions&) { throw Error(kNoLlvm); }
#endif

const RuleTableBase& mosaic_rules() { return mosaic::tensorcore_rules(); }

const RuleTableRegistration kPtx("ptx", ptx_rules);
const RuleTableRegistration kLlvm("llvm", llvm_rules);

}  // namespace

const std::vector<Backend>& backends() {
  static const std::vector<Backend> table = {
      {"mosaic", "Mosaic TPU MLIR text, as Pallas's TPU lowering emits it (TensorCore, SparseCore)", mosaic_rules,
       mosaic::emit_modules, mosaic::checkable, nullptr},
      {"ptx", "PTX for NVIDIA GPUs, through LLVM 19 (--sm 80|90)", ptx_rules,
       [](const Module& m, const Body& entry) { return emit_ptx(m, entry, EmitOptions{}); }, nullptr, emit_ptx},
      {"llvm", "the LLVM IR behind ptx, for reading (--target nvptx|host)", llvm_rules,
       [](const Module& m, const Body& entry) { return emit_llvm(m, entry, EmitOptions{}); }, nullptr, emit_llvm},
  };
  return table;
}

const Backend* find_backend(std::string_view target) {
  for (const Backend& b : backends())
    if (b.target == target) return &b;
  return nullptr;
}

std::string target_names() {
  std::string out;
  for (const Backend& b : backends()) out += (out.empty() ? "" : ", ") + std::string(b.target);
  return out;
}

}  // namespace tessera::backends
