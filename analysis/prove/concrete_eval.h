// A concrete evaluator for the integer code of index maps, with the IR's
// semantics: fixed-width integers that wrap, div / rem rounding toward zero.
//
// The prover's tests use it as an independent reference: enumerating every
// grid point with this evaluator must give the same verdicts as the Z3 proofs.
// It is deliberately separate from the Z3 encoding (no shared code paths).
#pragma once

#include <cstdint>
#include <vector>

#include "ir/ir.h"

namespace tessera::prove {

// A scalar-prefetch array: row-major values of `shape`.
struct IntArray {
  Shape shape;
  std::vector<int64_t> values;
};

// Runs index map `map` at grid point `program_ids` with scalar prefetch
// `prefetch` and returns its results. Throws Error on division by zero, an
// out-of-bounds prefetch read or an op it does not know.
std::vector<int64_t> eval_index_map(const Body& map, const std::vector<int64_t>& program_ids,
                                    const std::vector<IntArray>& prefetch = {});

// Wraps `v` into the range of integer dtype `d` (two's complement).
int64_t wrap_to(DType d, int64_t v);

}  // namespace tessera::prove
