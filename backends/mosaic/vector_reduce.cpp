// Reductions, as jax/_src/pallas/mosaic/lowering.py writes them:
// `vector.multi_reduction` with an identity-splat accumulator (floats and i32
// only); a reduction to a scalar reduces a leading unit dim added by a
// `vector.shape_cast`, then `vector.extract`s; reduce_and / reduce_or are a
// min / max over 0.0 / 1.0; argmax / argmin are `tpu.reduce_index`.
//
// cumsum has no rule in Pallas's TensorCore lowering (jnp.cumsum in a TC
// kernel fails there with "Unimplemented primitive"); tessera writes the
// log-step scan a Pallas kernel writes by hand with pltpu.roll: ceil(log2 n)
// rounds of `tpu.dynamic_rotate` by 1, 2, 4, ..., a mask from `tpu.iota`
// that keeps the rotated-in elements out, and an add.
#include <limits>
#include <map>

#include "backends/mosaic/constants.h"
#include "backends/mosaic/mlir_types.h"
#include "backends/mosaic/vector_groups.h"
#include "backends/mosaic/vector_values.h"

namespace tessera::backends::mosaic {
namespace {

using namespace vec;

struct Reduction {
  const char* float_kind;
  const char* int_kind;
  double float_identity;
  int64_t int_identity;
};

const std::map<std::string_view, Reduction>& reductions() {
  static const double inf = std::numeric_limits<double>::infinity();
  static const std::map<std::string_view, Reduction> table = {
      {"reduce_sum", {"add", "add", 0.0, 0}},
      {"reduce_max", {"maximumf", "maxsi", -inf, std::numeric_limits<int32_t>::min()}},
      {"reduce_min", {"minimumf", "minsi", inf, std::numeric_limits<int32_t>::max()}},
  };
  return table;
}

// `name` of `x` over `axes` into `out`.
std::string reduce(EmitContext& ctx, const Op& op, std::string_view name, const std::string& x, const ArrayType& in,
                   std::vector<int64_t> axes, const ArrayType& out, const Var* result) {
  if (axes.empty() || in.shape.empty()) {
    if (result) ctx.alias(result, x);
    return x;
  }
  const Reduction& r = reductions().at(name);
  Literal identity;
  const char* kind = nullptr;
  if (is_float(in.dtype)) {
    kind = r.float_kind, identity = Literal::of_float(in.dtype, r.float_identity);
  } else if (in.dtype == DType::i32) {
    kind = r.int_kind, identity = Literal::of_int(in.dtype, r.int_identity);
  } else if (is_unsigned_int(in.dtype)) {
    throw ctx.error(op, "Reductions over unsigned integers not implemented.");
  } else {
    throw ctx.error(op, "Reductions over " + std::string(dtype_name(in.dtype)) + " not implemented.");
  }
  std::string src = x;
  ArrayType from = in, to = out;
  if (out.shape.empty()) {  // through a leading unit dim: Mosaic reduces to vectors
    from.shape.insert(from.shape.begin(), 1);
    for (int64_t& a : axes) ++a;
    to.shape = {1};
    src = put(ctx, "vector.shape_cast " + x + " : " + value_type(in) + " to " + value_type(from));
  }
  std::string acc = splat_constant(ctx, identity, to.shape);
  std::string reduced = put(ctx, "vector.multi_reduction <" + std::string(kind) + ">, " + src + ", " + acc + " " + int_list(axes) +
                                     " : " + value_type(from) + " to " + value_type(to),
                            out.shape.empty() ? nullptr : result);
  if (!out.shape.empty()) return reduced;
  return put(ctx, "vector.extract " + reduced + "[0] : " + value_type(out) + " from " + value_type(to), result);
}

void lower_reduce(EmitContext& ctx, const Op& op, const LoweringTable&) {
  reduce(ctx, op, op.name(), ctx.use(op.operands[0]), array_of(op.operands[0]), op.param(keys::axes), result_of(op),
         op.results[0]);
}

// reduce_and / reduce_or of bools: min / max of where(x, 1.0, 0.0), then > 0.
void lower_reduce_bool(EmitContext& ctx, const Op& op, const LoweringTable&) {
  const ArrayType& in = array_of(op.operands[0]);
  const ArrayType& out = result_of(op);
  if (!is_bool(in.dtype))
    throw ctx.error(op, op.name() + " of " + std::string(dtype_name(in.dtype)) + " is not supported (bool only)");
  ArrayType f{DType::f32, in.shape}, fo{DType::f32, out.shape};
  std::string one = constant_on(ctx, DType::f32, 1, in.shape), zero = constant_on(ctx, DType::f32, 0, in.shape);
  std::string as_float = select(ctx, ctx.use(op.operands[0]), in.shape, one, zero, f);
  std::string r = reduce(ctx, op, op.name() == "reduce_and" ? "reduce_min" : "reduce_max", as_float, f, op.param(keys::axes), fo,
                         nullptr);
  compare(ctx, "ogt", DType::f32, r, constant_on(ctx, DType::f32, 0, out.shape), out.shape, op.results[0]);
}

// argmax / argmin: `tpu.reduce_index` (f32 -> i32, bf16 -> i16 or i32); 1-D
// through a leading unit dim.
void lower_arg_reduce(EmitContext& ctx, const Op& op, const LoweringTable&) {
  ArrayType in = array_of(op.operands[0]);
  const ArrayType& out = result_of(op);
  DType index = op.param(keys::index_dtype);
  if (!((in.dtype == DType::f32 && index == DType::i32) || (in.dtype == DType::bf16 && (index == DType::i16 || index == DType::i32))))
    throw ctx.error(op, "Unsupported combination of input dtype (" + std::string(dtype_name(in.dtype)) + ") and index_dtype (" +
                            std::string(dtype_name(index)) + ") for reduce_index");
  std::string x = ctx.use(op.operands[0]);
  int64_t axis = op.param(keys::axis);
  bool one_d = in.shape.size() == 1;
  Shape out_shape = out.shape;
  if (one_d) {
    ArrayType wide{in.dtype, {1, in.shape[0]}};
    x = put(ctx, "vector.shape_cast " + x + " : " + value_type(in) + " to " + value_type(wide));
    in = wide, axis += 1, out_shape.insert(out_shape.begin(), 1);
  }
  DType native = in.dtype == DType::bf16 ? DType::i16 : DType::i32;
  ArrayType native_out{native, out_shape};
  std::string kind = op.name() == "argmax" ? "arg_max" : "arg_min";
  bool direct = !one_d && native == index;
  std::string r = put(ctx, generic("tpu.reduce_index", {x}, "axis = " + std::to_string(axis) + " : i32, kind = #tpu.reduction_kind<" + kind + ">",
                                   {value_type(in)}, value_type(native_out)),
                      direct ? op.results[0] : nullptr);
  if (direct) return;
  if (native != index) {
    ArrayType widened{index, out_shape};
    r = put(ctx, "arith.extsi " + r + " : " + value_type(native_out) + " to " + value_type(widened), one_d ? nullptr : op.results[0]);
    native_out = widened;
  }
  if (one_d) put(ctx, "vector.extract " + r + "[0] : " + value_type(out) + " from " + value_type(native_out), op.results[0]);
}

// cumsum: Hillis-Steele steps s = 1, 2, 4, ... < n: acc += (i >= s) ? roll(acc, s) : 0
// along the axis (reverse: roll by n - s, kept where i < n - s).
void lower_cumsum(EmitContext& ctx, const Op& op, const LoweringTable&) {
  const ArrayType& t = result_of(op);
  int64_t axis = op.param(keys::axis);
  bool reverse = op.param(keys::reverse);
  int64_t n = t.shape[static_cast<size_t>(axis)];
  std::string acc = ctx.use(op.operands[0]);
  if (n <= 1) {
    ctx.alias(op.results[0], acc);
    return;
  }
  std::string type = value_type(t);
  std::string pos = emit_iota(ctx, t.shape, axis, DType::i32);
  std::string zero = splat_constant(ctx, literal_of(t.dtype, 0), t.shape);
  const char* add = is_float(t.dtype) ? "arith.addf" : "arith.addi";
  for (int64_t s = 1; s < n; s *= 2) {
    int64_t by = reverse ? n - s : s;
    std::string amount = i32_constant(ctx, by);
    std::string rolled = put(ctx, generic("tpu.dynamic_rotate", {acc, amount}, "dimension = " + std::to_string(axis) + " : si32",
                                          {type, "i32"}, type));
    std::string bound = splat_constant(ctx, Literal::of_int(DType::i32, by), t.shape);
    std::string keep = compare(ctx, reverse ? "slt" : "sge", DType::i32, pos, bound, t.shape);
    std::string part = select(ctx, keep, t.shape, rolled, zero, t);
    acc = put(ctx, pretty(add, {acc, part}, type), s * 2 >= n ? op.results[0] : nullptr);
  }
}

}  // namespace

void add_reduce_rules(LoweringTable& t) {
  for (const auto& entry : reductions()) t.set(entry.first, lower_reduce);
  t.set("reduce_and", lower_reduce_bool);
  t.set("reduce_or", lower_reduce_bool);
  t.set("argmax", lower_arg_reduce);
  t.set("argmin", lower_arg_reduce);
  t.set("cumsum", lower_cumsum);
}

}  // namespace tessera::backends::mosaic
