// SSA: inside one body every Var is defined once (as a parameter or an op
// result) and used only after its definition. Bodies are closed, so a value
// defined anywhere else -- an enclosing body included -- is an error here.
#include <cstdint>
#include <utility>

#include "verify/check.h"

namespace tessera::verify_detail {
namespace {

constexpr int kParam = -1;  // definition position of a body parameter

// Var -> definition position. Open addressing with linear probing: bodies can
// hold millions of ops, and a node-based map would allocate once per value.
class DefinitionTable {
 public:
  explicit DefinitionTable(size_t expected) {
    size_t cap = 16;
    while (cap < 2 * expected) cap *= 2;
    slots_.assign(cap, {nullptr, 0});
  }
  // Records `v` at `pos`; false if `v` was already recorded.
  bool insert(const Var* v, int pos) {
    size_t i = slot(v);
    if (slots_[i].first) return false;
    slots_[i] = {v, pos};
    if (++size_ * 2 > slots_.size()) grow();
    return true;
  }
  // The position `v` was recorded at, or nullptr.
  const int* find(const Var* v) const {
    const auto& s = slots_[slot(v)];
    return s.first ? &s.second : nullptr;
  }

 private:
  // The slot holding `v`, or the empty slot where it would go.
  size_t slot(const Var* v) const {
    size_t mask = slots_.size() - 1;
    size_t i = (reinterpret_cast<uintptr_t>(v) >> 4) * 0x9E3779B97F4A7C15ull >> 20 & mask;
    while (slots_[i].first && slots_[i].first != v) i = (i + 1) & mask;
    return i;
  }
  void grow() {
    std::vector<std::pair<const Var*, int>> old = std::move(slots_);
    slots_.assign(old.size() * 2, {nullptr, 0});
    for (const auto& s : old)
      if (s.first) slots_[slot(s.first)] = s;
  }
  std::vector<std::pair<const Var*, int>> slots_;
  size_t size_ = 0;
};

std::string undefined_message(const Body& b, const Var* v) {
  std::string msg = var_label(v) + " is not defined in " + body_label(b) +
                    "; bodies are closed, so pass outside values in as operands";
  if (b.kind() == BodyKind::index_map) msg += " (an index map must not capture values)";
  return msg;
}

}  // namespace

void check_ssa(const Body& b, const Loc& fallback, Diags& out) {
  const Loc& body_loc = where(b, fallback);
  // Where each Var is defined: kParam or the index of the defining op.
  DefinitionTable defined_at(b.params().size() + b.ops().size());
  for (const Var* p : b.params()) {
    if (!p) { report(out, body_loc, body_label(b) + " has a missing parameter"); continue; }
    if (!defined_at.insert(p, kParam))
      report(out, body_loc, "parameter " + var_label(p) + " of " + body_label(b) + " is listed twice");
  }
  const auto& ops = b.ops();
  for (size_t i = 0; i < ops.size(); ++i) {
    for (const Var* r : ops[i].results) {
      if (!r) { report(out, ops[i].loc, "an op has a missing result"); continue; }
      if (!defined_at.insert(r, static_cast<int>(i)))
        report(out, ops[i].loc, var_label(r) + " is defined twice (SSA values are defined exactly once)");
    }
  }
  // Uses: an operand must be defined by a parameter or an earlier op.
  for (size_t i = 0; i < ops.size(); ++i) {
    for (const Value& v : ops[i].operands) {
      if (!v.is_var()) continue;
      const int* pos = defined_at.find(v.var());
      if (!pos) report(out, ops[i].loc, undefined_message(b, v.var()));
      else if (*pos >= static_cast<int>(i))
        report(out, ops[i].loc, var_label(v.var()) + " is used before it is defined");
    }
  }
  for (const Value& v : b.outputs())
    if (v.is_var() && !defined_at.find(v.var()))
      report(out, body_loc, "output " + undefined_message(b, v.var()));
}

}  // namespace tessera::verify_detail
