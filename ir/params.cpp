#include "ir/params.h"

namespace tessera {

bool is_index_operand(const std::vector<Indexer>& indexers, int i) {
  for (const Indexer& ix : indexers)
    for (const IndexEntry& e : ix.entries)
      if ((e.is_dynamic() && e.dyn_start == i) || (e.has_dynamic_size() && e.dyn_size == i)) return true;
  return false;
}

Shape indexed_shape(const Indexer& ix, const Shape& ref_shape) {
  Shape out;
  out.reserve(ref_shape.size());
  for (size_t d = 0; d < ref_shape.size(); ++d) {
    if (d >= ix.entries.size()) { out.push_back(ref_shape[d]); continue; }
    const IndexEntry& e = ix.entries[d];
    if (e.kind == IndexEntry::Full) out.push_back(ref_shape[d]);
    else if (e.kind == IndexEntry::Slice || e.kind == IndexEntry::Indirect) out.push_back(e.size);
  }
  return out;
}

bool has_dynamic_size(const Indexer& ix) {
  for (const IndexEntry& e : ix.entries)
    if (e.has_dynamic_size()) return true;
  return false;
}

const IndexEntry* indirect_entry(const Indexer& ix) {
  for (const IndexEntry& e : ix.entries)
    if (e.is_indirect()) return &e;
  return nullptr;
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

bool holds_kind(const Param& value, ParamKind kind) {
  switch (kind) {
    case ParamKind::Int: return std::holds_alternative<int64_t>(value);
    case ParamKind::Float: return std::holds_alternative<double>(value);
    case ParamKind::Bool: return std::holds_alternative<bool>(value);
    case ParamKind::Str:
    case ParamKind::Ident: return std::holds_alternative<std::string>(value);
    case ParamKind::DType: return std::holds_alternative<DType>(value);
    case ParamKind::Type: return std::holds_alternative<Type>(value);
    case ParamKind::Ints:
    case ParamKind::Dims:
    case ParamKind::OptInts: return std::holds_alternative<std::vector<int64_t>>(value);
    case ParamKind::Idents: return std::holds_alternative<std::vector<std::string>>(value);
    case ParamKind::Types: return std::holds_alternative<std::vector<Type>>(value);
    case ParamKind::Body: return std::holds_alternative<BodyPtr>(value);
    case ParamKind::Bodies: return std::holds_alternative<std::vector<BodyPtr>>(value);
    case ParamKind::Specs: return std::holds_alternative<std::vector<BlockSpec>>(value);
    case ParamKind::IntPairs: return std::holds_alternative<IntPairs>(value);
  }
  return false;
}

}  // namespace tessera
