#include "transforms/ad_util.h"

#include <numeric>

namespace tessera::ad {

std::string SymbolSink::fresh(std::string_view stem) {
  std::string name(stem);
  for (int i = 1; src_->find(name) || taken_.count(name); ++i) name = std::string(stem) + "_" + std::to_string(i);
  taken_.insert(name);
  return name;
}

Module SymbolSink::assemble(const BodyPtr& new_main, std::string_view entry) const {
  Module out;
  for (const BodyPtr& s : src_->symbols())
    if (s->name() != entry) out.add(s);
  for (const BodyPtr& s : added_) out.add(s);
  out.add(new_main);
  return out;
}

Value moveaxis(Builder& b, Value x, int from, int to) {
  if (from == to) return x;
  int r = x.type().rank();
  std::vector<int64_t> perm(r);
  std::iota(perm.begin(), perm.end(), 0);
  perm.erase(perm.begin() + from);
  perm.insert(perm.begin() + to, from);
  return b.emit1("transpose", {x}, {{"permutation", perm}});
}

Value broadcast_new_axis(Builder& b, Value x, int64_t n, int at) {
  Type t = x.type();
  Shape shape = insert_at(t.shape(), at, n);
  std::vector<int64_t> dims;
  for (int d = 0; d < t.rank(); ++d) dims.push_back(d < at ? d : d + 1);
  return b.emit1("broadcast_in_dim", {x}, {{"shape", shape}, {"broadcast_dimensions", dims}});
}

Value expand_axis(Builder& b, Value x, int at) {
  return b.emit1("expand_dims", {x}, {{"dimensions", std::vector<int64_t>{at}}});
}

Value squeeze_axis(Builder& b, Value x, int at) {
  return b.emit1("squeeze", {x}, {{"dimensions", std::vector<int64_t>{at}}});
}

std::vector<Value> emit_like(Builder& b, const Op& op, std::vector<Value> operands) {
  return b.emit(*op.prim, std::move(operands), op.params, op.indexers);
}

std::vector<Value> copy_op(Body& dst, const Op& op, std::vector<Value> operands) {
  std::vector<Value> out;
  out.reserve(op.results.size());
  append_copy(op, dst, std::move(operands), op.params, [&](const Var*, Var* nr) { out.push_back(nr); });
  return out;
}

std::vector<int64_t> parse_axes_option(const std::string& text, const std::string& option) {
  std::vector<int64_t> out;
  if (text.empty()) return out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t bar = text.find('|', start);
    std::string item = text.substr(start, bar == std::string::npos ? std::string::npos : bar - start);
    if (item == "none") {
      out.push_back(-1);
    } else {
      try {
        size_t used = 0;
        long long v = std::stoll(item, &used);
        if (used != item.size() || v < 0) throw std::invalid_argument(item);
        out.push_back(v);
      } catch (...) {
        throw Error("pass option " + option + "=" + text + ": '" + item +
                    "' is neither a non-negative integer nor 'none'");
      }
    }
    if (bar == std::string::npos) break;
    start = bar + 1;
  }
  return out;
}

}  // namespace tessera::ad
