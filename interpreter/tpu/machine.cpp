#include "interpreter/tpu/machine.h"

#include <algorithm>
#include <optional>

namespace tessera::interp::tpu {
namespace {

bool is_hbm(MemSpace s) { return s == MemSpace::any || s == MemSpace::hbm; }

}  // namespace

std::string MemBuffer::describe() const {
  std::string s = std::string(mem_space_name(space)) + " buffer";
  if (!name.empty()) s += " of " + name;
  return s + " (device " + std::to_string(device) + ", core " + std::to_string(core) + ")";
}

// A DMA in flight: read the source, then write the destination, signalling
// the send / receive semaphores with the byte count (as
// jax/_src/pallas/mosaic/interpret/interpret_pallas_call.py does).
struct Dma {
  Machine::DmaRequest req;
  int thread = 0;
  int64_t timeline_id = -1;  // its async event on the timeline
  VectorClock clock;
  bool read_done = false, write_done = false;
  Array data;

  int64_t bytes() const { return region_elements(req.src_region) * dtype_bytes(req.src->data.dtype()); }

  void read(Machine& m) {
    if (read_done) return;
    read_done = true;
    const MemBuffer& src = *req.src;
    bool gather = req.indexed == Machine::DmaRequest::Rows::src;
    bool oob = !gather && !region_in_bounds(req.src_region, src.data.shape());
    if (oob && m.opts().oob == RunOptions::Oob::raise)
      throw Error(req.loc, "dma_start: Out-of-bounds read of " + src.describe() + ": reading " + region_str(req.src_region) +
                               " but buffer has shape " + shape_str(src.data.shape()) + req.where);
    if (m.timeline()) m.timeline()->tick();
    clock.tick(thread);
    if (gather) data = gather_rows(m, src);
    else {
      m.access(src, req.src_region, false, thread, clock, who(), req.loc);
      data = read_region(src.data, req.src_region, true, m.uninit_zero());
    }
    clock.tick(thread);
    if (req.src_sem >= 0) m.signal(req.src_sem, req.src_gc, bytes(), &clock);
  }

  std::string who() const { return "DMA " + std::to_string(thread - kDmaThread0) + " of " + req.issuer; }

  // Row `row` of an indexed region: dim 0 a point (dropped), the rest as given.
  static Region row_region(Region r, int64_t row, bool keep) {
    r[0] = Sel{row, 1, 1, keep};
    return r;
  }

  std::string bad_offset(const char* access, const MemBuffer& b, size_t i) const {
    return "dma_start: Out-of-bounds " + std::string(access) + " of " + b.describe() + ": offset " + std::to_string(req.rows[i]) +
           " (element " + std::to_string(i) + " of the offsets in " + req.offsets_name + ") is not a row of shape " +
           shape_str(b.data.shape()) + req.where;
  }

  // rows[i] of the source, stacked (out-of-range rows read as uninitialized
  // memory when --oob allows it).
  Array gather_rows(Machine& m, const MemBuffer& src) {
    Array out = uninitialized_array(src.data.dtype(), region_shape(req.src_region), m.uninit_zero());
    for (size_t i = 0; i < req.rows.size(); ++i) {
      Region r = row_region(req.src_region, req.rows[i], false);
      if (!region_in_bounds(r, src.data.shape())) {
        if (m.opts().oob == RunOptions::Oob::raise) throw Error(req.loc, bad_offset("read", src, i));
        continue;
      }
      m.access(src, row_region(req.src_region, req.rows[i], true), false, thread, clock, who(), req.loc);
      put_index(out, 0, static_cast<int64_t>(i), read_region(src.data, r));
    }
    return out;
  }

  // Row i of the data into rows[i] of the destination (added with `add`).
  void scatter_rows(Machine& m, MemBuffer& dst) {
    Array value = data.reshaped(region_shape(req.dst_region));
    for (size_t i = 0; i < req.rows.size(); ++i)
      if (!region_in_bounds(row_region(req.dst_region, req.rows[i], false), dst.data.shape()))
        throw Error(req.loc, bad_offset("write", dst, i));
    for (size_t i = 0; i < req.rows.size(); ++i) {
      m.access(dst, row_region(req.dst_region, req.rows[i], true), true, thread, clock, who(), req.loc);
      Array part = take_index(value, 0, static_cast<int64_t>(i));
      Region r = row_region(req.dst_region, req.rows[i], false);
      if (req.add) accumulate_region(dst.writable(), r, part);
      else write_region(dst.writable(), r, part);
    }
  }

  void write(Machine& m) {
    read(m);
    if (write_done) return;
    write_done = true;
    BufferRef dst = m.find(req.dst_device, req.dst_core, req.dst_space, req.dst_id);
    if (!dst)
      throw Error(req.loc, "dma_start: the destination " + req.dst_name + " does not exist on device " +
                               std::to_string(req.dst_device) + " (has that device started the kernel?)" + req.where);
    bool scatter = req.indexed == Machine::DmaRequest::Rows::dst;
    if (!scatter && !region_in_bounds(req.dst_region, dst->data.shape()))
      throw Error(req.loc, "dma_start: Out-of-bounds write of " + dst->describe() + ": writing " + region_str(req.dst_region) +
                               " but buffer has shape " + shape_str(dst->data.shape()) + req.where);
    if (m.timeline()) m.timeline()->tick();
    clock.tick(thread);
    if (scatter) scatter_rows(m, *dst);
    else {
      m.access(*dst, req.dst_region, true, thread, clock, who(), req.loc);
      Array value = data.reshaped(region_shape(req.dst_region));
      if (region_is_full(req.dst_region, dst->data.shape())) dst->data = value.reshaped(dst->data.shape());
      else write_region(dst->writable(), req.dst_region, value);
    }
    data = Array();
    clock.tick(thread);
    m.signal(req.dst_sem, req.dst_gc, bytes(), &clock);
  }
};

Machine::Machine(const RunOptions& opts, Scheduler& sched, Timeline* timeline)
    : opts_(opts), sched_(sched), next_dma_thread_(kDmaThread0), timeline_(timeline) {}
Machine::~Machine() = default;

BufferRef Machine::allocate(int device, int core, MemSpace space, const Array& init, const std::string& name) {
  // HBM lives once per device (keyed as core 0); other spaces once per core.
  std::vector<int> cores;
  if (is_hbm(space)) cores = {0};
  else if (core < 0)
    for (int c = 0; c < opts_.cores; ++c) cores.push_back(c);
  else cores = {core};
  // One id for all copies, past every involved core's counter; an HBM buffer
  // advances every core's counter so ids stay in step across cores.
  int id = 0;
  for (int c : cores) id = std::max(id, next_buffer_id_[{device, c}]);
  for (int c = 0; c < opts_.cores; ++c)
    if (is_hbm(space) || std::find(cores.begin(), cores.end(), c) != cores.end()) next_buffer_id_[{device, c}] = std::max(next_buffer_id_[{device, c}], id + 1);
  BufferRef result;
  for (int c : cores) {
    auto b = std::make_shared<MemBuffer>();
    b->data = init;  // shares until first written (copy-on-write)
    b->space = space;
    b->id = id;
    b->device = device;
    b->core = c;
    b->name = name;
    buffers_[{device, c, static_cast<int>(space), id}] = b;
    if (!result || c == core) result = b;
  }
  return result;
}

BufferRef Machine::find(int device, int core, MemSpace space, int id) const {
  if (is_hbm(space)) core = 0;
  auto it = buffers_.find({device, core, static_cast<int>(space), id});
  if (it == buffers_.end() || it->second->freed) return nullptr;
  return it->second;
}

void Machine::free(const BufferRef& b, bool all_cores) {
  int n = all_cores && !is_hbm(b->space) ? opts_.cores : 1;
  for (int i = 0; i < n; ++i) {
    int c = all_cores ? i : b->core;
    auto key = std::make_tuple(b->device, c, static_cast<int>(b->space), b->id);
    auto it = buffers_.find(key);
    if (it == buffers_.end()) continue;
    it->second->freed = true;
    buffers_.erase(it);
    if (opts_.detect_races) races_.forget(key);
  }
}

BufferRef Machine::allocate_semaphores(int device, int core, DType kind, const Shape& shape, const std::string& name) {
  Array ids = Array::uninitialized(kind, shape);
  int64_t n = ids.size();
  // Each semaphore is also an entry of its own in sems_, far larger than its id.
  int64_t bytes = 0;
  if (__builtin_mul_overflow(n, static_cast<int64_t>(sizeof(Semaphore) + 64), &bytes)) bytes = INT64_MAX;
  if (!allocation_fits(bytes)) fail_allocation(bytes, std::to_string(n) + " semaphores for " + name);
  int64_t base = -1;
  for (int c = core < 0 ? 0 : core; c < (core < 0 ? opts_.cores : core + 1); ++c) {
    int64_t& next = next_sem_id_[global_core(device, c)];
    if (base < 0) base = next;
    next = std::max(next, base) + n;
  }
  for (int64_t i = 0; i < n; ++i) {
    ids.data<int32_t>()[i] = static_cast<int32_t>(base + i);
    Semaphore& s = sems_[base + i];
    s.id = base + i;
    if (s.name.empty()) s.name = shape.empty() ? name : name + "[" + std::to_string(i) + "]";
  }
  auto b = std::make_shared<MemBuffer>();
  b->data = ids;
  b->space = MemSpace::semaphore;
  b->id = static_cast<int>(base);
  b->device = device;
  b->core = core < 0 ? 0 : core;
  b->name = name;
  return b;
}

BufferRef Machine::barrier_semaphore(int device, int64_t collective_id) {
  int64_t id = -1 - collective_id;  // barrier semaphores: fixed negative ids per collective
  Semaphore& s = sems_[id];
  s.id = id;
  if (s.name.empty()) s.name = "barrier semaphore of collective " + std::to_string(collective_id);
  auto b = std::make_shared<MemBuffer>();
  b->data = Array::uninitialized(DType::barrier_sem, {});
  b->data.data<int32_t>()[0] = static_cast<int32_t>(id);
  b->space = MemSpace::semaphore;
  b->device = device;
  b->id = static_cast<int>(id);
  b->name = s.name;
  return b;
}

Semaphore& Machine::semaphore(int64_t id) {
  auto it = sems_.find(id);
  if (it == sems_.end()) throw Error("unknown semaphore id " + std::to_string(id));
  return it->second;
}

std::string Machine::semaphore_name(int64_t id) {
  auto it = sems_.find(id);
  return it == sems_.end() ? "semaphore " + std::to_string(id) : "semaphore " + it->second.name;
}

void Machine::signal(int64_t sem, int target_gc, int64_t inc, const VectorClock* clock) {
  Semaphore& s = semaphore(sem);
  s.count[target_gc] += inc;
  if (opts_.detect_races && clock) s.clock[target_gc].join(*clock);
}

void Machine::wait(int64_t sem, int gc, int64_t value, bool run_work, const std::string& where) {
  if (value < 0) throw Error("semaphore wait for a negative amount " + std::to_string(value));
  std::optional<Timeline::Span> span;
  if (timeline_)
    span.emplace(*timeline_, gc, run_work ? "dma_wait" : "semaphore_wait", "wait",
                 TraceArgs{arg("semaphore", semaphore_name(sem)), arg("value", value)});
  while (true) {
    Semaphore& s = semaphore(sem);
    if (run_work) {
      auto& q = s.work[gc];
      while (!q.empty()) {
        std::function<void()> job = std::move(q.front());
        q.pop_front();
        job();
      }
    }
    Semaphore& s2 = semaphore(sem);
    if (s2.count[gc] >= value) {
      s2.count[gc] -= value;
      if (timeline_) timeline_->waited(sem, gc, value);
      if (opts_.detect_races) {
        VectorClock& mine = clock(gc);
        mine.join(s2.clock[gc]);
        mine.tick(gc);
      }
      return;
    }
    sched_.wait_until(
        [this, sem, gc, value, run_work] {
          Semaphore& t = sems_[sem];
          return t.count[gc] >= value || (run_work && !t.work[gc].empty());
        },
        [this, sem, gc, value, where] {
          return semaphore_name(sem) + " to reach " + std::to_string(value) + " (it holds " +
                 std::to_string(sems_[sem].count[gc]) + ")" + where;
        });
  }
}

void Machine::release_semaphores(int64_t mark) {
  for (auto it = sems_.lower_bound(std::max<int64_t>(mark, 0)); it != sems_.end();) {
    bool idle = true;
    for (auto& [gc, n] : it->second.count) idle &= n == 0;
    for (auto& [gc, q] : it->second.work) idle &= q.empty();
    it = idle ? sems_.erase(it) : std::next(it);
  }
}

void Machine::run_pending_dma_work(int device) {
  for (auto& [id, s] : sems_)
    for (auto& [gc, q] : s.work)
      while (gc / opts_.cores == device && !q.empty()) {
        std::function<void()> job = std::move(q.front());
        q.pop_front();
        job();
      }
}

std::vector<std::tuple<std::string, int, int64_t>> Machine::nonzero_semaphores(int device) {
  std::vector<std::tuple<std::string, int, int64_t>> out;
  for (auto& [id, s] : sems_)
    for (auto& [gc, n] : s.count)
      if (n != 0 && gc / opts_.cores == device) out.emplace_back(s.name, gc, n);
  return out;
}

void Machine::dma_start(const DmaRequest& req, int issuer_gc) {
  auto dma = std::make_shared<Dma>();
  dma->req = req;
  dma->thread = next_dma_thread_++;
  if (timeline_) {
    // From its start to the wait that takes its bytes from the destination semaphore.
    std::string src_space(mem_space_name(req.src->space)), dst_space(mem_space_name(req.dst_space));
    BufferRef dst = find(req.dst_device, req.dst_core, req.dst_space, req.dst_id);  // req.dst_name is the issuer's twin
    // The indexed side of a gather / scatter moves the rows its offsets name, not [0, n).
    auto rows = [&](DmaRequest::Rows side) {
      return req.indexed == side ? " (rows by the offsets in " + req.offsets_name + ")" : std::string();
    };
    TraceArgs args{arg("semaphore", semaphore_name(req.dst_sem)), arg("bytes", dma->bytes()),
                   arg("src", src_space), arg("dst", dst_space),
                   arg("src_buffer", req.src->describe() + region_str(req.src_region) + rows(DmaRequest::Rows::src)),
                   arg("dst_buffer", (dst ? dst->describe() : req.dst_name) + region_str(req.dst_region) + rows(DmaRequest::Rows::dst))};
    if (req.dst_device != req.src->device) args.push_back(arg("dst_device", static_cast<int64_t>(req.dst_device)));
    dma->timeline_id = timeline_->async_begin(issuer_gc, "DMA " + src_space + "->" + dst_space, "dma", std::move(args));
    timeline_->expect_wait(req.dst_sem, req.dst_gc, dma->bytes(), dma->timeline_id);
    dma_issuer_[dma->thread] = issuer_gc;
  }
  if (opts_.detect_races) {
    VectorClock& mine = clock(issuer_gc);
    dma->clock = mine;
    mine.tick(issuer_gc);
  }
  if (opts_.dma == RunOptions::Dma::eager) {
    dma->write(*this);
    return;
  }
  // on_wait: the copy happens when someone waits on one of its semaphores.
  if (req.src_sem >= 0) semaphore(req.src_sem).work[req.src_gc].push_back([this, dma] { dma->read(*this); });
  semaphore(req.dst_sem).work[req.dst_gc].push_back([this, dma] { dma->write(*this); });
}

void Machine::barrier(BarrierState& b, int gc, const std::string& what) {
  int64_t gen = b.generation;
  if (opts_.detect_races) b.joined.join(clock(gc));
  if (++b.arrived == b.size) {
    b.arrived = 0;
    ++b.generation;
  } else {
    std::optional<Timeline::Span> span;
    if (timeline_) span.emplace(*timeline_, gc, "barrier", "wait", TraceArgs{arg("for", what)});
    sched_.wait_until([&b, gen] { return b.generation != gen; }, [what] { return what; });
  }
  if (opts_.detect_races) {
    VectorClock& mine = clock(gc);
    mine.join(b.joined);
    mine.tick(gc);
  }
}

VectorClock& Machine::clock(int gc) {
  auto it = clocks_.find(gc);
  if (it == clocks_.end()) {
    it = clocks_.emplace(gc, VectorClock{}).first;
    it->second.tick(gc);
  }
  return it->second;
}

void Machine::fork_clocks(int parent_gc, const std::vector<int>& cores_gc) {
  if (!opts_.detect_races) return;
  for (int c : cores_gc) {
    if (c == parent_gc) continue;
    clock(c).join(clock(parent_gc));
    clock(c).tick(c);
  }
  // The parent's later accesses are not ordered before the cores' ones.
  clock(parent_gc).tick(parent_gc);
}

void Machine::join_clocks(int parent_gc, const std::vector<int>& cores_gc) {
  if (!opts_.detect_races) return;
  for (int c : cores_gc)
    if (c != parent_gc) clock(parent_gc).join(clock(c));
  clock(parent_gc).tick(parent_gc);
}

void Machine::access(const MemBuffer& b, const Region& r, bool write, int thread, const VectorClock& clock,
                     const std::string& what, const Loc& loc) {
  if (!opts_.detect_races || b.is_semaphore()) return;
  Access a{thread, clock.get(thread), write, r, what, loc};
  try {
    races_.check({b.device, b.core, static_cast<int>(b.space), b.id}, b.describe(), a, clock);
  } catch (const Error& e) {
    if (timeline_) {
      auto issuer = dma_issuer_.find(thread);
      timeline_->instant(issuer != dma_issuer_.end() ? issuer->second : thread, "race", "race",
                         {arg("buffer", b.describe()), arg("message", e.message())});
    }
    throw;
  }
}

void Machine::on_read(const MemBuffer& b, const Region& r, int gc, const std::string& what, const Loc& loc) {
  if (opts_.detect_races) access(b, r, false, gc, clock(gc), what, loc);
}

void Machine::on_write(const MemBuffer& b, const Region& r, int gc, const std::string& what, const Loc& loc) {
  if (opts_.detect_races) access(b, r, true, gc, clock(gc), what, loc);
}

void Machine::record(int device, int core, const std::vector<int64_t>& point) {
  trace_.push_back("device " + std::to_string(device) + " core " + std::to_string(core) + " point " + ints_str(point));
}

}  // namespace tessera::interp::tpu
