// One Z3 query at a time, bounded and reproducible.
//
// Each query gets a fresh solver with Z3's deterministic resource limit
// (`rlimit`, so the same input always gets the same verdict on any machine)
// and a wall-clock time-out as a safety net. With --smt2 DIR every query is
// also written as an SMT-LIB2 file that any solver can replay.
#pragma once

#include <z3++.h>

#include <optional>
#include <string>
#include <vector>

namespace tessera::prove {

struct QueryResult {
  z3::check_result result = z3::unknown;
  std::optional<z3::model> model;  // when sat
  std::string reason;              // when unknown: which limit fired ("resource limit rlimit=N reached")
};

class Solver {
 public:
  Solver(z3::context& ctx, unsigned timeout_ms, unsigned rlimit, std::string smt2_dir, std::string call);

  // Is the conjunction of `assertions` satisfiable? `label` names the SMT-LIB2 file.
  QueryResult check(const std::vector<z3::expr>& assertions, const std::string& label);
  int queries() const { return queries_; }

 private:
  std::string limit_reason(const std::string& z3_reason) const;

  z3::context& ctx_;
  unsigned timeout_ms_, rlimit_;
  std::string smt2_dir_, call_;
  int queries_ = 0;
};

}  // namespace tessera::prove
