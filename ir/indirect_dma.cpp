#include "ir/indirect_dma.h"

#include <cctype>

#include "ir/prims/shape_util.h"

namespace tessera {
namespace {

// Pallas names memory spaces by their enum name: `VMEM`, `HBM`.
std::string space_upper(MemSpace s) {
  std::string n(mem_space_name(s));
  for (char& c : n) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return n;
}

const IndexEntry* indirect_of(const Op& op, int k) {
  if (static_cast<int>(op.num_main_operands()) <= k) return nullptr;
  const Indexer* ix = op.indexer_for(op.main_operand_index(k));
  return ix ? indirect_entry(*ix) : nullptr;
}

}  // namespace

bool is_hbm_side(MemSpace s) { return s == MemSpace::any || s == MemSpace::hbm || s == MemSpace::vmem_shared; }

bool has_indirect_index(const Op& op) {
  for (const Indexer& ix : op.indexers)
    if (indirect_entry(ix)) return true;
  return false;
}

std::optional<IndirectDma> indirect_dma(const Op& op) {
  if (op.name() != "dma_start") return std::nullopt;
  for (int k = 0; k < 2; ++k)
    if (const IndexEntry* e = indirect_of(op, k)) {
      IndirectDma d;
      d.indexed = k;
      d.offsets = e->dyn_start;
      d.num_rows = e->size;
      d.add = op.bool_param("add");
      return d;
    }
  return std::nullopt;
}

void check_indirect_dma(const Op& op) {
  using prims::fail;
  const IndexEntry* src_ix = indirect_of(op, 0);
  const IndexEntry* dst_ix = indirect_of(op, 1);
  bool add = op.bool_param("add");
  if (!src_ix && !dst_ix) {
    if (add)
      fail(op, "DMAs with `add=True` must (for now) specify offsets of the majormost dimension: index the destination "
               "by a Ref of offsets, `%dst[%offsets, :]`");
    return;
  }
  MemSpace src = prims::ref_operand(op, 0).mem_space(), dst = prims::ref_operand(op, 1).mem_space();
  if (is_hbm_side(src) && dst == MemSpace::vmem) {
    if (dst_ix) fail(op, "Only the source ref can be indexed when doing a gather via `pltpu.async_copy`");
  } else if (src == MemSpace::vmem && is_hbm_side(dst)) {
    if (src_ix) fail(op, "Only the destination ref can be indexed when doing a scatter via `pltpu.async_copy`");
  } else {
    fail(op, "Scatter/gather via `pltpu.async_copy` from " + space_upper(src) + " to " + space_upper(dst) +
                 " is not supported");
  }
  if (op.num_main_operands() != 3)
    fail(op, "Scatter/gather to or from a remote device via `pltpu.async_copy` is not supported");
  int k = src_ix ? 0 : 1;
  const Indexer& ix = *op.indexer_for(op.main_operand_index(k));
  for (size_t d = 0; d < ix.entries.size(); ++d) {
    bool ok = d == 0 ? ix.entries[d].is_indirect() : ix.entries[d].kind == IndexEntry::Full;
    if (!ok) fail(op, "Only indexing along the major dimension is supported in scatter/gather via `pltpu.async_copy`");
  }
  const Type& offsets = op.operands.at(ix.entries[0].dyn_start).type();
  if (offsets.dtype() != DType::i32)
    fail(op, "Only int32 indices are supported by scatter/gather via `pltpu.async_copy`, got " + offsets.str());
  if (offsets.mem_space() != MemSpace::vmem)
    fail(op, "Indices for scatter/gather via `pltpu.async_copy` must be in VMEM, got " + space_upper(offsets.mem_space()));
  if (offsets.rank() != 1) fail(op, "the offsets of a scatter/gather must be a 1-D Ref, got " + offsets.str());
  if (add && src_ix)
    fail(op, "DMAs with `add=True` accumulate into the destination: only a scatter (the destination indexed by offsets) "
             "may add, not a gather");
}

}  // namespace tessera
