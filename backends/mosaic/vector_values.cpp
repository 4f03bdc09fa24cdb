#include "backends/mosaic/vector_values.h"

#include <cmath>

#include "backends/mosaic/constants.h"
#include "backends/mosaic/mlir_types.h"

namespace tessera::backends::mosaic::vec {

std::string put(EmitContext& ctx, const std::string& rhs, const Var* result) {
  // Temporaries are named %t, %t_1, ...: a number could be the name a tessera
  // value (`%2`) asks for later, and `%2_1` is not an MLIR name.
  std::string name = result ? ctx.def(result) : ctx.fresh("t");
  ctx.line(name + " = " + rhs);
  return name;
}

const ArrayType& array_of(const Value& v) { return v.type().array_type(); }
const ArrayType& result_of(const Op& op, int k) { return op.results.at(static_cast<size_t>(k))->type.array_type(); }

std::string broadcast_scalar(EmitContext& ctx, const std::string& s, DType d, const Shape& shape) {
  if (shape.empty()) return s;
  return put(ctx, "vector.broadcast " + s + " : " + element_type(d) + " to " + vector_type(shape, d));
}

std::string operand_on(EmitContext& ctx, const Value& v, const Shape& shape) {
  std::string name = ctx.use(v);
  if (array_of(v).shape.empty()) return broadcast_scalar(ctx, name, array_of(v).dtype, shape);
  return name;
}

Literal literal_of(DType d, double value) {
  return is_float(d) ? Literal::of_float(d, value) : Literal::of_int(d, static_cast<int64_t>(value));
}

std::string constant_on(EmitContext& ctx, DType d, double value, const Shape& shape) {
  return broadcast_scalar(ctx, scalar_constant(ctx, literal_of(d, value)), d, shape);
}

std::string splat(EmitContext& ctx, const Literal& l, const Shape& shape) {
  return shape.empty() ? scalar_constant(ctx, l) : splat_constant(ctx, l, shape);
}

std::string pretty(const std::string& op, const std::vector<std::string>& args, const std::string& type) {
  std::string out = op;
  for (size_t i = 0; i < args.size(); ++i) out += (i ? ", " : " ") + args[i];
  return out + " : " + type;
}

std::string generic(const std::string& op, const std::vector<std::string>& args, const std::string& props,
                    const std::vector<std::string>& arg_types, const std::string& result_type) {
  std::string out = "\"" + op + "\"(";
  for (size_t i = 0; i < args.size(); ++i) out += (i ? ", " : "") + args[i];
  out += ")";
  if (!props.empty()) out += " <{" + props + "}>";
  out += " : (";
  for (size_t i = 0; i < arg_types.size(); ++i) out += (i ? ", " : "") + arg_types[i];
  return out + ") -> " + (result_type.empty() ? "()" : result_type);
}

std::string compare(EmitContext& ctx, const std::string& pred, DType d, const std::string& a, const std::string& b,
                    const Shape& shape, const Var* result) {
  const char* op = is_float(d) ? "arith.cmpf " : "arith.cmpi ";
  std::string type = shape.empty() ? element_type(d) : vector_type(shape, d);
  return put(ctx, op + pred + ", " + a + ", " + b + " : " + type, result);
}

std::string select(EmitContext& ctx, const std::string& c, const Shape& cond_shape, const std::string& a,
                   const std::string& b, const ArrayType& type, const Var* result) {
  // A rank-0 condition picks whole values; its type is then not written.
  std::string types = cond_shape.empty() ? value_type(type) : vector_type(cond_shape, DType::i1) + ", " + value_type(type);
  return put(ctx, "arith.select " + c + ", " + a + ", " + b + " : " + types, result);
}

std::string bitcast(EmitContext& ctx, const std::string& x, const ArrayType& from, DType to, const Var* result) {
  ArrayType out{to, from.shape};
  if (from.shape.empty())
    return put(ctx, "arith.bitcast " + x + " : " + value_type(from) + " to " + value_type(out), result);
  return put(ctx, generic("tpu.bitcast", {x}, "", {value_type(from)}, value_type(out)), result);
}

std::string int_list(const std::vector<int64_t>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return out + "]";
}

std::string dense_array(const char* elem, const std::vector<int64_t>& v) {
  std::string out = std::string("array<") + elem;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : ": ") + std::to_string(v[i]);
  return out + ">";
}

}  // namespace tessera::backends::mosaic::vec
