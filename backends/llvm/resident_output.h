// An output block held in registers across the grid's sequential axes.
//
// Matmul with k-accumulation (examples/matmul.tsr), the kernel everyone
// writes first, adds `dot_general(x, y)` into its output block at every step
// of an `arbitrary` k axis while the block stays (its index map ignores k).
// Lowered op by op, each step's product goes to memory and is added to the
// block there: on a GPU the block's global-memory traffic then outweighs the
// tensor cores' work. Here the block lives in registers instead, in the
// layout of the dot's own accumulators (gpu_dot.h, ResidentTiles): loaded
// when the grid point starts, the product accumulated into it directly, and
// stored when the sequential axes are done.
//
// Every other op that reads or writes the block sees memory, as before: the
// registers are stored to the block just before it and loaded back just after
// (Lowering::lower_ops), so the registers are always the block's true value
// and any kernel stays correct; the matmul's zeroing at k == 0 costs one such
// round trip per output block, not per k step.
#pragma once

#include <optional>

#include "backends/llvm/gpu_dot.h"

namespace tessera::backends::llvm_lowering {

struct ResidentOutput {
  const Var* root = nullptr;  // the kernel's output Ref param
  const Op* dot = nullptr;    // the dot_general whose product the next op (`addupdate root`) adds
  ResidentTiles tiles;
  RefView block;              // the block held, addressed in place (set per parallel grid point)
};

// Output `o` of the pallas_call `g` as a resident block, when its block stays
// over every sequential axis (axes npar.. of the grid; at least one of more
// than one step) and the kernel body adds a dot_general product into the whole
// block with the op right after the dot (the product used nowhere else), in
// f32, on a schedule of gpu_dot.h whose accumulators fit in registers:
// tensor cores on NVPTX sm_80+, the f32 tile schedule on either target.
// The slots are left empty (make_slots).
std::optional<ResidentOutput> find_resident_output(const GridMapping& g, int o, int npar, Target target, int threads,
                                                   int sm);
// `add` is `addupdate REF[whole], product`: it adds `product` into all of a Ref.
bool adds_into_whole_ref(const Op& add, const Var* product);

// One f32 alloca per element the thread owns.
void make_slots(Lowering& L, ResidentOutput& r);
// block -> registers.
void load_resident(Lowering& L, const ResidentOutput& r);
// At a parallel grid point's start: nothing prefetched yet, block -> registers.
void begin_resident(Lowering& L, const ResidentOutput& r);
// registers -> block, visible to every thread afterwards; lazy reads of the
// block are materialized first (they saw its memory before this store).
void store_resident(Lowering& L, const ResidentOutput& r);

}  // namespace tessera::backends::llvm_lowering
