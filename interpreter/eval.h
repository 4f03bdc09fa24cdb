// The evaluator: runs bodies op by op on Arrays and Refs (handles to buffers
// of the simulated TPU). Pure primitives go to the array kernels
// (runtime/kernels.h); state, control flow, Pallas and communication
// primitives are handled here and in pallas_call.cpp.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "interpreter/prng.h"
#include "runtime/array.h"
#include "interpreter/interpreter.h"
#include "runtime/kernels.h"
#include "runtime/region.h"
#include "interpreter/timeline.h"
#include "interpreter/tpu/machine.h"
#include "interpreter/tpu/scheduler.h"
#include "ir/ir.h"

namespace tessera::interp {

// A run-time value: an array, or a Ref (a handle to a buffer).
struct Val {
  Array arr;
  tpu::BufferRef ref;
  bool is_ref() const { return ref != nullptr; }
};

// What a kernel invocation knows about where it runs (for program_id and
// for error messages).
struct KernelFrame {
  std::string kernel;              // "@add_kernel"
  std::vector<int64_t> grid;       // sizes, dynamic ones resolved
  std::vector<int64_t> point;      // the current grid point
  // The grid axes program_id / num_programs see: all but the vmapped ones (a
  // batched kernel keeps its unbatched axis numbers, as in
  // jax/_src/pallas/mosaic/interpret/interpret_pallas_call.py).
  std::vector<int> kernel_axes;
  // grid_names: one per grid axis, or empty. axis_index of one of them is
  // that axis's program id (jax/_src/pallas/core.py binds them as named axes).
  const std::vector<std::string>* grid_names = nullptr;
  int64_t collective_id = -1;
  // True while an index map runs: it gets the program ids as parameters, and
  // `point` may not be the point it is evaluated for (the next one is planned
  // ahead), so program_id / axis_index of a grid axis are errors there.
  bool in_index_map = false;
};

struct Axis {
  std::string name;
  int64_t size = 1;
  int64_t index = 0;
};

// Per thread of control: which device and core it is, and its environment.
struct Ctx {
  int device = 0;
  int core = 0;
  std::vector<Axis> axes;  // pmap axes, outermost first
  std::vector<Axis> mesh;  // core_map axes
  std::shared_ptr<tpu::BarrierState> devices;  // every device of the run (global barriers)
  KernelFrame* kernel = nullptr;
  const Op* scope = nullptr;  // the pallas_call / core_map running (RunStats)
  int num_devices() const { return devices ? devices->size : 1; }
};

struct BodyPlan;

class Interp {
 public:
  // `timeline`: where --timeline events go (null: off); it must outlive the Interp.
  Interp(const Module& m, const RunOptions& opts, int cores_per_device, Timeline* timeline = nullptr);
  ~Interp();

  std::vector<Val> eval(const Body& b, std::vector<Val> args, Ctx& ctx);
  // One step toward --max-steps: every op, and every grid iteration of a
  // pallas_call (so an empty kernel over a huge grid stops too). `work`: the
  // elements it computes or moves, toward --max-work (a step of a few ops on
  // huge arrays can take minutes; the step count alone cannot bound the time).
  void step(const Loc& loc, int64_t work = 0) {
    if (timeline_) timeline_->tick();
    if (opts_.max_steps > 0 && ++steps_ > opts_.max_steps)
      throw Error(loc, "stopped after " + std::to_string(opts_.max_steps) +
                           " steps (ops and grid iterations): an endless loop? raise the limit with --max-steps N "
                           "(tessera.run(..., max_steps=N); 0: no limit)");
    charge(loc, work);
  }
  // Work toward --max-work that is not a step of its own: block copies, DMAs.
  void charge(const Loc& loc, int64_t work) {
    if (opts_.max_work > 0 && (work_ += work) > opts_.max_work)
      throw Error(loc, "stopped after " + std::to_string(opts_.max_work) +
                           " units of work (--max-work: elements computed, copied or moved by DMA)");
  }

  const Module& module() const { return module_; }
  const RunOptions& opts() const { return opts_; }
  tpu::Machine& machine() { return machine_; }
  tpu::Scheduler& sched() { return sched_; }
  Timeline* timeline() const { return timeline_; }
  // Adds to --stats' counters of the kernel `c` runs in (nothing without --stats).
  void count(const Ctx& c, const CostFigures& f) {
    if (opts_.stats) opts_.stats->add(c.scope, f);
  }
  int global_core(const Ctx& c) const { return machine_.global_core(c.device, c.core); }
  // The barrier state shared by every device of a pmap op (nested pmaps: all
  // devices of all enclosing maps, so a device barrier spans the whole mesh).
  std::shared_ptr<tpu::BarrierState> device_group(const Op* pmap, int size);
  // The random-bit generator of the core running `c` (prng_seed / prng_random_bits).
  Prng& prng(const Ctx& c) {
    std::lock_guard<std::mutex> guard(prng_mu_);
    return prngs_[global_core(c)];
  }
  // " (device 0, core 1)" when there is more than one of either, else "".
  std::string where(const Ctx& c) const;

 private:
  const BodyPlan& plan(const Body& b);

  const Module& module_;
  RunOptions opts_;
  Timeline* timeline_;
  tpu::Machine machine_;    // destroyed after the scheduler has joined its threads
  tpu::Scheduler sched_;
  std::mutex plans_mu_;
  std::unordered_map<const Body*, std::unique_ptr<BodyPlan>> plans_;
  std::unordered_map<const Op*, std::shared_ptr<tpu::BarrierState>> groups_;
  int64_t steps_ = 0;
  int64_t work_ = 0;
  std::mutex prng_mu_;
  std::unordered_map<int, Prng> prngs_;  // by global core

  friend struct Exec;
};

// pallas_call (pallas_call.cpp): `operands` are the op's operand values.
std::vector<Val> run_pallas_call(Interp& in, const Op& op, const std::vector<Val>& operands, Ctx& ctx);

// Whether the interpreter's rule table (eval.cpp) runs primitive p: every
// primitive must have a rule; a coverage test checks it.
bool has_interpret_rule(const Primitive& p);

// Reads the region an indexer selects (`ix` may be null: the whole Ref).
Region resolve_indexer(const Indexer* ix, const Shape& ref_shape, const std::vector<const Val*>& operands);

}  // namespace tessera::interp
