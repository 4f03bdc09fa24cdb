// `tessera prove`: formal checks of every pallas_call in a module, with Z3.
//
// Per pallas_call, eight kinds of obligation (docs/prove.md explains each and
// its encoding):
//   bounds          per input / output block mapping: every block index is
//                   valid for the padded array, at every grid point and for
//                   every scalar-prefetch value in its declared range;
//   non-revisiting  per output not aliased to an input: in every order the
//                   interpreter may visit the grid (parallel axes permuted by
//                   any seed, the parallel prefix split over any number of
//                   cores), a block once left is never written again;
//   parallel safety per output: grid points that differ on a parallel axis
//                   never write the same output block; per aliased input:
//                   they never read a block of the buffer the other writes;
//   kernel bounds   every indexed Ref access in the kernel stays inside its
//                   Ref, every multiple_of hint holds, and the integer code an
//                   index relies on does not overflow;
//   carried state   no grid step reads scratch or an output block before
//                   writing it where the previous step on its core has other
//                   parallel coordinates;
//   semaphore balance  every semaphore element is back at 0 when a grid step
//                   ends, and no wait asks for more than its step signalled
//                   before it (DMA bytes and semaphore_signal amounts), nor
//                   deadlocks across the devices of a pmap or the cores of
//                   a core_map;
//   DMA races       nothing touches an in-flight DMA's destination or writes
//                   its source before the wait that completes it;
//   output coverage per output with blocks: every element of a block that is
//                   copied out (and lies inside the array) was written during
//                   the block's visit.
// A core_map outside any pallas_call gets kernel bounds, semaphore balance,
// DMA races and core races (no two of its cores touch the same elements of
// a shared Ref, one writing, unordered) for its body.
// Proofs never enumerate the grid: cost does not depend on the grid's size.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/ir.h"

namespace tessera::prove {

// `NAME in [lo, hi)` (or `[lo, hi]`): the values of the scalar prefetch or
// dynamic grid size called NAME lie in the range.
struct Assumption {
  std::string name;
  int64_t lo = 0, hi = 0;  // half-open [lo, hi)
};
// Parses "idx in [0, 1024)"; throws Error with a clear message.
Assumption parse_assumption(std::string_view text);
// Assumptions written in a module's source as comment lines
// `# prove: assume idx in [0, 1024)` (comments are not part of the IR).
std::vector<Assumption> assumptions_in_source(std::string_view text);

struct Options {
  std::string func;                  // only pallas_calls reachable from this function ("" = all)
  // Z3's deterministic resource limit per query: low enough to fire well
  // before the wall clock (a cubic index map reaches it in ~2.5 s here), high
  // enough for every zoo query (they need under 10,000). docs/prove.md.
  unsigned rlimit = 1'000'000;
  unsigned timeout_ms = 10000;       // wall-clock backstop per Z3 query
  std::vector<Assumption> assumptions;
  std::string smt2_dir;              // write every query as SMT-LIB2 here ("" = no)
  bool use_intervals = true;         // settle cheap cases without Z3 (off: always ask Z3)
};

enum class Verdict { proved, failed, unknown };
std::string_view verdict_name(Verdict v);  // "proved", "FAILED", "unknown"

struct Obligation {
  std::string call;       // the pallas_call's name
  std::string subject;    // "in[1]", "out[0]", "kernel"
  std::string kind;       // "bounds", "non-revisiting", "parallel safety", "output coverage", "carried state",
                          // "semaphore balance", "DMA races", "core races"
  Verdict verdict = Verdict::unknown;
  std::string detail;     // the counterexample, or why it is unknown
  std::vector<std::vector<int64_t>> grid_points;  // counterexample grid points, in order
  std::string method;     // "intervals", "z3", "trivial"
  int queries = 0;        // Z3 queries asked
  double millis = 0;
  const Op* op = nullptr; // the pallas_call or core_map it is about (for drawing it: `prove --svg`)

  // "matmul out[0] non-revisiting: proved"
  std::string line() const;
};

std::vector<Obligation> prove_module(const Module& m, const Options& opts = {});
// How results name a pallas_call: its `name=` param, else its kernel's name
// without a trailing "_kernel" (prove_module numbers repeats "#2", "#3"...).
std::string call_name(const Op& pallas_call);
// Named axes around a call, outermost first, with their sizes: the enclosing
// pmaps' device axes (and a core_map's mesh axes). Device ids are flat over
// them, the outermost major, as the interpreter numbers devices.
using AxisSizes = std::vector<std::pair<std::string, int64_t>>;
// For a call inside pmaps: the device axes along which each scalar-prefetch
// operand and each dynamic grid size may differ from device to device (an
// operand split by the pmap, or computed from axis_index); empty: shared.
// A value known on every device: device coordinates along the enclosing
// axes (outermost first) -> its elements in row-major order.
using DeviceTable = std::map<std::vector<int64_t>, std::vector<int64_t>>;
struct PerDevice {
  std::vector<std::vector<std::string>> prefetch;   // per scalar-prefetch operand
  std::vector<std::vector<std::string>> grid_size;  // per grid axis
  // The values each device computes for them (literals, iota, axis_index
  // and integer arithmetic), nullopt where not known.
  std::vector<std::optional<DeviceTable>> prefetch_values;
  std::vector<std::optional<DeviceTable>> grid_size_values;
};
// The obligations of one pallas_call op; `name` names it in the results.
// `axis_sizes`: the device axes of enclosing pmaps, for axis_index.
std::vector<Obligation> prove_call(const Op& pallas_call, const std::string& name, const Options& opts = {},
                                   const AxisSizes& axis_sizes = {}, const PerDevice& per_device = {});

// 0: all proved; 1: some failed; 3: none failed, some unknown.
int exit_code(const std::vector<Obligation>& obs);
std::string to_json(const std::vector<Obligation>& obs);

}  // namespace tessera::prove
