#include "frontends/mosaic/pretty_forms.h"

namespace tessera::mlir_text {

const PrettyForm* find_pretty_form(std::string_view op_name) {
  static const PrettyFormTable table = [] {
    PrettyFormTable t;
    add_arith_math_forms(t);
    add_vector_memref_forms(t);
    add_scf_func_forms(t);
    add_tpu_forms(t);
    return t;
  }();
  const auto it = table.find(op_name);
  return it == table.end() ? nullptr : &it->second;
}

std::string of(const Operation& op) { return "of `" + op.name + "`"; }

void set_segments(Operation& op, std::initializer_list<int64_t> sizes) {
  op.attrs.emplace_back("operandSegmentSizes", dense_array_attr(std::vector<int64_t>(sizes), "i32"));
}

MType parse_colon_type(Parser& p, const Operation& op) {
  p.expect_punct(":", "after the operands " + of(op));
  return p.parse_type("after `:` " + of(op));
}

MType parse_attrs_colon_type(Parser& p, Operation& op) {
  p.parse_optional_attr_dict(op);
  return parse_colon_type(p, op);
}

void parse_one_to_one(Parser& p, Operation& op, std::string_view sep) {
  op.operands = {p.parse_value_use("as the operand " + of(op))};
  const MType from = parse_attrs_colon_type(p, op);
  if (sep == "->") p.expect_punct(sep, "after the operand type " + of(op));
  else p.expect_word(sep, "after the operand type " + of(op));
  op.operand_types = {from};
  op.result_types = {p.parse_type("as the result type " + of(op))};
}

void parse_values_colon_types(Parser& p, Operation& op) {
  const std::vector<std::string> values = p.parse_value_uses("as the operands " + of(op));
  if (values.empty()) return;
  p.expect_punct(":", "after the operands " + of(op));
  const Loc at = p.loc();
  const std::vector<MType> types = p.parse_type_list("of the operands " + of(op));
  if (types.size() != values.size())
    p.fail_at(at, "`" + op.name + "` lists " + std::to_string(values.size()) + " operands but " +
                      std::to_string(types.size()) + " types");
  op.operands.insert(op.operands.end(), values.begin(), values.end());
  op.operand_types.insert(op.operand_types.end(), types.begin(), types.end());
}

std::vector<MType> parse_arrow_results(Parser& p, const Operation& op) {
  p.expect_punct("->", "before the result types " + of(op));
  return p.parse_result_types("as the result types " + of(op));
}

}  // namespace tessera::mlir_text
