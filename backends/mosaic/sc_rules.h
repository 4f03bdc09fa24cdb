// The SparseCore rules (jax/_src/pallas/mosaic/sc_lowering.py): the groups
// whose text differs from the TensorCore's, one file each.
// sparse_core_table.cpp builds the SparseCore table from the shared
// TensorCore groups (rules.h, vector_groups.h) and these overrides.
#pragma once

#include "backends/lowering.h"

namespace tessera::backends::mosaic {

// sc_memory_rules.cpp: get, swap, load, store, addupdate as
// `tpu.vector_load` / `tpu.vector_store` (`add = true` for addupdate) of the
// value's own shape; scalars as memref.load / memref.store.
void add_sc_memory_rules(LoweringTable& t);
// sc_value_rules.cpp: iota of one lane vector, sort (`tpu.sort`), rev
// (`tpu.dynamic_gather` by reversed lanes).
void add_sc_value_rules(LoweringTable& t);
// sc_dma_rules.cpp: dma_start / dma_wait with offsets as
// `tpu.enqueue_indirect_dma` / `tpu.wait_indirect_dma`; dense DMAs keep the
// TensorCore rule already in `t`.
void add_sc_dma_rules(LoweringTable& t);
// sc_debug_rules.cpp: debug_print as `tpu.log` without placeholders.
void add_sc_debug_rules(LoweringTable& t);

}  // namespace tessera::backends::mosaic
