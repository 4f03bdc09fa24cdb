#include "backends/mosaic/rules.h"

namespace tessera::backends::mosaic {

void add_vector_rules(LoweringTable&) {}

}  // namespace tessera::backends::mosaic
