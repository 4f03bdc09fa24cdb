// Import rules: how each Mosaic op becomes tessera ops.
//
// The importer (mosaic_import.h) walks a kernel body op by op and looks each
// op up in one table, keyed by op name, the mirror of the emitter's table in
// backends/mosaic/. Two kinds of rule:
//
//  - value rules (value_rules_*.cpp): ops whose operands and results are all
//    values (scalars and vectors): `arith.*`, `math.*`, `vector.broadcast`,
//    `tpu.matmul`, ... They get the operands already translated and return
//    the results, built with the Builder;
//  - structural rules (the body translator): ops on memrefs, semaphores, DMAs,
//    regions and terminators (`vector.load`, `tpu.memref_slice`,
//    `tpu.enqueue_dma`, `scf.if`, ...), which need the translator's state.
//
// Every op the JAX TPU lowering can emit has an entry in `import_coverage()`:
// a rule, or the reason there is none. An op with neither is a located error
// naming it.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "frontends/mosaic/mlir_ast.h"
#include "ir/builder.h"
#include "ir/type.h"
#include "ir/value.h"

namespace tessera::mlir_text {

// ---- Types ------------------------------------------------------------------
// tessera's dtype for an MLIR scalar or element type: `index` is i32 (Mosaic
// indices are 32-bit), `i1` is bool. Throws a located Error for others.
DType import_dtype(const MType& t, const Loc& loc);
// tessera's array type of a scalar (rank 0) or vector type.
Type import_value_type(const MType& t, const Loc& loc);

// ---- Value rules --------------------------------------------------------------
struct ValueRuleContext {
  Builder& b;                         // location already set to the op's
  const Operation& op;
  std::vector<Value> operands;        // one per op operand, translated
  // Throws an Error at the op's location: "`arith.foo`: message".
  [[noreturn]] void fail(const std::string& message) const;
  // The tessera type of result `i` (from op.result_types).
  Type result_type(size_t i) const;
};
using ValueRule = std::function<std::vector<Value>(ValueRuleContext&)>;

// Op name -> value rule.
const std::map<std::string, ValueRule, std::less<>>& value_rules();

// ---- Coverage ------------------------------------------------------------------
struct CoverageEntry {
  std::string_view op;      // "arith.addf"
  std::string_view status;  // "value rule", "structural", or "unsupported"
  std::string_view note;    // what it becomes, or why it is refused
};
// Every op of the Mosaic vocabulary the JAX 0.11 TPU lowering emits (and that
// `tessera emit mosaic` writes), in dialect order.
const std::vector<CoverageEntry>& import_coverage();
// The coverage entry of `op`, or null when the op is not in the table.
const CoverageEntry* find_coverage(std::string_view op);

}  // namespace tessera::mlir_text
