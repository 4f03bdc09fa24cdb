// The data movement of one run of a kernel body, with every index known: a
// concrete trace of its DMAs, their waits and its Ref accesses.
//
// The trace evaluates the integer arithmetic that decides indices and
// branches (literals, loop indices, `add` ... `rem`, comparisons), takes
// `cond` branches and runs `for` loops with static bounds, and records each
// dma_start, dma_wait, get, swap, addupdate, load and store with the box it
// touches, in program order. It stands for every run only when nothing it
// evaluates depends on data, so anything else (a value read from a Ref, a
// `while`, a `run_scoped`, a remote or indirect DMA, semaphore signals,
// dynamic sizes) makes it give up, saying why. Used by the transpose of DMA pipelines (dma_mirror.h) to pair each
// dma_wait with the dma_start it completes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace tessera::dma_trace {

// A box of a Ref: per dim, the first element and the count.
struct Box {
  std::vector<int64_t> lo, size;
  int64_t numel() const;
  bool overlaps(const Box& o) const;
  bool covers(const Box& o) const;
  bool operator==(const Box&) const = default;
};

// A region of one of the kernel's Ref params (`root`: its index).
struct Region {
  int root = -1;
  Box box;
};

struct Event {
  // start / wait: a dma_start / dma_wait. read (get, load), update
  // (addupdate, store) and overwrite (swap): the core's accesses.
  enum Kind { start, wait, read, update, overwrite } kind = read;
  const Op* op = nullptr;
  // The index of the innermost `for` around the op (0 outside loops).
  int64_t loop_index = 0;
  // start: src and dst; wait: dst is the region it names; accesses: dst.
  Region src, dst;
  // start, wait: the semaphore element (root, flat element index).
  int sem_root = -1;
  int64_t sem_element = 0;
  int64_t bytes = 0;  // start, wait: the bytes moved / awaited
};

// The trace of `kernel` run by a pallas_call whose grid has one point (every
// program_id is 0, every num_programs 1), or nullopt with the reason in
// `why`. `max_steps` bounds the ops evaluated (loops are unrolled).
std::optional<std::vector<Event>> trace_kernel(const Body& kernel, std::string& why, int64_t max_steps = 100000);

}  // namespace tessera::dma_trace
