// Which grid points of a pallas_call touch which block of each operand: the
// data behind `tessera graph --blocks` and `tessera prove --svg`.
//
// Every index map is evaluated at every grid point by interp::IndexMapEvaluator
// (as pallas_call does before copying a block) and its values are placed by
// the block geometry of ir/block_geometry.h (as the interpreter copies and the
// prover reasons), so the picture agrees with `run` and `prove`. Grid points
// are numbered in the interpreter's sequential order (one core, no
// --grid-seed): row-major, the last grid axis varying fastest.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/block_geometry.h"
#include "ir/grid_mapping.h"
#include "ir/ir.h"
#include "runtime/array.h"

namespace tessera::interp {

// One block of one operand: a distinct place in the (padded) array.
struct MappedBlock {
  std::vector<int64_t> index;                    // the index-map values
  std::vector<BlockGeometry::Extent> extent;     // per array dim, padded coordinates
  bool in_bounds = true;                         // inside the padded buffer (ir/block_geometry.h)
  bool partial = false;                          // in bounds, but partly padding
  std::vector<int64_t> points;                   // grid point numbers touching it, ascending
  // Maximal runs of consecutive grid points in `points`. An output block
  // with more than one run is left and written again: a revisit (what the
  // interpreter reports and `prove` refutes; consecutive points accumulate).
  int runs = 0;
};

struct OperandBlocks {
  std::string subject;    // "in[0]", "out[0]": as the prover names it
  std::string name;       // the kernel parameter's name ("x")
  bool is_output = false;
  Type array;             // the full array
  BlockGeometry geo;
  std::string index_map;  // "@block_ij", or "" (every index 0)
  bool whole = false;     // `any` / `hbm`: the kernel gets the whole array, no blocks
  std::vector<MappedBlock> blocks;         // in the order first touched
  std::vector<int> block_of_point;         // per grid point, an index into blocks (-1: not evaluated)
  // Grid points where the index map could not be evaluated, with the reason.
  std::vector<std::pair<int64_t, std::string>> failures;
};

struct BlockMap {
  std::string call;                       // as `prove` names it ("matmul")
  std::string kernel;                     // "@matmul_kernel"
  std::vector<int64_t> grid;
  std::vector<std::string> grid_names;     // empty or one per axis
  std::vector<std::string> semantics;      // empty or one per axis
  std::vector<OperandBlocks> operands;     // inputs, then outputs

  int64_t num_points() const;
  // Grid point number n as coordinates (row-major).
  std::vector<int64_t> point(int64_t n) const;
  // The number of the grid point at these coordinates (-1 if outside the grid).
  int64_t number(const std::vector<int64_t>& point) const;
};

// Grids of more points are refused (the picture would be unreadable).
constexpr int64_t kMaxBlockMapPoints = 4096;

// The pallas_calls of `f` in program order (nested bodies depth first, not
// looking inside kernels).
std::vector<const Op*> pallas_calls(const Body& f);

// The block map of one pallas_call of `m`. `prefetch` holds one array per
// scalar-prefetch operand (the values its index maps read). Throws Error for a
// dynamic grid, a grid of more than kMaxBlockMapPoints points, or missing
// prefetch values; an index map failing at some grid point is recorded in
// OperandBlocks::failures instead.
BlockMap block_map(const Module& m, const Op& pallas_call, const std::string& call_name,
                   const std::vector<Array>& prefetch = {});

}  // namespace tessera::interp
