// The Mosaic lowering rules, registered into one LoweringTable by family
// groups, one file each (backends/lowering.h explains rules and families).
// The rules run only inside the Mosaic driver (emit_module.h), whose
// EmitContext is a KernelContext.
#pragma once

#include <string_view>

#include "backends/lowering.h"
#include "backends/mosaic/kernel_context.h"

namespace tessera::backends::mosaic {

// vector_rules.cpp: values in vregs. Elementwise math and bitwise ops,
// comparisons, select_n, convert_element_type, broadcast_in_dim, reshape,
// transpose, reductions, dot_general, iota and the other lax ops.
void add_vector_rules(LoweringTable& t);
// The value primitives Pallas's `core` ("TensorCore", "SparseCore") lowering
// has no rule for, each with its reason (vector_rules.cpp).
void add_unlowered_value_reasons(LoweringTable& t, std::string_view core);
// pallas_call, core_map and pmap: host-side ops, never in a kernel body
// (tensorcore_table.cpp).
void add_host_only_reasons(LoweringTable& t);

// memory_rules.cpp: get, swap, load, store, addupdate on VMEM and SMEM.
void add_memory_rules(LoweringTable& t);
// dma_rules.cpp: dma_start, dma_wait, semaphores, the barrier semaphore.
void add_dma_rules(LoweringTable& t);
// control_rules.cpp: cond, for, while, scan, run_scoped.
void add_control_rules(LoweringTable& t);
// grid_rules.cpp: program_id, num_programs, device_id, axis_index, axis_size, multiple_of.
void add_grid_rules(LoweringTable& t);
// debug_rules.cpp: debug_print, debug_check, delay.
void add_debug_rules(LoweringTable& t);

// The TensorCore kernel table: every rule above, and a stated reason for
// each primitive that cannot appear in a kernel body.
const LoweringTable& tensorcore_rules();

// The SparseCore kernel table (sparse_core_table.cpp): the groups above
// whose text is the same on a subcore, with the SparseCore rules of
// sc_rules.h over them.
const LoweringTable& sparse_core_rules();

}  // namespace tessera::backends::mosaic
