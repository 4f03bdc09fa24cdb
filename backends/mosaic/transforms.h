// The `@transform_i` functions: block mapping i's index map, lowered over
// the grid indices and the scalar-prefetch memrefs, returning one i32 per
// array dim (a block index, or an element index for squeezed and Element
// dims), as Pallas's `lower_jaxpr_to_transform_func` emits them. Index maps
// are small scalar programs: they get a rule table of their own (i32
// arithmetic, SMEM reads as `memref.load`), not the kernel's.
#pragma once

#include <string>

#include "backends/lowering.h"
#include "ir/grid_mapping.h"

namespace tessera::backends::mosaic {

const LoweringTable& index_map_rules();

// `func.func @transform_m(...) -> (i32, ...) { ... }`, indented one level.
std::string transform_function(const GridMapping& g, int m);

}  // namespace tessera::backends::mosaic
