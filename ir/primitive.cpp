#include "ir/primitive.h"

#include <range/v3/range/conversion.hpp>
#include <range/v3/view/filter.hpp>
#include <range/v3/view/map.hpp>
#include <range/v3/view/transform.hpp>

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

Primitive& Registry::add(Primitive p) {
  if (prims_.count(p.name)) throw Error("primitive '" + p.name + "' registered twice");
  std::string name = p.name;
  return *prims_.emplace(std::move(name), std::make_unique<Primitive>(std::move(p))).first->second;
}

std::vector<const Primitive*> Registry::of(Family f) const {
  return prims_ | ranges::views::values | ranges::views::filter([f](const auto& p) { return p->family == f; }) |
         ranges::views::transform([](const auto& p) -> const Primitive* { return p.get(); }) | ranges::to<std::vector>();
}

void Registry::add_family(Family f, void (*fill)(Registry&)) {
  std::map<std::string, std::unique_ptr<Primitive>, std::less<>> before;
  before.swap(prims_);
  fill(*this);
  for (auto& [name, p] : prims_) {
    p->family = f;
    if (before.count(name)) throw Error("primitive '" + name + "' registered twice");
  }
  prims_.merge(before);
}

std::string_view family_name(Family f) {
  switch (f) {
    case Family::elementwise: return "elementwise";
    case Family::reduction: return "reduction";
    case Family::structural: return "structural";
    case Family::state: return "state";
    case Family::control: return "control";
    case Family::pallas: return "pallas";
  }
  return "?";
}

std::vector<const Primitive*> Registry::all() const {
  std::vector<const Primitive*> out;
  for (const auto& [_, p] : prims_) out.push_back(p.get());
  return out;
}

namespace {

// tessera's own families, then whatever register_primitive adds.
Registry& global_registry() {
  static Registry r = [] {
    Registry reg;
    reg.add_family(Family::elementwise, register_elementwise);
    reg.add_family(Family::structural, register_structural);
    reg.add_family(Family::reduction, register_reductions);
    reg.add_family(Family::state, register_state);
    reg.add_family(Family::pallas, register_pallas);
    reg.add_family(Family::control, register_control_flow);
    reg.add_family(Family::pallas, register_pallas_call);
    return reg;
  }();
  return r;
}

}  // namespace

const Registry& registry() { return global_registry(); }

const Primitive& register_primitive(Primitive p) {
  // The Builder runs the shape rule of every op it makes: an empty one would
  // only fail there, far from the registration.
  if (!p.shape) throw Error("primitive '" + p.name + "' has no shape rule");
  return global_registry().add(std::move(p));
}

}  // namespace tessera
