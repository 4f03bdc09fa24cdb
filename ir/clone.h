// Copying bodies. Bodies are immutable once built and may be shared between
// modules (a pass reuses every body it does not change); to change one, build a
// new body, usually by cloning and editing the copy's op list.
#pragma once

#include <unordered_map>

#include "ir/ir.h"

namespace tessera {

using ValueMap = std::unordered_map<const Var*, Value>;

// Appends copies of `src`'s ops to `dst`, with operands renamed through `map`
// (which gains an entry for every result). Nested bodies are shared, not copied.
// Returns `src`'s outputs renamed.
std::vector<Value> inline_body(const Body& src, Body& dst, ValueMap& map);
// A fresh copy of `src` with the same parameters and ops.
BodyPtr clone_body(const Body& src, std::string new_name);

// The value `v` is renamed to through `map` (unchanged if absent or a literal).
inline Value remap(const Value& v, const ValueMap& map) {
  if (!v.is_var()) return v;
  auto it = map.find(v.var());
  return it == map.end() ? v : it->second;
}

// Appends a copy of `op` to `dst` reading `operands`, with `params` (op's own
// unless a caller changes them), op's indexers, location and result types: for
// operands whose types are unchanged, so the shape rule need not run again.
// Calls bind(old result, new result) for each result. Nested bodies are
// shared, not copied.
template <class Bind>
void append_copy(const Op& op, Body& dst, std::vector<Value> operands, Params params, Bind&& bind) {
  Op copy;
  copy.prim = op.prim;
  copy.params = std::move(params);
  copy.indexers = op.indexers;
  copy.loc = op.loc;
  copy.operands = std::move(operands);
  copy.results.reserve(op.results.size());
  for (Var* r : op.results) {
    Var* nr = dst.new_var(r->type, r->name, r->loc);
    copy.results.push_back(nr);
    bind(r, nr);
  }
  dst.ops().push_back(std::move(copy));
}

// Appends a copy of `op` to `dst`, operands renamed through `map` (which gains
// an entry for each result). `Map` is a ValueMap or a pass's flat table
// (transforms/var_table.h) with its own remap.
template <class Map>
void copy_op(const Op& op, Body& dst, Map& map) {
  std::vector<Value> operands;
  operands.reserve(op.operands.size());
  for (const Value& v : op.operands) operands.push_back(remap(v, map));
  append_copy(op, dst, std::move(operands), op.params, [&](const Var* r, Var* nr) { map[r] = nr; });
}

}  // namespace tessera
