// Pretty forms of the Mosaic `tpu` dialect (assembly formats of
// jaxlib/mosaic/dialect/tpu/tpu_ops.td as JAX 0.11 prints them). Operand
// groups and operandSegmentSizes are those of the generic form JAX 0.11
// accepts (what `tessera emit mosaic` writes): enqueue_dma has 7 groups,
// wait_dma2 5, sem_signal 5.
#include "frontends/mosaic/pretty_forms.h"

namespace tessera::mlir_text {
namespace {

void append_types(std::vector<MType>& out, size_t n, std::string_view type) {
  for (size_t i = 0; i < n; ++i) out.push_back(scalar_type(type));
}

// `masked %m` (an optional mask operand).
std::vector<std::string> parse_optional_mask(Parser& p, const Operation& op) {
  if (!p.consume_word("masked")) return {};
  return {p.parse_value_use("as the mask " + of(op))};
}

// `: memref<...>, vector<...>, [mask type]`: the trailing comma stays when
// there is no mask (the printer writes the empty optional type).
void parse_memref_vector_mask_types(Parser& p, Operation& op, MType& mem, MType& vec, bool has_mask, MType& mask) {
  mem = parse_attrs_colon_type(p, op);
  p.expect_punct(",", "after the memref type " + of(op));
  vec = p.parse_type("as the vector type " + of(op));
  const bool comma = p.consume_punct(",");
  if (has_mask) {
    if (!comma) p.fail_expected("`,` and the mask type", of(op));
    mask = p.parse_type("as the mask type " + of(op));
  }
}

// `%m[%i, ...], %v [masked %mask] {attrs} : memref, vector, [mask]`
// ODS operands: valueToStore, base, indices, mask.
void vector_store(Parser& p, Operation& op) {
  const std::string base = p.parse_value_use("as the base " + of(op));
  const std::vector<std::string> idx = p.parse_bracketed_values("after the base " + of(op));
  p.expect_punct(",", "after the indices " + of(op));
  const std::string value = p.parse_value_use("as the stored value " + of(op));
  const std::vector<std::string> mask = parse_optional_mask(p, op);
  MType mem, vec, mask_type;
  parse_memref_vector_mask_types(p, op, mem, vec, !mask.empty(), mask_type);
  op.operands = {value, base};
  op.operands.insert(op.operands.end(), idx.begin(), idx.end());
  op.operands.insert(op.operands.end(), mask.begin(), mask.end());
  op.operand_types = {vec, mem};
  append_types(op.operand_types, idx.size(), "index");
  if (!mask.empty()) op.operand_types.push_back(mask_type);
  set_segments(op, {1, 1, static_cast<int64_t>(idx.size()), static_cast<int64_t>(mask.size())});
}

// `%m[%i, ...] [masked %mask] {attrs} : memref, vector, [mask]`
// ODS operands: base, indices, mask.
void vector_load(Parser& p, Operation& op) {
  op.operands.push_back(p.parse_value_use("as the base " + of(op)));
  const std::vector<std::string> idx = p.parse_bracketed_values("after the base " + of(op));
  const std::vector<std::string> mask = parse_optional_mask(p, op);
  MType mem, vec, mask_type;
  parse_memref_vector_mask_types(p, op, mem, vec, !mask.empty(), mask_type);
  op.operands.insert(op.operands.end(), idx.begin(), idx.end());
  op.operands.insert(op.operands.end(), mask.begin(), mask.end());
  op.operand_types = {mem};
  append_types(op.operand_types, idx.size(), "index");
  if (!mask.empty()) op.operand_types.push_back(mask_type);
  op.result_types = {vec};
  set_segments(op, {1, static_cast<int64_t>(idx.size()), static_cast<int64_t>(mask.size())});
}

// `%m[%i, ...] {attrs} : memref, vector`
void strided_load(Parser& p, Operation& op) {
  op.operands.push_back(p.parse_value_use("as the base " + of(op)));
  const std::vector<std::string> idx = p.parse_bracketed_values("after the base " + of(op));
  op.operands.insert(op.operands.end(), idx.begin(), idx.end());
  const MType mem = parse_attrs_colon_type(p, op);
  p.expect_punct(",", "after the memref type " + of(op));
  op.operand_types = {mem};
  append_types(op.operand_types, idx.size(), "index");
  op.result_types = {p.parse_type("as the vector type " + of(op))};
}

// `%m[%i, ...], %v {attrs} : memref, vector`; operands valueToStore, base, indices.
void strided_store(Parser& p, Operation& op) {
  const std::string base = p.parse_value_use("as the base " + of(op));
  const std::vector<std::string> idx = p.parse_bracketed_values("after the base " + of(op));
  p.expect_punct(",", "after the indices " + of(op));
  op.operands = {p.parse_value_use("as the stored value " + of(op)), base};
  op.operands.insert(op.operands.end(), idx.begin(), idx.end());
  const MType mem = parse_attrs_colon_type(p, op);
  p.expect_punct(",", "after the memref type " + of(op));
  op.operand_types = {p.parse_type("as the vector type " + of(op)), mem};
  append_types(op.operand_types, idx.size(), "index");
}

// `%a, %b, %acc {attrs} : A, B, C -> R`
void matmul(Parser& p, Operation& op) {
  op.operands = p.parse_value_uses("as the operands " + of(op));
  if (op.operands.size() != 3) p.fail_expected("three operands (lhs, rhs, accumulator)", of(op));
  p.parse_optional_attr_dict(op);
  p.expect_punct(":", "after the operands " + of(op));
  op.operand_types = p.parse_type_list("as the operand types " + of(op));
  if (op.operand_types.size() != 3) p.fail("`" + op.name + "` needs three operand types");
  op.result_types = parse_arrow_results(p, op);
}

// `{attrs} : T`: no operands, one result.
void result_only(Parser& p, Operation& op) {
  op.result_types = {parse_attrs_colon_type(p, op)};
}

// `%v, [1, 0] {attrs} : A -> B`
void transpose(Parser& p, Operation& op) {
  op.operands.push_back(p.parse_value_use("as the vector " + of(op)));
  p.expect_punct(",", "after the vector " + of(op));
  op.attrs.emplace_back("permutation", p.parse_bracketed_int_array("i64", "as the permutation " + of(op)));
  op.operand_types = {parse_attrs_colon_type(p, op)};
  p.expect_punct("->", "after the operand type " + of(op));
  op.result_types = {p.parse_type("as the result type " + of(op))};
}

void arrow_form(Parser& p, Operation& op) { parse_one_to_one(p, op, "->"); }

// `%m[%i, ...] [<%d, ...>] {attrs} : A -> B`; operands mem_ref, base_idx, dynamic_sizes.
void memref_slice(Parser& p, Operation& op) {
  op.operands.push_back(p.parse_value_use("as the memref " + of(op)));
  const std::vector<std::string> idx = p.parse_bracketed_values("after the memref " + of(op));
  std::vector<std::string> sizes;
  if (p.consume_punct("<")) {
    sizes = p.parse_value_uses("as the dynamic sizes " + of(op));
    p.expect_punct(">", "to close the dynamic sizes " + of(op));
  }
  op.operands.insert(op.operands.end(), idx.begin(), idx.end());
  op.operands.insert(op.operands.end(), sizes.begin(), sizes.end());
  set_segments(op, {1, static_cast<int64_t>(idx.size()), static_cast<int64_t>(sizes.size())});
  op.operand_types = {parse_attrs_colon_type(p, op)};
  append_types(op.operand_types, idx.size() + sizes.size(), "i32");
  p.expect_punct("->", "after the memref type " + of(op));
  op.result_types = {p.parse_type("as the result type " + of(op))};
}

// One operand group of the keyword forms: `kw(%v : T)`, or `kw(%v)` for the
// untyped i32 ids.
struct Group {
  std::string_view keyword;
  bool typed;
  bool required;
};

// Groups in any order (each at most once), then `{attrs}`; operands and
// segment sizes in the order of `groups` (the ODS order).
void keyword_groups(Parser& p, Operation& op, std::initializer_list<Group> groups) {
  std::vector<std::string> values(groups.size());
  std::vector<MType> types(groups.size());
  std::vector<bool> present(groups.size(), false);
  while (p.tok().kind == MTok::BareId) {
    size_t k = 0;
    for (const Group& g : groups) {
      if (p.at_word(g.keyword)) break;
      ++k;
    }
    if (k == groups.size()) break;
    const std::string kw(p.tok().text);
    if (present[k]) p.fail("`" + kw + "` is given twice " + of(op));
    p.advance();
    p.expect_punct("(", "after `" + kw + "` " + of(op));
    values[k] = p.parse_value_use("in `" + kw + "(...)` " + of(op));
    const Group& g = *(groups.begin() + static_cast<std::ptrdiff_t>(k));
    if (g.typed) {
      p.expect_punct(":", "after the value of `" + kw + "(...)` " + of(op));
      types[k] = p.parse_type("in `" + kw + "(...)` " + of(op));
    } else {
      types[k] = scalar_type("i32");
    }
    p.expect_punct(")", "to close `" + kw + "(...)` " + of(op));
    present[k] = true;
  }
  std::vector<int64_t> sizes;
  size_t k = 0;
  for (const Group& g : groups) {
    if (g.required && !present[k]) p.fail_expected("`" + std::string(g.keyword) + "(...)`", of(op));
    if (present[k]) {
      op.operands.push_back(values[k]);
      op.operand_types.push_back(types[k]);
    }
    sizes.push_back(present[k] ? 1 : 0);
    ++k;
  }
  p.parse_optional_attr_dict(op);
  op.attrs.emplace_back("operandSegmentSizes", dense_array_attr(std::move(sizes), "i32"));
}

// `source(..) target(..) [source_semaphore(..)] target_semaphore(..)
// [device_id(..)] [core_id(..)] [subcore_id(..)]`: the printed order is not
// the ODS order (source, source_semaphore, target, target_semaphore, ...).
void enqueue_dma(Parser& p, Operation& op) {
  keyword_groups(p, op,
                 {{"source", true, true},
                  {"source_semaphore", true, false},
                  {"target", true, true},
                  {"target_semaphore", true, true},
                  {"device_id", false, false},
                  {"core_id", false, false},
                  {"subcore_id", false, false}});
}

// `semaphore(..) src(..) dst(..) [device_id(..)] [core_id(..)]`
void wait_dma2(Parser& p, Operation& op) {
  keyword_groups(p, op,
                 {{"semaphore", true, true},
                  {"src", true, true},
                  {"dst", true, true},
                  {"device_id", false, false},
                  {"core_id", false, false}});
}

// Not AttrSizedOperandSegments: the segment sizes are dropped again.
void without_segments(Operation& op) {
  std::erase_if(op.attrs, [](const auto& kv) { return kv.first == "operandSegmentSizes"; });
}

void wait_indirect_dma(Parser& p, Operation& op) {
  keyword_groups(p, op, {{"semaphore", true, true}, {"src", true, true}, {"dst", true, true}});
  without_segments(op);
}

void enqueue_indirect_dma(Parser& p, Operation& op) {
  keyword_groups(p, op,
                 {{"source", true, true},
                  {"target", true, true},
                  {"offsets", true, true},
                  {"semaphore", true, true},
                  {"offset_filter", false, false}});
  without_segments(op);
}

// `%sem, %n [device_id %d] [core_id %c] [subcore_id %s] {attrs} : T`
void sem_signal(Parser& p, Operation& op) {
  op.operands = p.parse_value_uses("as the semaphore and amount " + of(op));
  if (op.operands.size() != 2) p.fail_expected("two operands (semaphore, amount)", of(op));
  std::vector<int64_t> sizes{1, 1};
  for (std::string_view kw : {"device_id", "core_id", "subcore_id"}) {
    const bool present = p.consume_word(kw);
    if (present) op.operands.push_back(p.parse_value_use("after `" + std::string(kw) + "` " + of(op)));
    sizes.push_back(present ? 1 : 0);
  }
  op.attrs.emplace_back("operandSegmentSizes", dense_array_attr(std::move(sizes), "i32"));
  op.operand_types = {parse_attrs_colon_type(p, op)};
  append_types(op.operand_types, op.operands.size() - 1, "i32");
}

// `%sem, %n {attrs} : T`
void sem_wait(Parser& p, Operation& op) {
  op.operands = p.parse_value_uses("as the semaphore and amount " + of(op));
  if (op.operands.size() != 2) p.fail_expected("two operands (semaphore, amount)", of(op));
  op.operand_types = {parse_attrs_colon_type(p, op), scalar_type("i32")};
}

// `%sem {attrs} : T -> i32`
void sem_read(Parser& p, Operation& op) { parse_one_to_one(p, op, "->"); }

// `$dim {attrs} : i32`
void iteration_bound(Parser& p, Operation& op) {
  op.attrs.emplace_back("dim", int_attr(p.parse_int("as the grid dimension " + of(op)), "i32"));
  result_only(p, op);
}

// `%v, $multiple {attrs} : T`
void assume_multiple(Parser& p, Operation& op) {
  op.operands.push_back(p.parse_value_use("as the value " + of(op)));
  p.expect_punct(",", "after the value " + of(op));
  op.attrs.emplace_back("multiple", int_attr(p.parse_int("as the multiple " + of(op)), "i32"));
  const MType t = parse_attrs_colon_type(p, op);
  op.operand_types = {t};
  op.result_types = {t};
}

// `{attrs} (%v, ... : T, ...)?`
void yield(Parser& p, Operation& op) {
  p.parse_optional_attr_dict(op);
  parse_values_colon_types(p, op);
}

// `%ns {attrs}`
void delay(Parser& p, Operation& op) {
  op.operands.push_back(p.parse_value_use("as the delay " + of(op)));
  op.operand_types = {scalar_type("i32")};
  p.parse_optional_attr_dict(op);
}

// `%v by %amount dim $d {attrs} : T, i32 -> R`
void dynamic_rotate(Parser& p, Operation& op) {
  op.operands.push_back(p.parse_value_use("as the vector " + of(op)));
  p.expect_word("by", "after the vector " + of(op));
  op.operands.push_back(p.parse_value_use("as the amount " + of(op)));
  p.expect_word("dim", "after the amount " + of(op));
  op.attrs.emplace_back("dimension", int_attr(p.parse_int("as the dimension " + of(op)), "si32"));
  const MType v = parse_attrs_colon_type(p, op);
  p.expect_punct(",", "after the vector type " + of(op));
  op.operand_types = {v, p.parse_type("as the amount type " + of(op))};
  op.result_types = parse_arrow_results(p, op);
}

// `%a, %b, ... in $dim {attrs} : A, B, ... -> R`
void concatenate(Parser& p, Operation& op) {
  op.operands = p.parse_value_uses("as the sources " + of(op));
  p.expect_word("in", "after the sources " + of(op));
  op.attrs.emplace_back("dimension", int_attr(p.parse_int("as the dimension " + of(op)), "i32"));
  p.parse_optional_attr_dict(op);
  p.expect_punct(":", "after the dimension " + of(op));
  op.operand_types = p.parse_type_list("as the source types " + of(op));
  if (op.operand_types.size() != op.operands.size()) p.fail("`" + op.name + "` needs one type per source");
  op.result_types = parse_arrow_results(p, op);
}

}  // namespace

void add_tpu_forms(PrettyFormTable& t) {
  t.emplace("tpu.vector_store", vector_store);
  t.emplace("tpu.vector_load", vector_load);
  t.emplace("tpu.strided_load", strided_load);
  t.emplace("tpu.strided_store", strided_store);
  t.emplace("tpu.matmul", matmul);
  for (std::string_view n : {"tpu.iota", "tpu.device_id", "tpu.sem_alloc", "tpu.sem_barrier", "tpu.internal_scratch"})
    t.emplace(n, result_only);
  t.emplace("tpu.transpose", transpose);
  for (std::string_view n :
       {"tpu.memref_squeeze", "tpu.memref_reshape", "tpu.memref_bitcast", "tpu.reinterpret_cast",
        "tpu.erase_memref_layout", "tpu.assume_layout", "tpu.bitcast", "tpu.bitcast_vreg", "tpu.reciprocal",
        "tpu.relayout", "tpu.mask_cast", "tpu.reshape", "tpu.extf", "tpu.truncf", "tpu.fptosi", "tpu.fptoui",
        "tpu.sitofp", "tpu.uitofp", "tpu.all_reduce", "tpu.reduce_index", "tpu.weird"})
    t.emplace(n, arrow_form);
  t.emplace("tpu.memref_slice", memref_slice);
  t.emplace("tpu.enqueue_dma", enqueue_dma);
  t.emplace("tpu.wait_dma2", wait_dma2);
  t.emplace("tpu.wait_indirect_dma", wait_indirect_dma);
  t.emplace("tpu.enqueue_indirect_dma", enqueue_indirect_dma);
  t.emplace("tpu.sem_signal", sem_signal);
  t.emplace("tpu.sem_wait", sem_wait);
  t.emplace("tpu.sem_read", sem_read);
  t.emplace("tpu.iteration_bound", iteration_bound);
  t.emplace("tpu.assume_multiple", assume_multiple);
  t.emplace("tpu.yield", yield);
  t.emplace("tpu.delay", delay);
  t.emplace("tpu.dynamic_rotate", dynamic_rotate);
  t.emplace("tpu.concatenate", concatenate);
}

}  // namespace tessera::mlir_text
