#include "backends/lowering.h"

namespace tessera::backends {

void LoweringTable::set(std::string_view prim_name, LowerRule rule) { rules_.set(prim_name, std::move(rule)); }

void LoweringTable::set_family(Family f, const LowerRule& rule) {
  for (const Primitive* p : registry().of(f)) rules_.set(p->name, rule);
}

void LoweringTable::set_family(Family f, const std::function<bool(const Primitive&)>& which, const LowerRule& rule) {
  for (const Primitive* p : registry().of(f))
    if (which(*p)) rules_.set(p->name, rule);
}

void LoweringTable::unsupported(std::string_view prim_name, std::string reason) {
  unsupported_[&prim(prim_name)] = std::move(reason);
}

void LoweringTable::unsupported_family(Family f, const std::string& reason) {
  for (const Primitive* p : registry().of(f)) unsupported_[p] = reason;
}

LoweringTable::Coverage LoweringTable::coverage(const Primitive& p) const {
  if (find(p)) return Coverage::rule;
  if (unsupported_.count(&p)) return Coverage::unsupported;
  return pending_.empty() ? Coverage::missing : Coverage::pending;
}

std::string LoweringTable::reason(const Primitive& p) const {
  if (find(p)) return "";
  auto it = unsupported_.find(&p);
  return it != unsupported_.end() ? it->second : pending_;
}

void lower_body(EmitContext& ctx, const Body& body, const LoweringTable& table) {
  for (const Op& op : body.ops()) {
    const LowerRule* rule = table.find(*op.prim);
    if (!rule) {
      std::string why = table.reason(*op.prim);
      throw Error(op.loc, table.target() + ": no lowering for `" + op.name() + "`" +
                      (table.where().empty() ? "" : " " + table.where()) + (why.empty() ? "" : ": " + why));
    }
    (*rule)(ctx, op, table);
  }
}

std::vector<std::string> unsupported_report(const LoweringTable& table) {
  std::vector<std::string> lines;
  for (const Primitive* p : registry().all()) {  // sorted by name
    if (table.coverage(*p) == LoweringTable::Coverage::rule) continue;
    std::string why = table.reason(*p);
    lines.push_back(p->name + ": " + (why.empty() ? "MISSING" : why));
  }
  return lines;
}

}  // namespace tessera::backends
