// The "interpret" rule table of array kernels: one entry per pure,
// program-independent primitive, filled by the family files of this folder.
#include "runtime/kernels/util.h"

namespace tessera::interp {

RuleTable<Kernel>& array_kernels() {
  static RuleTable<Kernel> table = [] {
    RuleTable<Kernel> t("interpret");
    kern::register_elementwise_kernels(t);
    kern::register_convert_kernels(t);
    kern::register_structural_kernels(t);
    kern::register_reduction_kernels(t);
    kern::register_dot_kernels(t);
    kern::register_sort_gather_kernels(t);
    // State, control and Pallas ops read or write Refs, run bodies or ask
    // where they run: the interpreter has a rule of its own for each.
    t.set_default("run by the interpreter's own rule (interpreter/eval.cpp)", [](const Primitive& p) {
      return p.family == Family::state || p.family == Family::control || p.family == Family::pallas;
    });
    return t;
  }();
  return table;
}
const RuleTableRegistration kRegistered("interpreter.kernels", array_kernels);

}  // namespace tessera::interp
