// Symbolic block regions: the block geometry of ir/block_geometry.h over Z3,
// so the prover reads block starts and sizes from the same definition as the
// interpreter and discharge.
#pragma once

#include <z3++.h>

#include <vector>

#include "analysis/prove/int_encoder.h"
#include "ir/block_geometry.h"

namespace tessera::prove {

// One dim of a block, in padded coordinates.
struct SymExtent {
  z3::expr start, size;
};

// The block that index-map values `index` select (a start and size per array dim).
std::vector<SymExtent> block_region(z3::context& ctx, const BlockGeometry& geo, const std::vector<Sym>& index);
// Whether two blocks of one buffer share an element: they overlap on every dim.
z3::expr regions_overlap(z3::context& ctx, const std::vector<SymExtent>& a, const std::vector<SymExtent>& b);

}  // namespace tessera::prove
