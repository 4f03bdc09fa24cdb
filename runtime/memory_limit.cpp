#include "runtime/memory_limit.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "ir/diagnostics.h"

namespace tessera::interp {
namespace detail {
std::atomic<int64_t> bytes_in_use{0};
}  // namespace detail

namespace {
std::atomic<int64_t> limit{default_memory_limit()};
}  // namespace

int64_t default_memory_limit() {
  constexpr int64_t kDefault = int64_t{8} << 30;
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return kDefault;
  return std::min(kDefault, static_cast<int64_t>(pages) / 2 * page);
}

int64_t memory_limit() { return limit.load(std::memory_order_relaxed); }
int64_t memory_in_use() { return detail::bytes_in_use.load(std::memory_order_relaxed); }

bool allocation_fits(int64_t bytes) {
  int64_t max = memory_limit();
  return max <= 0 || (bytes <= max && memory_in_use() <= max - bytes);
}

void fail_allocation(int64_t bytes, const std::string& what) {
  int64_t max = memory_limit(), used = memory_in_use();
  throw Error("allocating " + what + " (" + bytes_str(bytes) + ") would exceed the memory limit of " + bytes_str(max) +
              " with " + bytes_str(used) + " already in use (tessera run --max-memory sets the limit)");
}

std::string bytes_str(int64_t bytes) {
  static const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + " bytes";
  double v = static_cast<double>(bytes);
  int u = -1;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g %s", v, units[u]);
  return buf;
}

MemoryLimitScope::MemoryLimitScope(int64_t l) : previous_(limit.exchange(l)) {}
MemoryLimitScope::~MemoryLimitScope() { limit.store(previous_); }

}  // namespace tessera::interp
