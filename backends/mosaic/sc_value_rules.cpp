// Values on a SparseCore vector subcore (jax/_src/pallas/mosaic/sc_lowering.py,
// `_iota_lowering_rule_sc`, `_sort_lowering_rule`, `_rev_lowering_rule`); the
// verifier (verify/sparse_core.cpp) has already checked the shapes:
//   - iota of one lane vector is `tpu.iota` of that vector, in its dtype;
//   - sort by one key is one `tpu.sort` per value (keys, values, an all-true
//     mask), whose results are (mask, sorted keys, sorted values); keys alone
//     are sorted as their own values;
//   - rev is `tpu.dynamic_gather` by the lane indices (n - 1) - iota.
// 1-D take_along_axis keeps the TensorCore rule: the same `tpu.dynamic_gather`.
#include "backends/mosaic/constants.h"
#include "backends/mosaic/mlir_types.h"
#include "backends/mosaic/rules.h"
#include "backends/mosaic/sc_rules.h"
#include "backends/mosaic/vector_values.h"

namespace tessera::backends::mosaic {
namespace {

using vec::array_of;
using vec::generic;
using vec::put;
using vec::result_of;

std::string lane_iota(EmitContext& ctx, const ArrayType& out, int64_t dimension, const Var* result = nullptr) {
  return put(ctx, generic("tpu.iota", {}, "dimensions = " + vec::dense_array("i32", {dimension}), {}, value_type(out)), result);
}

void lower_iota(EmitContext& ctx, const Op& op, const LoweringTable&) {
  lane_iota(ctx, result_of(op), op.param(keys::dimension), op.results[0]);
}

void lower_sort(EmitContext& ctx, const Op& op, const LoweringTable&) {
  if (op.param(keys::num_keys) != 1) throw ctx.error(op, "Multiple sort keys not supported");
  const ArrayType& keys = array_of(op.operands[0]);
  Shape lanes = keys.shape;
  std::string mask_type = vector_type(lanes, DType::i1), mask = ctx.fresh("mask");
  ctx.line(mask + " = arith.constant dense<true> : " + mask_type);
  std::string props = op.param(keys::descending) ? " <{descending = true}>" : "";
  std::string k = ctx.use(op.operands[0]);
  auto sort = [&](const Value& values) {
    std::string out = ctx.fresh(), v = ctx.use(values), vt = value_type(array_of(values)), kt = value_type(keys);
    ctx.line(out + ":3 = \"tpu.sort\"(" + k + ", " + v + ", " + mask + ")" + props + " : (" + kt + ", " + vt + ", " + mask_type +
             ") -> (" + mask_type + ", " + kt + ", " + vt + ")");
    return out;
  };
  if (op.operands.size() == 1) {
    ctx.alias(op.results[0], sort(op.operands[0]) + "#1");
    return;
  }
  for (size_t i = 1; i < op.operands.size(); ++i) {
    std::string r = sort(op.operands[i]);
    if (i == 1) ctx.alias(op.results[0], r + "#1");
    ctx.alias(op.results[i], r + "#2");
  }
}

void lower_rev(EmitContext& ctx, const Op& op, const LoweringTable&) {
  const ArrayType& x = array_of(op.operands[0]);
  if (x.shape.size() != 1 || op.param(keys::dimensions) != std::vector<int64_t>{0})
    throw ctx.error(op, "Invalid dimensions for SC lax.rev: " + shape_str(op.param(keys::dimensions)));
  ArrayType lanes{DType::i32, x.shape};
  std::string last = i32_constant(ctx, x.shape[0] - 1);
  std::string lasts = put(ctx, "vector.broadcast " + last + " : i32 to " + value_type(lanes));
  std::string iota = lane_iota(ctx, lanes, 0);
  std::string reversed = put(ctx, "arith.subi " + lasts + ", " + iota + " : " + value_type(lanes));
  put(ctx, generic("tpu.dynamic_gather", {ctx.use(op.operands[0]), reversed}, "dimensions = " + vec::dense_array("i32", {0}),
                   {value_type(x), value_type(lanes)}, value_type(x)),
      op.results[0]);
}

}  // namespace

void add_sc_value_rules(LoweringTable& t) {
  t.set("iota", lower_iota);
  t.set("sort", lower_sort);
  t.set("rev", lower_rev);
}

}  // namespace tessera::backends::mosaic
