#include "analysis/prove/kernel_walker.h"

#include <algorithm>

namespace tessera::prove {

namespace {

bool int_scalar(const Type& t) { return !t.is_ref() && t.is_scalar() && (is_int(t.dtype()) || is_bool(t.dtype())); }

}  // namespace

std::vector<AccessRange> access_ranges(z3::context& ctx, const Access& a, const Shape& shape) {
  std::vector<AccessRange> out;
  for (size_t d = 0; d < shape.size(); ++d) {
    const IndexEntry e = d < a.ix.entries.size() ? a.ix.entries[d] : IndexEntry::full();
    if (e.kind == IndexEntry::Full) {
      out.push_back({ctx.int_val(0), ctx.int_val(shape[d] - 1), true});
      continue;
    }
    // The rows of a gather / scatter are data: a read may touch any row, a
    // write covers none for sure.
    if (e.kind == IndexEntry::Indirect) {
      out.push_back({ctx.int_val(0), ctx.int_val(shape[d] - 1), false});
      continue;
    }
    // A dynamic size (`ds(s, %n)`, DMAs only) is over-approximated by its
    // static bound: a read may touch up to the bound, and a write fills an
    // unknown part of it.
    int64_t span = e.kind == IndexEntry::Point ? 0 : std::max<int64_t>(e.size - 1, 0) * e.stride;
    const z3::expr& s = a.starts.at(d).e;
    bool dense = !e.has_dynamic_size() && (e.kind == IndexEntry::Point || e.stride == 1 || e.size <= 1);
    out.push_back({s, s + ctx.int_val(span), dense});
  }
  return out;
}

void KernelWalker::bind_loop(const LoopParts<Var*>& params, const LoopParts<Value>& operands, const std::string& loop) {
  for (size_t p = 0; p < params.consts.size() && p < operands.consts.size(); ++p) bind(params.consts[p], operands.consts[p]);
  for (const Var* p : params.carries) bind_opaque(p, "a loop carry of " + loop);
  for (const Var* p : params.xs) bind_opaque(p, "a loop carry of " + loop);
}

bool KernelWalker::result_used(const Op& op) {
  if (!body_) return true;
  auto [it, fresh] = used_.try_emplace(body_);
  if (fresh) {
    // Bodies are closed: a value is used only by its own body's ops and outputs.
    for (const Op& o : body_->ops())
      for (const Value& v : o.operands)
        if (v.is_var()) it->second.insert(v.var());
    for (const Value& v : body_->outputs())
      if (v.is_var()) it->second.insert(v.var());
  }
  for (const Var* r : op.results)
    if (it->second.count(r)) return true;
  return false;
}

void KernelWalker::bind(const Var* p, const Value& v) {
  if (v.is_var() && enc_.prefetch_of(v.var()) >= 0) return enc_.bind_prefetch(p, enc_.prefetch_of(v.var()));
  if (v.is_var() && p->type.is_ref()) root_[p] = root(v.var());
  if (int_scalar(p->type)) enc_.bind(p, enc_.value(v));
}

void KernelWalker::bind_opaque(const Var* p, const std::string& why) {
  if (int_scalar(p->type)) enc_.bind(p, enc_.opaque(p->type.dtype(), why));
}

void KernelWalker::results_opaque(const Op& op, const std::string& why) {
  for (Var* r : op.results) bind_opaque(r, why);
}

void KernelWalker::with_path(const Sym& cond, const std::function<void()>& f) {
  z3::expr saved = enc_.path();
  std::vector<int> saved_deps = enc_.path_deps();
  std::vector<std::string> saved_opaque = path_opaque_;
  enc_.set_path(saved && cond.e, merge_deps(saved_deps, cond.deps));
  path_opaque_ = merge_opaque(path_opaque_, cond.opaque);
  f();
  enc_.set_path(saved, saved_deps);
  path_opaque_ = saved_opaque;
}

void KernelWalker::in_loop(const std::function<void()>& f, LoopInfo info) {
  info.id = next_loop_++;
  loops_.push_back(info.id);
  loop_info_.push_back(std::move(info));
  f();
  loop_info_.pop_back();
  loops_.pop_back();
}

void KernelWalker::record(const Op& op) {
  std::vector<Access> all;
  for (const Indexer& ix : op.indexers) {
    const Value& ref = op.operands.at(ix.base);
    Access a{op, ix, ref.is_var() ? root(ref.var()) : nullptr, {}, {}, loops_};
    for (const IndexEntry& e : ix.entries) {
      a.dyn_sizes.push_back(e.has_dynamic_size() ? std::optional<Sym>(enc_.value(op.operands.at(e.dyn_size))) : std::nullopt);
      if (e.kind == IndexEntry::Full) a.starts.push_back(Sym{c_.ctx.int_val(0), Interval::of(0), {}, {}});
      // The rows of a gather / scatter are data in the offsets Ref: unknown to the model.
      else if (e.is_indirect()) {
        const Value& offsets = op.operands.at(e.dyn_start);
        a.starts.push_back(enc_.opaque(DType::i32, "the rows " + op.name() + where(op) + " moves are data (read from the offsets " +
                                                       (offsets.is_var() ? "%" + offsets.var()->name : std::string("Ref")) + ")"));
      } else if (e.is_dynamic()) a.starts.push_back(enc_.value(op.operands.at(e.dyn_start)));
      else a.starts.push_back(Sym{c_.ctx.int_val(e.start), Interval::of(e.start), {}, {}});
    }
    if (on_access) on_access(a);
    if (on_op) all.push_back(std::move(a));
  }
  if (on_op) on_op(op, all);
}

void KernelWalker::step_cond(const Op& op) {
  const auto& branches = op.param(keys::branches);
  Sym idx = enc_.value(op.operands.at(0));
  int nb = static_cast<int>(branches.size());
  for (int i = 0; i < nb; ++i) {
    z3::expr taken = c_.ctx.bool_val(true);
    if (idx.is_bool()) taken = i == 0 ? !idx.e : idx.e;
    else if (nb > 1) taken = i == 0 ? idx.e <= 0 : i == nb - 1 ? idx.e >= nb - 1 : idx.e == i;
    const Body& b = *branches[i];
    for (const auto& [param, v] : forwarded_operands(op, b)) bind(param, v);
    with_path(derived(taken, {0, 1}, {&idx}), [&] {
      if (on_branch) on_branch(op, i);
      conds_.push_back(&op);
      walk(b);
      conds_.pop_back();
    });
  }
  results_opaque(op, "the result of cond" + where(op));
}

void KernelWalker::step_for(const Op& op) {
  ForView v(op);
  const Body& b = v.body();
  Sym lo = enc_.value(v.lo()), hi = enc_.value(v.hi());
  z3::expr i = c_.scope.fresh_int(v.index_param()->name);
  Interval iv{lo.iv.lo, hi.iv.hi >= Interval::kInf ? Interval::kInf : hi.iv.hi - 1};
  enc_.bind(v.index_param(), derived(i, iv, {&lo, &hi}));
  bind_loop(v.params(), v.operands(), "for" + where(op));
  in_loop([&] { with_path(derived(lo.e <= i && i < hi.e, {0, 1}, {&lo, &hi}), [&] { walk(b); }); },
          LoopInfo{0, i, lo, hi, "for" + where(op), v.index_param()->name});
  results_opaque(op, "the result of for" + where(op));
}

void KernelWalker::step_while(const Op& op) {
  WhileView v(op);
  for (const auto& part : {std::pair{&v.body(), v.body_params()}, std::pair{&v.cond(), v.cond_params()}}) {
    bind_loop(part.second, v.operands(), "while" + where(op));
    in_loop([&] { walk(*part.first); }, LoopInfo{0, {}, {}, {}, "while" + where(op), ""});  // (clang 14 cannot capture a structured binding)
  }
  results_opaque(op, "the result of while" + where(op));
}

void KernelWalker::step_scan(const Op& op) {
  ScanView v(op);
  bind_loop(v.params(), v.operands(), "scan" + where(op));
  in_loop([&] { walk(v.body()); }, LoopInfo{0, {}, {}, {}, "scan" + where(op), ""});
  results_opaque(op, "the result of scan" + where(op));
}

void KernelWalker::step_body(const Op& op, const char* key, bool per_core) {
  const Body& b = *op.body_param(key);
  std::vector<ForwardedOperand> given = forwarded_operands(op, b);
  for (const auto& [param, v] : given) bind(param, v);
  // The rest (scratch Refs, pmap's per-device slices) are unknown to the model.
  for (const Var* p : std::span(b.params()).subspan(given.size()))
    bind_opaque(p, "a parameter of " + op.name() + where(op));
  // A core_map's body runs once per core: axis_index on a mesh axis is the core's index.
  auto saved = c_.scope.axis_sizes;
  if (per_core) {
    const auto& axes = op.param(keys::mesh_axes);
    const auto& shape = op.param(keys::mesh_shape);
    for (size_t k = 0; k < axes.size() && k < shape.size(); ++k) c_.scope.axis_sizes[axes[k]] = shape[k];
  }
  walk(b);
  c_.scope.axis_sizes = saved;
  results_opaque(op, "the result of " + op.name() + where(op));
}

void KernelWalker::step_pallas_call(const Op& op) { results_opaque(op, "a nested pallas_call" + where(op)); }

void KernelWalker::step_debug_check(const Op& op) {
  if (on_debug_check) on_debug_check(op, enc_.value(op.operands.at(0)));
}

namespace {

bool has_bodies(const Primitive& p) {
  for (const ParamSpec& s : p.params)
    if (s.kind == ParamKind::Body || s.kind == ParamKind::Bodies) return true;
  return false;
}

}  // namespace

const RuleTable<KernelWalker::StepRule>& KernelWalker::steps() {
  static const RuleTable<StepRule> table = [] {
    RuleTable<StepRule> t("prove.walker");
    auto member = [&t](const char* prim_name, void (KernelWalker::*f)(const Op&), RuleSite site = RuleSite::here()) {
      t.set(prim_name, [f](KernelWalker& w, const Op& op) { (w.*f)(op); }, site);
    };
    auto body = [&t](const char* prim_name, const char* key, bool per_core = false, RuleSite site = RuleSite::here()) {
      t.set(prim_name, [key, per_core](KernelWalker& w, const Op& op) { w.step_body(op, key, per_core); }, site);
    };
    member("cond", &KernelWalker::step_cond);
    member("for", &KernelWalker::step_for);
    member("while", &KernelWalker::step_while);
    member("scan", &KernelWalker::step_scan);
    body("run_scoped", "body");
    body("call", "callee");
    body("custom_jvp_call", "call");
    body("custom_vjp_call", "call");
    body("pmap", "body");
    body("core_map", "body", /*per_core=*/true);
    member("pallas_call", &KernelWalker::step_pallas_call);
    member("debug_check", &KernelWalker::step_debug_check);
    t.unsupported("custom_lin", "it cannot run (the tangent of a custom_vjp_call, transposed by `bwd`)");
    // Every other op is a step of integer code; one with bodies needs a rule.
    t.set_default("its integer results are encoded (int_encoder.cpp) and its accesses recorded", [](const Primitive& p) {
      return !has_bodies(p);
    });
    return t;
  }();
  return table;
}
const RuleTableRegistration kRegistered("prove.walker", KernelWalker::steps);

void KernelWalker::step(const Op& op) {
  record(op);
  if (const StepRule* rule = steps().find(*op.prim)) return (*rule)(*this, op);
  // A new op with bodies: proving without seeing its accesses would be unsound.
  if (!op.nested_bodies().empty()) {
    std::string why = steps().reason(*op.prim);
    throw Error(op.loc, "prove: the kernel walker does not know how `" + op.name() + "` runs its bodies" +
                            (why.empty() ? " (analysis/prove/kernel_walker.cpp)" : ": " + why));
  }
  enc_.encode(op);
}

}  // namespace tessera::prove
