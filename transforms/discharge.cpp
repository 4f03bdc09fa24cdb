// State discharge: bodies with Ref effects become pure bodies that thread the
// Refs' values.
//
// The discharger copies a body op by op, keeping the current value of every Ref
// in a "slot" (Env). State ops turn into array ops on the slot value:
//   get       -> slice (static indices) or dynamic_slice (+ slice for strides),
//                then reshape to drop point-indexed dims;
//   swap      -> the read above, then dynamic_update_slice of the new value;
//   addupdate -> read, add, write back;
//   load      -> read, then select_n(mask, other, read) when masked;
//   store     -> write of select_n(mask, old, value) when masked.
// A masked window may reach past the Ref's ends where its mask is off, so a
// masked access with a dynamic start works on the Ref padded around it
// (MaskedWindow): dynamic_slice would clamp the start and move every lane.
// Strided writes spread the value over the strided window (pad + reshape) and
// merge it with the old window under an iota-built mask.
// Control flow threads Refs explicitly: a branch or loop body is discharged on
// its own (Refs become arrays, their final values extra outputs); loops carry
// the Ref values. run_scoped and calls with Ref operands are inlined; scratch
// starts as zeros. Local DMAs become copies (semaphores are dropped); other
// semaphore ops and remote DMAs are a clear error.
// pallas_call and core_map: discharge_pallas.cpp.
#include <cmath>

#include "ir/control_views.h"
#include "ir/indirect_dma.h"
#include "transforms/discharge_internal.h"
#include "transforms/pass.h"

namespace tessera::discharge {

// ---- small builders ------------------------------------------------------------

Value to_i32(Builder& b, Value v) {
  if (v.type().dtype() == DType::i32) return v;
  if (v.is_literal()) return Literal::of_int(DType::i32, v.literal().as_int());
  return b.emit1("convert_element_type", {v}, {{"new_dtype", DType::i32}});
}

std::vector<Value> ctx_values(const Env& env) {
  std::vector<Value> out;
  if (!env.grid) return out;
  out.insert(out.end(), env.grid->pids.begin(), env.grid->pids.end());
  out.insert(out.end(), env.grid->sizes.begin(), env.grid->sizes.end());
  return out;
}

namespace {

struct Window {
  bool all_full = true, any_dyn = false, any_stride = false, any_point = false, empty = false;
  std::vector<int64_t> start, span, stride;
  std::vector<Value> starts;  // i32 literal or dynamic value per dim
  Shape strided;              // Point -> 1, Slice -> size, Full -> dim
  Shape region;               // strided without the point dims
};

Window window_of(const Shape& shape, const Indexer* ix, const std::vector<Value>& operand_values) {
  Window w;
  int rank = static_cast<int>(shape.size());
  for (int d = 0; d < rank; ++d) {
    IndexEntry e = ix ? ix->entries[d] : IndexEntry::full();
    int64_t span = shape[d], size = shape[d], stride = 1, start = 0;
    if (e.kind != IndexEntry::Full) w.all_full = false;
    if (e.kind == IndexEntry::Point) span = size = 1, start = e.start, w.any_point = true;
    if (e.kind == IndexEntry::Slice) {
      size = e.size, stride = e.stride, start = e.start;
      span = size == 0 ? 0 : (size - 1) * stride + 1;
      if (stride > 1 && size > 1) w.any_stride = true;
      if (size == 0) w.empty = true;
    }
    if (e.kind != IndexEntry::Full && e.is_dynamic()) {
      w.any_dyn = true;
      w.starts.push_back(operand_values.at(e.dyn_start));
    } else {
      w.starts.push_back(Literal::of_int(DType::i32, start));
    }
    w.start.push_back(start);
    w.span.push_back(span);
    w.stride.push_back(stride > 1 && size > 1 ? stride : 1);
    w.strided.push_back(size);
    if (e.kind != IndexEntry::Point) w.region.push_back(size);
  }
  return w;
}

Value read_window(Builder& b, Value arr, const Window& w) {
  Shape shape = arr.type().shape();  // type() returns by value
  if (w.all_full) return arr;
  Value v;
  if (!w.any_dyn) {
    std::vector<int64_t> limit;
    for (size_t d = 0; d < shape.size(); ++d) limit.push_back(w.start[d] + w.span[d]);
    v = b.emit1("slice", {arr}, {{"start_indices", w.start}, {"limit_indices", limit}, {"strides", w.stride}});
  } else {
    std::vector<Value> ops{arr};
    ops.insert(ops.end(), w.starts.begin(), w.starts.end());
    v = b.emit1("dynamic_slice", ops, {{"slice_sizes", w.span}});
    if (w.any_stride)
      v = b.emit1("slice", {v},
                  {{"start_indices", std::vector<int64_t>(shape.size(), 0)}, {"limit_indices", w.span}, {"strides", w.stride}});
  }
  if (w.any_point) v = b.emit1("reshape", {v}, {{"new_sizes", w.region}});
  return v;
}

Value write_window(Builder& b, Value arr, const Window& w, Value v) {
  Shape shape = arr.type().shape();  // type() returns by value
  if (v.type().rank() == 0 && !w.region.empty())
    v = b.emit1("broadcast_in_dim", {v}, {{"shape", w.region}, {"broadcast_dimensions", std::vector<int64_t>{}}});
  if (w.all_full) return v;
  if (w.empty) return arr;
  if (w.any_point) v = b.emit1("reshape", {v}, {{"new_sizes", w.strided}});
  if (w.any_stride) {
    // Spread the value over the strided window: dim d of size n becomes
    // n * stride (zeros between), cut to the span; a mask marks the real lanes.
    Value mask;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (w.stride[d] == 1) continue;
      int64_t n = w.strided[d], s = w.stride[d];
      Shape cur = v.type().shape();
      Shape split = cur;
      split.insert(split.begin() + d + 1, 1);
      v = b.emit1("reshape", {v}, {{"new_sizes", split}});
      std::vector<int64_t> lo(split.size(), 0), hi(split.size(), 0);
      hi[d + 1] = s - 1;
      v = b.emit1("pad", {v, b.literal(v.type().dtype(), 0)}, {{"low", lo}, {"high", hi}});
      Shape merged = cur;
      merged[d] = n * s;
      v = b.emit1("reshape", {v}, {{"new_sizes", merged}});
      std::vector<int64_t> start(merged.size(), 0), limit(merged);
      limit[d] = w.span[d];
      v = b.emit1("slice", {v}, {{"start_indices", start}, {"limit_indices", limit}});
    }
    for (size_t d = 0; d < shape.size(); ++d) {
      if (w.stride[d] == 1) continue;
      Value io = b.emit1("iota", {}, {{"dtype", DType::i32}, {"shape", w.span}, {"dimension", int64_t(d)}});
      Value r = b.emit1("rem", {io, Literal::of_int(DType::i32, w.stride[d])});
      Value m = b.emit1("eq", {r, Literal::of_int(DType::i32, 0)});
      mask = mask.is_var() ? b.emit1("and", {mask, m}) : m;
    }
    std::vector<Value> ds{arr};
    ds.insert(ds.end(), w.starts.begin(), w.starts.end());
    Value old = b.emit1("dynamic_slice", ds, {{"slice_sizes", w.span}});
    v = b.emit1("select_n", {mask, old, v});
  }
  std::vector<Value> ops{arr, v};
  ops.insert(ops.end(), w.starts.begin(), w.starts.end());
  return b.emit1("dynamic_update_slice", ops);
}

// The window of a masked load or store. Its lanes off the mask may lie
// outside the Ref: the interpreter (like Pallas's masked vector loads and
// stores) touches only the lanes on it. dynamic_slice and
// dynamic_update_slice instead clamp a start until the whole window fits,
// which would move every lane (a store of lane [0, 0] at [8, 128] of a
// 16x256 Ref through a 16x256 window would land at [0, 0]). So every dim
// with a dynamic start is padded by the window's span on both sides and its
// start shifted by that much: a window with any lane inside the Ref then fits
// the padded array unclamped. Writes are cut back to the Ref's shape.
class MaskedWindow {
 public:
  MaskedWindow(Builder& b, Value arr, const Indexer* ix, const std::vector<Value>& operand_values)
      : b_(b), shape_(arr.type().shape()), w_(window_of(shape_, ix, operand_values)) {
    pad_.assign(shape_.size(), 0);
    bool any = false;
    for (size_t d = 0; d < shape_.size(); ++d) {
      if (w_.starts[d].is_literal() || w_.span[d] == 0) continue;
      pad_[d] = w_.span[d];
      any = true;
      Value at = w_.starts[d];
      w_.starts[d] = b.emit1("add", {at, Literal::of_int(at.type().dtype(), pad_[d])});
    }
    padded_ = any ? b.emit1("pad", {arr, b.literal(arr.type().dtype(), 0)}, {{"low", pad_}, {"high", pad_}}) : arr;
    is_padded_ = any;
  }

  Value read() { return read_window(b_, padded_, w_); }

  // The Ref's new value with `v` written through the window.
  Value write(Value v) {
    Value out = write_window(b_, padded_, w_, v);
    if (!is_padded_) return out;
    std::vector<int64_t> limit;
    for (size_t d = 0; d < shape_.size(); ++d) limit.push_back(pad_[d] + shape_[d]);
    return b_.emit1("slice", {out}, {{"start_indices", pad_}, {"limit_indices", limit}});
  }

 private:
  Builder& b_;
  Shape shape_;
  Window w_;
  std::vector<int64_t> pad_;
  Value padded_;
  bool is_padded_ = false;
};

}  // namespace

Value read_region(Builder& b, Value arr, const Indexer* ix, const std::vector<Value>& operand_values) {
  return read_window(b, arr, window_of(arr.type().shape(), ix, operand_values));
}

Value write_region(Builder& b, Value arr, const Indexer* ix, const std::vector<Value>& operand_values, Value v) {
  return write_window(b, arr, window_of(arr.type().shape(), ix, operand_values), v);
}

BodyPtr reorder(const Body& d, const std::vector<int>& param_perm, const std::vector<int>& out_perm, BodyKind kind) {
  BodyPtr nb = make_body(d.name(), kind);
  nb->set_loc(d.loc());
  ValueMap map;
  for (int p : param_perm) map[d.params()[p]] = nb->add_param(d.params()[p]->type, d.params()[p]->name, d.params()[p]->loc);
  std::vector<Value> outs = inline_body(d, *nb, map);
  std::vector<Value> sel;
  for (int o : out_perm) sel.push_back(outs[o]);
  nb->set_outputs(std::move(sel));
  return nb;
}

// ---- the discharger ---------------------------------------------------------------

Value Discharger::val(const Value& v, const Env& env, const Op& op) {
  if (!v.is_var()) return v;
  if (v.type().is_ref())
    throw Error(op.loc, "discharge: " + op.name() + " takes the Ref %" + v.var()->name + " where a value is expected");
  auto it = env.values.find(v.var());
  if (it == env.values.end()) throw Error(op.loc, "discharge: internal error: %" + v.var()->name + " has no value");
  return it->second;
}

int Discharger::slot(const Value& v, const Env& env, const Op& op) {
  if (v.is_var()) {
    auto it = env.slot_of.find(v.var());
    if (it != env.slot_of.end()) return it->second;
  }
  throw Error(op.loc, "discharge: " + op.name() + ": Ref operand %" + (v.is_var() ? v.var()->name : "?") +
                          " has no known value (only Ref parameters, scratch and closed-over Refs can be discharged)");
}

namespace {

const RuleTable<Rule>& rules();

// Values of every operand (Refs get their slot's current value) -- what the
// indexers' dynamic starts refer to.
std::vector<Value> operand_values(const Op& op, const Env& env) {
  std::vector<Value> out;
  out.reserve(op.operands.size());
  for (const Value& v : op.operands) {
    if (v.is_var() && v.type().is_ref()) {
      auto it = env.slot_of.find(v.var());
      out.push_back(it == env.slot_of.end() ? Value() : env.slots[it->second]);
    } else {
      out.push_back(Discharger::val(v, env, op));
    }
  }
  return out;
}

void append(std::vector<int>& a, const std::vector<int>& b) { a.insert(a.end(), b.begin(), b.end()); }
void append(std::vector<Value>& a, const std::vector<Value>& b) { a.insert(a.end(), b.begin(), b.end()); }
void bind(Env& env, const Op& op, int result, Value v) { env.values[op.results.at(result)] = v; }

// ---- state ops ----
void get_rule(Discharger& d, const Op& op, Builder& b, Env& env) {
  int r = op.main_operand_index(0);
  int s = d.slot(op.operands[r], env, op);
  bind(env, op, 0, read_region(b, env.slots[s], op.indexer_for(r), operand_values(op, env)));
}

void swap_rule(Discharger& d, const Op& op, Builder& b, Env& env) {
  auto m = op.main_operands();
  int s = d.slot(op.operands[m[0]], env, op);
  auto vals = operand_values(op, env);
  const Indexer* ix = op.indexer_for(m[0]);
  Value old = read_region(b, env.slots[s], ix, vals);
  env.slots[s] = write_region(b, env.slots[s], ix, vals, vals[m[1]]);
  bind(env, op, 0, old);
}

void addupdate_rule(Discharger& d, const Op& op, Builder& b, Env& env) {
  auto m = op.main_operands();
  int s = d.slot(op.operands[m[0]], env, op);
  auto vals = operand_values(op, env);
  const Indexer* ix = op.indexer_for(m[0]);
  Value old = read_region(b, env.slots[s], ix, vals);
  Value sum = b.emit1("add", {old, vals[m[1]]});
  env.slots[s] = write_region(b, env.slots[s], ix, vals, sum);
}

void load_rule(Discharger& d, const Op& op, Builder& b, Env& env) {
  auto m = op.main_operands();
  int s = d.slot(op.operands[m[0]], env, op);
  auto vals = operand_values(op, env);
  const Indexer* ix = op.indexer_for(m[0]);
  if (m.size() == 1) return bind(env, op, 0, read_region(b, env.slots[s], ix, vals));
  // Lanes off the mask read `other`; without one they are undefined, and
  // whatever the (padded) Ref holds there is as good a choice as any.
  Value x = MaskedWindow(b, env.slots[s], ix, vals).read();
  if (m.size() == 3) x = b.emit1("select_n", {vals[m[1]], vals[m[2]], x});
  bind(env, op, 0, x);
}

void store_rule(Discharger& d, const Op& op, Builder& b, Env& env) {
  auto m = op.main_operands();
  int s = d.slot(op.operands[m[0]], env, op);
  auto vals = operand_values(op, env);
  const Indexer* ix = op.indexer_for(m[0]);
  Value v = vals[m[1]];
  if (m.size() == 2) {
    env.slots[s] = write_region(b, env.slots[s], ix, vals, v);
    return;
  }
  MaskedWindow window(b, env.slots[s], ix, vals);
  env.slots[s] = window.write(b.emit1("select_n", {vals[m[2]], window.read(), v}));
}

// ---- DMAs and semaphores ----
void dma_start_rule(Discharger& d, const Op& op, Builder& b, Env& env) {
  auto m = op.main_operands();
  if (m.size() != 3)
    throw Error(op.loc, "discharge: a remote dma_start (to another device) cannot be discharged; run it in the interpreter");
  // The copied value would need a shape known only at run time.
  for (const Indexer& ix : op.indexers)
    if (has_dynamic_size(ix)) throw Error(op.loc, "discharge: dma_start with a dynamic size is not supported");
  // Its rows are data; the array form would need a scatter with run-time bounds checks.
  if (indirect_dma(op))
    throw Error(op.loc, "discharge: an indirect (gather / scatter) dma_start is not supported; run it in the interpreter");
  // A local DMA is a copy; running it at its start is one legal schedule of the
  // asynchronous copy (the interpreter's `eager` mode), so the wait is a no-op.
  auto vals = operand_values(op, env);
  int src = d.slot(op.operands[m[0]], env, op);
  int dst = d.slot(op.operands[m[1]], env, op);
  Value data = read_region(b, env.slots[src], op.indexer_for(m[0]), vals);
  env.slots[dst] = write_region(b, env.slots[dst], op.indexer_for(m[1]), vals, data);
}

void dma_wait_rule(Discharger&, const Op&, Builder&, Env&) {}

void semaphore_error(Discharger&, const Op& op, Builder&, Env&) {
  throw Error(op.loc, "discharge: " + op.name() +
                          " cannot be discharged: semaphores synchronize concurrent programs, which a pure program "
                          "cannot express; run the kernel in the interpreter instead");
}

// ---- grid queries ----
const GridCtx& need_grid(const Op& op, const Env& env) {
  if (!env.grid)
    throw Error(op.loc, "discharge: " + op.name() + " outside a pallas_call kernel (or in a nested body of an op "
                            "that does not pass the grid) cannot be discharged");
  return *env.grid;
}

void program_id_rule(Discharger&, const Op& op, Builder&, Env& env) {
  const GridCtx& g = need_grid(op, env);
  int64_t axis = op.param(keys::axis);
  if (axis < 0 || axis >= static_cast<int64_t>(g.pids.size()))
    throw Error(op.loc, "discharge: " + op.name() + " axis " + std::to_string(axis) + " is out of range for a grid of rank " +
                            std::to_string(g.pids.size()));
  bind(env, op, 0, op.name() == "program_id" ? g.pids[axis] : g.sizes[axis]);
}

void copy_op(const Op& op, Builder& b, Env& env, Params params);

// axis_index / axis_size of a grid axis name: the loop's program id or the
// grid's size; of a device axis they stay (the pmap or core_map does too).
void axis_index_rule(Discharger&, const Op& op, Builder& b, Env& env) {
  if (env.grid) {
    const std::string& name = op.param(keys::axis_name);
    for (size_t a = 0; a < env.grid->names.size(); ++a)
      if (env.grid->names[a] == name) return bind(env, op, 0, op.name() == "axis_index" ? env.grid->pids[a] : env.grid->sizes[a]);
  }
  copy_op(op, b, env, op.params);
}

// ---- generic copy ----
void copy_op(const Op& op, Builder& b, Env& env, Params params) {
  std::vector<Value> operands;
  operands.reserve(op.operands.size());
  for (const Value& v : op.operands) operands.push_back(Discharger::val(v, env, op));
  append_copy(op, b.body(), std::move(operands), std::move(params), [&](const Var* r, Var* nr) { env.values[r] = nr; });
}

// Operands [from, to): values for array operands, current values for Refs (whose
// slots are listed in ref_slots), semaphores skipped.
std::vector<Value> thread_operands(Discharger& d, const Op& op, size_t from, size_t to, Env& env,
                                   std::vector<int>* ref_slots) {
  std::vector<Value> out;
  for (size_t i = from; i < to; ++i) {
    const Value& v = op.operands[i];
    if (v.is_var() && v.type().is_ref()) {
      if (env.sems.count(v.var()) || is_semaphore(v.type().dtype())) continue;
      int s = d.slot(v, env, op);
      for (int t : *ref_slots)
        if (t == s)
          throw Error(op.loc, "discharge: " + op.name() + " is given the same Ref twice; aliased Ref operands are not supported");
      ref_slots->push_back(s);
      out.push_back(env.slots[s]);
    } else {
      out.push_back(d.val(v, env, op));
    }
  }
  return out;
}

void cond_rule(Discharger& d, const Op& op, Builder& b, Env& env) {
  std::vector<BodyPtr> branches;
  for (const BodyPtr& br : op.param(keys::branches)) branches.push_back(d.discharge_nested(*br, env.grid).body);
  std::vector<int> ref_slots;
  std::vector<Value> args = thread_operands(d, op, 1, op.operands.size(), env, &ref_slots);
  append(args, ctx_values(env));
  std::vector<Value> made = CondView::make(b, d.val(op.operands[0], env, op), args, branches);
  size_t n = op.results.size();
  for (size_t r = 0; r < n; ++r) bind(env, op, static_cast<int>(r), made[r]);
  for (size_t k = 0; k < ref_slots.size(); ++k) env.slots[ref_slots[k]] = made[n + k];
}

// Splits operands [from, from + k) into plain values and Refs; returns the
// discharged-body parameter index of each, in that order.
struct ConstSplit {
  std::vector<Value> plain_vals, ref_vals;
  std::vector<int> plain_params, ref_params;
  std::vector<int> ref_slots;
};

ConstSplit split_consts(Discharger& d, const Op& op, size_t from, size_t k, int first_param, Env& env) {
  ConstSplit s;
  int p = first_param;
  for (size_t i = from; i < from + k; ++i) {
    const Value& v = op.operands[i];
    if (v.is_var() && v.type().is_ref()) {
      if (is_semaphore(v.type().dtype())) continue;
      int sl = d.slot(v, env, op);
      for (int t : s.ref_slots)
        if (t == sl) throw Error(op.loc, "discharge: " + op.name() + " is given the same Ref twice; aliased Ref operands are not supported");
      s.ref_slots.push_back(sl);
      s.ref_vals.push_back(env.slots[sl]);
      s.ref_params.push_back(p++);
    } else {
      s.plain_vals.push_back(d.val(v, env, op));
      s.plain_params.push_back(p++);
    }
  }
  return s;
}

std::vector<int> range(int from, int n) {
  std::vector<int> r;
  for (int i = 0; i < n; ++i) r.push_back(from + i);
  return r;
}


void check_cond_pure(const Op& op, const Body& cond) {
  Effects fx = compute_effects(cond);
  for (size_t p = 0; p < fx.on_param.size(); ++p)
    if (fx.on_param[p] & (kWrite | kAccum))
      throw Error(op.loc, "discharge: a while cond that writes a Ref is not supported; move the write into the body");
}

// Discharged loop bodies take [consts' , carries, ctx] in source order; loops
// need [plain consts, ctx, Ref values, carries]: reorder, outputs Ref finals first.
void for_rule(Discharger& d, const Op& op, Builder& b, Env& env) {
  ForView view(op);
  int k = view.num_consts;
  int nc = view.num_carries;
  Discharged db = d.discharge_nested(*op.param(keys::body), env.grid);
  ConstSplit s = split_consts(d, op, 2, k, 1, env);
  int nk = static_cast<int>(s.plain_params.size() + s.ref_params.size());
  int nr = static_cast<int>(s.ref_params.size());
  std::vector<int> perm{0};
  append(perm, s.plain_params);
  append(perm, range(1 + nk + nc, db.num_ctx));
  append(perm, s.ref_params);
  append(perm, range(1 + nk, nc));
  std::vector<int> outs = range(nc, nr);
  append(outs, range(0, nc));
  BodyPtr w = reorder(*db.body, perm, outs, BodyKind::fn);
  std::vector<Value> consts = s.plain_vals, carries = s.ref_vals;
  append(consts, ctx_values(env));
  for (int c = 0; c < nc; ++c) carries.push_back(d.val(op.operands[2 + k + c], env, op));
  std::vector<Value> made = ForView::make(b, d.val(op.operands[0], env, op), d.val(op.operands[1], env, op), consts, carries, w);
  for (int r = 0; r < nr; ++r) env.slots[s.ref_slots[r]] = made[r];
  for (int c = 0; c < nc; ++c) bind(env, op, c, made[nr + c]);
}

void while_rule(Discharger& d, const Op& op, Builder& b, Env& env) {
  WhileView view(op);
  int k = view.num_consts;
  int nc = view.num_carries;
  check_cond_pure(op, *op.param(keys::cond));
  Discharged db = d.discharge_nested(*op.param(keys::body), env.grid);
  Discharged dc = d.discharge_nested(*op.param(keys::cond), env.grid);
  ConstSplit s = split_consts(d, op, 0, k, 0, env);
  int nk = static_cast<int>(s.plain_params.size() + s.ref_params.size());
  int nr = static_cast<int>(s.ref_params.size());
  std::vector<int> perm = s.plain_params;
  append(perm, range(nk + nc, db.num_ctx));
  append(perm, s.ref_params);
  append(perm, range(nk, nc));
  std::vector<int> outs = range(nc, nr);
  append(outs, range(0, nc));
  BodyPtr wb = reorder(*db.body, perm, outs, BodyKind::fn);
  BodyPtr wc = reorder(*dc.body, perm, {0}, BodyKind::fn);
  std::vector<Value> consts = s.plain_vals, carries = s.ref_vals;
  append(consts, ctx_values(env));
  for (int c = 0; c < nc; ++c) carries.push_back(d.val(op.operands[k + c], env, op));
  std::vector<Value> made = WhileView::make(b, consts, carries, wc, wb);
  for (int r = 0; r < nr; ++r) env.slots[s.ref_slots[r]] = made[r];
  for (int c = 0; c < nc; ++c) bind(env, op, c, made[nr + c]);
}

void scan_rule(Discharger& d, const Op& op, Builder& b, Env& env) {
  ScanView view(op);
  int k = view.num_consts;
  int nc = view.num_carries;
  int nx = view.num_xs;
  const Body& body = *op.param(keys::body);
  int ny = static_cast<int>(body.outputs().size()) - nc;
  Discharged db = d.discharge_nested(body, env.grid);
  ConstSplit s = split_consts(d, op, 0, k, 0, env);
  int nk = static_cast<int>(s.plain_params.size() + s.ref_params.size());
  int nr = static_cast<int>(s.ref_params.size());
  std::vector<int> perm = s.plain_params;
  append(perm, range(nk + nc + nx, db.num_ctx));
  append(perm, s.ref_params);
  append(perm, range(nk, nc + nx));
  std::vector<int> outs = range(nc + ny, nr);
  append(outs, range(0, nc + ny));
  BodyPtr w = reorder(*db.body, perm, outs, BodyKind::fn);
  std::vector<Value> consts = s.plain_vals, carries = s.ref_vals, xs;
  append(consts, ctx_values(env));
  for (int i = k; i < k + nc; ++i) carries.push_back(d.val(op.operands[i], env, op));
  for (int i = k + nc; i < k + nc + nx; ++i) xs.push_back(d.val(op.operands[i], env, op));
  std::vector<Value> made = ScanView::make(b, view.length, consts, carries, xs, w, view.reverse);
  for (int r = 0; r < nr; ++r) env.slots[s.ref_slots[r]] = made[r];
  for (int i = 0; i < nc + ny; ++i) bind(env, op, i, made[nr + i]);
}

// Binds body parameters [0, n) to the op's operands: Refs share the operand's
// slot (the body sees the same memory), values map through.
void bind_params_to_operands(Discharger& d, const Op& op, const Body& body, size_t n, Env& env) {
  for (size_t i = 0; i < n; ++i) {
    const Value& v = op.operands[i];
    const Var* p = body.params()[i];
    if (v.is_var() && v.type().is_ref()) {
      if (is_semaphore(v.type().dtype())) env.sems.insert(p);
      else env.slot_of[p] = d.slot(v, env, op);
    } else {
      env.values[p] = d.val(v, env, op);
    }
  }
}

void bind_results(const Op& op, const Body& body, Env& env) {
  for (size_t r = 0; r < op.results.size(); ++r) {
    const Value& o = body.outputs()[r];
    if (o.type().is_ref()) throw Error(op.loc, "discharge: " + op.name() + " returning a Ref cannot be discharged");
    bind(env, op, static_cast<int>(r), o.is_var() ? env.values.at(o.var()) : o);
  }
}

// run_scoped is inlined: scratch Refs become fresh slots. Uninitialized scratch
// starts as zeros (reading it before writing is a kernel bug either way).
void run_scoped_rule(Discharger& d, const Op& op, Builder& b, Env& env) {
  const Body& body = *op.param(keys::body);
  bind_params_to_operands(d, op, body, op.operands.size(), env);
  for (size_t i = op.operands.size(); i < body.params().size(); ++i) {
    const Var* p = body.params()[i];
    if (is_semaphore(p->type.dtype())) env.sems.insert(p);
    else env.slot_of[p] = env.new_slot(b.zeros(Type::array(p->type.array_type())));
  }
  d.run_ops(body, b, env);
  bind_results(op, body, env);
}

void call_rule(Discharger& d, const Op& op, Builder& b, Env& env) {
  const BodyPtr& callee = op.param(keys::callee);
  bool has_ref = false;
  for (const Value& v : op.operands) has_ref |= v.type().is_ref();
  if (has_ref || env.grid) {
    // Inlined: the callee works on the caller's Refs (or the grid context).
    bind_params_to_operands(d, op, *callee, op.operands.size(), env);
    d.run_ops(*callee, b, env);
    bind_results(op, *callee, env);
    return;
  }
  copy_op(op, b, env, params_with(op, {{"callee", d.pure(callee)}}));
}

// Ops without a rule: must not touch Refs; nested bodies are discharged on
// their own (they have no Ref parameters then).
void generic(Discharger& d, const Op& op, Builder& b, Env& env) {
  for (const Value& v : op.operands)
    if (v.type().is_ref()) rules().at(*op.prim, op.loc);  // throws "no discharge rule for primitive ..."
  for (Var* r : op.results)
    if (r->type.is_ref()) {
      if (is_semaphore(r->type.dtype())) {
        env.sems.insert(r);
        return;
      }
      throw Error(op.loc, "discharge: " + op.name() + " makes a Ref, which cannot be discharged");
    }
  bool nested = false;
  Params params = op.params;
  for (NamedParam& p : params) {
    if (auto* bp = std::get_if<BodyPtr>(&p.value); bp && *bp) *bp = d.pure(*bp), nested = true;
    if (auto* bs = std::get_if<std::vector<BodyPtr>>(&p.value))
      for (BodyPtr& x : *bs)
        if (x) x = d.pure(x), nested = true;
  }
  copy_op(op, b, env, nested ? std::move(params) : op.params);
}

const RuleTable<Rule>& rules() {
  static const RuleTable<Rule> table = [] {
    RuleTable<Rule> t("discharge");
    t.set("get", get_rule);
    t.set("swap", swap_rule);
    t.set("addupdate", addupdate_rule);
    t.set("load", load_rule);
    t.set("store", store_rule);
    t.set("dma_start", dma_start_rule);
    t.set("dma_wait", dma_wait_rule);
    for (const char* n : {"semaphore_signal", "semaphore_wait", "semaphore_read"}) t.set(n, semaphore_error);
    t.set("program_id", program_id_rule);
    t.set("num_programs", program_id_rule);
    t.set("axis_index", axis_index_rule);
    t.set("axis_size", axis_index_rule);
    t.set("cond", cond_rule);
    t.set("for", for_rule);
    t.set("while", while_rule);
    t.set("scan", scan_rule);
    t.set("run_scoped", run_scoped_rule);
    t.set("call", call_rule);
    t.set("pallas_call", pallas_call_rule);
    t.set("core_map", core_map_rule);
    t.set_default("copied as it is, its nested bodies discharged on their own (taking a Ref without a rule is an error)");
    return t;
  }();
  return table;
}
const RuleTableRegistration kRegistered("discharge", rules);

}  // namespace

void Discharger::run_ops(const Body& src, Builder& b, Env& env) {
  const RuleTable<Rule>& table = rules();
  for (const Op& op : src.ops()) {
    b.set_loc(op.loc);
    if (const Rule* r = table.find(*op.prim)) (*r)(*this, op, b, env);
    else generic(*this, op, b, env);
  }
}

Discharged Discharger::discharge_nested(const Body& src, const GridCtx* grid) {
  Discharged out;
  out.body = make_body(src.name(), src.kind() == BodyKind::func ? BodyKind::func : BodyKind::fn);
  out.body->set_loc(src.loc());
  Env env;
  std::vector<int> ref_slots;
  for (const Var* p : src.params()) {
    if (p->type.is_ref() && is_semaphore(p->type.dtype())) {
      env.sems.insert(p);
      out.new_param.push_back(-1);
      continue;
    }
    out.new_param.push_back(static_cast<int>(out.body->params().size()));
    Var* np = out.body->add_param(Type::array(p->type.array_type()), p->name, p->loc);
    if (p->type.is_ref()) {
      int s = env.new_slot(np);
      env.slot_of[p] = s;
      ref_slots.push_back(s);
    } else {
      env.values[p] = np;
    }
  }
  GridCtx inner;
  if (grid) {
    for (size_t a = 0; a < grid->pids.size(); ++a)
      inner.pids.push_back(out.body->add_param(Type::scalar(DType::i32), "pid" + std::to_string(a)));
    for (size_t a = 0; a < grid->sizes.size(); ++a)
      inner.sizes.push_back(out.body->add_param(Type::scalar(DType::i32), "npid" + std::to_string(a)));
    inner.names = grid->names;
    out.num_ctx = static_cast<int>(grid->pids.size() + grid->sizes.size());
    env.grid = &inner;
  }
  Builder b(*out.body);
  b.set_loc(src.loc());
  run_ops(src, b, env);
  std::vector<Value> outs;
  for (const Value& o : src.outputs()) {
    if (o.type().is_ref()) throw Error(src.loc(), "discharge: body @" + src.name() + " returns a Ref, which cannot be discharged");
    outs.push_back(o.is_var() ? env.values.at(o.var()) : o);
  }
  for (int s : ref_slots) outs.push_back(env.slots[s]);
  out.body->set_outputs(std::move(outs));
  return out;
}

bool has_state_or_grid_ops(const Body& b) {
  for (const Var* p : b.params())
    if (p->type.is_ref()) return true;
  for (const Op& op : b.ops()) {
    if (rules().find(*op.prim)) return true;
    for (const BodyPtr& n : op.nested_bodies())
      if (has_state_or_grid_ops(*n)) return true;
  }
  return false;
}

BodyPtr Discharger::pure(const BodyPtr& src) {
  auto it = memo_.find(src.get());
  if (it != memo_.end()) return it->second;
  BodyPtr r = src;
  if (has_state_or_grid_ops(*src)) r = discharge_nested(*src, nullptr).body;
  memo_[src.get()] = r;
  return r;
}

namespace {

// After a full discharge no Ref may remain; a leftover one is a bug in a rule.
void check_no_refs(const Body& b, std::unordered_set<const Body*>& seen) {
  if (!seen.insert(&b).second) return;
  for (const Var* p : b.params())
    if (p->type.is_ref())
      throw Error(b.loc(), "discharge: internal error: @" + b.name() + " still has the Ref parameter %" + p->name);
  for (const Op& op : b.ops()) {
    for (const Var* r : op.results)
      if (r->type.is_ref()) throw Error(op.loc, "discharge: internal error: " + op.name() + " still makes a Ref");
    for (const BodyPtr& n : op.nested_bodies()) check_no_refs(*n, seen);
  }
}

}  // namespace
}  // namespace tessera::discharge

namespace tessera {

Module discharge_pass(const Module& m, const PassOptions& o) {
  std::string mode = o.get("pallas_call", "lower");
  if (mode != "lower" && mode != "keep")
    throw Error("discharge: option pallas_call=" + mode + " is not one of lower, keep");
  if (o.has("func")) entry_function(m, o, "discharge");  // must exist; every function is discharged
  bool keep = mode == "keep";
  discharge::Discharger d(keep);
  Module out;
  std::unordered_set<const Body*> seen;
  for (const BodyPtr& s : m.symbols()) {
    if (s->kind() == BodyKind::func) {
      // A function with Ref parameters changes signature: each Ref becomes an
      // array parameter and its final value an extra output (after the others).
      BodyPtr r = d.pure(s);
      out.add(r);
      if (!keep) discharge::check_no_refs(*r, seen);
    } else if (keep) {
      out.add(s);  // kernels and index maps stay for the pallas_calls that remain
    }
    // Otherwise kernels and index maps were inlined into the grid loops.
  }
  return out;
}

}  // namespace tessera
