// The verifier: checks a module is well formed, reporting every problem with
// its location instead of asserting.
#pragma once

#include <vector>

#include "ir/ir.h"

namespace tessera {

struct Diagnostic {
  Loc loc;
  std::string message;
  std::string str() const { return Error(loc, message).formatted(); }
};

// All problems found; empty when the module is well formed.
std::vector<Diagnostic> verify_module(const Module& m);
// Throws the first problem as an Error.
void verify_or_throw(const Module& m);
// The SparseCore restrictions (verify/sparse_core.cpp) a pallas_call or
// core_map with kernel_type sc_scalar_subcore / sc_vector_subcore violates,
// in body order; empty for tc. The interpreter checks them before it runs one.
std::vector<Diagnostic> sparse_core_problems(const Op& op);

}  // namespace tessera
