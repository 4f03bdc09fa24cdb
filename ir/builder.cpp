#include "ir/builder.h"

#include <algorithm>

namespace tessera {
namespace {

void check_choice(const Op& op, const ParamSpec& spec, const std::string& word) {
  if (spec.choices.empty()) return;
  if (std::find(spec.choices.begin(), spec.choices.end(), word) != spec.choices.end()) return;
  std::string allowed;
  for (const std::string& c : spec.choices) allowed += (allowed.empty() ? "" : ", ") + c;
  throw Error(op.loc, "parameter '" + spec.name + "' of " + op.name() + " is '" + word + "'; expected one of " + allowed);
}

}  // namespace

void normalize_params(Op& op) {
  const Primitive& p = *op.prim;
  for (const NamedParam& given : op.params) {
    if (!p.find_param(given.name))
      throw Error(op.loc, "unknown parameter '" + given.name + "' for primitive " + p.name);
  }
  Params ordered;
  ordered.reserve(p.params.size());
  for (const ParamSpec& spec : p.params) {
    auto it = std::find_if(op.params.begin(), op.params.end(), [&](const NamedParam& n) { return n.name == spec.name; });
    Param value = it != op.params.end() ? std::move(it->value) : Param{};
    if (std::holds_alternative<std::monostate>(value)) {
      if (spec.required && std::holds_alternative<std::monostate>(spec.default_value))
        throw Error(op.loc, p.name + " needs parameter '" + spec.name + "'");
      value = spec.default_value;
    }
    if (spec.kind == ParamKind::Float && std::holds_alternative<int64_t>(value))
      value = static_cast<double>(std::get<int64_t>(value));
    if (!std::holds_alternative<std::monostate>(value) && !holds_kind(value, spec.kind))
      throw Error(op.loc, "parameter '" + spec.name + "' of " + p.name + " has the wrong kind of value");
    if (spec.kind == ParamKind::Ident && std::holds_alternative<std::string>(value))
      check_choice(op, spec, std::get<std::string>(value));
    if (spec.kind == ParamKind::Idents && std::holds_alternative<std::vector<std::string>>(value))
      for (const std::string& w : std::get<std::vector<std::string>>(value)) check_choice(op, spec, w);
    ordered.push_back({spec.name, std::move(value)});
  }
  op.params = std::move(ordered);
}

std::vector<Type> infer_result_types(const Op& op) {
  for (const Indexer& ix : op.indexers) {
    if (ix.base < 0 || ix.base >= static_cast<int>(op.operands.size()))
      throw Error(op.loc, op.name() + ": indexer refers to a missing operand");
    const Type& t = op.operands[ix.base].type();
    if (!t.is_ref()) throw Error(op.loc, op.name() + ": only a Ref can be indexed, got " + t.str());
    if (static_cast<int>(ix.entries.size()) != t.rank())
      throw Error(op.loc, op.name() + ": " + std::to_string(ix.entries.size()) + " indices for a Ref of rank " +
                              std::to_string(t.rank()) + " (" + t.str() + ")");
    auto expect_int_operand = [&](int k, const char* what) {
      if (k >= static_cast<int>(op.operands.size())) throw Error(op.loc, op.name() + ": index refers to a missing operand");
      const Type& it = op.operands[k].type();
      if (!it.is_scalar() || !is_int(it.dtype()))
        throw Error(op.loc, op.name() + ": a dynamic " + what + " must be an integer scalar, got " + it.str());
    };
    for (size_t d = 0; d < ix.entries.size(); ++d) {
      const IndexEntry& e = ix.entries[d];
      if (e.is_indirect()) {
        if (e.dyn_start >= static_cast<int>(op.operands.size()) || !op.operands[e.dyn_start].type().is_ref())
          throw Error(op.loc, op.name() + ": indirect offsets must be a Ref");
        continue;
      }
      if (e.is_dynamic()) expect_int_operand(e.dyn_start, "index");
      if (!e.has_dynamic_size()) continue;
      expect_int_operand(e.dyn_size, "slice size");
      if (e.kind != IndexEntry::Slice) throw Error(op.loc, op.name() + ": only a slice ds(start, size) can have a dynamic size");
      if (e.stride != 1)
        throw Error(op.loc, op.name() + ": a slice with a dynamic size must have stride 1, got stride " + std::to_string(e.stride));
      if (!e.is_dynamic() && (e.start < 0 || e.start > t.shape()[d]))
        throw Error(op.loc, op.name() + ": slice start " + std::to_string(e.start) + " is outside [0, " +
                                std::to_string(t.shape()[d]) + "] in dimension " + std::to_string(d) + " of " + t.str());
    }
  }
  if (!op.prim->shape) return {};
  return op.prim->shape(op);
}

const Op& Builder::append(const Primitive& p, std::vector<Value> operands, Params params, std::vector<Indexer> indexers,
                          std::vector<std::string> result_names) {
  Op op;
  op.prim = &p;
  op.operands = std::move(operands);
  op.params = std::move(params);
  op.loc = loc_;
  if (!indexers.empty() && !p.indexed) throw Error(loc_, p.name + " does not take indexed operands");
  // Missing trailing entries mean whole dimensions, as `x[i]` means `x[i, :]`.
  for (Indexer& ix : indexers) {
    if (ix.base >= 0 && ix.base < static_cast<int>(op.operands.size())) {
      const Type& t = op.operands[ix.base].type();
      while (t.is_ref() && static_cast<int>(ix.entries.size()) < t.rank()) ix.entries.push_back(IndexEntry::full());
      // A dynamic size is bounded by what the Ref leaves past the start.
      for (size_t d = 0; t.is_ref() && d < ix.entries.size() && d < static_cast<size_t>(t.rank()); ++d) {
        IndexEntry& e = ix.entries[d];
        if (e.has_dynamic_size()) e.size = std::max<int64_t>(0, t.shape()[d] - (e.is_dynamic() ? 0 : e.start));
        // Indirect: as many rows as there are offsets (a rank-1 offsets Ref; the DMA rule checks the rest).
        if (e.is_indirect() && e.dyn_start >= 0 && e.dyn_start < static_cast<int>(op.operands.size())) {
          const Type& offsets = op.operands[e.dyn_start].type();
          e.size = offsets.is_ref() && offsets.rank() >= 1 ? offsets.shape()[0] : 0;
        }
      }
    }
  }
  op.indexers = std::move(indexers);
  normalize_params(op);
  std::vector<Type> types = infer_result_types(op);
  op.results.reserve(types.size());
  for (size_t i = 0; i < types.size(); ++i) {
    std::string name = i < result_names.size() ? std::move(result_names[i]) : "";
    op.results.push_back(body_->new_var(std::move(types[i]), std::move(name), loc_));
  }
  body_->ops().push_back(std::move(op));
  return body_->ops().back();
}

std::vector<Var*> Builder::create(const Primitive& p, std::vector<Value> operands, Params params,
                                  std::vector<Indexer> indexers, std::vector<std::string> result_names) {
  return append(p, std::move(operands), std::move(params), std::move(indexers), std::move(result_names)).results;
}

std::vector<Value> Builder::emit(const Primitive& p, std::vector<Value> operands, Params params,
                                 std::vector<Indexer> indexers) {
  const Op& op = append(p, std::move(operands), std::move(params), std::move(indexers), {});
  return {op.results.begin(), op.results.end()};
}

std::vector<Value> Builder::emit(std::string_view prim_name, std::vector<Value> operands, Params params,
                                 std::vector<Indexer> indexers) {
  return emit(prim(prim_name), std::move(operands), std::move(params), std::move(indexers));
}

Value Builder::emit1(std::string_view prim_name, std::vector<Value> operands, Params params,
                     std::vector<Indexer> indexers) {
  const Op& op = append(prim(prim_name), std::move(operands), std::move(params), std::move(indexers), {});
  if (op.results.size() != 1) throw Error(loc_, std::string(prim_name) + " does not have exactly one result");
  return op.results[0];
}

Value Builder::broadcast_scalar(Value x, const Shape& shape) {
  if (shape.empty()) return x;
  return emit1("broadcast_in_dim", {x}, {{"shape", std::vector<int64_t>(shape)}, {"broadcast_dimensions", std::vector<int64_t>{}}});
}

Params params_with(const Op& op, std::initializer_list<NamedParam> changes) {
  Params p = op.params;
  for (const NamedParam& c : changes)
    for (NamedParam& q : p)
      if (q.name == c.name) q.value = c.value;
  return p;
}

namespace {
Indexer offset_indexer(int base, std::vector<IndexEntry> entries) {
  for (IndexEntry& e : entries) {
    if (e.is_dynamic()) e.dyn_start += base + 1;
    if (e.has_dynamic_size()) e.dyn_size += base + 1;
  }
  return Indexer{base, std::move(entries)};
}
}  // namespace

Value Builder::get(Value ref, std::vector<IndexEntry> entries, std::vector<Value> dyn) {
  std::vector<Value> operands{ref};
  operands.insert(operands.end(), dyn.begin(), dyn.end());
  return emit1("get", std::move(operands), {}, {offset_indexer(0, std::move(entries))});
}

void Builder::swap_discard(Value ref, Value v, std::vector<IndexEntry> entries, std::vector<Value> dyn) {
  std::vector<Value> operands{ref};
  operands.insert(operands.end(), dyn.begin(), dyn.end());
  operands.push_back(v);
  emit("swap", std::move(operands), {}, {offset_indexer(0, std::move(entries))});
}

}  // namespace tessera
