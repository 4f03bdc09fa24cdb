#include "frontends/mosaic/mlir_ast.h"

#include <algorithm>

namespace tessera::mlir_text {
namespace {

const Attr* find_in(const std::vector<std::pair<std::string, Attr>>& entries, std::string_view key) {
  for (const auto& [k, v] : entries)
    if (k == key) return &v;
  return nullptr;
}

}  // namespace

const Attr* Attr::find(std::string_view key) const { return kind == Dict ? find_in(dict, key) : nullptr; }

const Attr* Operation::attr(std::string_view key) const { return find_in(attrs, key); }

const Attr* Func::attr(std::string_view key) const { return find_in(attrs, key); }

std::vector<std::string> Operation::segment(size_t k) const {
  const Attr* sizes = attr("operandSegmentSizes");
  if (sizes == nullptr || sizes->kind != Attr::DenseArray) {
    if (k == 0) return operands;
    return {};
  }
  // Clamped to the operands there are, so inconsistent sizes cannot overrun.
  const auto clamp = [&](int64_t v) { return std::min(static_cast<size_t>(std::max<int64_t>(0, v)), operands.size()); };
  size_t begin = 0;
  for (size_t s = 0; s < k && s < sizes->ints.size(); ++s) begin = std::min(begin + clamp(sizes->ints[s]), operands.size());
  if (k >= sizes->ints.size() || begin >= operands.size()) return {};
  const size_t n = std::min(clamp(sizes->ints[k]), operands.size() - begin);
  return {operands.begin() + static_cast<std::ptrdiff_t>(begin), operands.begin() + static_cast<std::ptrdiff_t>(begin + n)};
}

void collect_defined_names(const Region& r, std::unordered_set<std::string>& out) {
  for (const Block& b : r.blocks) {
    for (const BlockArg& a : b.args) out.insert(a.name);
    for (const Operation& op : b.ops) {
      out.insert(op.results.begin(), op.results.end());
      for (const Region& inner : op.regions) collect_defined_names(inner, out);
    }
  }
}

}  // namespace tessera::mlir_text
