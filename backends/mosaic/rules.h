// The Mosaic lowering rules, registered into one LoweringTable by family
// groups, one file each (backends/lowering.h explains rules and families).
#pragma once

#include "backends/lowering.h"

namespace tessera::backends::mosaic {

// vector_rules.cpp: values in vregs. Elementwise math and bitwise ops,
// comparisons, select_n, convert_element_type, broadcast_in_dim, reshape,
// transpose, reductions, dot_general, iota and the other lax ops.
void add_vector_rules(LoweringTable& t);

}  // namespace tessera::backends::mosaic
