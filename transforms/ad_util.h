// Helpers shared by the jvp and vmap passes: fresh module symbols, moving and
// inserting axes, copying ops. (Literals, zeros and broadcasts of a scalar are
// Builder conveniences, ir/builder.h.)
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "ir/builder.h"
#include "ir/clone.h"
#include "ir/ir.h"
#include "transforms/pass.h"

namespace tessera::ad {

// Bodies a pass creates that should print as module symbols (`@k_jvp`): new
// kernels, index maps and functions. Names are unique against the source
// module and each other.
class SymbolSink {
 public:
  explicit SymbolSink(const Module& src) : src_(&src) {}
  std::string fresh(std::string_view stem);
  void add(BodyPtr b) { added_.push_back(std::move(b)); }
  // `src` with `main` replaced by `new_main` and the added symbols placed
  // just before it (after everything they may refer to).
  Module assemble(const BodyPtr& new_main, std::string_view entry = "main") const;

  // Transformed bodies already made, keyed by the pass (source body address +
  // what was asked), so a callee or index map used twice is transformed once.
  std::map<std::string, BodyPtr, std::less<>> memo;

 private:
  const Module* src_;
  std::set<std::string, std::less<>> taken_;
  std::vector<BodyPtr> added_;
};

// Moves axis `from` of `x` to position `to` (a transpose; no-op if equal).
Value moveaxis(Builder& b, Value x, int from, int to);
// `x` with a new axis of size `n` at position `at`, repeating x along it.
Value broadcast_new_axis(Builder& b, Value x, int64_t n, int at);
// Inserts / removes an axis of size 1.
Value expand_axis(Builder& b, Value x, int at);
Value squeeze_axis(Builder& b, Value x, int at);

template <class T>
std::vector<T> insert_at(std::vector<T> v, size_t pos, T x) {
  v.insert(v.begin() + static_cast<long>(pos), std::move(x));
  return v;
}

// Appends a copy of `op` reading `operands` (same params and indexers),
// re-running shape inference; returns its results.
std::vector<Value> emit_like(Builder& b, const Op& op, std::vector<Value> operands);
// Same, without re-running shape inference: for an op whose operand types are
// unchanged (the fast path of both passes).
std::vector<Value> copy_op(Body& dst, const Op& op, std::vector<Value> operands);

// Parses `0|none|1` into per-input entries (-1 for none). Empty string: empty.
std::vector<int64_t> parse_axes_option(const std::string& text, const std::string& option);

}  // namespace tessera::ad
