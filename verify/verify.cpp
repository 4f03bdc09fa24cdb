// The verifier's walk: visits every body of a module -- top-level symbols and
// every nested body (kernels, index maps, branches, loop bodies, inline fns) --
// and runs the checks of verify/check.h on it. It never throws on a bad module:
// each problem becomes a Diagnostic.
//
// A body's own checks (SSA, types, signatures, effects, conventions, memory
// access) run once, however many ops use it. Checks that depend on where a
// body is used (axis names, program ids, remote ops) run once per distinct
// context. Symbols that no op references are the roots: functions are
// checked as entry points (no enclosing pmap or pallas_call); other unreferenced
// symbols have unknown users, so context checks are skipped for them.
#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "ir/primitive.h"
#include "verify/check.h"

namespace tessera {
namespace verify_detail {
namespace {

class Walker {
 public:
  explicit Walker(Diags& out) : out_(out) {}

  bool seen(const Body& b) const { return state_.count(&b) != 0; }

  // Checks `b` (and what it nests) in `ctx`; returns whether b is well-typed.
  bool visit(const Body& b, const Context& ctx) {
    if (std::find(stack_.begin(), stack_.end(), &b) != stack_.end()) {
      report(out_, ctx.fallback, body_label(b) + " refers to itself; bodies may not be recursive");
      return false;
    }
    BodyState& st = state_[&b];
    bool first = !st.seen;
    if (!visited_.insert({&b, ctx.key()}).second) return st.well_typed;
    st.seen = true;
    stack_.push_back(&b);
    if (first) {
      check_body_signature(b, ctx.fallback, out_);
      check_ssa(b, ctx.fallback, out_);
      st.op_ok.assign(b.ops().size(), 0);
    }
    bool ok = true;
    for (size_t i = 0; i < b.ops().size(); ++i) ok &= visit_op(b.ops()[i], ctx, first, st.op_ok[i]);
    stack_.pop_back();
    if (first) {
      st.well_typed = ok;
      // Effect rules assume well-typed ops (and decode nested bodies).
      if (ok) check_body_effects(b, ctx.fallback, out_);
    }
    return state_[&b].well_typed;
  }

 private:
  struct BodyState {
    bool seen = false;
    bool well_typed = true;
    std::vector<char> op_ok;  // per op: params decode and the shape rule agrees
  };

  bool visit_op(const Op& op, const Context& ctx, bool first, char& op_ok) {
    if (!op.prim) {
      if (first) report(out_, op.loc, "an op has no primitive");
      return false;
    }
    if (first) op_ok = check_op_types(op, out_);
    bool nested_ok = true;
    if (op_ok) {
      std::vector<BodyPtr> nested = op.nested_bodies();
      for (const BodyPtr& nb : nested) nested_ok &= visit(*nb, nested_context(op, *nb, ctx));
    }
    if (!op_ok) return false;
    if (first) {
      check_memory_spaces(op, out_);
      check_memory_access(op, out_);
      check_map_params(op, out_);
      if (nested_ok) check_op_effects(op, out_);
      if (nested_ok) check_sparse_core(op, out_);
      if (op.name() == "pallas_call") check_pallas_call(op, nested_ok, out_);
    }
    if (ctx.known) check_in_context(op, ctx, out_);
    return nested_ok;
  }

  Diags& out_;
  std::unordered_map<const Body*, BodyState> state_;
  std::set<std::pair<const Body*, std::string>> visited_;
  std::vector<const Body*> stack_;
};

// Bodies that some op of the module refers to (directly or through nesting).
std::unordered_set<const Body*> referenced_bodies(const Module& m) {
  std::unordered_set<const Body*> seen;
  std::vector<const Body*> work;
  for (const BodyPtr& s : m.symbols()) work.push_back(s.get());
  std::unordered_set<const Body*> expanded;
  while (!work.empty()) {
    const Body* b = work.back();
    work.pop_back();
    if (!expanded.insert(b).second) continue;
    for (const Op& op : b->ops())
      for (const BodyPtr& nb : op.nested_bodies()) {
        seen.insert(nb.get());
        work.push_back(nb.get());
      }
  }
  return seen;
}

// Sorted by position (unknown locations last), without repeats.
void sort_and_dedupe(Diags& diags) {
  auto key = [](const Diagnostic& d) {
    return std::make_tuple(!d.loc.known(), d.loc.file ? *d.loc.file : std::string(), d.loc.line, d.loc.col);
  };
  std::stable_sort(diags.begin(), diags.end(), [&](const Diagnostic& a, const Diagnostic& b) { return key(a) < key(b); });
  std::set<std::pair<std::string, std::string>> seen;
  Diags unique;
  for (Diagnostic& d : diags)
    if (seen.insert({d.loc.str(), d.message}).second) unique.push_back(std::move(d));
  diags = std::move(unique);
}

}  // namespace
}  // namespace verify_detail

std::vector<Diagnostic> verify_module(const Module& m) {
  using namespace verify_detail;
  Diags diags;
  try {
    Walker walker(diags);
    std::unordered_set<const Body*> referenced = referenced_bodies(m);
    for (const BodyPtr& s : m.symbols()) {
      if (referenced.count(s.get())) continue;
      Context ctx;
      ctx.fallback = s->loc();
      ctx.known = s->kind() == BodyKind::func;
      ctx.in_kernel = s->kind() == BodyKind::kernel || s->kind() == BodyKind::index_map;
      walker.visit(*s, ctx);
    }
    // Symbols only reachable from themselves (a cycle of references).
    for (const BodyPtr& s : m.symbols()) {
      if (walker.seen(*s)) continue;
      Context ctx;
      ctx.fallback = s->loc();
      ctx.known = false;
      walker.visit(*s, ctx);
    }
  } catch (const std::exception& e) {
    // A check tripped over something it did not expect: still a diagnostic.
    diags.push_back(Diagnostic{Loc{}, std::string("internal verifier error: ") + e.what()});
  }
  sort_and_dedupe(diags);
  return diags;
}

void verify_or_throw(const Module& m) {
  auto diags = verify_module(m);
  if (!diags.empty()) throw Error(diags[0].loc, diags[0].message);
}

}  // namespace tessera
