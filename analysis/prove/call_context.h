// What every obligation of one pallas_call shares: the grid mapping, the Z3
// context and scope (grid sizes, scalar prefetch), the solver, and helpers to
// make symbolic grid points and encode index maps at them.
#pragma once

#include <z3++.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "analysis/prove/int_encoder.h"
#include "analysis/prove/prove.h"
#include "analysis/prove/solver.h"
#include "ir/grid_mapping.h"

namespace tessera::prove {

// An index map encoded at one symbolic grid point.
struct MapAt {
  std::vector<Sym> point;            // program ids
  std::vector<Sym> outputs;          // block indices (start, size pairs for BoundedSlice)
  std::unique_ptr<IntEncoder> enc;   // its facts and guards
};

// The operand index of the size of dynamic grid axis `axis` (-1 when static).
int dynamic_grid_operand(const GridMapping& g, int axis);
// Grid axis `axis`'s size when known before the run: static, or a literal operand; else -1.
int64_t known_grid_size(const Op& call, const GridMapping& g, int axis);

// A pallas_call, or a core_map (no grid: its body is the kernel, run once per
// core of its mesh).
class CallContext {
 public:
  // `axis_sizes`: the named device axes of enclosing pmaps (and core_maps), outermost first.
  // `per_device`: which of the call's scalar prefetch and grid sizes each device has its own of.
  CallContext(const Op& op, std::string name, const Options& opts, const AxisSizes& axis_sizes,
              const PerDevice& per_device = {});

  const Op& op;
  GridMapping g;                     // empty for a core_map
  const Body* kernel = nullptr;
  std::string name;
  const Options& opts;
  z3::context ctx;
  Scope scope;
  Solver solver;
  // Mappings whose index map is proved well defined (every guard it needs
  // holds), filled by prove_bounds. Pairwise claims assume exactly this: an
  // out-of-bounds block does not void them, an overflow does.
  std::vector<char> map_well_defined;
  // Every exactness guard the kernel's indices and paths rely on is proved
  // (filled by prove_kernel_bounds): the premise of the protocol claims, which
  // an access that kernel bounds cannot decide does not void.
  bool kernel_guards_proved = false;

  // A fresh symbolic grid point; its range facts (0 <= p < grid size) go to `facts`.
  std::vector<Sym> make_point(const std::string& tag, std::vector<z3::expr>& facts);
  // Index map of mapping m (inputs first, then outputs) at `point`.
  MapAt encode_map(int m, const std::vector<Sym>& point);
  // Facts every query includes: the ranges of dynamic grid sizes.
  std::vector<z3::expr> base_facts;
  // Adds the facts of an encoding to `out`, and its guards too when `assume_guards`
  // (obligations other than bounds assume what the bounds obligation proves).
  static void add_facts(const IntEncoder& enc, std::vector<z3::expr>& out, bool assume_guards);

  std::vector<int64_t> eval(const z3::model& model, const std::vector<Sym>& syms) const;
  int64_t eval(const z3::model& model, const z3::expr& e) const;

  // The loop of a claim made of many checks (`bad[i]`: check i fails). One
  // query asks whether any open check can fail under `facts`; each check the
  // model makes fail goes to `violated(i, model)`, which returns true to end
  // the sweep (the claim is FAILED) or false to set the check aside (the
  // caller says why), and the query is asked again of the checks left.
  // Counts queries in `ob`. Returns true when `violated` ended the sweep;
  // `unknown_reason` gets the solver's reason when a query is unknown.
  bool sweep(const std::vector<z3::expr>& facts, const std::vector<z3::expr>& bad, const char* tag, Obligation& ob,
             std::string& unknown_reason, const std::function<bool(size_t, const z3::model&)>& violated);

  // "in[1]" / "out[0]"
  std::string subject(int m) const {
    return m < g.num_inputs() ? "in[" + std::to_string(m) + "]" : "out[" + std::to_string(m - g.num_inputs()) + "]";
  }

 private:
  // The claims reason about the device whose axis_index symbols are `coords`
  // (along scope.process_axes, outermost first).
  z3::expr on_device(const std::vector<int64_t>& coords);
  // Facts fixing `p`'s function to the values each device computes for it;
  // false (no facts) when they do not fit its per-device axes or are too many.
  bool pin_prefetch(const Prefetch& p, const DeviceTable& values, const AxisSizes& axis_sizes);
};

std::string tuple_str(const std::vector<int64_t>& v);  // "(3, 1, 0)"

// Times an obligation and fills its call / subject / kind.
class Timer {
 public:
  Timer() : start_(std::chrono::steady_clock::now()) {}
  double millis() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

inline Obligation obligation(const std::string& call, const std::string& subject, const std::string& kind) {
  Obligation ob;
  ob.call = call;
  ob.subject = subject;
  ob.kind = kind;
  return ob;
}

// Grid axes marked parallel that have more than one point.
std::vector<int> parallel_axes(const CallContext& c);

// The obligations, one file each.
Obligation prove_bounds(CallContext& c, int m);
Obligation prove_non_revisiting(CallContext& c, int out);
Obligation prove_parallel_safety(CallContext& c, int out);
Obligation prove_kernel_bounds(CallContext& c);
Obligation prove_alias_parallel_safety(CallContext& c, int in, int out);
Obligation prove_carried_state(CallContext& c);
Obligation prove_semaphore_balance(CallContext& c);
Obligation prove_dma_races(CallContext& c);
Obligation prove_output_coverage(CallContext& c, int out);
Obligation prove_core_map_races(CallContext& c);

}  // namespace tessera::prove
