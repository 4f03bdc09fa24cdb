#include "backends/backend.h"

#include "backends/mosaic/emit_module.h"
#include "backends/mosaic/rules.h"

namespace tessera::backends {
namespace {

// Until a target's rules and driver are written, every primitive is pending
// with the issue that will lower it: one reason, not a list of names.
LoweringTable pending_table(std::string target, std::string reason) {
  LoweringTable t(std::move(target));
  t.set_pending(std::move(reason));
  return t;
}

const LoweringTable& ptx_rules() {
  static const LoweringTable t = pending_table("ptx", "not lowered yet (issue 13: PTX backend)");
  return t;
}
const LoweringTable& llvm_rules() {
  static const LoweringTable t = pending_table("llvm", "not lowered yet (issue 13: PTX backend)");
  return t;
}

// The driver of a target not written yet: walks the entry function, so the
// first op without a rule is reported where it is, and refuses in any case,
// so that no partial text passes for output.
std::string emit_unwritten(const LoweringTable& rules, const Body& entry) {
  EmitContext ctx(rules.target());
  for (Var* p : entry.params()) ctx.def(p);
  lower_body(ctx, entry, rules);
  throw Error(entry.loc(), rules.target() + ": no emitter for @" + entry.name() + " yet: " + rules.pending());
}

}  // namespace

const std::vector<Backend>& backends() {
  static const std::vector<Backend> table = {
      {"mosaic", "Mosaic TPU MLIR text, as Pallas's TPU lowering emits it (TensorCore, SparseCore)", mosaic::tensorcore_rules,
       mosaic::emit_modules, mosaic::checkable},
      {"ptx", "PTX for NVIDIA GPUs, through LLVM (not written yet)", ptx_rules,
       [](const Module&, const Body& entry) { return emit_unwritten(ptx_rules(), entry); }, nullptr},
      {"llvm", "the LLVM IR behind ptx, for reading (not written yet)", llvm_rules,
       [](const Module&, const Body& entry) { return emit_unwritten(llvm_rules(), entry); }, nullptr},
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
