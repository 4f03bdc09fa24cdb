// The simulated TPU shared by every thread of control of a run: memory
// buffers per device / core / memory space, semaphores, the DMA engine, device
// barriers and the grid-point trace (the "shared memory" of
// jax/_src/pallas/mosaic/interpret/interpret_pallas_call.py).
//
// Buffers are keyed as that file's `_allocate_buffer` keys them: (device,
// core, memory space, id), where HBM / any buffers live once per device
// (core 0) and ids are handed out in step on every core, so the same scratch
// buffer has the same id on every core and device (that is how a remote DMA
// names its destination).
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "interpreter/interpreter.h"
#include "interpreter/timeline.h"
#include "interpreter/tpu/races.h"
#include "interpreter/tpu/scheduler.h"
#include "runtime/array.h"
#include "runtime/region.h"

namespace tessera::interp::tpu {

struct MemBuffer {
  Array data;  // semaphore buffers hold semaphore ids (int32)
  MemSpace space = MemSpace::vmem;
  int id = 0;
  int device = 0;
  int core = 0;
  std::string name;  // how messages name it: `input "x"`, `scratch "acc"`
  bool freed = false;

  bool is_semaphore() const { return space == MemSpace::semaphore; }
  // `vmem buffer of input "x" (device 0, core 1)`.
  std::string describe() const;
  // Makes `data` safe to write in place (copy-on-write).
  Array& writable() {
    data.make_unique_copy();
    return data;
  }
};
using BufferRef = std::shared_ptr<MemBuffer>;

struct Semaphore {
  int64_t id = 0;
  std::string name;
  std::map<int, int64_t> count;                          // global core -> value
  std::map<int, std::deque<std::function<void()>>> work;  // on_wait DMA work queued per waiting core
  std::map<int, VectorClock> clock;                      // happens-before carried by signals
};

struct Dma;

// Participants of a barrier (the devices of one pmap, or the cores of a
// core_map): generation counting so the barrier can be reused.
struct BarrierState {
  int size = 1;
  int arrived = 0;
  int64_t generation = 0;
  VectorClock joined;
};

class Machine {
 public:
  // `timeline`: where DMA, wait and race events go (null: off).
  Machine(const RunOptions& opts, Scheduler& sched, Timeline* timeline = nullptr);
  ~Machine();

  const RunOptions& opts() const { return opts_; }
  Scheduler& sched() { return sched_; }
  int cores() const { return opts_.cores; }
  int global_core(int device, int core) const { return device * opts_.cores + core; }
  bool uninit_zero() const { return opts_.uninit == RunOptions::Uninit::zero; }

  // Allocates a buffer holding `init` on `device`. core < 0 allocates a copy
  // on every core of the device (one shared buffer for HBM / any); returns the
  // buffer of `core` (or of core 0).
  BufferRef allocate(int device, int core, MemSpace space, const Array& init, const std::string& name);
  BufferRef find(int device, int core, MemSpace space, int id) const;
  // Frees the buffer (with all_cores, its twins on the other cores too).
  void free(const BufferRef& b, bool all_cores = false);

  // Allocates `shape` semaphores (ids in a buffer of space `semaphore`).
  BufferRef allocate_semaphores(int device, int core, DType kind, const Shape& shape, const std::string& name);
  BufferRef barrier_semaphore(int device, int64_t collective_id);
  Semaphore& semaphore(int64_t id);
  // `semaphore "in_sem"[1]`.
  std::string semaphore_name(int64_t id);

  // Semaphore operations; `who` is the acting global core (race clocks).
  void signal(int64_t sem, int target_gc, int64_t inc, const VectorClock* clock);
  // Blocks until the semaphore of core `gc` holds `value`, then subtracts it.
  // With `run_work`, first runs the DMA work queued on it (on_wait mode).
  void wait(int64_t sem, int gc, int64_t value, bool run_work, const std::string& where);
  // The next semaphore id of `device` (its core 0): semaphores allocated from
  // now on have ids >= the mark.
  int64_t semaphore_mark(int device) { return next_sem_id_[global_core(device, 0)]; }
  // Forgets the semaphores allocated since `mark` (a kernel has exited).
  void release_semaphores(int64_t mark);
  // Runs the on_wait DMA work still queued on the semaphores of `device` (DMAs
  // nobody waited for), so the kernel-exit check sees their signals exactly as
  // it would in eager mode instead of the copies vanishing.
  void run_pending_dma_work(int device);
  // Semaphores of `device` with a non-zero count: (name, global core, count).
  std::vector<std::tuple<std::string, int, int64_t>> nonzero_semaphores(int device);

  // DMA engine.
  struct DmaRequest {
    BufferRef src;
    Region src_region;
    int dst_device, dst_core;
    MemSpace dst_space;
    int dst_id;
    Region dst_region;
    std::string dst_name;
    int64_t dst_sem = -1, src_sem = -1;
    int src_gc = 0, dst_gc = 0;
    Loc loc;
    std::string where;   // " in dma_start at LOC on device D core C", for messages
    std::string issuer;  // "dma_start on device D core C", for race reports (which add LOC)
    // A gather (rows of the source) or scatter (rows of the destination):
    // that side's region has [0, n) in dim 0, and the DMA moves row rows[i]
    // of it instead of row i. `add`: a scatter accumulates into the rows.
    enum class Rows : uint8_t { none, src, dst } indexed = Rows::none;
    std::vector<int64_t> rows;
    bool add = false;
    std::string offsets_name;  // the offsets' buffer, for messages
  };
  void dma_start(const DmaRequest& req, int issuer_gc);

  // Blocks until `b.size` participants have arrived; joins their clocks.
  void barrier(BarrierState& b, int gc, const std::string& what);

  // Race detection (when enabled).
  RaceDetector& races() { return races_; }
  VectorClock& clock(int gc);
  // The happens-before edges of a group of cores that `parent_gc` starts and
  // waits for (pallas_call's cores, core_map's): each core starts after what
  // the parent did so far, and the parent continues after everything each
  // core did. No-ops without race detection.
  void fork_clocks(int parent_gc, const std::vector<int>& cores_gc);
  void join_clocks(int parent_gc, const std::vector<int>& cores_gc);
  void on_read(const MemBuffer& b, const Region& r, int gc, const std::string& what, const Loc& loc);
  void on_write(const MemBuffer& b, const Region& r, int gc, const std::string& what, const Loc& loc);
  void access(const MemBuffer& b, const Region& r, bool write, int thread, const VectorClock& clock,
              const std::string& what, const Loc& loc);
  Timeline* timeline() const { return timeline_; }

  // Grid-point trace.
  void record(int device, int core, const std::vector<int64_t>& point);
  const std::vector<std::string>& trace() const { return trace_; }

 private:
  friend struct Dma;
  const RunOptions& opts_;
  Scheduler& sched_;
  std::map<std::tuple<int, int, int, int>, BufferRef> buffers_;  // (device, core, space, id)
  std::map<std::pair<int, int>, int> next_buffer_id_;
  std::map<int, int64_t> next_sem_id_;                            // per global core
  std::map<int64_t, Semaphore> sems_;
  std::vector<std::string> trace_;
  std::map<int, VectorClock> clocks_;
  RaceDetector races_;
  int next_dma_thread_;
  Timeline* timeline_;
  std::map<int, int> dma_issuer_;  // with a timeline: DMA thread -> the global core that started it
};

}  // namespace tessera::interp::tpu
