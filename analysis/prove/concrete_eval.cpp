#include "analysis/prove/concrete_eval.h"

#include <unordered_map>

#include "ir/primitive.h"

namespace tessera::prove {

int64_t wrap_to(DType d, int64_t v) {
  if (is_bool(d)) return v != 0;
  int bits = int_bits(d);
  if (bits >= 64) return v;
  uint64_t mask = (uint64_t{1} << bits) - 1;
  uint64_t u = static_cast<uint64_t>(v) & mask;
  if (is_unsigned_int(d)) return static_cast<int64_t>(u);
  uint64_t sign = uint64_t{1} << (bits - 1);
  return static_cast<int64_t>(u ^ sign) - static_cast<int64_t>(sign);
}

namespace {

class Evaluator {
 public:
  explicit Evaluator(const std::vector<IntArray>& prefetch) : prefetch_(prefetch) {}

  int64_t get(const Value& v) const {
    if (v.is_literal()) return v.literal().as_int();
    auto it = env_.find(v.var());
    if (it == env_.end()) throw Error(v.var()->loc, "concrete evaluation: %" + v.var()->name + " has no value");
    return it->second;
  }

  void run(const Body& b, const std::vector<int64_t>& program_ids) {
    size_t np = program_ids.size();
    for (size_t p = 0; p < b.params().size(); ++p) {
      if (p < np) env_[b.params()[p]] = program_ids[p];
      else if (p - np < prefetch_.size()) refs_[b.params()[p]] = &prefetch_[p - np];
      else throw Error(b.loc(), "concrete evaluation: no value for parameter %" + b.params()[p]->name);
    }
    for (const Op& op : b.ops()) step(op);
  }

 private:
  void step(const Op& op) {
    const std::string& n = op.name();
    DType d = op.results.empty() ? DType::i32 : op.results[0]->type.dtype();
    auto set = [&](int64_t v) { env_[op.results.at(0)] = wrap_to(d, v); };
    auto fail = [&](const std::string& why) { throw Error(op.loc, "concrete evaluation of " + n + ": " + why); };
    if (n == "get") {
      auto it = refs_.find(op.main_operand(0).var());
      if (it == refs_.end()) fail("not a scalar prefetch Ref");
      const IntArray& a = *it->second;
      const Indexer* ix = op.indexer_for(op.main_operands()[0]);
      int64_t flat = 0;
      for (size_t k = 0; k < a.shape.size(); ++k) {
        if (!ix || k >= ix->entries.size() || ix->entries[k].kind != IndexEntry::Point) fail("only scalar reads are supported");
        const IndexEntry& e = ix->entries[k];
        int64_t i = e.is_dynamic() ? get(op.operands[e.dyn_start]) : e.start;
        if (i < 0 || i >= a.shape[k]) fail("index " + std::to_string(i) + " out of bounds for dimension " + std::to_string(k));
        flat = flat * a.shape[k] + i;
      }
      return set(a.values.at(flat));
    }
    std::vector<int64_t> x;
    for (int k : op.main_operands()) x.push_back(get(op.operands[k]));
    auto need = [&](size_t k) { if (x.size() != k) fail("expects " + std::to_string(k) + " operands"); };
    if (n == "add") { need(2); return set(static_cast<int64_t>(static_cast<uint64_t>(x[0]) + static_cast<uint64_t>(x[1]))); }
    if (n == "sub") { need(2); return set(static_cast<int64_t>(static_cast<uint64_t>(x[0]) - static_cast<uint64_t>(x[1]))); }
    if (n == "mul") { need(2); return set(static_cast<int64_t>(static_cast<uint64_t>(x[0]) * static_cast<uint64_t>(x[1]))); }
    if (n == "div" || n == "rem") {
      need(2);
      if (x[1] == 0) fail("division by zero");
      if (x[1] == -1) return set(n == "div" ? static_cast<int64_t>(0 - static_cast<uint64_t>(x[0])) : 0);
      return set(n == "div" ? x[0] / x[1] : x[0] % x[1]);
    }
    if (n == "max") { need(2); return set(std::max(x[0], x[1])); }
    if (n == "min") { need(2); return set(std::min(x[0], x[1])); }
    if (n == "neg") { need(1); return set(static_cast<int64_t>(0 - static_cast<uint64_t>(x[0]))); }
    if (n == "abs") { need(1); return set(x[0] < 0 ? static_cast<int64_t>(0 - static_cast<uint64_t>(x[0])) : x[0]); }
    if (n == "sign") { need(1); return set((x[0] > 0) - (x[0] < 0)); }
    if (n == "eq") { need(2); return set(x[0] == x[1]); }
    if (n == "ne") { need(2); return set(x[0] != x[1]); }
    if (n == "lt") { need(2); return set(x[0] < x[1]); }
    if (n == "le") { need(2); return set(x[0] <= x[1]); }
    if (n == "gt") { need(2); return set(x[0] > x[1]); }
    if (n == "ge") { need(2); return set(x[0] >= x[1]); }
    if (n == "and") { need(2); return set(x[0] & x[1]); }
    if (n == "or") { need(2); return set(x[0] | x[1]); }
    if (n == "xor") { need(2); return set(x[0] ^ x[1]); }
    if (n == "not") { need(1); return set(is_bool(d) ? !x[0] : ~x[0]); }
    if (n == "multiple_of") { need(1); return set(x[0]); }
    if (n == "convert_element_type") { need(1); return set(x[0]); }
    if (n == "select_n") {
      if (x.size() < 2) fail("needs a predicate and cases");
      int64_t cases = static_cast<int64_t>(x.size()) - 1;
      int64_t p = std::clamp<int64_t>(x[0], 0, cases - 1);
      return set(x[1 + p]);
    }
    fail("not an integer op the concrete evaluator knows");
  }

  const std::vector<IntArray>& prefetch_;
  std::unordered_map<const Var*, int64_t> env_;
  std::unordered_map<const Var*, const IntArray*> refs_;

 public:
  std::vector<int64_t> outputs(const Body& b) const {
    std::vector<int64_t> out;
    for (const Value& v : b.outputs()) out.push_back(get(v));
    return out;
  }
};

}  // namespace

std::vector<int64_t> eval_index_map(const Body& map, const std::vector<int64_t>& program_ids,
                                    const std::vector<IntArray>& prefetch) {
  Evaluator ev(prefetch);
  ev.run(map, program_ids);
  return ev.outputs(map);
}

}  // namespace tessera::prove
