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

// An input block whose buffer persists between steps. The TPU pipeline (and
// the interpreter, after jax/_src/pallas/mosaic/interpret/interpret_pallas_call.py)
// copies an input block into its buffer only at the first grid step and when
// the block's start changes, and never copies it back: the kernel's writes are
// seen by the later steps that stay on the same block, and by nobody else; and
// an aliased input keeps the contents it was copied in with while the output
// writes the shared buffer. So the loop carries the block buffer and the
// previous starts, and refills the buffer only when the starts change.
struct ResidentInput {
  int block_carry = -1;              // the block buffer (the whole array when whole)
  std::vector<int> start_carry;      // per dim: the previous start; -1 where it is a literal
};

// An output aliased to an input keeps its block in its own buffer too, and
// the pipeline copies it back into the shared array only when its start is
// about to change (and after the last step): until then an aliased input
// block read from the array sees the array without it. So the loop carries
// the block buffer and the previous starts, writes the buffer back at the
// previous starts when the starts change, and once more after the loop.
using ResidentOutput = ResidentInput;

// The starts the block had at the previous step: carried, or literal.
std::vector<Value> previous_starts(const ResidentInput& r, const std::vector<Value>& kparams, const std::vector<Value>& starts) {
  std::vector<Value> prev;
  for (size_t d = 0; d < r.start_carry.size(); ++d) prev.push_back(r.start_carry[d] >= 0 ? kparams[r.start_carry[d]] : starts[d]);
  return prev;
}

bool kernel_writes(const Effects& fx, int param) { return fx.writes(param) || fx.accums(param); }

// The block the kernel sees at this step: the carried buffer while the starts
// stay put, a fresh read of `src` at the first step and after a move.
Value resident_block(Builder& lb, Value iv, const ResidentInput& w, const std::vector<Value>& kparams,
                     const std::vector<Value>& starts, Value fresh) {
  Value moved = lb.emit1("eq", {iv, Literal::of_int(DType::i32, 0)});
  for (size_t d = 0; d < w.start_carry.size(); ++d)
    if (w.start_carry[d] >= 0) moved = lb.emit1("or", {moved, lb.emit1("ne", {starts[d], kparams[w.start_carry[d]]})});
  return lb.emit1("select_n", {moved, kparams[w.block_carry], fresh});
}

void lower_pallas_call(Discharger& d, const Op& op, Builder& b, Env& env) {
  GridMapping g = grid_mapping(op);
  int rank = g.grid_rank(), nin = g.num_inputs(), nout = g.num_outputs(), nsp = g.num_scalar_prefetch();
  std::vector<Mapping> maps;
  for (int m = 0; m < nin + nout; ++m) maps.push_back(mapping_of(op, g, m));

  // Grid sizes and the trip count, outside the loop.
  std::vector<Value> dyn_sizes;
  for (int j = 0; j < g.num_dynamic; ++j) dyn_sizes.push_back(to_i32(b, d.val(op.operands[j], env, op)));
  Value total;
  {
    int64_t static_total = 1;
    bool have_dyn = false;
    int dj = 0;
    for (int64_t s : g.grid) {
      if (s >= 0) {
        static_total = saturating_mul(static_total, s);
        continue;
      }
      total = have_dyn ? b.emit1("mul", {total, dyn_sizes[dj]}) : dyn_sizes[dj];
      have_dyn = true, ++dj;
    }
    // The loop counter is i32 like program ids (jax/_src/pallas/pallas_call.py
    // discharges to a fori_loop over the grid's product).
    if (static_total > std::numeric_limits<int32_t>::max())
      throw Error(op.loc, "discharge: the grid of pallas_call " + g.name + " has " + std::to_string(static_total) +
                              " points, more than the i32 loop counter of the discharged loop can count (2^31 - 1)");
    if (!have_dyn) total = Literal::of_int(DType::i32, static_total);
    else if (static_total != 1) total = b.emit1("mul", {total, Literal::of_int(DType::i32, static_total)});
  }

  // Which input feeds which output.
  std::vector<int> alias_of_input(nin, -1), alias_of_output(nout, -1);
  for (auto [i, o] : g.aliases) {
    if (i < 0 || i >= nin || o < 0 || o >= nout) throw Error(op.loc, "discharge: pallas_call alias out of range");
    alias_of_input[i] = static_cast<int>(o);
    alias_of_output[o] = static_cast<int>(i);
  }
  // An aliased pair of whole-array any/hbm blocks is one buffer seen through
  // two kernel parameters.
  auto shares_output_buffer = [&](int i) {
    int o = alias_of_input[i];
    return o >= 0 && maps[i].whole && maps[nin + o].whole && whole_space(g.in_specs[i].mem) &&
           whole_space(g.out_specs[o].mem);
  };
  std::vector<Value> in_vals(nin);
  std::vector<int> ref_slot(nin, -1);
  for (int i = 0; i < nin; ++i) {
    const Value& v = op.operands[g.input_operand(i)];
    if (v.type().is_ref()) {
      if (alias_of_input[i] >= 0)
        throw Error(op.loc, "discharge: " + g.describe(i) + " is passed as a Ref and also aliased to an output; not supported");
      ref_slot[i] = d.slot(v, env, op);
      in_vals[i] = env.slots[ref_slot[i]];
    } else {
      in_vals[i] = d.val(v, env, op);
    }
  }

  // Loop layout: i, consts [sp..., dyn sizes..., plain inputs...], carries
  // [outputs..., Ref inputs..., scratch..., resident input blocks..., their
  // previous starts...].
  std::vector<Value> consts, carries;
  for (int j = 0; j < nsp; ++j) consts.push_back(d.val(op.operands[g.scalar_prefetch_operand(j)], env, op));
  consts.insert(consts.end(), dyn_sizes.begin(), dyn_sizes.end());
  std::vector<int> const_of_input(nin, -1), carry_of_input(nin, -1), carry_of_scratch;
  // Inputs whose block buffer must persist between steps: the kernel writes
  // it, or it is aliased to an output whose writes change its source under it
  // (Ref inputs are carried whole anyway).
  Effects kernel_fx = compute_effects(*g.kernel);
  std::vector<std::optional<ResidentInput>> resident(nin);
  for (int i = 0; i < nin; ++i)
    if (ref_slot[i] < 0 && !shares_output_buffer(i) &&
        (kernel_writes(kernel_fx, g.input_param(i)) || alias_of_input[i] >= 0))
      resident[i].emplace();
  for (int i = 0; i < nin; ++i) {
    if (ref_slot[i] >= 0 || alias_of_input[i] >= 0) continue;
    if (resident[i] && maps[i].whole) continue;  // its block carry starts as the input and is never refilled
    const_of_input[i] = static_cast<int>(consts.size());
    consts.push_back(pad_to(b, in_vals[i], maps[i].lo, maps[i].hi));
  }
  for (int o = 0; o < nout; ++o) {
    const Mapping& mp = maps[nin + o];
    Value init = alias_of_output[o] >= 0 ? in_vals[alias_of_output[o]] : b.zeros(g.out_types[o]);
    carries.push_back(pad_to(b, init, mp.lo, mp.hi));
  }
  for (int i = 0; i < nin; ++i) {
    if (ref_slot[i] < 0) continue;
    carry_of_input[i] = static_cast<int>(carries.size());
    carries.push_back(pad_to(b, in_vals[i], maps[i].lo, maps[i].hi));
  }
  for (const Type& t : g.scratch_types) {
    if (is_semaphore(t.dtype())) {
      carry_of_scratch.push_back(-1);
      continue;
    }
    carry_of_scratch.push_back(static_cast<int>(carries.size()));
    carries.push_back(b.zeros(Type::array(t.array_type())));
  }
  for (int i = 0; i < nin; ++i) {
    if (!resident[i]) continue;
    resident[i]->block_carry = static_cast<int>(carries.size());
    const Type& t = g.in_types[i];
    carries.push_back(maps[i].whole ? in_vals[i] : b.zeros(Type::array(t.dtype(), maps[i].kernel_shape)));
  }

  std::vector<std::optional<ResidentOutput>> lazy(nout);
  for (int o = 0; o < nout; ++o) {
    if (alias_of_output[o] < 0 || maps[nin + o].whole) continue;
    lazy[o].emplace();
    lazy[o]->block_carry = static_cast<int>(carries.size());
    carries.push_back(b.zeros(Type::array(g.out_types[o].dtype(), maps[nin + o].kernel_shape)));
  }

  // The loop body.
  BodyPtr w = make_body(g.name.empty() ? "grid_loop" : g.name + "_grid", BodyKind::fn);
  w->set_loc(op.loc);
  Builder lb(*w);
  lb.set_loc(op.loc);
  Var* iv = lb.param(Type::scalar(DType::i32), "i");
  // Loop parameters are named after the kernel parameters they feed.
  const Body& kern = *g.kernel;
  auto kname = [&](int p) { return p < static_cast<int>(kern.params().size()) ? kern.params()[p]->name : std::string("c"); };
  std::vector<std::string> const_names, carry_names;
  for (int j = 0; j < nsp; ++j) const_names.push_back(kname(j));
  for (int j = 0; j < g.num_dynamic; ++j) const_names.push_back("grid_size" + std::to_string(j));
  for (int i = 0; i < nin; ++i)
    if (const_of_input[i] >= 0) const_names.push_back(kname(g.input_param(i)));
  for (int o = 0; o < nout; ++o) carry_names.push_back(kname(g.output_param(o)));
  for (int i = 0; i < nin; ++i)
    if (carry_of_input[i] >= 0) carry_names.push_back(kname(g.input_param(i)));
  for (size_t s = 0; s < g.scratch_types.size(); ++s)
    if (carry_of_scratch[s] >= 0) carry_names.push_back(kname(g.scratch_param(static_cast<int>(s))));
  for (int i = 0; i < nin; ++i)
    if (resident[i]) carry_names.push_back(kname(g.input_param(i)) + "_block");
  for (int o = 0; o < nout; ++o)
    if (lazy[o]) carry_names.push_back(kname(g.output_param(o)) + "_block");
  std::vector<Value> cparams, kparams;
  for (size_t c = 0; c < consts.size(); ++c) cparams.push_back(lb.param(consts[c].type(), const_names.at(c)));
  for (size_t c = 0; c < carries.size(); ++c) kparams.push_back(lb.param(carries[c].type(), carry_names.at(c)));
  GridCtx ctx;
  ctx.names = g.grid_names;
  {
    int dj = 0;
    for (int64_t s : g.grid)
      ctx.sizes.push_back(s >= 0 ? Value(Literal::of_int(DType::i32, s)) : cparams[nsp + dj++]);
    // Row-major: pid[a] = (i / prod(sizes[a+1:])) % sizes[a].
    std::vector<Value> pids(rank);
    Value stride = Literal::of_int(DType::i32, 1);
    for (int a = rank - 1; a >= 0; --a) {
      bool unit = stride.is_literal() && stride.literal().as_int() == 1;
      Value q = unit ? Value(iv) : lb.emit1("div", {iv, stride});
      pids[a] = a == 0 ? q : lb.emit1("rem", {q, ctx.sizes[a]});
      if (pids[a].is_var() && pids[a].var() != iv) pids[a].var()->name = "pid" + std::to_string(a);
      if (ctx.sizes[a].is_literal() && stride.is_literal())
        stride = Literal::of_int(DType::i32, stride.literal().as_int() * ctx.sizes[a].literal().as_int());
      else if (a > 0)
        stride = lb.emit1("mul", {stride, ctx.sizes[a]});
    }
    ctx.pids = pids;
  }
  IndexMaps im{&d, &lb, ctx.pids, std::vector<Value>(cparams.begin(), cparams.begin() + nsp), {}};
  std::vector<std::vector<Value>> starts(nin + nout);
  for (int m = 0; m < nin + nout; ++m) {
    if (maps[m].whole) continue;
    // Mappings sharing an index map and block dims share their start indices.
    int same = -1;
    for (int e = 0; e < m && same < 0; ++e)
      if (!maps[e].whole && g.spec(e).index_map == g.spec(m).index_map && g.dims(e) == g.dims(m)) same = e;
    starts[m] = same >= 0 ? starts[same] : block_starts(lb, maps[m], im.eval(g.spec(m).index_map, g.array(m).rank()));
  }
  // The previous starts of resident input blocks: the last carries, one per
  // start that is not a constant (known only now that the maps are inlined).
  for (int i = 0; i < nin; ++i) {
    if (!resident[i] || maps[i].whole) continue;
    for (size_t dim = 0; dim < starts[i].size(); ++dim) {
      if (starts[i][dim].is_literal()) {
        resident[i]->start_carry.push_back(-1);
        continue;
      }
      resident[i]->start_carry.push_back(static_cast<int>(carries.size()));
      carries.push_back(Literal::of_int(DType::i32, 0));
      kparams.push_back(lb.param(Type::scalar(DType::i32), kname(g.input_param(i)) + "_start" + std::to_string(dim)));
    }
  }

  for (int o = 0; o < nout; ++o) {
    if (!lazy[o]) continue;
    for (size_t dim = 0; dim < starts[nin + o].size(); ++dim) {
      if (starts[nin + o][dim].is_literal()) {
        lazy[o]->start_carry.push_back(-1);
        continue;
      }
      lazy[o]->start_carry.push_back(static_cast<int>(carries.size()));
      carries.push_back(Literal::of_int(DType::i32, 0));
      kparams.push_back(lb.param(Type::scalar(DType::i32), kname(g.output_param(o)) + "_start" + std::to_string(dim)));
    }
  }

  // The kernel sees the grid without its vmapped axes (a batched kernel's
  // program_id(a) still means the original axis a); index maps see them all.
  GridCtx kctx;
  for (int a : g.kernel_axes()) {
    kctx.pids.push_back(ctx.pids[a]);
    kctx.sizes.push_back(ctx.sizes[a]);
    if (a < static_cast<int>(ctx.names.size())) kctx.names.push_back(ctx.names[a]);
  }

  // Kernel parameters -> slots.
  const Body& k = *g.kernel;
  if (k.params().size() != static_cast<size_t>(g.scratch_param(0)) + g.scratch_types.size())
    throw Error(op.loc, "discharge: kernel @" + k.name() + " does not follow the pallas_call calling convention");
  Env kenv;
  kenv.grid = &kctx;
  for (int j = 0; j < nsp; ++j) kenv.slot_of[k.params()[j]] = kenv.new_slot(cparams[j]);
  std::vector<int> in_slot(nin), out_slot(nout);
  // The output arrays at this step: a lazily copied-back block is written to
  // its previous starts now if its starts moved (else it writes back what the
  // array holds there, a no-op).
  std::vector<Value> out_array(nout);
  for (int o = 0; o < nout; ++o) {
    const Mapping& mp = maps[nin + o];
    out_array[o] = kparams[o];
    if (!lazy[o]) {
      out_slot[o] = kenv.new_slot(read_block(lb, kparams[o], mp, starts[nin + o]));
    } else {
      std::vector<Value> prev = previous_starts(*lazy[o], kparams, starts[nin + o]);
      Value moved = Literal::of_int(DType::i1, 0);
      for (size_t dim = 0; dim < prev.size(); ++dim)
        if (lazy[o]->start_carry[dim] >= 0) moved = lb.emit1("or", {moved, lb.emit1("ne", {starts[nin + o][dim], prev[dim]})});
      Value flush = lb.emit1("and", {moved, lb.emit1("ne", {iv, Literal::of_int(DType::i32, 0)})});
      Value kept = read_block(lb, kparams[o], mp, prev);
      Value back = lb.emit1("select_n", {flush, kept, kparams[lazy[o]->block_carry]});
      out_array[o] = write_block(lb, kparams[o], mp, prev, back);
      out_slot[o] = kenv.new_slot(kparams[lazy[o]->block_carry]);  // outputs are never copied in
    }
    kenv.slot_of[k.params()[g.output_param(o)]] = out_slot[o];
  }
  for (int i = 0; i < nin; ++i) {
    const Var* p = k.params()[g.input_param(i)];
    int o = alias_of_input[i];
    if (shares_output_buffer(i)) {
      in_slot[i] = out_slot[o];
    } else if (resident[i] && maps[i].whole) {
      in_slot[i] = kenv.new_slot(kparams[resident[i]->block_carry]);
    } else {
      Value src = o >= 0 ? out_array[o] : carry_of_input[i] >= 0 ? kparams[carry_of_input[i]] : cparams[const_of_input[i]];
      Value block = read_block(lb, src, maps[i], starts[i]);
      if (resident[i]) block = resident_block(lb, iv, *resident[i], kparams, starts[i], block);
      in_slot[i] = kenv.new_slot(block);
    }
    kenv.slot_of[p] = in_slot[i];
  }
  for (size_t s = 0; s < g.scratch_types.size(); ++s) {
    const Var* p = k.params()[g.scratch_param(static_cast<int>(s))];
    if (carry_of_scratch[s] < 0) kenv.sems.insert(p);
    else kenv.slot_of[p] = kenv.new_slot(kparams[carry_of_scratch[s]]);
  }
  d.run_ops(k, lb, kenv);

  std::vector<Value> next(kparams.size());
  for (int o = 0; o < nout; ++o) {
    if (!lazy[o]) {
      next[o] = write_block(lb, kparams[o], maps[nin + o], starts[nin + o], kenv.slots[out_slot[o]]);
      continue;
    }
    next[o] = out_array[o];
    next[lazy[o]->block_carry] = kenv.slots[out_slot[o]];
    for (size_t dim = 0; dim < lazy[o]->start_carry.size(); ++dim)
      if (lazy[o]->start_carry[dim] >= 0) next[lazy[o]->start_carry[dim]] = starts[nin + o][dim];
  }
  for (int i = 0; i < nin; ++i)
    if (carry_of_input[i] >= 0)
      next[carry_of_input[i]] = write_block(lb, kparams[carry_of_input[i]], maps[i], starts[i], kenv.slots[in_slot[i]]);
  for (size_t s = 0; s < g.scratch_types.size(); ++s)
    if (carry_of_scratch[s] >= 0) next[carry_of_scratch[s]] = kenv.slots[kenv.slot_of.at(k.params()[g.scratch_param(static_cast<int>(s))])];
  for (int i = 0; i < nin; ++i) {
    if (!resident[i]) continue;
    next[resident[i]->block_carry] = kenv.slots[in_slot[i]];
    for (size_t dim = 0; dim < resident[i]->start_carry.size(); ++dim)
      if (resident[i]->start_carry[dim] >= 0) next[resident[i]->start_carry[dim]] = starts[i][dim];
  }
  lb.ret(next);

  std::vector<Value> res = ForView::make(b, Literal::of_int(DType::i32, 0), total, consts, carries, w);
  for (int o = 0; o < nout; ++o) {
    Value out = res[o];
    if (lazy[o]) {  // the last block goes back after the last step
      std::vector<Value> last;  // carried starts, or the literal ones
      for (size_t dim = 0; dim < lazy[o]->start_carry.size(); ++dim)
        last.push_back(lazy[o]->start_carry[dim] >= 0 ? Value(res[lazy[o]->start_carry[dim]]) : starts[nin + o][dim]);
      out = write_block(b, out, maps[nin + o], last, res[lazy[o]->block_carry]);
    }
    env.values[op.results[o]] = unpad(b, out, g.out_types[o].shape(), maps[nin + o].lo, maps[nin + o].hi);
  }
  for (int i = 0; i < nin; ++i)
    if (carry_of_input[i] >= 0)
      env.slots[ref_slot[i]] = unpad(b, res[carry_of_input[i]], g.in_types[i].shape(), maps[i].lo, maps[i].hi);
}

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
