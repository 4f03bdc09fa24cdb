// Every value primitive (vregs) gets a rule from one of the groups, or the
// reason Mosaic has none: Pallas's TensorCore lowering
// (jax/_src/pallas/mosaic/lowering.py) has no rule for it.
#include "backends/mosaic/rules.h"
#include "backends/mosaic/vector_groups.h"

namespace tessera::backends::mosaic {

void add_vector_rules(LoweringTable& t) {
  add_elementwise_rules(t);
  add_convert_rules(t);
  add_shape_rules(t);
  add_reduce_rules(t);
  add_matmul_rules(t);
  add_random_rules(t);
  add_composite_rules(t);

  const std::string no_pallas_rule = "Pallas's TensorCore lowering has no rule for it (jax/_src/pallas/mosaic/lowering.py)";
  for (const char* name : {"expm1", "cbrt", "reduce_precision", "reduce_prod"}) t.unsupported(name, no_pallas_rule);
  t.unsupported("rev", "Pallas lowers rev only on the SparseCore");
  t.unsupported("sort", "Pallas lowers sort only on the SparseCore (tpu.sort)");
  t.unsupported("gather", "Only take_along_axis-like gathers supported (write take_along_axis)");
  for (const char* name : {"dynamic_slice", "dynamic_update_slice"})
    t.unsupported(name, "Pallas's TensorCore lowering has no rule for it on values (index the Ref with ds(...) instead)");
}

}  // namespace tessera::backends::mosaic
