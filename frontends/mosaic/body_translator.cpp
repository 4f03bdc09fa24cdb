// The body walk: value map, views, region captures and dispatch to the value
// rules (import_rules.h) or the structural rules (body_translator.h).
#include "frontends/mosaic/body_translator.h"

#include <set>
#include <unordered_map>
#include <unordered_set>

#include "frontends/mosaic/import_rules.h"
#include "ir/primitive.h"

namespace tessera::mlir_text {

void fail_at(const Operation& op, const std::string& message) {
  throw Error(op.loc, "`" + op.name + "`: " + message);
}

Type import_ref_type(const MType& t, const Loc& loc) {
  if (!t.is_memref()) throw Error(loc, "expected a memref type, got `" + t.text + "`");
  for (int64_t d : t.shape)
    if (d < 0) throw Error(loc, "memrefs with dynamic dims are not imported: `" + t.text + "`");
  static const std::map<std::string, MemSpace, std::less<>> spaces = {
      {"", MemSpace::vmem},          {"vmem", MemSpace::vmem}, {"smem", MemSpace::smem},
      {"any", MemSpace::any},        {"hbm", MemSpace::hbm},   {"semaphore_mem", MemSpace::semaphore},
      {"vmem_shared", MemSpace::vmem_shared}};
  auto space = spaces.find(t.memory_space);
  if (space == spaces.end()) throw Error(loc, "unknown memory space `" + t.memory_space + "` in `" + t.text + "`");
  DType d;
  if (t.element == "!tpu.dma_semaphore") d = DType::dma_sem;
  else if (t.element == "!tpu.semaphore") d = DType::sem;
  else {
    MType element;
    element.kind = MType::Scalar;
    element.element = t.element;
    element.text = t.element;
    d = import_dtype(element, loc);
  }
  return Type::ref(d, t.shape, space->second);
}

// The operand groups of `op`: its segments when it has `operandSegmentSizes`,
// else `singles` single operands followed by the rest as one group (ops like
// `vector.load` have one variadic group and no segment sizes).
std::vector<std::vector<std::string>> operand_groups(const Operation& op, size_t singles, size_t count) {
  std::vector<std::vector<std::string>> g;
  if (op.attr("operandSegmentSizes")) {
    for (size_t k = 0; k < count; ++k) g.push_back(op.segment(k));
    return g;
  }
  if (op.operands.size() < singles) fail_at(op, "expects at least " + std::to_string(singles) + " operands");
  for (size_t k = 0; k < singles; ++k) g.push_back({op.operands[k]});
  g.emplace_back(op.operands.begin() + static_cast<std::ptrdiff_t>(singles), op.operands.end());
  while (g.size() < count) g.emplace_back();
  return g;
}

// ---- views -------------------------------------------------------------------

RefView RefView::whole(Value ref) {
  RefView v;
  v.base = ref;
  for (int64_t d : ref.type().shape()) v.dims.push_back(ViewDim{0, std::nullopt, d, std::nullopt, false, false});
  return v;
}

RefView RefView::with_phantoms(Value ref, const std::vector<bool>& phantom) {
  RefView v;
  v.base = ref;
  size_t k = 0;
  for (bool p : phantom) {
    if (p) v.dims.push_back(ViewDim{0, std::nullopt, 1, std::nullopt, false, true});
    else v.dims.push_back(ViewDim{0, std::nullopt, ref.type().shape().at(k++), std::nullopt, false, false});
  }
  return v;
}

std::vector<int> RefView::visible() const {
  std::vector<int> out;
  for (size_t k = 0; k < dims.size(); ++k)
    if (!dims[k].squeezed) out.push_back(static_cast<int>(k));
  return out;
}

Shape RefView::shape() const {
  Shape s;
  for (const ViewDim& d : dims)
    if (!d.squeezed) s.push_back(d.size);
  return s;
}

void OperandList::add(const IndexedRef& r) {
  const int base = static_cast<int>(operands.size());
  operands.push_back(r.base);
  operands.insert(operands.end(), r.dyn.begin(), r.dyn.end());
  Indexer ix{base, r.entries};
  for (IndexEntry& e : ix.entries) {
    if (e.dyn_start >= 0) e.dyn_start += base + 1;
    if (e.dyn_size >= 0) e.dyn_size += base + 1;
  }
  indexers.push_back(std::move(ix));
}

Value BodyTranslator::add_index(Value a, Value b) {
  if (a.is_literal() && b.is_literal()) return b_.i32(a.literal().as_int() + b.literal().as_int());
  if (a.is_literal() && a.literal().as_int() == 0) return b;
  if (b.is_literal() && b.literal().as_int() == 0) return a;
  return b_.binary("add", a, b);
}

namespace {
// The start of view dim `d` moved by `index`, as a static start or a value.
struct Start {
  int64_t fixed = 0;
  std::optional<Value> dyn;
};

// A point or slice entry at `s`, its dynamic start appended to `dyn`.
IndexEntry entry_at(const Start& s, bool point, int64_t size, int64_t stride, std::vector<Value>& dyn) {
  if (s.dyn) {
    dyn.push_back(*s.dyn);
    const int k = static_cast<int>(dyn.size()) - 1;
    return point ? IndexEntry::dyn_point(k) : IndexEntry::dyn_slice(k, size, stride);
  }
  return point ? IndexEntry::point(s.fixed) : IndexEntry::slice(s.fixed, size, stride);
}

bool is_full(const IndexEntry& e, int64_t dim) {
  return e.kind == IndexEntry::Slice && e.dyn_start < 0 && e.dyn_size < 0 && e.start == 0 && e.size == dim && e.stride == 1;
}
}  // namespace

IndexedRef BodyTranslator::window(const RefView& view, const std::vector<Value>& indices, const Shape& shape,
                                  const std::vector<int64_t>& strides, const Operation& op) {
  const std::vector<int> vis = view.visible();
  if (indices.size() != vis.size())
    fail_at(op, "expects " + std::to_string(vis.size()) + " indices for a memref of rank " + std::to_string(vis.size()) +
                    ", got " + std::to_string(indices.size()));
  if (shape.size() > vis.size()) fail_at(op, "the vector has more dims than the memref");
  const size_t leading = vis.size() - shape.size();
  IndexedRef r;
  r.base = view.base;
  const Shape& base_shape = view.base.type().shape();
  size_t k = 0;     // position among the visible dims
  size_t dim = 0;   // position among the Ref's dims
  for (size_t d = 0; d < view.dims.size(); ++d) {
    const ViewDim& vd = view.dims[d];
    if (vd.phantom) {
      // Its index selects within a dim of size 1: 0 when in bounds.
      if (!vd.squeezed) ++k;
      continue;
    }
    Start s;
    Value offset = vd.dyn ? *vd.dyn : b_.i32(vd.start);
    bool point = vd.squeezed;
    int64_t size = 1, stride = 1;
    if (!vd.squeezed) {
      offset = add_index(offset, indices[k]);
      point = k < leading;
      if (!point) {
        size = shape[k - leading];
        if (!strides.empty()) stride = strides[k];
      }
      ++k;
    }
    if (offset.is_literal()) s.fixed = offset.literal().as_int();
    else s.dyn = offset;
    IndexEntry e = entry_at(s, point, size, stride, r.dyn);
    r.entries.push_back(is_full(e, base_shape[dim]) ? IndexEntry::full() : e);
    ++dim;
  }
  return r;
}

IndexedRef BodyTranslator::whole(const RefView& view) {
  IndexedRef r;
  r.base = view.base;
  const Shape& base_shape = view.base.type().shape();
  size_t dim = 0;
  for (const ViewDim& vd : view.dims) {
    if (vd.phantom) continue;
    Start s{vd.start, vd.dyn};
    IndexEntry e = entry_at(s, vd.squeezed, vd.size, 1, r.dyn);
    if (vd.dyn_size && !vd.squeezed) {
      // `ds(start, %n)`: the Builder fills in the static bound.
      r.dyn.push_back(*vd.dyn_size);
      e = e.with_dyn_size(static_cast<int>(r.dyn.size()) - 1);
      e.size = 0;
    }
    r.entries.push_back(is_full(e, base_shape[dim++]) ? IndexEntry::full() : e);
  }
  return r;
}

Value BodyTranslator::reshape_to(Value v, const Shape& shape) {
  if (v.type().shape() == shape) return v;
  return b_.emit1("reshape", {v}, {{"new_sizes", shape}});
}

// ---- bindings ---------------------------------------------------------------

void BodyTranslator::bind(const std::string& name, Value v) {
  refs_.erase(name);
  values_[name] = v;
}

void BodyTranslator::bind(const std::string& name, RefView v) {
  values_.erase(name);
  refs_[name] = std::move(v);
}

Value BodyTranslator::value(const std::string& name, const Operation& op) const {
  auto it = values_.find(name);
  if (it != values_.end()) return it->second;
  if (refs_.count(name)) fail_at(op, "expects a scalar or vector for %" + name + ", got a memref");
  fail_at(op, "use of undefined value %" + name);
}

const RefView& BodyTranslator::ref(const std::string& name, const Operation& op) const {
  auto it = refs_.find(name);
  if (it != refs_.end()) return it->second;
  if (values_.count(name)) fail_at(op, "expects a memref for %" + name + ", got a value");
  fail_at(op, "use of undefined value %" + name);
}

std::vector<Value> BodyTranslator::values(const std::vector<std::string>& names, const Operation& op) const {
  std::vector<Value> out;
  out.reserve(names.size());
  for (const std::string& n : names) out.push_back(value(n, op));
  return out;
}

// ---- the walk -----------------------------------------------------------------

namespace {
bool is_terminator(std::string_view name) {
  return name == "func.return" || name == "scf.yield" || name == "tpu.yield" || name == "scf.condition";
}
}  // namespace

const Operation* BodyTranslator::translate_ops(const Block& block) {
  for (const Operation& op : block.ops) {
    if (is_terminator(op.name)) return &op;
    translate_op(op);
  }
  return nullptr;
}

void BodyTranslator::translate_op(const Operation& op) {
  b_.set_loc(op.loc);
  if (!op.successors.empty()) fail_at(op, "ops with block successors (unstructured control flow) are not imported");
  const StructuralTable& structural = structural_rules();
  if (auto s = structural.find(op.name); s != structural.end()) {
    s->second(*this, op);
    return;
  }
  const auto& rules = value_rules();
  if (auto v = rules.find(op.name); v != rules.end()) {
    ValueRuleContext ctx{b_, op, values(op.operands, op)};
    std::vector<Value> results = v->second(ctx);
    if (results.size() != op.results.size())
      fail_at(op, "the import rule gave " + std::to_string(results.size()) + " results for " +
                      std::to_string(op.results.size()));
    for (size_t i = 0; i < results.size(); ++i) bind(op.results[i], results[i]);
    return;
  }
  if (is_terminator(op.name)) fail_at(op, "a terminator in the middle of a block");
  if (const CoverageEntry* c = find_coverage(op.name))
    fail_at(op, "not imported: " + std::string(c->note));
  fail_at(op, "unknown op: no import rule");
}

// ---- regions -----------------------------------------------------------------

namespace {
void collect_uses(const Region& r, const std::unordered_set<std::string>& defs, std::vector<std::string>& out,
                  std::unordered_set<std::string>& seen) {
  for (const Block& b : r.blocks)
    for (const Operation& op : b.ops) {
      for (const std::string& u : op.operands)
        if (!defs.count(u) && seen.insert(u).second) out.push_back(u);
      for (const Region& inner : op.regions) collect_uses(inner, defs, out, seen);
    }
}
}  // namespace

std::vector<std::string> free_names(const std::vector<const Region*>& regions) {
  std::unordered_set<std::string> defs, seen;
  for (const Region* r : regions) collect_defined_names(*r, defs);
  std::vector<std::string> out;
  for (const Region* r : regions) collect_uses(*r, defs, out, seen);
  return out;
}

BodyTranslator::Captures BodyTranslator::capture(const std::vector<const Region*>& regions) const {
  Captures c;
  std::set<Var*> have;
  auto take = [&](const Value& v) {
    if (v.is_var() && have.insert(v.var()).second) c.vars.push_back(v.var());
  };
  for (const std::string& n : free_names(regions)) {
    if (auto v = values_.find(n); v != values_.end()) {
      take(v->second);
    } else if (auto r = refs_.find(n); r != refs_.end()) {
      take(r->second.base);
      for (const ViewDim& d : r->second.dims) {
        if (d.dyn) take(*d.dyn);
        if (d.dyn_size) take(*d.dyn_size);
      }
    } else {
      continue;  // undefined: the op inside that uses it reports it
    }
    c.names.push_back(n);
  }
  return c;
}

void BodyTranslator::bind_captures(BodyTranslator& child, const Captures& c) const {
  std::unordered_map<Var*, Var*> param_of;
  for (Var* v : c.vars) param_of[v] = child.builder().param(v->type, v->name);
  auto map = [&](const Value& v) -> Value { return v.is_var() ? Value(param_of.at(v.var())) : v; };
  for (const std::string& n : c.names) {
    if (auto v = values_.find(n); v != values_.end()) {
      child.bind(n, map(v->second));
    } else {
      RefView view = refs_.at(n);
      view.base = map(view.base);
      for (ViewDim& d : view.dims) {
        if (d.dyn) d.dyn = map(*d.dyn);
        if (d.dyn_size) d.dyn_size = map(*d.dyn_size);
      }
      child.bind(n, std::move(view));
    }
  }
}

void fold_reshape_chains(Body& body) {
  std::unordered_map<Var*, Value> replaced;  // identity reshape result -> its operand
  std::unordered_map<Var*, Value> source;    // reshape result -> the value it reshapes
  auto subst = [&](Value& v) {
    if (v.is_var())
      if (auto it = replaced.find(v.var()); it != replaced.end()) v = it->second;
  };
  for (Op& op : body.ops()) {
    for (Value& v : op.operands) subst(v);
    for (const BodyPtr& inner : op.nested_bodies()) fold_reshape_chains(*inner);
    // A slice as large as its operand is the operand (vector.extract of a
    // one-element vector imports as slice + reshape).
    if (op.name() == "slice" && op.results.size() == 1 && op.operands.size() == 1 &&
        op.operands[0].type() == op.results[0]->type) {
      replaced[op.results[0]] = op.operands[0];
      continue;
    }
    if (op.name() != "reshape" || op.results.size() != 1) continue;
    if (op.operands[0].is_var())
      if (auto it = source.find(op.operands[0].var()); it != source.end()) op.operands[0] = it->second;
    Var* r = op.results[0];
    if (op.operands[0].type() == r->type) replaced[r] = op.operands[0];
    else source[r] = op.operands[0];
  }
  std::vector<Value> outs = body.outputs();
  for (Value& v : outs) subst(v);
  body.set_outputs(std::move(outs));
}

const StructuralTable& structural_rules() {
  static const StructuralTable table = [] {
    StructuralTable t;
    add_memory_rules(t);
    add_dma_rules(t);
    add_control_rules(t);
    return t;
  }();
  return table;
}

}  // namespace tessera::mlir_text
