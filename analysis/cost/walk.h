// Inside analysis/cost: the walk (walker.cpp) and the values it takes for
// dynamic grid sizes it cannot know (dynamic_grid.cpp fits the figures as
// polynomials in them).
#pragma once

#include <algorithm>
#include <map>
#include <vector>

#include "analysis/cost/cost.h"

namespace tessera::cost {

// The sizes a walk assumes for dynamic grid axes whose size is a value the
// walk does not know (a function parameter), keyed by that value.
struct DynamicSizes {
  std::map<const Var*, int64_t> given;  // absent: 1
  std::vector<const Var*> seen;         // the unknown sizes met, in order

  int64_t size_of(const Var* v) {
    if (std::find(seen.begin(), seen.end(), v) == seen.end()) seen.push_back(v);
    auto it = given.find(v);
    return it == given.end() ? 1 : it->second;
  }
};

// The figures of `f` with dynamic sizes taken from `sizes`.
CostReport walk_cost(const Module& m, const Body& f, const CostOptions& opts, DynamicSizes& sizes);

}  // namespace tessera::cost
