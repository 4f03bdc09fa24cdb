// dot_general, as jax/_src/pallas/mosaic/lowering.py writes it: `tpu.matmul`
// of the operands and a zero accumulator of the result type, with Mosaic's
// dimension numbers (contracting, non-contracting, the output's (operand,
// dim) order, batch) and `transpose_lhs_hint = false` (Pallas's default, and
// the attribute is required). An accumulation into a running sum is a
// separate `arith.addf` in the kernel, as in Pallas. The one special case: an
// (m, k) x (1, k)^T product not of two f32 operands is a multiply and a
// lane reduction, as Pallas writes it. tessera's dot_general has no precision
// parameter, so no `precision` attribute is written (Mosaic's default).
// Mosaic's verifier wants a 32-bit accumulator: a bf16 or i8 result is an
// error at the op, not text Mosaic would reject.
#include <algorithm>

#include "backends/mosaic/constants.h"
#include "backends/mosaic/mlir_types.h"
#include "backends/mosaic/vector_groups.h"
#include "backends/mosaic/vector_values.h"

namespace tessera::backends::mosaic {
namespace {

using namespace vec;

std::vector<int64_t> free_dims(int rank, const std::vector<int64_t>& contracting, const std::vector<int64_t>& batch) {
  std::vector<int64_t> out;
  for (int64_t d = 0; d < rank; ++d)
    if (std::find(contracting.begin(), contracting.end(), d) == contracting.end() &&
        std::find(batch.begin(), batch.end(), d) == batch.end())
      out.push_back(d);
  return out;
}

// #tpu.dot_dimension_numbers<[lc], [rc], [lfree], [rfree], [out order], [lb], [rb]>
std::string dimension_numbers(const Op& op, int lhs_rank, int rhs_rank) {
  const auto& lc = op.param(keys::lhs_contracting);
  const auto& rc = op.param(keys::rhs_contracting);
  const auto& lb = op.param(keys::lhs_batch);
  const auto& rb = op.param(keys::rhs_batch);
  std::vector<int64_t> lf = free_dims(lhs_rank, lc, lb), rf = free_dims(rhs_rank, rc, rb), order;
  for (int64_t d : lb) order.insert(order.end(), {0, d});
  for (int64_t d : lf) order.insert(order.end(), {0, d});
  for (int64_t d : rf) order.insert(order.end(), {1, d});
  return "#tpu.dot_dimension_numbers<" + int_list(lc) + ", " + int_list(rc) + ", " + int_list(lf) + ", " + int_list(rf) + ", " +
         int_list(order) + ", " + int_list(lb) + ", " + int_list(rb) + ">";
}

// (m, k) . (1, k) contracting dim 1 of both: broadcast the row, extend to the
// result dtype, multiply, reduce the lanes, shape_cast to (m, 1).
void lower_matvec(EmitContext& ctx, const Op& op, const ArrayType& a, const ArrayType& b, const ArrayType& out) {
  std::string x = ctx.use(op.operands[0]), y = ctx.use(op.operands[1]);
  ArrayType bb{b.dtype, a.shape};
  if (b.shape != a.shape) y = put(ctx, "vector.broadcast " + y + " : " + value_type(b) + " to " + value_type(bb));
  ArrayType wide{out.dtype, a.shape};
  auto extend = [&](const std::string& v, const ArrayType& t) {
    if (t.dtype == out.dtype) return v;
    if (out.dtype != DType::f32)
      throw ctx.error(op, "Unsupported preferred_element_type=" + std::string(dtype_name(out.dtype)));
    return put(ctx, "arith.extf " + v + " : " + value_type(t) + " to " + value_type(wide));
  };
  x = extend(x, a), y = extend(y, bb);
  std::string prod = put(ctx, pretty("arith.mulf", {x, y}, value_type(wide)));
  ArrayType red{out.dtype, {a.shape[0]}};
  std::string acc = splat_constant(ctx, literal_of(out.dtype, 0), red.shape);
  std::string sum = put(ctx, "vector.multi_reduction <add>, " + prod + ", " + acc + " [1] : " + value_type(wide) + " to " +
                                 value_type(red));
  put(ctx, "vector.shape_cast " + sum + " : " + value_type(red) + " to " + value_type(out), op.results[0]);
}

void lower_dot_general(EmitContext& ctx, const Op& op, const LoweringTable&) {
  const ArrayType& a = array_of(op.operands[0]);
  const ArrayType& b = array_of(op.operands[1]);
  const ArrayType& out = result_of(op);
  if (is_unsigned_int(a.dtype) || is_unsigned_int(b.dtype))
    throw ctx.error(op, "Unsigned integer dtype " + std::string(dtype_name(a.dtype)) +
                            " is not supported for dot_general (matmul) on the Pallas Mosaic TPU backend because dot_general "
                            "interprets all integer inputs as signed. Consider casting to a signed type before the dot operation.");
  if (!(out.dtype == DType::f32 || out.dtype == DType::bf16 || (is_int(out.dtype) && !is_unsigned_int(out.dtype))))
    throw ctx.error(op, "dot_general: a " + std::string(dtype_name(out.dtype)) + " result is not supported");
  if (out.shape.empty()) throw ctx.error(op, "dot_general: a rank-0 result is not supported (tpu.matmul takes vectors)");
  const auto& lc = op.param(keys::lhs_contracting);
  const auto& rc = op.param(keys::rhs_contracting);
  if (lc == std::vector<int64_t>{1} && rc == std::vector<int64_t>{1} && a.shape.size() == 2 && b.shape.size() == 2 &&
      b.shape[0] == 1 && op.param(keys::lhs_batch).empty() && !(a.dtype == DType::f32 && b.dtype == DType::f32)) {
    lower_matvec(ctx, op, a, b, out);
    return;
  }
  // Mosaic's MatmulOp verifier (jaxlib/mosaic/dialect/tpu/tpu_ops.cc): the
  // accumulator, of the result's type, must be 32-bit.
  if (dtype_bytes(out.dtype) != 4)
    throw ctx.error(op, "Expected matmul acc to be 32-bit: a " + std::string(dtype_name(out.dtype)) +
                            " dot_general result needs preferred_element_type=f32 (or i32)");
  std::string x = ctx.use(op.operands[0]), y = ctx.use(op.operands[1]);
  std::string zero = splat_constant(ctx, literal_of(out.dtype, 0), out.shape);
  std::string props = "dimension_numbers = " + dimension_numbers(op, static_cast<int>(a.shape.size()), static_cast<int>(b.shape.size())) +
                      ", transpose_lhs_hint = false";
  put(ctx, generic("tpu.matmul", {x, y, zero}, props, {value_type(a), value_type(b), value_type(out)}, value_type(out)),
      op.results[0]);
}

}  // namespace

void add_matmul_rules(LoweringTable& t) { t.set("dot_general", lower_dot_general); }

}  // namespace tessera::backends::mosaic
