#include "ir/rule_table.h"

#include <algorithm>
#include <mutex>

namespace tessera {

std::string RuleSite::str() const {
  // The build passes sources as paths relative to the build folder
  // ("../transforms/jvp.cpp"): show them relative to the source root.
  std::string_view f = file;
  while (f.substr(0, 3) == "../") f.remove_prefix(3);
  while (f.substr(0, 2) == "./") f.remove_prefix(2);
  return std::string(f) + ":" + std::to_string(line);
}

std::string_view coverage_name(RuleCoverage c) {
  switch (c) {
    case RuleCoverage::rule: return "rule";
    case RuleCoverage::unsupported: return "unsupported";
    case RuleCoverage::pending: return "pending";
    case RuleCoverage::missing: return "missing";
    case RuleCoverage::no_rule_needed: return "no rule needed";
  }
  return "?";
}

std::vector<const Primitive*> RuleTableBase::members(Family f, const Which& which) {
  std::vector<const Primitive*> out;
  for (const Primitive* p : registry().of(f))
    if (!which || which(*p)) out.push_back(p);
  return out;
}

void RuleTableBase::state(std::string_view prim_name, std::string reason, bool needed) {
  reasons_[&prim(prim_name)] = Reason{std::move(reason), needed};
}

void RuleTableBase::unsupported(std::string_view prim_name, std::string reason) {
  state(prim_name, std::move(reason), true);
}

void RuleTableBase::unsupported_family(Family f, const std::string& reason, const Which& which) {
  for (const Primitive* p : members(f, which)) state(p->name, reason, true);
}

void RuleTableBase::no_rule_needed(std::string_view prim_name, std::string reason) {
  state(prim_name, std::move(reason), false);
}

void RuleTableBase::no_rule_needed_family(Family f, const std::string& reason, const Which& which) {
  for (const Primitive* p : members(f, which)) state(p->name, reason, false);
}

RuleCoverage RuleTableBase::coverage(const Primitive& p) const {
  if (has_rule(p)) return Coverage::rule;
  if (auto it = reasons_.find(&p); it != reasons_.end())
    return it->second.needed ? Coverage::unsupported : Coverage::no_rule_needed;
  if (!pending_.empty()) return Coverage::pending;
  return by_default(p) ? Coverage::no_rule_needed : Coverage::missing;
}

std::string RuleTableBase::reason(const Primitive& p) const {
  if (has_rule(p)) return "";
  if (auto it = reasons_.find(&p); it != reasons_.end()) return it->second.text;
  if (!pending_.empty()) return pending_;
  return by_default(p) ? default_ : "";
}

std::string RuleTableBase::stated_reason(const Primitive& p) const {
  auto it = reasons_.find(&p);
  return it == reasons_.end() ? "" : it->second.text;
}

const RuleSite* RuleTableBase::site(const Primitive& p) const {
  auto it = sites_.find(&p);
  return it == sites_.end() ? nullptr : &it->second;
}

std::string RuleTableBase::describe(const Primitive& p) const {
  Coverage c = coverage(p);
  if (c == Coverage::rule) return "rule (" + site(p)->str() + ")";
  if (c == Coverage::missing) return "MISSING";
  return std::string(coverage_name(c)) + ": " + reason(p);
}

void RuleTableBase::throw_missing(const Primitive& p, const Loc& loc) const {
  // The table's default describes its generic path, which the caller did not
  // take: only a stated or pending reason explains the missing rule.
  std::string why = reasons_.count(&p) ? reason(p) : pending_;
  throw Error(loc, "no " + name_ + " rule for primitive " + p.name + (why.empty() ? "" : ": " + why));
}

namespace {

struct Registered {
  std::string consumer;
  std::function<const RuleTableBase&()> accessor;
};

// Filled during static initialisation (one thread); read later, possibly
// from several threads.
std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}

std::vector<Registered>& registered() {
  static std::vector<Registered> list;
  return list;
}

}  // namespace

RuleTableRegistration::RuleTableRegistration(std::string consumer, std::function<const RuleTableBase&()> accessor) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  registered().push_back({std::move(consumer), std::move(accessor)});
}

std::vector<RegisteredTable> rule_tables() {
  std::vector<Registered> list;
  {
    std::lock_guard<std::mutex> lock(registry_mutex());
    list = registered();
  }
  std::vector<RegisteredTable> out;
  for (const Registered& r : list) out.push_back({r.consumer, &r.accessor()});  // fills it on first use
  std::sort(out.begin(), out.end(), [](const RegisteredTable& a, const RegisteredTable& b) { return a.consumer < b.consumer; });
  return out;
}

const RuleTableBase* find_rule_table(std::string_view consumer) {
  for (const RegisteredTable& t : rule_tables())
    if (t.consumer == consumer) return t.table;
  return nullptr;
}

std::vector<std::string> coverage_defects(const RuleTableBase& table, std::string_view consumer) {
  std::vector<std::string> out;
  for (const Primitive* p : registry().all()) {
    std::string head = std::string(consumer) + ": `" + p->name + "` has ";
    if (table.contradicts(*p)) out.push_back(head + "a rule (" + table.site(*p)->str() + ") and a stated reason (" +
                                             table.stated_reason(*p) + ")");
    if (table.coverage(*p) == RuleCoverage::missing) out.push_back(head + "no rule and no reason");
  }
  return out;
}

}  // namespace tessera
