// The concrete values, on each device, of the integers a pmap body computes
// from literals, `iota` and `axis_index`.
//
// A pallas_call inside a pmap may read its scalar prefetch and its dynamic
// grid sizes from such values (`%ps = mul %d, 2` with `%d = axis_index`).
// The device count is known, so each device's value is too: the claims then
// reason about the values the run computes instead of any value of the
// dtype, and never report a counterexample on a path no device takes.
//
// A forward pass over the bodies the prover's finder walks, as
// DeviceVariance. A value is known only when every operand is (a literal, or
// a known value); anything else (an input, a loop index, a Ref's contents,
// an op not in the table) is left unknown and the claims treat it as any value.
#pragma once

#include <map>
#include <optional>
#include <unordered_map>
#include <vector>

#include "analysis/prove/prove.h"
#include "ir/ir.h"

namespace tessera::prove {

class DeviceValues {
 public:
  using Table = DeviceTable;

  // The result of `op`, an op of a body walked with `enclosing` axes around it.
  void visit(const Op& op, const AxisSizes& enclosing);
  // `v` on every device, or nullopt when not known.
  std::optional<Table> of(const Value& v, const AxisSizes& enclosing) const;

 private:
  std::unordered_map<const Var*, Table> known_;
};

}  // namespace tessera::prove
