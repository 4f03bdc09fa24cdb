// Splitting a kernel by dependence, for partial eval of pallas_call.
//
// Given the kernel parameters that hold unknown data ("tainted"), find every
// value and Ref whose contents depend on them, then build the kernel restricted
// to what does not: the known half of a jvp'd kernel is its primal kernel.
//
// A value computed from a tainted value is tainted; so is every Ref an op with
// a tainted operand writes. `cond` with a known predicate is looked into: its
// branches are split the same way, so a branch that zeroes both a primal and a
// tangent output (jvp of matmul's `k == 0` init) keeps the primal half. An op
// with a rule in split_by_operands (sort with tangents riding along) taints
// only the results that depend on a tainted operand. So
// is `run_scoped` (a branch that always runs: the primal half keeps the
// primal scratch, an f32 accumulator beside its tangent twin), and so
// are `for` loops with known bounds, `while` loops with a known predicate and
// `scan`s: a carry is tainted when its initial or next value is, and the
// restricted loop keeps the untainted carries.
// Everything is iterated to a fixpoint, since Refs (scratch) carry values from
// one grid step to the next.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "transforms/var_table.h"

namespace tessera {

struct KernelTaint {
  VarSet vars;  // tainted values and Refs, nested bodies included
  // Why each was tainted (but tainted parameters): by `op` (a result, or a
  // Ref it writes), or as the value `from` flows into it (a loop carry, a
  // branch's parameter or result, the Ref operand a branch writes).
  struct Cause {
    const Op* op = nullptr;
    const Var* from = nullptr;
  };
  VarTable<Cause> cause;
  bool has(const Var* v) const { return vars.contains(v); }
  bool has(const Value& v) const { return v.is_var() && has(v.var()); }
};

KernelTaint kernel_taint(const Body& kernel, const std::vector<char>& tainted_params);

// Where the taint of `v` starts mixing with untainted data: following its
// causes back (a Ref to the op that wrote taint into it, a value to the op
// that computed it), the first op that reads an untainted floating-point
// operand beside a tainted one, such as a `sort` whose tangents ride along or
// a `call` that computes both. For the jvp of a kernel, that is where a primal
// value picks up a tangent one. Null when `v`'s taint comes straight from a
// tainted parameter.
const Op* where_mixed(const KernelTaint& t, const Var* v);

// The bodies a `cond` or `run_scoped` hands its operands to, position by
// position from operand `first_operand` on (after a cond's predicate; a
// run_scoped's allocations follow them). Empty for other ops.
struct FedBodies {
  std::vector<BodyPtr> bodies;
  size_t first_operand = 0;
};
FedBodies fed_bodies(const Op& op);

// An op whose results each depend on some of its operands only (jvp's `sort`:
// result i on the keys and operand i), restricted to its known operands: the
// op over them, computing the results at `known_results` (result k of
// `known_op` is the op's result known_results[k]). nullopt when the op has no
// such rule, or when what is unknown reaches every result (an unknown key).
struct OperandSplit {
  Op known_op;
  std::vector<int> known_results;
};
std::optional<OperandSplit> split_by_operands(const Op& op, const std::vector<char>& unknown_operands);

// `kernel` without its tainted parameters and every op that depends on them;
// a `cond`, `run_scoped`, `for`, `while` or `scan` with some tainted operands
// keeps its untainted operands and results.
BodyPtr restrict_kernel(const Body& kernel, const KernelTaint& taint, std::string name);

}  // namespace tessera
