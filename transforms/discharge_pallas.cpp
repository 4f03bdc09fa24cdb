// Discharge of pallas_call and core_map.
//
// Default (`discharge` / `discharge{pallas_call=lower}`): a pallas_call becomes
// one pure `for` loop over the flattened grid (row-major: the last axis varies
// fastest, as Pallas iterates). Loop constants: scalar prefetch arrays, dynamic
// grid sizes, inputs; loop carries: the outputs, inputs passed as Refs, scratch.
// Each iteration
//   - splits the loop index into program ids (div / rem by the grid sizes),
//   - inlines every index map (discharged, scalar prefetch read from the
//     constants) to get block indices and block starts (ir/block_geometry.h),
//   - cuts each input block with dynamic_slice (+ reshape for Squeezed dims),
//     reads the current output blocks the same way,
//   - inlines the discharged kernel on those blocks (program_id / num_programs
//     / axis_index of a grid axis become the loop's values),
//   - writes each output block (and each Ref input's block) back with
//     dynamic_update_slice.
// Arrays are padded (zeros) up front to the padded extent of
// ir/block_geometry.h (the one definition the interpreter and the prover also
// use) so partial edge blocks can be sliced whole, and cut back after the loop.
// Outputs start as zeros unless aliased to an input (then they start as it and
// the input's blocks are read from the output being built, since both share a
// buffer). Scratch starts as zeros and persists across iterations. An input
// block the kernel writes, or one aliased to an output, is a carry too,
// refilled only when its start changes (see ResidentInput).
// A batched call's vmapped grid axes (vmapped_dims) are hidden from the kernel:
// its program_id(a) / num_programs(a) count the other axes, as in Pallas.
// BoundedSlice block dims are an Error.
//
// Inputs passed as Refs (closed-over state) are updated in place. With
// `pallas_call=keep`, pallas_calls stay and only this is discharged, by the
// rule of jax/_src/pallas/pallas_call.py (`_pallas_call_state_discharge_rule`): each Ref input becomes an array input aliased to a new output
// with the same block spec (the kernel gets one more output parameter; for a
// blocked vmem/smem spec it copies its final input block into it).
//
// core_map[body, mesh_axes, mesh_shape] refs... becomes (jax/_src/pallas/core.py,
// `_core_map_discharge_rule`) a
// pallas_call over the grid mesh_shape (axis names mesh_axes) whose inputs are
// the Refs, each a whole-array block in its own memory space, which is then
// discharged as above.
#include <algorithm>
#include <limits>
#include <optional>

#include "ir/control_views.h"
#include "ir/effects.h"
#include "ir/grid_mapping.h"
#include "ir/grid_schedule.h"
#include "transforms/discharge_internal.h"

namespace tessera::discharge {
namespace {

bool whole_space(MemSpace m) { return m == MemSpace::any || m == MemSpace::hbm; }

bool any_nonzero(const std::vector<int64_t>& v) {
  for (int64_t x : v)
    if (x) return true;
  return false;
}

Value pad_to(Builder& b, Value v, const std::vector<int64_t>& lo, const std::vector<int64_t>& hi) {
  if (!any_nonzero(lo) && !any_nonzero(hi)) return v;
  return b.emit1("pad", {v, b.literal(v.type().dtype(), 0)}, {{"low", lo}, {"high", hi}});
}

Value unpad(Builder& b, Value v, const Shape& shape, const std::vector<int64_t>& lo, const std::vector<int64_t>& hi) {
  if (!any_nonzero(lo) && !any_nonzero(hi)) return v;
  std::vector<int64_t> start(lo), limit;
  for (size_t d = 0; d < shape.size(); ++d) limit.push_back(lo[d] + shape[d]);
  return b.emit1("slice", {v}, {{"start_indices", start}, {"limit_indices", limit}});
}

// The block mapping of operand m as the loop needs it. The loop works on the
// padded array of ir/block_geometry.h: padded by (lo, hi) up front, cut back
// after the loop.
struct Mapping {
  BlockGeometry geo;
  std::vector<int64_t> lo, hi;
  bool whole = false;  // the block is the whole (unpadded) array
  Shape window;        // block extent per array dim (Squeezed -> 1)
  Shape kernel_shape;  // window without the Squeezed dims
};

Mapping mapping_of(const Op& call, const GridMapping& g, int m) {
  Mapping mp;
  mp.geo = g.geometry(m);
  // A bounded block copies a run-time number of rows into a buffer that keeps
  // the rest from earlier steps; the loop would need a resident buffer and a
  // masked copy per step. Refused at the call until that is written.
  for (const DimGeometry& d : mp.geo.dims)
    if (d.dim.kind == BlockDimKind::BoundedSlice)
      throw Error(call.loc, "discharge: " + g.describe(m) + " of pallas_call " + g.name +
                                " has a BoundedSlice block dim, which discharge does not support; run it in the interpreter");
  mp.lo = mp.geo.pad_lo();
  mp.hi = mp.geo.pad_hi();
  mp.window = mp.geo.window();
  mp.kernel_shape = kernel_block_shape(g.dims(m));
  mp.whole = !mp.geo.is_padded();
  for (const DimGeometry& d : mp.geo.dims)
    if (d.window() != d.extent || d.dim.kind != BlockDimKind::Blocked) mp.whole = false;
  return mp;
}

// `_pallas_call_state_discharge_rule`'s rule: Ref inputs become array inputs aliased to new outputs.
void alias_ref_inputs(Discharger& d, const Op& op, Builder& b, Env& env) {
  GridMapping g = grid_mapping(op);
  std::vector<int> ref_inputs, slots;
  for (int i = 0; i < g.num_inputs(); ++i)
    if (op.operands[g.input_operand(i)].type().is_ref()) ref_inputs.push_back(i);
  std::vector<Value> operands;
  for (size_t k = 0; k < op.operands.size(); ++k) {
    const Value& v = op.operands[k];
    if (v.type().is_ref()) {
      int s = d.slot(v, env, op);
      slots.push_back(s);
      operands.push_back(env.slots[s]);
    } else {
      operands.push_back(d.val(v, env, op));
    }
  }
  // New kernel: the old parameters, one more output per Ref input (after the
  // outputs, before scratch), and a copy of the final input block into it.
  const Body& k = *g.kernel;
  BodyPtr nk = make_body(k.name(), BodyKind::kernel);
  nk->set_loc(k.loc());
  ValueMap map;
  int first_scratch = g.scratch_param(0);
  for (int p = 0; p < first_scratch; ++p) map[k.params()[p]] = nk->add_param(k.params()[p]->type, k.params()[p]->name);
  std::vector<Var*> extra;
  for (int i : ref_inputs) {
    const Var* in = k.params()[g.input_param(i)];
    extra.push_back(nk->add_param(in->type, in->name + "_out"));
  }
  for (size_t p = first_scratch; p < k.params().size(); ++p)
    map[k.params()[p]] = nk->add_param(k.params()[p]->type, k.params()[p]->name);
  inline_body(k, *nk, map);
  Builder kb(*nk);
  for (size_t j = 0; j < ref_inputs.size(); ++j) {
    Value in = map[k.params()[g.input_param(ref_inputs[j])]];
    if (whole_space(in.type().mem_space())) continue;  // shared buffer: aliasing suffices
    kb.swap_discard(extra[j], kb.get(in));
  }
  nk->set_outputs({});
  std::vector<BlockSpec> out_specs = g.out_specs;
  std::vector<Type> out_shapes = g.out_types;
  IntPairs aliases = g.aliases;
  for (size_t j = 0; j < ref_inputs.size(); ++j) {
    int i = ref_inputs[j];
    aliases.push_back({i, static_cast<int64_t>(out_specs.size())});
    out_specs.push_back(g.in_specs[i]);
    out_shapes.push_back(g.in_types[i]);
  }
  Params params = params_with(op, {{"kernel", nk},
                                   {"out_specs", out_specs},
                                   {"out_shapes", out_shapes},
                                   {"input_output_aliases", g.alias_param(aliases)}});
  std::vector<Var*> made = b.create(*op.prim, operands, params);
  int n = g.num_outputs();
  for (int o = 0; o < n; ++o) env.values[op.results[o]] = made[o];
  for (size_t j = 0; j < ref_inputs.size(); ++j) env.slots[slots[j]] = made[n + j];
}

// Evaluates index maps inside the loop body, once per map body.
struct IndexMaps {
  Discharger* d;
  Builder* b;
  std::vector<Value> pids;
  std::vector<Value> sp;  // scalar prefetch arrays
  std::unordered_map<const Body*, std::vector<Value>> memo;

  const std::vector<Value>& eval(const BodyPtr& map, int rank) {
    static const std::vector<Value> none;
    const Body* key = map.get();
    auto it = memo.find(key);
    if (it != memo.end() && (map || static_cast<int>(it->second.size()) == rank)) return it->second;
    std::vector<Value> idx;
    if (!map) {
      idx.assign(rank, Literal::of_int(DType::i32, 0));
      return memo[key] = idx;
    }
    Env env;
    const auto& params = map->params();
    for (size_t p = 0; p < params.size(); ++p) {
      if (p < pids.size()) env.values[params[p]] = pids[p];
      else if (params[p]->type.is_ref()) env.slot_of[params[p]] = env.new_slot(sp.at(p - pids.size()));
      else env.values[params[p]] = sp.at(p - pids.size());
    }
    d->run_ops(*map, *b, env);
    for (const Value& o : map->outputs()) idx.push_back(to_i32(*b, o.is_var() ? env.values.at(o.var()) : o));
    return memo[key] = idx;
  }
};

// Block starts in the padded array, as DimGeometry::start computes them.
std::vector<Value> block_starts(Builder& b, const Mapping& mp, const std::vector<Value>& idx) {
  std::vector<Value> starts;
  for (size_t d = 0; d < mp.geo.dims.size(); ++d) {
    const DimGeometry& g = mp.geo.dims[d];
    Value i = idx.at(d);
    if (g.dim.kind == BlockDimKind::Blocked && g.dim.size != 1) {
      if (i.is_literal()) i = Literal::of_int(DType::i32, g.start(i.literal().as_int()));
      else i = b.emit1("mul", {i, Literal::of_int(DType::i32, g.dim.size)});
    }
    starts.push_back(i);
  }
  return starts;
}

Value read_block(Builder& b, Value arr, const Mapping& mp, const std::vector<Value>& starts) {
  if (mp.whole) return arr;
  std::vector<Value> ops{arr};
  ops.insert(ops.end(), starts.begin(), starts.end());
  Value v = b.emit1("dynamic_slice", ops, {{"slice_sizes", std::vector<int64_t>(mp.window)}});
  if (mp.kernel_shape.size() != mp.window.size()) v = b.emit1("reshape", {v}, {{"new_sizes", std::vector<int64_t>(mp.kernel_shape)}});
  return v;
}

Value write_block(Builder& b, Value arr, const Mapping& mp, const std::vector<Value>& starts, Value block) {
  if (mp.whole) return block;
  if (mp.kernel_shape.size() != mp.window.size())
    block = b.emit1("reshape", {block}, {{"new_sizes", std::vector<int64_t>(mp.window)}});
  std::vector<Value> ops{arr, block};
  ops.insert(ops.end(), starts.begin(), starts.end());
  return b.emit1("dynamic_update_slice", ops);
}

// The grid schedule's rules (ir/grid_schedule.h) built as i1 ops into a body;
// constants fold.
struct IrAlgebra {
  using Bool = Value;
  using Int = Value;
  Builder* b;

  static bool is(const Value& v, bool which) { return v.is_literal() && (v.literal().as_int() != 0) == which; }
  Bool truth(bool v) const { return Literal::of_int(DType::i1, v); }
  Bool any(Bool x, Bool y) const {
    if (is(x, true) || is(y, false)) return x;
    if (is(y, true) || is(x, false)) return y;
    return b->emit1("or", {x, y});
  }
  Bool all(Bool x, Bool y) const {
    if (is(x, false) || is(y, true)) return x;
    if (is(y, false) || is(x, true)) return y;
    return b->emit1("and", {x, y});
  }
  Bool negate(Bool x) const { return x.is_literal() ? truth(!is(x, true)) : b->emit1("not", {x}); }
  Bool compare(const char* prim, const Int& x, const Int& y, bool literal_result) const {
    if (x.is_literal() && y.is_literal()) return truth(literal_result);
    return b->emit1(prim, {x, y});
  }
  Bool differ(const Int& x, const Int& y) const { return compare("ne", x, y, lit(x) != lit(y)); }
  Bool equal(const Int& x, const Int& y) const { return compare("eq", x, y, lit(x) == lit(y)); }
  Bool less(const Int& x, const Int& y) const { return compare("lt", x, y, lit(x) < lit(y)); }
  Int plus(const Int& x, int64_t k) const {
    if (k == 0) return x;
    if (x.is_literal()) return Literal::of_int(DType::i32, x.literal().as_int() + k);
    return b->emit1("add", {x, Literal::of_int(DType::i32, k)});
  }

 private:
  static int64_t lit(const Value& v) { return v.is_literal() ? v.literal().as_int() : 0; }
};

// A block whose kernel buffer the loop carries from step to step, as the grid
// schedule keeps it resident: refilled (an input) or written back (an output)
// only when the block moves. The TPU pipeline (and the interpreter, after
// jax/_src/pallas/mosaic/interpret/interpret_pallas_call.py) copies an input
// block in only at the first grid step and when it moves, and never back: the
// kernel's writes are seen by the later steps that stay on the block and by
// nobody else, and an aliased input keeps what it was copied in with while
// the output writes the shared buffer. An output aliased to an input goes
// back into the shared array only when it is about to move (and after the
// last step): until then an aliased input block read from the array sees the
// array without it.
struct ResidentBlock {
  int block_carry = -1;          // the block buffer (the whole array when whole)
  std::vector<int> start_carry;  // per dim: the previous start; -1 where it is a literal
};

// The starts the block had at the previous step: carried, or literal.
std::vector<Value> previous_starts(const ResidentBlock& r, const std::vector<Value>& kparams, const std::vector<Value>& starts) {
  std::vector<Value> prev;
  for (size_t d = 0; d < r.start_carry.size(); ++d) prev.push_back(r.start_carry[d] >= 0 ? kparams[r.start_carry[d]] : starts[d]);
  return prev;
}

bool kernel_writes(const Effects& fx, int param) { return fx.writes(param) || fx.accums(param); }

// A pallas_call lowered to one `for` loop over its grid, section by section:
// the loop's operands (constants, carries) outside it, then its body (program
// ids, block starts, the kernel's parameters, the kernel, the next carries),
// then the loop and its results.
class CallLowering {
 public:
  CallLowering(Discharger& d, const Op& op, Builder& b, Env& env)
      : d_(d), op_(op), b_(b), env_(env), g_(grid_mapping(op)), nin_(g_.num_inputs()), nout_(g_.num_outputs()),
        nsp_(g_.num_scalar_prefetch()), w_(make_body(g_.name.empty() ? "grid_loop" : g_.name + "_grid", BodyKind::fn)),
        lb_(*w_) {}

  void run() {
    for (int m = 0; m < nin_ + nout_; ++m) maps_.push_back(mapping_of(op_, g_, m));
    trip_count();
    read_aliases();
    read_inputs();
    plan_constants();
    plan_carries();
    open_body();
    program_ids();
    all_block_starts();
    for (int i = 0; i < nin_; ++i)
      if (resident_[i] && !maps_[i].whole) carry_starts(*resident_[i], starts_[i], kname(g_.input_param(i)));
    for (int o = 0; o < nout_; ++o)
      if (lazy_[o]) carry_starts(*lazy_[o], starts_[nin_ + o], kname(g_.output_param(o)));
    bind_kernel();
    d_.run_ops(*g_.kernel, lb_, kenv_);
    close_body();
    emit_loop();
  }

 private:
  void trip_count();
  void read_aliases();
  void read_inputs();
  void plan_constants();
  void plan_carries();
  void open_body();
  std::vector<std::string> const_names() const;
  std::vector<std::string> carry_names() const;
  void program_ids();
  void all_block_starts();
  void carry_starts(ResidentBlock& r, const std::vector<Value>& starts, const std::string& name);
  void bind_kernel();
  void bind_outputs();
  void bind_inputs();
  Value resident_input(const ResidentBlock& r, const std::vector<Value>& starts, Value fresh);
  void close_body();
  void emit_loop();

  // An aliased pair of whole-array any/hbm blocks is one buffer seen through
  // two kernel parameters.
  bool shares_output_buffer(int i) const {
    int o = alias_of_input_[i];
    return o >= 0 && maps_[i].whole && maps_[nin_ + o].whole && whole_space(g_.in_specs[i].mem) &&
           whole_space(g_.out_specs[o].mem);
  }
  // Loop parameters are named after the kernel parameters they feed.
  std::string kname(int p) const {
    const Body& k = *g_.kernel;
    return p < static_cast<int>(k.params().size()) ? k.params()[p]->name : std::string("c");
  }

  Discharger& d_;
  const Op& op_;
  Builder& b_;
  Env& env_;
  GridMapping g_;
  int nin_, nout_, nsp_;
  std::vector<Mapping> maps_;
  // Outside the loop.
  std::vector<Value> dyn_sizes_;
  Value total_;
  std::vector<int> alias_of_input_, alias_of_output_;
  std::vector<Value> in_vals_;
  std::vector<int> ref_slot_;
  // Loop layout: i, consts [sp..., dyn sizes..., plain inputs...], carries
  // [outputs..., Ref inputs..., scratch..., resident input blocks..., resident
  // output blocks..., their previous starts...].
  std::vector<Value> consts_, carries_;
  std::vector<int> const_of_input_, carry_of_input_, carry_of_scratch_;
  std::vector<std::optional<ResidentBlock>> resident_;  // per input
  std::vector<std::optional<ResidentBlock>> lazy_;      // per output: aliased, copied back when it moves
  // The loop body.
  BodyPtr w_;
  Builder lb_;
  Var* iv_ = nullptr;
  std::vector<Value> cparams_, kparams_;
  GridCtx ctx_, kctx_;
  std::vector<std::vector<Value>> starts_;
  Env kenv_;
  std::vector<int> in_slot_, out_slot_;
  std::vector<Value> out_array_;  // the output arrays at this step, before the kernel writes
};

// Grid sizes and the trip count, outside the loop.
void CallLowering::trip_count() {
  for (int j = 0; j < g_.num_dynamic; ++j) dyn_sizes_.push_back(to_i32(b_, d_.val(op_.operands[j], env_, op_)));
  int64_t static_total = 1;
  bool have_dyn = false;
  int dj = 0;
  for (int64_t s : g_.grid) {
    if (s >= 0) {
      static_total = saturating_mul(static_total, s);
      continue;
    }
    total_ = have_dyn ? b_.emit1("mul", {total_, dyn_sizes_[dj]}) : dyn_sizes_[dj];
    have_dyn = true, ++dj;
  }
  // The loop counter is i32 like program ids (jax/_src/pallas/pallas_call.py
  // discharges to a fori_loop over the grid's product).
  if (static_total > std::numeric_limits<int32_t>::max())
    throw Error(op_.loc, "discharge: the grid of pallas_call " + g_.name + " has " + std::to_string(static_total) +
                             " points, more than the i32 loop counter of the discharged loop can count (2^31 - 1)");
  if (!have_dyn) total_ = Literal::of_int(DType::i32, static_total);
  else if (static_total != 1) total_ = b_.emit1("mul", {total_, Literal::of_int(DType::i32, static_total)});
}

// Which input feeds which output.
void CallLowering::read_aliases() {
  alias_of_input_.assign(nin_, -1);
  alias_of_output_.assign(nout_, -1);
  for (auto [i, o] : g_.aliases) {
    if (i < 0 || i >= nin_ || o < 0 || o >= nout_) throw Error(op_.loc, "discharge: pallas_call alias out of range");
    alias_of_input_[i] = static_cast<int>(o);
    alias_of_output_[o] = static_cast<int>(i);
  }
}

void CallLowering::read_inputs() {
  in_vals_.resize(nin_);
  ref_slot_.assign(nin_, -1);
  for (int i = 0; i < nin_; ++i) {
    const Value& v = op_.operands[g_.input_operand(i)];
    if (!v.type().is_ref()) {
      in_vals_[i] = d_.val(v, env_, op_);
      continue;
    }
    if (alias_of_input_[i] >= 0)
      throw Error(op_.loc, "discharge: " + g_.describe(i) + " is passed as a Ref and also aliased to an output; not supported");
    ref_slot_[i] = d_.slot(v, env_, op_);
    in_vals_[i] = env_.slots[ref_slot_[i]];
  }
}

// The loop constants, and which inputs keep a resident block buffer: those the
// kernel writes, or aliased to an output whose writes change their source
// under them (Ref inputs are carried whole anyway).
void CallLowering::plan_constants() {
  for (int j = 0; j < nsp_; ++j) consts_.push_back(d_.val(op_.operands[g_.scalar_prefetch_operand(j)], env_, op_));
  consts_.insert(consts_.end(), dyn_sizes_.begin(), dyn_sizes_.end());
  const_of_input_.assign(nin_, -1);
  Effects kernel_fx = compute_effects(*g_.kernel);
  resident_.resize(nin_);
  for (int i = 0; i < nin_; ++i)
    if (ref_slot_[i] < 0 && !shares_output_buffer(i) &&
        (kernel_writes(kernel_fx, g_.input_param(i)) || alias_of_input_[i] >= 0))
      resident_[i].emplace();
  for (int i = 0; i < nin_; ++i) {
    if (ref_slot_[i] >= 0 || alias_of_input_[i] >= 0) continue;
    if (resident_[i] && maps_[i].whole) continue;  // its block carry starts as the input and is never refilled
    const_of_input_[i] = static_cast<int>(consts_.size());
    consts_.push_back(pad_to(b_, in_vals_[i], maps_[i].lo, maps_[i].hi));
  }
}

// Outputs start as zeros (or as the input they alias); resident blocks as zeros.
void CallLowering::plan_carries() {
  for (int o = 0; o < nout_; ++o) {
    const Mapping& mp = maps_[nin_ + o];
    Value init = alias_of_output_[o] >= 0 ? in_vals_[alias_of_output_[o]] : b_.zeros(g_.out_types[o]);
    carries_.push_back(pad_to(b_, init, mp.lo, mp.hi));
  }
  carry_of_input_.assign(nin_, -1);
  for (int i = 0; i < nin_; ++i) {
    if (ref_slot_[i] < 0) continue;
    carry_of_input_[i] = static_cast<int>(carries_.size());
    carries_.push_back(pad_to(b_, in_vals_[i], maps_[i].lo, maps_[i].hi));
  }
  for (const Type& t : g_.scratch_types) {
    carry_of_scratch_.push_back(is_semaphore(t.dtype()) ? -1 : static_cast<int>(carries_.size()));
    if (!is_semaphore(t.dtype())) carries_.push_back(b_.zeros(Type::array(t.array_type())));
  }
  for (int i = 0; i < nin_; ++i) {
    if (!resident_[i]) continue;
    resident_[i]->block_carry = static_cast<int>(carries_.size());
    const Type& t = g_.in_types[i];
    carries_.push_back(maps_[i].whole ? in_vals_[i] : b_.zeros(Type::array(t.dtype(), maps_[i].kernel_shape)));
  }
  lazy_.resize(nout_);
  for (int o = 0; o < nout_; ++o) {
    if (alias_of_output_[o] < 0 || maps_[nin_ + o].whole) continue;
    lazy_[o].emplace();
    lazy_[o]->block_carry = static_cast<int>(carries_.size());
    carries_.push_back(b_.zeros(Type::array(g_.out_types[o].dtype(), maps_[nin_ + o].kernel_shape)));
  }
}

std::vector<std::string> CallLowering::const_names() const {
  std::vector<std::string> names;
  for (int j = 0; j < nsp_; ++j) names.push_back(kname(j));
  for (int j = 0; j < g_.num_dynamic; ++j) names.push_back("grid_size" + std::to_string(j));
  for (int i = 0; i < nin_; ++i)
    if (const_of_input_[i] >= 0) names.push_back(kname(g_.input_param(i)));
  return names;
}

std::vector<std::string> CallLowering::carry_names() const {
  std::vector<std::string> names;
  for (int o = 0; o < nout_; ++o) names.push_back(kname(g_.output_param(o)));
  for (int i = 0; i < nin_; ++i)
    if (carry_of_input_[i] >= 0) names.push_back(kname(g_.input_param(i)));
  for (size_t s = 0; s < g_.scratch_types.size(); ++s)
    if (carry_of_scratch_[s] >= 0) names.push_back(kname(g_.scratch_param(static_cast<int>(s))));
  for (int i = 0; i < nin_; ++i)
    if (resident_[i]) names.push_back(kname(g_.input_param(i)) + "_block");
  for (int o = 0; o < nout_; ++o)
    if (lazy_[o]) names.push_back(kname(g_.output_param(o)) + "_block");
  return names;
}

void CallLowering::open_body() {
  w_->set_loc(op_.loc);
  lb_.set_loc(op_.loc);
  iv_ = lb_.param(Type::scalar(DType::i32), "i");
  std::vector<std::string> cnames = const_names(), knames = carry_names();
  for (size_t c = 0; c < consts_.size(); ++c) cparams_.push_back(lb_.param(consts_[c].type(), cnames.at(c)));
  for (size_t c = 0; c < carries_.size(); ++c) kparams_.push_back(lb_.param(carries_[c].type(), knames.at(c)));
}

// The loop runs the grid schedule of ir/grid_schedule.h on one core: row-major,
// pid[a] = (i / prod(sizes[a+1:])) % sizes[a].
void CallLowering::program_ids() {
  ctx_.names = g_.grid_names;
  int dj = 0;
  for (int64_t s : g_.grid) ctx_.sizes.push_back(s >= 0 ? Value(Literal::of_int(DType::i32, s)) : cparams_[nsp_ + dj++]);
  int rank = g_.grid_rank();
  std::vector<Value> pids(rank);
  Value stride = Literal::of_int(DType::i32, 1);
  for (int a = rank - 1; a >= 0; --a) {
    bool unit = stride.is_literal() && stride.literal().as_int() == 1;
    Value q = unit ? Value(iv_) : lb_.emit1("div", {iv_, stride});
    pids[a] = a == 0 ? q : lb_.emit1("rem", {q, ctx_.sizes[a]});
    if (pids[a].is_var() && pids[a].var() != iv_) pids[a].var()->name = "pid" + std::to_string(a);
    if (ctx_.sizes[a].is_literal() && stride.is_literal())
      stride = Literal::of_int(DType::i32, stride.literal().as_int() * ctx_.sizes[a].literal().as_int());
    else if (a > 0)
      stride = lb_.emit1("mul", {stride, ctx_.sizes[a]});
  }
  ctx_.pids = pids;
}

void CallLowering::all_block_starts() {
  IndexMaps im{&d_, &lb_, ctx_.pids, std::vector<Value>(cparams_.begin(), cparams_.begin() + nsp_), {}};
  starts_.resize(nin_ + nout_);
  for (int m = 0; m < nin_ + nout_; ++m) {
    if (maps_[m].whole) continue;
    // Mappings sharing an index map and block dims share their start indices.
    int same = -1;
    for (int e = 0; e < m && same < 0; ++e)
      if (!maps_[e].whole && g_.spec(e).index_map == g_.spec(m).index_map && g_.dims(e) == g_.dims(m)) same = e;
    starts_[m] = same >= 0 ? starts_[same] : block_starts(lb_, maps_[m], im.eval(g_.spec(m).index_map, g_.array(m).rank()));
  }
}

// The previous starts of a resident block: the last carries, one per start
// that is not a constant (known only now that the maps are inlined).
void CallLowering::carry_starts(ResidentBlock& r, const std::vector<Value>& starts, const std::string& name) {
  for (size_t dim = 0; dim < starts.size(); ++dim) {
    if (starts[dim].is_literal()) {
      r.start_carry.push_back(-1);
      continue;
    }
    r.start_carry.push_back(static_cast<int>(carries_.size()));
    carries_.push_back(Literal::of_int(DType::i32, 0));
    kparams_.push_back(lb_.param(Type::scalar(DType::i32), name + "_start" + std::to_string(dim)));
  }
}

// Kernel parameters -> slots. The kernel sees the grid without its vmapped
// axes (a batched kernel's program_id(a) still means the original axis a);
// index maps see them all.
void CallLowering::bind_kernel() {
  for (int a : g_.kernel_axes()) {
    kctx_.pids.push_back(ctx_.pids[a]);
    kctx_.sizes.push_back(ctx_.sizes[a]);
    if (a < static_cast<int>(ctx_.names.size())) kctx_.names.push_back(ctx_.names[a]);
  }
  const Body& k = *g_.kernel;
  if (k.params().size() != static_cast<size_t>(g_.scratch_param(0)) + g_.scratch_types.size())
    throw Error(op_.loc, "discharge: kernel @" + k.name() + " does not follow the pallas_call calling convention");
  kenv_.grid = &kctx_;
  for (int j = 0; j < nsp_; ++j) kenv_.slot_of[k.params()[j]] = kenv_.new_slot(cparams_[j]);
  bind_outputs();
  bind_inputs();
  for (size_t s = 0; s < g_.scratch_types.size(); ++s) {
    const Var* p = k.params()[g_.scratch_param(static_cast<int>(s))];
    if (carry_of_scratch_[s] < 0) kenv_.sems.insert(p);
    else kenv_.slot_of[p] = kenv_.new_slot(kparams_[carry_of_scratch_[s]]);
  }
}

// The output arrays at this step: a resident output block goes back to its
// previous starts now if the schedule copies it out after the previous step
// (it moved); otherwise this writes back what the array holds there, a no-op.
void CallLowering::bind_outputs() {
  const Body& k = *g_.kernel;
  IrAlgebra alg{&lb_};
  out_slot_.resize(nout_);
  out_array_.resize(nout_);
  for (int o = 0; o < nout_; ++o) {
    const Mapping& mp = maps_[nin_ + o];
    const std::vector<Value>& starts = starts_[nin_ + o];
    out_array_[o] = kparams_[o];
    if (!lazy_[o]) {
      out_slot_[o] = kenv_.new_slot(read_block(lb_, kparams_[o], mp, starts));
    } else {
      std::vector<Value> prev = previous_starts(*lazy_[o], kparams_, starts);
      // The previous step was not the last; step 0 has no previous step.
      Value moved = copies_out(alg, alg.truth(false), prev, starts);
      Value flush = alg.all(moved, alg.differ(iv_, Literal::of_int(DType::i32, 0)));
      Value kept = read_block(lb_, kparams_[o], mp, prev);
      Value back = lb_.emit1("select_n", {flush, kept, kparams_[lazy_[o]->block_carry]});
      out_array_[o] = write_block(lb_, kparams_[o], mp, prev, back);
      out_slot_[o] = kenv_.new_slot(kparams_[lazy_[o]->block_carry]);  // outputs are never copied in
    }
    kenv_.slot_of[k.params()[g_.output_param(o)]] = out_slot_[o];
  }
}

// The block the kernel sees at this step: the carried buffer while the
// schedule carries it, a fresh read of the array when it copies it in.
Value CallLowering::resident_input(const ResidentBlock& r, const std::vector<Value>& starts, Value fresh) {
  IrAlgebra alg{&lb_};
  Value first = lb_.emit1("eq", {iv_, Literal::of_int(DType::i32, 0)});
  Value copy_in = copies_in(alg, first, previous_starts(r, kparams_, starts), starts);
  return lb_.emit1("select_n", {copy_in, kparams_[r.block_carry], fresh});
}

void CallLowering::bind_inputs() {
  const Body& k = *g_.kernel;
  in_slot_.resize(nin_);
  for (int i = 0; i < nin_; ++i) {
    int o = alias_of_input_[i];
    if (shares_output_buffer(i)) {
      in_slot_[i] = out_slot_[o];
    } else if (resident_[i] && maps_[i].whole) {
      in_slot_[i] = kenv_.new_slot(kparams_[resident_[i]->block_carry]);
    } else {
      Value src = o >= 0                     ? out_array_[o]
                  : carry_of_input_[i] >= 0 ? kparams_[carry_of_input_[i]]
                                            : cparams_[const_of_input_[i]];
      Value block = read_block(lb_, src, maps_[i], starts_[i]);
      if (resident_[i]) block = resident_input(*resident_[i], starts_[i], block);
      in_slot_[i] = kenv_.new_slot(block);
    }
    kenv_.slot_of[k.params()[g_.input_param(i)]] = in_slot_[i];
  }
}

// What the step hands the next: blocks written back, resident buffers and
// their starts.
void CallLowering::close_body() {
  const Body& k = *g_.kernel;
  std::vector<Value> next(kparams_.size());
  auto keep_starts = [&](const ResidentBlock& r, const std::vector<Value>& starts) {
    for (size_t dim = 0; dim < r.start_carry.size(); ++dim)
      if (r.start_carry[dim] >= 0) next[r.start_carry[dim]] = starts[dim];
  };
  for (int o = 0; o < nout_; ++o) {
    if (!lazy_[o]) {
      next[o] = write_block(lb_, kparams_[o], maps_[nin_ + o], starts_[nin_ + o], kenv_.slots[out_slot_[o]]);
      continue;
    }
    next[o] = out_array_[o];
    next[lazy_[o]->block_carry] = kenv_.slots[out_slot_[o]];
    keep_starts(*lazy_[o], starts_[nin_ + o]);
  }
  for (int i = 0; i < nin_; ++i)
    if (carry_of_input_[i] >= 0)
      next[carry_of_input_[i]] = write_block(lb_, kparams_[carry_of_input_[i]], maps_[i], starts_[i], kenv_.slots[in_slot_[i]]);
  for (size_t s = 0; s < g_.scratch_types.size(); ++s)
    if (carry_of_scratch_[s] >= 0)
      next[carry_of_scratch_[s]] = kenv_.slots[kenv_.slot_of.at(k.params()[g_.scratch_param(static_cast<int>(s))])];
  for (int i = 0; i < nin_; ++i) {
    if (!resident_[i]) continue;
    next[resident_[i]->block_carry] = kenv_.slots[in_slot_[i]];
    keep_starts(*resident_[i], starts_[i]);
  }
  lb_.ret(next);
}

// The loop, then its results: a resident output's last block goes back after
// the last step, and padding is cut off.
void CallLowering::emit_loop() {
  std::vector<Value> res = ForView::make(b_, Literal::of_int(DType::i32, 0), total_, consts_, carries_, w_);
  for (int o = 0; o < nout_; ++o) {
    const Mapping& mp = maps_[nin_ + o];
    Value out = res[o];
    if (lazy_[o]) {
      std::vector<Value> last;  // carried starts, or the literal ones
      for (size_t dim = 0; dim < lazy_[o]->start_carry.size(); ++dim)
        last.push_back(lazy_[o]->start_carry[dim] >= 0 ? Value(res[lazy_[o]->start_carry[dim]]) : starts_[nin_ + o][dim]);
      out = write_block(b_, out, mp, last, res[lazy_[o]->block_carry]);
    }
    env_.values[op_.results[o]] = unpad(b_, out, g_.out_types[o].shape(), mp.lo, mp.hi);
  }
  for (int i = 0; i < nin_; ++i)
    if (carry_of_input_[i] >= 0)
      env_.slots[ref_slot_[i]] = unpad(b_, res[carry_of_input_[i]], g_.in_types[i].shape(), maps_[i].lo, maps_[i].hi);
}

void lower_pallas_call(Discharger& d, const Op& op, Builder& b, Env& env) { CallLowering(d, op, b, env).run(); }

}  // namespace

void pallas_call_rule(Discharger& d, const Op& op, Builder& b, Env& env) {
  if (d.keep_pallas_call()) {
    bool has_ref = false;
    for (const Value& v : op.operands) has_ref |= v.type().is_ref();
    if (has_ref) return alias_ref_inputs(d, op, b, env);
    Op copy;
    copy.prim = op.prim;
    copy.params = op.params;
    copy.loc = op.loc;
    for (const Value& v : op.operands) copy.operands.push_back(d.val(v, env, op));
    for (Var* r : op.results) {
      Var* nr = b.body().new_var(r->type, r->name, r->loc);
      copy.results.push_back(nr);
      env.values[r] = nr;
    }
    b.body().ops().push_back(std::move(copy));
    return;
  }
  lower_pallas_call(d, op, b, env);
}

void core_map_rule(Discharger& d, const Op& op, Builder& b, Env& env) {
  const BodyPtr& body = op.param(keys::body);
  std::vector<BlockSpec> in_specs;
  for (const Value& v : op.operands) {
    if (!v.type().is_ref())
      throw Error(op.loc, "discharge: core_map operands must be Refs (the body may only close over Refs), got " + v.type().str());
    BlockSpec s;
    s.mem = v.type().mem_space();
    in_specs.push_back(s);
  }
  // The body becomes the kernel as is: its parameters are exactly the inputs'
  // whole-array blocks in their own memory spaces.
  BodyPtr kernel = clone_body(*body, body->name());
  Op pc;
  pc.prim = &prim("pallas_call");
  pc.operands = op.operands;
  pc.loc = op.loc;
  std::vector<int64_t> grid = op.param(keys::mesh_shape);
  pc.params = {{"kernel", kernel},
               {"grid", grid},
               {"grid_names", op.param(keys::mesh_axes)},
               {"in_specs", in_specs},
               {"out_specs", std::vector<BlockSpec>{}},
               {"out_shapes", std::vector<Type>{}}};
  normalize_params(pc);
  pallas_call_rule(d, pc, b, env);
}

}  // namespace tessera::discharge
