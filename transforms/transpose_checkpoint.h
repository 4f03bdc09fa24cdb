// Checkpoints for the transpose of a pallas_call whose tangent kernel reads
// state the forward kernel carries from grid step to step in non-linear
// scratch: flash attention's running max, sum and accumulator.
//
// The transposed kernel walks the grid backwards, so it cannot recompute that
// state by running the recurrence. Instead a *checkpoint call* first runs the
// kernel's non-linear part forward over the same grid and saves each such
// scratch Ref at the start of every grid step, one block per grid point of an
// array shaped (grid..., scratch...). The tangent call is then rebuilt with
// those arrays as extra (non-linear) inputs, and its kernel restores the
// scratch from them before anything else at each step. Every step starts from
// the state the forward run had there, in whatever order the steps run, so
// the scratch no longer carries anything across steps and the pallas_call
// rule transposes the rebuilt call as it does any other. This is
// checkpointing at grid-step granularity ("store all" in Griewank's terms):
// flash attention's example saves 64 steps x 4,224 floats.
#pragma once

#include <vector>

#include "ir/grid_mapping.h"
#include "transforms/kernel_split.h"
#include "transforms/transpose.h"

namespace tessera::transpose {

// Does every grid step of `kernel` overwrite the whole of Ref param `ref`
// before anything else touches it (its first top-level use is a `swap` of
// the whole Ref)? Then it carries nothing from one step to the next.
bool overwritten_at_each_step(const Body& kernel, const Var* ref);

// The tangent call `op`, rebuilt with checkpoints of the scratch Refs
// `saved` (indices among g's scratch). It lives in `holder`; `x` and
// `linear` extend the rule's with the checkpoint arrays (non-linear). The
// checkpoint call is emitted into ctx.b.
struct CheckpointedCall {
  BodyPtr holder;
  const Op* op = nullptr;
  std::vector<Value> x;
  std::vector<bool> linear;
};
CheckpointedCall checkpoint_scratch(Ctx& c, const Op& op, const GridMapping& g, const std::vector<Value>& x,
                                    const std::vector<bool>& linear, const KernelTaint& taint,
                                    const std::vector<int>& saved);

}  // namespace tessera::transpose
