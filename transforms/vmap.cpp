// The vmap pass: `main(x: T...)` becomes `main(x: T with a batch axis at
// in_axes[i]...)`, every output batched at axis 0.
//
// The body transformer is the shared walk of transforms/body_rewrite.h with a
// batch dimension per variable: an op none of whose operands is batched is
// copied unchanged without consulting its rule, so unbatched index arithmetic
// costs a copy.
#include "transforms/vmap.h"

#include "transforms/body_rewrite.h"

namespace tessera::vmap {

Value Ctx::move_to(Value v, int dim, int to) {
  if (dim == kNotMapped) return ad::broadcast_new_axis(b, v, size, to);
  if (v.type().is_ref()) {
    if (dim == to) return v;
    throw Error(b.loc(), "vmap: cannot move the batch axis of a Ref (" + v.type().str() + ") from " +
                             std::to_string(dim) + " to " + std::to_string(to));
  }
  return ad::moveaxis(b, v, dim, to);
}

Type batched_type(const Type& t, int dim, int64_t size) {
  if (dim == kNotMapped) return t;
  Shape s = ad::insert_at(t.shape(), dim, size);
  return t.is_ref() ? Type::ref(t.dtype(), s, t.mem_space()) : Type::array(t.dtype(), s);
}

RuleTable<BatchRule>& rules() {
  static RuleTable<BatchRule> table = [] {
    RuleTable<BatchRule> t("vmap");
    add_array_rules(t);
    add_control_rules(t);
    add_pallas_call_rule(t);
    for (const char* n : {"iota", "program_id", "num_programs", "axis_index", "axis_size", "device_id",
                          "get_barrier_semaphore", "prng_random_bits"})
      t.no_rule_needed(n, "it takes no operands, so none is batched: vmap copies it as it is");
    return t;
  }();
  return table;
}
const RuleTableRegistration kRegistered("vmap", rules);

namespace {

// vmap's side of the body walk (transforms/body_rewrite.h): a batch dimension
// per variable, kNotMapped for one that is the same for every batch element.
struct VmapWalk {
  using Info = int;
  static constexpr const char* pass = "vmap";
  static constexpr size_t ops_per_op = 2;
  static bool present(int dim) { return dim != kNotMapped; }
  static int absent() { return kNotMapped; }
  static const std::vector<Value>& values(const RuleResult& r) { return r.values; }
  static const std::vector<int>& infos(const RuleResult& r) { return r.dims; }

  Ctx& ctx;
  const RuleTable<BatchRule>& table = rules();

  RuleResult rule(const Op& op, const std::vector<Value>& x, const std::vector<int>& dims) {
    return table.at(*op.prim, op.loc)(ctx, op, x, dims);
  }
  int adopt(const Var*, int dim) { return dim; }
};

}  // namespace

RuleResult inline_vmap(Ctx& ctx, const Body& src, const std::vector<Value>& params, const std::vector<int>& dims) {
  VmapWalk walk{ctx};
  Rewritten<int> r = rewrite_body(walk, ctx.b, src, params, dims);
  return {std::move(r.values), std::move(r.infos)};
}

BodyPtr vmap_body(Ctx& ctx, const Body& src, const std::string& name, BodyKind kind, const std::vector<int>& in_dims,
                  const std::vector<int>& out_dims) {
  BodyPtr nb = make_body(name, kind);
  nb->set_loc(src.loc());
  Builder b(*nb);
  b.set_loc(src.loc());
  std::vector<Value> ps;
  for (size_t i = 0; i < src.params().size(); ++i) {
    const Var* p = src.params()[i];
    ps.push_back(b.param(batched_type(p->type, in_dims[i], ctx.size), p->name));
  }
  Ctx inner{b, ctx.syms, ctx.size};
  RuleResult r = inline_vmap(inner, src, ps, in_dims);
  std::vector<Value> outs;
  for (size_t i = 0; i < r.values.size(); ++i) {
    if (out_dims[i] == kNotMapped) {
      if (r.dims[i] != kNotMapped)
        throw Error(src.loc(), "vmap: output " + std::to_string(i) + " of @" + src.name() + " depends on the batch");
      outs.push_back(r.values[i]);
    } else {
      outs.push_back(inner.move_to(r.values[i], r.dims[i], out_dims[i]));
    }
  }
  b.ret(std::move(outs));
  return nb;
}

}  // namespace tessera::vmap

namespace tessera {

Module vmap_pass(const Module& m, const PassOptions& o) {
  BodyPtr main = entry_function(m, o, "vmap");
  int64_t size = o.get_int("axis_size", -1);
  if (size < 1) throw Error(main->loc(), "vmap needs axis_size=N with N >= 1");
  size_t n = main->params().size();
  std::vector<int64_t> axes = ad::parse_axes_option(o.get("in_axes"), "in_axes");
  if (axes.empty()) axes.assign(n, 0);
  if (axes.size() != n)
    throw Error(main->loc(), "vmap: in_axes has " + std::to_string(axes.size()) + " entries but @" + main->name() + " has " +
                                 std::to_string(n) + " inputs");
  std::vector<int> in_dims;
  for (size_t i = 0; i < n; ++i) {
    const Var* p = main->params()[i];
    if (axes[i] > p->type.rank())
      throw Error(main->loc(), "vmap: in_axes entry " + std::to_string(axes[i]) + " is out of range for input %" + p->name +
                                   ": " + p->type.str());
    in_dims.push_back(static_cast<int>(axes[i]));
  }
  ad::SymbolSink syms(m);
  BodyPtr scratch = make_body("scratch", BodyKind::func);
  Builder b(*scratch);
  vmap::Ctx ctx{b, syms, size};
  std::vector<int> out_dims(main->outputs().size(), 0);
  BodyPtr nm = vmap::vmap_body(ctx, *main, main->name(), main->kind(), in_dims, out_dims);
  return syms.assemble(nm, main->name());
}

}  // namespace tessera
