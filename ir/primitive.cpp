#include "ir/primitive.h"

namespace tessera {

const ParamSpec* Primitive::find_param(std::string_view key) const {
  for (const ParamSpec& p : params)
    if (p.name == key) return &p;
  return nullptr;
}

const Primitive* Registry::find(std::string_view name) const {
  auto it = prims_.find(name);
  return it == prims_.end() ? nullptr : it->second.get();
}

const Primitive& Registry::get(std::string_view name) const {
  if (const Primitive* p = find(name)) return *p;
  throw Error("unknown primitive '" + std::string(name) + "'");
}

void Registry::add(Primitive p) {
  if (prims_.count(p.name)) throw Error("primitive '" + p.name + "' registered twice");
  std::string name = p.name;
  prims_.emplace(std::move(name), std::make_unique<Primitive>(std::move(p)));
}

std::vector<const Primitive*> Registry::all() const {
  std::vector<const Primitive*> out;
  for (const auto& [_, p] : prims_) out.push_back(p.get());
  return out;
}

const Registry& registry() {
  static const Registry r = [] {
    Registry reg;
    register_elementwise(reg);
    register_structural(reg);
    register_reductions(reg);
    register_state(reg);
    register_pallas(reg);
    register_control_flow(reg);
    register_pallas_call(reg);
    return reg;
  }();
  return r;
}

}  // namespace tessera
