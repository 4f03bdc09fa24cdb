// A backend's lowering rules and the one walk that applies them.
//
// A rule lowers one op: it reads its operands' names from the EmitContext,
// defines its results' names and writes text. Rules are registered per
// primitive family where the family shares one shape of lowering (every
// elementwise op is "result = OP operands"), the way JAX's `standard_unop`
// gives a family its rules, so a new primitive of the family needs no entry.
// A primitive without a rule is either listed as unsupported with a reason,
// or, while a backend is being written, covered by its pending reason; the
// coverage test (tests/backends/) and the sweep of every table
// (tests/ir/test_rule_tables.cpp) check that every primitive is one of these.
//
// Nested bodies (cond branches, loop bodies) are lowered by their op's rule,
// which enters a scope and calls lower_body again.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/emit_context.h"
#include "ir/primitive.h"

namespace tessera::backends {

class LoweringTable;
using LowerRule = std::function<void(EmitContext&, const Op&, const LoweringTable&)>;

// A backend's table: the one RuleTable type (ir/rule_table.h), whose name is
// the target, plus where its ops run. Its unsupported and pending reasons end
// lower_body's missing-rule error ("ptx: no lowering for `dma_start`:
// TPU-only").
class LoweringTable : public RuleTable<LowerRule> {
 public:
  explicit LoweringTable(std::string target) : RuleTable<LowerRule>(std::move(target)) {}
  const std::string& target() const { return name(); }
  // Where the table's ops run, for the missing-rule error ("mosaic: no
  // lowering for `sort` on the TensorCore"); empty by default.
  void set_where(std::string where) { where_ = std::move(where); }
  const std::string& where() const { return where_; }

 private:
  std::string where_;
};

// Lowers the ops of `body` in order through `table`. An op with no rule is a
// located error: "<target>: no lowering for `NAME`" (and the table's `where`), followed by the reason
// the table gives. The caller names the body's parameters first (`def` or
// `alias`) and writes what comes around the ops (a signature, a return).
void lower_body(EmitContext& ctx, const Body& body, const LoweringTable& table);

// One line per primitive without a rule, sorted by name: "NAME: reason"
// (reason "MISSING" when nothing covers it). What a backend's closing note
// lists, and what the coverage test prints.
std::vector<std::string> unsupported_report(const RuleTableBase& table);

}  // namespace tessera::backends
