// The kernel func of a SparseCore module: its arguments (with their
// attributes) and its attributes, for the two forms of section 7 of
// Pallas's SparseCore lowering (jax/_src/pallas/mosaic/sc_lowering.py):
//
// - a pallas_call with `kernel_type=sc_*` (jax/_src/pallas/mosaic/sc_lowering.py,
//   `lower_jaxpr_to_module`): grid indices, then the operands (the window of
//   each block mapping; no scalar prefetch: "Scalar prefetch not
//   supported."), then scratch (semaphores: the verifier makes other scratch
//   a run_scoped allocation); every block mapping has a `transform_i` and a
//   {transform_indices, window_bounds} window, HBM ones included; operands in
//   HBM or semaphore memory carry `{sc.persistent}`; no `scalar_prefetch`
//   attribute. A grid-free call runs on grid (1,), `arbitrary`, whose one
//   index the index maps ignore.
// - a core_map over a SparseCore mesh (the current `pl.kernel` form,
//   `lower_jaxpr_into_unpipelined_module`): mesh indices, then the Refs,
//   whole; iteration_bounds is the mesh shape, the axes `core_parallel` then
//   `subcore_parallel`; every operand, HBM included, has the window
//   `{transform_indices = affine_map<(d0, d1) -> (0, ...)>}`.
//
// In both, a body that is one run_scoped over exactly its own parameters
// allocates for the whole kernel (`pl.kernel`'s scratch_shapes; the VMEM
// scratch of a pallas_call, which the verifier asks to write this way): its
// allocations become scratch operands after the others and the run_scoped's
// body is the kernel's.
//
// Memory spaces: tessera's `any` is HBM on the SparseCore (a Ref of memory
// space ANY / None means HBM there, jax/_src/pallas/core.py); the rest keep
// their TensorCore spelling.
#pragma once

#include <string>
#include <vector>

#include "backends/mosaic/kernel_context.h"
#include "ir/grid_mapping.h"

namespace tessera::backends::mosaic {

// `view` as a SparseCore memref: `any` becomes `hbm`.
RefView on_sparse_core(RefView view);

struct ScCallKernel {
  GridMapping grid;              // the call's, on grid (1,) when it has none
  const Body* body = nullptr;    // the kernel, or its whole-kernel run_scoped's body
  std::vector<RefView> params;   // inputs, outputs, scratch (hoisted allocations last)
  std::string arguments;         // `%arg0: i32, %arg1: memref<...> {sc.persistent}, ...`
  std::string attributes;        // `attributes {...}`
};

// Checks the call against what the SparseCore lowering supports (located at `call`).
ScCallKernel sc_call_kernel(const GridMapping& g, const Op& call);

struct ScMeshKernel {
  const Body* body = nullptr;    // the core_map's body, or its run_scoped's
  std::vector<RefView> params;   // the Refs, then the hoisted scratch
  std::vector<int64_t> mesh_shape;
  std::string arguments, attributes;
};

ScMeshKernel sc_mesh_kernel(const Op& core_map);

}  // namespace tessera::backends::mosaic
