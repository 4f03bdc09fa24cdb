// The grid schedule of ir/grid_schedule.h over Z3 terms: its rules
// instantiated with symbolic grid points and block indices, so the prover's
// claims about copies, visits and carried state state the schedule the
// interpreter runs, not a copy of it.
#pragma once

#include <z3++.h>

#include <vector>

#include "analysis/prove/int_encoder.h"
#include "ir/grid_schedule.h"

namespace tessera::prove {

struct Z3Algebra {
  using Bool = z3::expr;
  using Int = z3::expr;
  z3::context& ctx;

  Bool truth(bool b) const { return ctx.bool_val(b); }
  Bool any(const Bool& x, const Bool& y) const { return x || y; }
  Bool all(const Bool& x, const Bool& y) const { return x && y; }
  Bool negate(const Bool& x) const { return !x; }
  Bool differ(const Int& x, const Int& y) const { return x != y; }
  Bool equal(const Int& x, const Int& y) const { return x == y; }
  Bool less(const Int& x, const Int& y) const { return x < y; }
  Int plus(const Int& x, int64_t k) const {
    if (k == 0) return x;
    return k < 0 ? x - static_cast<int>(-k) : x + static_cast<int>(k);
  }
};

// The terms of symbolic values (grid points, index-map results).
inline std::vector<z3::expr> terms(const std::vector<Sym>& v) {
  std::vector<z3::expr> out;
  for (const Sym& s : v) out.push_back(s.e);
  return out;
}

}  // namespace tessera::prove
