// The transpose of a DMA pipeline as a pipeline: each copy's transpose is
// started where the forward waited for the copy and waited for where the
// forward started it, so the reversed program overlaps its copies with its
// compute as the forward does.
//
// A dma_wait names only a semaphore and a byte count; the copy it completes
// may have been started in an earlier loop iteration, with indices computed
// there (`dma_pipeline` prefetches chunk c + 1 before waiting for chunk c).
// mirror_dma_pipeline pairs each wait with its start on a concrete trace of
// the kernel (dma_trace.h), checks that mirroring is exact, and rewrites the
// tangent kernel so that each wait carries the copy it completes: the wait
// becomes a `dma_start` of that copy's regions, recomputed at the wait from
// its loop's index (the HBM Ref and the index threaded into the `cond`s
// around it). transpose_dma.cpp turns that op into the transposed copy's
// start and the forward's dma_start into its wait (DmaMirror says which op is
// which); every other rule sees an ordinary kernel.
//
// Mirroring is used when every DMA of the kernel passes these checks (else
// the copies are transposed synchronously, as before):
//   - the trace exists (indices known, loops static, no other bodies), and
//     the grid has one point;
//   - inputs aliased to outputs are not linear and not touched (the zeros a
//     cotangent output starts from), so no two params name one buffer;
//   - each copy moves a region of a linear VMEM Ref to or from a linear Ref
//     in `any` / HBM memory; on each semaphore element at most one copy is
//     in flight, so each wait completes the copy started last on it; each
//     wait names the copy's VMEM region, and the HBM region it completes is
//     affine in the index of its innermost loop (the same for all runs);
//   - the HBM regions of all copies are disjoint, the HBM Refs are the
//     call's inputs or outputs, a fetched one an input: so the transposed
//     copy of a fetch writes a cotangent region that starts at zero and
//     nothing else writes (no read, add and write back), and that of a
//     write-back reads one that nothing else reads (the reset to zero would
//     be unobserved);
//   - while a copy is in flight, nothing else touches its VMEM region, so
//     its transpose, in flight between the mirrored points, races nothing;
//   - a write-back's transpose overwrites its VMEM cotangent region (the
//     sum it must add to is zero there): after the forward's wait, the next
//     access to the region overwrites all of it (a `swap` or a copy into
//     it), or there is none and the region is scratch or an input, whose
//     cotangent starts at zero.
#pragma once

#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "ir/ir.h"

namespace tessera::transpose {

// Which DMA ops of a rewritten kernel are ends of mirrored copies.
class DmaMirror {
 public:
  enum Role { none, start_here, wait_here };
  // start_here: a former dma_wait, now the dma_start of the copy it
  // completed; its transpose starts the transposed copy. wait_here: a
  // dma_start whose transpose waits for its transposed copy.
  Role role(const Op& op) const;

 private:
  friend class MirrorRewriter;
  std::unordered_set<const Op*> starts_, waits_;
};

struct MirroredKernel {
  BodyPtr kernel;  // the tangent kernel, each wait rewritten as above
  DmaMirror mirror;
};

// What each of a kernel's params is in its pallas_call. aliased_input: an
// input the call aliases to an output (the same buffer).
enum class ParamRole : uint8_t { input, aliased_input, output, scratch, other };

// The rewritten kernel of a call with a grid of one point, or nullopt with
// the reason in `why` (the copies are then transposed synchronously).
// `linear`: which params are linear.
std::optional<MirroredKernel> mirror_dma_pipeline(const Body& kernel, const std::vector<ParamRole>& roles,
                                                  const std::vector<bool>& linear, std::string& why);

}  // namespace tessera::transpose
