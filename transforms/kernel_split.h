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

// `kernel` without its tainted parameters and every op that depends on them;
// a `cond`, `for`, `while` or `scan` with some tainted operands keeps its
// untainted operands and results.
BodyPtr restrict_kernel(const Body& kernel, const KernelTaint& taint, std::string name);

}  // namespace tessera
