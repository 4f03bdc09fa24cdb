// A typed view of an indirect (gather / scatter) dma_start, after the
// SparseCore DMAs of jax/_src/pallas/mosaic/sc_lowering.py
// (`tpu.enqueue_indirect_dma`):
//
//   dma_start %table[%offsets, :], %rows[:, :], %sem               gather:  rows[i] = table[offsets[i]]
//   dma_start %rows[:, :], %table[%offsets, :], %sem               scatter: table[offsets[i]] = rows[i]
//   dma_start[add=true] %rows[:, :], %table[%offsets, :], %sem     scatter-add: table[offsets[i]] += rows[i]
//
// The indexed side lives in HBM (`any`, `hbm` or `vmem_shared`), the other in
// VMEM; the offsets are a 1-D i32 Ref in VMEM and index only the major dim.
// The shape rule of dma_start (ir/prims/pallas.cpp) enforces all of that
// through check_indirect_dma; passes, the interpreter and backends read the
// op through indirect_dma().
#pragma once

#include <optional>

#include "ir/ir.h"

namespace tessera {

struct IndirectDma {
  int indexed = 0;         // main operand with the offsets: 0 (source: a gather) or 1 (destination: a scatter)
  int offsets = -1;        // operand index of the offsets Ref
  int64_t num_rows = 0;    // how many offsets (rows moved)
  bool add = false;        // scatter-add: accumulate into the destination rows
  bool is_gather() const { return indexed == 0; }
};

// The indirect part of a dma_start, or nullopt for a plain (dense) DMA or any other op.
std::optional<IndirectDma> indirect_dma(const Op& op);

// True when some indexer of `op` has an indirect entry (a dma_start or dma_wait naming rows by offsets).
bool has_indirect_index(const Op& op);

// The shape rule's checks of a dma_start's indirect indexing and `add`
// param (throws Error at the op, with Pallas's messages where it has them).
void check_indirect_dma(const Op& op);

// Memory spaces a SparseCore DMA may gather from / scatter to.
bool is_hbm_side(MemSpace s);

}  // namespace tessera
