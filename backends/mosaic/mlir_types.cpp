#include "backends/mosaic/mlir_types.h"

#include <stdexcept>

namespace tessera::backends::mosaic {

std::string element_type(DType d) {
  switch (d) {
    case DType::f32: return "f32";
    case DType::bf16: return "bf16";
    case DType::f16: return "f16";
    case DType::f64: return "f64";
    case DType::i1: return "i1";
    case DType::i8: case DType::u8: return "i8";
    case DType::i16: return "i16";
    case DType::i32: case DType::u32: return "i32";
    case DType::i64: return "i64";
    case DType::sem: case DType::barrier_sem: return "!tpu.semaphore";
    case DType::dma_sem: return "!tpu.dma_semaphore";
  }
  throw std::logic_error("mosaic: unknown dtype");
}

std::string memory_element_type(DType d) { return d == DType::i1 ? "i32" : element_type(d); }

std::string dims_prefix(const Shape& shape) {
  std::string out;
  for (int64_t n : shape) out += std::to_string(n) + "x";
  return out;
}

std::string vector_type(const Shape& shape, DType d) {
  if (shape.empty()) throw std::logic_error("mosaic: vector_type of a rank-0 shape");
  return "vector<" + dims_prefix(shape) + element_type(d) + ">";
}

std::string value_type(const ArrayType& a) { return a.shape.empty() ? element_type(a.dtype) : vector_type(a.shape, a.dtype); }
std::string value_type(const Type& t) { return value_type(t.array_type()); }

std::string memory_space(MemSpace m) {
  switch (m) {
    case MemSpace::any: return "#tpu.memory_space<any>";
    case MemSpace::hbm: return "#tpu.memory_space<hbm>";
    case MemSpace::vmem: return "#tpu.memory_space<vmem>";
    case MemSpace::smem: return "#tpu.memory_space<smem>";
    case MemSpace::vmem_shared: return "#tpu.memory_space<vmem_shared>";
    case MemSpace::semaphore: return "#tpu.memory_space<semaphore_mem>";
    case MemSpace::index: case MemSpace::host: break;
  }
  throw std::logic_error("mosaic: memory space " + std::string(mem_space_name(m)) + " has no Mosaic spelling");
}

std::string memref_type(const Shape& shape, DType d, MemSpace m) {
  return "memref<" + dims_prefix(shape) + memory_element_type(d) + ", " + memory_space(m) + ">";
}
std::string memref_type(const Type& ref) { return memref_type(ref.shape(), ref.dtype(), ref.mem_space()); }

}  // namespace tessera::backends::mosaic

namespace tessera::backends::mosaic {

std::string memref_type(const Shape& shape, const std::vector<bool>& dynamic, DType d, MemSpace m) {
  std::string dims;
  for (size_t i = 0; i < shape.size(); ++i) dims += (i < dynamic.size() && dynamic[i] ? "?" : std::to_string(shape[i])) + "x";
  return "memref<" + dims + memory_element_type(d) + ", " + memory_space(m) + ">";
}

std::string mlir_string_body(std::string_view s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') out += std::string("\\") + c;
    else if (u < 0x20 || u >= 0x7F) out += std::string("\\") + hex[u >> 4] + hex[u & 15];
    else out += c;
  }
  return out;
}

}  // namespace tessera::backends::mosaic
