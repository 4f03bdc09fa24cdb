// The one table of SparseCore kernel-body rules (jax/_src/pallas/mosaic/sc_lowering.py):
// the TensorCore groups whose text is the same on a subcore (arith / math
// values, conversions, shapes, reductions, control flow, grid and mesh
// indices, dense DMAs and semaphores), then the SparseCore groups of
// sc_rules.h over them, and why the rest has no rule here.
#include "backends/mosaic/rules.h"
#include "backends/mosaic/sc_rules.h"
#include "backends/mosaic/vector_groups.h"

namespace tessera::backends::mosaic {

const LoweringTable& sparse_core_rules() {
  static const LoweringTable table = [] {
    LoweringTable t("mosaic");
    t.set_where("on the SparseCore");
    add_elementwise_rules(t);
    add_convert_rules(t);
    add_shape_rules(t);
    add_reduce_rules(t);
    add_random_rules(t);
    add_composite_rules(t);
    add_control_rules(t);
    add_grid_rules(t);
    add_dma_rules(t);
    add_debug_rules(t);
    add_sc_memory_rules(t);
    add_sc_value_rules(t);
    add_sc_dma_rules(t);
    add_sc_debug_rules(t);

    add_unlowered_value_reasons(t, "SparseCore");
    t.unsupported("dot_general", "a SparseCore subcore has no matrix unit (tpu.matmul runs on the TensorCore)");
    add_host_only_reasons(t);
    return t;
  }();
  return table;
}

const RuleTableRegistration kRegistered("mosaic.sparse_core", sparse_core_rules);

}  // namespace tessera::backends::mosaic
