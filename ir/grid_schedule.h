// When a pallas_call's grid steps run and what each block operand holds at
// each of them: the one definition of the grid schedule, beside
// ir/block_geometry.h (where a block lies). The interpreter runs it, discharge
// builds it into its loop, the prover states its claims over it, and the cost
// model counts its copies.
//
// Order. A core runs its steps in row-major order of the grid (the last axis
// fastest). The axes whose dimension semantics are "parallel" must form a
// prefix of the grid; a point of that prefix is a *position*, and a position's
// steps (the arbitrary suffix) always run in order on one core. The positions
// are split into contiguous chunks, ceil(positions / cores) per core, and the
// interpreter may relabel each parallel axis by a permutation (--grid-seed).
// Discharge runs the whole grid on one core in plain row-major order.
//
// Residency. An operand with a blocked (not `any` / `hbm`) spec holds, at each
// step, the block its index map returns for the step's program ids, in a
// kernel buffer that persists between steps. On one core's run of steps:
//   copied in before step s    s is the core's first step, or its block moved
//                              since the step before
//   copied out after step s    s is the core's last step, or its block moves
//                              before the step after
//   carried into step s        not copied in: the kernel buffer holds what
//                              step s-1 left there (the block stays)
// A block *moves* when any of its values differs: the places
// BlockGeometry::block_at gives (what the interpreter compares), or the
// index-map values themselves, which name the same places (for blocks of
// positive size). This follows the
// copy conditions of `jax/_src/pallas/mosaic/interpret/interpret_pallas_call.py`
// (start indices compared with the previous / next iteration's, and the
// core's first / last iteration), which model the TPU pipeline's: a block is
// fetched only when its indices change.
//
// The rules are written once over a consumer's representation `A` of truth
// values and integers, so that concrete runs (ConcreteAlgebra below), Z3 terms
// (the prover) and IR values built into a loop body (discharge) all read the
// same definition. `A` provides
//   using Bool, Int;
//   Bool truth(bool);                      a constant
//   Bool any(Bool, Bool), all(Bool, Bool), negate(Bool);
//   Bool differ(const Int&, const Int&), equal(const Int&, const Int&);
//   Bool less(const Int&, const Int&);
//   Int  plus(const Int&, int64_t);
// and may simplify (any(x, truth(false)) -> x) as it likes.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/grid_mapping.h"

namespace tessera {

// ---------------------------------------------------------------- the order

// The number of leading parallel axes.
int leading_parallel_axes(const GridMapping& g);
// Whether every parallel axis is a leading one. Pallas refuses a grid where a
// parallel axis follows an arbitrary one; so do the interpreter and the LLVM
// backend, and the prover's non-revisiting claim fails on it.
bool parallel_axes_form_prefix(const GridMapping& g);

// The steps of a grid of known sizes.
struct GridOrder {
  std::vector<int64_t> sizes;  // per grid axis
  int parallel = 0;            // leading parallel axes
  int64_t steps = 1;           // all of them (a grid of rank 0 has one)
  int64_t positions = 1;       // points of the parallel prefix

  // The steps core `core` of `cores` runs: [first, last), empty past the grid.
  struct Range {
    int64_t first = 0, last = 0;
  };
  Range core_steps(int core, int cores) const;
  // Grid coordinates of step `step` (row-major).
  std::vector<int64_t> coords(int64_t step) const;
  // Moves `coords` to the next step's.
  void advance(std::vector<int64_t>& coords) const;
};

// The order of a grid with these sizes under g's dimension semantics; nullopt
// when the grid has more than 2^63 - 1 points. The caller checks
// parallel_axes_form_prefix(g) first.
std::optional<GridOrder> grid_order(const GridMapping& g, const std::vector<int64_t>& sizes);

// Symbolic order predicates over grid points p, q (one Int per axis) of a grid
// whose first `parallel` axes are parallel, within one position. `sizes` has
// one Int per axis.
template <class A>
typename A::Bool same_position(A& a, const std::vector<typename A::Int>& p, const std::vector<typename A::Int>& q,
                               int parallel) {
  typename A::Bool e = a.truth(true);
  for (int k = 0; k < parallel; ++k) e = a.all(e, a.equal(p[k], q[k]));
  return e;
}

// p is the first step of its position: every arbitrary coordinate is 0.
template <class A>
typename A::Bool first_of_position(A& a, const std::vector<typename A::Int>& p, const typename A::Int& zero, int parallel) {
  typename A::Bool e = a.truth(true);
  for (size_t k = static_cast<size_t>(parallel); k < p.size(); ++k) e = a.all(e, a.equal(p[k], zero));
  return e;
}

// p is the last step of its position: every arbitrary coordinate is its size - 1.
template <class A>
typename A::Bool last_of_position(A& a, const std::vector<typename A::Int>& p, const std::vector<typename A::Int>& sizes,
                                  int parallel) {
  typename A::Bool e = a.truth(true);
  for (size_t k = static_cast<size_t>(parallel); k < p.size(); ++k) e = a.all(e, a.equal(p[k], a.plus(sizes[k], -1)));
  return e;
}

// q is the step right after p in their position: the row-major successor.
template <class A>
typename A::Bool next_in_position(A& a, const std::vector<typename A::Int>& p, const std::vector<typename A::Int>& q,
                                  const std::vector<typename A::Int>& sizes, const typename A::Int& zero, int parallel) {
  typename A::Bool any = a.truth(false);
  size_t rank = p.size();
  for (size_t k = static_cast<size_t>(parallel); k < rank; ++k) {
    typename A::Bool e = a.all(same_position(a, p, q, parallel), a.equal(q[k], a.plus(p[k], 1)));
    for (size_t j = static_cast<size_t>(parallel); j < k; ++j) e = a.all(e, a.equal(q[j], p[j]));
    for (size_t j = k + 1; j < rank; ++j) e = a.all(a.all(e, a.equal(p[j], a.plus(sizes[j], -1))), a.equal(q[j], zero));
    any = a.any(any, e);
  }
  return any;
}

// p does not come after q in their position.
template <class A>
typename A::Bool not_after_in_position(A& a, const std::vector<typename A::Int>& p, const std::vector<typename A::Int>& q,
                                       int parallel) {
  typename A::Bool e = a.truth(true);
  for (int k = static_cast<int>(p.size()) - 1; k >= parallel; --k)
    e = a.any(a.less(p[k], q[k]), a.all(a.equal(p[k], q[k]), e));
  return a.all(same_position(a, p, q, parallel), e);
}

// ------------------------------------------------------------ the residency

// Whether a block operand (mapping m: inputs first, then outputs) is scheduled
// at all: an `any` / `hbm` spec hands the kernel the whole buffer, never
// copied.
bool has_resident_block(const GridMapping& g, int m);

// The block stays between two steps: all of its values are equal (the
// negation of block_moved(a, truth(false), x, y)).
template <class A>
typename A::Bool same_block(A& a, const std::vector<typename A::Int>& x, const std::vector<typename A::Int>& y) {
  typename A::Bool e = a.truth(true);
  for (size_t k = 0; k < x.size() && k < y.size(); ++k) e = a.all(e, a.equal(x[k], y[k]));
  return e;
}

// The block moved between two steps: one of its values differs. Folds from
// `moved_before` (a flag the consumer already has, such as "first step").
template <class A>
typename A::Bool block_moved(A& a, typename A::Bool moved_before, const std::vector<typename A::Int>& from,
                             const std::vector<typename A::Int>& to) {
  for (size_t k = 0; k < from.size() && k < to.size(); ++k) moved_before = a.any(moved_before, a.differ(to[k], from[k]));
  return moved_before;
}

// The block is copied into its kernel buffer before this step.
template <class A>
typename A::Bool copies_in(A& a, typename A::Bool first_step, const std::vector<typename A::Int>& previous,
                           const std::vector<typename A::Int>& current) {
  return block_moved(a, first_step, previous, current);
}

// The block is copied out of its kernel buffer after this step.
template <class A>
typename A::Bool copies_out(A& a, typename A::Bool last_step, const std::vector<typename A::Int>& current,
                            const std::vector<typename A::Int>& next) {
  return block_moved(a, last_step, current, next);
}

// The kernel buffer carries into this step what the step before left there.
template <class A>
typename A::Bool carried(A& a, typename A::Bool first_step, const std::vector<typename A::Int>& previous,
                         const std::vector<typename A::Int>& current) {
  return a.negate(copies_in(a, first_step, previous, current));
}

// The same rules over symbolic steps of one position, for a consumer that
// reasons about every order at once (the prover). Each core runs whole
// positions, so a core's first and last steps are first and last of their
// positions; treating every position's first step as a copy-in and every
// last step as a copy-out over-approximates the copies of any core split.
//
// Step `l`'s block (`block_l`) is copied out after it: l is the last step of
// its position, or `s`, the step after it, holds another block.
template <class A>
typename A::Bool copied_out_after(A& a, const std::vector<typename A::Int>& l, const std::vector<typename A::Int>& s,
                                  const std::vector<typename A::Int>& block_l, const std::vector<typename A::Int>& block_s,
                                  const std::vector<typename A::Int>& sizes, const typename A::Int& zero, int parallel) {
  return a.any(last_of_position(a, l, sizes, parallel),
               a.all(next_in_position(a, l, s, sizes, zero, parallel), a.negate(same_block(a, block_l, block_s))));
}

// Step `f`'s block is copied in before it: f is the first step of its
// position, or `p`, the step before it, held another block.
template <class A>
typename A::Bool copied_in_before(A& a, const std::vector<typename A::Int>& p, const std::vector<typename A::Int>& f,
                                  const std::vector<typename A::Int>& block_p, const std::vector<typename A::Int>& block_f,
                                  const std::vector<typename A::Int>& sizes, const typename A::Int& zero, int parallel) {
  return a.any(first_of_position(a, f, zero, parallel),
               a.all(next_in_position(a, p, f, sizes, zero, parallel), a.negate(same_block(a, block_p, block_f))));
}

// Plain booleans and integers: a concrete run.
struct ConcreteAlgebra {
  using Bool = bool;
  using Int = int64_t;
  Bool truth(bool b) const { return b; }
  Bool any(Bool x, Bool y) const { return x || y; }
  Bool all(Bool x, Bool y) const { return x && y; }
  Bool negate(Bool x) const { return !x; }
  Bool differ(Int x, Int y) const { return x != y; }
  Bool equal(Int x, Int y) const { return x == y; }
  Bool less(Int x, Int y) const { return x < y; }
  Int plus(Int x, int64_t k) const { return x + k; }
};

// One core's walk over its steps with one block per operand: the decisions
// the interpreter acts on, evaluated from the blocks at the previous, current
// and next step. `first` / `last`: the step is the core's first / last.
struct StepResidency {
  bool copy_in = false, copy_out = false, carried = false;
};
StepResidency residency_at(bool first, bool last, const std::vector<int64_t>& previous, const std::vector<int64_t>& current,
                           const std::vector<int64_t>& next);

}  // namespace tessera
