#include "interpreter/tpu/scheduler.h"

namespace tessera::interp::tpu {
namespace {
thread_local int tls_task = 0;
}

Scheduler::Scheduler(uint64_t seed) : rng_(seed) {
  auto root = std::make_unique<Task>();
  root->name = "device 0 core 0";
  tasks_.push_back(std::move(root));
  tls_task = 0;
}

Scheduler::~Scheduler() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    bool all_done = true;
    for (size_t i = 1; i < tasks_.size(); ++i) all_done &= tasks_[i]->state == State::done;
    if (!all_done) abort_ = true;
  }
  cv_.notify_all();
  for (auto& t : tasks_)
    if (t->thread.joinable()) t->thread.join();
}

int Scheduler::current() const { return tls_task; }

std::string Scheduler::rename_current(std::string name) {
  std::lock_guard<std::mutex> guard(mu_);
  std::swap(tasks_[static_cast<size_t>(tls_task)]->name, name);
  return name;
}

void Scheduler::record_failure(const Error& e) {
  if (!failure_) failure_ = e;
  abort_ = true;
}

void Scheduler::throw_abort(int self) {
  if (self == 0 && failure_) throw TaskFailure(*failure_);
  if (self == 0) throw Error("interpreter aborted");
  throw Aborted{};
}

int Scheduler::spawn(std::string name, std::function<void()> fn) {
  std::lock_guard<std::mutex> guard(mu_);
  int id = static_cast<int>(tasks_.size());
  auto task = std::make_unique<Task>();
  task->name = std::move(name);
  Task* t = task.get();
  tasks_.push_back(std::move(task));
  t->thread = std::thread([this, id, fn = std::move(fn)] {
    tls_task = id;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return running_ == id || abort_; });
      if (abort_) {
        tasks_[id]->state = State::done;
        cv_.notify_all();
        return;
      }
    }
    try {
      fn();
    } catch (const Aborted&) {
    } catch (const Error& e) {
      std::lock_guard<std::mutex> lock(mu_);
      record_failure(e);
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(mu_);
      record_failure(Error(std::string("internal error: ") + e.what()));
    }
    std::unique_lock<std::mutex> lock(mu_);
    tasks_[id]->state = State::done;
    if (!abort_ && running_ == id) {
      int next = pick(false);
      if (next < 0) {
        // Everyone left is waiting: nobody can ever wake them.
        std::string msg = "deadlock: every core is waiting and none can proceed:";
        for (auto& other : tasks_)
          if (other->state == State::blocked) msg += "\n  " + other->name + " waits for " + other->what();
        record_failure(Error(msg));
      } else {
        running_ = next;
      }
    }
    cv_.notify_all();
  });
  return id;
}

int Scheduler::pick(bool include_self) {
  int self = tls_task;
  std::vector<int> cands;
  for (size_t i = 0; i < tasks_.size(); ++i) {
    Task& t = *tasks_[i];
    if (static_cast<int>(i) == self && !include_self) continue;
    if (t.state == State::runnable || (t.state == State::blocked && t.ready && t.ready())) cands.push_back(static_cast<int>(i));
  }
  if (cands.empty()) return -1;
  if (cands.size() == 1) return cands[0];
  std::uniform_int_distribution<size_t> dist(0, cands.size() - 1);
  return cands[dist(rng_)];
}

void Scheduler::hand_over(std::unique_lock<std::mutex>& lock, int self, int next) {
  running_ = next;
  cv_.notify_all();
  cv_.wait(lock, [&] { return running_ == self || abort_; });
  if (abort_) {
    lock.unlock();
    throw_abort(self);
  }
}

void Scheduler::fail_deadlock(std::unique_lock<std::mutex>& lock, int self) {
  std::string msg = "deadlock: every core is waiting and none can proceed:";
  for (auto& t : tasks_)
    if (t->state == State::blocked) msg += "\n  " + t->name + " waits for " + t->what();
  Error e(msg);
  record_failure(e);
  cv_.notify_all();
  lock.unlock();
  throw_abort(self);
}

void Scheduler::wait_until(const std::function<bool()>& ready, const std::function<std::string()>& what) {
  if (ready()) return;
  int self = tls_task;
  std::unique_lock<std::mutex> lock(mu_);
  if (abort_) {
    lock.unlock();
    throw_abort(self);
  }
  Task& me = *tasks_[self];
  me.state = State::blocked;
  me.ready = ready;
  me.what = what;
  int next = pick(false);
  if (next < 0) fail_deadlock(lock, self);
  hand_over(lock, self, next);
  me.state = State::runnable;
  me.ready = nullptr;
  me.what = nullptr;
}

void Scheduler::join(const std::vector<int>& ids) {
  wait_until(
      [this, ids] {
        for (int id : ids)
          if (tasks_[id]->state != State::done) return false;
        return true;
      },
      [this, ids] {
        std::string s = "the end of";
        for (int id : ids)
          if (tasks_[id]->state != State::done) s += " [" + tasks_[id]->name + "]";
        return s;
      });
}

void Scheduler::maybe_yield() {
  if (tasks_.size() <= 1) return;
  int self = tls_task;
  std::unique_lock<std::mutex> lock(mu_);
  if (abort_) {
    lock.unlock();
    throw_abort(self);
  }
  // Switch at about one preemption point in eight: enough to interleave the
  // cores differently per seed without paying a thread switch per grid step.
  if (rng_() % 8 != 0) return;
  int next = pick(true);
  if (next < 0 || next == self) return;
  hand_over(lock, self, next);
}

}  // namespace tessera::interp::tpu
