// Flat (open-addressing) tables keyed by Var*, for passes that map or mark
// every variable of a body: one array, no allocation per entry, so a pass
// over a body of a million ops stays linear in time and cache-friendly (a node
// based std::unordered_map allocates and chases a pointer per entry).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "ir/value.h"

namespace tessera {

// A map from Var* to V (V default-constructible). Keys are never erased.
//
// The hash keeps the order of addresses (Vars of a body are allocated one after
// another, and ops mostly use recent values), so a sweep over a large body
// walks the table nearly in order instead of missing the cache (and, in a VM,
// the TLB) on every access.
template <class V>
class VarTable {
 public:
  VarTable() { rehash(16); }
  explicit VarTable(size_t expected) {
    size_t want = 16;
    while (want < expected * 2) want <<= 1;
    rehash(want);
  }
  VarTable(const VarTable&) = delete;
  VarTable& operator=(const VarTable&) = delete;
  VarTable(VarTable&&) = default;
  VarTable& operator=(VarTable&&) = default;

  size_t size() const { return size_; }

  // The value of `k`, or null when absent.
  V* find(const Var* k) {
    size_t i = slot(k);
    return slots_[i].first == k ? &slots_[i].second : nullptr;
  }
  const V* find(const Var* k) const {
    size_t i = slot(k);
    return slots_[i].first == k ? &slots_[i].second : nullptr;
  }
  bool contains(const Var* k) const { return slots_[slot(k)].first == k; }

  // Inserts `k` with `v` when absent; returns whether it was inserted.
  bool insert(const Var* k, V v = V()) {
    size_t i = slot(k);
    if (slots_[i].first == k) return false;
    if ((size_ + 1) * 2 > slots_.size()) {
      rehash(slots_.size() * 2);
      i = slot(k);
    }
    slots_[i] = {k, std::move(v)}, ++size_;
    return true;
  }
  V& operator[](const Var* k) {
    size_t i = slot(k);
    if (slots_[i].first != k) {
      if ((size_ + 1) * 2 > slots_.size()) {
        rehash(slots_.size() * 2);
        i = slot(k);
      }
      slots_[i] = {k, V()}, ++size_;
    }
    return slots_[i].second;
  }

 private:
  static size_t hash(const Var* k) {
    auto x = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(k));
    return static_cast<size_t>((x >> 4) ^ (x >> 22));
  }
  // The slot holding `k`, or the empty slot where it would go.
  size_t slot(const Var* k) const {
    size_t mask = slots_.size() - 1;
    size_t i = hash(k) & mask;
    while (slots_[i].first != nullptr && slots_[i].first != k) i = (i + 1) & mask;
    return i;
  }
  using Slot = std::pair<const Var*, V>;
  void rehash(size_t cap) {
    std::vector<Slot> old(cap);
    old.swap(slots_);
    for (auto& [k, v] : old)
      if (k) slots_[slot(k)] = {k, std::move(v)};
  }

  std::vector<Slot> slots_;
  size_t size_ = 0;
};

// A set of Var*.
class VarSet {
 public:
  VarSet() = default;
  explicit VarSet(size_t expected) : t_(expected) {}
  bool insert(const Var* v) { return t_.insert(v); }
  bool contains(const Var* v) const { return t_.contains(v); }
  size_t count(const Var* v) const { return t_.contains(v) ? 1 : 0; }
  size_t size() const { return t_.size(); }

 private:
  VarTable<char> t_;
};

// A Var* -> Var* renaming; remap() is ir/clone.h's remap for it (a Var absent
// or mapped to null is left as it is).
using VarToVar = VarTable<Var*>;

inline Value remap(const Value& v, const VarToVar& map) {
  if (!v.is_var()) return v;
  Var* const* f = map.find(v.var());
  return f && *f ? Value(*f) : v;
}

// A Var* -> Value renaming (the value may be a literal); remap() as above.
using VarToValue = VarTable<Value>;

inline Value remap(const Value& v, const VarToValue& map) {
  if (!v.is_var()) return v;
  const Value* f = map.find(v.var());
  return f ? *f : v;
}

}  // namespace tessera
