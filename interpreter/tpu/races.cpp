#include "interpreter/tpu/races.h"

namespace tessera::interp::tpu {
namespace {

int64_t last_of(const Sel& s) { return s.start + (s.size - 1) * s.stride; }

std::string access_str(const std::string& buffer, const Access& a) {
  std::string s = (a.write ? "write of " : "read of ") + buffer + region_str(a.region) + " by " + a.what;
  if (a.loc.known()) s += " at " + a.loc.str();
  return s;
}

}  // namespace

bool regions_overlap(const Region& a, const Region& b) {
  if (a.size() != b.size()) return true;
  for (size_t d = 0; d < a.size(); ++d) {
    const Sel &x = a[d], &y = b[d];
    if (x.size == 0 || y.size == 0) return false;
    if (last_of(x) < y.start || last_of(y) < x.start) return false;
    if (x.stride == y.stride && x.stride > 1 && (x.start - y.start) % x.stride != 0) return false;
  }
  return true;
}

bool region_contains(const Region& outer, const Region& inner) {
  if (outer.size() != inner.size()) return false;
  for (size_t d = 0; d < outer.size(); ++d) {
    const Sel &o = outer[d], &i = inner[d];
    if (i.size == 0) continue;
    if (i.start < o.start || last_of(i) > last_of(o)) return false;
    if (o.stride != 1 && (i.stride % o.stride != 0 || (i.start - o.start) % o.stride != 0)) return false;
  }
  return true;
}

void RaceDetector::check(const std::tuple<int, int, int, int>& key, const std::string& buffer, const Access& a,
                         const VectorClock& clock) {
  std::vector<Access>& log = log_[key];
  for (const Access& p : log) {
    if (p.thread == a.thread || (!p.write && !a.write)) continue;
    if (clock.get(p.thread) >= p.epoch) continue;  // p happens before a
    if (!regions_overlap(p.region, a.region)) continue;
    throw Error(a.loc, "RACE DETECTED\n  " + access_str(buffer, a) + "\n  " + access_str(buffer, p) +
                           "\n  neither happens before the other (no semaphore, DMA wait or barrier orders them)");
  }
  // Drop accesses that this one subsumes (they happen before it, it covers
  // them, and it is at least as strong): a later conflict with them would
  // also conflict with this access.
  std::erase_if(log, [&](const Access& p) {
    return clock.get(p.thread) >= p.epoch && (a.write || !p.write) && region_contains(a.region, p.region);
  });
  log.push_back(a);
}

}  // namespace tessera::interp::tpu
