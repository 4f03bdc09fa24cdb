// Pretty forms of the `vector` and `memref` dialects.
#include <limits>

#include "frontends/mosaic/pretty_forms.h"

namespace tessera::mlir_text {
namespace {

// MLIR's marker in `static_position` for a position given by an operand.
constexpr int64_t kDynamicPosition = std::numeric_limits<int64_t>::min();

// `%base[%i, ...]`: the base and its indices appended to op.operands; returns
// the index count.
size_t parse_base_and_indices(Parser& p, Operation& op) {
  op.operands.push_back(p.parse_value_use("as the base " + of(op)));
  const std::vector<std::string> idx = p.parse_bracketed_values("after the base " + of(op));
  op.operands.insert(op.operands.end(), idx.begin(), idx.end());
  return idx.size();
}

void append_index_types(Operation& op, size_t n) {
  for (size_t i = 0; i < n; ++i) op.operand_types.push_back(scalar_type("index"));
}

// `%m[%i, ...] {attrs} : memref<...>, vector<...>`
void vector_load(Parser& p, Operation& op) {
  const size_t n = parse_base_and_indices(p, op);
  const MType mem = parse_attrs_colon_type(p, op);
  p.expect_punct(",", "after the memref type " + of(op));
  op.operand_types = {mem};
  append_index_types(op, n);
  op.result_types = {p.parse_type("as the vector type " + of(op))};
}

// `%v, %m[%i, ...] {attrs} : memref<...>, vector<...>`
void vector_store(Parser& p, Operation& op) {
  op.operands.push_back(p.parse_value_use("as the stored value " + of(op)));
  p.expect_punct(",", "after the stored value " + of(op));
  const size_t n = parse_base_and_indices(p, op);
  const MType mem = parse_attrs_colon_type(p, op);
  p.expect_punct(",", "after the memref type " + of(op));
  const MType vec = p.parse_type("as the vector type " + of(op));
  op.operand_types = {vec, mem};
  append_index_types(op, n);
}

void to_form(Parser& p, Operation& op) { parse_one_to_one(p, op, "to"); }

// `<kind>` as one word (the generic form's `#vector.kind<add>` is normalised
// to the same).
void parse_kind(Parser& p, Operation& op) {
  p.expect_punct("<", "to open the combining kind " + of(op));
  op.attrs.emplace_back("kind", string_attr(p.parse_word("a combining kind (`add`, `maximumf`, ...)", of(op))));
  p.expect_punct(">", "to close the combining kind " + of(op));
}

// `<add>, %src, %acc {attrs} [dims] : A to B`
void multi_reduction(Parser& p, Operation& op) {
  parse_kind(p, op);
  p.expect_punct(",", "after the combining kind " + of(op));
  op.operands = p.parse_value_uses("as the source and accumulator " + of(op));
  if (op.operands.size() != 2) p.fail_expected("two operands (source, accumulator)", of(op));
  p.parse_optional_attr_dict(op);
  op.attrs.emplace_back("reduction_dims", p.parse_bracketed_int_array("i64", "as the reduction dims " + of(op)));
  p.parse_optional_attr_dict(op);
  const MType src = parse_colon_type(p, op);
  p.expect_word("to", "after the source type " + of(op));
  const MType dst = p.parse_type("as the result type " + of(op));
  op.operand_types = {src, dst};
  op.result_types = {dst};
}

// `<add>, %v [, %acc] [fastmath] {attrs} : V into R`
void reduction(Parser& p, Operation& op) {
  parse_kind(p, op);
  p.expect_punct(",", "after the combining kind " + of(op));
  op.operands = p.parse_value_uses("as the operands " + of(op));
  if (op.operands.empty() || op.operands.size() > 2) p.fail_expected("a vector and an optional accumulator", of(op));
  const MType v = parse_attrs_colon_type(p, op);
  p.expect_word("into", "after the vector type " + of(op));
  const MType r = p.parse_type("as the result type " + of(op));
  op.operand_types = {v};
  if (op.operands.size() == 2) op.operand_types.push_back(r);
  op.result_types = {r};
}

// `[0, %i, 2]`: static positions, with kDynamicPosition where an operand
// (appended to op.operands) gives it.
void parse_positions(Parser& p, Operation& op, std::vector<MType>& dynamic_types) {
  p.expect_punct("[", "to open the position " + of(op));
  std::vector<int64_t> pos;
  if (!p.at_punct("]")) {
    do {
      if (p.at_value()) {
        op.operands.push_back(p.parse_value_use("in the position " + of(op)));
        dynamic_types.push_back(scalar_type("index"));
        pos.push_back(kDynamicPosition);
      } else {
        pos.push_back(p.parse_int("in the position " + of(op)));
      }
    } while (p.consume_punct(","));
  }
  p.expect_punct("]", "to close the position " + of(op));
  op.attrs.emplace_back("static_position", dense_array_attr(std::move(pos), "i64"));
}

// `%v[0, 0] {attrs} : f32 from vector<1x1xf32>`
void extract(Parser& p, Operation& op) {
  op.operands.push_back(p.parse_value_use("as the vector " + of(op)));
  std::vector<MType> dyn;
  parse_positions(p, op, dyn);
  const MType r = parse_attrs_colon_type(p, op);
  p.expect_word("from", "after the result type " + of(op));
  op.operand_types = {p.parse_type("as the vector type " + of(op))};
  op.operand_types.insert(op.operand_types.end(), dyn.begin(), dyn.end());
  op.result_types = {r};
}

// `%s, %v[0] {attrs} : f32 into vector<8xf32>`
void insert(Parser& p, Operation& op) {
  op.operands.push_back(p.parse_value_use("as the inserted value " + of(op)));
  p.expect_punct(",", "after the inserted value " + of(op));
  op.operands.push_back(p.parse_value_use("as the destination " + of(op)));
  std::vector<MType> dyn;
  parse_positions(p, op, dyn);
  const MType s = parse_attrs_colon_type(p, op);
  p.expect_word("into", "after the inserted type " + of(op));
  const MType d = p.parse_type("as the destination type " + of(op));
  op.operand_types = {s, d};
  op.operand_types.insert(op.operand_types.end(), dyn.begin(), dyn.end());
  op.result_types = {d};
}

// `%v, [1, 0] {attrs} : A to B`
void transpose(Parser& p, Operation& op) {
  op.operands.push_back(p.parse_value_use("as the vector " + of(op)));
  p.expect_punct(",", "after the vector " + of(op));
  op.attrs.emplace_back("permutation", p.parse_bracketed_int_array("i64", "as the permutation " + of(op)));
  const MType from = parse_attrs_colon_type(p, op);
  p.expect_word("to", "after the source type " + of(op));
  op.operand_types = {from};
  op.result_types = {p.parse_type("as the result type " + of(op))};
}

// `%s {attrs} : vector<...>`: the operand is the element.
void splat(Parser& p, Operation& op) {
  op.operands.push_back(p.parse_value_use("as the operand " + of(op)));
  const MType v = parse_attrs_colon_type(p, op);
  op.operand_types = {element_type(v)};
  op.result_types = {v};
}

// `{attrs} %a, %b, %acc : A, B into C`
void contract(Parser& p, Operation& op) {
  p.parse_optional_attr_dict(op);
  op.operands = p.parse_value_uses("as the operands " + of(op));
  if (op.operands.size() != 3) p.fail_expected("three operands (lhs, rhs, accumulator)", of(op));
  const MType a = parse_colon_type(p, op);
  p.expect_punct(",", "after the lhs type " + of(op));
  const MType b = p.parse_type("as the rhs type " + of(op));
  p.expect_word("into", "after the rhs type " + of(op));
  const MType c = p.parse_type("as the accumulator type " + of(op));
  op.operand_types = {a, b, c};
  op.result_types = {c};
}

// `%m[%i, ...] {attrs} : memref<...>`: the result is the element.
void memref_load(Parser& p, Operation& op) {
  const size_t n = parse_base_and_indices(p, op);
  const MType mem = parse_attrs_colon_type(p, op);
  op.operand_types = {mem};
  append_index_types(op, n);
  op.result_types = {element_type(mem)};
}

// `%v, %m[%i, ...] {attrs} : memref<...>`
void memref_store(Parser& p, Operation& op) {
  op.operands.push_back(p.parse_value_use("as the stored value " + of(op)));
  p.expect_punct(",", "after the stored value " + of(op));
  const size_t n = parse_base_and_indices(p, op);
  const MType mem = parse_attrs_colon_type(p, op);
  op.operand_types = {element_type(mem), mem};
  append_index_types(op, n);
}

// `(%d, ...)[%s, ...] {attrs} : memref<...>`: dynamic sizes, then symbols.
void alloc(Parser& p, Operation& op) {
  p.expect_punct("(", "to open the dynamic sizes " + of(op));
  op.operands = p.parse_value_uses("as the dynamic sizes " + of(op));
  p.expect_punct(")", "to close the dynamic sizes " + of(op));
  const auto sizes = static_cast<int64_t>(op.operands.size());
  int64_t symbols = 0;
  if (p.at_punct("[")) {
    const std::vector<std::string> s = p.parse_bracketed_values("as the symbol operands " + of(op));
    op.operands.insert(op.operands.end(), s.begin(), s.end());
    symbols = static_cast<int64_t>(s.size());
  }
  set_segments(op, {sizes, symbols});
  const MType mem = parse_attrs_colon_type(p, op);
  append_index_types(op, op.operands.size());
  op.result_types = {mem};
}

}  // namespace

void add_vector_memref_forms(PrettyFormTable& t) {
  t.emplace("vector.load", vector_load);
  t.emplace("vector.store", vector_store);
  for (std::string_view n : {"vector.broadcast", "vector.shape_cast", "vector.extract_strided_slice", "vector.bitcast"})
    t.emplace(n, to_form);
  t.emplace("vector.multi_reduction", multi_reduction);
  t.emplace("vector.reduction", reduction);
  t.emplace("vector.extract", extract);
  t.emplace("vector.insert", insert);
  t.emplace("vector.transpose", transpose);
  t.emplace("vector.splat", splat);
  t.emplace("vector.contract", contract);
  t.emplace("memref.load", memref_load);
  t.emplace("memref.store", memref_store);
  t.emplace("memref.alloca", alloc);
  t.emplace("memref.alloc", alloc);
}

}  // namespace tessera::mlir_text
