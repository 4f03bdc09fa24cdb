#include "ir/effects.h"

#include <unordered_map>

#include "ir/ir.h"
#include "ir/primitive.h"

namespace tessera {

bool Effects::empty() const {
  if (io || comms) return false;
  for (uint8_t b : on_param)
    if (b) return false;
  return true;
}

std::string Effects::str(const Body& body) const {
  std::vector<std::string> names;
  for (const Var* p : body.params()) names.push_back("%" + p->name);
  return str(names);
}

std::string Effects::str(const std::vector<std::string>& param_names) const {
  std::string out;
  auto add = [&](const std::string& s) { out += (out.empty() ? "" : ", ") + s; };
  for (size_t p = 0; p < on_param.size(); ++p) {
    const std::string& name = param_names[p];
    if (on_param[p] & kRead) add("read(" + name + ")");
    if (on_param[p] & kWrite) add("write(" + name + ")");
    if (on_param[p] & kAccum) add("accum(" + name + ")");
  }
  if (io) add("io");
  if (comms) add("comms");
  return out;
}

OpEffects op_effects(const Op& op) {
  OpEffects e;
  if (op.prim->effects) op.prim->effects(op, e);
  return e;
}

Effects compute_effects(const Body& body) {
  Effects fx;
  fx.on_param.assign(body.params().size(), 0);
  std::unordered_map<const Var*, int> param_index;
  for (size_t i = 0; i < body.params().size(); ++i) param_index[body.params()[i]] = static_cast<int>(i);
  for (const Op& op : body.ops()) {
    OpEffects e = op_effects(op);
    fx.io |= e.io;
    fx.comms |= e.comms;
    for (auto [operand, bits] : e.on_operand) {
      const Value& v = op.operands.at(operand);
      if (!v.is_var()) continue;
      auto it = param_index.find(v.var());
      if (it != param_index.end()) fx.on_param[it->second] |= bits;
    }
  }
  return fx;
}

bool has_side_effects(const Op& op) {
  OpEffects e = op_effects(op);
  if (e.io || e.comms) return true;
  for (auto [_, bits] : e.on_operand)
    if (bits & (kWrite | kAccum)) return true;
  return false;
}

}  // namespace tessera
