// Splitting a kernel by dependence, for partial eval of pallas_call.
//
// Given the kernel parameters that hold unknown data ("tainted"), find every
// value and Ref whose contents depend on them, then build the kernel restricted
// to what does not: the known half of a jvp'd kernel is its primal kernel.
//
// A value computed from a tainted value is tainted; so is every Ref an op with
// a tainted operand writes. `cond` with a known predicate is looked into: its
// branches are split the same way, so a branch that zeroes both a primal and a
// tangent output (jvp of matmul's `k == 0` init) keeps the primal half. So
// is `run_scoped` (a branch that always runs: the primal half keeps the
// primal scratch, an f32 accumulator beside its tangent twin), and so
// are `for` loops with known bounds, `while` loops with a known predicate and
// `scan`s: a carry is tainted when its initial or next value is, and the
// restricted loop keeps the untainted carries.
// Everything is iterated to a fixpoint, since Refs (scratch) carry values from
// one grid step to the next.
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"
#include "transforms/var_table.h"

namespace tessera {

struct KernelTaint {
  VarSet vars;  // tainted values and Refs, nested bodies included
  bool has(const Var* v) const { return vars.contains(v); }
  bool has(const Value& v) const { return v.is_var() && has(v.var()); }
};

KernelTaint kernel_taint(const Body& kernel, const std::vector<char>& tainted_params);

// The bodies a `cond` or `run_scoped` hands its operands to, position by
// position from operand `first_operand` on (after a cond's predicate; a
// run_scoped's allocations follow them). Empty for other ops.
struct FedBodies {
  std::vector<BodyPtr> bodies;
  size_t first_operand = 0;
};
FedBodies fed_bodies(const Op& op);

// `kernel` without its tainted parameters and every op that depends on them;
// a `cond`, `run_scoped`, `for`, `while` or `scan` with some tainted operands
// keeps its untainted operands and results.
BodyPtr restrict_kernel(const Body& kernel, const KernelTaint& taint, std::string name);

}  // namespace tessera
