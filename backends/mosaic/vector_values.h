// What every Mosaic rule on values (vregs) shares: writing `%name = ...`
// lines, naming operands with the explicit broadcasts MLIR needs, and the
// few constants and casts several rule groups build on.
//
// arith and math ops do not broadcast: an operand of rank 0 used by an op on
// vectors is first `vector.broadcast` to the result's vector type, as Pallas's
// `_bcast` does (jax/_src/pallas/mosaic/lowering.py).
#pragma once

#include <string>
#include <vector>

#include "backends/emit_context.h"
#include "ir/ir.h"

// In namespace `vec`: the driver and the memory rules (another file group)
// may name their own helpers `put` or `generic`.
namespace tessera::backends::mosaic::vec {

// Writes `%name = rhs`, naming `result` when given and a fresh temporary
// (`%t`, `%t_1`, ...) otherwise; returns the name.
std::string put(EmitContext& ctx, const std::string& rhs, const Var* result = nullptr);

const ArrayType& array_of(const Value& v);
const ArrayType& result_of(const Op& op, int k = 0);

// The name of scalar `s` (of dtype `d`) as a value of `shape`: `s` itself
// for rank 0, else a `vector.broadcast`.
std::string broadcast_scalar(EmitContext& ctx, const std::string& s, DType d, const Shape& shape);
// The name of `v` as an operand of an op on `shape` (rank-0 values broadcast).
std::string operand_on(EmitContext& ctx, const Value& v, const Shape& shape);
// `value` of dtype `d` as Pallas writes a constant operand: a scalar
// `arith.constant`, broadcast to `shape` when it has a rank.
std::string constant_on(EmitContext& ctx, DType d, double value, const Shape& shape);
// A splat `arith.constant dense<...>` of `shape` (a scalar constant for rank
// 0): how Pallas writes accumulators and masks.
std::string splat(EmitContext& ctx, const Literal& l, const Shape& shape);
// The literal `value` in dtype `d` (integers and bools from its integer part).
Literal literal_of(DType d, double value);

// `%r = OP a, b : T`: the pretty form shared by arith and math ops.
std::string pretty(const std::string& op, const std::vector<std::string>& args, const std::string& type);
// `"tpu.NAME"(args) <{props}> : (arg types) -> result type`: a tpu op in
// generic form (empty props: none written).
std::string generic(const std::string& op, const std::vector<std::string>& args, const std::string& props,
                    const std::vector<std::string>& arg_types, const std::string& result_type);

// `%r = arith.cmpi/cmpf PRED, a, b : T` over operands of dtype `d`.
std::string compare(EmitContext& ctx, const std::string& pred, DType d, const std::string& a, const std::string& b,
                    const Shape& shape, const Var* result = nullptr);
// `arith.select c, a, b`: `c` is i1 of `cond_shape` (rank 0 selects whole values).
std::string select(EmitContext& ctx, const std::string& c, const Shape& cond_shape, const std::string& a,
                   const std::string& b, const ArrayType& type, const Var* result = nullptr);
// The same bits as `to` (equal widths): `tpu.bitcast` on vectors, `arith.bitcast` on scalars.
std::string bitcast(EmitContext& ctx, const std::string& x, const ArrayType& from, DType to, const Var* result = nullptr);

// "[1, 2]" and "array<i32: 1, 2>".
std::string int_list(const std::vector<int64_t>& v);
std::string dense_array(const char* elem, const std::vector<int64_t>& v);

}  // namespace tessera::backends::mosaic::vec
