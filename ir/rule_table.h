// One rule-table type for every consumer of primitives: passes, the
// interpreter, both backends, the prover's walkers, cost, transpose.
//
// A consumer keeps its rules in a RuleTable<Rule>, keyed by primitive, the way
// JAX keeps `ad.primitive_jvps[p]`: adding a primitive to a consumer is one
// table entry. A primitive without a rule is never a silent gap: the table
// states why (`unsupported`: meeting it is an error that ends with the reason;
// `no_rule_needed`: the consumer handles it without one), or the whole table
// says what happens to primitives it has no entry for (`set_pending` while it
// is being written, `set_default` when they take the consumer's generic path).
// Each rule remembers where it was registered (file:line).
//
// Every table is listed, under its consumer's name, by a RuleTableRegistration
// beside its accessor, so `tessera rules PRIM` and the sweep test
// (tests/ir/test_rule_tables.cpp) see every consumer of every primitive.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/primitive.h"

namespace tessera {

// Where a rule was registered: the file and line of its `set` call (the
// compiler fills the default arguments at the caller).
struct RuleSite {
  const char* file = "";
  unsigned line = 0;
  static RuleSite here(const char* f = __builtin_FILE(), unsigned l = __builtin_LINE()) { return {f, l}; }
  std::string str() const;  // "transforms/jvp.cpp:42", relative to the source root
};

// How a table covers one primitive.
enum class RuleCoverage : uint8_t {
  rule,         // it has a rule
  unsupported,  // no rule, for a stated reason: meeting it is an error that gives the reason
  pending,      // no entry, and the table is unfinished (its pending reason)
  missing,      // no rule and no reason: a defect in a table that claims completeness
  no_rule_needed,  // handled without a rule (a stated reason, or the table's default)
};
std::string_view coverage_name(RuleCoverage c);  // "rule", "unsupported", ...

class RuleTableBase {
 public:
  using Coverage = RuleCoverage;
  using Which = std::function<bool(const Primitive&)>;

  explicit RuleTableBase(std::string name) : name_(std::move(name)) {}
  // The consumer as its errors name it: "no <name> rule for primitive <p>".
  const std::string& name() const { return name_; }
  const std::string& pass() const { return name_; }

  // A primitive (or the members of a family for which `which` holds) this
  // consumer cannot handle, and why.
  void unsupported(std::string_view prim_name, std::string reason);
  void unsupported_family(Family f, const std::string& reason, const Which& which = {});
  // A primitive the consumer handles without a rule, and how (transpose: an
  // integer-valued op is never linear; a walker: an op without bodies).
  void no_rule_needed(std::string_view prim_name, std::string reason);
  void no_rule_needed_family(Family f, const std::string& reason, const Which& which = {});
  // The reason of every primitive without an entry while the consumer is
  // unfinished; a finished one has none.
  void set_pending(std::string reason) { pending_ = std::move(reason); }
  const std::string& pending() const { return pending_; }
  // What the consumer does with every primitive without an entry (for which
  // `which` holds), when that is a generic path rather than a gap ("kept
  // when it has effects"); the others without an entry are missing.
  void set_default(std::string reason, Which which = {}) {
    default_ = std::move(reason);
    default_which_ = std::move(which);
  }
  const std::string& default_reason() const { return default_; }
  // The table claims every primitive has a rule or a reason (it is not
  // pending): the sweep test fails on a missing one.
  bool complete() const { return pending_.empty(); }

  bool has_rule(const Primitive& p) const { return sites_.count(&p) != 0; }
  Coverage coverage(const Primitive& p) const;
  // Why `p` has no rule: its stated reason, else the pending or default
  // reason; empty when it has a rule or nothing covers it.
  std::string reason(const Primitive& p) const;
  // The reason stated for `p` alone (even beside a rule); empty when none is.
  std::string stated_reason(const Primitive& p) const;
  // Where the rule of `p` was registered (nullptr without one).
  const RuleSite* site(const Primitive& p) const;
  // A rule and a stated reason both: a contradiction the sweep test reports.
  bool contradicts(const Primitive& p) const { return has_rule(p) && reasons_.count(&p); }
  // One cell of the coverage matrix: "rule (FILE:LINE)", "unsupported: WHY", ...
  std::string describe(const Primitive& p) const;

 protected:
  void note_rule(const Primitive& p, RuleSite site) { sites_[&p] = site; }
  // Throws at `loc`: "no <name> rule for primitive <p>", then ": <reason>"
  // when the table states one (or is pending).
  [[noreturn]] void throw_missing(const Primitive& p, const Loc& loc) const;
  static std::vector<const Primitive*> members(Family f, const Which& which);

 private:
  struct Reason {
    std::string text;
    bool needed;  // a rule would be needed (unsupported) or is not (no_rule_needed)
  };
  void state(std::string_view prim_name, std::string reason, bool needed);
  bool by_default(const Primitive& p) const { return !default_.empty() && (!default_which_ || default_which_(p)); }
  std::string name_;
  std::unordered_map<const Primitive*, RuleSite> sites_;
  std::unordered_map<const Primitive*, Reason> reasons_;
  std::string pending_, default_;
  Which default_which_;
};

template <class Rule>
class RuleTable : public RuleTableBase {
 public:
  using RuleTableBase::RuleTableBase;

  void set(std::string_view prim_name, Rule rule, RuleSite site = RuleSite::here()) {
    set(prim(prim_name), std::move(rule), site);
  }
  void set(const Primitive& p, Rule rule, RuleSite site = RuleSite::here()) {
    rules_[&p] = std::move(rule);
    note_rule(p, site);
  }
  // One rule for every primitive of family `f` (for which `which` holds).
  void set_family(Family f, const Rule& rule, RuleSite site = RuleSite::here()) { set_family(f, {}, rule, site); }
  void set_family(Family f, const Which& which, const Rule& rule, RuleSite site = RuleSite::here()) {
    for (const Primitive* p : members(f, which)) set(*p, rule, site);
  }
  const Rule* find(const Primitive& p) const {
    auto it = rules_.find(&p);
    return it == rules_.end() ? nullptr : &it->second;
  }
  // The rule of `p`, or the located error "no <name> rule for primitive <p>[: reason]".
  const Rule& at(const Primitive& p, const Loc& loc = {}) const {
    if (const Rule* r = find(p)) return *r;
    throw_missing(p, loc);
  }

 private:
  std::unordered_map<const Primitive*, Rule> rules_;
};

// Lists a table under its consumer's name ("jvp", "prove.walker", "ptx").
// Define one at namespace scope beside the table's accessor:
//   const RuleTableRegistration kRegistered("jvp", rules);
// The accessor runs only when the list is read, so tables are still filled
// on first use (after an embedding program has registered its primitives).
class RuleTableRegistration {
 public:
  template <class Table>
  RuleTableRegistration(std::string consumer, Table& (*accessor)())
      : RuleTableRegistration(std::move(consumer), std::function<const RuleTableBase&()>(accessor)) {}
  RuleTableRegistration(std::string consumer, std::function<const RuleTableBase&()> accessor);
};

struct RegisteredTable {
  std::string consumer;
  const RuleTableBase* table;
};
// Every registered table, sorted by consumer name (each filled on first use).
std::vector<RegisteredTable> rule_tables();
const RuleTableBase* find_rule_table(std::string_view consumer);

// What is wrong with `table`'s coverage, one line per primitive
// ("CONSUMER: `PRIM` has no rule and no reason", "... has a rule and a stated
// reason"); empty when nothing is. A pending table may have primitives with
// neither.
std::vector<std::string> coverage_defects(const RuleTableBase& table, std::string_view consumer);

}  // namespace tessera
