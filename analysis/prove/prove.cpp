// The driver: finds every pallas_call and runs its obligations.
#include <algorithm>
#include <map>
#include <set>

#include "analysis/prove/call_context.h"
#include "analysis/prove/device_values.h"
#include "analysis/prove/device_variance.h"

namespace tessera::prove {

namespace {

// Pairwise and carried-state queries assume what the bounds obligations
// prove of the index computations they reason about: they are well defined
// (no overflow, no division by zero), so the integer model is the program's
// arithmetic. Where that premise is not proved, neither is the claim: it
// becomes unknown, naming the premise, so that `proved` always means proved.
// (An out-of-bounds block voids no pairwise claim: its index is still exact.)
void condition_on_premises(std::vector<Obligation>& obs, const CallContext& c) {
  auto premise_fails = [&](const std::string& subject) -> const Obligation* {
    for (const Obligation& o : obs) {
      if (o.subject != subject || o.kind != "bounds" || o.verdict == Verdict::proved) continue;
      if (subject == "kernel") return &o;  // kernel bounds: its guards and its accesses, one claim
      for (int m = 0; m < static_cast<int>(c.map_well_defined.size()); ++m)
        if (c.subject(m) == subject && !c.map_well_defined[m]) return &o;
    }
    return nullptr;
  };
  for (Obligation& ob : obs) {
    if (ob.verdict != Verdict::proved) continue;
    std::vector<std::string> premises;
    if (ob.kind == "semaphore balance" || ob.kind == "DMA races" || ob.kind == "core races") {
      // Only the guards of kernel bounds: an access it cannot decide (the rows of a gather) voids nothing here.
      if (!c.kernel_guards_proved) premises.push_back("kernel");
    } else if (ob.kind == "output coverage") {
      premises.push_back("kernel");
      premises.push_back(ob.subject);
    } else if (ob.kind == "carried state") {
      premises.push_back("kernel");
      for (int i = 0; i < c.g.num_inputs(); ++i) premises.push_back(c.subject(i));
    } else if (ob.kind == "non-revisiting" || ob.kind == "parallel safety") {
      premises.push_back(ob.subject);
      for (const auto& [i, o] : c.g.aliases)
        if (ob.subject == c.subject(static_cast<int>(i))) premises.push_back(c.subject(c.g.num_inputs() + static_cast<int>(o)));
    }
    for (const std::string& subject : premises) {
      const Obligation* p = premise_fails(subject);
      if (!p) continue;
      ob.verdict = Verdict::unknown;
      ob.detail = "holds only if the index computations of " + subject + " are well defined, which " + subject +
                  " bounds does not prove (" + std::string(verdict_name(p->verdict)) + ": " + p->detail + ")";
      break;
    }
  }
}

// An unwritten element shows in the output only if no other parallel
// position copies the same block out later: a FAILED output coverage needs
// the output's parallel safety.
void reproducible_coverage(std::vector<Obligation>& obs) {
  for (Obligation& ob : obs) {
    if (ob.kind != "output coverage" || ob.verdict != Verdict::failed) continue;
    for (const Obligation& p : obs)
      if (p.subject == ob.subject && p.kind == "parallel safety" && p.verdict != Verdict::proved) {
        ob.verdict = Verdict::unknown;
        ob.detail = "another parallel position may copy the same block out later, so whether the output shows it depends on " +
                    ob.subject + " parallel safety, which is not proved: " + ob.detail;
        break;
      }
  }
}

}  // namespace

std::vector<Obligation> prove_call(const Op& op, const std::string& name, const Options& opts,
                                   const AxisSizes& axis_sizes, const PerDevice& per_device) {
  CallContext c(op, name, opts, axis_sizes, per_device);
  std::vector<Obligation> out;
  if (op.name() == "core_map") {
    out.push_back(prove_kernel_bounds(c));
    out.push_back(prove_semaphore_balance(c));
    out.push_back(prove_dma_races(c));
    out.push_back(prove_core_map_races(c));
    condition_on_premises(out, c);
    for (Obligation& o : out) o.op = &op;
    return out;
  }
  int nin = c.g.num_inputs();
  for (int m = 0; m < nin + c.g.num_outputs(); ++m) out.push_back(prove_bounds(c, m));
  for (int o = 0; o < c.g.num_outputs(); ++o) {
    // Outputs left in `any` / HBM memory are written by the kernel's DMAs, not
    // block by block: the interpreter exempts them, and so does the prover.
    MemSpace mem = c.g.out_specs[o].mem;
    if (mem == MemSpace::any || mem == MemSpace::hbm) continue;
    bool aliased = false;
    for (const auto& [i, oo] : c.g.aliases) aliased |= oo == o;
    if (!aliased) out.push_back(prove_non_revisiting(c, o));
    out.push_back(prove_parallel_safety(c, o));
  }
  // An aliased input's blocks are read from the buffer the output writes.
  for (const auto& [i, o] : c.g.aliases) {
    auto hbm = [](MemSpace m) { return m == MemSpace::any || m == MemSpace::hbm; };
    bool blocks = !hbm(c.g.in_specs.at(i).mem) && !hbm(c.g.out_specs.at(o).mem);
    if (blocks) out.push_back(prove_alias_parallel_safety(c, static_cast<int>(i), static_cast<int>(o)));
  }
  out.push_back(prove_kernel_bounds(c));
  out.push_back(prove_carried_state(c));
  out.push_back(prove_semaphore_balance(c));
  out.push_back(prove_dma_races(c));
  // Output coverage is listed after each output's parallel safety but asked
  // last, so that its queries leave the solver state the other claims'
  // counterexamples come from as it was.
  for (int o = c.g.num_outputs(); o-- > 0;) {
    MemSpace mem = c.g.out_specs[o].mem;
    if (mem == MemSpace::any || mem == MemSpace::hbm) continue;
    auto after = std::find_if(out.begin(), out.end(),
                              [&](const Obligation& ob) { return ob.subject == c.subject(nin + o) && ob.kind == "parallel safety"; });
    out.insert(after == out.end() ? out.end() : after + 1, prove_output_coverage(c, o));
  }
  condition_on_premises(out, c);
  reproducible_coverage(out);
  for (Obligation& o : out) o.op = &op;
  return out;
}

namespace {

// Finds pallas_calls and core_maps, remembering the device axes of the pmaps
// (and mesh axes of the core_maps) around each.
struct Finder {
  struct Call {
    const Op* op;
    AxisSizes axes;
    PerDevice per_device;
  };
  std::vector<Call> calls;
  std::set<const Body*> seen;
  AxisSizes axes;  // outermost first
  DeviceVariance variance;
  DeviceValues values;
  std::vector<std::string> axis_names() const {
    std::vector<std::string> names;
    for (const auto& [a, n] : axes) names.push_back(a);
    return names;
  }
  // Which axes a pallas_call's scalar prefetch and dynamic grid sizes vary along.
  PerDevice per_device(const Op& call) const {
    PerDevice pd;
    if (axes.empty()) return pd;
    GridMapping g = grid_mapping(call);
    auto along = [&](int operand) {
      DeviceVariance::Axes a = variance.of(call.operands.at(operand), axis_names());
      return std::vector<std::string>(a.begin(), a.end());
    };
    for (int j = 0; j < g.num_scalar_prefetch(); ++j) {
      pd.prefetch.push_back(along(g.scalar_prefetch_operand(j)));
      pd.prefetch_values.push_back(values.of(call.operands.at(g.scalar_prefetch_operand(j)), axes));
    }
    for (int a = 0; a < g.grid_rank(); ++a) {
      int operand = dynamic_grid_operand(g, a);
      pd.grid_size.push_back(operand < 0 ? std::vector<std::string>{} : along(operand));
      pd.grid_size_values.push_back(operand < 0 ? std::nullopt : values.of(call.operands.at(operand), axes));
    }
    return pd;
  }
  void walk(const Body& b) {
    if (!seen.insert(&b).second) return;
    for (const Op& op : b.ops()) {
      if (op.name() == "pallas_call") calls.push_back({&op, axes, per_device(op)});
      if (op.name() == "core_map") calls.push_back({&op, axes, {}});
      variance.visit(op, axis_names());
      values.visit(op, axes);
      if (op.name() == "pallas_call") continue;
      auto saved = axes;
      std::vector<std::string> outside = axis_names();
      if (op.name() == "pmap") axes.emplace_back(op.param(keys::axis_name), op.param(keys::axis_size));
      if (op.name() == "core_map") {
        const auto& names = op.param(keys::mesh_axes);
        const auto& shape = op.param(keys::mesh_shape);
        for (size_t k = 0; k < names.size() && k < shape.size(); ++k) axes.emplace_back(names[k], shape[k]);
      }
      for (const BodyPtr& nb : op.nested_bodies()) {
        variance.enter(op, *nb, outside);
        walk(*nb);
      }
      axes = saved;
    }
  }
};

}  // namespace

std::string call_name(const Op& op) {
  GridMapping g = grid_mapping(op);
  std::string name = g.name.empty() ? "pallas_call" : g.name;
  if (op.param(keys::name).empty() && name.size() > 7 && name.ends_with("_kernel")) name.resize(name.size() - 7);
  return name;
}

std::vector<Obligation> prove_module(const Module& m, const Options& opts) {
  Finder f;
  if (!opts.func.empty()) {
    f.walk(*m.entry(opts.func));
  } else {
    for (const BodyPtr& b : m.symbols())
      if (b->kind() == BodyKind::func) f.walk(*b);
  }
  // Name each call after its `name` param or kernel; number repeats.
  std::map<std::string, int> uses;
  std::vector<Obligation> out;
  std::set<std::string> names;
  for (const auto& [op, axes, per_device] : f.calls) {
    GridMapping g = op->name() == "pallas_call" ? grid_mapping(*op) : GridMapping{};
    std::string name = op->name() == "core_map" ? "core_map" : call_name(*op);
    int k = ++uses[name];
    if (k > 1) name += "#" + std::to_string(k);
    std::vector<Obligation> obs = prove_call(*op, name, opts, axes, per_device);
    out.insert(out.end(), obs.begin(), obs.end());
    // Remember which names assumptions could refer to.
    for (int a = 0; a < g.grid_rank(); ++a) {
      names.insert("grid[" + std::to_string(a) + "]");
      if (a < static_cast<int>(g.grid_names.size())) names.insert(g.grid_names[a]);
      int size_operand = dynamic_grid_operand(g, a);
      if (size_operand >= 0 && op->operands.at(size_operand).is_var()) names.insert(op->operands.at(size_operand).var()->name);
    }
    for (int j = 0; j < g.num_scalar_prefetch(); ++j) {
      names.insert("scalar_prefetch[" + std::to_string(j) + "]");
      const Value& v = op->operands.at(g.scalar_prefetch_operand(j));
      if (v.is_var()) names.insert(v.var()->name);
      if (g.kernel && j < static_cast<int>(g.kernel->params().size())) names.insert(g.kernel->params()[j]->name);
      for (int mm = 0; mm < g.num_inputs() + g.num_outputs(); ++mm)
        if (const BodyPtr& map = g.spec(mm).index_map; map && g.grid_rank() + j < static_cast<int>(map->params().size()))
          names.insert(map->params()[g.grid_rank() + j]->name);
    }
  }
  for (const Assumption& a : opts.assumptions)
    if (!names.count(a.name))
      throw Error("assumption on '" + a.name + "': no scalar prefetch operand or dynamic grid size has that name");
  return out;
}

}  // namespace tessera::prove
