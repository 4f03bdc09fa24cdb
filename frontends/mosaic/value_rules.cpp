// The one table of value rules: arith / math (value_rules_arith.cpp), vector
// (value_rules_vector.cpp) and tpu (value_rules_tpu.cpp). Every rule runs
// inside one guard: an Error from the Builder (a shape rule refusing the
// operands) is reported at the op as "`arith.addf`: ...", and the values a
// rule returns must have the op's declared result types, so a rule can never
// hand the translator a value of another type than the text says.
#include "frontends/mosaic/value_rules_util.h"

namespace tessera::mlir_text {
namespace {

std::vector<Value> checked(const ValueRule& rule, ValueRuleContext& c) {
  std::vector<Value> out;
  try {
    out = rule(c);
  } catch (const Error& e) {
    std::string prefix = "`" + c.op.name + "`: ";
    if (e.message().rfind(prefix, 0) == 0) throw;
    throw Error(c.op.loc, prefix + e.message());
  }
  if (out.size() != c.op.result_types.size())
    c.fail("built " + std::to_string(out.size()) + " results for " + std::to_string(c.op.result_types.size()) + " declared");
  for (size_t i = 0; i < out.size(); ++i) {
    Type want = c.result_type(i);
    if (out[i].type() != want)
      c.fail("result " + std::to_string(i) + " is declared " + want.str() + " but the operands give " + out[i].type().str());
  }
  return out;
}

}  // namespace

const std::map<std::string, ValueRule, std::less<>>& value_rules() {
  static const rules::RuleMap table = [] {
    rules::RuleMap raw;
    rules::add_arith_rules(raw);
    rules::add_vector_rules(raw);
    rules::add_tpu_rules(raw);
    rules::RuleMap guarded;
    for (auto& [name, rule] : raw)
      guarded[name] = [r = std::move(rule)](ValueRuleContext& c) { return checked(r, c); };
    return guarded;
  }();
  return table;
}

}  // namespace tessera::mlir_text
