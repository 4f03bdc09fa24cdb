// `tessera cost`: the flops, transcendentals and bytes moved of every
// pallas_call and core_map a function runs, computed without running it --
// what Pallas asks its users to write by hand as
// `CostEstimate(flops, transcendentals, bytes_accessed)` (jax/_src/pallas/core.py).
//
// How the figures are counted (docs/prove.md, "Cost estimates"):
//   - each op by the rule table of ir/op_cost.h, the one `run --stats` uses;
//   - kernel bodies once per grid point, loops once per trip (static trip
//     counts, or counts that scalar values known at that point decide:
//     program ids, loop indices, literals); a cond whose predicate those
//     values decide takes its branch, any other cond its most costly branch
//     (then the figures are an upper bound, marked inexact with a note);
//   - block copies as the interpreter does them on one core
//     (interpreter/pallas_call.cpp): an input block is copied in at the first
//     grid point and whenever its place in the array changes from the
//     previous point, an output block copied out whenever it changes before
//     the next point and at the last, in grid order (row-major, the last axis
//     fastest), each for the bytes of its block (ir/block_geometry.h);
//   - DMAs for the bytes of each dma_start's source region;
//   - a grid axis whose size is known only at run time (a function
//     parameter) makes every figure a polynomial in that size: a sum of
//     terms, each a constant times a product of sizes, valid for every size
//     of 2 or more (an axis of size 1 never moves, so its blocks are copied
//     once). Such figures are found by counting at sizes 2 and 3 of every
//     unknown size, which fixes the one polynomial of degree at most 1 in
//     each size, and checked by counting at two more sizes; figures that are
//     not of that form (a loop running num_programs times per grid point)
//     are an error.
// So on one core, without --grid-seed, `tessera run --stats` counts exactly
// these figures whenever they are exact.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "ir/op_cost.h"
#include "runtime/array.h"

namespace tessera::cost {

// One term of a figure that depends on dynamic grid sizes: `figures` times
// the product of the sizes listed (indices into CostReport::sizes; none: the
// constant term).
struct SizeTerm {
  std::vector<int> sizes;
  CostFigures figures;
};

// One pallas_call or core_map (all its runs: per device of a pmap, per trip
// of an enclosing loop).
struct KernelCost {
  const Op* op = nullptr;
  std::string name;                // cost_scope_name: "pallas_call @matmul_kernel (line 36)"
  std::string call;                // as `prove` names it: "matmul"; "core_map" for one
  std::vector<int64_t> grid;       // a pallas_call's (empty for a core_map)
  int64_t runs = 0;
  CostFigures figures;             // summed over the runs; with dynamic sizes, the constant term
  std::vector<SizeTerm> terms;     // with dynamic sizes: every term, the constant one first
  bool exact = true;               // false: an upper bound (see notes)
  std::vector<std::string> notes;  // why not exact, one per place
};

struct CostReport {
  std::string function;
  // The dynamic grid sizes the figures depend on, as the function names them
  // ("%n"); empty when every size is known.
  std::vector<std::string> sizes;
  std::vector<KernelCost> kernels;  // in the order first reached
  KernelCost outside;               // ops outside any kernel (op null)
  CostFigures total() const;  // with dynamic sizes: the constant terms
  std::vector<SizeTerm> total_terms() const;
  bool exact() const;
};

// The figures of `terms` at these values of the sizes.
CostFigures evaluate(const std::vector<SizeTerm>& terms, const std::vector<int64_t>& sizes);

// The values of a pallas_call's scalar-prefetch operands (its index maps read
// them); called only for calls that have some. Throws Error when they are unknown.
using PrefetchValues = std::function<std::vector<interp::Array>(const Op& pallas_call)>;

// Evaluates one index map at a grid point (its block index there).
using IndexMapAt = std::function<std::vector<int64_t>(const std::vector<int64_t>& program_ids)>;
// Makes the evaluator of index map `map` with these scalar-prefetch values.
// Callers pass the interpreter's (interp::index_map_function), so that
// blocks are counted where the interpreter copies them; analysis/ sits below
// the interpreter and cannot call it itself. Needed for every pallas_call
// with an index map: without it compute_cost throws Error.
using IndexMapEvaluators =
    std::function<IndexMapAt(const Module& m, const Body& map, const std::vector<interp::Array>& prefetch)>;

struct CostOptions {
  PrefetchValues prefetch;
  IndexMapEvaluators index_maps;
  // Refuse to walk more ops than this (kernels walked per grid point and per
  // loop trip), or to enumerate grids of more points than kMaxGridPoints.
  int64_t max_walk_ops = 20'000'000;
};
constexpr int64_t kMaxGridPoints = int64_t{1} << 22;

// The figures of function `f` of `m`. Throws a located Error for what cannot
// be counted statically: a loop whose trip count depends on data, a DMA of
// dynamic size, figures not multilinear in the dynamic grid sizes.
CostReport compute_cost(const Module& m, const Body& f, const CostOptions& opts = {});

// The bytes block copies move for one run of `pallas_call` over `grid` (the
// dynamic sizes resolved), in bytes_in / bytes_out. `prefetch`, `index_maps`: as above.
CostFigures block_copy_bytes(const Module& m, const Op& pallas_call, const std::vector<int64_t>& grid,
                             const std::vector<interp::Array>& prefetch, const IndexMapEvaluators& index_maps);

// A pallas_call's own cost_estimate=(flops, transcendentals, bytes_accessed)
// against the computed figures of one run. Pallas's estimate is a hint to
// XLA's scheduler, so only a large difference is worth a warning: a figure
// more than kEstimateFactor times the other (or zero against non-zero).
constexpr double kEstimateFactor = 2.0;
struct EstimateMismatch {
  const Op* op;
  std::string message;  // "cost_estimate flops 100 differ from the computed 2048 per run by more than a factor of 2"
};
std::vector<EstimateMismatch> check_estimates(const CostReport& r);

// Arithmetic intensity: flops per byte moved (0 when nothing moves).
double intensity(const CostFigures& f);
std::string format_report(const CostReport& r);
std::string json_report(const CostReport& r);

}  // namespace tessera::cost
