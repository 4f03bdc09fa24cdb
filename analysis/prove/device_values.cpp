#include "analysis/prove/device_values.h"

#include <algorithm>
#include <functional>

#include "analysis/prove/int_encoder.h"

namespace tessera::prove {

namespace {

// Past these the pass gives up (the claims treat the value as any value).
constexpr int64_t kMaxDevices = 4096;
constexpr int64_t kMaxElements = 4096;

// Every device's coordinates along `axes`, outermost first; empty when too many.
std::vector<std::vector<int64_t>> devices(const AxisSizes& axes) {
  std::vector<std::vector<int64_t>> out{{}};
  for (const auto& [name, size] : axes) {
    if (size <= 0 || static_cast<int64_t>(out.size()) * size > kMaxDevices) return {};
    std::vector<std::vector<int64_t>> next;
    for (const auto& d : out)
      for (int64_t i = 0; i < size; ++i) {
        next.push_back(d);
        next.back().push_back(i);
      }
    out = std::move(next);
  }
  return out;
}

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// Integer ops on two elements, as the interpreter computes them (truncating
// division); nullopt where it is not defined here (a zero divisor).
using Binary = std::function<std::optional<int64_t>(int64_t, int64_t)>;
const std::map<std::string, Binary>& binary_ops() {
  static const std::map<std::string, Binary> ops = {
      {"add", [](int64_t a, int64_t b) -> std::optional<int64_t> {
         int64_t r;
         return __builtin_add_overflow(a, b, &r) ? std::nullopt : std::optional(r);
       }},
      {"sub", [](int64_t a, int64_t b) -> std::optional<int64_t> {
         int64_t r;
         return __builtin_sub_overflow(a, b, &r) ? std::nullopt : std::optional(r);
       }},
      {"mul", [](int64_t a, int64_t b) -> std::optional<int64_t> {
         int64_t r;
         return __builtin_mul_overflow(a, b, &r) ? std::nullopt : std::optional(r);
       }},
      {"max", [](int64_t a, int64_t b) -> std::optional<int64_t> { return std::max(a, b); }},
      {"min", [](int64_t a, int64_t b) -> std::optional<int64_t> { return std::min(a, b); }},
      {"div", [](int64_t a, int64_t b) -> std::optional<int64_t> { return b == 0 || b == -1 ? std::nullopt : std::optional(a / b); }},
      {"rem", [](int64_t a, int64_t b) -> std::optional<int64_t> { return b == 0 || b == -1 ? std::nullopt : std::optional(a % b); }},
  };
  return ops;
}

// Element k of an operand of `n` elements broadcast to the result (a scalar
// or a value of the result's shape).
int64_t element(const std::vector<int64_t>& v, int64_t k) { return v.size() == 1 ? v[0] : v[static_cast<size_t>(k)]; }

}  // namespace

std::optional<DeviceValues::Table> DeviceValues::of(const Value& v, const AxisSizes& enclosing) const {
  if (v.is_literal()) {
    if (!is_int(v.literal().dtype)) return std::nullopt;
    Table t;
    for (const auto& d : devices(enclosing)) t[d] = {v.literal().i};
    if (t.empty()) return std::nullopt;
    return t;
  }
  auto it = known_.find(v.var());
  if (it == known_.end()) return std::nullopt;
  return it->second;
}

void DeviceValues::visit(const Op& op, const AxisSizes& enclosing) {
  if (op.results.size() != 1 || enclosing.empty()) return;
  const Type& type = op.results[0]->type;
  if (type.is_ref() || !is_int(type.dtype())) return;
  const int64_t n = numel(type.shape());
  if (n < 1 || n > kMaxElements) return;
  const Interval range = dtype_range(type.dtype());
  std::vector<std::vector<int64_t>> devs = devices(enclosing);
  if (devs.empty()) return;
  Table out;
  const std::string& name = op.name();
  if (name == "axis_index") {
    size_t a = 0;
    while (a < enclosing.size() && enclosing[a].first != op.param(keys::axis_name)) ++a;
    if (a == enclosing.size()) return;
    for (const auto& d : devs) out[d] = {d[a]};
  } else if (name == "iota") {
    const Shape& s = type.shape();
    const int64_t dim = op.param(keys::dimension);
    if (dim < 0 || dim >= static_cast<int64_t>(s.size())) return;
    int64_t inner = 1;  // elements per step along `dim`, row-major
    for (size_t k = static_cast<size_t>(dim) + 1; k < s.size(); ++k) inner *= s[k];
    std::vector<int64_t> e(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) e[static_cast<size_t>(k)] = (k / inner) % s[static_cast<size_t>(dim)];
    for (const auto& d : devs) out[d] = e;
  } else if (name == "broadcast_in_dim" && op.operands.size() == 1) {
    std::optional<Table> a = of(op.operands[0], enclosing);
    if (!a) return;
    for (const auto& [d, e] : *a) {
      if (e.size() != 1) return;  // a scalar filling the result; others are not modelled
      out[d] = std::vector<int64_t>(static_cast<size_t>(n), e[0]);
    }
  } else if (auto f = binary_ops().find(name); f != binary_ops().end() && op.operands.size() == 2) {
    std::optional<Table> a = of(op.operands[0], enclosing), b = of(op.operands[1], enclosing);
    if (!a || !b) return;
    for (const auto& d : devs) {
      const std::vector<int64_t>& x = a->at(d);
      const std::vector<int64_t>& y = b->at(d);
      if ((x.size() != 1 && static_cast<int64_t>(x.size()) != n) || (y.size() != 1 && static_cast<int64_t>(y.size()) != n)) return;
      std::vector<int64_t>& e = out[d];
      for (int64_t k = 0; k < n; ++k) {
        std::optional<int64_t> r = f->second(element(x, k), element(y, k));
        // Outside the dtype the interpreter wraps; not modelled here.
        if (!r || *r < range.lo || *r > range.hi) return;
        e.push_back(*r);
      }
    }
  } else {
    return;
  }
  known_[op.results[0]] = std::move(out);
}

}  // namespace tessera::prove
