// The one table of TensorCore kernel-body rules: the rule files' groups,
// and why the primitives that cannot run inside a Mosaic kernel have none.
#include "backends/mosaic/rules.h"

namespace tessera::backends::mosaic {

void add_host_only_reasons(LoweringTable& t) {
  t.unsupported("pallas_call", "a kernel cannot launch a pallas_call (only the host function can)");
  t.unsupported("core_map", "a kernel cannot run a core_map (only the host function can)");
  t.unsupported("pmap", "a kernel cannot map over devices");
  t.unsupported("custom_lin", "the jvp of a custom_vjp_call has no forward rule to run (transpose it: vjp)");
}

const LoweringTable& tensorcore_rules() {
  static const LoweringTable table = [] {
    LoweringTable t("mosaic");
    t.set_where("on the TensorCore");
    add_vector_rules(t);
    add_memory_rules(t);
    add_dma_rules(t);
    add_control_rules(t);
    add_grid_rules(t);
    add_debug_rules(t);
    add_host_only_reasons(t);
    // No pending reason: the coverage test (tests/backends/test_backends.cpp)
    // makes a new primitive get a rule here or a stated reason.
    return t;
  }();
  return table;
}

const RuleTableRegistration kRegistered("mosaic", tensorcore_rules);

}  // namespace tessera::backends::mosaic
