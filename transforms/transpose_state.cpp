// Transpose rules of the state primitives: linear Refs are transposed in place.
#include "transforms/transpose.h"

namespace tessera::transpose {

void add_state_rules(RuleTable<TransposeRule>&) {}

}  // namespace tessera::transpose
