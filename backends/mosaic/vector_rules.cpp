// Every value primitive (vregs) gets a rule from one of the groups, or the
// reason Mosaic has none: Pallas's TensorCore lowering
// (jax/_src/pallas/mosaic/lowering.py) has no rule for it.
#include "backends/mosaic/rules.h"
#include "backends/mosaic/vector_groups.h"

namespace tessera::backends::mosaic {

void add_unlowered_value_reasons(LoweringTable& t, std::string_view core) {
  const std::string where = "Pallas's " + std::string(core) + " lowering";
  for (const char* name : {"expm1", "cbrt", "reduce_precision", "reduce_prod"})
    t.unsupported(name, where + " has no rule for it (jax/_src/pallas/mosaic/lowering.py)");
  t.unsupported("gather", "Only take_along_axis-like gathers supported (write take_along_axis)");
  for (const char* name : {"dynamic_slice", "dynamic_update_slice"})
    t.unsupported(name, where + " has no rule for it on values (index the Ref with ds(...) instead)");
}

void add_vector_rules(LoweringTable& t) {
  add_elementwise_rules(t);
  add_convert_rules(t);
  add_shape_rules(t);
  add_reduce_rules(t);
  add_matmul_rules(t);
  add_random_rules(t);
  add_composite_rules(t);

  add_unlowered_value_reasons(t, "TensorCore");
  t.unsupported("rev", "Pallas lowers rev only on the SparseCore");
  t.unsupported("sort", "Pallas lowers sort only on the SparseCore (tpu.sort)");
}

}  // namespace tessera::backends::mosaic
