#include "analysis/prove/call_context.h"

#include <algorithm>

namespace tessera::prove {

std::string tuple_str(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + ")";
}

namespace {

const Assumption* find_assumption(const Options& opts, const std::vector<std::string>& names) {
  for (const Assumption& a : opts.assumptions)
    if (std::find(names.begin(), names.end(), a.name) != names.end()) return &a;
  return nullptr;
}

void add_name(std::vector<std::string>& names, const std::string& n) {
  if (!n.empty() && std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
}

}  // namespace

int dynamic_grid_operand(const GridMapping& g, int axis) {
  if (g.grid.at(axis) >= 0) return -1;
  int k = 0;
  for (int a = 0; a < axis; ++a) k += g.grid[a] < 0;
  return k;
}

int64_t known_grid_size(const Op& call, const GridMapping& g, int axis) {
  if (g.grid.at(axis) >= 0) return g.grid[axis];
  const Value& v = call.operands.at(dynamic_grid_operand(g, axis));
  return v.is_literal() && is_int(v.literal().dtype) ? v.literal().i : -1;
}

CallContext::CallContext(const Op& call, std::string call_name, const Options& options,
                         const AxisSizes& axis_sizes, const PerDevice& per_device)
    : op(call), g(call.name() == "pallas_call" ? grid_mapping(call) : GridMapping{}), name(std::move(call_name)),
      opts(options), scope(ctx), solver(ctx, options.timeout_ms, options.rlimit, options.smt2_dir, name) {
  for (const auto& [axis, size] : axis_sizes) {
    scope.axis_sizes[axis] = size;
    scope.process_axes.push_back(axis);
  }
  if (call.name() == "core_map") {
    // A core_map body runs once per core of its mesh; axis_index names the core.
    const auto& axes = call.param(keys::mesh_axes);
    const auto& shape = call.param(keys::mesh_shape);
    for (size_t k = 0; k < axes.size() && k < shape.size(); ++k) {
      scope.axis_sizes[axes[k]] = shape[k];
      scope.process_axes.push_back(axes[k]);
    }
    kernel = call.param(keys::body).get();
    return;
  }
  kernel = g.kernel.get();
  // Grid sizes: constants (a literal operand too), or bounded symbols for dynamic sizes.
  for (int a = 0; a < g.grid_rank(); ++a) {
    int64_t n = known_grid_size(op, g, a);
    if (n >= 0) {
      scope.grid_size.push_back(ctx.int_val(n));
      scope.grid_size_iv.push_back(Interval::of(n));
      continue;
    }
    std::vector<std::string> names;
    const Value& v = op.operands.at(dynamic_grid_operand(g, a));
    if (v.is_var()) add_name(names, v.var()->name);
    if (a < static_cast<int>(g.grid_names.size())) add_name(names, g.grid_names[a]);
    add_name(names, "grid[" + std::to_string(a) + "]");
    // A size of 0 runs no step (and writes no output block).
    int64_t lo = 0, hi = (int64_t{1} << 31) - 1;
    if (const Assumption* as = find_assumption(opts, names)) lo = std::max<int64_t>(0, as->lo), hi = as->hi - 1;
    const std::optional<DeviceTable>* known =
        static_cast<size_t>(a) < per_device.grid_size_values.size() && per_device.grid_size_values[a] ? &per_device.grid_size_values[a]
                                                                                                      : nullptr;
    if (known) {  // each device's size, as the program computes it
      lo = hi = (*known)->begin()->second.at(0);
      for (const auto& [dev, size] : **known) lo = std::min(lo, size.at(0)), hi = std::max(hi, size.at(0));
      lo = std::max<int64_t>(lo, 0);
    }
    if (known && lo == hi) {
      scope.grid_size.push_back(ctx.int_val(lo));
      scope.grid_size_iv.push_back(Interval::of(lo));
      continue;
    }
    z3::expr s = ctx.int_const(("grid_size_" + std::to_string(a)).c_str());
    if (static_cast<size_t>(a) < per_device.grid_size.size() && !per_device.grid_size[a].empty())
      scope.grid_size_per_device.emplace(a, per_device.grid_size[a]);
    scope.grid_size.push_back(s);
    scope.grid_size_iv.push_back(Interval::range(lo, hi));
    base_facts.push_back(s >= ctx.int_val(lo) && s <= ctx.int_val(hi));
    // The device the claims reason about (its axis_index symbols) runs its own size.
    if (known)
      for (const auto& [dev, size] : **known) base_facts.push_back(z3::implies(on_device(dev), s == ctx.int_val(std::max<int64_t>(0, size.at(0)))));
  }
  // program_id / num_programs in the kernel skip vmapped grid dims, as the interpreter's kernel frame does.
  scope.kernel_axis = g.kernel_axes();
  // Scalar prefetch: uninterpreted functions with a declared or dtype range.
  for (int j = 0; j < g.num_scalar_prefetch(); ++j) {
    Prefetch p(ctx);
    const Value& v = op.operands.at(g.scalar_prefetch_operand(j));
    if (v.is_var()) add_name(p.aliases, v.var()->name);
    if (g.kernel && j < static_cast<int>(g.kernel->params().size())) add_name(p.aliases, g.kernel->params()[j]->name);
    for (int m = 0; m < g.num_inputs() + g.num_outputs(); ++m) {
      const BodyPtr& map = g.spec(m).index_map;
      size_t k = static_cast<size_t>(g.grid_rank() + j);
      if (map && k < map->params().size()) add_name(p.aliases, map->params()[k]->name);
    }
    p.name = p.aliases.empty() ? "scalar_prefetch[" + std::to_string(j) + "]" : p.aliases[0];
    add_name(p.aliases, "scalar_prefetch[" + std::to_string(j) + "]");
    p.shape = v.type().shape();
    p.dtype = v.type().dtype();
    if (const Assumption* as = find_assumption(opts, p.aliases)) {
      p.declared = true;
      p.lo = as->lo;
      p.hi = as->hi;
    }
    // Each device reads its own values of a per-device operand: the function
    // takes the device's index on those axes first.
    if (static_cast<size_t>(j) < per_device.prefetch.size()) p.per_device = per_device.prefetch[j];
    z3::sort_vector dom(ctx);
    for (size_t d = 0; d < p.per_device.size() + p.shape.size(); ++d) dom.push_back(ctx.int_sort());
    p.fn = ctx.function(("prefetch_" + std::to_string(j)).c_str(), dom, ctx.int_sort());
    if (static_cast<size_t>(j) < per_device.prefetch_values.size() && per_device.prefetch_values[j])
      p.computed = pin_prefetch(p, *per_device.prefetch_values[j], axis_sizes);
    scope.prefetch.push_back(std::move(p));
  }
}

z3::expr CallContext::on_device(const std::vector<int64_t>& coords) {
  z3::expr all = ctx.bool_val(true);
  for (size_t k = 0; k < coords.size() && k < scope.process_axes.size(); ++k) {
    const std::string& axis = scope.process_axes[k];
    auto sym = scope.axis_symbol.find(axis);
    if (sym == scope.axis_symbol.end()) {
      sym = scope.axis_symbol.emplace(axis, scope.fresh_int("axis_index_" + axis)).first;
      base_facts.push_back(sym->second >= 0 && sym->second < ctx.int_val(scope.axis_sizes.at(axis)));
    }
    all = all && sym->second == ctx.int_val(coords[k]);
  }
  return all;
}

bool CallContext::pin_prefetch(const Prefetch& p, const DeviceTable& values, const AxisSizes& axis_sizes) {
  constexpr size_t kMaxFacts = 4096;
  std::vector<size_t> axis_at;  // position of each per-device axis in a device's coordinates
  for (const std::string& axis : p.per_device) {
    size_t k = 0;
    while (k < axis_sizes.size() && axis_sizes[k].first != axis) ++k;
    if (k == axis_sizes.size()) return false;
    axis_at.push_back(k);
  }
  int64_t n = 1;
  for (int64_t d : p.shape) n *= d;
  // (per-device coordinates, flat element) -> value; devices that share
  // coordinates on p's axes must agree, or the facts would contradict.
  std::map<std::pair<std::vector<int64_t>, int64_t>, int64_t> pinned;
  for (const auto& [dev, elems] : values) {
    if (static_cast<int64_t>(elems.size()) != n) return false;
    std::vector<int64_t> at;
    for (size_t k : axis_at) at.push_back(dev.at(k));
    for (int64_t e = 0; e < n; ++e) {
      auto [it, fresh] = pinned.emplace(std::make_pair(at, e), elems[static_cast<size_t>(e)]);
      if (!fresh && it->second != elems[static_cast<size_t>(e)]) return false;
    }
    if (pinned.size() > kMaxFacts) return false;
  }
  for (const auto& [key, v] : pinned) {
    z3::expr_vector args(ctx);
    for (int64_t c : key.first) args.push_back(ctx.int_val(c));
    std::vector<int64_t> idx(p.shape.size());  // row-major unravel of the flat element
    for (int64_t e = key.second, d = static_cast<int64_t>(p.shape.size()) - 1; d >= 0; --d) {
      idx[static_cast<size_t>(d)] = e % p.shape[static_cast<size_t>(d)];
      e /= p.shape[static_cast<size_t>(d)];
    }
    for (int64_t i : idx) args.push_back(ctx.int_val(i));
    base_facts.push_back(p.fn(args) == ctx.int_val(v));
  }
  return true;
}

void CallContext::add_facts(const IntEncoder& enc, std::vector<z3::expr>& out, bool assume_guards) {
  for (const z3::expr& f : enc.facts) out.push_back(f);
  if (assume_guards)
    for (const Guard& gd : enc.guards)
      if (gd.needed && !gd.settled) out.push_back(z3::implies(gd.path, gd.ok));
}

std::vector<Sym> CallContext::make_point(const std::string& tag, std::vector<z3::expr>& facts) {
  std::vector<Sym> pt;
  for (int a = 0; a < g.grid_rank(); ++a) {
    z3::expr v = ctx.int_const((tag + "_" + std::to_string(a)).c_str());
    facts.push_back(v >= 0 && v < scope.grid_size[a]);
    pt.push_back(Sym{v, Interval{0, scope.grid_size_iv[a].hi - 1}, {}, {}});
  }
  return pt;
}

MapAt CallContext::encode_map(int m, const std::vector<Sym>& point) {
  MapAt r;
  r.point = point;
  r.enc = std::make_unique<IntEncoder>(scope, ctx.bool_val(true));
  r.enc->set_grid_point(point);
  const BlockSpec& spec = g.spec(m);
  int arity = index_map_arity(g.dims(m));
  if (!spec.index_map) {
    for (int k = 0; k < arity; ++k) r.outputs.push_back(Sym{ctx.int_val(0), Interval::of(0), {}, {}});
    return r;
  }
  const Body& map = *spec.index_map;
  const auto& params = map.params();
  for (size_t k = 0; k < params.size(); ++k) {
    if (static_cast<int>(k) < g.grid_rank()) r.enc->bind(params[k], point[k]);
    else r.enc->bind_prefetch(params[k], static_cast<int>(k) - g.grid_rank());
  }
  for (const Op& o : map.ops()) r.enc->encode(o);
  for (const Value& v : map.outputs()) r.outputs.push_back(r.enc->value(v));
  // Block indices are indices: the exactness guards they rely on are obligations.
  for (const Sym& s : r.outputs) r.enc->need(s.deps);
  if (static_cast<int>(r.outputs.size()) != arity)
    throw Error(map.loc(), "index map @" + map.name() + " returns " + std::to_string(r.outputs.size()) + " values but " +
                               g.describe(m) + " needs " + std::to_string(arity));
  for (Sym& s : r.outputs)
    if (s.is_bool()) s.e = z3::ite(s.e, ctx.int_val(1), ctx.int_val(0));
  return r;
}

int64_t CallContext::eval(const z3::model& model, const z3::expr& e) const {
  z3::expr v = model.eval(e, true);
  if (v.is_bool()) return v.is_true() ? 1 : 0;
  int64_t out = 0;
  if (v.is_numeral_i64(out)) return out;
  return 0;
}

bool CallContext::sweep(const std::vector<z3::expr>& facts, const std::vector<z3::expr>& bad, const char* tag,
                        Obligation& ob, std::string& unknown_reason,
                        const std::function<bool(size_t, const z3::model&)>& violated) {
  std::vector<char> done(bad.size(), 0);
  while (true) {
    z3::expr any = ctx.bool_val(false);
    int open = 0;
    for (size_t i = 0; i < bad.size(); ++i)
      if (!done[i]) any = any || bad[i], ++open;
    if (open == 0) return false;
    std::vector<z3::expr> q = facts;
    q.push_back(any);
    QueryResult r = solver.check(q, tag);
    ob.queries++;
    if (r.result == z3::unsat) return false;
    if (r.result == z3::unknown) {
      unknown_reason = "(" + r.reason + ")";
      return false;
    }
    const z3::model& mo = *r.model;
    bool progress = false;
    for (size_t i = 0; i < bad.size(); ++i) {
      if (done[i] || !eval(mo, bad[i])) continue;
      progress = true;
      done[i] = 1;
      if (violated(i, mo)) return true;
    }
    if (!progress) {
      unknown_reason = "internal: the counterexample violates no open check";
      return false;
    }
  }
}

std::vector<int64_t> CallContext::eval(const z3::model& model, const std::vector<Sym>& syms) const {
  std::vector<int64_t> out;
  for (const Sym& s : syms) out.push_back(eval(model, s.e));
  return out;
}

}  // namespace tessera::prove
