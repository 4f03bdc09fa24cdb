// The rule table of the PTX / LLVM backend: one LlvmRule per primitive (or per
// family), plus the stated reason of every primitive it cannot lower.
//
// A rule lowers one op inside a kernel: it reads its operands through the
// Lowering (kernel_lowering.h) and defines its results there. The same rules
// serve both targets (`ptx` and `llvm`, host or nvptx); a rule that differs
// per target asks `Lowering::target`. The coverage and the reasons are kept in
// a backends::LoweringTable as well, so that backend.h's `rules()`, the
// coverage test and `unsupported_report` see this backend like any other.
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

class LlvmTable {
 public:
  explicit LlvmTable(std::string target);
  const std::string& target() const { return coverage_.target(); }

  void set(std::string_view prim_name, LlvmRule rule);
  // One rule for every primitive of family `f` (for which `which` holds).
  void set_family(Family f, const LlvmRule& rule);
  void set_family(Family f, const std::function<bool(const Primitive&)>& which, const LlvmRule& rule);
  // A primitive this backend cannot lower, and why ("TPU-only").
  void unsupported(std::string_view prim_name, std::string reason);
  void unsupported_family(Family f, const std::string& reason);
  // Every primitive with neither a rule nor a stated reason gets `reason`.
  void set_pending(std::string reason) { coverage_.set_pending(std::move(reason)); }

  const LlvmRule* find(const Primitive& p) const { return rules_.find(p); }
  // The rule of `op`, or the located error "TARGET: no lowering for `NAME`: REASON".
  const LlvmRule& at(const Op& op) const;
  // The same coverage and reasons as a backends::LoweringTable (its rules do nothing).
  const LoweringTable& coverage() const { return coverage_; }

 private:
  RuleTable<LlvmRule> rules_;
  LoweringTable coverage_;
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
