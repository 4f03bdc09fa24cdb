// How verifier messages name values, bodies, types and block shapes.
#include "verify/check.h"

namespace tessera::verify_detail {

std::string var_label(const Var* v) {
  if (!v) return "a missing value";
  if (!v->name.empty()) return "%" + v->name;
  return "a value of type " + v->type.str();
}

std::string body_label(const Body& b) {
  std::string kind;
  switch (b.kind()) {
    case BodyKind::func: kind = "function"; break;
    case BodyKind::kernel: kind = "kernel"; break;
    case BodyKind::index_map: kind = "index map"; break;
    case BodyKind::fn: kind = "fn"; break;
  }
  if (b.name().empty()) return "inline " + kind;
  return kind + " @" + b.name();
}

std::string types_str(const std::vector<Type>& ts) {
  std::string s = "(";
  for (size_t i = 0; i < ts.size(); ++i) s += (i ? ", " : "") + ts[i].str();
  return s + ")";
}

std::string block_dims_str(const std::vector<BlockDim>& dims) {
  std::string s = "(";
  for (size_t i = 0; i < dims.size(); ++i) {
    const BlockDim& d = dims[i];
    if (i) s += ", ";
    switch (d.kind) {
      case BlockDimKind::Blocked: s += std::to_string(d.size); break;
      case BlockDimKind::Squeezed: s += "squeezed"; break;
      case BlockDimKind::Element:
        s += "element(" + std::to_string(d.size) + ", " + std::to_string(d.pad_lo) + ", " + std::to_string(d.pad_hi) + ")";
        break;
      case BlockDimKind::BoundedSlice: s += "bounded(" + std::to_string(d.size) + ")"; break;
    }
  }
  return s + (dims.size() == 1 ? ",)" : ")");
}

std::string Context::key() const {
  std::string k;
  k += known ? 'K' : 'u';
  k += in_kernel ? 'k' : '-';
  k += in_index_map ? 'i' : '-';
  k += distributed ? 'd' : '-';
  k += std::to_string(grid_rank);
  for (const std::string& a : axis_names) k += "," + a;
  k += ";";
  for (const std::string& a : grid_names) k += "," + a;
  return k;
}

}  // namespace tessera::verify_detail
