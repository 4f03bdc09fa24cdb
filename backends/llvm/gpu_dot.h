// dot_general on NVPTX: the tiled schedule (docs/backends.md, "the schedule of dot_general").
//
// bf16 / f16 operands with an f32 accumulator run on tensor cores (sm_80+):
// tiles of both operands staged into shared memory in their storage dtype
// (cp.async, 16 bytes per copy, double-buffered over k), fragments loaded with
// ldmatrix, mma.sync.m16n8k16 accumulating in registers over the whole k
// extent, the result written once. f32 operands run on the FMA units the same
// way, each thread accumulating a 4 x 4 tile in registers in the
// interpreter's order (so the results stay bit for bit the interpreter's).
// Every other case (other dtypes, batch dims, sizes that are not multiples
// of the tiles, too little shared memory) is left to the caller's general path.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <variant>

#include "backends/llvm/kernel_lowering.h"

namespace tessera::backends::llvm_lowering {

// The interpreter's summation order for dot_general (runtime/kernels/dot.cpp):
// k runs in chunks of this many, each summed from zero and then added to the total.
constexpr int64_t kDotChunk = 256;

// One operand of the schedule, as a matrix: lhs [M, K], rhs [K, N].
struct GpuDotOperand {
  // The operand as a lazy [1, rows, cols] Block in its own dtype (batch, then
  // the row dims, then the column dims, each group flattened row-major).
  Block canonical;
  // The operand read in place as the [rows, cols] matrix (cols contiguous),
  // when it is one: tiles are then copied with cp.async. Null otherwise.
  std::shared_ptr<const RefView> view;
};

// How an [M, N] = [M, K] x [K, N] product is cut into tiles staged through
// shared memory: passes over cta_m x cta_n output tiles, k steps of bk.
struct TilePlan {
  int64_t M = 0, N = 0, K = 0;
  int64_t cta_m = 0, cta_n = 0;  // the output tile one pass of the CTA computes
  int64_t bk = 0;                // k extent of one staged tile
  int64_t a_row = 0, b_row = 0;  // padded shared row lengths (elements) of A [cta_m][a_row] and B [bk][b_row]
  int64_t elem = 2;              // bytes per staged element
  int64_t stage_bytes() const { return elem * (cta_m * a_row + bk * b_row); }  // one buffer of both tiles
};

// Tensor cores: the warp tiling (rules in gpu_dot.cpp); none when the
// shapes or the CTA do not allow it.
struct MmaPlan : TilePlan {
  int64_t warps_m = 0, warps_n = 0;  // warps computing (warps_m * warps_n <= threads / 32)
  int64_t warp_m = 0, warp_n = 0;    // the output tile each of those warps owns
};
std::optional<MmaPlan> plan_mma(int64_t M, int64_t N, int64_t K, int threads);

// f32 on the FMA units: every thread owns a 4 x 4 tile of the output.
struct FmaPlan : TilePlan {
  static constexpr int64_t kThreadTile = 4;
  int64_t threads_m = 0, threads_n = 0;  // threads_m * threads_n == threads
};
std::optional<FmaPlan> plan_fma(int64_t M, int64_t N, int64_t K, int threads);
// The f32 schedule on either target: the host runs it with one thread and its
// copies as plain stores (tests check its staging, passes and summation order
// there against the interpreter's order).
Block fma_dot(Lowering& L, const FmaPlan& plan, const GpuDotOperand& lhs, const GpuDotOperand& rhs);

// The [1, M, N] f32 result of lhs x rhs as a buffer Block, or none when
// neither schedule applies (the caller then lowers it generally).
std::optional<Block> gpu_dot(Lowering& L, const GpuDotOperand& lhs, const GpuDotOperand& rhs, DType acc);

// ---- an f32 [M, N] block held in registers (resident_output.h) ------------
// Each thread holds the elements of the block that its accumulators own in
// the schedule of `plan`, one f32 alloca per element (registers after
// SROA): pass p (row-major over the cta_m x cta_n tiles), then the
// schedule's own order (mma: tile i, tile j, fragment register q; fma: row
// r, column c of the thread's 4 x 4 tile).
struct ResidentTiles {
  std::variant<MmaPlan, FmaPlan> plan;
  std::vector<llvm::Value*> slots;
  // i1 alloca: the product's first k tiles of this grid step are already in
  // stage 0 (copied during the previous step: NextStepOperands).
  llvm::Value* prefetched = nullptr;
};
// The same product's operands at the next step of the grid's sequential
// loop: a resident product copies that step's first k tiles while its own
// last tiles compute, so the copy pipeline does not restart at every grid
// step. `exists` (i1, the same in every thread): there is a next step and
// its blocks are valid.
struct NextStepOperands {
  GpuDotOperand lhs, rhs;
  llvm::Value* exists = nullptr;
};
// The schedule a [M, K] x [K, N] product of `dtype` operands would run (the
// rules of plan_mma / plan_fma), or none.
std::optional<std::variant<MmaPlan, FmaPlan>> plan_gpu_dot(int64_t M, int64_t N, int64_t K, DType dtype, int threads);
// The elements one thread owns under `plan`: at most kMaxResidentSlots
// are kept in registers (a 64 x 64 warp tile's accumulators).
int64_t owned_elements(const std::variant<MmaPlan, FmaPlan>& plan);
constexpr int64_t kMaxResidentSlots = 128;
// Calls `body(slot, row, col)` for every element the calling thread owns
// (row and col i64 in the block), in slot order; threads of warps that
// compute nothing own nothing.
void for_each_owned(Lowering& L, const ResidentTiles& tiles,
                    const std::function<void(size_t slot, llvm::Value* row, llvm::Value* col)>& body);
// Adds lhs x rhs into the resident block (mma: accumulating in place, the
// tensor cores' order; fma: each element's product summed in the
// interpreter's order, then added, as `addupdate` would). False, emitting
// nothing, when the product would not run `tiles.plan` now (shared memory).
bool gpu_dot_into(Lowering& L, const GpuDotOperand& lhs, const GpuDotOperand& rhs, ResidentTiles& tiles,
                  const std::optional<NextStepOperands>& next = std::nullopt);

}  // namespace tessera::backends::llvm_lowering
