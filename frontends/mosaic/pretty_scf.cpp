// Pretty forms of the `scf` dialect and of `func.return`.
#include "frontends/mosaic/pretty_forms.h"

namespace tessera::mlir_text {
namespace {

// `{attrs}? (%a, ... : T, ...)?`: scf.yield, func.return.
void terminator(Parser& p, Operation& op) {
  p.parse_optional_attr_dict(op);
  parse_values_colon_types(p, op);
}

// `(%cond) %a, ... : T, ...`
void condition(Parser& p, Operation& op) {
  p.expect_punct("(", "to open the condition " + of(op));
  op.operands.push_back(p.parse_value_use("as the condition " + of(op)));
  p.expect_punct(")", "to close the condition " + of(op));
  op.operand_types = {scalar_type("i1")};
  p.parse_optional_attr_dict(op);
  parse_values_colon_types(p, op);
}

// `%c [-> (T, ...)] { then } [else { else }] {attrs}`; an absent else is an
// empty region, as in the generic form.
void if_form(Parser& p, Operation& op) {
  op.operands.push_back(p.parse_value_use("as the condition " + of(op)));
  op.operand_types = {scalar_type("i1")};
  if (p.at_punct("->")) op.result_types = parse_arrow_results(p, op);
  op.regions.push_back(p.parse_region({}, "scf.yield"));
  if (p.consume_word("else")) op.regions.push_back(p.parse_region({}, "scf.yield"));
  else op.regions.emplace_back();
  p.parse_optional_attr_dict(op);
}

// `%a = %x, ...` (one or more): the loop-carried block arguments, each
// initial value appended to `op`'s operands. `what` and `label` name an
// argument in errors ("as an iteration argument", "after iteration argument `%a`").
std::vector<BlockArg> parse_carried(Parser& p, Operation& op, const std::string& what, const std::string& label) {
  std::vector<BlockArg> args;
  do {
    BlockArg a;
    a.loc = p.loc();
    a.name = p.parse_value_use("as " + what + " " + of(op));
    p.expect_punct("=", "after " + label + "`%" + a.name + "`");
    op.operands.push_back(p.parse_value_use("as the initial value of `%" + a.name + "`"));
    args.push_back(std::move(a));
  } while (p.consume_punct(","));
  return args;
}

// `%iv = %lo to %hi step %s [iter_args(%a = %x, ...) -> (T, ...)] [: T] { body } {attrs}`
// Operands lo, hi, step, inits; the body's block arguments are the induction
// variable (index unless `: T` says otherwise) and the iteration arguments.
void for_form(Parser& p, Operation& op) {
  BlockArg iv;
  iv.loc = p.loc();
  iv.name = p.parse_value_use("as the induction variable " + of(op));
  p.expect_punct("=", "after the induction variable " + of(op));
  op.operands.push_back(p.parse_value_use("as the lower bound " + of(op)));
  p.expect_word("to", "after the lower bound " + of(op));
  op.operands.push_back(p.parse_value_use("as the upper bound " + of(op)));
  p.expect_word("step", "after the upper bound " + of(op));
  op.operands.push_back(p.parse_value_use("as the step " + of(op)));
  std::vector<BlockArg> iter_args;
  if (p.consume_word("iter_args")) {
    p.expect_punct("(", "after `iter_args` " + of(op));
    iter_args = parse_carried(p, op, "an iteration argument", "iteration argument ");
    p.expect_punct(")", "to close `iter_args` " + of(op));
    op.result_types = parse_arrow_results(p, op);
    if (op.result_types.size() != iter_args.size())
      p.fail("`" + op.name + "` has " + std::to_string(iter_args.size()) + " iteration arguments but " +
             std::to_string(op.result_types.size()) + " result types");
  }
  iv.type = scalar_type("index");
  if (p.consume_punct(":")) iv.type = p.parse_type("as the induction variable type " + of(op));
  op.operand_types = {iv.type, iv.type, iv.type};
  op.operand_types.insert(op.operand_types.end(), op.result_types.begin(), op.result_types.end());
  std::vector<BlockArg> entry{iv};
  for (size_t i = 0; i < iter_args.size(); ++i) {
    iter_args[i].type = op.result_types[i];
    entry.push_back(iter_args[i]);
  }
  op.regions.push_back(p.parse_region(std::move(entry), "scf.yield"));
  p.parse_optional_attr_dict(op);
}

// `[(%a = %x, ...)] : (T, ...) -> (R, ...) { before } do { after } {attrs}`
void while_form(Parser& p, Operation& op) {
  std::vector<BlockArg> before_args;
  if (p.consume_punct("(")) {
    if (!p.at_punct(")")) {
      before_args = parse_carried(p, op, "a loop-carried value", "");
    }
    p.expect_punct(")", "to close the initial values " + of(op));
  }
  p.expect_punct(":", "before the function type " + of(op));
  const Loc type_loc = p.loc();
  MType fn = p.parse_type("as the function type " + of(op));
  if (fn.kind != MType::Function || fn.inputs.size() != op.operands.size())
    p.fail_at(type_loc, "expected a function type with one input per initial value " + of(op));
  for (size_t i = 0; i < before_args.size(); ++i) before_args[i].type = fn.inputs[i];
  op.operand_types = fn.inputs;
  op.result_types = fn.results;
  op.regions.push_back(p.parse_region(std::move(before_args)));
  p.expect_word("do", "after the `before` region " + of(op));
  op.regions.push_back(p.parse_region({}));
  p.parse_optional_attr_dict(op);
}

}  // namespace

void add_scf_func_forms(PrettyFormTable& t) {
  t.emplace("scf.yield", terminator);
  t.emplace("func.return", terminator);
  t.emplace("scf.condition", condition);
  t.emplace("scf.if", if_form);
  t.emplace("scf.for", for_form);
  t.emplace("scf.while", while_form);
}

}  // namespace tessera::mlir_text
