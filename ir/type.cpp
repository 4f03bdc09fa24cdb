#include "ir/type.h"

#include <array>

namespace tessera {
namespace {
constexpr std::array<std::string_view, 8> kSpaces = {"any", "hbm", "vmem", "smem", "vmem_shared", "semaphore", "index", "host"};
}

int64_t saturating_mul(int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

int64_t saturating_add(int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

int64_t num_elements(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n = saturating_mul(n, d);
  return n;
}

std::string shape_str(const Shape& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

std::string_view mem_space_name(MemSpace m) { return kSpaces[static_cast<size_t>(m)]; }

std::optional<MemSpace> parse_mem_space(std::string_view name) {
  for (size_t i = 0; i < kSpaces.size(); ++i)
    if (kSpaces[i] == name) return static_cast<MemSpace>(i);
  return std::nullopt;
}

std::string Type::str() const {
  std::string a(dtype_name(array_.dtype));
  if (!array_.shape.empty()) {  // scalars print as the bare dtype: `i32`
    a += "[";
    for (size_t i = 0; i < array_.shape.size(); ++i) a += (i ? "," : "") + std::to_string(array_.shape[i]);
    a += "]";
  }
  if (!is_ref_) return a;
  return "ref<" + a + ", " + std::string(mem_space_name(space_)) + ">";
}

const Type& Type::scalar_ref(DType dtype) {
  static const auto table = [] {
    constexpr int n = static_cast<int>(DType::barrier_sem) + 1;
    std::array<Type, n> t;
    for (int d = 0; d < n; ++d) t[d] = scalar(static_cast<DType>(d));
    return t;
  }();
  return table.at(static_cast<size_t>(dtype));
}

}  // namespace tessera
