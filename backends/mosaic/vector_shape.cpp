// Shapes and layouts of values, as jax/_src/pallas/mosaic/lowering.py writes
// them: broadcast_in_dim as `vector.shape_cast` then `vector.broadcast`,
// reshape / squeeze / expand_dims as `vector.shape_cast` (`vector.extract`
// to a scalar, `vector.broadcast` from one), transpose as `tpu.transpose`,
// iota as `tpu.iota` (1-D through a 2-D one), concatenate and pad as
// `tpu.concatenate`, slice and split as `vector.extract_strided_slice`, roll
// as `tpu.dynamic_rotate` (pltpu.roll), take_along_axis as `tpu.dynamic_gather`.
// An identity reshape or broadcast writes no op.
#include <algorithm>

#include "backends/mosaic/constants.h"
#include "backends/mosaic/mlir_types.h"
#include "backends/mosaic/vector_groups.h"
#include "backends/mosaic/vector_values.h"

namespace tessera::backends::mosaic {
namespace {

using namespace vec;

std::string shape_cast(EmitContext& ctx, const std::string& x, const ArrayType& from, const Shape& to,
                       const Var* result = nullptr) {
  return put(ctx, "vector.shape_cast " + x + " : " + value_type(from) + " to " + vector_type(to, from.dtype), result);
}

// The element at index 0... of `x` (a scalar), or its row 0 when `to` has a rank.
std::string extract_first(EmitContext& ctx, const std::string& x, const ArrayType& from, const ArrayType& to,
                          const Var* result = nullptr) {
  size_t n = from.shape.size() - to.shape.size();
  return put(ctx, "vector.extract " + x + int_list(std::vector<int64_t>(n, 0)) + " : " + value_type(to) + " from " +
                      value_type(from), result);
}

// Any change of shape that keeps the elements in row-major order.
void lower_reshape(EmitContext& ctx, const Op& op, const LoweringTable&) {
  const ArrayType& in = array_of(op.operands[0]);
  const ArrayType& out = result_of(op);
  std::string x = ctx.use(op.operands[0]);
  if (in.shape == out.shape) ctx.alias(op.results[0], x);
  else if (in.shape.empty()) put(ctx, "vector.broadcast " + x + " : " + value_type(in) + " to " + value_type(out), op.results[0]);
  else if (out.shape.empty()) extract_first(ctx, x, in, out, op.results[0]);
  else shape_cast(ctx, x, in, out.shape, op.results[0]);
}

void lower_squeeze(EmitContext& ctx, const Op& op, const LoweringTable& t) {
  const ArrayType& out = result_of(op);
  if (out.shape.empty() && dtype_bytes(out.dtype) != 4)
    throw ctx.error(op, "Only arrays with 32-bit element types can be converted to scalars, but got: " +
                            std::string(dtype_name(out.dtype)) + ". Try casting the input before squeezing the scalar.");
  lower_reshape(ctx, op, t);
}

// Operand dims keep their place among unit dims (shape_cast), then the unit
// dims stretch (broadcast).
void lower_broadcast_in_dim(EmitContext& ctx, const Op& op, const LoweringTable&) {
  const ArrayType& in = array_of(op.operands[0]);
  const ArrayType& out = result_of(op);
  std::string x = ctx.use(op.operands[0]);
  if (in.shape == out.shape) {
    ctx.alias(op.results[0], x);
    return;
  }
  if (!in.shape.empty()) {
    Shape placed(out.shape.size(), 1);
    const auto& dims = op.param(keys::broadcast_dimensions);
    for (size_t i = 0; i < dims.size(); ++i) placed[static_cast<size_t>(dims[i])] = in.shape[i];
    if (placed == out.shape) {
      shape_cast(ctx, x, in, placed, op.results[0]);
      return;
    }
    if (placed != in.shape) x = shape_cast(ctx, x, in, placed);
    put(ctx, "vector.broadcast " + x + " : " + vector_type(placed, in.dtype) + " to " + value_type(out), op.results[0]);
    return;
  }
  put(ctx, "vector.broadcast " + x + " : " + value_type(in) + " to " + value_type(out), op.results[0]);
}

void lower_transpose(EmitContext& ctx, const Op& op, const LoweringTable&) {
  const ArrayType& in = array_of(op.operands[0]);
  std::string x = ctx.use(op.operands[0]);
  if (in.shape.empty()) {
    ctx.alias(op.results[0], x);
    return;
  }
  put(ctx, generic("tpu.transpose", {x}, "permutation = " + dense_array("i64", op.param(keys::permutation)), {value_type(in)},
                   value_type(result_of(op))), op.results[0]);
}

// `tpu.iota` counts along `dimension` in an integer vector; a 1-D iota is row
// 0 of a (1, n) one, as Pallas builds it. A float iota (tpu.iota is integer
// only) converts an i32 one.
std::string iota(EmitContext& ctx, const Shape& shape, int64_t dimension, DType d, const Var* result = nullptr) {
  DType int_type = is_float(d) ? DType::i32 : d;
  ArrayType out{int_type, shape};
  const Var* direct = is_float(d) ? nullptr : result;
  std::string v;
  if (shape.size() == 1) {
    ArrayType wide{int_type, {1, shape[0]}};
    std::string two_d = put(ctx, generic("tpu.iota", {}, "dimensions = array<i32: 1>", {}, value_type(wide)));
    v = extract_first(ctx, two_d, wide, out, direct);
  } else {
    v = put(ctx, generic("tpu.iota", {}, "dimensions = " + dense_array("i32", {dimension}), {}, value_type(out)), direct);
  }
  if (!is_float(d)) return v;
  return put(ctx, "arith.sitofp " + v + " : " + value_type(out) + " to " + value_type(ArrayType{d, shape}), result);
}

void lower_iota(EmitContext& ctx, const Op& op, const LoweringTable&) {
  iota(ctx, op.param(keys::shape), op.param(keys::dimension), op.param(keys::dtype), op.results[0]);
}

std::string concatenate(EmitContext& ctx, const std::vector<std::string>& xs, const std::vector<std::string>& types,
                        int64_t dimension, const ArrayType& out, const Var* result = nullptr) {
  return put(ctx, generic("tpu.concatenate", xs, "dimension = " + std::to_string(dimension) + " : i32", types, value_type(out)),
             result);
}

void lower_concatenate(EmitContext& ctx, const Op& op, const LoweringTable&) {
  std::vector<std::string> xs, types;
  for (const Value& v : op.operands) xs.push_back(ctx.use(v)), types.push_back(value_type(array_of(v)));
  concatenate(ctx, xs, types, op.param(keys::dimension), result_of(op), op.results[0]);
}

// repeat: `tpu.repeat` is canonicalized into a `tpu.concatenate` of the
// copies (jax/_src/pallas/mosaic/lowering.py lowers pltpu.repeat to it);
// emitting the concatenate directly keeps the output checkable.
void lower_repeat(EmitContext& ctx, const Op& op, const LoweringTable&) {
  std::string x = ctx.use(op.operands[0]), type = value_type(array_of(op.operands[0]));
  auto copies = static_cast<size_t>(op.param(keys::repeats));
  concatenate(ctx, std::vector<std::string>(copies, x), std::vector<std::string>(copies, type), op.param(keys::axis),
              result_of(op), op.results[0]);
}

std::string strided_slice(EmitContext& ctx, const std::string& x, const ArrayType& in, const std::vector<int64_t>& offsets,
                          const ArrayType& out, const Var* result) {
  std::vector<int64_t> ones(in.shape.size(), 1);
  return put(ctx, "vector.extract_strided_slice " + x + " {offsets = " + int_list(offsets) + ", sizes = " + int_list(out.shape) +
                      ", strides = " + int_list(ones) + "} : " + value_type(in) + " to " + value_type(out), result);
}

void lower_slice(EmitContext& ctx, const Op& op, const LoweringTable&) {
  const auto& strides = op.param(keys::strides);
  if (std::any_of(strides.begin(), strides.end(), [](int64_t s) { return s != 1; }))
    throw ctx.error(op, "slice with strides other than 1 is not supported (vector.extract_strided_slice takes unit strides)");
  strided_slice(ctx, ctx.use(op.operands[0]), array_of(op.operands[0]), op.param(keys::start_indices), result_of(op),
                op.results[0]);
}

void lower_split(EmitContext& ctx, const Op& op, const LoweringTable&) {
  const ArrayType& in = array_of(op.operands[0]);
  std::string x = ctx.use(op.operands[0]);
  size_t axis = static_cast<size_t>(op.param(keys::axis));
  std::vector<int64_t> offsets(in.shape.size(), 0);
  for (size_t k = 0; k < op.results.size(); ++k) {
    strided_slice(ctx, x, in, offsets, result_of(op, static_cast<int>(k)), op.results[k]);
    offsets[axis] += result_of(op, static_cast<int>(k)).shape[axis];
  }
}

// pad: a block of the padding value concatenated before and after each padded
// dim (Pallas's rule; negative padding, which crops, is not supported there).
void lower_pad(EmitContext& ctx, const Op& op, const LoweringTable&) {
  ArrayType cur = array_of(op.operands[0]);
  if (cur.shape.empty()) throw ctx.error(op, "pad: Only vector types are supported.");
  const auto& lo = op.param(keys::low);
  const auto& hi = op.param(keys::high);
  std::string x = ctx.use(op.operands[0]);
  const Value& pad_value = op.operands[1];
  for (size_t d = 0; d < cur.shape.size(); ++d)
    if (lo[d] < 0 || hi[d] < 0) throw ctx.error(op, "pad: negative padding is not supported");
  for (size_t d = 0; d < cur.shape.size(); ++d) {
    for (int side = 0; side < 2; ++side) {
      int64_t n = side == 0 ? lo[d] : hi[d];
      if (n == 0) continue;
      Shape s = cur.shape;
      s[d] = n;
      std::string pad = pad_value.is_literal() ? splat_constant(ctx, pad_value.literal(), s)
                                               : broadcast_scalar(ctx, ctx.use(pad_value), cur.dtype, s);
      ArrayType next = cur;
      next.shape[d] += n;
      std::vector<std::string> xs = side == 0 ? std::vector<std::string>{pad, x} : std::vector<std::string>{x, pad};
      std::vector<std::string> types = side == 0 ? std::vector<std::string>{vector_type(s, cur.dtype), value_type(cur)}
                                                 : std::vector<std::string>{value_type(cur), vector_type(s, cur.dtype)};
      bool last = next.shape == result_of(op).shape;
      x = concatenate(ctx, xs, types, static_cast<int64_t>(d), next, last ? op.results[0] : nullptr);
      cur = next;
    }
  }
  if (cur.shape == array_of(op.operands[0]).shape) ctx.alias(op.results[0], x);
}

// roll: `tpu.dynamic_rotate` by an i32 amount (pltpu.roll's semantics, which
// are jnp.roll's); a static shift is taken modulo the dim, so never negative.
void lower_roll(EmitContext& ctx, const Op& op, const LoweringTable&) {
  const ArrayType& in = array_of(op.operands[0]);
  int64_t axis = op.param(keys::axis);
  std::string amount;
  if (op.has(keys::shift)) {
    int64_t n = in.shape[static_cast<size_t>(axis)];
    amount = i32_constant(ctx, n ? ((op.param(keys::shift) % n) + n) % n : 0);
  } else {
    if (array_of(op.operands[1]).dtype != DType::i32) throw ctx.error(op, "roll: the shift must be an i32 scalar");
    amount = ctx.use(op.operands[1]);
  }
  put(ctx, generic("tpu.dynamic_rotate", {ctx.use(op.operands[0]), amount}, "dimension = " + std::to_string(axis) + " : si32",
                   {value_type(in), "i32"}, value_type(in)), op.results[0]);
}

// take_along_axis: `tpu.dynamic_gather` along one of the two minor dims (TC).
void lower_take_along_axis(EmitContext& ctx, const Op& op, const LoweringTable&) {
  const ArrayType& x = array_of(op.operands[0]);
  const ArrayType& idx = array_of(op.operands[1]);
  int64_t axis = op.param(keys::axis);
  if (axis < static_cast<int64_t>(x.shape.size()) - 2)
    throw ctx.error(op, "Only gathers along the two minormost dimensions supported on TC");
  put(ctx, generic("tpu.dynamic_gather", {ctx.use(op.operands[0]), ctx.use(op.operands[1])},
                   "dimensions = " + dense_array("i32", {axis}), {value_type(x), value_type(idx)}, value_type(result_of(op))),
      op.results[0]);
}

}  // namespace

// Shared with the reductions (cumsum's positions).
std::string emit_iota(EmitContext& ctx, const Shape& shape, int64_t dimension, DType d) { return iota(ctx, shape, dimension, d); }

void add_shape_rules(LoweringTable& t) {
  t.set("broadcast_in_dim", lower_broadcast_in_dim);
  t.set("reshape", lower_reshape);
  t.set("squeeze", lower_squeeze);
  t.set("expand_dims", lower_reshape);
  t.set("transpose", lower_transpose);
  t.set("iota", lower_iota);
  t.set("concatenate", lower_concatenate);
  t.set("slice", lower_slice);
  t.set("split", lower_split);
  t.set("repeat", lower_repeat);
  t.set("pad", lower_pad);
  t.set("roll", lower_roll);
  t.set("take_along_axis", lower_take_along_axis);
}

}  // namespace tessera::backends::mosaic
