// Transpose rules of control flow, and which results of a control op are linear.
#include "transforms/transpose.h"

namespace tessera::transpose {

std::vector<bool> linear_results(const Op& op, const std::vector<bool>& linear_operands) {
  bool any = false;
  for (bool l : linear_operands) any |= l;
  return std::vector<bool>(op.results.size(), any);
}

void add_control_rules(RuleTable<TransposeRule>&) {}

}  // namespace tessera::transpose
