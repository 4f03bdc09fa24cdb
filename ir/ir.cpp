#include "ir/ir.h"

#include <algorithm>

#include "ir/primitive.h"

namespace tessera {

const std::string& Op::name() const { return prim->name; }

const Param& Op::param(std::string_view key) const {
  for (const NamedParam& p : params)
    if (p.name == key) return p.value;
  throw Error(loc, "op " + name() + " has no parameter '" + std::string(key) + "'");
}

bool Op::has_param(std::string_view key) const {
  for (const NamedParam& p : params)
    if (p.name == key) return !std::holds_alternative<std::monostate>(p.value);
  return false;
}

template <class T>
const T& Op::get(std::string_view key) const {
  const Param& p = param(key);
  if (const T* v = std::get_if<T>(&p)) return *v;
  throw Error(loc, "parameter '" + std::string(key) + "' of " + name() + " has the wrong kind");
}

template const int64_t& Op::get(std::string_view) const;
template const double& Op::get(std::string_view) const;
template const bool& Op::get(std::string_view) const;
template const std::string& Op::get(std::string_view) const;
template const DType& Op::get(std::string_view) const;
template const Type& Op::get(std::string_view) const;
template const std::vector<int64_t>& Op::get(std::string_view) const;
template const std::vector<std::string>& Op::get(std::string_view) const;
template const std::vector<Type>& Op::get(std::string_view) const;
template const BodyPtr& Op::get(std::string_view) const;
template const std::vector<BodyPtr>& Op::get(std::string_view) const;
template const std::vector<BlockSpec>& Op::get(std::string_view) const;
template const IntPairs& Op::get(std::string_view) const;

void Op::set_param(std::string_view key, Param value) {
  for (NamedParam& p : params)
    if (p.name == key) { p.value = std::move(value); return; }
  params.push_back({std::string(key), std::move(value)});
}

std::vector<int> Op::main_operands() const {
  std::vector<int> out;
  out.reserve(operands.size());
  for (int i = 0; i < static_cast<int>(operands.size()); ++i)
    if (indexers.empty() || !is_index_operand(indexers, i)) out.push_back(i);
  return out;
}

size_t Op::num_main_operands() const {
  if (indexers.empty()) return operands.size();
  size_t n = 0;
  for (int i = 0; i < static_cast<int>(operands.size()); ++i) n += !is_index_operand(indexers, i);
  return n;
}

int Op::main_operand_index(int k) const {
  // Shape rules call this per operand: find it without building the list.
  if (indexers.empty() && k >= 0 && k < static_cast<int>(operands.size())) return k;
  if (k >= 0) {
    int seen = 0;
    for (int i = 0; i < static_cast<int>(operands.size()); ++i) {
      if (is_index_operand(indexers, i)) continue;
      if (seen++ == k) return i;
    }
  }
  throw Error(loc, name() + " expects at least " + std::to_string(k + 1) + " operands");
}

const Indexer* Op::indexer_for(int operand) const {
  for (const Indexer& ix : indexers)
    if (ix.base == operand) return &ix;
  return nullptr;
}

std::vector<BodyPtr> Op::nested_bodies() const {
  std::vector<BodyPtr> out;
  for (const NamedParam& p : params) {
    if (auto* b = std::get_if<BodyPtr>(&p.value); b && *b) out.push_back(*b);
    if (auto* bs = std::get_if<std::vector<BodyPtr>>(&p.value))
      for (const BodyPtr& b : *bs) if (b) out.push_back(b);
    if (auto* specs = std::get_if<std::vector<BlockSpec>>(&p.value))
      for (const BlockSpec& s : *specs) if (s.index_map) out.push_back(s.index_map);
  }
  return out;
}

std::string_view body_kind_name(BodyKind k) {
  switch (k) {
    case BodyKind::func: return "func";
    case BodyKind::kernel: return "kernel";
    case BodyKind::index_map: return "index_map";
    case BodyKind::fn: return "fn";
  }
  return "fn";
}

Var* Body::new_var(Type type, std::string name, Loc loc) {
  if (last_chunk_used_ == last_chunk_size_) {
    last_chunk_size_ = last_chunk_size_ == 0 ? 4 : std::min<size_t>(2 * last_chunk_size_, 256);
    var_chunks_.push_back(std::make_unique<Var[]>(last_chunk_size_));
    last_chunk_used_ = 0;
  }
  Var* v = &var_chunks_.back()[last_chunk_used_++];
  v->name = std::move(name);
  v->type = std::move(type);
  v->loc = std::move(loc);
  return v;
}

Var* Body::add_param(Type type, std::string name, Loc loc) {
  Var* v = new_var(std::move(type), std::move(name), std::move(loc));
  params_.push_back(v);
  return v;
}

std::vector<Type> Body::param_types() const {
  std::vector<Type> ts;
  for (Var* v : params_) ts.push_back(v->type);
  return ts;
}

std::vector<Type> Body::output_types() const {
  std::vector<Type> ts;
  for (const Value& v : outputs_) ts.push_back(v.type());
  return ts;
}

BodyPtr make_body(std::string name, BodyKind kind) { return std::make_shared<Body>(std::move(name), kind); }

void Module::add(BodyPtr body) {
  if (body->name().empty()) throw Error(body->loc(), "a module symbol needs a name");
  if (by_name_.count(body->name())) throw Error(body->loc(), "redefinition of @" + body->name());
  by_name_.emplace(body->name(), body);
  symbols_.push_back(std::move(body));
}

BodyPtr Module::find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

BodyPtr Module::entry(std::string_view name) const {
  if (BodyPtr b = find(name)) return b;
  throw Error("no function @" + std::string(name) + " in module");
}

bool Module::is_symbol(const Body* b) const {
  auto it = by_name_.find(b->name());
  return it != by_name_.end() && it->second.get() == b;
}

std::string Module::unique_name(std::string_view stem) const {
  std::string name(stem);
  for (int i = 1; find(name); ++i) name = std::string(stem) + "_" + std::to_string(i);
  return name;
}

}  // namespace tessera
