// Walks a kernel body once, at a symbolic grid point, encoding its integer
// code and reporting every indexed Ref access with the path it runs under.
// Shared by the kernel-bounds and carried-state obligations.
//
// program_id / num_programs come from the grid; a `for` induction variable
// ranges over [lo, hi) on the path into the body; each `cond` branch adds
// "this branch was taken" to the path; nested bodies see their operands
// through their parameters (a Ref parameter stands for the Ref its operand
// is: its *root*). Loop carries and results of ops the prover does not model
// are opaque.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "analysis/prove/call_context.h"
#include "ir/control_views.h"

namespace tessera::prove {

// One indexed access of a Ref by one op.
struct Access {
  const Op& op;
  const Indexer& ix;
  const Var* root;                   // the Ref this is: a kernel parameter or a scoped allocation
  std::vector<Sym> starts;           // per dim: the start of the entry (0 for a full dim)
  std::vector<std::optional<Sym>> dyn_sizes;  // per dim: the run-time size of a `ds(s, %n)` entry
  std::vector<int> loops;            // the loops (ids) the access sits in, outermost first
};

// A loop the walker is inside: a `for` has an induction variable ranging over
// [lo, hi); `while` and `scan` have none the model knows.
struct LoopInfo {
  int id;
  std::optional<z3::expr> index;     // the induction variable (for)
  std::optional<Sym> lo, hi;         // its bounds (for)
  std::string what;                  // "for at f.tsr:3:4"
  std::string index_name;            // "c"
};

// The elements one indexer entry of an access touches, [lo, hi] (a strided
// slice is widened to its hull), and whether a write entry fills all of them.
struct AccessRange {
  z3::expr lo, hi;
  bool dense;
};
// Per dim of the accessed Ref (of shape `shape`). The rows of a gather /
// scatter may be any row and a dynamic size (`ds(s, %n)`) any size up to its
// static bound: both span the bound but are not dense.
std::vector<AccessRange> access_ranges(z3::context& ctx, const Access& a, const Shape& shape);

class KernelWalker {
 public:
  KernelWalker(CallContext& c, IntEncoder& enc) : c_(c), enc_(enc) {}

  std::function<void(const Access&)> on_access;
  // Called once per op after its accesses (one per indexer, in order), under the current path.
  std::function<void(const Op&, const std::vector<Access>&)> on_op;
  // Called at each debug_check with its predicate, under the current path.
  std::function<void(const Op&, const Sym& pred)> on_debug_check;
  // Called on entering branch `index` of a `cond`, under the path that takes it.
  std::function<void(const Op& cond, int index)> on_branch;
  void walk(const Body& b) {
    const Body* saved = body_;
    body_ = &b;
    for (const Op& op : b.ops()) step(op);
    body_ = saved;
  }
  // Whether a result of `op` (in the body being walked) is used: a swap whose
  // old value nobody reads is a plain write.
  bool result_used(const Op& op);
  // The body being walked (the one the op being visited sits in).
  const Body* body() const { return body_; }
  // Why the current path depends on unmodelled values (empty: it does not).
  const std::vector<std::string>& path_opaque() const { return path_opaque_; }
  // The loops around the op being visited, outermost first.
  const std::vector<LoopInfo>& loops() const { return loop_info_; }
  // The `cond`s around the op being walked, outermost first.
  const std::vector<const Op*>& conds() const { return conds_; }
  // The Ref `v` stands for (itself when it is not a nested body's parameter).
  const Var* root(const Var* v) const {
    auto it = root_.find(v);
    return it == root_.end() ? v : it->second;
  }

  // How the walker runs an op, per primitive ("prove.walker"): one rule per
  // op with bodies; any other op is encoded by the IntEncoder, and an op
  // with bodies but no rule is an error (walking past them would be unsound).
  using StepRule = std::function<void(KernelWalker&, const Op&)>;
  static const RuleTable<StepRule>& steps();

 private:
  void bind(const Var* p, const Value& v);
  void bind_opaque(const Var* p, const std::string& why);
  // Binds a loop body's constant parameters to the loop's constants; its
  // carries (and scanned slices) change from one iteration to the next, so
  // they are opaque ("a loop carry of for at ...").
  void bind_loop(const LoopParts<Var*>& params, const LoopParts<Value>& operands, const std::string& loop);
  void results_opaque(const Op& op, const std::string& why);
  void with_path(const Sym& cond, const std::function<void()>& f);
  void in_loop(const std::function<void()>& f, LoopInfo info);
  void record(const Op& op);
  void step(const Op& op);
  void step_cond(const Op& op);
  void step_for(const Op& op);
  void step_while(const Op& op);
  void step_scan(const Op& op);
  // run_scoped, call, custom calls, pmap, core_map: the body in param `key`,
  // run once (`per_core`: once per core of a core_map's mesh).
  void step_body(const Op& op, const char* key, bool per_core);
  void step_pallas_call(const Op& op);
  void step_debug_check(const Op& op);

  CallContext& c_;
  IntEncoder& enc_;
  std::unordered_map<const Var*, const Var*> root_;
  std::vector<int> loops_;
  std::vector<LoopInfo> loop_info_;
  std::vector<std::string> path_opaque_;
  std::vector<const Op*> conds_;
  const Body* body_ = nullptr;
  std::unordered_map<const Body*, std::unordered_set<const Var*>> used_;
  int next_loop_ = 0;
};


}  // namespace tessera::prove
