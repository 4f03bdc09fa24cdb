// Pretty forms of the `arith` and `math` dialects.
#include <array>

#include "frontends/mosaic/pretty_forms.h"

namespace tessera::mlir_text {
namespace {

// arith's CmpIPredicate and CmpFPredicate: the generic form's integer is the
// index in these lists.
constexpr std::array<std::string_view, 10> kCmpIPredicates = {"eq",  "ne",  "slt", "sle", "sgt",
                                                              "sge", "ult", "ule", "ugt", "uge"};
constexpr std::array<std::string_view, 16> kCmpFPredicates = {"false", "oeq", "ogt", "oge", "olt", "ole",
                                                              "one",   "ord", "ueq", "ugt", "uge", "ult",
                                                              "ule",   "une", "uno", "true"};

// `fastmath<nnan,ninf>` / `overflow<nsw>` after the operands: a Dialect attr
// as the generic form prints it (`fastmath = #arith.fastmath<nnan,ninf>`).
void parse_optional_flags(Parser& p, Operation& op) {
  const bool fastmath = p.at_word("fastmath");
  if (!fastmath && !p.at_word("overflow")) return;
  p.advance();
  p.expect_punct("<", "after the flags keyword " + of(op));
  Attr a;
  a.kind = Attr::Dialect;
  a.s = fastmath ? "arith.fastmath" : "arith.overflow";
  do {
    if (!a.text.empty()) a.text += ",";
    a.text += p.parse_word("a flag", of(op));
  } while (p.consume_punct(","));
  p.expect_punct(">", "to close the flags " + of(op));
  op.attrs.emplace_back(fastmath ? "fastmath" : "overflowFlags", std::move(a));
}

// `%a, %b [flags] {attrs} : T`
void binary(Parser& p, Operation& op) {
  op.operands.push_back(p.parse_value_use("as the first operand " + of(op)));
  p.expect_punct(",", "between the operands " + of(op));
  op.operands.push_back(p.parse_value_use("as the second operand " + of(op)));
  parse_optional_flags(p, op);
  const MType t = parse_attrs_colon_type(p, op);
  op.operand_types = {t, t};
  op.result_types = {t};
}

// `%a [flags] {attrs} : T`
void unary(Parser& p, Operation& op) {
  op.operands.push_back(p.parse_value_use("as the operand " + of(op)));
  parse_optional_flags(p, op);
  const MType t = parse_attrs_colon_type(p, op);
  op.operand_types = {t};
  op.result_types = {t};
}

// `%a, %b, %c [flags] {attrs} : T` (math.fma)
void ternary(Parser& p, Operation& op) {
  op.operands = p.parse_value_uses("as the operands " + of(op));
  if (op.operands.size() != 3) p.fail_expected("three operands", of(op));
  parse_optional_flags(p, op);
  const MType t = parse_attrs_colon_type(p, op);
  op.operand_types = {t, t, t};
  op.result_types = {t};
}

// `%a [flags] {attrs} : A to B`
void cast(Parser& p, Operation& op) {
  op.operands.push_back(p.parse_value_use("as the operand " + of(op)));
  parse_optional_flags(p, op);
  const MType from = parse_attrs_colon_type(p, op);
  p.expect_word("to", "after the operand type " + of(op));
  op.operand_types = {from};
  op.result_types = {p.parse_type("as the result type " + of(op))};
}

// `pred, %a, %b [flags] {attrs} : T`, the result i1 in T's shape. The
// predicate is a word (`slt`) or, as the generic form spells it, its integer.
void compare(Parser& p, Operation& op) {
  const bool is_int = op.name == "arith.cmpi";
  int64_t code = -1;
  if (p.tok().kind == MTok::Integer) {
    const Loc at = p.loc();
    code = p.parse_int("as the predicate " + of(op));
    if (code < 0 || code >= static_cast<int64_t>(is_int ? kCmpIPredicates.size() : kCmpFPredicates.size()))
      p.fail_at(at, "predicate " + std::to_string(code) + " is out of range " + of(op));
  } else {
    const Loc at = p.loc();
    const std::string word = p.parse_word("a predicate (`eq`, `slt`, ...)", of(op));
    const std::string_view* names = is_int ? kCmpIPredicates.data() : kCmpFPredicates.data();
    const size_t count = is_int ? kCmpIPredicates.size() : kCmpFPredicates.size();
    for (size_t k = 0; k < count; ++k)
      if (names[k] == word) code = static_cast<int64_t>(k);
    if (code < 0) p.fail_at(at, "unknown predicate `" + word + "` " + of(op));
  }
  op.attrs.emplace_back("predicate", int_attr(code, "i64"));
  p.expect_punct(",", "after the predicate " + of(op));
  binary(p, op);
  op.result_types = {with_element(op.result_types[0], "i1")};
}

// `%c, %a, %b {attrs} : T` or `: C, T`
void select(Parser& p, Operation& op) {
  op.operands = p.parse_value_uses("as the operands " + of(op));
  if (op.operands.size() != 3) p.fail_expected("three operands (condition, true value, false value)", of(op));
  const MType first = parse_attrs_colon_type(p, op);
  MType cond = scalar_type("i1"), t = first;
  if (p.consume_punct(",")) {
    cond = first;
    t = p.parse_type("as the value type " + of(op));
  }
  op.operand_types = {cond, t, t};
  op.result_types = {t};
}

// `{attrs} value` where the value carries the type: `0 : index`,
// `dense<0.0> : vector<8xf32>`, `true`.
void constant(Parser& p, Operation& op) {
  p.parse_optional_attr_dict(op);
  const Loc at = p.loc();
  Attr value = p.parse_attr("as the value " + of(op));
  if (value.kind == Attr::Bool) {
    op.result_types = {scalar_type("i1")};
  } else if ((value.kind == Attr::Int || value.kind == Attr::Float || value.kind == Attr::Dense) &&
             p.last_attr_had_type()) {
    op.result_types = {value.type};
  } else {
    p.fail_at(at, "expected a typed value (`0 : i32`, `dense<...> : vector<...>`) " + of(op));
  }
  op.attrs.emplace_back("value", std::move(value));
}

void add(PrettyFormTable& t, std::initializer_list<std::string_view> names, PrettyForm form) {
  for (std::string_view n : names) t.emplace(n, form);
}

}  // namespace

void add_arith_math_forms(PrettyFormTable& t) {
  t.emplace("arith.constant", constant);
  add(t,
      {"arith.addf",   "arith.subf",    "arith.mulf",     "arith.divf",     "arith.remf",     "arith.maximumf",
       "arith.minimumf", "arith.maxnumf", "arith.minnumf", "arith.addi",     "arith.subi",     "arith.muli",
       "arith.divsi",  "arith.divui",   "arith.ceildivsi", "arith.ceildivui", "arith.floordivsi", "arith.remsi",
       "arith.remui",  "arith.maxsi",   "arith.minsi",    "arith.maxui",    "arith.minui",    "arith.andi",
       "arith.ori",    "arith.xori",    "arith.shli",     "arith.shrsi",    "arith.shrui",    "math.powf",
       "math.atan2",   "math.copysign", "math.ipowi"},
      binary);
  add(t, {"arith.cmpi", "arith.cmpf"}, compare);
  t.emplace("arith.select", select);
  add(t,
      {"arith.extui", "arith.extsi", "arith.trunci", "arith.extf", "arith.truncf", "arith.sitofp", "arith.uitofp",
       "arith.fptosi", "arith.fptoui", "arith.index_cast", "arith.index_castui", "arith.bitcast"},
      cast);
  add(t,
      {"arith.negf", "math.exp",  "math.exp2", "math.expm1", "math.log",   "math.log2",  "math.log10", "math.log1p",
       "math.sqrt",  "math.rsqrt", "math.cbrt", "math.tanh",  "math.tan",   "math.sin",   "math.cos",   "math.atan",
       "math.sinh",  "math.cosh", "math.asin", "math.acos",  "math.erf",   "math.floor", "math.ceil",  "math.round",
       "math.roundeven", "math.trunc", "math.absf", "math.absi", "math.ctlz", "math.cttz", "math.ctpop"},
      unary);
  t.emplace("math.fma", ternary);
}

}  // namespace tessera::mlir_text
