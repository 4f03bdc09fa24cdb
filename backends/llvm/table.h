// The rule table of the PTX / LLVM backend: one LlvmRule per primitive (or per
// family), plus the stated reason of every primitive it cannot lower.
//
// A rule lowers one op inside a kernel: it reads its operands through the
// Lowering (kernel_lowering.h) and defines its results there. The same rules
// serve both targets (`ptx` and `llvm`, host or nvptx); a rule that differs
// per target asks `Lowering::target`. It is the same RuleTable type as every
// other consumer's, so backend.h's `rules()`, the coverage tests and
// `unsupported_report` see this backend like any other.
//
// This header does not include LLVM: backend.cpp and the tests use it in every
// build.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "backends/lowering.h"
#include "ir/primitive.h"

namespace tessera::backends::llvm_lowering {

struct Lowering;
// The reason of the primitives only a TPU has (DMAs, semaphores, meshes).
inline constexpr const char* kTpuOnly = "TPU-only";
using LlvmRule = std::function<void(Lowering&, const Op&)>;

// The one RuleTable type (ir/rule_table.h), named by the target; `at` gives
// the backend's missing-rule error.
class LlvmTable : public RuleTable<LlvmRule> {
 public:
  explicit LlvmTable(std::string target) : RuleTable<LlvmRule>(std::move(target)) {}
  const std::string& target() const { return name(); }
  // The rule of `op`, or the located error "TARGET: no lowering for `NAME`: REASON".
  const LlvmRule& at(const Op& op) const;
};

// The tables of the two backends ("ptx" and "llvm"); the same rules, the
// target name in their messages differs.
const LlvmTable& ptx_table();
const LlvmTable& llvm_table();

// ---- Who fills the table (each function adds its family's rules) ----------
// Memory, control and grid rules: memory_rules.cpp, control_rules.cpp, grid_rules.cpp, table.cpp.
void add_memory_rules(LlvmTable& t);     // get, swap, addupdate, load, store, ref transforms
void add_control_rules(LlvmTable& t);    // cond, for, while, scan, run_scoped, call
void add_grid_rules(LlvmTable& t);       // program_id, num_programs
void add_unsupported_reasons(LlvmTable& t);  // TPU-only primitives and their reasons
// Value rules: value_elementwise.cpp, value_convert.cpp, value_shape.cpp,
// value_reduce.cpp, value_dot.cpp.
void add_elementwise_rules(LlvmTable& t);
void add_convert_rules(LlvmTable& t);
void add_shape_rules(LlvmTable& t);
void add_reduce_rules(LlvmTable& t);
void add_dot_rules(LlvmTable& t);

}  // namespace tessera::backends::llvm_lowering
