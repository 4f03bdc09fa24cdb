#include "backends/lowering.h"

namespace tessera::backends {

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

std::vector<std::string> unsupported_report(const RuleTableBase& table) {
  std::vector<std::string> lines;
  for (const Primitive* p : registry().all()) {  // sorted by name
    if (table.has_rule(*p)) continue;
    std::string why = table.reason(*p);
    lines.push_back(p->name + ": " + (why.empty() ? "MISSING" : why));
  }
  return lines;
}

}  // namespace tessera::backends
