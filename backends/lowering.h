// A backend's lowering rules and the one walk that applies them.
//
// A rule lowers one op: it reads its operands' names from the EmitContext,
// defines its results' names and writes text. Rules are registered per
// primitive family where the family shares one shape of lowering (every
// elementwise op is "result = OP operands"), the way JAX's `standard_unop`
// gives a family its rules, so a new primitive of the family needs no entry.
// A primitive without a rule is either listed as unsupported with a reason,
// or, while a backend is being written, covered by its pending reason; the
// coverage test (tests/backends/) checks that every primitive is one of
// these.
//
// Nested bodies (cond branches, loop bodies) are lowered by their op's rule,
// which enters a scope and calls lower_body again.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "backends/emit_context.h"
#include "ir/primitive.h"

namespace tessera::backends {

class LoweringTable;
using LowerRule = std::function<void(EmitContext&, const Op&, const LoweringTable&)>;

class LoweringTable {
 public:
  explicit LoweringTable(std::string target) : rules_(std::move(target)) {}
  const std::string& target() const { return rules_.pass(); }

  void set(std::string_view prim_name, LowerRule rule);
  // One rule for every primitive of family `f` (for which `which` holds).
  void set_family(Family f, const LowerRule& rule);
  void set_family(Family f, const std::function<bool(const Primitive&)>& which, const LowerRule& rule);
  // A primitive (or family) this backend cannot lower, and why; the reason
  // ends the missing-rule error ("ptx: no lowering for `dma_start`: TPU-only").
  void unsupported(std::string_view prim_name, std::string reason);
  void unsupported_family(Family f, const std::string& reason);
  // The reason of every primitive with neither a rule nor a stated reason,
  // while the backend is unfinished ("not lowered yet (...)"). A
  // finished backend has none, and then the coverage test makes every new
  // primitive get a rule or a stated reason.
  void set_pending(std::string reason) { pending_ = std::move(reason); }
  const std::string& pending() const { return pending_; }
  // Where the table's ops run, for the missing-rule error ("mosaic: no
  // lowering for `sort` on the TensorCore"); empty by default.
  void set_where(std::string where) { where_ = std::move(where); }
  const std::string& where() const { return where_; }

  const LowerRule* find(const Primitive& p) const { return rules_.find(p); }
  // How the table covers `p`.
  enum class Coverage { rule, unsupported, pending, missing };
  Coverage coverage(const Primitive& p) const;
  // The stated or pending reason `p` has no rule; empty when it has one, or
  // when nothing covers it.
  std::string reason(const Primitive& p) const;
  // A rule and a stated reason both: a contradiction the coverage test reports.
  bool contradicts(const Primitive& p) const { return find(p) && unsupported_.count(&p); }

 private:
  RuleTable<LowerRule> rules_;  // its `pass` is the target name
  std::unordered_map<const Primitive*, std::string> unsupported_;
  std::string pending_;
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
std::vector<std::string> unsupported_report(const LoweringTable& table);

}  // namespace tessera::backends
