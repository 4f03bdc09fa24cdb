#include "backends/mosaic/ref_indexing.h"

#include "backends/mosaic/constants.h"
#include "backends/mosaic/mlir_types.h"

namespace tessera::backends::mosaic {

std::vector<DimIndex> memref_indices(const Op& op, const RefView& view, const Indexer* ix) {
  std::vector<DimIndex> out(view.memref_shape.size());
  for (size_t d = 0; d < out.size(); ++d) {
    out[d].size = view.memref_shape[d];
    if (view.is_unit_dim(static_cast<int>(d))) out[d].kept = false;  // start 0, size 1
  }
  if (!ix) return out;
  for (size_t k = 0; k < ix->entries.size() && k < view.dims.size(); ++k) {
    const IndexEntry& e = ix->entries[k];
    DimIndex& di = out[view.dims[k]];
    if (e.kind == IndexEntry::Full) continue;
    if (e.is_dynamic()) di.dyn = &op.operands[e.dyn_start];
    di.start = e.start;
    di.size = e.kind == IndexEntry::Point ? 1 : e.size;
    di.stride = e.kind == IndexEntry::Slice ? e.stride : 1;
    di.kept = e.kind != IndexEntry::Point;
    if (e.has_dynamic_size()) di.dyn_size = &op.operands[e.dyn_size];
  }
  return out;
}

Shape read_shape(const std::vector<DimIndex>& idx) {
  Shape s;
  for (const DimIndex& d : idx) s.push_back(d.size);
  return s;
}

Shape value_shape(const std::vector<DimIndex>& idx) {
  Shape s;
  for (const DimIndex& d : idx)
    if (d.kept) s.push_back(d.size);
  return s;
}

bool is_whole(const std::vector<DimIndex>& idx, const RefView& view) {
  for (size_t d = 0; d < idx.size(); ++d)
    if (!idx[d].kept || idx[d].dyn || idx[d].dyn_size || idx[d].start != 0 || idx[d].size != view.memref_shape[d] || idx[d].stride != 1)
      return false;
  return true;
}

bool has_stride(const std::vector<DimIndex>& idx) {
  for (const DimIndex& d : idx)
    if (d.stride != 1) return true;
  return false;
}

std::vector<std::string> index_starts(KernelContext& ctx, const std::vector<DimIndex>& idx) {
  std::vector<std::string> out;
  for (const DimIndex& d : idx) {
    if (d.dyn && d.dyn->is_var()) {
      std::string v = ctx.use(*d.dyn), name = ctx.fresh();
      ctx.line(name + " = arith.index_cast " + v + " : " + element_type(d.dyn->type().dtype()) + " to index");
      out.push_back(name);
    } else {
      out.push_back(index_constant(ctx, d.dyn ? d.dyn->literal().as_int() : d.start));
    }
  }
  return out;
}

std::vector<std::string> i32_starts(KernelContext& ctx, const std::vector<DimIndex>& idx) {
  std::vector<std::string> out;
  for (const DimIndex& d : idx) {
    if (d.dyn && d.dyn->is_var()) out.push_back(ctx.use(*d.dyn));
    else out.push_back(i32_constant(ctx, d.dyn ? d.dyn->literal().as_int() : d.start));
  }
  return out;
}

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

namespace {
std::string int_array(const char* elt, const std::vector<int64_t>& v) {
  std::string out = std::string("array<") + elt;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : ": ") + std::to_string(v[i]);
  return out + ">";
}
}  // namespace

std::string i32_array(const std::vector<int64_t>& v) { return int_array("i32", v); }
std::string i64_array(const std::vector<int64_t>& v) { return int_array("i64", v); }

}  // namespace tessera::backends::mosaic
