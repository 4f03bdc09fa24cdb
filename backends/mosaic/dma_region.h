// The memref a DMA or semaphore op takes for one of its Ref operands: the
// Ref itself, or a `tpu.memref_slice` of its indexed region (then a
// `tpu.memref_squeeze` when an integer index drops a dim). Shared by the
// TensorCore DMA rules (dma_rules.cpp) and the SparseCore indirect DMAs
// (sc_dma_rules.cpp).
#pragma once

#include <string>

#include "backends/mosaic/kernel_context.h"

namespace tessera::backends::mosaic {

struct DmaRegion {
  std::string name, type;  // the memref's SSA name and type
};

// Main operand k of `op` as the memref of its region; emits the slice ops.
DmaRegion dma_region(KernelContext& ctx, const Op& op, int k);

// The generic text of a local `tpu.enqueue_dma` (source, target, target
// semaphore) and of `tpu.wait_dma2` (semaphore, source, destination).
std::string enqueue_dma_text(const DmaRegion& src, const DmaRegion& dst, const DmaRegion& sem);
std::string wait_dma2_text(const DmaRegion& sem, const DmaRegion& src, const DmaRegion& dst);

}  // namespace tessera::backends::mosaic
