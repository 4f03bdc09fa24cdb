// Array kernels: the interpreter's rule for every pure primitive (elementwise
// math, structural ops, reductions, dot_general, sort, gather, conversions);
// `tessera cost` computes known scalars with them too.
//
// The evaluator (interpreter/eval.*) hands a kernel the op and its operands as
// Arrays (literals already turned into rank-0 Arrays) and gets the results
// back. Kernels dispatch on dtype once and run a typed loop over whole arrays.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "ir/ir.h"
#include "ir/primitive.h"
#include "runtime/array.h"

namespace tessera::interp {

using Kernel = std::function<std::vector<Array>(const Op& op, std::span<const Array> args)>;

// The table of array kernels, keyed by primitive ("interpret" pass). An
// embedding program adds the kernel of its own pure primitive with
// `array_kernels().set(name, kernel)` before running it (docs/embedding.md).
RuleTable<Kernel>& array_kernels();

}  // namespace tessera::interp
