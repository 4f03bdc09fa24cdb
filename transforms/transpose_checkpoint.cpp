#include "transforms/transpose_checkpoint.h"

#include <optional>
#include <string>

#include "ir/builder.h"
#include "ir/clone.h"
#include "ir/control_views.h"
#include "transforms/pass.h"
#include "transforms/transpose_grid.h"
#include "transforms/var_table.h"

namespace tessera::transpose {
namespace {

using Vals = std::vector<Value>;

bool whole_ref(const Op& op, int operand) {
  const Indexer* ix = op.indexer_for(operand);
  if (!ix) return true;
  for (const IndexEntry& e : ix->entries)
    if (e.kind != IndexEntry::Full) return false;
  return true;
}

// `@checkpoint_block(i..., prefetch...) -> (i..., 0...)`: grid point i's
// block of a checkpoint array, whose leading dims are the grid's.
BodyPtr checkpoint_index_map(ad::SymbolSink& syms, const GridMapping& g, int scratch_rank) {
  std::string key = "checkpoint-index-map:" + std::to_string(g.grid_rank()) + ":" + std::to_string(scratch_rank);
  for (const Type& t : g.scalar_prefetch_types) key += ":" + t.str();
  if (auto it = syms.memo.find(key); it != syms.memo.end()) return it->second;
  BodyPtr m = make_body(syms.fresh("checkpoint_block"), BodyKind::index_map);
  Builder b(*m);
  std::vector<Type> types = g.expected_index_map_params();
  Vals outs;
  for (size_t i = 0; i < types.size(); ++i) {
    bool axis = static_cast<int>(i) < g.grid_rank();
    Var* p = b.param(types[i], (axis ? "i" : "s") + std::to_string(axis ? i : i - g.grid.size()));
    if (axis) outs.push_back(p);
  }
  for (int d = 0; d < scratch_rank; ++d) outs.push_back(b.i32(0));
  b.ret(outs);
  syms.add(m);
  syms.memo[key] = m;
  return m;
}

// The array and block of scratch `s`'s checkpoints: (grid..., scratch...),
// one block per grid point, the grid dims squeezed.
struct CheckpointArray {
  Type array, block_ref;
  BlockSpec spec;
};

CheckpointArray checkpoint_array(ad::SymbolSink& syms, const GridMapping& g, int s) {
  const Type& t = g.scratch_types[s];
  Shape shape = g.grid;
  shape.insert(shape.end(), t.shape().begin(), t.shape().end());
  CheckpointArray a{Type::array(t.dtype(), shape), Type::ref(t.dtype(), t.shape(), MemSpace::vmem), {}};
  std::vector<BlockDim> dims(g.grid.size(), BlockDim{BlockDimKind::Squeezed, 1});
  for (int64_t n : t.shape()) dims.push_back(BlockDim{BlockDimKind::Blocked, n});
  a.spec.block = dims;
  a.spec.index_map = checkpoint_index_map(syms, g, static_cast<int>(t.shape().size()));
  return a;
}

// In a kernel on `g`'s grid: does this step start a chain of steps that
// carry state, every `arbitrary` axis at 0? (State carried across positions
// of a parallel axis would race: the prover's carried-state claim.) nullopt
// when there is no arbitrary axis: then no step carries state.
std::optional<Value> chain_start(Builder& b, const GridMapping& g) {
  std::optional<Value> start;
  std::vector<int> axes = g.kernel_axes();
  for (size_t ka = 0; ka < axes.size(); ++ka) {
    if (g.is_parallel(axes[ka])) continue;
    Value at0 = b.binary("eq", b.emit1("program_id", {}, {{"axis", static_cast<int64_t>(ka)}}), b.i32(0));
    start = start ? b.binary("and", *start, at0) : at0;
  }
  return start;
}

// Copies Refs `from[j]` into `to[j]`, whole, at every step but the first of
// a chain, where the kernel itself sets its state: there the checkpoint
// block, never read, gets zeros, so that no block is copied out holding
// uninitialized memory (the prover's output-coverage claim).
void copy_unless_chain_start(Builder& b, const GridMapping& g, const Vals& from, const Vals& to) {
  std::optional<Value> start = chain_start(b, g);
  if (!start || from.empty()) return;
  BodyPtr copy = make_body("copy", BodyKind::fn), skip = make_body("skip", BodyKind::fn);
  Builder cb(*copy), sb(*skip);
  Vals args, cf, ct;
  for (const Value& f : from) {
    cf.push_back(cb.param(f.type(), "from"));
    sb.param(f.type(), "from");
  }
  for (const Value& t : to) {
    ct.push_back(cb.param(t.type(), "to"));
    Value unsaved = sb.param(t.type(), "to");
    sb.swap_discard(unsaved, sb.zeros(t.type()));
  }
  for (size_t j = 0; j < from.size(); ++j) cb.swap_discard(ct[j], cb.get(cf[j]));
  args.insert(args.end(), from.begin(), from.end());
  args.insert(args.end(), to.begin(), to.end());
  CondView::make(b, *start, args, {copy, skip});
}

// The checkpoint call: the kernel's non-linear part over the same grid,
// saving each scratch in `saved` at the start of every step. Returns the
// checkpoint arrays.
Vals emit_checkpoint_call(Ctx& c, const Op& op, const GridMapping& g, const Vals& x, const KernelTaint& taint,
                          const std::vector<int>& saved, const std::vector<CheckpointArray>& arrays) {
  const Body& k = *g.kernel;
  BodyPtr part = restrict_kernel(k, taint, k.name() + "_nonlinear");
  BodyPtr kernel = make_body(c.syms.fresh(k.name() + "_checkpoint"), BodyKind::kernel);
  kernel->set_loc(k.loc());
  Builder kb(*kernel);
  kb.set_loc(k.loc());
  VarToValue map(part->ops().size() + part->params().size() + 8);
  Vals operands(x.begin(), x.begin() + g.num_dynamic + g.num_scalar_prefetch());
  std::vector<BlockSpec> in_specs, out_specs;
  std::vector<Type> out_shapes, scratch;
  std::vector<Value> new_param(k.params().size());
  auto add_param = [&](int p) {
    const Var* v = k.params()[p];
    if (!taint.has(v)) new_param[p] = kb.param(v->type, v->name);
  };
  for (int j = 0; j < g.num_scalar_prefetch(); ++j) add_param(j);
  for (int i = 0; i < g.num_inputs(); ++i) {
    add_param(g.input_param(i));
    if (taint.has(k.params()[g.input_param(i)])) continue;
    in_specs.push_back(g.in_specs[i]);
    operands.push_back(x[g.input_operand(i)]);
  }
  for (int o = 0; o < g.num_outputs(); ++o) {
    add_param(g.output_param(o));
    if (taint.has(k.params()[g.output_param(o)])) continue;
    out_specs.push_back(g.out_specs[o]);
    out_shapes.push_back(g.out_types[o]);
  }
  Vals ckpt_refs;
  for (const CheckpointArray& a : arrays) {
    out_specs.push_back(a.spec);
    out_shapes.push_back(a.array);
    ckpt_refs.push_back(kb.param(a.block_ref, "checkpoint"));
  }
  for (size_t s = 0; s < g.scratch_types.size(); ++s) {
    int p = g.scratch_param(static_cast<int>(s));
    add_param(p);
    if (!taint.has(k.params()[p])) scratch.push_back(g.scratch_types[s]);
  }
  Vals from;
  for (int sc : saved) from.push_back(new_param[g.scratch_param(sc)]);
  copy_unless_chain_start(kb, g, from, ckpt_refs);
  size_t kept = 0;
  for (size_t p = 0; p < k.params().size(); ++p)
    if (!taint.has(k.params()[p])) map[part->params()[kept++]] = new_param[p];
  for (const Op& o : part->ops()) copy_op(o, *kernel, map);
  kb.ret({});
  // Dead values restrict_kernel leaves in nested bodies go now, so a later
  // dce keeps this kernel (a module symbol) as it is.
  kernel = dce_body(kernel);
  c.syms.add(kernel);

  Params p = params_with(op, {{"kernel", kernel},
                              {"in_specs", in_specs},
                              {"out_specs", out_specs},
                              {"out_shapes", out_shapes},
                              {"scratch", scratch},
                              {"cost_estimate", std::vector<int64_t>{}}});
  Vals res = c.b.emit(*op.prim, operands, p);
  return Vals(res.end() - static_cast<long>(arrays.size()), res.end());
}

}  // namespace

bool overwritten_at_each_step(const Body& kernel, const Var* ref) {
  for (const Op& op : kernel.ops())
    for (size_t i = 0; i < op.operands.size(); ++i) {
      if (!op.operands[i].is_var() || op.operands[i].var() != ref) continue;
      return op.prim->name == "swap" && i == 0 && whole_ref(op, 0);
    }
  return false;
}

CheckpointedCall checkpoint_scratch(Ctx& c, const Op& op, const GridMapping& g, const Vals& x,
                                    const std::vector<bool>& linear, const KernelTaint& taint,
                                    const std::vector<int>& saved) {
  std::vector<CheckpointArray> arrays;
  for (int s : saved) arrays.push_back(checkpoint_array(c.syms, g, s));
  Vals ckpt = emit_checkpoint_call(c, op, g, x, taint, saved, arrays);

  // The tangent kernel, taking the checkpoints after its inputs and
  // restoring the saved scratch from them first thing.
  const Body& k = *g.kernel;
  BodyPtr kernel = make_body(k.name() + "_restored", BodyKind::kernel);
  kernel->set_loc(k.loc());
  Builder kb(*kernel);
  kb.set_loc(k.loc());
  VarToValue map(k.ops().size() + k.params().size() + 8);
  Vals ckpt_refs;
  size_t at = static_cast<size_t>(g.output_param(0));  // after the inputs
  auto add_checkpoints = [&] {
    for (const CheckpointArray& a : arrays) ckpt_refs.push_back(kb.param(a.block_ref, "checkpoint"));
  };
  for (size_t p = 0; p < k.params().size(); ++p) {
    if (p == at) add_checkpoints();
    map[k.params()[p]] = kb.param(k.params()[p]->type, k.params()[p]->name);
  }
  if (at == k.params().size()) add_checkpoints();
  Vals to;
  for (int sc : saved) to.push_back(map[k.params()[g.scratch_param(sc)]]);
  copy_unless_chain_start(kb, g, ckpt_refs, to);
  for (const Op& o : k.ops()) copy_op(o, *kernel, map);
  kb.ret({});

  std::vector<BlockSpec> in_specs = g.in_specs;
  for (const CheckpointArray& a : arrays) in_specs.push_back(a.spec);
  CheckpointedCall r;
  r.holder = make_body("checkpointed", BodyKind::func);
  Builder hb(*r.holder);
  hb.set_loc(op.loc);
  Vals operands = op.operands;
  operands.insert(operands.end(), ckpt.begin(), ckpt.end());
  hb.emit(*op.prim, operands, params_with(op, {{"kernel", kernel}, {"in_specs", in_specs}}));
  r.op = &r.holder->ops().back();
  r.x = x;
  r.x.insert(r.x.end(), ckpt.begin(), ckpt.end());
  r.linear = linear;
  r.linear.resize(r.x.size(), false);
  return r;
}

}  // namespace tessera::transpose
