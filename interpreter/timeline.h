// The run's timeline: a Chrome trace-event recorder (`tessera run --timeline`).
//
// Events follow the Trace Event Format that chrome://tracing and Perfetto
// read (and that JAX's profiler writes): devices are processes (pid), cores
// are threads (tid); a grid step, a block copy or a semaphore wait is a
// complete event ("X"), a DMA an async event ("b" at dma_start, "e" at the
// wait that consumes its signal), a race, a deadlock or a run-time error an
// instant event ("i").
//
// Time is logical: the interpreter has no clock worth showing, so the
// timeline keeps a counter that advances by one tick per op evaluated, per
// grid step, per block copy and per DMA copy (Interp::step, pallas_call.cpp,
// tpu/machine.cpp), written as one microsecond. The order of events is the
// order the deterministic scheduler ran them in, so the same run gives the
// same file, byte for byte.
//
// The interpreter holds a null Timeline* when --timeline is off: every hook
// is one pointer test.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::interp {

// One entry of an event's "args": a key and its value, already JSON.
struct TraceArg {
  std::string key, json;
};
TraceArg arg(std::string key, std::string_view text);
TraceArg arg(std::string key, const char* text);
TraceArg arg(std::string key, int64_t n);
TraceArg arg(std::string key, bool b);
TraceArg arg(std::string key, const std::vector<int64_t>& v);  // a JSON array
using TraceArgs = std::vector<TraceArg>;

class Timeline {
 public:
  // Threads are global cores: device = gc / cores_per_device, core = gc % cores_per_device.
  explicit Timeline(int cores_per_device) : cores_(cores_per_device < 1 ? 1 : cores_per_device) {}

  void tick() { now_.fetch_add(1, std::memory_order_relaxed); }
  int64_t now() const { return now_.load(std::memory_order_relaxed); }

  // A complete event on global core `gc`, from `start` to now.
  void complete(int gc, std::string name, std::string cat, int64_t start, TraceArgs args);
  // An instant event on core `gc`, or on the whole run (gc < 0).
  void instant(int gc, std::string name, std::string cat, TraceArgs args);
  // Opens an async event on core `gc`; returns its id.
  int64_t async_begin(int gc, std::string name, std::string cat, TraceArgs args);
  void async_end(int64_t id, TraceArgs args = {});

  // DMAs end at the wait that consumes their signal: `bytes` arriving on
  // semaphore `sem` of core `gc` belong to async event `id`...
  void expect_wait(int64_t sem, int gc, int64_t bytes, int64_t id);
  // ... and a wait that took `value` from that semaphore ends the events
  // whose bytes it covers, oldest first.
  void waited(int64_t sem, int gc, int64_t value);

  // Ends the async events still open (with "unfinished": true), e.g. when
  // the run stops on an error.
  void close_open();
  // {"traceEvents": [...], ...}, with process and thread names first.
  std::string json() const;

  // A complete event from construction to destruction. Unwinding on an
  // error still records it, with "unfinished": true.
  class Span {
   public:
    Span(Timeline& t, int gc, std::string name, std::string cat, TraceArgs args = {});
    ~Span();
    Span(const Span&) = delete;
    Span& operator=(const Span&) = delete;
    void add(TraceArg a) { args_.push_back(std::move(a)); }

   private:
    Timeline& t_;
    int gc_;
    std::string name_, cat_;
    TraceArgs args_;
    int64_t start_;
    int exceptions_;
  };

 private:
  struct Event {
    char ph = 'X';
    std::string name, cat;
    int64_t ts = 0, dur = 0, id = -1;
    int gc = -1;  // -1: the whole run (global instant)
    TraceArgs args;
  };
  struct Pending {
    int64_t id, bytes;
  };
  void push(Event e);

  int cores_;
  std::atomic<int64_t> now_{0};
  // Tasks unwinding after another task failed run beside the token holder.
  mutable std::mutex mu_;
  std::vector<Event> events_;
  std::set<int> cores_seen_;
  std::map<int64_t, Event> open_;  // async events begun, not ended, by id
  std::map<std::pair<int64_t, int>, std::vector<Pending>> pending_;  // (semaphore, core) -> DMAs
  int64_t next_id_ = 0;
};

}  // namespace tessera::interp
