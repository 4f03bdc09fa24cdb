// What every obligation of one pallas_call shares: the grid mapping, the Z3
// context and scope (grid sizes, scalar prefetch), the solver, and helpers to
// make symbolic grid points and encode index maps at them.
#pragma once

#include <z3++.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "analysis/prove/int_encoder.h"
#include "analysis/prove/prove.h"
#include "analysis/prove/solver.h"
#include "ir/grid_mapping.h"

namespace tessera::prove {

// An index map encoded at one symbolic grid point.
struct MapAt {
  std::vector<Sym> point;            // program ids
  std::vector<Sym> outputs;          // block indices (start, size pairs for BoundedSlice)
  std::unique_ptr<IntEncoder> enc;   // its facts and guards
};

class CallContext {
 public:
  CallContext(const Op& op, std::string name, const Options& opts);

  const Op& op;
  GridMapping g;
  std::string name;
  const Options& opts;
  z3::context ctx;
  Scope scope;
  Solver solver;

  // A fresh symbolic grid point; its range facts (0 <= p < grid size) go to `facts`.
  std::vector<Sym> make_point(const std::string& tag, std::vector<z3::expr>& facts);
  // Index map of mapping m (inputs first, then outputs) at `point`.
  MapAt encode_map(int m, const std::vector<Sym>& point);
  // Facts every query includes: the ranges of dynamic grid sizes.
  std::vector<z3::expr> base_facts;
  // Adds the facts of an encoding to `out`, and its guards too when `assume_guards`
  // (obligations other than bounds assume what the bounds obligation proves).
  static void add_facts(const IntEncoder& enc, std::vector<z3::expr>& out, bool assume_guards);

  std::vector<int64_t> eval(const z3::model& model, const std::vector<Sym>& syms) const;
  int64_t eval(const z3::model& model, const z3::expr& e) const;

  // "in[1]" / "out[0]"
  std::string subject(int m) const {
    return m < g.num_inputs() ? "in[" + std::to_string(m) + "]" : "out[" + std::to_string(m - g.num_inputs()) + "]";
  }
};

std::string tuple_str(const std::vector<int64_t>& v);  // "(3, 1, 0)"

// Times an obligation and fills its call / subject / kind.
class Timer {
 public:
  Timer() : start_(std::chrono::steady_clock::now()) {}
  double millis() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

inline Obligation obligation(const std::string& call, const std::string& subject, const std::string& kind) {
  Obligation ob;
  ob.call = call;
  ob.subject = subject;
  ob.kind = kind;
  return ob;
}

// The obligations, one file each.
Obligation prove_bounds(CallContext& c, int m);
Obligation prove_non_revisiting(CallContext& c, int out);
Obligation prove_parallel_safety(CallContext& c, int out);
Obligation prove_kernel_bounds(CallContext& c);

}  // namespace tessera::prove
