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
    return t;
  }();
  return table;
}

}  // namespace tessera::interp
