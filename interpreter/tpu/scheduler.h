// Threads of control (cores, devices) under a deterministic scheduler.
//
// Every simulated core or device runs on its own OS thread, but only the
// thread holding the scheduler's token executes; the token moves only at
// well-defined points (a wait that cannot proceed, a task's end, a seeded
// preemption point). So a run is reproducible for a given seed, the simulated
// state needs no locks, and a state where every thread waits on something
// that can never happen is detected and reported as a deadlock instead of
// hanging.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ir/diagnostics.h"

namespace tessera::interp::tpu {

// Thrown out of a wait in a non-root task when another task failed: unwinds
// the task's stack; the root task rethrows the original error.
struct Aborted {};

// How the root task rethrows another task's error. That error already says
// where it happened (its op, kernel, grid point and device), so the root's
// kernel and index-map frames, which it unwinds through, must not add the
// root's own (pallas_call.cpp lets it pass).
class TaskFailure : public Error {
 public:
  explicit TaskFailure(const Error& e) : Error(e) {}
};

class Scheduler {
 public:
  explicit Scheduler(uint64_t seed);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Starts `fn` as a new thread of control; it runs once given the token.
  int spawn(std::string name, std::function<void()> fn);
  // Blocks the calling task until `ready()` holds. `what` says what it waits
  // for (reported on deadlock). `ready` is evaluated by whichever task holds
  // the token and must only read simulated state.
  void wait_until(const std::function<bool()>& ready, const std::function<std::string()>& what);
  // Waits until the tasks have finished.
  void join(const std::vector<int>& tasks);
  // A point where the token may move to another runnable task (seeded).
  void maybe_yield();
  // The id of the calling task (0 = the thread that created the scheduler).
  int current() const;
  // Renames the calling task (a deadlock report names tasks); returns the old name.
  std::string rename_current(std::string name);
  bool multi() const { return tasks_.size() > 1; }

 private:
  enum class State { runnable, blocked, done };
  struct Task {
    std::string name;
    State state = State::runnable;
    std::function<bool()> ready;
    std::function<std::string()> what;
    std::thread thread;
  };

  // With mu_ held: picks the next task to run, or -1 if none can run.
  int pick(bool include_self);
  // With mu_ held: gives the token to `next` and waits for it to come back.
  void hand_over(std::unique_lock<std::mutex>& lock, int self, int next);
  [[noreturn]] void fail_deadlock(std::unique_lock<std::mutex>& lock, int self);
  [[noreturn]] void throw_abort(int self);
  void record_failure(const Error& e);

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Task>> tasks_;
  int running_ = 0;
  bool abort_ = false;
  std::optional<Error> failure_;
  std::mt19937_64 rng_;
};

}  // namespace tessera::interp::tpu
