// jvp of pallas_call (jax/_src/pallas/pallas_call.py, `_pallas_call_jvp_rule`,
// extended).
//
// The tangent of a pallas_call is another pallas_call over the same grid that
// runs the jvp of the kernel: every differentiated input and every
// floating-point output gets a second block mapping identical to its primal's
// (same block shape, same index map), so tangent blocks move in lockstep with
// primal blocks. Kernel parameters are laid out
//   (scalar prefetch, inputs, tangent inputs, outputs, tangent outputs,
//    scratch, tangent scratch)
// and call operands (dynamic grid sizes, scalar prefetch, inputs, tangent
// inputs); results are (outputs, tangent outputs); the cost estimate doubles.
//
// Beyond JAX's rule: scalar prefetch and dynamic grid sizes are integers and get
// no tangents (the index maps are unchanged); an aliased input/output pair
// gets an aliased tangent pair (the input's tangent materialised, since the
// output starts from it); an input the kernel writes in place gets a
// materialised tangent; floating-point scratch and DMA semaphores get tangent
// scratch.
#include "ir/grid_mapping.h"
#include "transforms/jvp.h"

namespace tessera::jvp {
namespace {

using Vals = std::vector<Value>;
using Tans = std::vector<Tangent>;

RuleResult pallas_call_rule(Ctx& c, const Op& op, const Vals& x, const Tans& dx) {
  GridMapping g = grid_mapping(op);
  int ni = g.num_inputs(), no = g.num_outputs(), nsp = g.num_scalar_prefetch(), ns = static_cast<int>(g.scratch_types.size());
  Effects fx = compute_effects(*g.kernel);

  // Which inputs / outputs / scratch get tangents.
  std::vector<bool> ih(ni), oh(no), sh(ns);
  for (int i = 0; i < ni; ++i) {
    int p = g.input_param(i);
    bool written = p < static_cast<int>(fx.on_param.size()) && (fx.writes(p) || fx.accums(p));
    bool aliased = false;
    for (const auto& [in, out] : g.aliases) aliased |= in == i;
    ih[i] = differentiable(g.in_types[i]) && (dx[g.input_operand(i)].has_value() || written || aliased);
    if (ih[i] && !dx[g.input_operand(i)] && x[g.input_operand(i)].type().is_ref())
      throw Error(op.loc, "jvp: pallas_call writes its Ref operand " + g.describe(i) +
                              " in place, but that Ref has no tangent Ref");
  }
  for (int o = 0; o < no; ++o) oh[o] = differentiable(g.out_types[o]);
  for (int s = 0; s < ns; ++s) sh[s] = has_tangent_scratch(g.scratch_types[s]);

  // Kernel: differentiate with the pallas_call layout.
  std::vector<Slot> layout;
  for (int j = 0; j < nsp; ++j) layout.push_back({j, false});
  for (int i = 0; i < ni; ++i) layout.push_back({g.input_param(i), false});
  for (int i = 0; i < ni; ++i)
    if (ih[i]) layout.push_back({g.input_param(i), true});
  for (int o = 0; o < no; ++o) layout.push_back({g.output_param(o), false});
  for (int o = 0; o < no; ++o)
    if (oh[o]) layout.push_back({g.output_param(o), true});
  for (int s = 0; s < ns; ++s) layout.push_back({g.scratch_param(s), false});
  for (int s = 0; s < ns; ++s)
    if (sh[s]) layout.push_back({g.scratch_param(s), true});
  BodyPtr kernel = jvp_body_layout(c, *g.kernel, c.syms.fresh(g.kernel->name() + "_jvp"), BodyKind::kernel, layout, {});
  c.syms.add(kernel);

  // Block mappings doubled in `_pallas_call_jvp_rule`'s order; aliases paired.
  std::vector<BlockSpec> in_specs = g.in_specs, out_specs = g.out_specs;
  std::vector<Type> out_shapes = g.out_types, scratch = g.scratch_types;
  std::vector<int> tangent_input_pos(ni, -1), tangent_output_pos(no, -1);
  for (int i = 0; i < ni; ++i)
    if (ih[i]) tangent_input_pos[i] = static_cast<int>(in_specs.size()), in_specs.push_back(g.in_specs[i]);
  for (int o = 0; o < no; ++o)
    if (oh[o]) {
      tangent_output_pos[o] = static_cast<int>(out_specs.size());
      out_specs.push_back(g.out_specs[o]);
      out_shapes.push_back(g.out_types[o]);
    }
  for (int s = 0; s < ns; ++s)
    if (sh[s]) scratch.push_back(g.scratch_types[s]);
  IntPairs aliases = g.aliases;
  for (const auto& [in, out] : g.aliases)
    if (ih[in] && oh[out]) aliases.push_back({tangent_input_pos[in], tangent_output_pos[out]});

  std::vector<int64_t> cost = op.param(keys::cost_estimate);
  for (int64_t& v : cost) v *= 2;

  Params p = params_with(op, {{"kernel", kernel},
                              {"in_specs", in_specs},
                              {"out_specs", out_specs},
                              {"out_shapes", out_shapes},
                              {"scratch", scratch},
                              {"input_output_aliases", g.alias_param(aliases)},
                              {"cost_estimate", cost}});

  Vals ops = x;
  for (int i = 0; i < ni; ++i)
    if (ih[i]) {
      int k = g.input_operand(i);
      ops.push_back(c.instantiate(dx[k], x[k].type()));
    }
  Vals res = c.b.emit(*op.prim, ops, p);
  RuleResult r;
  for (int o = 0; o < no; ++o) {
    r.primals.push_back(res[o]);
    r.tangents.push_back(oh[o] ? Tangent(res[tangent_output_pos[o]]) : std::nullopt);
  }
  return r;
}

}  // namespace

void add_pallas_call_rule(RuleTable<JvpRule>& t) { t.set("pallas_call", pallas_call_rule); }

}  // namespace tessera::jvp
