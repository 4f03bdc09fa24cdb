// Memory-space rules. Semaphores live in `semaphore` space and data never
// does. `any`/`hbm` Refs are not addressable, in a kernel or in a function
// (the interpreter refuses both alike): code reaches them only through DMAs
// (dma_start into a VMEM/SMEM buffer), as on a TPU.
#include "verify/check.h"

namespace tessera::verify_detail {
namespace {

// What a state op's message says it does to its Ref ("cannot get from ...").
std::string access_phrase(const std::string& prim) {
  for (auto [name, verb] : {std::pair{"get", "get from"}, {"load", "load from"}, {"swap", "swap into"},
                            {"addupdate", "addupdate into"}, {"store", "store to"}})
    if (prim == name) return verb;
  return "use " + prim + " on";
}

// Main operands of semaphore-taking ops that must be semaphore Refs.
std::vector<int> semaphore_operands(const Op& op) {
  const std::string& n = op.name();
  if (n == "dma_start") return op.main_operands().size() == 5 ? std::vector<int>{2, 3} : std::vector<int>{2};
  if (n == "dma_wait" || n == "semaphore_signal" || n == "semaphore_wait" || n == "semaphore_read") return {0};
  return {};
}

}  // namespace

std::string allocation_problem(const Type& t) {
  if (!t.is_ref()) return "is " + t.str() + "; scratch buffers must be Refs (e.g. ref<" + t.str() + ", vmem>)";
  bool sem_dtype = is_semaphore(t.dtype()), sem_space = t.mem_space() == MemSpace::semaphore;
  if (sem_dtype && !sem_space) return t.str() + " holds semaphores and must be in memory space semaphore";
  if (!sem_dtype && sem_space) return t.str() + " holds data, which cannot live in memory space semaphore";
  return "";
}

void check_memory_spaces(const Op& op, Diags& out) {
  std::vector<int> sems = semaphore_operands(op);
  std::vector<int> main = sems.empty() ? std::vector<int>{} : op.main_operands();
  for (int k : sems) {
    if (k >= static_cast<int>(main.size())) continue;
    const Value& v = op.operands[main[k]];
    Type t = v.type();
    if (t.is_ref() && t.mem_space() != MemSpace::semaphore)
      report(out, op.loc, "semaphore operand " + (v.is_var() ? var_label(v.var()) : t.str()) + " of " + op.name() +
                              " is in memory space " + std::string(mem_space_name(t.mem_space())) +
                              "; semaphores live in memory space semaphore");
  }
  // run_scoped's extra body parameters are its allocations.
  if (op.name() == "run_scoped") {
    const Body& b = *op.param(keys::body);
    for (size_t p = op.operands.size(); p < b.params().size(); ++p) {
      std::string problem = allocation_problem(b.params()[p]->type);
      if (!problem.empty()) report(out, op.loc, "scoped allocation " + var_label(b.params()[p]) + " " + problem);
    }
  }
}

void check_memory_access(const Op& op, Diags& out) {
  if (op.prim->family != Family::state) return;  // every state op reads or writes its first operand
  std::string phrase = access_phrase(op.name());
  const Value& ref = op.main_operand(0);
  if (!ref.is_var() || !ref.var()->type.is_ref()) return;  // a literal is never a Ref
  const Type& t = ref.var()->type;
  MemSpace m = t.mem_space();
  std::string space(mem_space_name(m));
  if (m == MemSpace::any || m == MemSpace::hbm)
    report(out, op.loc, "cannot " + phrase + " a Ref in memory space " + space + " (" +
                            (ref.is_var() ? var_label(ref.var()) : t.str()) +
                            "): copy it to vmem/smem with dma_start first");
  else if (m == MemSpace::semaphore)
    report(out, op.loc, "cannot " + phrase + " a Ref in memory space semaphore (" +
                            (ref.is_var() ? var_label(ref.var()) : t.str()) +
                            "): use semaphore_read / semaphore_signal / semaphore_wait");
}

}  // namespace tessera::verify_detail
