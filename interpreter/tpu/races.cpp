#include "interpreter/tpu/races.h"

#include <algorithm>

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

std::vector<std::vector<int64_t>> RaceDetector::cells_of(const BufferLog& log, const Region& r) {
  if (r.size() != log.cell.size()) return {};
  std::vector<int64_t> lo(r.size()), hi(r.size());
  int64_t n = 1;
  for (size_t d = 0; d < r.size(); ++d) {
    if (r[d].size <= 0) return {};
    lo[d] = r[d].start / log.cell[d];
    hi[d] = last_of(r[d]) / log.cell[d];
    n *= hi[d] - lo[d] + 1;
    if (n > kMaxCells) return {};
  }
  std::vector<std::vector<int64_t>> out;
  std::vector<int64_t> at = lo;
  while (true) {
    out.push_back(at);
    size_t d = r.size();
    while (d > 0 && at[d - 1] == hi[d - 1]) at[d - 1] = lo[d - 1], --d;
    if (d == 0) return out;
    ++at[d - 1];
  }
}

void RaceDetector::check(const std::tuple<int, int, int, int>& key, const std::string& buffer, const Access& a,
                         const VectorClock& clock) {
  BufferLog& log = log_[key];
  if (log.cell.empty() && log.accesses.empty())
    for (const Sel& s : a.region) log.cell.push_back(std::max<int64_t>(1, last_of(s) - s.start + 1));
  std::vector<std::vector<int64_t>> cells = cells_of(log, a.region);
  uint64_t stamp = ++checks_;
  auto visit = [&](uint32_t i) {
    if (!log.alive[i] || log.seen[i] == stamp) return;
    log.seen[i] = stamp;
    const Access& p = log.accesses[i];
    bool before = clock.get(p.thread) >= p.epoch;  // p happens before a
    if (p.thread != a.thread && (p.write || a.write) && !before && regions_overlap(p.region, a.region))
      throw Error(a.loc, "RACE DETECTED\n  " + access_str(buffer, a) + "\n  " + access_str(buffer, p) +
                             "\n  neither happens before the other (no semaphore, DMA wait or barrier orders them)");
    // Drop accesses that this one subsumes (they happen before it, it covers
    // them, and it is at least as strong): a later conflict with them would
    // also conflict with this access.
    if (before && (a.write || !p.write) && region_contains(a.region, p.region)) {
      log.alive[i] = 0;
      ++log.dead;
    }
  };
  auto visit_all = [&](std::vector<uint32_t>& ids) {
    for (uint32_t i : ids) visit(i);
    std::erase_if(ids, [&](uint32_t i) { return !log.alive[i]; });
  };
  if (cells.empty()) {  // wide: every access may overlap it
    for (auto& [c, ids] : log.cells) visit_all(ids);
  } else {
    for (const std::vector<int64_t>& c : cells)
      if (auto it = log.cells.find(c); it != log.cells.end()) visit_all(it->second);
  }
  visit_all(log.wide);
  auto id = static_cast<uint32_t>(log.accesses.size());
  log.accesses.push_back(a);
  log.alive.push_back(1);
  log.seen.push_back(stamp);
  if (cells.empty()) log.wide.push_back(id);
  for (const std::vector<int64_t>& c : cells) log.cells[c].push_back(id);
  if (log.dead > 1024 && 2 * log.dead > log.accesses.size()) log.compact();
}

void RaceDetector::BufferLog::compact() {
  std::vector<uint32_t> renumber(accesses.size(), 0);
  size_t n = 0;
  for (size_t i = 0; i < accesses.size(); ++i)
    if (alive[i]) {
      renumber[i] = static_cast<uint32_t>(n);
      if (n != i) accesses[n] = std::move(accesses[i]);
      seen[n] = seen[i];
      ++n;
    }
  accesses.resize(n);
  seen.resize(n);
  auto remap = [&](std::vector<uint32_t>& ids) {
    std::erase_if(ids, [&](uint32_t i) { return !alive[i]; });
    for (uint32_t& i : ids) i = renumber[i];
  };
  for (auto it = cells.begin(); it != cells.end();) {
    remap(it->second);
    it = it->second.empty() ? cells.erase(it) : std::next(it);
  }
  remap(wide);
  alive.assign(n, 1);
  dead = 0;
}

}  // namespace tessera::interp::tpu
