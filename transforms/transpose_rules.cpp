// Transpose rules of the linear value primitives: elementwise, structural,
// reductions and dot_general.
#include "transforms/transpose.h"

namespace tessera::transpose {

void add_linear_rules(RuleTable<TransposeRule>&) {}

}  // namespace tessera::transpose
