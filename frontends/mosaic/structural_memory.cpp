// Structural rules for memrefs: loads and stores (vector.load,
// tpu.vector_store, memref.load/store, strided forms), the views
// tpu.memref_slice / tpu.memref_squeeze make, and the kernel-context ops
// (iteration bounds, device id, barrier semaphore, tracing, logging).
#include <regex>

#include "frontends/mosaic/body_translator.h"
#include "frontends/mosaic/import_rules.h"
#include "frontends/mosaic/signature_import.h"
#include "ir/control_views.h"

namespace tessera::mlir_text {
namespace {

Shape result_shape(const Operation& op) {
  if (op.result_types.empty()) fail_at(op, "has no result type");
  return op.result_types[0].is_vector() ? op.result_types[0].shape : Shape{};
}

std::vector<int64_t> strides_of(const Operation& op) {
  const Attr* s = op.attr("strides");
  return s ? s->ints : std::vector<int64_t>{};
}

// Binds `op`'s result to `get` of `r`, in the op's vector shape (a window
// across phantom dims reads fewer dims than the vector has).
void bind_get(BodyTranslator& t, const Operation& op, const IndexedRef& r) {
  OperandList ol;
  ol.add(r);
  t.bind(op.results.at(0), t.reshape_to(t.builder().emit1("get", ol.operands, {}, ol.indexers), result_shape(op)));
}

// `vector.load %m[i...]` and `tpu.vector_load`: get of the window.
void load(BodyTranslator& t, const Operation& op) {
  const auto g = operand_groups(op, 1, 3);
  const std::vector<std::string>&base = g[0], &indices = g[1];
  if (base.size() != 1) fail_at(op, "expects one memref operand");
  if (!g[2].empty()) fail_at(op, "masked loads are not imported");
  if (!strides_of(op).empty()) fail_at(op, "strided loads with `strides` are not imported");
  IndexedRef r = t.window(t.ref(base[0], op), t.values(indices, op), result_shape(op), {}, op);
  bind_get(t, op, r);
}

// `tpu.strided_load %m[i...] {strides}`: a strided slice per dim.
void strided_load(BodyTranslator& t, const Operation& op) {
  const std::vector<std::string> operands = op.segment(0);
  if (operands.empty()) fail_at(op, "expects a memref operand");
  std::vector<std::string> indices(operands.begin() + 1, operands.end());
  IndexedRef r = t.window(t.ref(operands[0], op), t.values(indices, op), result_shape(op), strides_of(op), op);
  bind_get(t, op, r);
}

// The value shape a store writes: the stored vector's, or () for a scalar.
Shape stored_shape(BodyTranslator& t, const std::string& name, const Operation& op) {
  return t.value(name, op).type().shape();
}

// A store of `value` at the window; masked stores become `store`, the rest
// `swap` with the old value unused.
void store_window(BodyTranslator& t, const Operation& op, const std::string& value, const std::string& base,
                  const std::vector<std::string>& indices, const std::vector<std::string>& mask,
                  const std::vector<int64_t>& strides) {
  IndexedRef r = t.window(t.ref(base, op), t.values(indices, op), stored_shape(t, value, op), strides, op);
  OperandList ol;
  ol.add(r);
  const Shape shape = indexed_shape(Indexer{0, r.entries}, r.base.type().shape());
  ol.add(t.reshape_to(t.value(value, op), shape));
  if (!mask.empty()) {
    ol.add(t.reshape_to(t.value(mask[0], op), shape));
    t.builder().emit("store", ol.operands, {}, ol.indexers);
  } else {
    t.builder().emit("swap", ol.operands, {}, ol.indexers);
  }
}

// `tpu.vector_store`: (value, base, indices..., [mask]).
void tpu_vector_store(BodyTranslator& t, const Operation& op) {
  auto g = operand_groups(op, 2, 4);
  if (g[0].size() != 1 || g[1].size() != 1) fail_at(op, "expects a value and a memref");
  if (op.attr("add") && op.attr("add")->kind == Attr::Bool && op.attr("add")->b)
    fail_at(op, "atomic-add stores (`add = true`) are not imported");
  // Without segment sizes a trailing vector operand after the indices is the mask.
  if (!op.attr("operandSegmentSizes") && !g[2].empty() && t.value(g[2].back(), op).type().rank() > 0) {
    g[3] = {g[2].back()};
    g[2].pop_back();
  }
  store_window(t, op, g[0][0], g[1][0], g[2], g[3], strides_of(op));
}

// `vector.store` / `tpu.strided_store`: (value, base, indices...).
void plain_store(BodyTranslator& t, const Operation& op) {
  const std::vector<std::string> all = op.segment(0);
  if (all.size() < 2) fail_at(op, "expects a value and a memref");
  std::vector<std::string> indices(all.begin() + 2, all.end());
  store_window(t, op, all[0], all[1], indices, {}, strides_of(op));
}

// `memref.load %m[i...]`: a scalar read, every index a point.
void memref_load(BodyTranslator& t, const Operation& op) {
  const std::vector<std::string> all = op.segment(0);
  if (all.empty()) fail_at(op, "expects a memref operand");
  std::vector<std::string> indices(all.begin() + 1, all.end());
  IndexedRef r = t.window(t.ref(all[0], op), t.values(indices, op), {}, {}, op);
  bind_get(t, op, r);
}

// `memref.store %v, %m[i...]`.
void memref_store(BodyTranslator& t, const Operation& op) {
  const std::vector<std::string> all = op.segment(0);
  if (all.size() < 2) fail_at(op, "expects a value and a memref");
  std::vector<std::string> indices(all.begin() + 2, all.end());
  store_window(t, op, all[0], all[1], indices, {}, {});
}

// `tpu.memref_slice %m[base indices]`: the view moves its starts and takes
// the result's sizes.
void memref_slice(BodyTranslator& t, const Operation& op) {
  const auto g = operand_groups(op, 1, 3);
  const std::vector<std::string>&src = g[0], &idx = g[1], &sizes = g[2];
  if (src.size() != 1) fail_at(op, "expects one memref operand");
  RefView view = t.ref(src[0], op);
  const std::vector<int> vis = view.visible();
  const MType& rt = op.result_types.at(0);
  if (idx.size() != vis.size() || rt.shape.size() != vis.size())
    fail_at(op, "expects one base index per memref dim and a result of the same rank");
  size_t next_size = 0;  // dynamic sizes, one per `?` dim of the result
  for (size_t k = 0; k < vis.size(); ++k) {
    ViewDim& d = view.dims[static_cast<size_t>(vis[k])];
    Value start = t.add_index(d.dyn ? *d.dyn : t.builder().i32(d.start), t.value(idx[k], op));
    if (start.is_literal()) {
      d.start = start.literal().as_int();
      d.dyn.reset();
    } else {
      d.dyn = start;
    }
    if (rt.shape[k] < 0) {
      if (next_size >= sizes.size()) fail_at(op, "expects one dynamic size per `?` dim of the result");
      if (d.phantom) fail_at(op, "a dynamic size over a squeezed block dim is not imported");
      d.dyn_size = t.value(sizes[next_size++], op);  // d.size stays the bound; the Builder narrows it
      continue;
    }
    if (rt.shape[k] > d.size) fail_at(op, "the slice is larger than its memref");
    d.size = rt.shape[k];
    d.dyn_size.reset();
  }
  if (next_size != sizes.size()) fail_at(op, "expects one dynamic size per `?` dim of the result");
  t.bind(op.results.at(0), std::move(view));
}

// `tpu.memref_squeeze`: drops size-1 dims so the view's shape is the result's.
void memref_squeeze(BodyTranslator& t, const Operation& op) {
  const std::vector<std::string> src = op.segment(0);
  if (src.size() != 1) fail_at(op, "expects one memref operand");
  RefView view = t.ref(src[0], op);
  const Shape& want = op.result_types.at(0).shape;
  size_t j = 0;
  for (int d : view.visible()) {
    ViewDim& vd = view.dims[static_cast<size_t>(d)];
    if (j < want.size() && (vd.dyn_size ? want[j] < 0 : vd.size == want[j])) ++j;
    else if (vd.size == 1) vd.squeezed = true;
    else fail_at(op, "the result shape is not the source's without size-1 dims");
  }
  if (j != want.size()) fail_at(op, "the result shape is not the source's without size-1 dims");
  t.bind(op.results.at(0), std::move(view));
}

// Allocations are the scoped Refs of the enclosing `tpu.region`, bound
// before its body is walked (structural_control.cpp).
void allocation(BodyTranslator& t, const Operation& op) {
  if (op.results.empty() || !t.is_bound(op.results[0]))
    fail_at(op, "allocations are imported only at the top of a `tpu.region` (a run_scoped)");
}

void iteration_bound(BodyTranslator& t, const Operation& op) {
  const Attr* dim = op.attr("dim");
  if (!dim) fail_at(op, "expects a `dim` attribute");
  t.bind(op.results.at(0), t.builder().emit1("num_programs", {}, {{"axis", dim->i}}));
}

// The flat device id is, on the 1-D mesh of `--devices` (a kernel using it
// without one is refused before translation), the index along that axis: the
// form tessera's prover reasons about per device.
void device_id(BodyTranslator& t, const Operation& op) {
  t.bind(op.results.at(0), t.builder().emit1("axis_index", {}, {{"axis_name", std::string(kDeviceAxis)}}));
}

void sem_barrier(BodyTranslator& t, const Operation& op) {
  t.bind(op.results.at(0), RefView::whole(t.builder().emit1("get_barrier_semaphore", {})));
}

void delay(BodyTranslator& t, const Operation& op) { t.builder().emit("delay", t.values(op.operands, op)); }

// `tpu.log`: with `formatted = true` each `$s0`, `$u1`, `$f2` placeholder is
// an argument in order; tessera's debug_print writes `{}`.
void log(BodyTranslator& t, const Operation& op) {
  const Attr* tag = op.attr("tag");
  const Attr* formatted = op.attr("formatted");
  std::string fmt = tag ? tag->s : "";
  std::vector<Value> args = t.values(op.operands, op);
  if (formatted && formatted->b) {
    static const std::regex placeholder(R"(\$[suf]([0-9]+))");
    std::string out;
    size_t next = 0;
    auto begin = std::sregex_iterator(fmt.begin(), fmt.end(), placeholder);
    size_t last = 0;
    for (auto it = begin; it != std::sregex_iterator(); ++it) {
      if (std::stoul((*it)[1].str()) != next++) fail_at(op, "placeholders out of argument order are not imported");
      out += fmt.substr(last, static_cast<size_t>(it->position()) - last) + "{}";
      last = static_cast<size_t>(it->position() + it->length());
    }
    fmt = out + fmt.substr(last);
    if (next != args.size()) fail_at(op, "expects one placeholder per argument");
  } else if (!args.empty()) {
    fail_at(op, "arguments without `formatted = true` are not imported");
  }
  t.builder().emit("debug_print", args, {{"fmt", fmt}});
}

void nothing(BodyTranslator&, const Operation&) {}

// `get` of the whole of `from`, swapped into the whole of `to`.
void copy_whole(Builder& b, Value from, Value to) {
  const std::vector<IndexEntry> all(from.type().shape().size(), IndexEntry::full());
  Value v = b.emit1("get", {from}, {}, {Indexer{0, all}});
  b.emit("swap", {to, v}, {}, {Indexer{0, all}});
}

// The copy of a written scalar-prefetch Ref into its carried scratch, at the
// start of each chain of sequential grid steps (read_signature in
// signature_import.h says why): `cond` on every axis in `axes` being at
// program id 0, or unconditional when there is none.
void init_carried_prefetch(BodyTranslator& t, const Operation& op) {
  if (op.operands.size() != 2 || !op.attr("axes")) fail_at(op, "expects a prefetch Ref, a scratch Ref and `axes`");
  Builder& b = t.builder();
  const Value from = t.ref(op.operands[0], op).base, to = t.ref(op.operands[1], op).base;
  std::optional<Value> first;
  for (int64_t axis : op.attr("axes")->ints) {
    Value at_zero = b.binary("eq", b.emit1("program_id", {}, {{"axis", axis}}), b.i32(0));
    first = first ? b.binary("and", *first, at_zero) : at_zero;
  }
  if (!first) {
    copy_whole(b, from, to);
    return;
  }
  auto branch = [&](bool copy) {
    BodyPtr body = make_body("", BodyKind::fn);
    body->set_loc(op.loc);
    Builder cb(*body);
    cb.set_loc(op.loc);
    Value f = cb.param(from.type(), from.var()->name), s = cb.param(to.type(), to.var()->name);
    if (copy) copy_whole(cb, f, s);
    body->set_outputs({});
    return body;
  };
  std::vector<BodyPtr> branches{branch(false), branch(true)};
  CondView::make(b, *first, {from, to}, branches);
}

}  // namespace

void add_memory_rules(StructuralTable& t) {
  t["vector.load"] = load;
  t["tpu.vector_load"] = load;
  t["tpu.strided_load"] = strided_load;
  t["tpu.vector_store"] = tpu_vector_store;
  t["vector.store"] = plain_store;
  t["tpu.strided_store"] = plain_store;
  t["memref.load"] = memref_load;
  t["memref.store"] = memref_store;
  t["tpu.memref_slice"] = memref_slice;
  t["tpu.memref_squeeze"] = memref_squeeze;
  t["memref.alloca"] = allocation;
  t["tpu.sem_alloc"] = allocation;
  t["tpu.iteration_bound"] = iteration_bound;
  t["tpu.device_id"] = device_id;
  t["tpu.sem_barrier"] = sem_barrier;
  t["tpu.delay"] = delay;
  t["tpu.log"] = log;
  // Profiler scopes: no effect on what the kernel computes.
  t["tpu.trace_start"] = nothing;
  t["tpu.trace_stop"] = nothing;
  t[std::string(kCarriedPrefetchInit)] = init_carried_prefetch;
}

}  // namespace tessera::mlir_text
