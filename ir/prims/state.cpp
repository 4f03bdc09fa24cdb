// State primitives on Refs: get, swap, addupdate and masked load / store.
// Each reads or writes the region an indexer selects: `get %r[%i, 0:8]`.
#include "ir/prims/shape_util.h"

namespace tessera {
using namespace prims;
namespace {

// The indexed Ref (main operand 0) and the array type its indexer selects.
Type selected(const Op& op) {
  const Type& r = ref_operand(op, 0);
  if (is_semaphore(r.dtype())) fail(op, "cannot read or write a semaphore Ref " + r.str() + " as data");
  const Indexer* ix = op.indexer_for(op.main_operand_index(0));
  // A value's shape is static; only a DMA's region may vary at run time.
  if (ix && has_dynamic_size(*ix)) fail(op, "a dynamic slice size is only allowed in dma_start and dma_wait");
  if (ix && indirect_entry(*ix))
    fail(op, "indexing by a Ref of offsets (a gather / scatter) is only allowed in dma_start and dma_wait");
  Shape s = ix ? indexed_shape(*ix, r.shape()) : r.shape();
  if (ix) {
    for (size_t d = 0; d < ix->entries.size(); ++d) {
      const IndexEntry& e = ix->entries[d];
      if (e.kind == IndexEntry::Slice && (e.size < 0 || e.stride < 1)) fail(op, "slice sizes must be >= 0 and strides >= 1");
      if (e.is_dynamic()) continue;
      int64_t last = e.kind == IndexEntry::Slice ? e.start + (e.size - 1) * e.stride : e.start;
      if (e.kind != IndexEntry::Full && (e.start < 0 || (e.size > 0 && last >= r.shape()[d])))
        fail(op, "static index out of bounds in dimension " + std::to_string(d) + " of " + r.str());
    }
  }
  return Type::array(r.dtype(), std::move(s));
}

void expect_value(const Op& op, int k, const Type& want) {
  const Type& v = array_operand(op, k);
  if (v.dtype() != want.dtype() || (v.rank() != 0 && v.shape() != want.shape()))
    fail(op, "value " + v.str() + " does not match the indexed region " + want.str());
}

void expect_mask(const Op& op, int k, const Type& want) {
  Type m = array_operand(op, k);
  if (!is_bool(m.dtype()) || (m.rank() != 0 && m.shape() != want.shape()))
    fail(op, "mask " + m.str() + " must be bool with the indexed region's shape " + shape_str(want.shape()));
}

std::vector<Type> get_rule(const Op& op) {
  expect_operands(op, 1);
  return one_type(selected(op));
}

std::vector<Type> swap_rule(const Op& op) {
  expect_operands(op, 2);
  Type t = selected(op);
  expect_value(op, 1, t);
  return one_type(std::move(t));
}

std::vector<Type> addupdate_rule(const Op& op) {
  expect_operands(op, 2);
  Type t = selected(op);
  expect_value(op, 1, t);
  if (is_bool(t.dtype())) fail(op, "cannot accumulate into a bool Ref");
  return {};
}

std::vector<Type> load_rule(const Op& op) {
  expect_operands(op, 1, 3);
  Type t = selected(op);
  size_t n = op.num_main_operands();
  if (n >= 2) expect_mask(op, 1, t);
  if (n == 3) expect_value(op, 2, t);
  return {t};
}

std::vector<Type> store_rule(const Op& op) {
  expect_operands(op, 2, 3);
  Type t = selected(op);
  expect_value(op, 1, t);
  if (op.num_main_operands() == 3) expect_mask(op, 2, t);
  return {};
}

EffectRule on_ref(uint8_t bits) {
  return [bits](const Op& op, OpEffects& e) {
    e.add(op.main_operand_index(0), bits);
  };
}

}  // namespace

void register_state(Registry& r) {
  r.add({"get", "reads the indexed region of a Ref", {}, get_rule, on_ref(kRead), true});
  r.add({"swap", "writes a value into the indexed region, giving the old contents", {}, swap_rule,
         on_ref(kRead | kWrite), true});
  r.add({"addupdate", "adds a value into the indexed region", {}, addupdate_rule, on_ref(kAccum), true});
  r.add({"load", "masked read: load %r[idx], %mask, %other (lanes off the mask read other, or undefined)", {},
         load_rule, on_ref(kRead), true});
  r.add({"store", "masked write: store %r[idx], %value, %mask", {}, store_rule, on_ref(kWrite), true});
}

}  // namespace tessera
