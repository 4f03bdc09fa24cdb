// The kernel func.func's arguments (jax/_src/pallas/mosaic/lowering.py,
// `lower_jaxpr_to_module`): one i32 per grid axis, then the scalar-prefetch
// memrefs (SMEM, whole arrays), the operands (inputs, then outputs) as the
// memref of one window, squeezed dims kept as size 1, or of the whole array
// for ANY / HBM operands, then the scratch memrefs and semaphores. The
// memref layouts are the RefViews the body rules read.
#pragma once

#include <string>
#include <vector>

#include "backends/mosaic/kernel_context.h"
#include "ir/grid_mapping.h"

namespace tessera::backends::mosaic {

struct KernelSignature {
  int grid_rank = 0;
  // One per kernel parameter (*scalar_prefetch, *inputs, *outputs, *scratch).
  std::vector<RefView> params;
  // `%arg0: i32, ..., %argN: memref<...>`
  std::string arguments() const;
};

// Checks each block mapping against Mosaic's rules (located at `call`) and
// lays out every kernel parameter.
KernelSignature kernel_signature(const GridMapping& g, const Op& call);

// Block mapping m's memref: the window, or the whole array in ANY / HBM.
RefView operand_view(const GridMapping& g, int m);
// Whether mapping m is windowed (has a transform function): not in ANY, HBM
// or semaphore memory.
bool is_windowed(const GridMapping& g, int m);
// Whether mapping m's window is the whole array at block index 0 in every dim.
bool is_trivial_window(const GridMapping& g, int m);

}  // namespace tessera::backends::mosaic
