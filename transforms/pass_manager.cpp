#include "transforms/pass.h"

namespace tessera {

std::string PassOptions::get(std::string_view key, std::string fallback) const {
  auto it = values.find(key);
  return it == values.end() ? fallback : it->second;
}

int64_t PassOptions::get_int(std::string_view key, int64_t fallback) const {
  auto it = values.find(key);
  if (it == values.end()) return fallback;
  try {
    return std::stoll(it->second);
  } catch (...) {
    throw Error("pass option " + std::string(key) + "=" + it->second + " is not an integer");
  }
}

const std::vector<PassInfo>& all_passes() {
  static const std::vector<PassInfo> passes = {
      {"dce", "remove ops whose results are unused and that have no effects", dce_pass},
      {"discharge", "turn Ref effects into pure value threading", discharge_pass},
      {"jvp", "forward-mode differentiation", jvp_pass},
      {"vmap", "batching over a new leading axis", vmap_pass},
      {"partial_eval", "split into known and unknown parts", partial_eval_pass},
      {"linearize", "jvp then partial eval into primal and linear tangent functions", linearize_pass},
  };
  return passes;
}

Module run_pipeline(const Module&, std::string_view, const PipelineOptions&) {
  throw Error("the pass manager is not implemented yet (issue 4)");
}

}  // namespace tessera
