#include "ir/params.h"

namespace tessera {

Shape indexed_shape(const Indexer& ix, const Shape& ref_shape) {
  Shape out;
  out.reserve(ref_shape.size());
  for (size_t d = 0; d < ref_shape.size(); ++d) {
    if (d >= ix.entries.size()) { out.push_back(ref_shape[d]); continue; }
    const IndexEntry& e = ix.entries[d];
    if (e.kind == IndexEntry::Full) out.push_back(ref_shape[d]);
    else if (e.kind == IndexEntry::Slice) out.push_back(e.size);
  }
  return out;
}

std::vector<BlockDim> block_dims(const BlockSpec& spec, const Shape& shape) {
  if (spec.block) return *spec.block;
  std::vector<BlockDim> dims;
  for (int64_t d : shape) dims.push_back(BlockDim::blocked(d));
  return dims;
}

Shape kernel_block_shape(const std::vector<BlockDim>& dims) {
  Shape s;
  for (const BlockDim& d : dims)
    if (d.kind != BlockDimKind::Squeezed) s.push_back(d.size);
  return s;
}

int index_map_arity(const std::vector<BlockDim>& dims) {
  int n = 0;
  for (const BlockDim& d : dims) n += d.kind == BlockDimKind::BoundedSlice ? 2 : 1;
  return n;
}

}  // namespace tessera
