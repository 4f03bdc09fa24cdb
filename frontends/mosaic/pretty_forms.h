// Pretty (custom) op syntax -> the generic shape: one table keyed by op name,
// one small parse function per op family (pretty_arith.cpp, pretty_vector.cpp,
// pretty_scf.cpp, pretty_tpu.cpp). Each function is called after the op name
// and fills what the generic form would hold: operands in ODS order,
// operand_types, attrs (operandSegmentSizes included where the op declares
// AttrSizedOperandSegments), result_types and regions. The formats follow the
// ops' `assemblyFormat`s (upstream MLIR's arith/math/vector/memref/scf
// dialects, jaxlib/mosaic/dialect/tpu/tpu_ops.td).
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <unordered_map>

#include "frontends/mosaic/mlir_parser.h"

namespace tessera::mlir_text {

using PrettyFormTable = std::unordered_map<std::string_view, PrettyForm>;

void add_arith_math_forms(PrettyFormTable& table);
void add_vector_memref_forms(PrettyFormTable& table);
void add_scf_func_forms(PrettyFormTable& table);
void add_tpu_forms(PrettyFormTable& table);

// ---- Building blocks the families share --------------------------------------------
// "of `arith.addf`", for messages.
std::string of(const Operation& op);
// Sets `operandSegmentSizes` (array<i32: ...>).
void set_segments(Operation& op, std::initializer_list<int64_t> sizes);
// `: T` after the operands.
MType parse_colon_type(Parser& p, const Operation& op);
// `{attrs}? : T`: the common tail of ops whose operands and result share T.
MType parse_attrs_colon_type(Parser& p, Operation& op);
// `%x {attrs}? : A <sep> B` (sep `to`, `->`, `from`): one operand of type A,
// one result of type B.
void parse_one_to_one(Parser& p, Operation& op, std::string_view sep);
// `%a, ... : T, ...` (nothing when no value follows), appended to the
// operands and operand types.
void parse_values_colon_types(Parser& p, Operation& op);
// `-> (i32, i32)` or `-> i32`.
std::vector<MType> parse_arrow_results(Parser& p, const Operation& op);

}  // namespace tessera::mlir_text
