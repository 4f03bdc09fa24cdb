// Batching rules of array ops (elementwise, structural, reductions,
// dot_general) and state ops, and the scan-over-the-batch fallback.
#include <algorithm>

#include "ir/control_views.h"
#include "transforms/vmap.h"

namespace tessera::vmap {
namespace {

using Vals = std::vector<Value>;
using Ints = std::vector<int64_t>;

RuleResult at0(Vals v) { return {v, std::vector<int>(v.size(), 0)}; }

Ints shifted(const Ints& v, int64_t by = 1) {
  Ints o;
  for (int64_t a : v) o.push_back(a + by);
  return o;
}

Ints prepend(int64_t first, const Ints& rest) { return ad::insert_at(rest, 0, first); }

// Elementwise ops (incl. select_n, convert_element_type, multiple_of): batch
// at 0 everywhere; an unbatched rank-0 operand keeps broadcasting, a batched
// one that was rank 0 is broadcast to the full batched shape.
RuleResult elementwise(Ctx& c, const Op& op, const Vals& x, const std::vector<int>& d) {
  const Shape& out = op.results[0]->type.shape();
  Shape full = ad::insert_at(out, 0, c.size);
  Vals ops;
  for (size_t i = 0; i < x.size(); ++i) {
    int orig_rank = op.operands[i].type().rank();
    if (d[i] == kNotMapped) {
      ops.push_back(orig_rank == 0 ? x[i] : c.move_to(x[i], kNotMapped, 0));
    } else {
      Value v = c.move_to(x[i], d[i], 0);
      if (orig_rank < static_cast<int>(out.size()))
        v = c.b.emit1("broadcast_in_dim", {v}, {{"shape", full}, {"broadcast_dimensions", Ints{0}}});
      ops.push_back(v);
    }
  }
  return at0(c.b.emit(*op.prim, ops, op.params));
}

// Unary shape ops: batch to 0, then adjust the params for the leading axis.
using ParamFix = Params (*)(Ctx&, const Op&);
BatchRule leading(ParamFix fix) {
  return [fix](Ctx& c, const Op& op, const Vals& x, const std::vector<int>& d) {
    return at0(c.b.emit(*op.prim, {c.move_to(x[0], d[0], 0)}, fix(c, op)));
  };
}

// Every operand batched at 0 (broadcast if needed); for n-ary shape ops.
Vals all_at0(Ctx& c, const Vals& x, const std::vector<int>& d) {
  Vals o;
  for (size_t i = 0; i < x.size(); ++i) o.push_back(c.move_to(x[i], d[i], 0));
  return o;
}

RuleResult dot_rule(Ctx& c, const Op& op, const Vals& x, const std::vector<int>& d) {
  Ints lc = op.param(keys::lhs_contracting), rc = op.param(keys::rhs_contracting);
  Ints lb = op.param(keys::lhs_batch), rb = op.param(keys::rhs_batch);
  Value l = x[0], r = x[1];
  int out_dim;
  if (d[0] != kNotMapped && d[1] != kNotMapped) {
    l = c.move_to(l, d[0], 0), r = c.move_to(r, d[1], 0);
    lc = shifted(lc), rc = shifted(rc), lb = prepend(0, shifted(lb)), rb = prepend(0, shifted(rb));
    out_dim = 0;
  } else if (d[0] != kNotMapped) {
    l = c.move_to(l, d[0], 0);
    lc = shifted(lc), lb = shifted(lb);
    out_dim = static_cast<int>(lb.size());  // first lhs free dim
  } else {
    r = c.move_to(r, d[1], 0);
    rc = shifted(rc), rb = shifted(rb);
    int lhs_free = x[0].type().rank() - static_cast<int>(lc.size() + lb.size());
    out_dim = static_cast<int>(lb.size()) + lhs_free;  // first rhs free dim
  }
  Params p = params_with(op, {{"lhs_contracting", lc}, {"rhs_contracting", rc}, {"lhs_batch", lb}, {"rhs_batch", rb}});
  return {c.b.emit(*op.prim, {l, r}, p), {out_dim}};
}

bool any_mapped(const std::vector<int>& d, size_t from, size_t to) {
  for (size_t i = from; i < to && i < d.size(); ++i)
    if (d[i] != kNotMapped) return true;
  return false;
}

Value zero_index_like(const Vals& x, size_t at) {
  DType t = at < x.size() ? x[at].type().dtype() : DType::i32;
  return Literal::of_int(t, 0);
}

RuleResult dynamic_slice_rule(Ctx& c, const Op& op, const Vals& x, const std::vector<int>& d) {
  if (any_mapped(d, 1, x.size())) return loop_rule(c, op, x, d);
  Vals ops{c.move_to(x[0], d[0], 0), zero_index_like(x, 1)};
  ops.insert(ops.end(), x.begin() + 1, x.end());
  return at0(c.b.emit(*op.prim, ops, params_with(op, {{"slice_sizes", prepend(c.size, op.param(keys::slice_sizes))}})));
}

// roll: the batch axis goes in front, the rolled axis one further; a batched
// run-time shift differs per element, so it becomes a loop of calls.
RuleResult roll_rule(Ctx& c, const Op& op, const Vals& x, const std::vector<int>& d) {
  if (any_mapped(d, 1, x.size())) return loop_rule(c, op, x, d);
  Vals ops = x;
  ops[0] = c.move_to(x[0], d[0], 0);
  return at0(c.b.emit(*op.prim, ops, params_with(op, {{"axis", op.param(keys::axis) + 1}})));
}

// take_along_axis: x and the indices both get the batch axis in front (an
// unbatched one broadcast), and the axis moves by one.
RuleResult take_along_axis_rule(Ctx& c, const Op& op, const Vals& x, const std::vector<int>& d) {
  Vals ops{c.move_to(x[0], d[0], 0), c.move_to(x[1], d[1], 0)};
  return at0(c.b.emit(*op.prim, ops, params_with(op, {{"axis", op.param(keys::axis) + 1}})));
}

RuleResult dynamic_update_slice_rule(Ctx& c, const Op& op, const Vals& x, const std::vector<int>& d) {
  if (any_mapped(d, 2, x.size())) return loop_rule(c, op, x, d);
  Vals ops{c.move_to(x[0], d[0], 0), c.move_to(x[1], d[1], 0), zero_index_like(x, 2)};
  ops.insert(ops.end(), x.begin() + 2, x.end());
  return at0(c.b.emit(*op.prim, ops, op.params));
}

RuleResult pad_rule(Ctx& c, const Op& op, const Vals& x, const std::vector<int>& d) {
  if (d[1] != kNotMapped) return loop_rule(c, op, x, d);
  Params p = params_with(op, {{"low", prepend(0, op.param(keys::low))}, {"high", prepend(0, op.param(keys::high))}});
  return at0(c.b.emit(*op.prim, {c.move_to(x[0], d[0], 0), x[1]}, p));
}

RuleResult gather_rule(Ctx& c, const Op& op, const Vals& x, const std::vector<int>& d) {
  if (d[1] != kNotMapped) return loop_rule(c, op, x, d);
  return at0(c.b.emit(*op.prim, {c.move_to(x[0], d[0], 0), x[1]}, params_with(op, {{"axis", op.param(keys::axis) + 1}})));
}

RuleResult concatenate_rule(Ctx& c, const Op& op, const Vals& x, const std::vector<int>& d) {
  return at0(c.b.emit(*op.prim, all_at0(c, x, d), params_with(op, {{"dimension", op.param(keys::dimension) + 1}})));
}

RuleResult sort_rule(Ctx& c, const Op& op, const Vals& x, const std::vector<int>& d) {
  return at0(c.b.emit(*op.prim, all_at0(c, x, d), params_with(op, {{"dimension", op.param(keys::dimension) + 1}})));
}

// ---- State ops: the indexer gains a whole-dimension entry at the Ref's batch
// axis; the selected region then has its batch axis where that entry lands.

struct RefBatch {
  std::vector<Indexer> indexers;
  int region_dim;  // batch axis of the selected region
  Shape region;    // batched region shape
};

RefBatch batch_indexer(Ctx& c, const Op& op, const Vals& x, const std::vector<int>& d) {
  std::vector<int> main = op.main_operands();
  int base = main[0];
  int rd = d[base];
  for (size_t i = 0; i < x.size(); ++i)
    if (d[i] != kNotMapped && std::find(main.begin(), main.end(), static_cast<int>(i)) == main.end())
      throw Error(op.loc, "vmap: " + op.name() + " with a batched dynamic index is not supported (it would need a gather)");
  if (rd == kNotMapped)
    throw Error(op.loc, "vmap: " + op.name() + " writes or reads a batched value through an unbatched Ref " +
                            x[base].type().str() + "; batch the Ref (in_axes) or keep the value unbatched");
  RefBatch out;
  out.indexers = op.indexers;
  Indexer* ix = nullptr;
  for (Indexer& i : out.indexers)
    if (i.base == base) ix = &i;
  Shape ref_shape = x[base].type().shape();
  if (!ix) {
    out.region_dim = rd;
    out.region = ref_shape;
    return out;
  }
  int before = 0;
  for (int k = 0; k < rd && k < static_cast<int>(ix->entries.size()); ++k) before += ix->entries[k].kind != IndexEntry::Point;
  ix->entries.insert(ix->entries.begin() + rd, IndexEntry::full());
  out.region_dim = before;
  out.region = indexed_shape(*ix, ref_shape);
  (void)c;
  return out;
}

// A value written to / compared with the region, batched at the region's
// batch axis (a rank-0 value stays rank 0 when unbatched).
Value fit_region(Ctx& c, const Op& op, int operand, const Vals& x, const std::vector<int>& d, const RefBatch& rb) {
  int orig_rank = op.operands[operand].type().rank();
  if (d[operand] == kNotMapped) return orig_rank == 0 ? x[operand] : c.move_to(x[operand], kNotMapped, rb.region_dim);
  Value v = x[operand];
  if (orig_rank == 0 && rb.region.size() > 1)
    return c.b.emit1("broadcast_in_dim", {v}, {{"shape", rb.region}, {"broadcast_dimensions", Ints{rb.region_dim}}});
  return c.move_to(v, d[operand], rb.region_dim);
}

RuleResult state_rule(Ctx& c, const Op& op, const Vals& x, const std::vector<int>& d) {
  RefBatch rb = batch_indexer(c, op, x, d);
  std::vector<int> main = op.main_operands();
  Vals ops = x;
  for (size_t k = 1; k < main.size(); ++k) ops[main[k]] = fit_region(c, op, main[k], x, d, rb);
  Vals r = c.b.emit(*op.prim, ops, op.params, rb.indexers);
  return {r, std::vector<int>(r.size(), rb.region_dim)};
}

RuleResult unsupported(Ctx&, const Op& op, const Vals&, const std::vector<int>&) {
  throw Error(op.loc, "vmap: " + op.name() + " with batched operands is not supported");
}

}  // namespace

RuleResult loop_rule(Ctx& c, const Op& op, const Vals& x, const std::vector<int>& d) {
  for (const Value& v : x)
    if (v.type().is_ref()) throw Error(op.loc, "vmap: cannot loop over the batch of " + op.name() + ": it has Ref operands");
  BodyPtr body = make_body(op.name() + "_batch_elem", BodyKind::fn);
  Builder bb(*body);
  bb.set_loc(op.loc);
  Vals consts, xs, inner(x.size());
  std::vector<Var*> xs_params;
  for (size_t i = 0; i < x.size(); ++i)
    if (d[i] == kNotMapped && x[i].is_var()) {
      consts.push_back(x[i]);
      inner[i] = bb.param(x[i].type(), x[i].var()->name);
    } else if (d[i] == kNotMapped) {
      inner[i] = x[i];
    }
  for (size_t i = 0; i < x.size(); ++i)
    if (d[i] != kNotMapped) {
      xs.push_back(c.move_to(x[i], d[i], 0));
      inner[i] = bb.param(op.operands[i].type(), x[i].is_var() ? x[i].var()->name : "");
    }
  bb.ret(bb.emit(*op.prim, inner, op.params, op.indexers));
  return at0(ScanView::make(c.b, c.size, consts, {}, xs, body));
}

void add_array_rules(RuleTable<BatchRule>& t) {
  // Elementwise primitives batch pointwise (their params do not depend on the
  // shape); so does multiple_of, a hint on an integer value.
  for (const Primitive* p : registry().of(Family::elementwise)) t.set(p->name, elementwise);
  t.set("multiple_of", elementwise);
  t.set("broadcast_in_dim", leading([](Ctx& c, const Op& op) {
          return params_with(op, {{"shape", prepend(c.size, op.param(keys::shape))},
                           {"broadcast_dimensions", prepend(0, shifted(op.param(keys::broadcast_dimensions)))}});
        }));
  t.set("reshape", leading([](Ctx& c, const Op& op) { return params_with(op, {{"new_sizes", prepend(c.size, op.param(keys::new_sizes))}}); }));
  t.set("transpose", leading([](Ctx&, const Op& op) {
          return params_with(op, {{"permutation", prepend(0, shifted(op.param(keys::permutation)))}});
        }));
  for (const char* n : {"squeeze", "expand_dims", "rev"})
    t.set(n, leading([](Ctx&, const Op& op) { return params_with(op, {{"dimensions", shifted(op.param(keys::dimensions))}}); }));
  t.set("slice", leading([](Ctx& c, const Op& op) {
          Ints strides = op.param(keys::strides);
          if (!strides.empty()) strides = prepend(1, strides);
          return params_with(op, {{"start_indices", prepend(0, op.param(keys::start_indices))},
                           {"limit_indices", prepend(c.size, op.param(keys::limit_indices))},
                           {"strides", strides}});
        }));
  for (const char* n : {"reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or"})
    t.set(n, leading([](Ctx&, const Op& op) { return params_with(op, {{"axes", shifted(op.param(keys::axes))}}); }));
  for (const char* n : {"argmax", "argmin", "cumsum", "split", "repeat"})
    t.set(n, leading([](Ctx&, const Op& op) { return params_with(op, {{"axis", op.param(keys::axis) + 1}}); }));
  t.set("dot_general", dot_rule);
  t.set("concatenate", concatenate_rule);
  t.set("sort", sort_rule);
  t.set("dynamic_slice", dynamic_slice_rule);
  t.set("roll", roll_rule);
  t.set("take_along_axis", take_along_axis_rule);
  // The batch axis in front; the width ratio's dim stays last.
  t.set("bitcast_convert_type", leading([](Ctx&, const Op& op) { return op.params; }));
  t.set("dynamic_update_slice", dynamic_update_slice_rule);
  t.set("pad", pad_rule);
  t.set("gather", gather_rule);
  // Every state op reads or writes the indexed region of its Ref, and its
  // other main operands fill that region: one batching rule for the family.
  for (const Primitive* p : registry().of(Family::state)) t.set(p->name, state_rule);
  // Every element of a batched predicate must hold: check their conjunction.
  t.set("debug_check", [](Ctx& c, const Op& op, const Vals& x, const std::vector<int>& d) -> RuleResult {
    Value all = c.b.emit1("reduce_and", {c.move_to(x[0], d[0], 0)}, {{"axes", Ints{0}}});
    c.b.emit(*op.prim, {all}, op.params);
    return {};
  });
  for (const char* n : {"prng_seed", "debug_print", "delay", "dma_start", "dma_wait", "semaphore_signal", "semaphore_wait",
                        "semaphore_read"})
    t.set(n, unsupported);
}

}  // namespace tessera::vmap
