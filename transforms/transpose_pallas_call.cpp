// The transpose rule of pallas_call (helper transpose-kernel replaces this
// stub): until it lands, pallas_call has no transpose rule.
#include "transforms/transpose.h"

namespace tessera::transpose {

void add_pallas_call_rule(RuleTable<TransposeRule>&) {}

}  // namespace tessera::transpose
