// Internals of the state discharge pass, shared by discharge.cpp (state ops,
// control flow, the module driver) and discharge_pallas.cpp (pallas_call and
// core_map). Not a public header.
#pragma once

#include <functional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/builder.h"
#include "ir/clone.h"
#include "ir/primitive.h"

namespace tessera::discharge {

// Program ids and grid sizes (i32 scalars of the body being built) of the grid
// loop iteration a kernel is inlined into, plus the axis names (may be empty).
struct GridCtx {
  std::vector<Value> pids, sizes;
  std::vector<std::string> names;
};

// What the discharger knows while it copies a body: where each source value
// went, and the current value of every Ref ("slot"). Two Refs that alias (a
// run_scoped operand and the body parameter it binds) share a slot.
struct Env {
  ValueMap values;
  std::unordered_map<const Var*, int> slot_of;
  std::vector<Value> slots;
  std::unordered_set<const Var*> sems;  // semaphore Refs: dropped (DMAs become copies)
  const GridCtx* grid = nullptr;

  int new_slot(Value v) {
    slots.push_back(v);
    return static_cast<int>(slots.size()) - 1;
  }
};

class Discharger;
using Rule = std::function<void(Discharger&, const Op&, Builder&, Env&)>;

// A body discharged on its own (a branch, a loop body): parameters in the
// source order with Refs turned into arrays and semaphores dropped, then (in a
// kernel) the grid context (pids, then sizes); outputs: the source outputs,
// then the final value of every non-semaphore Ref parameter, in order.
struct Discharged {
  BodyPtr body;
  std::vector<int> new_param;  // source param -> new param index, -1 if dropped
  int num_ctx = 0;
};

class Discharger {
 public:
  explicit Discharger(bool keep_pallas_call) : keep_pallas_call_(keep_pallas_call) {}

  // Copies `src`'s ops into `b`, discharging state as it goes.
  void run_ops(const Body& src, Builder& b, Env& env);
  Discharged discharge_nested(const Body& src, const GridCtx* grid);
  // A body without Ref parameters, discharged (memoized; the same pointer when
  // it holds no state at all).
  BodyPtr pure(const BodyPtr& src);

  bool keep_pallas_call() const { return keep_pallas_call_; }

  // Value of a non-Ref operand.
  static Value val(const Value& v, const Env& env, const Op& op);
  // Slot of a Ref operand.
  static int slot(const Value& v, const Env& env, const Op& op);

 private:
  bool keep_pallas_call_;
  std::unordered_map<const Body*, BodyPtr> memo_;
};

// ---- helpers (discharge.cpp) ----
Value to_i32(Builder& b, Value v);
std::vector<Value> ctx_values(const Env& env);
// Reads / writes the region `ix` selects (dyn: the values of the op's
// operands, indexed by operand position).
Value read_region(Builder& b, Value arr, const Indexer* ix, const std::vector<Value>& operand_values);
Value write_region(Builder& b, Value arr, const Indexer* ix, const std::vector<Value>& operand_values, Value v);
// A body whose parameter k is d's parameter param_perm[k] and whose output j is
// d's output out_perm[j].
BodyPtr reorder(const Body& d, const std::vector<int>& param_perm, const std::vector<int>& out_perm, BodyKind kind);
bool has_state_or_grid_ops(const Body& b);

// ---- pallas_call / core_map (discharge_pallas.cpp) ----
void pallas_call_rule(Discharger& d, const Op& op, Builder& b, Env& env);
void core_map_rule(Discharger& d, const Op& op, Builder& b, Env& env);

}  // namespace tessera::discharge
