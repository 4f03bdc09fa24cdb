// Which device axes a value inside `pmap` bodies may differ along.
//
// Every device of a pmap runs its body, but not on the same values: an
// operand mapped over the axis (`in_axes` not `none`) is split, one slice per
// device, and a value computed from `axis_index` or `device_id` is the
// device's own. A pallas_call inside reads its scalar prefetch and its dynamic
// grid sizes from such values, so each device may see different ones. The
// protocol claims (semaphore balance, DMA races) reason about every device at
// once and must know which of those values are shared.
//
// The analysis is a forward pass over the bodies the prover's finder walks
// (in program order; bodies are closed, so a value is defined before its
// uses). It over-approximates: a value varies along the axes of any value it
// is computed from, the contents of a Ref along every enclosing axis (Refs are
// written through), and the results of an op with bodies also along every
// axis whose index those bodies read.
#pragma once

#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/ir.h"

namespace tessera::prove {

class DeviceVariance {
 public:
  using Axes = std::set<std::string>;

  // The results of `op`, an op of a body walked with `enclosing` axes around it.
  void visit(const Op& op, const std::vector<std::string>& enclosing);
  // Binds the parameters of `nested`, a body of `op`, before it is walked.
  void enter(const Op& op, const Body& nested, const std::vector<std::string>& enclosing);
  // The axes `v` may differ along (every enclosing axis for a value the pass
  // has not seen: a parameter of a body walked before, out of context).
  Axes of(const Value& v, const std::vector<std::string>& enclosing) const;

 private:
  std::unordered_map<const Var*, Axes> axes_;
};

}  // namespace tessera::prove
