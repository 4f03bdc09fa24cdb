// debug_print on a SparseCore subcore (jax/_src/pallas/mosaic/sc_lowering.py,
// `_debug_print_lowering_rule`): `"tpu.log"(args) <{tag = fmt}>` with at most
// one operand and no `{}` placeholders (the SparseCore log does not format).
#include "backends/mosaic/mlir_types.h"
#include "backends/mosaic/rules.h"
#include "backends/mosaic/sc_rules.h"

namespace tessera::backends::mosaic {
namespace {

void lower_debug_print(EmitContext& ctx, const Op& op, const LoweringTable&) {
  const std::string& fmt = op.param(keys::fmt);
  auto fail = [&](const std::string& reason) {
    return ctx.error(op, "pl.debug_print() " + reason + " when lowering to SparseCore");
  };
  if (fmt.find("{}") != std::string::npos) throw fail("does not support placeholders");
  if (op.operands.size() > 1) throw fail("does not support multiple inputs");
  std::string args, types;
  if (!op.operands.empty()) {
    args = ctx.use(op.operands[0]);
    types = value_type(op.operands[0].type());
  }
  ctx.line("\"tpu.log\"(" + args + ") <{tag = \"" + mlir_string_body(fmt) + "\"}> : (" + types + ") -> ()");
}

}  // namespace

void add_sc_debug_rules(LoweringTable& t) { t.set("debug_print", lower_debug_print); }

}  // namespace tessera::backends::mosaic
