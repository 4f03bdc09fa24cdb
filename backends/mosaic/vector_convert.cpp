// Conversions between dtypes, as Pallas's `_convert_element_type_lowering_rule`
// chooses them (jax/_src/pallas/mosaic/lowering.py): float widths by
// extf / truncf, integer widths by extsi / extui / trunci (sign changes are
// free), float <-> integer by fptosi / fptoui / sitofp / uitofp, bool to an
// integer by extui; bool to float goes through i32, and a conversion to bool
// is `x != 0` on 32-bit values. bitcast_convert_type keeps the bits.
#include "backends/mosaic/mlir_types.h"
#include "backends/mosaic/vector_groups.h"
#include "backends/mosaic/vector_values.h"

namespace tessera::backends::mosaic {
namespace {

using namespace vec;

int bits(DType d) { return is_float(d) ? dtype_bytes(d) * 8 : int_bits(d); }

// `%r = OP x : A to B`.
std::string cast(EmitContext& ctx, const char* op, const std::string& x, const ArrayType& from, DType to,
                 const Var* result = nullptr) {
  return put(ctx, std::string(op) + " " + x + " : " + value_type(from) + " to " + value_type(ArrayType{to, from.shape}), result);
}

// The one op converting `from` to `to`, or null when it takes several.
const char* single_cast(DType from, DType to) {
  if (is_float(from) && is_float(to)) {
    if (bits(from) < bits(to)) return "arith.extf";
    if (bits(from) > bits(to)) return "arith.truncf";
    return nullptr;  // bf16 <-> f16
  }
  if (is_int(from) && is_int(to)) {
    if (bits(from) < bits(to)) return is_unsigned_int(from) ? "arith.extui" : "arith.extsi";
    if (bits(from) > bits(to)) return "arith.trunci";
    return "";  // the same bits, read with another sign
  }
  if (is_float(from) && is_int(to)) return is_unsigned_int(to) ? "arith.fptoui" : "arith.fptosi";
  if (is_int(from) && is_float(to)) return is_unsigned_int(from) ? "arith.uitofp" : "arith.sitofp";
  if (is_bool(from) && is_int(to)) return "arith.extui";
  return nullptr;
}

std::string convert(EmitContext& ctx, const Op& op, const std::string& x, const ArrayType& from, DType to,
                    const Var* result) {
  if (from.dtype == to) {
    if (result) ctx.alias(result, x);
    return x;
  }
  if (bits(to) == 64) throw ctx.error(op, "64-bit types are not supported");
  if (const char* mlir_op = single_cast(from.dtype, to)) {
    if (*mlir_op) return cast(ctx, mlir_op, x, from, to, result);
    if (result) ctx.alias(result, x);
    return x;
  }
  if (is_bool(from.dtype)) {  // bool -> float: through i32, and f32 for a narrower float
    std::string i = cast(ctx, "arith.extui", x, from, DType::i32);
    if (bits(to) >= 32) return convert(ctx, op, i, ArrayType{DType::i32, from.shape}, to, result);
    std::string f = cast(ctx, "arith.sitofp", i, ArrayType{DType::i32, from.shape}, DType::f32);
    return cast(ctx, "arith.truncf", f, ArrayType{DType::f32, from.shape}, to, result);
  }
  if (is_bool(to)) {  // x != 0, on 32-bit values
    std::string v = x;
    ArrayType wide = from;
    if (bits(from.dtype) < 32) {
      wide.dtype = is_float(from.dtype) ? DType::f32 : is_unsigned_int(from.dtype) ? DType::u32 : DType::i32;
      v = convert(ctx, op, x, from, wide.dtype, nullptr);
    }
    std::string zero = constant_on(ctx, wide.dtype, 0, from.shape);
    return compare(ctx, is_float(wide.dtype) ? "one" : "ne", wide.dtype, v, zero, from.shape, result);
  }
  throw ctx.error(op, "Unsupported cast: " + std::string(dtype_name(from.dtype)) + " -> " + std::string(dtype_name(to)));
}

void lower_convert(EmitContext& ctx, const Op& op, const LoweringTable&) {
  convert(ctx, op, ctx.use(op.operands[0]), array_of(op.operands[0]), op.param(keys::new_dtype), op.results[0]);
}

void lower_bitcast_convert(EmitContext& ctx, const Op& op, const LoweringTable&) {
  const ArrayType& in = array_of(op.operands[0]);
  DType to = op.param(keys::new_dtype);
  if (dtype_bytes(in.dtype) != dtype_bytes(to)) throw ctx.error(op, "Changing bitwidths not supported.");
  bitcast(ctx, ctx.use(op.operands[0]), in, to, op.results[0]);
}

}  // namespace

void add_convert_rules(LoweringTable& t) {
  t.set("convert_element_type", lower_convert);
  t.set("bitcast_convert_type", lower_bitcast_convert);
}

}  // namespace tessera::backends::mosaic
