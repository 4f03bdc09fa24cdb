#include "analysis/prove/device_variance.h"

#include "ir/control_views.h"

namespace tessera::prove {

namespace {

using Axes = DeviceVariance::Axes;

// The axes whose index `b` (or a body nested in it) reads: axis_index names
// one, device_id all of them.
void axes_read(const Body& b, const std::vector<std::string>& enclosing, Axes& out) {
  for (const Op& op : b.ops()) {
    if (op.name() == "axis_index") out.insert(op.param(keys::axis_name));
    if (op.name() == "device_id") out.insert(enclosing.begin(), enclosing.end());
    for (const BodyPtr& nb : op.nested_bodies()) axes_read(*nb, enclosing, out);
  }
}

}  // namespace

Axes DeviceVariance::of(const Value& v, const std::vector<std::string>& enclosing) const {
  if (!v.is_var()) return {};
  // A Ref's contents may be written with any value: they vary along every axis.
  if (v.type().is_ref()) return Axes(enclosing.begin(), enclosing.end());
  auto it = axes_.find(v.var());
  if (it == axes_.end()) return Axes(enclosing.begin(), enclosing.end());
  return it->second;
}

void DeviceVariance::visit(const Op& op, const std::vector<std::string>& enclosing) {
  Axes out;
  for (const Value& v : op.operands) {
    Axes a = of(v, enclosing);
    out.insert(a.begin(), a.end());
  }
  if (op.name() == "axis_index") out.insert(op.param(keys::axis_name));
  if (op.name() == "device_id") out.insert(enclosing.begin(), enclosing.end());
  for (const BodyPtr& nb : op.nested_bodies()) axes_read(*nb, enclosing, out);
  for (const Var* r : op.results) axes_[r] = out;
}

void DeviceVariance::enter(const Op& op, const Body& nested, const std::vector<std::string>& enclosing) {
  const auto& params = nested.params();
  if (op.name() == "pmap") {
    // A mapped operand is split: each device gets its own slice.
    const auto& in_axes = op.param(keys::in_axes);
    const std::string& axis = op.param(keys::axis_name);
    for (size_t k = 0; k < params.size() && k < op.operands.size(); ++k) {
      Axes a = of(op.operands[k], enclosing);
      if (k < in_axes.size() && in_axes[k] >= 0) a.insert(axis);
      axes_[params[k]] = a;
    }
    return;
  }
  // Parameters that receive an operand unchanged vary as it does (not a
  // loop's carries: the body changes them); the rest (loop indices and
  // carries, scratch) as anything the op and its bodies see.
  Axes any;
  for (const Value& v : op.operands) {
    Axes a = of(v, enclosing);
    any.insert(a.begin(), a.end());
  }
  axes_read(nested, enclosing, any);
  for (const Var* p : params) axes_[p] = any;
  const std::string& n = op.name();
  if (n == "for" || n == "while" || n == "scan") return;
  for (const ForwardedOperand& f : forwarded_operands(op, nested)) axes_[f.param] = of(f.operand, enclosing);
}

}  // namespace tessera::prove
