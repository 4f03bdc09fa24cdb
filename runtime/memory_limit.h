// The memory limit of a run. How much a program allocates is up to its text
// (array types, element padding, scratch, iota / broadcast shapes, grids), so
// every array buffer is counted, and one that would take the total past the
// limit is an Error naming the array, instead of a hang, an abort or the OOM
// killer. `tessera run --max-memory BYTES` sets it (docs/interpreter.md).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace tessera::interp {

// 8 GiB, or half of the physical memory when that is less.
int64_t default_memory_limit();
// The limit in force (0: none) and the bytes of array buffers alive now.
int64_t memory_limit();
int64_t memory_in_use();
// Whether `bytes` more fit under the limit (cheap: called for every array).
bool allocation_fits(int64_t bytes);
// The Error for an allocation that does not fit; `what` names it ("f32[8,128]").
[[noreturn]] void fail_allocation(int64_t bytes, const std::string& what);
// "4 TiB", "1.5 MiB", "100 bytes".
std::string bytes_str(int64_t bytes);

// Sets the limit (0: none) for the lifetime of the scope.
class MemoryLimitScope {
 public:
  explicit MemoryLimitScope(int64_t limit);
  ~MemoryLimitScope();
  MemoryLimitScope(const MemoryLimitScope&) = delete;
  MemoryLimitScope& operator=(const MemoryLimitScope&) = delete;

 private:
  int64_t previous_;
};

namespace detail {
// Array buffers call these (runtime/array.h's BufferAllocator).
extern std::atomic<int64_t> bytes_in_use;
inline void count_allocated(size_t n) { bytes_in_use.fetch_add(static_cast<int64_t>(n), std::memory_order_relaxed); }
inline void count_freed(size_t n) { bytes_in_use.fetch_sub(static_cast<int64_t>(n), std::memory_order_relaxed); }
}  // namespace detail

}  // namespace tessera::interp
